"""Delivery under pressure (issue 11 items 4, 6-9): one attack per test, each with a clean bystander.

Every test runs a real bridge on loopback with the bundled engines and a `Bystander` (a 60 Hz
motion session) that must lose nothing and get no error while the attack runs. Timing figures are
the benchmark's (bench/pressure.py); here only what must hold on any machine is asserted.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
import zmq

from bridge.clients.harness.client import BridgeClient
from bridge.clients.outputs.process import OutputSpec, RouterProcess
from bridge.protocol.errors import ErrorCode
from bridge.protocol.frames import decode_frame
from bridge.serving.server import Bridge
from bridge.transport.zmq_sockets import MAX_SUBSCRIPTION_BYTES, BridgeSockets, TransportConfig

from .bystander import Bystander
from .conftest import running
from .pressure_support import until
from .test_outputs_helpers import OscCapture

ROWS = np.random.default_rng(5).standard_normal((1024, 35)).astype(np.float32)


@contextmanager
def bystander(bridge: Bridge) -> Iterator[Bystander]:
    """A bystander streaming for the duration; asserts on exit that it lost nothing."""
    b = Bystander(bridge.sockets.request_port, drain_s=3.0)
    b.start()
    yield b
    report = b.stop()
    assert report.clean, report


def raw_sub(bridge: Bridge, prefix: bytes, *, rcvhwm: int = 1000, rcvbuf: int = -1) -> zmq.Socket[bytes]:
    sub: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.RCVHWM, rcvhwm)
    sub.setsockopt(zmq.RCVBUF, rcvbuf)
    sub.connect(bridge.sockets.frames_endpoint)
    sub.setsockopt(zmq.SUBSCRIBE, prefix)
    return sub


def metrics_get(bridge: Bridge, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
    assert bridge.metrics is not None
    url = f"http://127.0.0.1:{bridge.metrics.port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return int(r.status), bytes(r.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()


def replied(client: BridgeClient) -> bool:
    client.poll_replies()
    return bool(client.errors)


def stalls(bridge: Bridge) -> int:
    return sum(s.subscriber_stalls for s in bridge.stats.children)


def test_paused_subscriber_is_counted_and_gets_current_frames_after_its_backlog() -> None:
    # Small queues, so that the pause overflows within a second of the bystander's 60 Hz.
    transport = TransportConfig(request_port=0, frames_port=0, frames_hwm=8, frames_sndbuf=4096)
    with running(transport=transport) as bridge, bystander(bridge) as b:
        assert b.session is not None
        paused = raw_sub(bridge, b"frame/", rcvhwm=4, rcvbuf=4096)  # every session's frames; never read
        time.sleep(2.0)
        assert stalls(bridge) >= 1  # the bridge saw that subscriber's queue full, and counted it
        # Resume: the backlog (what was queued when it filled) comes first, then current frames.
        newest_seq = -1
        stale = 0
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            if not paused.poll(200):
                continue
            frame = decode_frame(paused.recv_multipart()[1])
            lag_ms = (time.time_ns() - frame.header.t_publish_ns) / 1e6
            if lag_ms < 1000 / 60 + 5:
                newest_seq = frame.header.seq
                break
            stale += 1
        paused.close()
        assert newest_seq >= 0, "no current frame after resuming"
        # The backlog is bounded by the queues on both sides (8 + 4 messages, two 4 KiB buffers).
        assert stale < 40, stale


def test_subscription_flood_is_bounded() -> None:
    with running() as bridge, bystander(bridge) as b:
        assert b.session is not None
        big = raw_sub(bridge, b"x" * 1024)  # longer than any topic: libzmq closes that connection
        flood = raw_sub(bridge, b"frame/")
        for i in range(20_000):  # short ones are applied, a bounded number per round, by the I/O thread
            flood.setsockopt(zmq.SUBSCRIBE, b"frame/%016d" % i)
        time.sleep(1.0)
        # The bridge still serves new subscribers.
        late = raw_sub(bridge, f"frame/{b.session}".encode())
        assert late.poll(3000), "a subscriber joining after the flood gets nothing"
        for s in (big, flood, late):
            s.close()
    assert len(b"x" * 1024) > MAX_SUBSCRIPTION_BYTES


def test_offline_flood_delivers_every_frame_and_leaves_realtime_alone() -> None:
    with running() as bridge, bystander(bridge):
        client = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        client.hello("offline")
        sid = client.open("motion", mode="offline")["session"]
        client.subscribe(f"frame/{sid}".encode())
        time.sleep(0.1)
        seqs: list[int] = []
        for i in range(1):  # 1024 frames: one input, 8 chunks of 128, each once a burst
            client.send_features(sid, i, ROWS)
            deadline = time.monotonic() + 20
            while len(seqs) < (i + 1) * len(ROWS) and time.monotonic() < deadline:
                seqs += [r.frame.header.seq for r in client.recv_frames(50)]
        client.poll_replies()
        assert not client.errors, client.errors
        assert seqs == list(range(len(ROWS)))  # a subscriber that keeps up gets every frame
        client.close()


class _Fatal(BaseException):
    """Kills a scheduler thread: not an Exception, so the round's guard does not catch it."""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_scheduler_crash_turns_health_red_and_is_restarted() -> None:
    with running(metrics_port=0) as bridge:
        assert metrics_get(bridge, "/healthz")[0] == 200
        scheduler = next(s for p, s in bridge.schedulers.items() if p.name == "motion")
        pipeline = scheduler.pipeline
        run_batch = pipeline.run_batch
        armed = threading.Event()

        def crash_once(states, steps):  # type: ignore[no-untyped-def]
            if armed.is_set():
                armed.clear()
                raise _Fatal("injected")
            return run_batch(states, steps)

        pipeline.run_batch = crash_once  # type: ignore[method-assign]
        victim = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        victim.hello("victim")
        sid = victim.open("motion")["session"]
        armed.set()
        victim.send_features(sid, 0, ROWS[:1])
        assert until(lambda: metrics_get(bridge, "/healthz")[0] == 503, 3.0), "health stayed green"
        assert metrics_get(bridge, "/readyz")[0] == 503
        assert until(lambda: metrics_get(bridge, "/healthz")[0] == 200, 5.0), "never restarted"
        assert bridge.stats.snapshot()["scheduler_restarts"] == 1
        until(lambda: replied(victim), 2.0)
        assert [e["code"] for e in victim.errors] == [ErrorCode.INTERNAL]  # its step died with the thread
        victim.close()
        with bystander(bridge):  # the restarted scheduler serves
            time.sleep(1.0)
        pipeline.run_batch = run_batch  # type: ignore[method-assign]


def test_an_exception_in_a_round_fails_only_its_session() -> None:
    with running() as bridge, bystander(bridge):
        scheduler = next(s for p, s in bridge.schedulers.items() if p.name == "motion")
        pipeline = scheduler.pipeline
        batch_key = pipeline.batch_key
        attacker = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        attacker.hello("attacker")
        sid = attacker.open("motion")["session"]
        poisoned = {id(bridge.sessions.get(sid).state)}  # type: ignore[union-attr]

        def key(state, step):  # type: ignore[no-untyped-def]
            if id(state) in poisoned:
                raise RuntimeError("injected")
            return batch_key(state, step)

        pipeline.batch_key = key  # type: ignore[method-assign]
        try:
            for seq in range(20):
                attacker.send_features(sid, seq, ROWS[:1])
                time.sleep(1 / 60)
            assert until(lambda: replied(attacker), 3.0)
            assert {e["code"] for e in attacker.errors} == {ErrorCode.INTERNAL}
        finally:
            pipeline.batch_key = batch_key  # type: ignore[method-assign]
        attacker.close()


def test_slowloris_and_scrapers_cannot_take_the_metrics_endpoint_or_the_bridge() -> None:
    with running(metrics_port=0) as bridge, bystander(bridge):
        assert bridge.metrics is not None
        threads_before = threading.active_count()
        port = bridge.metrics.port
        slow = []
        for _ in range(300):  # each sends half a request line and then nothing (more than the cap)
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /metr")
            slow.append(s)
        stop = threading.Event()
        scrapes: list[int] = []

        def scrape() -> None:
            while not stop.is_set():
                try:
                    scrapes.append(metrics_get(bridge, "/metrics", timeout=5)[0])
                except OSError:
                    scrapes.append(0)

        scrapers = [threading.Thread(target=scrape) for _ in range(8)]
        for t in scrapers:
            t.start()
        time.sleep(3.0)
        stop.set()
        for t in scrapers:
            t.join(10)
        # Threads: the 8 scrapers are ours; the endpoint has its two, not one per connection.
        assert threading.active_count() <= threads_before + 8
        assert bridge.metrics.refused > 0  # slow ones were evicted or timed out
        assert bridge.metrics.renderer.renders <= 3.0 / 0.25 + 4  # 8 scrapers, one render per 250 ms
        for s in slow:
            s.close()
        assert scrapes.count(200) > len(scrapes) / 2, scrapes  # quick clients were served throughout
        assert until(lambda: metrics_get(bridge, "/healthz")[0] == 200, 5.0)


def test_output_router_runs_in_its_own_process() -> None:
    osc = OscCapture()
    with running() as bridge, bystander(bridge):
        endpoint = bridge.sockets.frames_endpoint
        router = RouterProcess([OutputSpec("vmc", "127.0.0.1", osc.port, None)], endpoint)
        router.start()
        try:
            assert router.pid is not None and router.pid != os.getpid()
            assert until(lambda: bool(osc.messages), 5.0), "no VMC message from the output process"
        finally:
            router.stop()
            osc.close()


def test_reply_drops_are_counted_by_reason() -> None:
    sockets = BridgeSockets(TransportConfig(request_port=0, frames_port=0, request_hwm=4))
    try:
        assert sockets.reply((b"nobody",), b"x") == "peer_gone"
        dealer: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.setsockopt(zmq.RCVHWM, 1)
        dealer.setsockopt(zmq.RCVBUF, 4096)
        dealer.setsockopt(zmq.ROUTING_ID, b"reader")
        dealer.connect(f"tcp://127.0.0.1:{sockets.request_port}")
        dealer.send(b"hi")
        assert sockets.router.poll(2000)
        envelope = (sockets.router.recv_multipart()[0],)
        reasons = {sockets.reply(envelope, b"y" * 4096) for _ in range(2000)}
        assert "peer_full" in reasons  # it stopped reading: counted, never queued without bound
        dealer.close()
    finally:
        sockets.close()
