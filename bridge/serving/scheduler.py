"""One scheduler thread per pipeline: pre-process, batch across sessions, run the engine, publish.

Sessions of one engine share every engine call: each call takes the next step of every session that
has one, so N sessions cost one call per tick instead of N (docs/scheduling.md).

- Batching window: with `max_queue_delay_us` > 0 a batch waits at most that long, and only for the
  sessions whose next input is due within it (each session's next input is predicted from the
  interval between its last two). A session alone never waits: realtime is latency first, batch 1
  when alone; a session that is not due soon never holds a batch back.
- Tick clock (`tick_hz` > 0, the model's rate): rounds start on a fixed clock instead of on the first
  arrival, so every input that arrives within a tick shares one call; at each tick the round waits at
  most `gather_window_us` more for sessions due then, and the next tick is one period after the
  round's last input (or after the tick plus that wait, if earlier): the clock locks just after the
  last input of each period of clients that send at its rate. Steps left over from a round (a
  session sent two inputs in one tick) run at once, off the clock. The first input after an idle
  spell starts the clock one gather window later.
- Fair admission: while more than one client has work queued here, a client whose queued work has
  reached its share (`fair_work` units over the clients with work, and never less than its sessions'
  own bounds: `max_pending` frames each where inputs are never dropped, one unit each where the
  latest image wins) gets its next input refused (the caller answers OVERLOADED); alone, only the
  per-session bounds apply. Work is `Pipeline.work`: frames, and an image by its size.
- Fair share by cost (issue 40): a pipeline may queue a long input as small pieces (`slices`: motion's
  realtime audio, 4 frames each); each round prepares one piece for every session with no step (within
  PREPARE_BUDGET_S while several clients wait) and more only within it, the clients that used the
  least pre-processing lately first; past ROUND_BUDGET_PERIODS of the learnt cost a row adds to a
  call (bridge.serving.call_cost: the slope, not the mean, so a call's fixed part cuts no round), a
  round gives each client an equal share of its rows. So a client with many sessions slows its own,
  not a client with one.
- Load and admission: `projected_load` is this thread's CPU time per second in rounds (LOAD_WINDOW_S),
  plus the measured cost of sessions still to come; the bridge refuses new sessions past `max_load`.
- Tiers: a batch holds at most the engine's largest batch tier; a backend with fixed shapes (CUDA
  graphs) pads it up to the next tier itself. Steps of different shape (`Pipeline.batch_key`, e.g.
  offline chunks of another length) go to separate calls.
- Order: a session contributes at most one step per engine call and its steps run strictly in order
  (autoregressive models depend on it); sessions are served round-robin so none starves.
- Queues are bounded: a face session keeps only its newest image (latest wins), a motion session
  refuses inputs beyond `max_pending` (the caller answers OVERLOADED).
- Pre-processing may run on `prepare_workers` threads (one session's inputs stay on one task, in
  order): face detection and cropping release the GIL in OpenCV. A JPEG image is decoded there too,
  just before its pipeline prepares it (libjpeg-turbo releases the GIL), so a superseded image is
  never decoded and a corrupt one fails only itself (BAD_IMAGE to its session; stage "jpeg").
- Realtime first: a step that makes more than one frame (an offline chunk) is bulk work; its payload
  holds one entry per frame (`step_frames`), so it can be cut. Bulk calls run after the realtime
  ones of a round, one per round. While realtime sessions stream, a bulk call is cut to fit the gap
  before the next realtime input is due (at most BULK_SLICE_FRAMES frames per session; its cost per
  frame is learnt as it runs), and waits while a realtime input is waiting or overdue; it always
  runs at least one frame of one session otherwise, so offline progresses on a busy machine at the
  price of delaying a realtime input by at most one frame's work. Alone, bulk steps run whole.
  Offline uses what is left.
- Bulk frames are paced, not dropped: they are published with `hold=True`; a frame that a
  subscriber has no room for stays in the session's outbox and is retried every OUTBOX_RETRY_S, and
  the session runs no further step until its outbox is empty. A subscriber that keeps up thus gets
  every frame; one that stops reading holds an outbox at most OUTBOX_PATIENCE_S, then the outbox goes
  out lossy (that subscriber misses it, counted as a stall) so a dead subscriber cannot stop offline
  work.
- Publishing: a realtime call's frames go to the scheduler's publisher thread (a bounded queue; a
  call that finds it full is dropped and counted, the scheduler never waits), which sends one batch
  message per call and per-session frames only where someone subscribes (bridge.serving.publisher).
  Bulk calls publish on this thread: their pacing (`hold`, above) depends on the outcome.
- Supervision: an exception anywhere in a round fails the sessions of that round with INTERNAL (their
  queued work is dropped) and the loop goes on. If the thread dies anyway (a BaseException), `healthy`
  turns false (/healthz, /readyz) and `supervise()`, called by the I/O thread, starts a new one after
  a back-off (RESTART_BACKOFF_S, doubling while it keeps dying); the sessions of the fatal round get
  INTERNAL.

Stage histograms for queue, post, publish and end_to_end are observed once per engine call (the
oldest step of the call), not per frame: at thousands of sessions per tick the per-frame lock rounds
would cost more than the work they measure.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from bridge.pipelines.base import FailedRow, Pipeline
from bridge.protocol.batch_frames import batch_topic
from bridge.protocol.errors import ErrorCode
from bridge.protocol.jpeg import JpegError
from bridge.protocol.requests import ImageInput, Input, JpegInput
from bridge.serving.call_cost import RowCost
from bridge.serving.publisher import (
    INLINE_FRAMES,
    Call,
    CallableOutlet,
    HeldBatch,
    Outlet,
    Publish,
    PublishQueue,
    batch_encoder,
    publish_call,
)
from bridge.serving.sessions import Session
from bridge.serving.stats import BridgeStats
from bridge.serving.thread_names import name_native_thread
from bridge.transport.zmq_sockets import Delivery
from bridge.vision.jpeg import decoded as decoded_jpeg

__all__ = ["Publish", "Scheduler"]

log = logging.getLogger(__name__)

ReportError = Callable[[Session, ErrorCode, str], None]

FORGET_S = 1.0  # a session silent this long is no longer predicted
OUTBOX_RETRY_S = 0.001  # a held bulk frame, or bulk work waiting for a gap, is retried this often
OUTBOX_PATIENCE_S = 0.05  # ... and sent lossy after this long (its subscriber is not reading)
RESTART_BACKOFF_S = 1.0  # a dead scheduler thread is restarted after this, doubling up to 30 s
STUCK_S = 5.0  # a round running longer than this makes the scheduler unhealthy
BULK_SLICE_FRAMES = 4  # frames per bulk step while realtime sessions stream
FAIR_WORK_MIN = 64  # the default fair share pool, in work units, when the largest batch is smaller
# Pre-processing one round may spend before it leaves the rest for the next (at least one input runs):
# a burst of heavy inputs (64 sessions' 1 s chunks at 192 kHz, ~0.5 s) is spread over rounds, and the
# cheapest clients' inputs go first, so a light client's frame never waits behind a heavy client's.
PREPARE_BUDGET_S = 0.002
# Realtime rows one round may run, as a fraction of the model's frame period at the learnt cost one more
# row adds to a call (bridge.serving.call_cost):
# past it each client gets an equal share of the rows (one at least; a client with fewer takes all of
# its own), and the rest run next round. A client with many sessions thus slows its own sessions, not
# a client with one.
ROUND_BUDGET_PERIODS = 0.3
LOAD_WINDOW_S = 1.0  # the busy fraction (`load`) is measured over windows this long
LOAD_SAMPLE_SESSIONS = 64  # a session costs the mean over at least this many (a lone one costs more)


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
        outlet: Outlet | None = None,
        tick_hz: float = 0.0,
        gather_window_us: int = 0,
        fair_work: int = 0,
    ) -> None:
        self.pipeline = pipeline
        # The bridge gives an outlet (subscriptions, the frame gate, batch messages); a bare publish
        # function gets every per-session frame and no batch topic.
        self._outlet: Outlet = outlet or CallableOutlet(publish)
        self._batch_topic = batch_topic(pipeline.name)
        self._held_batches: list[HeldBatch] = []  # bulk batch messages waiting for room
        # Sessions whose bulk step was cut into pieces: a one-frame piece runs in a realtime call, but
        # its frames are still published the bulk way (held for room, in order with the others).
        self._sliced: set[str] = set()
        self._publisher = PublishQueue(pipeline.model_name, self._publish_now)
        self._report_error = report_error
        self._stats = stats
        self.max_pending = max_pending
        self.max_queue_delay_s = max_queue_delay_us / 1e6
        self.max_batch = max_batch or pipeline.max_batch
        self.tick_s = 1.0 / tick_hz if tick_hz > 0 else 0.0  # 0: rounds start on arrival
        self.gather_s = gather_window_us / 1e6
        self._tick: float | None = None  # perf_counter of the next tick, while the clock runs
        # Work units clients share while more than one has work queued (0: the largest batch, >= 64).
        self.fair_work = fair_work or max(FAIR_WORK_MIN, self.max_batch)
        self._active: OrderedDict[str, Session] = OrderedDict()
        # id -> (last submit, interval before it); ids only, so that a closed session does not linger.
        self._senders: dict[str, tuple[float, float]] = {}
        self._arrived: set[str] = set()  # sessions that submitted since the current batch began forming
        self._pruned = 0.0  # when _senders was last pruned
        # Bulk frames a subscriber had no room for: id -> (first held at, payloads in order).
        self._outbox: dict[str, tuple[float, deque[bytes]]] = {}
        self._bulk_frame_s = 0.0  # learnt cost of one bulk frame in a call (engine + post + publish)
        self._round: list[Session] = []  # sessions of the round in progress, for supervision
        self.round_started: float | None = None  # monotonic, while a round runs
        self._deaths = 0
        self._died_at: float | None = None  # when it last died (for the back-off reset)
        self._dead_since: float | None = None  # dead and not restarted yet
        self._bulk_ids: set[str] = set()  # sessions whose latest step was bulk work
        self._bulk_waiting = False  # the last round left bulk work for a realtime gap
        # Measured load: the CPU time this thread spent in rounds over the last window, as a fraction
        # of it (1.0: a core's worth, all one thread can do), and the sessions it served then
        # (admission: `projected_load`); the window in progress.
        self.load = 0.0
        self.streaming = 0
        self._window_start = time.perf_counter()
        self._busy_s = 0.0
        self._served: set[str] = set()
        self._row_cost = RowCost()  # what one more realtime row adds to a call (engine, post, publish)
        # Pre-processing seconds per client, halved every window: the cheapest clients prepare first.
        self._prepared_s: dict[bytes, float] = {}
        self._wake = threading.Condition()
        self._running = False
        self._workers = ThreadPoolExecutor(prepare_workers, "prepare") if prepare_workers > 1 else None
        self._thread = self._new_thread()

    def _new_thread(self) -> threading.Thread:
        return threading.Thread(target=self._loop, name=f"scheduler-{self.pipeline.name}", daemon=True)

    def start(self) -> None:
        self._running = True
        self._publisher.start()
        self._thread.start()

    @property
    def healthy(self) -> bool:
        """The thread and its publisher thread run, and no round has been running for STUCK_S."""
        started = self.round_started
        stuck = started is not None and time.monotonic() - started > STUCK_S
        return self._thread.is_alive() and self._publisher.alive and not stuck

    def supervise(self, now: float) -> None:
        """Restart a dead scheduler thread after its back-off (I/O thread, every reap tick)."""
        if not self._running:
            return
        if self._thread.is_alive():
            if self._died_at is not None and now - self._died_at > 60.0:
                self._deaths, self._died_at = 0, None  # up a minute: the next death backs off afresh
            return
        if self._dead_since is None:  # just noticed
            self._dead_since = now
            self._deaths += 1
            log.error("scheduler %s died; restarting it in %.0f s", self.pipeline.model_name, self._backoff())
            self._fail(self._round, "the scheduler thread died during this session's step")
            self._round, self.round_started = [], None
        if now - self._dead_since >= self._backoff():
            self._died_at, self._dead_since = self._dead_since, None
            self._stats.scheduler_restarts += 1
            self._thread = self._new_thread()
            self._thread.start()
            log.warning("scheduler %s restarted", self.pipeline.model_name)

    def _backoff(self) -> float:
        return float(min(30.0, RESTART_BACKOFF_S * 2.0 ** max(0, self._deaths - 1)))

    def stop(self) -> None:
        with self._wake:
            self._running = False
            self._wake.notify()
        self._thread.join(timeout=5)
        self._publisher.stop()
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
            work = self._client_work(items) if self.pipeline.fair_share else None
            for session, item in items:
                if not self.pipeline.droppable and self._pending(session) >= self.max_pending:
                    accepted.append(False)
                    continue
                if work is not None and not self._admit_fairly(work, session, item):
                    accepted.append(False)
                    continue
                if self.pipeline.droppable:
                    dropped = len(session.inbox)
                    session.inbox.clear()
                    session.inbox_frames = 0
                    session.inputs_dropped += dropped
                    self._stats.inputs_dropped += dropped
                for piece in self.pipeline.slices(session.state, item):
                    session.inbox.append((now, piece))
                    session.inbox_frames += self.pipeline.steps_for(session.state, piece)
                self._active[session.id] = session
                last = self._senders.get(session.id)
                self._senders[session.id] = (now, now - last[0] if last else FORGET_S)
                self._arrived.add(session.id)
                accepted.append(True)
            if now - self._pruned > FORGET_S:  # bounded by the sessions of the last second
                self._pruned = now
                for sid, (last_t, _) in list(self._senders.items()):
                    if now - last_t > FORGET_S:
                        del self._senders[sid]
            self._wake.notify()
        return accepted

    def _client_work(self, items: Sequence[tuple[Session, Input]]) -> dict[bytes, tuple[int, int]] | None:
        """Queued work and sessions with work per client (lock held), or None when one client is all
        there is (then only the per-session bounds apply, and nothing is counted)."""
        owners = {s.owner for s, _ in items}
        if len(owners) < 2 and all(s.owner in owners for s in self._active.values()):
            return None
        work: dict[bytes, tuple[int, int]] = {}
        for s in self._active.values():
            units = self._inbox_work(s) + s.steps_frames
            if units:
                held, sessions = work.get(s.owner, (0, 0))
                work[s.owner] = (held + units, sessions + 1)
        return work

    def _inbox_work(self, session: Session) -> int:
        return sum(self.pipeline.work(session.state, item) for _, item in session.inbox)

    def _admit_fairly(self, work: dict[bytes, tuple[int, int]], session: Session, item: Input) -> bool:
        """Whether the session's client is within its fair share of the queued work (it may cross it
        with this one input; a latest-wins input it replaces counts as gone); if so, count the input."""
        held, sessions = work.get(session.owner, (0, 0))
        queued = self._inbox_work(session)
        if self.pipeline.droppable:
            held -= queued  # latest wins: the queued input goes if this one is taken
        clients = sum(1 for owner, (units, _) in work.items() if units and owner != session.owner) + 1
        # Never below what its sessions' own bounds allow (motion: max_pending frames each), so clients
        # that all fall behind together (a stall) are never refused for it: the share bites where an
        # input's cost is its pre-processing (images), not its frames.
        sessions += not (queued or session.steps)  # this one, if it is new to the queue
        floor = sessions * (1 if self.pipeline.droppable else self.max_pending)
        if clients >= 2 and held > 0 and held >= max(self.fair_work // clients, floor):
            return False
        work[session.owner] = (held + self.pipeline.work(session.state, item), sessions)
        return True

    def _pending(self, session: Session) -> int:
        """Frames queued or about to be (the unit of the pending bound): inputs not pre-processed yet
        count as the frames they make."""
        return session.steps_frames + session.inbox_frames

    # ------------------------------------------------------------------------------- loop
    def _loop(self) -> None:
        name_native_thread(f"sched-{self.pipeline.name}")
        while True:
            try:
                if not self._cycle():
                    return
            except Exception as exc:  # a bug in a round fails that round's sessions, not the bridge
                log.exception("scheduler round failed for %d sessions", len(self._round))
                self._fail(self._round, f"scheduler round failed: {exc}")
            self._round = []
            self.round_started = None

    def _fail(self, sessions: Sequence[Session], message: str) -> None:
        """Answer INTERNAL to each session and drop its queued work (its state may be half-advanced)."""
        for s in sessions:
            with self._wake:
                s.inbox.clear()
                s.inbox_frames = 0
            s.steps.clear()
            s.steps_frames = 0
            self._outbox.pop(s.id, None)
            if not s.closed:
                self._report_error(s, ErrorCode.INTERNAL, message)

    def _cycle(self) -> bool:
        """One round: gather, pre-process, run every ready session once. Its own frame, so that no
        reference to a session outlives the round (a closed session's slot is freed when it goes)."""
        with self._wake:
            while self._running and not self._active:
                self._wake.wait()
            if not self._running:
                return False
            if (self._outbox or self._bulk_waiting) and not self._arrived:
                # Held bulk frames, or bulk work waiting for a gap: retry soon (or on the next input),
                # without spinning.
                self._wake.wait(OUTBOX_RETRY_S)
            if self.tick_s:
                self._await_tick()
            elif self.max_queue_delay_s:
                self._gather(self.max_queue_delay_s)
            self._arrived.clear()
            sessions = list(self._active.values())
        self.round_started = time.monotonic()
        busy_since = time.thread_time()  # CPU: other processes' load is not this thread's cost
        self._round = sessions
        self._flush_outboxes()
        self._prepare(sessions)
        realtime: dict[Hashable, list[Session]] = {}
        bulk: dict[Hashable, list[Session]] = {}
        for s in sessions:
            if not s.steps or s.closed or s.id in self._outbox:
                continue
            try:
                key = self.pipeline.batch_key(s.state, s.steps[0])
                is_bulk = self.pipeline.step_frames(s.steps[0]) > 1
                groups = bulk if is_bulk else realtime
            except Exception as exc:
                log.exception("batch key failed for session %s", s.id)
                self._fail([s], f"scheduling failed: {exc}")
                continue
            groups.setdefault(key, []).append(s)
            (self._bulk_ids.add if is_bulk else self._bulk_ids.discard)(s.id)
        for group in realtime.values():
            group = self._fair_rows(group)
            for start in range(0, len(group), self.max_batch):
                t0 = time.perf_counter()
                batch = group[start : start + self.max_batch]
                self._run(batch)
                self._row_cost.observe(len(batch), time.perf_counter() - t0)
        self._bulk_waiting = False
        if bulk:
            self._run_bulk(next(iter(bulk.values()))[: self.max_batch])  # one bulk call per round
        with self._wake:
            for s in sessions:
                # Served sessions go to the back of the line; idle ones leave it.
                if s.closed:
                    self._active.pop(s.id, None)
                    self._outbox.pop(s.id, None)
                    self._bulk_ids.discard(s.id)
                elif not s.inbox and not s.steps and s.id not in self._outbox:
                    self._active.pop(s.id, None)
                elif s.id in self._active:
                    self._active.move_to_end(s.id)
        self._account(time.thread_time() - busy_since, sessions)
        return True

    def _run_bulk(self, group: list[Session]) -> None:
        """One bulk call, sized to the gap before the next realtime input (at least one frame of one
        session whenever no realtime input is waiting or overdue, so offline always progresses and
        the estimate of its cost keeps learning)."""
        gap = self._realtime_gap()
        if gap is not None:  # realtime sessions stream: cut the call to fit between their ticks
            if gap <= 0:
                self._bulk_waiting = True
                return
            budget = int(gap / self._bulk_frame_s) if self._bulk_frame_s else BULK_SLICE_FRAMES
            per_session = max(1, min(BULK_SLICE_FRAMES, budget // len(group)))
            group = group[: max(1, min(len(group), budget))]
            for s in group:
                self._slice_head(s, per_session)
        frames = sum(self.pipeline.step_frames(s.steps[0]) for s in group)
        t0 = time.perf_counter()
        self._run(group, bulk=True)
        per_frame = (time.perf_counter() - t0) / frames
        learnt = self._bulk_frame_s
        self._bulk_frame_s = per_frame if not learnt else 0.8 * learnt + 0.2 * per_frame

    def _realtime_gap(self) -> float | None:
        """Seconds until the next realtime input is due (<= 0: one is waiting or overdue); None when no
        realtime session streams."""
        now = time.perf_counter()
        gap: float | None = None
        with self._wake:
            if any(s.inbox and s.id not in self._bulk_ids for s in self._active.values()):
                return 0.0
            for sid, (last, interval) in self._senders.items():
                if sid in self._bulk_ids or interval >= FORGET_S or now - last > FORGET_S:
                    continue
                due = last + interval - now
                gap = due if gap is None else min(gap, due)
        return gap

    def _slice_head(self, s: Session, frames: int) -> None:
        """Cut the session's next bulk step into steps of at most `frames` frames (in order)."""
        step = s.steps[0]
        if self.pipeline.step_frames(step) <= frames:
            return
        self._sliced.add(s.id)
        s.steps.popleft()
        pieces = [
            replace(step, payload=step.payload[i : i + frames]) for i in range(0, len(step.payload), frames)
        ]
        for piece in pieces:
            piece.charged = self.pipeline.step_frames(piece)
        s.steps_frames += sum(piece.charged for piece in pieces) - step.charged
        s.steps.extendleft(reversed(pieces))

    def _flush_outboxes(self) -> None:
        now = time.perf_counter()
        stalls = batches = 0
        dropped: Counter[str] = Counter()
        waiting: set[str] = set()  # sessions of a batch message still held
        for held in list(self._held_batches):
            patient = now - held.since < OUTBOX_PATIENCE_S
            encode = batch_encoder(self.pipeline.name, held.columns)
            delivery, _ = self._outlet.publish_batch(self._batch_topic, held.row_topics, encode, hold=patient)
            batches += encode.messages  # with groups, those sent now (others may still be held)
            if delivery is Delivery.HELD:
                waiting |= held.sessions
                continue
            self._held_batches.remove(held)
            stalls += delivery is Delivery.STALLED
        for sid, (since, payloads) in list(self._outbox.items()):
            session = self._active.get(sid)
            if session is None or session.closed:
                self._outbox.pop(sid, None)
                continue
            patient = now - since < OUTBOX_PATIENCE_S
            while payloads:
                delivery = self._outlet.publish(session.topic, payloads[0], hold=patient)
                if delivery is Delivery.HELD:
                    break
                if delivery is Delivery.CLOSED:
                    dropped["session_closed"] += len(payloads)
                    payloads.clear()
                    break
                stalls += delivery is Delivery.STALLED
                payloads.popleft()
            if not payloads and sid not in waiting:
                del self._outbox[sid]
        if stalls or dropped or batches:
            self._stats.count_frames(0, dropped, stalls, batches=batches)

    def _await_tick(self) -> None:
        """Tick clock (lock held): wait for the next tick, then at most the gather window for the
        sessions due then. The next tick is one period after the round's last input arrived, or after
        the tick plus what the gather waited if that is earlier: the clock moves later to meet inputs
        that come after it and earlier to follow inputs that were all waiting for it, so it locks just
        after the last input of each period. Realtime steps left from the last round run at once, off
        the clock."""
        now = time.perf_counter()
        if self._tick is None or now > self._tick + self.tick_s:  # idle or a whole tick late: restart
            self._tick = now + self.gather_s
        if any(s.steps and s.id not in self._bulk_ids for s in self._active.values()):
            return
        while self._running and (remaining := self._tick - time.perf_counter()) > 0:
            self._wake.wait(remaining)
        waited = self._gather(self.gather_s) if self.gather_s else 0.0
        arrivals = [s.inbox[-1][0] for s in self._active.values() if s.inbox and s.id not in self._bulk_ids]
        self._tick = min(self._tick + waited, max(arrivals, default=math.inf)) + self.tick_s

    def _gather(self, window_s: float) -> float:
        """Wait (lock held), at most `window_s`, for the sessions whose next input is due now; returns
        how long it waited."""
        now = time.perf_counter()
        deadline = now + window_s
        due: set[str] = set()
        for sid, (last, interval) in list(self._senders.items()):
            if now - last > FORGET_S:
                del self._senders[sid]
            elif now - interval / 2 <= last + interval <= deadline:  # due within the window, or a bit late
                due.add(sid)
        if len(due) > self.max_batch:
            return 0.0  # more than one call holds: waiting cannot make the next call fuller
        due -= {s.id for s in self._active.values() if s.steps or s.inbox}
        while self._running and not due <= self._arrived:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                break
            self._wake.wait(remaining)
        return time.perf_counter() - now

    def projected_load(self, more: int) -> float:
        """The busy fraction with `more` sessions streaming besides those served now, each costing
        the measured mean (over at least LOAD_SAMPLE_SESSIONS, as a lone session's calls cost more
        per session than batched ones)."""
        elapsed = time.perf_counter() - self._window_start
        # An idle thread rolls no window: then the window in progress is the measure.
        load, streaming = (
            (self._busy_s / elapsed, len(self._served))
            if elapsed >= LOAD_WINDOW_S
            else (self.load, self.streaming)
        )
        return load + load / max(streaming, LOAD_SAMPLE_SESSIONS) * more

    def _fair_rows(self, group: list[Session]) -> list[Session]:
        """The sessions of `group` this round runs: all that fit the round's budget, else an equal
        share per client (water-filled: clients with fewer ready sessions than the share take all)."""
        row_s = self._row_cost.per_row()
        if not row_s:
            return group
        fit = max(1, int(ROUND_BUDGET_PERIODS / self.pipeline.fps / row_s))
        if len(group) <= fit:
            return group
        by_client: dict[bytes, list[Session]] = {}
        for s in group:
            by_client.setdefault(s.owner, []).append(s)
        if len(by_client) < 2:  # alone: no one to be fair to, and fuller calls cost less per row
            return group
        picked: list[Session] = []
        clients = sorted(by_client.values(), key=len)
        for i, ready in enumerate(clients):
            share = max(1, (fit - len(picked)) // (len(clients) - i))
            picked += ready[:share]
        return picked

    def _account(self, busy_s: float, sessions: list[Session]) -> None:
        """Count a round's time and sessions in the load window; roll the window when it is full."""
        self._busy_s += busy_s
        self._served.update(s.id for s in sessions)
        now = time.perf_counter()
        if now - self._window_start >= LOAD_WINDOW_S:
            self.load, self.streaming = self._busy_s / (now - self._window_start), len(self._served)
            self._window_start, self._busy_s, self._served = now, 0.0, set()
            self._prepared_s = {owner: t / 2 for owner, t in self._prepared_s.items() if t > 1e-4}

    def _prepare(self, sessions: list[Session]) -> None:
        waiting = [s for s in sessions if s.inbox and not s.closed]
        if self._workers is not None and len(waiting) > 1:
            list(self._workers.map(self._prepare_session, waiting))
            return
        # The clients that used the least pre-processing lately first. Each session with no step gets
        # one input prepared (inputs are cut small: `Pipeline.slices`), so that every ready session
        # joins this round's call; while several clients wait, only within the budget (the lightest
        # client's first), so a client with many sessions cannot make everyone's round long. Further
        # inputs only within the budget; the rest wait.
        waiting.sort(key=lambda s: self._prepared_s.get(s.owner, 0.0))
        deadline = time.perf_counter() + PREPARE_BUDGET_S
        shared = len({s.owner for s in waiting}) > 1
        for s in waiting:
            if shared and time.perf_counter() > deadline:
                break
            if not s.steps:
                self._prepare_timed(s, math.inf, 1)
        for s in waiting:
            if time.perf_counter() > deadline:
                break
            self._prepare_timed(s, deadline)

    def _prepare_timed(self, s: Session, deadline: float, limit: float = math.inf) -> None:
        """Prepare, charging the time to the session's client."""
        t0 = time.perf_counter()
        self._prepare_session(s, deadline, limit)
        self._prepared_s[s.owner] = self._prepared_s.get(s.owner, 0.0) + time.perf_counter() - t0

    def _prepare_session(self, s: Session, deadline: float = math.inf, limit: float = math.inf) -> None:
        """Prepare the session's queued inputs in order: all, or `limit` of them, or until `deadline`."""
        taken = 0
        while not s.closed and taken < limit and time.perf_counter() <= deadline:
            taken += 1
            with self._wake:  # the I/O thread clears a droppable inbox under this lock
                if not s.inbox:
                    return
                t_queued, item = s.inbox.popleft()
                s.inbox_frames -= self.pipeline.steps_for(s.state, item)
            t0 = time.perf_counter()
            if isinstance(item, JpegInput) and not self.pipeline.decodes_jpeg:
                decoded = self._decode(s, item)
                if decoded is None:
                    continue
                item, t0 = decoded, time.perf_counter()
            try:
                steps = self.pipeline.prepare(s.state, item)
                for step in steps:
                    step.t_queued = t_queued
                    step.charged = self.pipeline.step_frames(step)
                    s.steps_frames += step.charged
                s.steps.extend(steps)
                self._stats.observe("pre", time.perf_counter() - t0)
            except Exception as exc:
                log.exception("pre-processing failed for session %s", s.id)
                self._report_error(s, ErrorCode.INTERNAL, f"pre-processing failed: {exc}")

    def _decode(self, s: Session, item: JpegInput) -> ImageInput | None:
        """A JPEG input's pixels, decoded here (a prepare thread; libjpeg-turbo releases the GIL, so
        the I/O thread goes on), or None after telling its session why not (BAD_IMAGE)."""
        t0 = time.perf_counter()
        image: ImageInput | None = None
        try:
            image = decoded_jpeg(item)
        except JpegError as exc:
            self._report_error(s, ErrorCode.BAD_IMAGE, f"image input {item.seq}: {exc}")
        self._stats.observe("jpeg", time.perf_counter() - t0)  # a failed decode costs its time too
        return image

    def _run(self, batch: list[Session], bulk: bool = False) -> None:
        steps = [s.steps.popleft() for s in batch]
        for s, step in zip(batch, steps, strict=True):
            s.steps_frames -= step.charged
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
        for stage, seconds in result.stages.items():
            self._stats.observe(stage, seconds)
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
        self._stats.observe("post", time.perf_counter() - t0)
        rows: list[tuple[Session, Sequence[bytes]]] = []
        dropped: Counter[str] = Counter()
        for i, (s, step, payloads) in enumerate(zip(batch, steps, frames, strict=True)):
            payloads = result.failed.get(i, payloads)  # its input was unusable (a bad JPEG)
            if isinstance(payloads, FailedRow):  # only this row failed: the others keep their frames
                s.out_seq += self.pipeline.step_frames(step)  # its numbers are spent: a gap shows the loss
                s.drop_frames(self.pipeline.step_frames(step))
                dropped["failed"] += self.pipeline.step_frames(step)
                self._report_error(s, payloads.code, payloads.error)
                continue
            s.out_seq += len(payloads)
            if s.closed:  # closed while its step ran: its frames go nowhere, the others' are untouched
                dropped["session_closed"] += len(payloads)
                continue
            rows.append((s, payloads))
        held = rows if bulk else [r for r in rows if r[0].id in self._sliced]
        if held:
            self._publisher.drain()  # after every queued frame: a session's frames stay in order
            self._publish_now(Call(held, oldest), hold=True)
            rows = [] if bulk else [r for r in rows if r[0].id not in self._sliced]
            self._sliced.difference_update(s.id for s, _ in held if not s.steps)
        if rows and self._publisher.idle() and sum(len(p) for _, p in rows) <= INLINE_FRAMES:
            self._publish_now(Call(rows, oldest))  # cheaper to send than to hand over
        elif rows and not self._publisher.put(Call(rows, oldest)):
            if self.pipeline.droppable:  # that far behind: a camera's next image makes a newer frame
                for s, payloads in rows:
                    s.drop_frames(len(payloads))
                    dropped["publish_queue_full"] += len(payloads)
            else:  # every frame of a dance or a voice counts: wait, so the inputs queue at the door
                self._publisher.drain()
                self._publish_now(Call(rows, oldest))
        if dropped:
            self._stats.count_frames(0, dropped)

    def _publish_now(self, call: Call, hold: bool = False) -> None:
        """Publish one call (the publisher thread; bulk calls on the scheduler thread, with `hold`)."""
        t0 = time.perf_counter()
        out = publish_call(self._outlet, self.pipeline.name, self._batch_topic, call.rows, hold=hold)
        for s, rest in out.held:  # only with hold, so only on the scheduler thread
            self._outbox[s.id] = (time.perf_counter(), deque(rest))
        if out.held_batch is not None:
            self._held_batches.append(out.held_batch)
            for sid in out.held_batch.sessions:  # they step again once it is out
                self._outbox.setdefault(sid, (out.held_batch.since, deque()))
        t1 = time.perf_counter()
        self._stats.observe("publish", t1 - t0)
        self._stats.observe("end_to_end", t1 - call.oldest)  # queued -> published, the call's oldest step
        self._stats.count_frames(
            out.published, out.dropped, out.stalls, encoded=out.encoded, batches=out.batches
        )
