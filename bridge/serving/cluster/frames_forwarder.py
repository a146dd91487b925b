"""The frames forwarder of `serve --workers N`: a process of its own between the workers and the
public frames port.

The workers publish into its XSUB (an `ipc://` endpoint in the front end's private folder); it sends
every message on, `frame/`, `event/` and batch topics alike, from the public XPUB, which has the
single bridge's bounds per subscriber (frames_hwm, frames_sndbuf, the subscription size limit and
`max_subscriptions` per connection: the XPUB is in manual mode and each subscription goes through
`ConnectionSubscriptions.admit`, bridge.transport.zmq_sockets). Upstream, a worker hears each prefix's
first subscription and its last unsubscription, as from libzmq's own proxy. A message some subscriber
had no room for is counted as a stall, as the single bridge counts them (XPUB_NODROP refuses it, and
it is sent again lossy for the others): nothing is lost uncounted here.

Why a process: libzmq's C proxy cannot bound subscriptions per connection, and the same loop as a
Python thread in the front end shared its GIL with request routing (on the H200 at 2048 sessions:
p50 104-237 ms against 58 ms with the C proxy in one session; b8e863f). Its own process has its own
GIL, and with CURVE its own ZAP handler. What it counts (subscriptions refused, the frames port's
failed handshakes) is shared memory without a lock (it alone writes) that the front end's metrics
read. It says ready and hears stop over a pipe (bridge.child_process) and ignores the group's SIGINT
and SIGTERM: it stops on the front end's word, after the workers' last events have passed.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message

from bridge.child_process import ChildProcess, ParentLine
from bridge.serving.heap import freeze_startup_heap
from bridge.transport.curve import start_authenticator
from bridge.transport.zmq_sockets import (
    HANDSHAKE_FAILURES,
    ConnectionSubscriptions,
    TransportConfig,
    _bind,
    frames_xpub,
)

DRAIN = 1000  # messages moved per socket per turn, so neither direction starves the other
POLL_MS = 100  # longest wait in one poll (a stop or a gone front end wakes it at once)
REASONS = (*HANDSHAKE_FAILURES.values(), "other")  # the order of the shared handshake counters


@dataclass(frozen=True)
class ForwarderSpec:
    """What the forwarder process is started with (pickled into the child)."""

    transport: TransportConfig  # the public frames port: host, port (0: a free one), bounds, CURVE
    forward_endpoint: str  # the XSUB the workers publish into


@dataclass
class ForwarderCounters:
    """Shared memory the forwarder alone writes (no lock a killed process could keep)."""

    refused: Any  # ctypes int64: subscriptions not stored (over the limit, or matching no topic)
    stalls: Any  # ctypes int64: messages a subscriber with a full queue missed (once per stall)
    handshakes: Any  # ctypes int64 array: failed CURVE handshakes on the frames port, per REASONS


class FramesForwarder:
    """The front end's side: starts the process (binding the public frames port), restarts it on
    the same port, reads its counters, stops it."""

    def __init__(self, transport: TransportConfig, forward_endpoint: str) -> None:
        mp = multiprocessing.get_context("spawn")
        self._spec = ForwarderSpec(transport, forward_endpoint)
        self._counters = ForwarderCounters(
            mp.RawValue("q", 0), mp.RawValue("q", 0), mp.RawArray("q", len(REASONS))
        )
        self._child: ChildProcess | None = None
        self._ready = False
        self.port = 0
        self.restarts = 0

    @property
    def pid(self) -> int | None:
        return self._child.pid if self._child is not None else None

    @property
    def alive(self) -> bool:
        return self._child is not None and self._child.alive

    @property
    def serving(self) -> bool:
        """Alive and bound: a restarted process still importing is alive, not yet serving."""
        return self.alive and self._ready

    @property
    def refused(self) -> int:
        return int(self._counters.refused.value)

    @property
    def stalls(self) -> int:
        return int(self._counters.stalls.value)

    def handshake_failures(self) -> Counter[str]:
        return Counter({r: int(n) for r, n in zip(REASONS, self._counters.handshakes[:], strict=True) if n})

    def start(self, timeout_s: float = 30.0) -> int:
        """Start the process and wait until its frames port is bound; the port (the first start's
        port again on a restart). Raises if it exits or is not ready in time."""
        if self._child is not None:
            self.restarts += 1
            self._spec = replace(self._spec, transport=replace(self._spec.transport, frames_port=self.port))
        self._ready = False
        self._child = ChildProcess(_run, (self._spec, self._counters), "frames-forwarder")
        self._child.start()
        ready, port = self._child.wait_ready(timeout_s)
        if not ready:
            self.stop()
            t = self._spec.transport
            raise RuntimeError(f"the frames forwarder did not bind {t.host}:{t.frames_port}")
        self.port = int(port)
        self._ready = True
        return self.port

    def stop(self, timeout_s: float = 5.0) -> None:
        if self._child is not None:
            self._child.stop(timeout_s)


def _run(spec: ForwarderSpec, counters: ForwarderCounters, parent: ParentLine) -> None:
    """The forwarder process: bind, say ready, forward until told to stop or its front end is gone."""
    t = spec.transport
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    auth = start_authenticator(context, t.curve_client_keys) if t.curve_client_keys is not None else None
    xsub = context.socket(zmq.XSUB)
    xsub.setsockopt(zmq.LINGER, 0)
    xsub.setsockopt(zmq.RCVHWM, 0)  # the workers' link is unbounded; the XPUB has the bounds
    xsub.bind(spec.forward_endpoint)
    xpub = frames_xpub(context, t)
    xpub.setsockopt(zmq.XPUB_NODROP, 1)  # a full subscriber refuses a message: counted (`_frames`)
    monitor = xpub.get_monitor_socket(sum(HANDSHAKE_FAILURES)) if t.curve_secret_key is not None else None
    port = _bind(xpub, t.host, t.frames_port)
    freeze_startup_heap()
    connections = ConnectionSubscriptions(t.max_subscriptions, t.max_total_subscriptions)
    upstream: Counter[bytes] = Counter()  # admitted prefixes: the connections holding each
    poller = zmq.Poller()
    for sock in (xsub, xpub, *([monitor] if monitor is not None else [])):
        poller.register(sock, zmq.POLLIN)
    poller.register(parent.fileno(), zmq.POLLIN)
    stop = not parent.ready(port)  # the front end may be gone already
    while not stop:
        ready = dict(poller.poll(POLL_MS))
        stop = parent.fileno() in ready and parent.stopped()
        if xpub in ready:
            _subscriptions(xpub, xsub, connections, upstream)
            counters.refused.value = connections.refused
        if xsub in ready:
            counters.stalls.value += _frames(xsub, xpub)
        if monitor is not None and monitor in ready:
            event = recv_monitor_message(monitor)
            reason = HANDSHAKE_FAILURES.get(int(event["event"]), "other")
            counters.handshakes[REASONS.index(reason)] += 1
    if monitor is not None:
        monitor.close(0)
    if auth is not None:
        auth.stop()
    context.destroy(linger=0)


def _subscriptions(
    xpub: zmq.Socket[bytes],
    xsub: zmq.Socket[bytes],
    connections: ConnectionSubscriptions,
    upstream: Counter[bytes],
) -> None:
    """The subscriptions that arrived, each admitted or refused per connection; upstream only a
    prefix's first subscription and its last unsubscription."""
    for _ in range(DRAIN):
        try:
            frame = xpub.recv(zmq.NOBLOCK, copy=False)
        except zmq.Again:
            break
        effect = connections.admit(xpub, frame)
        if effect is None:
            continue
        prefix = effect[1:]
        if effect[0]:
            upstream[prefix] += 1
            if upstream[prefix] == 1:
                xsub.send(effect)
        elif upstream[prefix] > 0:
            upstream[prefix] -= 1
            if not upstream[prefix]:
                del upstream[prefix]
                xsub.send(effect)
    connections.settle()


def _frames(xsub: zmq.Socket[bytes], xpub: zmq.Socket[bytes]) -> int:
    """Pass messages on; how many a subscriber with a full queue missed."""
    stalls = 0
    for _ in range(DRAIN):
        try:
            parts = xsub.recv_multipart(zmq.NOBLOCK, copy=False)
        except zmq.Again:
            break
        try:
            xpub.send_multipart(parts, zmq.NOBLOCK, copy=False)
        except zmq.Again:  # a matching subscriber is full: the others get it, that one misses it
            stalls += 1
            xpub.setsockopt(zmq.XPUB_NODROP, 0)
            try:
                xpub.send_multipart(parts, zmq.NOBLOCK, copy=False)
            finally:
                xpub.setsockopt(zmq.XPUB_NODROP, 1)
    return stalls
