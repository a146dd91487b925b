"""The real bridge over real ZeroMQ sockets on 127.0.0.1 with the bundled ONNX Runtime engines."""

from __future__ import annotations

import time

import msgpack
import numpy as np
import pytest
import zmq

from bridge.clients.harness.client import BridgeClient, BridgeError
from bridge.clients.harness.run import run_harness
from bridge.media.face_video import FaceVideo
from bridge.protocol import ErrorCode, FaceFrame, MotionFrame, pack, unpack_map
from bridge.serving.server import Bridge

from .conftest import start_bridge, stop_bridge

FEATURES = np.random.default_rng(0).standard_normal((1, 35)).astype(np.float32)


def wait_frames(client: BridgeClient, session: str, count: int, timeout_s: float = 5.0) -> list[object]:
    frames: list[object] = []
    deadline = time.monotonic() + timeout_s
    while len(frames) < count and time.monotonic() < deadline:
        frames += [r.frame for r in client.recv_frames(50) if r.frame.header.session == session]
    return frames


def test_hello_list_open_close(client: BridgeClient) -> None:
    assert client.hello_reply["pipelines"] == ["face", "motion", "speech"]
    models = client.request("list")["models"]
    assert {m["pipeline"] for m in models} == {"face", "motion", "speech"}
    # The reference face and dance models are untrained; the speech classifier is ours, trained.
    assert all(m["trained"] is (m["pipeline"] in ("speech", "motion")) for m in models)  # face: reference
    opened = client.open("motion", style="krump")
    assert len(opened["session"]) == 16 and opened["topic"] == f"frame/{opened['session']}"
    rig = opened["rig"]
    assert rig["kind"] == "body" and len(rig["joints"]) == 24 and rig["parents"][0] == -1
    assert len(rig["rest_offsets"]) == 24 * 3 * 4 and rig["quaternion_order"] == "xyzw"
    face = client.open("face")["rig"]
    assert face["kind"] == "face" and len(face["blendshapes"]) == 52 and len(face["expression"]) == 50
    closed = client.close_session(opened["session"])
    assert closed["session"] == opened["session"]


def test_two_sessions_concurrently(client: BridgeClient) -> None:
    client.subscribe()
    time.sleep(0.05)
    motion = client.open("motion")["session"]
    face = client.open("face", blendshapes=False)["session"]
    video = FaceVideo()
    for i in range(10):
        client.send_features(motion, i, FEATURES)
        client.send_image(face, i, video.frame(i))
        time.sleep(0.01)
    frames: list[object] = []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        frames += [r.frame for r in client.recv_frames(50)]
        seen = {f.header.session for f in frames}  # type: ignore[attr-defined]
        if sum(f.header.session == motion for f in frames) >= 10 and face in seen:  # type: ignore[attr-defined]
            break
    motion_frames = [f for f in frames if f.header.session == motion]  # type: ignore[attr-defined]
    face_frames = [f for f in frames if f.header.session == face]  # type: ignore[attr-defined]
    assert [f.header.seq for f in motion_frames] == list(range(10))  # type: ignore[attr-defined]
    assert all(isinstance(f, MotionFrame) for f in motion_frames)
    assert face_frames and isinstance(face_frames[0], FaceFrame)
    assert face_frames[0].face_found and face_frames[0].blendshapes.size == 0
    quats = np.stack([f.joints for f in motion_frames])  # type: ignore[attr-defined]
    assert np.allclose(np.linalg.norm(quats, axis=-1), 1.0, atol=1e-4)


def raw_error(sock: zmq.Socket[bytes], *frames: bytes) -> dict[str, object]:
    sock.send_multipart(list(frames))
    assert sock.poll(3000), "no error reply"
    reply = unpack_map(sock.recv_multipart()[-1])
    assert reply["op"] == "error" and reply["ok"] is False
    return reply


def test_every_bad_input_gets_its_code_while_others_are_served(bridge: Bridge, client: BridgeClient) -> None:
    client.subscribe()
    time.sleep(0.05)
    good = client.open("motion")["session"]
    face = client.open("face")["session"]
    closed = client.open("motion")["session"]
    client.close_session(closed)
    raw = client.dealer  # the sessions' owner: another connection would get NOT_OWNER first
    base = {"op": "input", "seq": 0, "t_capture_ns": time.time_ns()}
    feats = {"kind": "features", "rows": 1, "cols": 35, "data": FEATURES.tobytes()}
    cases: list[tuple[list[bytes], ErrorCode]] = [
        ([b"\x93\x01"], ErrorCode.MALFORMED),  # truncated msgpack
        ([msgpack.packb("just a string")], ErrorCode.MALFORMED),
        ([pack({"op": "hello"}), pack({"op": "hello"})], ErrorCode.MALFORMED),  # two frames
        ([pack({"op": "explode"})], ErrorCode.UNKNOWN_OP),
        ([pack({"op": "hello", "v": 99})], ErrorCode.UNSUPPORTED_VERSION),
        (
            [pack({**base, "session": good, "kind": "features", "rows": 1, "cols": 35})],
            ErrorCode.MISSING_FIELD,
        ),
        ([pack({**base, "session": good, **feats, "rows": "1"})], ErrorCode.BAD_TYPE),
        (
            [pack({**base, "session": good, **feats, "cols": 34, "data": FEATURES[:, :34].tobytes()})],
            ErrorCode.BAD_VALUE,
        ),  # wrong shape for this model
        ([pack({**base, "session": good, **feats, "data": FEATURES.tobytes()[:-4]})], ErrorCode.BAD_SIZE),
        (
            [pack({**base, "session": good, "kind": "audio", "rate": 48000, "format": "u8", "data": b"\0"})],
            ErrorCode.BAD_VALUE,
        ),  # wrong dtype
        ([pack({**base, "session": "0" * 16, **feats})], ErrorCode.UNKNOWN_SESSION),
        ([pack({**base, "session": closed, **feats})], ErrorCode.UNKNOWN_SESSION),
        ([pack({"op": "close", "session": closed})], ErrorCode.UNKNOWN_SESSION),
        ([pack({**base, "session": face, **feats})], ErrorCode.WRONG_INPUT_KIND),
        ([pack({"op": "open", "pipeline": "juggling"})], ErrorCode.UNKNOWN_PIPELINE),
        ([pack({"op": "open", "pipeline": "face", "model": "nope"})], ErrorCode.UNKNOWN_MODEL),
        ([pack({"op": "open", "pipeline": "motion", "options": {"style": "polka"}})], ErrorCode.BAD_VALUE),
        ([pack({"op": "open", "pipeline": "face", "options": {"colour": 1}})], ErrorCode.BAD_VALUE),
        ([pack({"op": "open", "pipeline": "face", "options": {"smoothing": 3}})], ErrorCode.BAD_TYPE),
        (
            [
                pack(
                    {
                        **base,
                        "session": good,
                        "kind": "image",
                        "width": 4096,
                        "height": 4096,
                        "data": b"\0" * (9 << 20),
                    }
                )
            ],
            ErrorCode.TOO_LARGE,
        ),
    ]
    for i, (frames, code) in enumerate(cases):
        reply = raw_error(raw, *frames)
        assert reply["code"] == code, (i, reply)
        # The good session keeps streaming through every bad message.
        client.send_features(good, i, FEATURES)
    assert len(wait_frames(client, good, len(cases))) == len(cases)
    assert bridge.stats.snapshot()["errors"]["UNKNOWN_SESSION"] >= 3  # type: ignore[index]


def test_request_ids_are_echoed_on_errors(client: BridgeClient) -> None:
    with pytest.raises(BridgeError) as info:
        client.request("close", session="f" * 16)
    assert info.value.code == ErrorCode.UNKNOWN_SESSION and info.value.reply["id"] > 0


def test_motion_queue_is_bounded(client: BridgeClient) -> None:
    session = client.open("motion")["session"]
    rows = np.zeros((1024, 35), np.float32)
    for i in range(5):
        client.send_features(session, i, rows)
    deadline = time.monotonic() + 3
    while not client.errors and time.monotonic() < deadline:
        time.sleep(0.02)
        client.poll_replies()
    assert client.errors and client.errors[0]["code"] == ErrorCode.OVERLOADED
    client.close_session(session)


def test_slow_subscriber_does_not_stall_a_fast_one(bridge: Bridge, client: BridgeClient) -> None:
    slow = zmq.Context.instance().socket(zmq.SUB)
    slow.setsockopt(zmq.RCVHWM, 1)
    slow.setsockopt(zmq.RCVBUF, 4096)
    slow.setsockopt(zmq.SUBSCRIBE, b"")
    slow.connect(f"tcp://127.0.0.1:{bridge.sockets.frames_port}")  # never read
    try:
        report = run_harness(client, "motion", seconds=2.0, sessions=2)
    finally:
        slow.close(0)
    assert report.frames_lost == 0 and report.invalid_frames == 0 and not report.errors
    assert report.frames_received >= 200
    assert report.latency_ms_p99 < 100


def test_idle_session_is_reaped(client: BridgeClient) -> None:
    client.subscribe(b"event/")
    time.sleep(0.05)
    session = client.open("motion")["session"]
    time.sleep(1.8)  # the module's bridge reaps after 1 s
    client.send_features(session, 0, FEATURES)
    deadline = time.monotonic() + 2
    while not client.errors and time.monotonic() < deadline:
        client.poll_replies()
        time.sleep(0.02)
    assert client.errors[0]["code"] == ErrorCode.UNKNOWN_SESSION
    client.recv_frames(100)
    closed = [e for e in client.events if e["session"] == session and e["event"] == "closed"]
    assert closed and closed[0]["reason"] == "idle_timeout"


def test_harness_face_and_motion(client: BridgeClient) -> None:
    for pipeline in ("face", "motion"):
        report = run_harness(client, pipeline, seconds=1.0)
        assert report.ok, report.to_json()
        # Motion frames are never dropped; a face's image is superseded by a newer one when the bridge
        # falls behind (latest wins), which a busy 2-core machine does for a part of a second.
        assert report.frames_received >= (50 if pipeline == "motion" else 30), report.to_json()


def test_non_loopback_bind_needs_explicit_opt_in() -> None:
    from bridge.transport.zmq_sockets import BridgeSockets, TransportConfig

    with pytest.raises(ValueError, match="insecure-remote"):
        BridgeSockets(TransportConfig(host="0.0.0.0", request_port=0, frames_port=0))


def test_session_limit() -> None:
    server, thread = start_bridge(max_sessions=1)
    c = BridgeClient("127.0.0.1", server.sockets.request_port)
    try:
        c.open("motion")
        with pytest.raises(BridgeError) as info:
            c.open("face")
        assert info.value.code == ErrorCode.SESSION_LIMIT
    finally:
        c.close()
        stop_bridge(server, thread)


def test_errors_of_invalid_inputs_name_their_session(client: BridgeClient) -> None:
    session = client.open("motion")["session"]
    client.dealer.send(
        pack(
            {
                "op": "input",
                "session": session,
                "kind": "features",
                "seq": 0,
                "t_capture_ns": 0,
                "rows": 1,
                "cols": 35,
                "data": b"\0" * 12,
            }
        )
    )
    deadline = time.monotonic() + 3
    while not client.errors and time.monotonic() < deadline:
        client.poll_replies()
        time.sleep(0.01)
    assert client.errors[0]["code"] == ErrorCode.BAD_SIZE and client.errors[0]["session"] == session
