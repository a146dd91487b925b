"""Attacks of issue 40 on a single bridge, each scaled down to fit the suite, each beside a 60 Hz
bystander motion session that must keep every frame, with the process's memory bounded. The bridge
runs as a process of its own (`avatar-bridge serve`), as the red team's did: attackers in the test's
process do not share its GIL.

1. one ~1 KB message nested ~1000 levels deep (or far more), in every position;
4. `inputs` amplification: 4 KB messages of 4096 junk items, from a reading and from non-reading
   connections;
5. subscriptions from many connections, each within its own bound;
9. a bloated envelope field: `session` as a 4M-element array.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import zmq

from bridge.clients.harness.process import BridgeProcess
from bridge.protocol import ErrorCode
from bridge.protocol.requests import MAX_INPUT_ITEMS, MAX_ITEM_FAILURES
from bridge.transport.zmq_sockets import TransportConfig

from .bystander import Bystander, streaming_beside
from .conftest import start_bridge, stop_bridge
from .pressure_support import (
    RSS_GROWTH_MIB,
    Attacker,
    deep_message_replies,
    deep_messages,
    junk_inputs,
    refuse_bloated_sessions,
    rss_mib,
    tree_rss_mib,
    until,
)


@pytest.fixture(scope="module")
def bridge() -> Iterator[BridgeProcess]:
    with BridgeProcess("--idle-timeout", "2", "--no-face-tracking", start_timeout_s=180.0) as b:
        yield b


@pytest.fixture
def bystander(bridge: BridgeProcess) -> Iterator[Bystander]:
    """Streams for the test; on exit it must have kept every frame, and the bridge must serve on."""
    with streaming_beside(bridge.request_port, settle_s=1.0) as b:  # a second of frames at least
        yield b
    assert bridge.proc.poll() is None


def test_deep_messages_in_every_position_are_refused_and_the_bridge_serves_on(
    bridge: BridgeProcess, bystander: Bystander
) -> None:
    before = tree_rss_mib(bridge.proc.pid)
    attacker = Attacker(bridge.request_port)
    for position, levels, reply, pong in deep_message_replies(attacker):
        assert pong["op"] == "pong", (position, levels)
        assert reply["op"] == "error" and reply["code"] in (ErrorCode.MALFORMED, ErrorCode.BAD_TYPE), (
            position,
            reply,
        )
    for _ in range(200):  # a stream of them, as fast as the bridge reads
        attacker.sock.send(deep_messages(1000)["unknown key"])
    assert len(attacker.replies(200)) == 200
    attacker.close()
    assert tree_rss_mib(bridge.proc.pid) - before < RSS_GROWTH_MIB


def test_inputs_amplification_costs_one_reply_and_shares_the_drain(
    bridge: BridgeProcess, bystander: Bystander
) -> None:
    before = tree_rss_mib(bridge.proc.pid)
    message = junk_inputs()
    assert len(message) < 4200
    reader = Attacker(bridge.request_port)
    deaf = [Attacker(bridge.request_port, rcvhwm=1) for _ in range(4)]  # never read
    stop = threading.Event()

    def flood(sock: zmq.Socket[bytes]) -> None:  # sends while the bridge takes them (TCP pushes back)
        while not stop.is_set():
            if sock.poll(20, zmq.POLLOUT):
                sock.send(message, zmq.NOBLOCK)

    threads = [threading.Thread(target=flood, args=(a.sock,)) for a in deaf]
    for t in threads:
        t.start()
    try:
        for _ in range(20):
            reader.sock.send(message)
        got = reader.replies(20, timeout_s=15.0)
        assert len(got) == 20 and reader.replies(1, timeout_s=0.3) == []  # one reply per message
        for reply in got:
            assert reply["op"] == "error" and reply["id"] == 5 and reply["code"] == ErrorCode.MISSING_FIELD
            *failed, rest = reply["items"]  # 256 failed, then one entry for the unexamined rest
            assert [f["item"] for f in failed] == list(range(MAX_ITEM_FAILURES))
            assert rest["item"] == MAX_ITEM_FAILURES and rest["through"] == MAX_INPUT_ITEMS - 1
        time.sleep(1.0)  # the non-reading flood goes on beside the bystander
    finally:
        stop.set()
        for t in threads:
            t.join()
    report = bystander.report()
    assert report.latency_p99_ms < 1000, report  # was 7.4 s (one connection)
    for a in (reader, *deaf):
        a.close()
    assert tree_rss_mib(bridge.proc.pid) - before < RSS_GROWTH_MIB


def test_a_bloated_session_field_is_refused_cheaply(bridge: BridgeProcess, bystander: Bystander) -> None:
    before = tree_rss_mib(bridge.proc.pid)
    attacker = Attacker(bridge.request_port)
    assert refuse_bloated_sessions(attacker) < 5.0  # 20 messages of 4 MB: mostly the transfer
    attacker.close()
    assert tree_rss_mib(bridge.proc.pid) - before < RSS_GROWTH_MIB


def test_subscriptions_from_many_connections_are_bounded_and_counted() -> None:
    """50 connections x 256 legal prefixes (200 x 256 in the issue): each within its own bound, over
    the bridge's total (`max_total_subscriptions`); the rest are refused and counted, the bystander
    keeps its frames, memory stays bounded."""
    connections, per_connection, total = 50, 256, 2048
    server, thread = start_bridge(
        transport=TransportConfig(request_port=0, frames_port=0, max_total_subscriptions=total)
    )
    subs: list[zmq.Socket[bytes]] = []
    try:
        b = Bystander(server.sockets.request_port, drain_s=5.0, settle_s=1.0)
        b.start()
        before = rss_mib()
        for c in range(connections):
            sub: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
            sub.setsockopt(zmq.LINGER, 0)
            sub.connect(server.sockets.frames_endpoint)
            for i in range(per_connection):
                sub.setsockopt(zmq.SUBSCRIBE, b"frame/%08d%08d" % (c, i))
            subs.append(sub)
        wanted = connections * per_connection + 1  # and the bystander's own
        held = server.sockets.connections

        def settled() -> bool:
            return held.total + held.refused >= wanted

        deadline = time.monotonic() + 15.0
        while not settled() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert held.total == total and held.total + held.refused == wanted, (held.total, held.refused)
        time.sleep(1.0)
        report = b.stop()
        assert report.clean, report
        assert rss_mib() - before < RSS_GROWTH_MIB
        for sub in subs:
            sub.close()
        subs = []
        assert until(lambda: held.total == 0, 5.0), held.total  # their connections' counts end
    finally:
        for sub in subs:
            sub.close()
        stop_bridge(server, thread)
