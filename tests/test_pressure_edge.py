"""Attacks at the request edge (issue 11): each one against a real bridge on loopback while a bystander
motion session streams at 60 Hz. The bystander must lose nothing and get no error; the attacker gets
its documented code (docs/protocol.md sections 4 and 6)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import zmq

from bridge.clients.harness.client import BridgeClient, BridgeError
from bridge.pipelines import motion as motion_module
from bridge.protocol import ErrorCode, decode_frame, pack, unpack_map
from bridge.protocol.batch_frames import MotionColumns, decode_batch, motion_columns
from bridge.protocol.requests import MAX_AUDIO_INPUT_S, FeaturesInput, decode_request
from bridge.serving.server import Bridge
from bridge.transport.zmq_sockets import TransportConfig

from .bystander import Bystander, streaming_beside
from .conftest import start_bridge, stop_bridge
from .pressure_support import Attacker, rss_mib

ROW = np.zeros((1, 35), np.float32)
QUOTA = 4


@pytest.fixture(scope="module")
def bridge() -> Iterator[Bridge]:
    server, thread = start_bridge(idle_timeout_s=5.0, max_sessions_per_client=QUOTA)
    yield server
    stop_bridge(server, thread)


def under_attack(bridge: Bridge, attack: Callable[[Bystander], None], seconds: float = 1.0) -> None:
    """Run `attack` while a bystander streams; the bystander must come out clean."""
    with streaming_beside(bridge.sockets.request_port, min_s=seconds) as bystander:
        attack(bystander)


def input_of(session: str, **fields: Any) -> dict[str, Any]:
    return {"op": "input", "session": session, "seq": 0, "t_capture_ns": time.time_ns(), **fields}


def features(session: str, **fields: Any) -> dict[str, Any]:
    return input_of(session, kind="features", rows=1, cols=35, data=ROW.tobytes(), **fields)


def test_uint64_seq_is_served_and_out_of_range_times_are_refused(bridge: Bridge) -> None:
    def attack(bystander: Bystander) -> None:
        client = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        client.hello()
        sid = client.open("motion")["session"]
        client.subscribe(f"frame/{sid}".encode())
        time.sleep(0.05)
        raw = client.dealer  # the session's owner
        for _ in range(30):  # co-batched with the bystander, every one of them
            raw.send(pack(features(sid, seq=2**64 - 1, ack=True)))
            time.sleep(1 / 120)
        raw.send(pack(features(sid, t_capture_ns=2**64 - 1)))
        frames: list[Any] = []
        deadline = time.monotonic() + 5
        while len(frames) < 30 and time.monotonic() < deadline:
            frames += client.recv_frames(50)
        assert [r.frame.header.input_seq for r in frames] == [2**64 - 1] * 30
        replies = [unpack_map(raw.recv()) for _ in range(31) if raw.poll(3000)]
        assert [r["op"] for r in replies].count("ack") == 30
        errors = [r for r in replies if r["op"] == "error"]
        assert [e["code"] for e in errors] == [ErrorCode.BAD_VALUE] and errors[0]["session"] == sid
        client.close()

    under_attack(bridge, attack)


def test_huge_audio_is_refused_and_pending_audio_is_bounded(bridge: Bridge) -> None:
    def attack(bystander: Bystander) -> None:
        raw = Attacker(bridge.sockets.request_port)
        sid = raw.ask({"op": "open", "pipeline": "motion"})["session"]
        before = rss_mib()
        one_mib = np.zeros(1 << 19, "<i2").tobytes()  # 65 s at 8 kHz: the input that blew RSS to 1.7 GB
        huge = input_of(sid, kind="audio", rate=8000, format="s16le", data=one_mib)
        assert raw.ask(huge)["code"] == ErrorCode.BAD_VALUE
        assert raw.ask(input_of(sid, kind="audio", rate=8000, format="s16le", data=b""))["code"] == (
            ErrorCode.BAD_SIZE
        )
        # The longest legal input, as fast as possible: the pending bound (frames) refuses the rest.
        longest = np.zeros(int(8000 * MAX_AUDIO_INPUT_S), "<i2").tobytes()
        for seq in range(40):
            raw.send(input_of(sid, seq=seq, kind="audio", rate=8000, format="s16le", data=longest))
        codes = {r["code"] for r in raw.replies(40, timeout_s=2.0)}
        assert codes == {ErrorCode.OVERLOADED}
        assert rss_mib() - before < 300
        raw.close()

    under_attack(bridge, attack)


def test_image_floods_from_two_clients(bridge: Bridge) -> None:
    def attack(bystander: Bystander) -> None:
        attackers = [Attacker(bridge.sockets.request_port) for _ in range(2)]
        sids = [a.ask({"op": "open", "pipeline": "face"})["session"] for a in attackers]
        before = rss_mib()
        too_many = np.zeros((682, 4096, 3), np.uint8).tobytes()  # 2.8 MP: over the pixel bound
        largest = np.zeros((1024, 2048, 3), np.uint8).tobytes()  # the largest legal image
        for a, sid in zip(attackers, sids, strict=True):
            bad = input_of(sid, kind="image", width=4096, height=682, data=too_many)
            assert a.ask(bad)["code"] == ErrorCode.BAD_VALUE
        for seq in range(15):
            for a, sid in zip(attackers, sids, strict=True):
                a.send(input_of(sid, seq=seq, kind="image", width=2048, height=1024, data=largest))
        for a in attackers:
            assert a.replies(1, timeout_s=0.2) == []  # legal images are served (latest wins), no error
            a.close()
        assert rss_mib() - before < 500  # 8 buffered per connection, 1 queued per session

    under_attack(bridge, attack, seconds=2.0)


def test_huge_session_string_is_refused_without_an_echo(bridge: Bridge) -> None:
    def attack(bystander: Bystander) -> None:
        raw = Attacker(bridge.sockets.request_port)
        for _ in range(5):
            raw.send({"op": "close", "id": 7, "session": "x" * (4 << 20)})
        for reply in raw.replies(5):
            assert reply["code"] == ErrorCode.BAD_VALUE and reply["id"] == 7 and "session" not in reply
            assert len(pack(reply)) < 512
        raw.close()

    under_attack(bridge, attack)


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"id": "abc"}, ErrorCode.BAD_TYPE),
        ({"id": -5}, ErrorCode.BAD_VALUE),
        ({"id": 1.5}, ErrorCode.BAD_TYPE),
        ({"v": 1.0}, ErrorCode.BAD_TYPE),
        ({"v": True}, ErrorCode.BAD_TYPE),
        ({"v": 2}, ErrorCode.UNSUPPORTED_VERSION),
    ],
)
def test_id_and_version_types(bridge: Bridge, fields: dict[str, Any], code: ErrorCode) -> None:
    raw = Attacker(bridge.sockets.request_port)
    try:
        reply = raw.ask({"op": "ping", **fields})
        assert reply["code"] == code and reply["id"] == 0, reply
        assert raw.ask({"op": "ping", "id": 2**64 - 1})["id"] == 2**64 - 1  # every uint64 is an id
    finally:
        raw.close()


def test_id_and_version_floods_leave_the_bystander_alone(bridge: Bridge) -> None:
    def attack(bystander: Bystander) -> None:
        raw = Attacker(bridge.sockets.request_port)
        bad: list[dict[str, Any]] = [{"id": "abc"}, {"id": -5}, {"id": 1.5}, {"v": 1.0}, {"v": True}]
        for i in range(500):
            raw.send({"op": "ping", **bad[i % len(bad)]})
        assert len(raw.replies(500)) == 500
        raw.close()

    under_attack(bridge, attack)


def test_hijack_attempts_get_not_owner(bridge: Bridge) -> None:
    def attack(bystander: Bystander) -> None:
        victim = bystander.session
        assert victim is not None
        raw = Attacker(bridge.sockets.request_port)
        for message in (
            features(victim),
            features(victim, ack=True),
            {"op": "ping", "session": victim},
            {"op": "close", "session": victim},
        ):
            reply = raw.ask(message)
            assert reply["code"] == ErrorCode.NOT_OWNER and reply["session"] == victim, reply
        raw.close()

    under_attack(bridge, attack)


def test_one_client_cannot_take_every_session(bridge: Bridge) -> None:
    def attack(bystander: Bystander) -> None:
        hog = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        hog.hello()
        for _ in range(QUOTA):
            hog.open("motion")
        with pytest.raises(BridgeError) as info:
            hog.open("motion")
        assert info.value.code == ErrorCode.CLIENT_SESSION_LIMIT
        other = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        other.hello()
        other.close_session(other.open("motion")["session"])  # another client still opens
        for sid in list(hog.opened):
            hog.close_session(sid)
        hog.open("motion")  # closing gives the quota back
        hog.close()
        other.close()

    under_attack(bridge, attack)


def test_a_failing_row_costs_only_its_own_session(bridge: Bridge, monkeypatch: pytest.MonkeyPatch) -> None:
    real = motion_columns
    poisoned: set[str] = set()

    def encode(sessions: Any, *args: Any, **kwargs: Any) -> MotionColumns:
        if poisoned & set(sessions):
            raise ValueError("injected encoding fault")
        return real(sessions, *args, **kwargs)

    monkeypatch.setattr(motion_module, "motion_columns", encode)

    def attack(bystander: Bystander) -> None:
        raw = Attacker(bridge.sockets.request_port)
        sid = raw.ask({"op": "open", "pipeline": "motion"})["session"]
        poisoned.add(sid)
        for seq in range(30):
            raw.send(features(sid, seq=seq))
            time.sleep(1 / 120)
        errors = raw.replies(30)
        assert errors and {(e["code"], e["session"]) for e in errors} == {(ErrorCode.INTERNAL, sid)}
        raw.close()

    under_attack(bridge, attack)


def test_no_frame_follows_the_closed_event(bridge: Bridge) -> None:
    client = BridgeClient("127.0.0.1", bridge.sockets.request_port)
    client.hello()
    sub: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(f"tcp://127.0.0.1:{bridge.sockets.frames_port}")
    time.sleep(0.05)
    rows = np.zeros((64, 35), np.float32)
    sids = []
    for _ in range(QUOTA):
        sid = client.open("motion")["session"]
        for seq in range(4):
            client.send_features(sid, seq, rows)  # frames still being made when the close lands
        client.close_session(sid)
        sids.append(sid)
    ended: set[str] = set()
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        if not sub.poll(100):
            continue
        topic, payload = sub.recv_multipart()
        if topic.startswith(b"event/"):
            event = unpack_map(payload)
            if event["event"] == "closed":
                ended.add(event["session"])
        elif topic.startswith(b"batch/"):  # its rows too (docs/protocol.md 5.3)
            assert not set(decode_batch(payload).sessions()) & ended
        else:
            assert decode_frame(payload).header.session not in ended
    assert ended == set(sids)
    sub.close(0)
    client.close()


def test_curve_clients_own_sessions_by_key_across_connections() -> None:
    server_public, server_secret = zmq.curve_keypair()
    alice, mallory = zmq.curve_keypair(), zmq.curve_keypair()
    transport = TransportConfig(
        request_port=0,
        frames_port=0,
        curve_secret_key=server_secret,
        curve_client_keys=frozenset({alice[0], mallory[0]}),
    )
    server, thread = start_bridge(transport=transport)
    port = server.sockets.request_port
    try:
        first = BridgeClient("127.0.0.1", port, server_key=server_public, client_keys=alice)
        first.hello()
        sid = first.open("motion")["session"]
        first.close()
        intruder = BridgeClient("127.0.0.1", port, server_key=server_public, client_keys=mallory)
        intruder.hello()
        with pytest.raises(BridgeError) as info:
            intruder.request("ping", session=sid)
        assert info.value.code == ErrorCode.NOT_OWNER
        intruder.close()
        again = BridgeClient("127.0.0.1", port, server_key=server_public, client_keys=alice)
        again.hello()  # a new connection, the same key: still the owner
        assert again.close_session(sid)["session"] == sid
        again.close()
    finally:
        stop_bridge(server, thread)


@pytest.mark.parametrize(
    "encode",
    [
        lambda v: b"\xd3" + v.to_bytes(8, "big", signed=True),  # int64, as C# and C++ writers may
        lambda v: b"\xcf" + v.to_bytes(8, "big"),  # uint64
        lambda v: b"\xd1" + v.to_bytes(2, "big", signed=True),  # int16
        lambda v: b"\xcd" + v.to_bytes(2, "big"),  # uint16
    ],
)
def test_every_msgpack_integer_width_is_accepted(encode: Callable[[int], bytes]) -> None:
    def key(name: str) -> bytes:
        return bytes([0xA0 | len(name)]) + name.encode()

    data = ROW.tobytes()
    fields = [
        (key("op"), key("input")),
        (key("id"), encode(7)),
        (key("v"), encode(1)),
        (key("session"), key("0123456789abcdef")),
        (key("kind"), key("features")),
        (key("seq"), encode(300)),
        (key("t_capture_ns"), encode(1000)),
        (key("rows"), encode(1)),
        (key("cols"), encode(35)),
        (key("data"), b"\xc4" + bytes([len(data)]) + data),
    ]
    payload = bytes([0x80 | len(fields)]) + b"".join(k + v for k, v in fields)
    request = decode_request(payload)
    assert isinstance(request, FeaturesInput)
    assert (request.id, request.seq, request.t_capture_ns, request.rows.shape) == (7, 300, 1000, (1, 35))
