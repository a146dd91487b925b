"""Batched motion frames (docs/protocol.md 5.3): the codec, the subscription tracking, and a real bridge
on loopback publishing one batch message per call beside (or instead of) the per-session frames."""

from __future__ import annotations

import time
from collections import defaultdict

import msgpack
import numpy as np
import pytest
import zmq

from bridge.backends import load_engine
from bridge.clients.harness.client import BridgeClient, ReceivedFrame
from bridge.clients.harness.run import run_harness
from bridge.pipelines.motion import MotionPipeline
from bridge.protocol.batch_frames import (
    ColumnFrames,
    MotionColumns,
    decode_batch,
    encode_batch,
    motion_columns,
)
from bridge.protocol.codec import ProtocolError
from bridge.protocol.frames import MotionFrame, decode_frame
from bridge.protocol.requests import FeaturesInput
from bridge.serving.publisher import INLINE_FRAMES
from bridge.serving.scheduler import Scheduler
from bridge.serving.server import Bridge
from bridge.serving.sessions import Session
from bridge.serving.stats import BridgeStats
from bridge.transport.zmq_sockets import Delivery, Subscriptions, TransportConfig

from .bystander import Bystander
from .conftest import MODELS, running

RNG = np.random.default_rng(16)
ROWS = RNG.standard_normal((30, 35)).astype(np.float32)


def columns(n: int, first_seq: int = 0) -> MotionColumns:
    return motion_columns(
        [f"{i:016x}" for i in range(n)],
        np.arange(n, dtype=np.uint64) + np.uint64(first_seq),
        np.arange(n) * 3,
        np.arange(n) * 1000 + 7,
        joints=RNG.standard_normal((n, 24, 4)).astype(np.float32),
        root=RNG.standard_normal((n, 3)).astype(np.float32),
        engine_us=123.5,
        batch=max(n, 4),
    )


# ------------------------------------------------------------------------------------------ codec
@pytest.mark.parametrize("n", [1, 3, 200])  # bins of 8-, 16- and 32-bit lengths
def test_a_batch_row_means_its_per_session_frame(n: int) -> None:
    cols = columns(n, first_seq=2**64 - 1 - n)  # the whole uint64 range
    batch = decode_batch(encode_batch("motion", cols, t_publish_ns=99))
    assert (len(batch), batch.minor, batch.t_publish_ns, batch.batch) == (n, 1, 99, max(n, 4))
    for row, payload in zip(batch.frames(), cols.frames(), strict=True):
        frame = decode_frame(payload)
        assert isinstance(frame, MotionFrame)
        assert row.header == frame.header.__class__(**{**vars(frame.header), "t_publish_ns": 99})
        np.testing.assert_array_equal(row.joints, frame.joints)
        np.testing.assert_array_equal(row.root, frame.root)


def test_batch_keys_in_the_documented_order_and_unknown_keys_ignored() -> None:
    payload = encode_batch("motion", columns(2), t_publish_ns=1)
    message = msgpack.unpackb(payload)
    assert list(message) == [
        "op", "v", "minor", "pipeline", "rows", "t_publish_ns", "engine_us", "batch",
        "session", "seq", "input_seq", "t_capture_ns", "joints", "root",
    ]  # fmt: skip
    message["future_column"] = b"\x00" * 7
    assert len(decode_batch(msgpack.packb(message))) == 2


@pytest.mark.parametrize(
    "change",
    [
        {"joints": b"\x00" * 10},  # not rows x row size: the whole message is malformed
        {"rows": 3},
        {"rows": 0},
        {"seq": "abc"},
        {"v": 2},
        {"op": "frame"},
    ],
)
def test_a_malformed_batch_is_refused_whole(change: dict[str, object]) -> None:
    message = msgpack.unpackb(encode_batch("motion", columns(2), t_publish_ns=1))
    with pytest.raises(ProtocolError):
        decode_batch(msgpack.packb({**message, **change}))


def meaning(payload: bytes) -> tuple[object, ...]:
    """A motion frame without its publish time."""
    frame = decode_frame(payload)
    assert isinstance(frame, MotionFrame)
    return (*(v for k, v in vars(frame.header).items() if k != "t_publish_ns"), frame.joints.tobytes())


def test_column_frames_encode_on_demand() -> None:
    cols = columns(4)
    frames = ColumnFrames(cols, 1, 3)
    assert len(frames) == 2
    expected = [meaning(p) for p in cols.frames()[1:3]]
    assert [meaning(p) for p in frames] == [meaning(p) for p in frames[0:2]] == expected
    assert meaning(frames[-1]) == expected[-1]


def test_subscriptions_follow_first_subscribe_and_last_unsubscribe() -> None:
    subs = Subscriptions()
    topics = [b"frame/" + f"{i:016x}".encode() for i in range(3)]
    assert subs.matching([*topics, b"batch/motion"]) == [False] * 4
    subs.apply(b"\x01" + topics[1])
    subs.apply(b"\x01batch/")
    subs.apply(b"\x01" + b"x" * 40)  # matches nothing we publish: not kept
    assert subs.matching([*topics, b"batch/motion"]) == [False, True, False, True]
    subs.apply(b"\x01fr")  # a prefix of every frame topic
    assert subs.matching(topics) == [True] * 3
    for message in (b"\x00fr", b"\x00" + topics[1], b"\x00batch/", b"\x00never"):
        subs.apply(message)
    assert subs.matching([*topics, b"batch/motion"]) == [False] * 4 and not subs.prefixes


# ------------------------------------------------------------------------------ a real bridge
def stream(client: BridgeClient, sessions: list[str], rows: np.ndarray) -> dict[str, list[MotionFrame]]:
    """Send each session one feature row per tick at 60 Hz; collect every frame (batch rows too)."""
    got: dict[str, list[MotionFrame]] = defaultdict(list)

    def keep(received: list[ReceivedFrame]) -> None:
        for r in received:
            assert isinstance(r.frame, MotionFrame)
            got[r.frame.header.session].append(r.frame)

    for seq, row in enumerate(rows):
        for sid in sessions:
            client.send_features(sid, seq, row[None])
        keep(client.recv_frames(16))
    deadline = time.monotonic() + 5
    while any(len(got[s]) < len(rows) for s in sessions) and time.monotonic() < deadline:
        keep(client.recv_frames(50))
    client.poll_replies()
    assert not client.errors and not client.invalid_frames
    return got


def encoded(bridge: Bridge) -> int:
    return sum(s.frames_encoded for s in bridge.stats.children)


def test_batch_rows_equal_the_per_session_frames() -> None:
    with running() as bridge:
        per_session = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        per_session.hello()
        per_session.subscribe(b"frame/")
        batched = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        batched.hello()
        batched.subscribe(b"batch/motion")
        sessions = [per_session.open("motion")["session"] for _ in range(3)]
        time.sleep(0.1)
        frames = stream(per_session, sessions, ROWS)
        rows: dict[str, list[MotionFrame]] = defaultdict(list)
        deadline = time.monotonic() + 5
        while any(len(rows[s]) < len(ROWS) for s in sessions) and time.monotonic() < deadline:
            for r in batched.recv_frames(50):
                assert isinstance(r.frame, MotionFrame)
                rows[r.frame.header.session].append(r.frame)
        assert batched.batches_received > 0 and not batched.invalid_frames
        deadline = time.monotonic() + 2  # counted just after the send
        while bridge.stats.snapshot()["batches_published"] != batched.batches_received:
            assert time.monotonic() < deadline, (bridge.stats.snapshot(), batched.batches_received)
            time.sleep(0.01)
        for sid in sessions:
            assert [f.header.seq for f in frames[sid]] == list(range(len(ROWS)))
            assert len(rows[sid]) == len(ROWS)
            for frame, row in zip(frames[sid], rows[sid], strict=True):
                assert vars(row.header) | {"t_publish_ns": 0} == vars(frame.header) | {"t_publish_ns": 0}
                assert row.joints.tobytes() == frame.joints.tobytes()
                assert row.root.tobytes() == frame.root.tobytes()
        per_session.close()
        batched.close()


def test_a_batch_only_client_gets_every_session_and_nothing_per_session_is_encoded() -> None:
    with running() as bridge:
        client = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        client.hello()
        client.subscribe(b"batch/")
        sessions = [client.open("motion")["session"] for _ in range(4)]
        time.sleep(0.1)
        frames = stream(client, sessions, ROWS)
        for sid in sessions:
            assert [f.header.seq for f in frames[sid]] == list(range(len(ROWS)))
        assert encoded(bridge) == 0  # nobody subscribes to a frame/ topic: none was encoded
        closed = [client.close_session(sid)["frames_published"] for sid in sessions]
        assert closed == [len(ROWS)] * 4  # published means: went out (here in the batch)
        # Subscribing to one session's topic makes the bridge encode that session's frames only.
        late, other = (client.open("motion")["session"] for _ in range(2))
        client.subscribe(f"frame/{late}".encode())
        topics = [f"frame/{sid}".encode() for sid in (late, other)]
        while bridge.sockets.matching(topics) != [True, False]:  # the bridge has seen it
            time.sleep(0.01)
        frames = stream(client, [late, other], ROWS[:5])
        assert {f.header.seq for f in frames[late]} == {f.header.seq for f in frames[other]} == set(range(5))
        deadline = time.monotonic() + 2  # counted just after the send
        while encoded(bridge) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert encoded(bridge) == 5  # late's frames (on both topics), not other's
        client.close()


def test_a_slow_batch_subscriber_loses_only_its_own_frames() -> None:
    transport = TransportConfig(request_port=0, frames_port=0, frames_hwm=8, frames_sndbuf=4096)
    with running(transport=transport) as bridge:
        bystander = Bystander(bridge.sockets.request_port, drain_s=3.0)
        bystander.start()
        slow: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
        slow.setsockopt(zmq.LINGER, 0)
        slow.setsockopt(zmq.RCVHWM, 4)
        slow.setsockopt(zmq.RCVBUF, 4096)
        slow.connect(bridge.sockets.frames_endpoint)
        slow.setsockopt(zmq.SUBSCRIBE, b"batch/")  # every session's rows; never read
        time.sleep(2.0)
        report = bystander.stop()
        assert report.clean, report  # the bystander, on its own topic, lost nothing
        assert sum(s.subscriber_stalls for s in bridge.stats.children) >= 1  # the slow one: counted
        assert bridge.stats.snapshot()["frames_dropped"] == 0
        slow.close()


# ---------------------------------------------------------------------- the publisher thread
@pytest.mark.parametrize("droppable", [False, True], ids=["motion waits", "camera-like drops"])
def test_a_full_publish_queue_waits_for_motion_and_drops_whole_calls_of_droppable_pipelines(
    droppable: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = load_engine(MODELS / "dance_lstm.manifest.json")
    pipeline = MotionPipeline(engine)
    got: dict[str, list[int]] = defaultdict(list)

    def slow(topic: bytes, payload: bytes, *, hold: bool = False) -> Delivery:
        time.sleep(0.001)  # a publisher that cannot keep up with the scheduler
        frame = decode_frame(payload)
        got[frame.header.session].append(frame.header.seq)
        return Delivery.SENT

    stats = BridgeStats()
    scheduler = Scheduler(pipeline, slow, lambda *_: None, stats, max_batch=INLINE_FRAMES + 16)
    sessions = [
        Session(f"{i:016x}", pipeline, pipeline.open_session({}), ()) for i in range(INLINE_FRAMES + 16)
    ]
    ticks = 16
    for k in range(ticks):  # queued before the start: one call of > INLINE_FRAMES frames per tick
        scheduler.submit_many([(s, FeaturesInput(0, s.id, k, k, False, ROWS[k : k + 1])) for s in sessions])
    # What a full queue does depends only on the pipeline's kind (a camera's next image makes a newer
    # frame; every frame of a dance counts), so the dance model stands in for a droppable pipeline.
    monkeypatch.setattr(MotionPipeline, "droppable", droppable)
    scheduler.start()
    try:
        deadline = time.monotonic() + 20
        while stats.frames_published + stats.frames_dropped < ticks * len(sessions):
            assert time.monotonic() < deadline, stats
            time.sleep(0.01)
    finally:
        scheduler.stop()
        engine.close()
    dropped = stats.frame_drops["publish_queue_full"]
    if droppable:
        assert dropped > 0 and dropped % len(sessions) == 0  # whole calls, counted by their reason
    else:
        assert dropped == 0 and stats.frames_dropped == 0  # the scheduler waited for room instead
    for s in sessions:
        assert got[s.id] == sorted(got[s.id])  # in order, a gap where a call was dropped
        assert len(got[s.id]) + s.frames_dropped == ticks and s.out_seq == ticks


def test_the_harness_accounts_for_every_frame_from_the_batch_topic() -> None:
    with running() as bridge:
        client = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        try:
            report = run_harness(
                client, "motion", seconds=1.0, sessions=3, feature_rows=ROWS, batch_topic=True
            )
        finally:
            client.close()
        assert report.ok, report
        assert report.frames_received == report.frames_published == 3 * len(ROWS)
        assert client.batches_received > 0 and encoded(bridge) == 0
        assert report.latency_ms_p50 > 0


def test_offline_rows_wait_for_room_on_the_batch_topic() -> None:
    # Tiny queues on both sides and a reader slower than the bridge: offline batch messages are held
    # for room (each for less than the bridge's patience), and every row arrives, in order.
    transport = TransportConfig(request_port=0, frames_port=0, frames_hwm=1, frames_sndbuf=4096)
    with running(transport=transport) as bridge:
        client = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        client.hello()
        client.sub.setsockopt(zmq.RCVHWM, 1)
        client.sub.setsockopt(zmq.RCVBUF, 4096)
        client.subscribe(b"batch/")
        sid = client.open("motion", mode="offline")["session"]
        while not bridge.sockets.matching([b"batch/motion"])[0]:
            time.sleep(0.01)
        chunks = 30  # inputs of 2 rows: one short bulk call, one batch message, each
        for seq in range(chunks):
            client.send_features(sid, seq, ROWS[:2])
        seqs: list[int] = []
        deadline = time.monotonic() + 20
        while len(seqs) < 2 * chunks and time.monotonic() < deadline:
            seqs += [r.frame.header.seq for r in client.recv_frames(50, limit=1)]  # one message
            time.sleep(0.01)
        client.poll_replies()
        assert not client.errors and not client.invalid_frames
        assert seqs == list(range(2 * chunks))  # a batch subscriber that keeps up gets every row
        assert encoded(bridge) == 0
        client.close()
