"""The multiplexed `inputs` message and I/O in batches (issue 16), over real sockets on 127.0.0.1.

An `inputs` message with N sessions' items must give the same frames as N `input` messages; a bad
item fails only itself (its error reply carries its index); hostile sizes get their codes; ownership
is checked per item; the I/O thread hands a scheduler one batch per drain.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
import zmq

from bridge.clients.harness.client import BridgeClient
from bridge.clients.harness.run import run_harness
from bridge.protocol import ErrorCode, MotionFrame, pack, unpack_map
from bridge.protocol.requests import MAX_INPUT_ITEMS, Input
from bridge.serving.server import Bridge, ServeConfig
from bridge.serving.sessions import Session
from bridge.transport.zmq_sockets import TransportConfig

from .conftest import MODELS, start_bridge, stop_bridge

ROWS = np.random.default_rng(16).standard_normal((6, 35)).astype(np.float32)
SESSIONS = 4


@pytest.fixture(scope="module")
def bridge() -> Iterator[Bridge]:
    server, thread = start_bridge(idle_timeout_s=5.0)
    yield server
    stop_bridge(server, thread)


@pytest.fixture
def client(bridge: Bridge) -> Iterator[BridgeClient]:
    c = BridgeClient("127.0.0.1", bridge.sockets.request_port)
    c.hello("multiplex test")
    c.subscribe()
    time.sleep(0.05)
    yield c
    c.close()


def frames_of(client: BridgeClient, sessions: Sequence[str], count: int) -> dict[str, list[MotionFrame]]:
    """`count` frames of each session (waits up to 10 s)."""
    out: dict[str, list[MotionFrame]] = {sid: [] for sid in sessions}
    deadline = time.monotonic() + 10
    while any(len(v) < count for v in out.values()) and time.monotonic() < deadline:
        for r in client.recv_frames(50):
            if isinstance(r.frame, MotionFrame) and r.frame.header.session in out:
                out[r.frame.header.session].append(r.frame)
    return out


def replies(sock: zmq.Socket[bytes], count: int, timeout_s: float = 5.0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count and sock.poll(max(1, int((deadline - time.monotonic()) * 1000))):
        out.append(unpack_map(sock.recv()))
    return out


def test_hello_announces_the_item_bound(client: BridgeClient) -> None:
    assert client.hello_reply["max_input_items"] == MAX_INPUT_ITEMS


def test_inputs_give_the_same_frames_as_one_input_each(client: BridgeClient) -> None:
    singles = [client.open("motion", style="krump")["session"] for _ in range(SESSIONS)]
    muxed = [client.open("motion", style="krump")["session"] for _ in range(SESSIONS)]
    for t, row in enumerate(ROWS):
        for sid in singles:
            client.send_features(sid, t, row[None], t_capture_ns=1000 + t)
        client.send_inputs([client.features_item(sid, t, row[None], t_capture_ns=1000 + t) for sid in muxed])
        time.sleep(0.005)
    got = frames_of(client, singles + muxed, len(ROWS))
    client.poll_replies()
    assert not client.errors, client.errors
    for one, many in zip(singles, muxed, strict=True):
        a, b = got[one], got[many]
        assert [f.header.seq for f in a] == [f.header.seq for f in b] == list(range(len(ROWS)))
        assert [f.header.input_seq for f in b] == list(range(len(ROWS)))
        assert [f.header.t_capture_ns for f in b] == [f.header.t_capture_ns for f in a]
        for fa, fb in zip(a, b, strict=True):  # batched with other rows or not: the same model output
            np.testing.assert_allclose(fa.joints, fb.joints, atol=1e-5)
            np.testing.assert_allclose(fa.root, fb.root, atol=1e-5)


def test_a_bad_item_fails_only_itself_and_ownership_is_per_item(bridge: Bridge, client: BridgeClient) -> None:
    mine = [client.open("motion")["session"] for _ in range(2)]
    face = client.open("face")["session"]
    other = BridgeClient("127.0.0.1", bridge.sockets.request_port)
    other.hello("another client")
    theirs = other.open("motion")["session"]
    good = [client.features_item(sid, 0, ROWS[:1]) for sid in mine]
    items: list[Any] = [
        good[0],
        {**client.features_item(mine[1], 1, ROWS[:1]), "rows": 2},  # BAD_SIZE
        client.features_item(theirs, 0, ROWS[:1]),  # NOT_OWNER
        client.features_item("0" * 16, 0, ROWS[:1]),  # UNKNOWN_SESSION
        client.features_item(face, 0, ROWS[:1]),  # WRONG_INPUT_KIND
        {**client.features_item(mine[1], 2, ROWS[:1]), "seq": -1, "id": 9},  # BAD_VALUE, id echoed
        7,  # not a map: MALFORMED
        {**good[1], "ack": True, "id": 5},
    ]
    client.dealer.send(pack({"op": "inputs", "v": 1, "id": 3, "items": items}))
    ack, error = replies(client.dealer, 2)  # the ack, then ONE error reply listing the failed items
    assert ack["op"] == "ack" and ack["item"] == 7 and ack["id"] == 5 and ack["session"] == mine[1]
    assert error["op"] == "error" and error["id"] == 3 and error["code"] == ErrorCode.BAD_SIZE
    assert "item" not in error and error["message"].startswith("6 of 8 items failed; item 1:")
    by_item = {f["item"]: f for f in error["items"]}
    assert {i: f["code"] for i, f in by_item.items()} == {
        1: ErrorCode.BAD_SIZE,
        2: ErrorCode.NOT_OWNER,
        3: ErrorCode.UNKNOWN_SESSION,
        4: ErrorCode.WRONG_INPUT_KIND,
        5: ErrorCode.BAD_VALUE,
        6: ErrorCode.MALFORMED,
    }
    assert all(f["name"] == ErrorCode(f["code"]).name and f["message"] for f in error["items"])
    assert by_item[5]["id"] == 9 and by_item[5]["session"] == mine[1]
    assert by_item[2]["session"] == theirs
    frames = frames_of(client, mine, 1)
    assert [len(frames[sid]) for sid in mine] == [1, 1]  # the good items were served
    other.subscribe(f"frame/{theirs}".encode())
    time.sleep(0.05)
    other.send_features(theirs, 0, ROWS[:1])  # the other client's session was not fed by the hijack
    (frame,) = [r.frame for r in other.recv_frames(3000)]
    assert frame.header.seq == 0 and frame.header.input_seq == 0
    other.close()


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"items": []}, ErrorCode.BAD_VALUE),
        ({"items": [{}] * (MAX_INPUT_ITEMS + 1)}, ErrorCode.BAD_VALUE),
        ({"items": {"session": "x"}}, ErrorCode.BAD_TYPE),
        ({}, ErrorCode.MISSING_FIELD),
        ({"v": 2, "items": [{}]}, ErrorCode.UNSUPPORTED_VERSION),
    ],
)
def test_hostile_inputs_messages_get_their_code(
    client: BridgeClient, message: dict[str, Any], code: int
) -> None:
    client.dealer.send(pack({"op": "inputs", "id": 11, **message}))
    (reply,) = replies(client.dealer, 1)
    assert reply["code"] == code and reply["id"] == 11 and "item" not in reply


def test_an_inputs_message_over_the_size_bound_is_too_large(bridge: Bridge, client: BridgeClient) -> None:
    sid = client.open("face")["session"]
    image = np.zeros((1024, 2048, 3), np.uint8)  # legal alone; two are over max_message_bytes
    client.dealer.send(pack({"op": "inputs", "items": [client.image_item(sid, i, image) for i in range(2)]}))
    (reply,) = replies(client.dealer, 1)
    assert reply["code"] == ErrorCode.TOO_LARGE
    before = len(client.errors)
    client.send_inputs([client.image_item(sid, i, image) for i in range(2)])  # the client splits them
    assert replies(client.dealer, 1, timeout_s=0.5) == [] and len(client.errors) == before


def test_one_inputs_message_is_one_batch_for_its_scheduler(
    bridge: Bridge, client: BridgeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    sids = [client.open("motion")["session"] for _ in range(16)]
    (scheduler,) = [s for p, s in bridge.schedulers.items() if p.name == "motion"]
    calls: list[int] = []
    submit_many = scheduler.submit_many

    def counted(items: Sequence[tuple[Session, Input]]) -> list[bool]:
        calls.append(len(items))
        return submit_many(items)

    monkeypatch.setattr(scheduler, "submit_many", counted)
    client.send_inputs([client.features_item(sid, 0, ROWS[:1]) for sid in sids])
    frames_of(client, sids, 1)
    assert calls == [16]


def test_the_harness_drives_many_sessions_through_inputs(client: BridgeClient) -> None:
    report = run_harness(
        client, "motion", seconds=0.5, sessions=8, feature_rows=ROWS.repeat(8, 0), multiplex=True
    )
    assert report.ok and report.frames_lost == 0 and not report.errors, report.errors
    assert report.frames_received == report.inputs_sent == 8 * min(len(ROWS) * 8, 30)


def test_a_failure_queueing_a_batch_costs_only_its_inputs(
    bridge: Bridge, client: BridgeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    sids = [client.open("motion")["session"] for _ in range(3)]
    (scheduler,) = [s for p, s in bridge.schedulers.items() if p.name == "motion"]

    def broken(items: Sequence[tuple[Session, Input]]) -> list[bool]:
        raise RuntimeError("injected")

    monkeypatch.setattr(scheduler, "submit_many", broken)
    client.send_inputs([client.features_item(sid, 0, ROWS[:1]) for sid in sids])
    (got,) = replies(client.dealer, 1)
    assert [(f["code"], f["item"], f["session"]) for f in got["items"]] == [
        (ErrorCode.INTERNAL, i, sid) for i, sid in enumerate(sids)
    ]
    monkeypatch.undo()
    client.send_inputs([client.features_item(sid, 0, ROWS[:1]) for sid in sids])  # still serving
    assert [len(f) for f in frames_of(client, sids, 1).values()] == [1, 1, 1]


def test_a_drain_takes_one_message_per_client_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Bridge(ServeConfig(transport=TransportConfig(request_port=0, frames_port=0), models_dir=MODELS))
    server.start()  # schedulers only: the test drains the request socket by hand
    try:
        flooder: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
        bystander: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
        for sock in (flooder, bystander):
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(f"tcp://127.0.0.1:{server.sockets.request_port}")
        for i in range(8):  # a full inbound queue (8 messages) of one client
            flooder.send(pack({"op": "ping", "id": i}))
        bystander.send(pack({"op": "ping", "id": 100}))
        poller = zmq.Poller()
        poller.register(server.sockets.router, zmq.POLLIN)
        assert poller.poll(5000)
        time.sleep(0.2)  # every message has reached the bridge's queue
        order: list[int] = []
        on_message = server._on_message

        def recorded(parts: list[bytes | memoryview], owner: bytes) -> int:
            order.append(int(unpack_map(bytes(parts[-1]))["id"]))
            return on_message(parts, owner)

        monkeypatch.setattr(server, "_on_message", recorded)
        server._drain()
        assert sorted(order) == [*range(8), 100]
        assert 100 in order[:2]  # behind at most one message of the flooder
        assert [r["id"] for r in replies(bystander, 1)] == [100]
        flooder.close(0)
        bystander.close(0)
    finally:
        server.close()


def test_replies_keep_the_order_of_a_clients_requests(client: BridgeClient) -> None:
    sid = client.open("motion")["session"]
    item = client.features_item(sid, 0, ROWS[:1])
    items: list[Any] = [
        {**item, "ack": True, "id": 1},
        {**item, "rows": 2, "id": 2},
        {**item, "ack": True, "id": 3},
    ]
    client.dealer.send(pack({"op": "inputs", "id": 7, "items": items}))  # acks, then the one error
    client.dealer.send(pack({"op": "input", **item, "ack": True, "id": 4}))
    client.dealer.send(pack({"op": "ping", "id": 5}))  # the inputs' acks come before the pong
    got = replies(client.dealer, 5)
    assert [(r["op"], r["id"], r.get("item")) for r in got] == [
        ("ack", 1, 0),
        ("ack", 3, 2),
        ("error", 7, None),  # listing item 1
        ("ack", 4, None),
        ("pong", 5, None),
    ]
    assert [(f["item"], f["id"]) for f in got[2]["items"]] == [(1, 2)]
