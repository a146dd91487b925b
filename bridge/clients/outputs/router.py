"""Fan the bridge's frame stream out to outputs (VMC, Live Link Face, recorders) without slowing it.

One SUB socket, on its own thread, reads the bridge's PUB endpoint with a small receive high-water
mark, so when the router falls behind ZeroMQ drops frames instead of queueing them. Every frame is
decoded once and offered to each output's worker thread. A worker keeps only the newest frame per
session (latest wins, like the wire) unless its output asks for every message (recorders), and
holds frames back to the output's own rate limit. An output that blocks or raises affects only its
own worker: errors are logged once per distinct message and the worker carries on.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType

import zmq

from bridge.clients.outputs.session import ObservedSessions, SessionInfo
from bridge.protocol import Frame, ProtocolError, decode_frame
from bridge.protocol.events import SessionEvent, decode_event
from bridge.protocol.versions import EVENT_TOPIC_PREFIX, FRAME_TOPIC_PREFIX

log = logging.getLogger(__name__)

DEFAULT_RCVHWM = 64  # messages; a few frames per session at 60 fps before ZeroMQ starts dropping
DEFAULT_QUEUE_LIMIT = 4096  # per keep-all output (a recorder), before its oldest entries are dropped
POLL_MS = 100  # how quickly the SUB thread notices stop()


@dataclass(frozen=True)
class Received:
    """One PUB message as it arrived: raw topic and payload, and the router's wall clock then."""

    topic: bytes
    payload: bytes
    t_recv_ns: int


class Output(ABC):
    """A destination for frames. Methods run on the output's own worker thread, never the router's."""

    name: str  # for log lines, e.g. "vmc://127.0.0.1:39539"
    max_rate_hz: float | None = None  # at most this many frames per second per session; None: no limit
    keep_all: bool = False  # True: every frame and event in arrival order (recorders)

    @abstractmethod
    def on_frame(self, frame: Frame, session: SessionInfo, received: Received) -> None: ...

    def on_event(self, event: SessionEvent, received: Received) -> None:  # noqa: B027 - optional hook
        """A session opened or closed; most outputs only need the rig, which frames carry."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release sockets and files; called once, after the last frame."""


@dataclass(frozen=True)
class _Item:
    received: Received
    event: SessionEvent | None = None
    frame: Frame | None = None
    info: SessionInfo | None = None


class _Worker:
    def __init__(self, output: Output, queue_limit: int) -> None:
        self.output = output
        self.delivered = 0
        self.dropped = 0  # keep-all overflow only; latest-wins replacement is by design
        self.errors = 0
        self._cond = threading.Condition()
        self._ordered: deque[_Item] = deque()
        self._queue_limit = queue_limit
        self._latest: dict[str, _Item] = {}
        self._last_sent: dict[str, float] = {}
        self._interval = 1.0 / output.max_rate_hz if output.max_rate_hz else 0.0
        self._stopping = False
        self._logged: set[str] = set()
        self._thread = threading.Thread(target=self._run, name=f"output {output.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def offer(self, item: _Item) -> None:
        with self._cond:
            if item.frame is not None and not self.output.keep_all:
                self._latest[item.frame.header.session] = item
                self._cond.notify()
                return
            if item.event is not None and item.event.event == "closed":
                # The session's last frame goes out before its closed event, whatever the rate limit.
                last = self._latest.pop(item.event.session, None)
                if last is not None:
                    self._ordered.append(last)
                self._last_sent.pop(item.event.session, None)
            if len(self._ordered) < self._queue_limit:
                self._ordered.append(item)
            else:
                self.dropped += 1
            self._cond.notify()

    def stop(self, timeout: float) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("%s: still busy after %.1f s; abandoning it", self.output.name, timeout)
            return
        self._call("close", self.output.close)

    def _take(self) -> list[_Item] | None:
        """Block until something is due; None once stopped and drained."""
        with self._cond:
            while True:
                now = time.monotonic()
                items = list(self._ordered)
                self._ordered.clear()
                next_due: float | None = None
                for session, item in list(self._latest.items()):
                    due = self._last_sent.get(session, -1e9) + self._interval
                    if due <= now or self._stopping:
                        items.append(item)
                        del self._latest[session]
                        self._last_sent[session] = now
                    else:
                        next_due = due if next_due is None else min(next_due, due)
                if items:
                    return items
                if self._stopping:
                    return None
                self._cond.wait(None if next_due is None else next_due - now)

    def _run(self) -> None:
        while (items := self._take()) is not None:
            for item in items:
                self._deliver(item)

    def _deliver(self, item: _Item) -> None:
        event, frame, info = item.event, item.frame, item.info
        if event is not None:
            self._call("on_event", lambda: self.output.on_event(event, item.received))
        elif frame is not None and info is not None:
            self._call("on_frame", lambda: self.output.on_frame(frame, info, item.received))
            self.delivered += 1

    def _call(self, what: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as exc:  # an output must never take the router down
            self.errors += 1
            key = f"{what}: {type(exc).__name__}: {exc}"
            if key not in self._logged:
                self._logged.add(key)
                log.exception("%s: %s failed (logged once; the output keeps running)", self.output.name, what)


class OutputRouter:
    """Route one bridge's frames and events to any number of outputs.

    With `endpoint` (the bridge's PUB address, e.g. "tcp://127.0.0.1:5571"), `start()` runs a SUB
    socket on its own thread. Without it, call `feed()` yourself (replay does). `feed()` must be
    called from one thread at a time.
    """

    def __init__(
        self,
        outputs: Sequence[Output],
        endpoint: str | None = None,
        *,
        rcvhwm: int = DEFAULT_RCVHWM,
        queue_limit: int = DEFAULT_QUEUE_LIMIT,
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.outputs = tuple(outputs)
        self.received = 0
        self.bad_messages = 0
        self.frames_lost = 0  # gaps in a session's seq seen here (bridge or router dropped them)
        self._rcvhwm = rcvhwm
        self._context = context
        self._workers = [_Worker(output, queue_limit) for output in self.outputs]
        self._table = ObservedSessions()
        self._last_seq: dict[str, int] = {}
        self._warned: set[str] = set()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._sub_error: BaseException | None = None
        self._sub_thread: threading.Thread | None = None
        self._started = False

    def __enter__(self) -> OutputRouter:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self, timeout: float = 5.0) -> None:
        """Start the workers and, with an endpoint, the SUB thread (returns once it is subscribed)."""
        if self._started:
            return
        self._started = True
        for worker in self._workers:
            worker.start()
        if self.endpoint is None:
            return
        self._sub_thread = threading.Thread(target=self._sub_loop, name="output router SUB", daemon=True)
        self._sub_thread.start()
        if not self._ready.wait(timeout) or self._sub_error is not None:
            self.stop()
            raise RuntimeError(f"output router cannot subscribe to {self.endpoint}: {self._sub_error}")

    def stop(self, timeout: float = 2.0) -> None:
        """Stop reading, let every output finish what it holds, close the outputs."""
        self._stop.set()
        if self._sub_thread is not None:
            self._sub_thread.join(timeout)
        if self._started:
            for worker in self._workers:
                worker.stop(timeout)
        self._started = False

    def feed(self, topic: bytes, payload: bytes, t_recv_ns: int | None = None) -> None:
        """Route one PUB message `[topic, payload]` to the outputs."""
        received = Received(topic, payload, time.time_ns() if t_recv_ns is None else t_recv_ns)
        self.received += 1
        try:
            if topic.startswith(FRAME_TOPIC_PREFIX):
                frame = decode_frame(payload)
                self._count_loss(frame)
                item = _Item(received, frame=frame, info=self._table.info_for(frame))
            elif topic.startswith(EVENT_TOPIC_PREFIX):
                event = decode_event(payload)
                self._table.observe(event)
                if event.event == "closed":
                    self._last_seq.pop(event.session, None)
                item = _Item(received, event=event)
            else:
                return
        except ProtocolError as exc:
            self.bad_messages += 1
            self._warn_once(f"{topic[:6]!r}:{exc.code}", f"dropping a message on {topic!r}: {exc.message}")
            return
        for worker in self._workers:
            worker.offer(item)

    def stats(self) -> dict[str, dict[str, int]]:
        """Counters per output name, plus the router's own under "router"."""
        router = {
            "received": self.received,
            "bad_messages": self.bad_messages,
            "frames_lost": self.frames_lost,
        }
        out = {"router": router}
        for worker in self._workers:
            out[worker.output.name] = {
                "delivered": worker.delivered,
                "dropped": worker.dropped,
                "errors": worker.errors,
            }
        return out

    def _count_loss(self, frame: Frame) -> None:
        session, seq = frame.header.session, frame.header.seq
        last = self._last_seq.get(session)
        if last is not None and seq > last + 1:
            self.frames_lost += seq - last - 1
        self._last_seq[session] = seq

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("output router: %s (logged once)", message)

    def _sub_loop(self) -> None:
        context = self._context or zmq.Context()
        try:
            sock = context.socket(zmq.SUB)
            sock.setsockopt(zmq.RCVHWM, self._rcvhwm)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(self.endpoint or "")
            sock.setsockopt(zmq.SUBSCRIBE, FRAME_TOPIC_PREFIX)
            sock.setsockopt(zmq.SUBSCRIBE, EVENT_TOPIC_PREFIX)
        except zmq.ZMQError as exc:
            self._sub_error = exc
            self._ready.set()
            if self._context is None:
                context.destroy(linger=0)
            return
        self._ready.set()
        try:
            while not self._stop.is_set():
                if not sock.poll(POLL_MS):
                    continue
                while True:  # drain everything queued before polling again
                    try:
                        parts = sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    if len(parts) != 2:
                        self.bad_messages += 1
                        self._warn_once("framing", f"expected [topic, payload], got {len(parts)} frames")
                        continue
                    try:
                        self.feed(parts[0], parts[1], time.time_ns())
                    except Exception:  # a decoder bug must not silence every output
                        self.bad_messages += 1
                        if "crash" not in self._warned:
                            self._warned.add("crash")
                            log.exception("output router: failed on a message on %r (logged once)", parts[0])
        finally:
            sock.close(linger=0)
            if self._context is None:
                context.destroy(linger=0)
