"""Batch groups (docs/protocol.md 5.3): a session opened with `batch_group` has its rows only on its
group's topic `batch/motion/<group>/`; the rest stay on `batch/motion`, so `batch/` and `batch/motion`
subscribers still get every row once. The codec and the open option's checks, a real bridge on
loopback, and held (bulk) batches of several groups on a real frames socket."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any, cast

import msgpack
import numpy as np
import pytest
import zmq

from bridge.clients.harness.client import BridgeClient, BridgeError
from bridge.clients.harness.run import run_harness
from bridge.protocol.batch_frames import (
    ColumnFrames,
    MotionBatch,
    batch_topic,
    check_batch_group,
    decode_batch,
    encode_batch,
    motion_columns,
)
from bridge.protocol.codec import ProtocolError, pack
from bridge.protocol.errors import ErrorCode
from bridge.protocol.requests import OpenSession, decode_request
from bridge.serving.publisher import GatedOutlet, batch_encoder, publish_call
from bridge.serving.sessions import Session
from bridge.transport.zmq_sockets import BridgeSockets, Delivery, Subscriptions, TransportConfig

from .conftest import running
from .test_batch_frames import columns

ROWS = np.random.default_rng(17).standard_normal((20, 35)).astype(np.float32)


# ------------------------------------------------------------------------------- codec, options
def test_group_topics_end_with_a_slash_so_one_group_never_matches_another() -> None:
    assert batch_topic("motion") == b"batch/motion"
    assert batch_topic("motion", "g1") == batch_topic("motion", b"g1") == b"batch/motion/g1/"
    subs = Subscriptions()
    subs.apply(b"\x01" + batch_topic("motion", "g1"))
    longest = batch_topic("motion", "G-_9" * 4)  # 30 bytes: kept, not dropped as too long
    subs.apply(b"\x01" + longest)
    topics = [batch_topic("motion", "g1"), batch_topic("motion", "g10"), b"batch/motion", longest]
    assert subs.matching(topics) == [True, False, False, True]


@pytest.mark.parametrize("value", ["g", "A-z_09", "x" * 16])
def test_a_valid_group_is_accepted(value: str) -> None:
    assert check_batch_group(value) == value
    request = decode_request(pack({"op": "open", "pipeline": "motion", "options": {"batch_group": value}}))
    assert request == OpenSession(0, "motion", None, {}, value)  # taken out of the pipeline's options


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("", ErrorCode.BAD_VALUE),
        ("x" * 17, ErrorCode.BAD_VALUE),
        ("a/b", ErrorCode.BAD_VALUE),
        ("g1 ", ErrorCode.BAD_VALUE),
        ("grüppe", ErrorCode.BAD_VALUE),
        ("g\n", ErrorCode.BAD_VALUE),
        (5, ErrorCode.BAD_TYPE),
        (False, ErrorCode.BAD_TYPE),  # true asks the bridge for a new group
    ],
)
def test_a_bad_group_is_refused_at_the_edge(value: object, code: ErrorCode) -> None:
    with pytest.raises(ProtocolError) as refused:
        decode_request(pack({"op": "open", "pipeline": "motion", "options": {"batch_group": value}}))
    assert refused.value.code == code


def test_a_group_message_names_its_group_and_one_without_is_unchanged() -> None:
    cols = columns(3)
    plain = encode_batch("motion", cols, t_publish_ns=5)
    assert "group" not in msgpack.unpackb(plain) and decode_batch(plain).group == ""
    grouped = encode_batch("motion", cols, t_publish_ns=5, group="g1")
    message = msgpack.unpackb(grouped)
    assert list(message)[-1] == "group" and message["group"] == "g1"
    assert decode_batch(grouped).group == "g1"
    assert msgpack.packb({k: v for k, v in message.items() if k != "group"}) == plain
    with pytest.raises(ProtocolError):
        decode_batch(msgpack.packb({**message, "group": 7}))


# ------------------------------------------------------------------------------ a real bridge
def raw_sub(endpoint: str, prefix: bytes) -> zmq.Socket[bytes]:
    sub: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.RCVHWM, 0)
    sub.connect(endpoint)
    sub.setsockopt(zmq.SUBSCRIBE, prefix)
    return sub


def read(sub: zmq.Socket[bytes], into: list[tuple[bytes, MotionBatch]], quiet_ms: int = 0) -> None:
    """What has arrived; with `quiet_ms`, until nothing has for that long (a queue of one message
    refills only after each read)."""
    while sub.poll(quiet_ms):
        topic, payload = sub.recv_multipart()
        into.append((topic, decode_batch(payload)))


def rows_by_session(messages: list[tuple[bytes, MotionBatch]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for _, batch in messages:
        for sid, seq in zip(batch.sessions(), batch.seq.tolist(), strict=True):
            out[sid].append(seq)
    return out


def test_each_group_gets_only_its_rows_and_batch_subscribers_every_row_once() -> None:
    with running() as bridge:
        client = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        client.hello()
        prefixes = [batch_topic("motion", "g1"), batch_topic("motion", "g10"), b"batch/", b"batch/motion"]
        subs = [raw_sub(bridge.sockets.frames_endpoint, p) for p in prefixes]
        group_of = {client.open("motion", batch_group=g)["session"]: g for g in ("g1", "g1", "g10", "g10")}
        group_of[client.open("motion")["session"]] = ""  # no group: on batch/motion, as before groups
        while not all(bridge.sockets.matching(prefixes)):
            time.sleep(0.01)
        got: list[list[tuple[bytes, MotionBatch]]] = [[] for _ in subs]
        for seq, row in enumerate(ROWS):
            for sid in group_of:
                client.send_features(sid, seq, row[None])
            time.sleep(1 / 60)
            for sub, into in zip(subs, got, strict=True):
                read(sub, into)
        everything = {sid: list(range(len(ROWS))) for sid in group_of}
        deadline = time.monotonic() + 5
        while rows_by_session(got[2]) != everything and time.monotonic() < deadline:
            time.sleep(0.02)
            for sub, into in zip(subs, got, strict=True):
                read(sub, into)
        time.sleep(0.1)  # nothing more may come
        for sub, into in zip(subs, got, strict=True):
            read(sub, into)
        client.poll_replies()
        assert not client.errors
        for group, messages in (("g1", got[0]), ("g10", got[1])):
            assert {t for t, _ in messages} == {batch_topic("motion", group)}
            assert {b.group for _, b in messages} == {group}
            assert rows_by_session(messages) == {s: everything[s] for s, g in group_of.items() if g == group}
        for messages in got[2:]:  # batch/ and batch/motion: every row exactly once, each on its topic
            assert rows_by_session(messages) == everything
            for topic, batch in messages:
                assert {group_of[s] for s in batch.sessions()} == {batch.group}
                assert topic == batch_topic("motion", batch.group)
        assert sum(s.frames_encoded for s in bridge.stats.children) == 0  # no frame/ subscriber
        closed = [client.close_session(sid)["frames_published"] for sid in group_of]
        assert closed == [len(ROWS)] * len(group_of)
        for sub in subs:
            sub.close()
        client.close()


def test_a_bad_group_gets_its_error_code_and_the_bridge_serves_on() -> None:
    with running() as bridge:
        client = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        client.hello()
        for value, code in (
            ("no/slash", ErrorCode.BAD_VALUE),
            ("x" * 17, ErrorCode.BAD_VALUE),
            (3, ErrorCode.BAD_TYPE),
        ):
            with pytest.raises(BridgeError) as refused:
                client.open("motion", batch_group=value)
            assert refused.value.code == code and "batch_group" in refused.value.reply["message"]
        assert len(bridge.sessions) == 0
        try:  # the harness in a group reads its group's topic only
            report = run_harness(
                client,
                "motion",
                seconds=0.3,
                sessions=2,
                feature_rows=ROWS,
                batch_topic=True,
                batch_group="h1",
            )
        finally:
            client.close()
        assert report.ok, report
        assert report.frames_received == report.frames_published == report.inputs_sent > 0
        assert client.batches_received > 0 and client._subscriptions == [b"batch/motion/h1/"]


# ----------------------------------------------------------------- held (bulk) batches of groups
def test_a_held_group_waits_alone_and_no_row_goes_out_twice() -> None:
    """Bulk calls of two groups' sessions on a real frames socket with a one-message queue: the group
    whose subscriber does not read is held (its sessions wait), the other's rows all go out; retried
    as the scheduler retries, every row reaches its group's subscriber exactly once."""
    transport = TransportConfig(request_port=0, frames_port=0, frames_hwm=1, frames_sndbuf=4096)
    sockets = BridgeSockets(transport)
    try:
        fast, slow = (raw_sub(sockets.frames_endpoint, batch_topic("motion", g)) for g in ("fast", "slow"))
        for sub in (fast, slow):
            sub.setsockopt(zmq.RCVHWM, 1)
            sub.setsockopt(zmq.RCVBUF, 4096)
        sessions = [Session(f"{i:016x}", cast(Any, None), None, ()) for i in range(4)]
        outlet = GatedOutlet(sockets, threading.Lock(), {s.topic for s in sessions})
        outlet.groups.update({s.topic: b"fast" if i % 2 else b"slow" for i, s in enumerate(sessions)})
        while not all(sockets.matching([batch_topic("motion", g) for g in ("fast", "slow")])):
            time.sleep(0.01)
        got: dict[str, list[tuple[bytes, MotionBatch]]] = {"fast": [], "slow": []}
        held = None
        calls = 0
        while held is None:
            assert calls < 2000, "the slow subscriber never filled"
            cols = motion_columns(
                [s.id for s in sessions],
                np.full(4, calls, np.uint64),
                np.zeros(4, np.uint64),
                np.zeros(4, np.int64),
                joints=np.zeros((4, 24, 4), np.float32),
                root=np.zeros((4, 3), np.float32),
                engine_us=1.0,
                batch=4,
            )
            time.sleep(0.005)  # the fast subscriber's queue is empty again when a call goes
            read(fast, got["fast"])
            out = publish_call(
                outlet,
                "motion",
                batch_topic("motion"),
                [(s, ColumnFrames(cols, i, i + 1)) for i, s in enumerate(sessions)],
                hold=True,
            )
            calls += 1
            held = out.held_batch
        # Only the slow group's sessions wait; the held rows are theirs, of the last call.
        assert held.sessions == {s.id for i, s in enumerate(sessions) if i % 2 == 0}
        slow_ids = sorted(held.sessions)
        pending = held.columns.done
        assert pending is not None  # the fast group's rows are done (out), the slow group's not
        assert held.columns.columns.session[~pending].astype(str).tolist() == slow_ids
        sent = 0
        deadline = time.monotonic() + 5
        reads_from = time.monotonic() + 0.1
        while True:  # retried as the scheduler retries; the slow subscriber reads from 0.1 s on
            encoder = batch_encoder("motion", held.columns)
            delivery, _ = outlet.publish_batch(batch_topic("motion"), held.row_topics, encoder, hold=True)
            sent += encoder.messages
            if delivery is not Delivery.HELD:
                break
            assert time.monotonic() < deadline
            if time.monotonic() > reads_from:
                read(slow, got["slow"])
        assert sent == 1  # the held group's message went out once
        encoder = batch_encoder("motion", held.columns)  # and a further retry has nothing left
        assert (
            outlet.publish_batch(batch_topic("motion"), held.row_topics, encoder, hold=True)[0]
            is Delivery.CLOSED
        )
        for name, parity in (("fast", 1), ("slow", 0)):  # every row once, none again on the retries
            read(fast if parity else slow, got[name], quiet_ms=200)
            assert {t for t, _ in got[name]} == {batch_topic("motion", name)}
            expected = {s.id: list(range(calls)) for i, s in enumerate(sessions) if i % 2 == parity}
            assert rows_by_session(got[name]) == expected
        fast.close()
        slow.close()
    finally:
        sockets.close()
