"""One scheduler thread per pipeline: pre-process, batch across sessions, run the engine, publish.

Sessions of one engine share every engine call: each call takes the next step of every session that
has one (up to the engine's largest batch tier), so N sessions cost one call per tick instead of N.
A session's steps run strictly in order (autoregressive models depend on it); sessions are served
round-robin so none starves. Queues are bounded: a face session keeps only its newest image (latest
wins), a motion session refuses inputs beyond `max_pending` (the caller answers OVERLOADED).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from bridge.pipelines.base import Pipeline
from bridge.protocol.errors import ErrorCode
from bridge.protocol.requests import Input
from bridge.serving.sessions import Session
from bridge.serving.stats import BridgeStats

log = logging.getLogger(__name__)

Publish = Callable[[bytes, bytes], bool]
ReportError = Callable[[Session, ErrorCode, str], None]


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
    ) -> None:
        self.pipeline = pipeline
        self._publish = publish
        self._report_error = report_error
        self._stats = stats
        self.max_pending = max_pending
        self.max_queue_delay_s = max_queue_delay_us / 1e6
        self.max_batch = max_batch or pipeline.max_batch
        self._active: OrderedDict[str, Session] = OrderedDict()
        self._wake = threading.Condition()
        self._running = False
        self._thread = threading.Thread(target=self._loop, name=f"scheduler-{pipeline.name}", daemon=True)

    def start(self) -> None:
        self._running = True
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._running = False
            self._wake.notify()
        self._thread.join(timeout=5)

    def submit(self, session: Session, item: Input) -> bool:
        """Queue an input (I/O thread). False when the session's queue is full."""
        with self._wake:
            if self.pipeline.droppable:
                dropped = len(session.inbox)
                session.inbox.clear()
                session.inputs_dropped += dropped
                self._stats.inputs_dropped += dropped
            elif len(session.inbox) + len(session.steps) >= self.max_pending:
                return False
            session.inbox.append((time.perf_counter(), item))
            self._active[session.id] = session
            self._wake.notify()
        return True

    def _loop(self) -> None:
        while True:
            with self._wake:
                while self._running and not self._active:
                    self._wake.wait()
                if not self._running:
                    return
                sessions = list(self._active.values())
            self._prepare(sessions)
            ready = [s for s in sessions if s.steps and not s.closed]
            if self.max_queue_delay_s and len(ready) < self.max_batch:
                # Give sessions that are about to send a moment to join this batch.
                time.sleep(self.max_queue_delay_s)
                with self._wake:
                    sessions = list(self._active.values())
                self._prepare(sessions)
                ready = [s for s in sessions if s.steps and not s.closed]
            for start in range(0, len(ready), self.max_batch):
                self._run(ready[start : start + self.max_batch])
            with self._wake:
                for s in sessions:
                    # Served sessions go to the back of the line; idle ones leave it.
                    if s.closed or (not s.inbox and not s.steps):
                        self._active.pop(s.id, None)
                    elif s.id in self._active:
                        self._active.move_to_end(s.id)

    def _prepare(self, sessions: list[Session]) -> None:
        for s in sessions:
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
        for step in steps:
            self._stats.observe("queue", t_start - step.t_queued)
        try:
            result = self.pipeline.run_batch(states, steps)
        except Exception as exc:
            log.exception("engine call failed for %d sessions", len(batch))
            for s in batch:
                self._report_error(s, ErrorCode.INTERNAL, f"engine failed: {exc}")
            return
        self._stats.count_batch(len(batch))
        self._stats.observe("engine", result.engine_us / 1e6)
        for s, step, row in zip(batch, steps, result.rows, strict=True):
            if s.closed:
                continue
            t0 = time.perf_counter()
            try:
                payload = self.pipeline.finish(s.state, s.id, s.out_seq, step, row, result)
            except Exception as exc:
                log.exception("post-processing failed for session %s", s.id)
                self._report_error(s, ErrorCode.INTERNAL, f"post-processing failed: {exc}")
                continue
            t1 = time.perf_counter()
            self._stats.observe("post", t1 - t0)
            s.out_seq += 1
            published = self._publish(s.topic.encode(), payload)
            self._stats.observe("publish", time.perf_counter() - t1)
            self._stats.observe("end_to_end", time.perf_counter() - step.t_queued)  # queued -> published
            if published:
                s.frames_published += 1
            self._stats.count_frame(published)
