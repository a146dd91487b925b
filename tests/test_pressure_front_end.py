"""Attacks of issue 40 on `serve --workers 2`, each scaled down to fit the suite, each beside a 60 Hz
bystander motion session that must keep every frame, with the process tree's memory bounded:

1. a message nested far deeper than the decoder allows, in every position;
2. more client connections than the front end has links for (a ZeroMQ context holds 1023 sockets);
3. messages over `max_message_bytes` (they grew the front end to 3 GB);
4. `inputs` amplification: 4 KB messages of 4096 junk items from five connections, four never reading;
5. subscriptions from many connections, through the frames forwarder;
9. a bloated envelope field: `session` as a 4M-element array.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import zmq

from bridge.clients.harness.process import BridgeProcess
from bridge.protocol import ErrorCode, pack
from bridge.protocol.versions import DEFAULT_MAX_MESSAGE_BYTES
from bridge.serving.cluster.front_end import CONTEXT_SOCKETS, RESERVED_SOCKETS, FrontEnd

from .bystander import Bystander, streaming_beside
from .pressure_support import (
    RSS_GROWTH_MIB,
    Attacker,
    deep_message_replies,
    junk_inputs,
    refuse_bloated_sessions,
    tree_rss_mib,
)

WORKERS = 2


@pytest.fixture(scope="module")
def bridge() -> Iterator[BridgeProcess]:
    serve = ("--workers", str(WORKERS), "--no-face-tracking", "--idle-timeout", "5", "--metrics-port", "0")
    with BridgeProcess(*serve, start_timeout_s=180.0) as b:  # a first run compiles numba kernels
        yield b


@pytest.fixture
def bystander(bridge: BridgeProcess) -> Iterator[Bystander]:
    """Streams for the test; on exit it must have kept every frame, and the front end must serve on."""
    with streaming_beside(bridge.request_port, settle_s=1.0) as b:
        yield b
    assert bridge.proc.poll() is None


def metric(bridge: BridgeProcess, name: str) -> float:
    url = f"http://127.0.0.1:{bridge.ports['metrics_port']}/metrics"
    with urllib.request.urlopen(url, timeout=5) as r:
        text = r.read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


def test_deep_messages_are_refused_and_the_front_end_serves_on(
    bridge: BridgeProcess, bystander: Bystander
) -> None:
    before = tree_rss_mib(bridge.proc.pid)
    attacker = Attacker(bridge.request_port)
    for position, levels, reply, pong in deep_message_replies(attacker):
        assert pong["op"] == "pong", (position, levels)
        assert reply["code"] in (ErrorCode.MALFORMED, ErrorCode.BAD_TYPE), (position, reply)
    attacker.close()
    assert tree_rss_mib(bridge.proc.pid) - before < RSS_GROWTH_MIB


def test_a_bloated_session_field_is_refused_cheaply(bridge: BridgeProcess, bystander: Bystander) -> None:
    before = tree_rss_mib(bridge.proc.pid)
    attacker = Attacker(bridge.request_port)
    assert refuse_bloated_sessions(attacker) < 8.0  # 20 messages of 4 MB through two processes
    attacker.close()
    assert tree_rss_mib(bridge.proc.pid) - before < RSS_GROWTH_MIB


def test_messages_over_the_size_bound_are_refused_at_the_front_end(
    bridge: BridgeProcess, bystander: Bystander
) -> None:
    """15 MiB messages (under libzmq's cap of twice max_message_bytes) once waited 10,000 deep in a
    link: now the front end answers TOO_LARGE without forwarding or holding them."""
    before = tree_rss_mib(bridge.proc.pid)
    big = pack({"op": "input", "id": 9, "session": "x" * 16, "data": bytes(15 << 20)})
    assert DEFAULT_MAX_MESSAGE_BYTES < len(big) < 2 * DEFAULT_MAX_MESSAGE_BYTES
    attacker = Attacker(bridge.request_port)
    for _ in range(20):
        attacker.sock.send(big)
    replies = attacker.replies(20, timeout_s=20.0)
    assert [r["code"] for r in replies] == [ErrorCode.TOO_LARGE] * 20
    attacker.close()
    assert tree_rss_mib(bridge.proc.pid) - before < RSS_GROWTH_MIB + 64  # libzmq's buffers, 15 MiB each


def test_inputs_amplification_costs_one_reply_per_message(
    bridge: BridgeProcess, bystander: Bystander
) -> None:
    before = tree_rss_mib(bridge.proc.pid)
    message = junk_inputs()
    reader = Attacker(bridge.request_port)
    deaf = [Attacker(bridge.request_port, rcvhwm=1) for _ in range(4)]
    stop = threading.Event()

    def flood(sock: zmq.Socket[bytes]) -> None:
        while not stop.is_set():
            if sock.poll(20, zmq.POLLOUT):
                sock.send(message, zmq.NOBLOCK)

    threads = [threading.Thread(target=flood, args=(a.sock,)) for a in deaf]
    for t in threads:
        t.start()
    try:
        for _ in range(10):
            reader.sock.send(message)
        got = reader.replies(10, timeout_s=15.0)
        assert len(got) == 10 and reader.replies(1, timeout_s=0.3) == []  # one reply per message
        assert all(r["code"] == ErrorCode.MISSING_FIELD and r["items"][-1]["through"] == 4095 for r in got)
        time.sleep(1.0)
    finally:
        stop.set()
        for t in threads:
            t.join()
    for a in (reader, *deaf):
        a.close()
    assert tree_rss_mib(bridge.proc.pid) - before < RSS_GROWTH_MIB


def test_subscriptions_from_many_connections_are_bounded_and_counted(
    bridge: BridgeProcess, bystander: Bystander
) -> None:
    """50 connections x 256 legal prefixes on the public frames port (200 x 256 in the issue): the
    forwarder stores at most max_total_subscriptions (4096) over all of them, counts the rest, and
    passes each stored prefix on once; the bystander keeps every frame."""
    before = tree_rss_mib(bridge.proc.pid)
    refused = metric(bridge, "avatar_bridge_front_end_subscriptions_refused_total")
    frames = f"tcp://127.0.0.1:{bridge.frames_port}"
    subs = []
    for c in range(50):
        sub: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.connect(frames)
        for i in range(256):
            sub.setsockopt(zmq.SUBSCRIBE, b"frame/%08d%08d" % (c, i))
        subs.append(sub)
    expected = refused + 50 * 256 - 4096 + 1  # + 1: the bystander's own is among the stored
    deadline = time.monotonic() + 15.0
    while metric(bridge, "avatar_bridge_front_end_subscriptions_refused_total") < expected - 64:
        assert time.monotonic() < deadline, "the forwarder did not read the subscriptions"
        time.sleep(0.2)
    time.sleep(1.0)
    for sub in subs:
        sub.close()
    assert tree_rss_mib(bridge.proc.pid) - before < RSS_GROWTH_MIB


def test_more_connections_than_links_get_a_clear_refusal(bridge: BridgeProcess, bystander: Bystander) -> None:
    """Past (1023 - 64) / workers clients holding links, a new client's request is answered
    OVERLOADED saying so; those with links are served, and so is the bystander. (Last in this file:
    the links stay until their clients have been idle a minute.)"""
    limit = (CONTEXT_SOCKETS - RESERVED_SOCKETS) // WORKERS
    clients = [Attacker(bridge.request_port) for _ in range(limit + 40)]
    for i, c in enumerate(clients):
        c.sock.send(pack({"op": "ping", "id": i + 1}))
    answers = [c.replies(1, timeout_s=10.0) for c in clients]
    assert all(len(a) == 1 for a in answers)
    refused = [a[0] for a in answers if a[0]["op"] == "error"]
    served = [a[0] for a in answers if a[0]["op"] == "pong"]
    assert len(refused) >= 40 and len(served) + len(refused) == len(clients)
    assert all(r["code"] == ErrorCode.OVERLOADED and "at most" in r["message"] for r in refused)
    for c in clients:
        c.close()
    check = Attacker(bridge.request_port)  # the front end still answers (this one may be refused)
    check.sock.send(pack({"op": "hello", "id": 1}))
    (reply,) = check.replies(1)
    assert reply["op"] in ("hello", "error")
    check.close()


def test_a_link_holds_a_bounded_number_of_bytes(tmp_path: Path) -> None:
    """A link to a worker that does not read holds at most 2 x max_message_bytes of large messages
    (the rest OVERLOADED), and takes more once libzmq has handed them on."""
    endpoint = f"ipc://{tmp_path}/worker"
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    dealer: zmq.Socket[bytes] = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(endpoint)  # nobody there yet: libzmq queues
    link = SimpleNamespace(_queued={}, _queued_bytes={}, link_bytes=16 << 20)
    big = [zmq.Frame(bytes(5 << 20))]
    assert [FrontEnd._forward(link, dealer, big) for _ in range(5)] == [True, True, True, False, False]  # type: ignore[arg-type]
    assert FrontEnd._forward(link, dealer, [b"small"])  # type: ignore[arg-type]  # small ones count by number
    worker: zmq.Socket[bytes] = context.socket(zmq.ROUTER)
    worker.setsockopt(zmq.LINGER, 0)
    worker.bind(endpoint)
    for _ in range(4):
        assert worker.poll(5000)
        worker.recv_multipart(copy=False)
    deadline = time.monotonic() + 5.0
    while not FrontEnd._forward(link, dealer, big):  # type: ignore[arg-type]
        assert time.monotonic() < deadline, "the link never took a large message again"
        time.sleep(0.05)
    dealer.close()
    worker.close()
