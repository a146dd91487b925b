"""Publishing one engine call's frames: one batch message, and per-session frames only where wanted.

A call's frames leave the bridge as (docs/protocol.md sections 5 and 5.3):
- one `batch/<pipeline>` message with every row of the call, when the pipeline's frames are columns
  (`ColumnFrames`, motion) and someone subscribes to the batch topic; when some of the call's
  sessions were opened with a batch group, one message per group present instead (its rows only, on
  `batch/<pipeline>/<group>/`; the rows without a group on `batch/<pipeline>`), each only when someone
  subscribes to its topic. The rows are grouped with numpy (one lookup per session, none per row), and
  a bridge where no open session has a group takes exactly the path without groups;
- a `frame/<session>` message per frame, encoded and sent only for the sessions someone subscribes
  to (the frames socket reports subscriptions); other pipelines' frames (already encoded) always go.

The frame gate (`Outlet`): a session that has ended publishes nothing more, in no topic: the bridge
checks the rows against its open sessions and sends the batch under the lock that ending a session
takes, so no row follows a `closed` event. A row counts as published once whatever the number of
topics it went out on; it counts as dropped (`session_closed`) when it went out on none because its
session ended.

`PublishQueue` runs this on a thread of its own for realtime calls, so the scheduler starts its next
call while the previous one is sent: a bounded queue. A call that finds it full is dropped and
counted (`publish_queue_full`) when its pipeline is droppable (camera frames: a newer image follows);
otherwise (motion, speech: every frame counts) the scheduler waits for room. A call of at most
INLINE_FRAMES frames that finds the thread idle is sent by the scheduler itself: handing it over (a
queue, a thread wake-up, the GIL) costs more than sending it, and on a loaded machine each thread in
the chain adds to the tail.

Bulk (offline) calls, and the one-frame pieces an offline step is cut into, publish on the
scheduler thread with `hold` (their pacing depends on the outcome, bridge.serving.scheduler), after
the queued calls (`drain`), so a session's frames stay in order.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from bridge.protocol.batch_frames import (
    ColumnFrames,
    MotionColumns,
    encode_batch,
)
from bridge.protocol.versions import FRAME_TOPIC_PREFIX
from bridge.serving.sessions import Session
from bridge.serving.thread_names import name_native_thread
from bridge.transport.zmq_sockets import BridgeSockets, Delivery

log = logging.getLogger(__name__)

PUBLISH_QUEUE_CALLS = 8  # realtime calls waiting for the publisher thread (8 ticks, 133 ms at 60 Hz)
INLINE_FRAMES = 64  # a realtime call this small is sent by the scheduler when the thread is idle


class Publish(Protocol):
    """Send one message; the session's frame gate applies (CLOSED: its session has ended)."""

    def __call__(self, topic: bytes, payload: bytes, *, hold: bool = False) -> Delivery: ...


class Outlet(Protocol):
    """Where a scheduler's frames go: the frames socket behind the frame gate."""

    def publish(self, topic: bytes, payload: bytes, *, hold: bool = False) -> Delivery: ...

    def live(self, topics: Sequence[bytes]) -> list[bool]:
        """Per topic: its session has not ended."""

    def subscribed(self, topics: Sequence[bytes]) -> list[bool]:
        """Per topic: a subscriber would receive it."""

    def batch_groups(self, topics: Sequence[bytes]) -> list[bytes] | None:
        """Per session topic its batch group (b"" for none); None when no open session has one."""

    def publish_batch(
        self, topic: bytes, row_topics: Sequence[bytes], encode: BatchEncoder, *, hold: bool = False
    ) -> tuple[Delivery, npt.NDArray[np.bool_]]:
        """Send the messages `encode` makes of the live rows (on `topic`, a group's on its topic)
        atomically with the gate; CLOSED, sending nothing, when no row's session is open or no row
        is left to send. Returns the delivery (the worst of its messages') and which rows were live."""


@dataclass(frozen=True)
class CallableOutlet:
    """An outlet around a bare publish function (tests, the GPU benchmark): every per-session frame
    is sent, no batch topic is subscribed, and the function applies the gate."""

    send: Publish

    def publish(self, topic: bytes, payload: bytes, *, hold: bool = False) -> Delivery:
        return self.send(topic, payload, hold=hold)

    def live(self, topics: Sequence[bytes]) -> list[bool]:
        return [True] * len(topics)

    def subscribed(self, topics: Sequence[bytes]) -> list[bool]:
        return [t.startswith(FRAME_TOPIC_PREFIX) for t in topics]

    def batch_groups(self, topics: Sequence[bytes]) -> list[bytes] | None:
        return None

    def publish_batch(
        self, topic: bytes, row_topics: Sequence[bytes], encode: BatchEncoder, *, hold: bool = False
    ) -> tuple[Delivery, npt.NDArray[np.bool_]]:
        live = np.ones(len(row_topics), bool)
        return encode.send(self.send, topic, live, hold), live


@dataclass(frozen=True)
class GatedOutlet:
    """The bridge's outlet: its sockets, and the open sessions' topics with the lock that ending a
    session holds while it publishes the `closed` event (bridge.serving.server)."""

    sockets: BridgeSockets
    lock: threading.Lock
    open_topics: set[bytes]
    # The open sessions opened with a batch group: frame topic -> group (the server keeps it with
    # `open_topics`); usually empty, which keeps publishing on the path without groups.
    groups: dict[bytes, bytes] = field(default_factory=dict)

    def publish(self, topic: bytes, payload: bytes, *, hold: bool = False) -> Delivery:
        with self.lock:
            if topic not in self.open_topics:
                return Delivery.CLOSED
            return self.sockets.publish(topic, payload, hold=hold)

    def live(self, topics: Sequence[bytes]) -> list[bool]:
        with self.lock:
            return [t in self.open_topics for t in topics]

    def subscribed(self, topics: Sequence[bytes]) -> list[bool]:
        return self.sockets.matching(topics)

    def batch_groups(self, topics: Sequence[bytes]) -> list[bytes] | None:
        groups = self.groups
        if not groups:
            return None
        return [groups.get(t, b"") for t in topics]

    def publish_batch(
        self, topic: bytes, row_topics: Sequence[bytes], encode: BatchEncoder, *, hold: bool = False
    ) -> tuple[Delivery, npt.NDArray[np.bool_]]:
        with self.lock:
            live = np.fromiter((t in self.open_topics for t in row_topics), bool, len(row_topics))
            if not live.any():
                return Delivery.CLOSED, live
            return encode.send(self.sockets.publish, topic, live, hold), live


@dataclass(slots=True)
class BatchRows:
    """A call's rows for the batch topics: its columns and, when some session has a batch group, each
    row's group and which rows are done: rows of a group nobody subscribes to, and rows whose message
    went out (a held bulk batch is retried until every group's message is out, none twice)."""

    columns: MotionColumns
    names: list[bytes] | None = None  # the groups, sorted (b"": no group); None without groups
    groups: npt.NDArray[np.intp] | None = None  # (n,) each row's index into `names`
    done: npt.NDArray[np.bool_] | None = None  # (n,), with groups

    def take(self, rows: npt.NDArray[np.bool_]) -> BatchRows:
        if self.groups is None or self.done is None:
            return BatchRows(self.columns.take(rows))
        return BatchRows(self.columns.take(rows), self.names, self.groups[rows], self.done[rows])


class BatchEncoder:
    """Encodes and sends the batch messages of some rows: one message of all live rows without
    groups; with groups, one per group among the live rows not done, in row order within each."""

    __slots__ = ("messages", "pipeline", "rows")

    def __init__(self, pipeline: str, rows: BatchRows) -> None:
        self.pipeline, self.rows = pipeline, rows
        self.messages = 0  # messages sent (none held)

    def send(self, publish: Publish, topic: bytes, live: npt.NDArray[np.bool_], hold: bool) -> Delivery:
        t_publish_ns = time.time_ns()
        columns, names, groups, done = self.rows.columns, self.rows.names, self.rows.groups, self.rows.done
        if names is None or groups is None or done is None:
            delivery = publish(
                topic, encode_batch(self.pipeline, columns.take(live), t_publish_ns), hold=hold
            )
            self.messages += delivery is not Delivery.HELD
            return delivery
        pending = np.flatnonzero(live & ~done)
        if not pending.size:
            return Delivery.CLOSED
        codes = groups[pending]
        order = np.argsort(codes, kind="stable")  # stable: a session's rows stay in seq order
        rows = pending[order]
        grouped = columns.take(rows)  # one gather; each group's rows are then a slice of it (views)
        counts = np.bincount(codes, minlength=len(names))
        bounds = [0, *np.cumsum(counts).tolist()]
        worst = Delivery.SENT
        for k in np.flatnonzero(counts).tolist():
            name, start, stop = names[k], bounds[k], bounds[k + 1]
            payload = encode_batch(self.pipeline, grouped, t_publish_ns, name.decode(), slice(start, stop))
            delivery = publish(topic + (b"/%s/" % name if name else b""), payload, hold=hold)
            if delivery is Delivery.HELD:  # sent to nobody: retried with the held batch
                worst = delivery
                continue
            done[rows[start:stop]] = True
            self.messages += 1
            if delivery is Delivery.STALLED and worst is Delivery.SENT:
                worst = delivery
        return worst


@dataclass
class HeldBatch:
    """A bulk batch message a subscriber had no room for: its rows, retried until sent."""

    since: float
    columns: BatchRows  # the rows (the scheduler hands them back to `batch_encoder`)
    row_topics: list[bytes]
    sessions: frozenset[str]


@dataclass
class Outcome:
    """What publishing one call did, for the stats and the scheduler's outboxes."""

    published: int = 0
    stalls: int = 0
    encoded: int = 0
    batches: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    held: list[tuple[Session, list[bytes]]] = field(default_factory=list)  # per-session rest (hold)
    held_batch: HeldBatch | None = None


def batch_encoder(pipeline: str, rows: BatchRows) -> BatchEncoder:
    return BatchEncoder(pipeline, rows)


def publish_call(
    outlet: Outlet,
    pipeline: str,
    batch_topic: bytes,
    rows: Sequence[tuple[Session, Sequence[bytes]]],
    *,
    hold: bool = False,
) -> Outcome:
    """Publish one call's frames (each session's frames in order; see the module doc). Per session
    only attribute updates; the rows are handled as arrays."""
    out = Outcome()
    if not rows:
        return out
    topics = [s.topic for s, _ in rows]
    counts = [len(frames) for _, frames in rows]
    for (s, _), n in zip(rows, counts, strict=True):
        s.frames_published += n  # before any send: a racing close must not leave one out
    columnar = [p for _, p in rows if isinstance(p, ColumnFrames)]
    in_batch = False  # the rows went out in a batch message (or are held to), but those of `left_out`
    left_out: frozenset[str] = frozenset()  # sessions of a group nobody subscribes to
    payload_rows: list[Sequence[bytes] | None]
    if len(columnar) == len(rows):
        columns, owners = _gather(columnar)
        groups = outlet.batch_groups(topics)
        if groups is None:
            batch = BatchRows(columns) if outlet.subscribed([batch_topic])[0] else None
        else:
            batch = _grouped(outlet, batch_topic, columns, groups, owners)
        if batch is not None:
            in_batch, left_out, live_rows = _publish_batch(
                outlet, pipeline, batch_topic, rows, topics, owners, batch, hold, out
            )
            live_sessions = np.zeros(len(rows), bool)
            live_sessions[owners[live_rows]] = True
            live = live_sessions.tolist()
        else:
            live = outlet.live(topics)
        wanted = np.logical_and(outlet.subscribed(topics), live)
        encoded = _encode_wanted(columns, owners, wanted)
        out.encoded += sum(len(p) for p in encoded.values())
        payload_rows = [encoded.get(i) for i in range(len(rows))] if encoded else [None] * len(rows)
    else:  # already encoded (face, speech)
        live = [True] * len(rows)  # the publish function's gate decides per message
        payload_rows = [p for _, p in rows]
    for (s, _), n, ok, payloads in zip(rows, counts, live, payload_rows, strict=True):
        if not ok:  # ended: in no topic
            _drop(s, n, out)
            continue
        if payloads is None:  # nobody subscribes to its topic: the batch (or no one) had it
            out.published += n
            continue
        for i, payload in enumerate(payloads):
            delivery = outlet.publish(s.topic, payload, hold=hold)
            if delivery is Delivery.HELD:  # the rest waits in the scheduler's outbox (bulk only)
                out.held.append((s, list(payloads[i:])))
                out.published += len(payloads) - i
                break
            if delivery is Delivery.CLOSED and not (in_batch and s.id not in left_out):
                _drop(s, 1, out)
                continue
            out.published += 1
            out.stalls += delivery is Delivery.STALLED
    return out


def _grouped(
    outlet: Outlet,
    batch_topic: bytes,
    columns: MotionColumns,
    groups: Sequence[bytes],
    owners: npt.NDArray[np.intp],
) -> BatchRows | None:
    """The rows with their group's index (`groups`: each session's; `owners`: each row's session),
    those of groups nobody subscribes to done; None when nobody subscribes to any of the call's."""
    names = sorted(set(groups))
    index = {g: k for k, g in enumerate(names)}
    codes = np.fromiter((index[g] for g in groups), np.intp, len(groups))[owners]
    wanted = outlet.subscribed([batch_topic + (b"/%s/" % g if g else b"") for g in names])
    if not any(wanted):
        return None
    return BatchRows(columns, names, codes, ~np.asarray(wanted)[codes])


def _publish_batch(
    outlet: Outlet,
    pipeline: str,
    batch_topic: bytes,
    rows: Sequence[tuple[Session, Sequence[bytes]]],
    topics: Sequence[bytes],
    owners: npt.NDArray[np.intp],
    batch: BatchRows,
    hold: bool,
    out: Outcome,
) -> tuple[bool, frozenset[str], npt.NDArray[np.bool_]]:
    """Send the call's batch message(s); (whether the live rows went out or are held to go out, the
    sessions left out as their group has no subscriber, which rows were live)."""
    row_topics = [topics[i] for i in owners.tolist()]
    encoder = batch_encoder(pipeline, batch)
    skipped = None if batch.done is None else batch.done.copy()  # before sending marks rows done
    delivery, live_rows = outlet.publish_batch(batch_topic, row_topics, encoder, hold=hold)
    out.batches += encoder.messages
    out.stalls += delivery is Delivery.STALLED
    left_out: frozenset[str] = frozenset()
    if batch.done is None or skipped is None:
        waiting = frozenset(s.id for s, _ in rows) if delivery is Delivery.HELD else frozenset()
    else:  # only the held groups' sessions wait; the others' rows are out
        waiting = _sessions(rows, owners[live_rows & ~batch.done])
        left_out = _sessions(rows, owners[live_rows & skipped])
    if delivery is Delivery.HELD:
        out.held_batch = HeldBatch(
            time.perf_counter(),
            batch.take(live_rows),
            [row_topics[r] for r in np.flatnonzero(live_rows).tolist()],
            waiting,
        )
    return delivery is not Delivery.CLOSED, left_out, live_rows


def _sessions(
    rows: Sequence[tuple[Session, Sequence[bytes]]], owners: npt.NDArray[np.intp]
) -> frozenset[str]:
    """The ids of these rows' sessions (usually none)."""
    return frozenset(rows[i][0].id for i in np.unique(owners).tolist()) if owners.size else frozenset()


def _drop(s: Session, frames: int, out: Outcome) -> None:
    s.drop_frames(frames, were_published=True)
    out.dropped["session_closed"] += frames


def _gather(columnar: Sequence[ColumnFrames]) -> tuple[MotionColumns, npt.NDArray[np.intp]]:
    """The call's rows as one set of columns (its chunks concatenated) and the owner (index into
    `columnar`) of each row; rows of no listed session (failed or closed) are left out."""
    n = len(columnar)
    starts = np.fromiter((cf.start for cf in columnar), np.intp, n)
    lengths = np.fromiter((cf.stop - cf.start for cf in columnar), np.intp, n)
    chunks: dict[int, MotionColumns] = {}  # usually one; several when post-processing ran in chunks
    for cf in columnar:
        chunks.setdefault(id(cf.columns), cf.columns)
    order = {cid: k for k, cid in enumerate(chunks)}
    chunk_of = (
        np.fromiter((order[id(cf.columns)] for cf in columnar), np.intp, n) if len(chunks) > 1 else None
    )
    parts, owners = [], []
    for k, chunk in enumerate(chunks.values()):
        mine = np.arange(n) if chunk_of is None else np.flatnonzero(chunk_of == k)
        # Row t of session j is chunk row starts[j] + t; sessions in order.
        owner = np.repeat(mine, lengths[mine])
        index = np.repeat(starts[mine] - (np.cumsum(lengths[mine]) - lengths[mine]), lengths[mine])
        index += np.arange(len(owner))
        whole = len(index) == len(chunk) and bool((index == np.arange(len(chunk))).all())
        parts.append(chunk if whole else chunk.take(index))
        owners.append(owner)
    return MotionColumns.concat(parts), np.concatenate(owners)


def _encode_wanted(
    columns: MotionColumns, owners: npt.NDArray[np.intp], wanted: npt.NDArray[np.bool_]
) -> dict[int, list[bytes]]:
    """Per-session payloads (in row order) of the wanted sessions only, encoded in one pass."""
    if not wanted.any():
        return {}
    rows = wanted[owners]
    out: dict[int, list[bytes]] = {}
    for owner, payload in zip(owners[rows].tolist(), columns.take(rows).frames(), strict=True):
        out.setdefault(owner, []).append(payload)
    return out


@dataclass
class Call:
    """One realtime call's frames, handed from the scheduler to its publisher thread."""

    rows: list[tuple[Session, Sequence[bytes]]]
    oldest: float  # perf_counter when its oldest step was queued (the end_to_end metric)


class PublishQueue:
    """A thread that publishes calls in order; `put` never blocks (False when the queue is full)."""

    def __init__(self, name: str, publish: Callable[[Call], None], depth: int = PUBLISH_QUEUE_CALLS) -> None:
        self._publish = publish
        self._queue: queue.Queue[Call | None] = queue.Queue(depth)
        self._thread = threading.Thread(target=self._loop, name=f"publish-{name}", daemon=True)
        self._started = False
        self._unfinished = 0  # calls put and not yet published
        self._done = threading.Condition()

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    @property
    def alive(self) -> bool:
        """Not started yet, or its thread runs (a BaseException in a send would end it)."""
        return not self._started or self._thread.is_alive()

    def put(self, call: Call) -> bool:
        with self._done:
            try:
                self._queue.put_nowait(call)
            except queue.Full:
                return False
            self._unfinished += 1
        return True

    def idle(self) -> bool:
        """Nothing queued or being published: what the caller sends now follows everything put."""
        return not self._unfinished

    def drain(self, timeout_s: float = 1.0) -> None:
        """Wait (at most `timeout_s`) until every call put so far is published: what the caller
        publishes itself next then follows them (one session's frames stay in order)."""
        deadline = time.monotonic() + timeout_s
        with self._done:
            while self._unfinished and (remaining := deadline - time.monotonic()) > 0:
                self._done.wait(remaining)

    def stop(self, timeout_s: float = 5.0) -> None:
        if self._started:
            try:
                self._queue.put(None, timeout=timeout_s)  # after what is queued
            except queue.Full:
                return
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        name_native_thread(self._thread.name)
        while self._publish_next():
            pass

    def _publish_next(self) -> bool:
        """One call, in its own frame: no reference to its sessions outlives it (a closed session's
        slot is freed when the last one goes)."""
        call = self._queue.get()
        if call is None:
            return False
        try:
            self._publish(call)
        except Exception:  # one call's failure must not stop publishing the next ones
            log.exception("publishing a call failed")
        with self._done:
            self._unfinished -= 1
            self._done.notify_all()
        return True
