"""One scheduler thread per pipeline: pre-process, batch across sessions, run the engine, publish.

Sessions of one engine share every engine call: each call takes the next step of every session that
has one, so N sessions cost one call per tick instead of N (docs/scheduling.md).

- Batching window: with `max_queue_delay_us` > 0 a batch waits at most that long, and only for the
  sessions whose next input is due within it (each session's next input is predicted from the
  interval between its last two). A session alone never waits: realtime is latency first, batch 1
  when alone; a session that is not due soon never holds a batch back.
- Tiers: a batch holds at most the engine's largest batch tier; a backend with fixed shapes (CUDA
  graphs) pads it up to the next tier itself. Steps of different shape (`Pipeline.batch_key`, e.g.
  offline chunks of another length) go to separate calls.
- Order: a session contributes at most one step per engine call and its steps run strictly in order
  (autoregressive models depend on it); sessions are served round-robin so none starves.
- Queues are bounded: a face session keeps only its newest image (latest wins), a motion session
  refuses inputs beyond `max_pending` (the caller answers OVERLOADED).
- Pre-processing may run on `prepare_workers` threads (one session's inputs stay on one task, in
  order): face detection and cropping release the GIL in OpenCV.

Stage histograms for queue, post, publish and end_to_end are observed once per engine call (the
oldest step of the call), not per frame: at thousands of sessions per tick the per-frame lock rounds
would cost more than the work they measure.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bridge.pipelines.base import Pipeline
from bridge.protocol.errors import ErrorCode
from bridge.protocol.requests import Input
from bridge.serving.sessions import Session
from bridge.serving.stats import BridgeStats

log = logging.getLogger(__name__)

Publish = Callable[[bytes, bytes], bool]
ReportError = Callable[[Session, ErrorCode, str], None]

FORGET_S = 1.0  # a session silent this long is no longer predicted


class Scheduler:
    def __init__(
        self,
        pipeline: Pipeline[Any, Any],
        publish: Publish,
        report_error: ReportError,
        stats: BridgeStats,
        *,
        max_pending: int = 64,
        max_queue_delay_us: int = 0,
        max_batch: int | None = None,
        prepare_workers: int = 1,
    ) -> None:
        self.pipeline = pipeline
        self._publish = publish
        self._report_error = report_error
        self._stats = stats
        self.max_pending = max_pending
        self.max_queue_delay_s = max_queue_delay_us / 1e6
        self.max_batch = max_batch or pipeline.max_batch
        self._active: OrderedDict[str, Session] = OrderedDict()
        # id -> (last submit, interval before it); ids only, so that a closed session does not linger.
        self._senders: dict[str, tuple[float, float]] = {}
        self._arrived: set[str] = set()  # sessions that submitted since the current batch began forming
        self._wake = threading.Condition()
        self._running = False
        self._workers = ThreadPoolExecutor(prepare_workers, "prepare") if prepare_workers > 1 else None
        self._thread = threading.Thread(target=self._loop, name=f"scheduler-{pipeline.name}", daemon=True)

    def start(self) -> None:
        self._running = True
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._running = False
            self._wake.notify()
        self._thread.join(timeout=5)
        if self._workers is not None:
            self._workers.shutdown(wait=False)

    def submit(self, session: Session, item: Input) -> bool:
        """Queue an input (I/O thread). False when the session's queue is full."""
        return self.submit_many(((session, item),))[0]

    def submit_many(self, items: Sequence[tuple[Session, Input]]) -> list[bool]:
        """Queue several inputs under one lock round (a burst drained from the socket)."""
        accepted = []
        now = time.perf_counter()
        with self._wake:
            for session, item in items:
                if self.pipeline.droppable:
                    dropped = len(session.inbox)
                    session.inbox.clear()
                    session.inputs_dropped += dropped
                    self._stats.inputs_dropped += dropped
                elif self._pending(session) >= self.max_pending:
                    accepted.append(False)
                    continue
                session.inbox.append((now, item))
                self._active[session.id] = session
                last = self._senders.get(session.id)
                self._senders[session.id] = (now, now - last[0] if last else FORGET_S)
                self._arrived.add(session.id)
                accepted.append(True)
            self._wake.notify()
        return accepted

    def _pending(self, session: Session) -> int:
        """Steps queued or about to be: inputs not pre-processed yet count as the steps they make."""
        queued = sum(self.pipeline.steps_for(session.state, item) for _, item in session.inbox)
        return len(session.steps) + queued

    # ------------------------------------------------------------------------------- loop
    def _loop(self) -> None:
        while self._cycle():
            pass

    def _cycle(self) -> bool:
        """One round: gather, pre-process, run every ready session once. Its own frame, so that no
        reference to a session outlives the round (a closed session's slot is freed when it goes)."""
        with self._wake:
            while self._running and not self._active:
                self._wake.wait()
            if not self._running:
                return False
            if self.max_queue_delay_s:
                self._gather()
            self._arrived.clear()
            sessions = list(self._active.values())
        self._prepare(sessions)
        groups: dict[Hashable, list[Session]] = {}
        for s in sessions:
            if s.steps and not s.closed:
                groups.setdefault(self.pipeline.batch_key(s.state, s.steps[0]), []).append(s)
        for group in groups.values():
            for start in range(0, len(group), self.max_batch):
                self._run(group[start : start + self.max_batch])
        with self._wake:
            for s in sessions:
                # Served sessions go to the back of the line; idle ones leave it.
                if s.closed or (not s.inbox and not s.steps):
                    self._active.pop(s.id, None)
                elif s.id in self._active:
                    self._active.move_to_end(s.id)
        return True

    def _gather(self) -> None:
        """Wait (lock held), at most the queue delay, for the sessions whose next input is due now."""
        now = time.perf_counter()
        deadline = now + self.max_queue_delay_s
        due: set[str] = set()
        for sid, (last, interval) in list(self._senders.items()):
            if now - last > FORGET_S:
                del self._senders[sid]
            elif now - interval / 2 <= last + interval <= deadline:  # due within the window, or a bit late
                due.add(sid)
        if len(due) > self.max_batch:
            return  # more than one call holds: waiting cannot make the next call fuller
        due -= {s.id for s in self._active.values() if s.steps or s.inbox}
        while self._running and not due <= self._arrived:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return
            self._wake.wait(remaining)

    def _prepare(self, sessions: list[Session]) -> None:
        waiting = [s for s in sessions if s.inbox and not s.closed]
        if self._workers is not None and len(waiting) > 1:
            list(self._workers.map(self._prepare_session, waiting))
        else:
            for s in waiting:
                self._prepare_session(s)

    def _prepare_session(self, s: Session) -> None:
        while s.inbox and not s.closed:
            t_queued, item = s.inbox.popleft()
            t0 = time.perf_counter()
            try:
                steps = self.pipeline.prepare(s.state, item)
                for step in steps:
                    step.t_queued = t_queued
                s.steps.extend(steps)
                self._stats.observe("pre", time.perf_counter() - t0)
            except Exception as exc:
                log.exception("pre-processing failed for session %s", s.id)
                self._report_error(s, ErrorCode.INTERNAL, f"pre-processing failed: {exc}")

    def _run(self, batch: list[Session]) -> None:
        steps = [s.steps.popleft() for s in batch]
        states = [s.state for s in batch]
        t_start = time.perf_counter()
        oldest = min(step.t_queued for step in steps)
        self._stats.observe("queue", t_start - oldest)
        try:
            result = self.pipeline.run_batch(states, steps)
        except Exception as exc:
            log.exception("engine call failed for %d sessions", len(batch))
            for s in batch:
                self._report_error(s, ErrorCode.INTERNAL, f"engine failed: {exc}")
            return
        self._stats.count_batch(len(batch))
        self._stats.observe("engine", result.engine_us / 1e6)
        t0 = time.perf_counter()
        try:
            frames = self.pipeline.finish_batch(
                states, [s.id for s in batch], [s.out_seq for s in batch], steps, result
            )
        except Exception as exc:
            log.exception("post-processing failed for %d sessions", len(batch))
            for s in batch:
                self._report_error(s, ErrorCode.INTERNAL, f"post-processing failed: {exc}")
            return
        t1 = time.perf_counter()
        self._stats.observe("post", t1 - t0)
        published = dropped = 0
        for s, payloads in zip(batch, frames, strict=True):
            s.out_seq += len(payloads)
            if s.closed:  # closed while its step ran: its frames go nowhere, the others' are untouched
                continue
            for payload in payloads:
                # Counted before the send: a subscriber must never hold a frame that a racing `close`
                # reply or `closed` event leaves out of frames_published.
                s.frames_published += 1
                if self._publish(s.topic, payload):
                    published += 1
                else:
                    s.frames_published -= 1
                    s.frames_dropped += 1
                    dropped += 1
        t2 = time.perf_counter()
        self._stats.observe("publish", t2 - t1)
        self._stats.observe("end_to_end", t2 - oldest)  # queued -> published, the batch's oldest step
        self._stats.count_frames(published, dropped)  # one lock round per batch
