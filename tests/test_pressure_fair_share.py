"""Attacks 6, 7, 8, 10 and 11 of issue 40, each scaled down to fit the suite, against a bridge in its own
process (`avatar-bridge serve`, as the red team ran it) beside a 60 Hz bystander motion session that
must keep every frame, with the process's memory bounded.

6. voice `calibrate` in a loop from three connections (8 s clips at 192 kHz);
7. a heavy client (32 motion sessions topped up with 1 s chunks at 192 kHz), and demand over capacity
   (new sessions are refused AT_CAPACITY, the open ones keep their frames);
8. rate churn: each `inputs` item at a new sample rate;
10. batch groups: another client's group cannot be joined, and `batch_group: true` is unguessable;
11. a new connection that reuses an ended one's ROUTING_ID inherits none of its sessions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from bridge.clients.harness.client import BridgeError
from bridge.clients.harness.process import BridgeProcess
from bridge.protocol import ErrorCode, pack, unpack_map
from bridge.protocol.requests import MAX_CALIBRATION_S, MAX_ITEM_FAILURES

from .bystander import Bystander, streaming_beside
from .pressure_support import RSS_GROWTH_MIB, ask, connect, raw_dealer, tree_rss_mib

RATE = 192_000
NOISE = np.random.default_rng(40).standard_normal(RATE).astype(np.float32) * 0.1  # 1 s at 192 kHz
ROW = np.zeros((1, 35), np.float32)


@pytest.fixture(scope="module")
def bridge() -> Iterator[BridgeProcess]:
    with BridgeProcess("--idle-timeout", "1.5", "--no-face-tracking") as b:
        yield b


@pytest.fixture
def bystander(bridge: BridgeProcess) -> Iterator[Bystander]:
    """Streams for the test; on exit it must have kept every frame, and the bridge must serve on."""
    with streaming_beside(bridge.request_port) as b:  # a second of frames at least
        yield b
    assert bridge.proc.poll() is None


# ------------------------------------------------------------------------- 6. voice calibration
def test_voice_calibration_runs_off_the_io_thread_bounded_per_client(
    bridge: BridgeProcess, bystander: Bystander
) -> None:
    before = tree_rss_mib(bridge.proc.pid)
    clip = np.tile(NOISE, int(MAX_CALIBRATION_S))  # 8 s at 192 kHz: ~23 ms of analysis each
    data = (clip * 32767).astype("<i2").tobytes()
    socks = [raw_dealer(bridge.request_port) for _ in range(3)]
    sessions = [ask(s, {"op": "open", "id": 1, "pipeline": "speech"})["session"] for s in socks]
    calibrate = [
        pack({"op": "calibrate", "id": 9, "session": sid, "rate": RATE, "format": "s16le", "data": data})
        for sid in sessions
    ]
    # Two at once from one client: the second is refused (one calibration per client at a time).
    socks[0].send(calibrate[0])
    socks[0].send(calibrate[0])
    replies = [unpack_map(socks[0].recv()) for _ in range(2) if socks[0].poll(10_000)]
    assert sorted(r["code"] for r in replies) == [ErrorCode.BAD_VALUE, ErrorCode.OVERLOADED], replies
    # Three clients calibrating back to back for 3 s (twice the idle timeout): only calibrations keep
    # their sessions; each answer is the clip's (noise has no five vowels).
    done = [0, 0, 0]
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        for k, sock in enumerate(socks):
            sock.send(calibrate[k])
        for k, sock in enumerate(socks):
            assert sock.poll(10_000)
            reply = unpack_map(sock.recv())
            assert reply["code"] == ErrorCode.BAD_VALUE and "voiced" in reply["message"], reply
            done[k] += 1
    assert min(done) >= 2, done  # ~25 ms each when the machine is not shared
    for sock, sid in zip(socks, sessions, strict=True):  # not reaped: calibrating is activity
        closed = ask(sock, {"op": "close", "id": 2, "session": sid})
        assert closed["op"] == "close", closed
        sock.close(0)
    assert bystander.report().latency_p99_ms < 1000, bystander.report()  # was 7.9 s
    assert tree_rss_mib(bridge.proc.pid) - before < RSS_GROWTH_MIB


# ------------------------------------------------------------------------- 7. motion fair share
def test_a_heavy_motion_client_does_not_delay_a_light_one(
    bridge: BridgeProcess, bystander: Bystander
) -> None:
    """32 sessions kept topped up with 1 s chunks at 192 kHz (the issue's 64, halved): bursts of
    ~0.25 s of pre-processing that the bystander's frames used to wait behind."""
    before = tree_rss_mib(bridge.proc.pid)
    heavy = connect(bridge.request_port)
    sids = [heavy.open("motion")["session"] for _ in range(32)]
    chunk = heavy.audio_item(sids[0], 0, NOISE, RATE)["data"]
    deadline = time.monotonic() + 3.0
    seq = 0
    while time.monotonic() < deadline:
        items = [
            {"session": sid, "seq": seq, "t_capture_ns": time.time_ns(), "kind": "audio", "rate": RATE}
            | {"format": "s16le", "data": chunk}
            for sid in sids
        ]
        heavy.send_inputs(items)  # a second of audio for each, every half second: always topped up
        seq += 1
        time.sleep(0.5)
        heavy.poll_replies()
        heavy.recv_frames()
    # The check is the bystander's teardown (every frame, no error: before, 32 such sessions cost it
    # 148 frames and OVERLOADED replies); its latency here is mostly the shared box's (p50 ~1 s for a
    # bystander alone at load average 17), so only a multi-second stall fails this.
    assert bystander.report().latency_p99_ms < 2500, bystander.report()
    for sid in sids:
        heavy.close_session(sid)
    heavy.close()
    assert tree_rss_mib(bridge.proc.pid) - before < RSS_GROWTH_MIB


def test_demand_over_capacity_refuses_new_sessions_and_keeps_the_open_ones() -> None:
    """Three clients of 64 streams at 48 kHz overloaded 2 cores for everyone. Scaled: a bridge
    admitting up to 15 % load, one client of 64 streams; the next client's sessions are refused
    AT_CAPACITY while the streams and the bystander keep every frame; once the load goes, they open."""
    with BridgeProcess("--idle-timeout", "5", "--no-face-tracking", "--max-load", "0.15") as bridge:
        bystander = Bystander(bridge.request_port, drain_s=5.0)
        bystander.start()
        streams = connect(bridge.request_port)
        sids = [streams.open("motion")["session"] for _ in range(64)]
        chunk = (NOISE[:800] * 32767).astype("<i2").tobytes()  # 1/60 s at 48 kHz
        stop = threading.Event()
        refused: list[int] = []

        def stream() -> None:
            seq, next_t = 0, time.perf_counter()
            while not stop.is_set():
                items = [
                    {"session": sid, "seq": seq, "t_capture_ns": time.time_ns(), "kind": "audio"}
                    | {"rate": 48_000, "format": "s16le", "data": chunk}
                    for sid in sids
                ]
                streams.send_inputs(items)
                seq, next_t = seq + 1, next_t + 1 / 60
                time.sleep(max(0.0, next_t - time.perf_counter()))

        sender = threading.Thread(target=stream)
        sender.start()
        try:
            time.sleep(2.5)  # two load windows
            late = connect(bridge.request_port)
            with pytest.raises(BridgeError) as at_capacity:
                late.open("motion")
            refused.append(at_capacity.value.code)
            assert "at capacity" in at_capacity.value.reply["message"]
        finally:
            stop.set()
            sender.join()
        streams.poll_replies()
        assert not [e for e in streams.errors if e["code"] != ErrorCode.OVERLOADED], streams.errors[:3]
        for sid in sids:
            streams.close_session(sid)
        time.sleep(2.5)  # the load goes with them
        late.close_session(late.open("motion")["session"])
        report = bystander.stop()
        assert report.clean and report.received >= 60, report
        assert refused == [ErrorCode.AT_CAPACITY]
        late.close()
        streams.close()


# ------------------------------------------------------------------------- 8. rate churn
def test_sample_rate_changes_are_bounded_per_session(bridge: BridgeProcess, bystander: Bystander) -> None:
    before = tree_rss_mib(bridge.proc.pid)
    churn = connect(bridge.request_port)
    sid = churn.open("motion")["session"]
    sample = (np.zeros(1, "<i2")).tobytes()
    sock = churn.dealer
    refused = accepted = sent = 0  # every item at a rate not used before
    deadline = time.monotonic() + 2.0
    # Within the rates a session may use (8-192 kHz): past them an item is BAD_VALUE, not a rate change.
    while time.monotonic() < deadline and 8000 + sent + MAX_ITEM_FAILURES <= 192_000:
        items = [
            {"session": sid, "seq": k, "t_capture_ns": 0, "kind": "audio", "rate": 8000 + sent + k}
            | {"format": "s16le", "data": sample}
            for k in range(MAX_ITEM_FAILURES)  # each one examined (past it the rest fail as one)
        ]
        sock.send(pack({"op": "inputs", "id": 7, "items": items}))
        assert sock.poll(10_000)
        reply = unpack_map(sock.recv())
        codes = {f["code"] for f in reply["items"]}
        assert codes == {ErrorCode.RATE_CHANGE_LIMIT}, codes
        failed = len(reply["items"])
        refused += failed
        accepted += MAX_ITEM_FAILURES - failed
        sent += MAX_ITEM_FAILURES
    # The first rate, then 2 changes a second: a handful accepted of thousands.
    assert 0 < accepted <= 8 and refused > 500, (accepted, refused)
    churn.close_session(sid)
    churn.close()
    assert tree_rss_mib(bridge.proc.pid) - before < RSS_GROWTH_MIB


# ------------------------------------------------------------------------- 10, 11. ownership
def test_a_batch_group_belongs_to_its_first_opener(bridge: BridgeProcess, bystander: Bystander) -> None:
    owner, other = connect(bridge.request_port), connect(bridge.request_port)
    mine = owner.open("motion", batch_group="crowd")
    assert mine["batch_group"] == "crowd"
    with pytest.raises(BridgeError) as taken:
        other.open("motion", batch_group="crowd")
    assert taken.value.code == ErrorCode.NOT_OWNER and "crowd" in taken.value.reply["message"]
    second = owner.open("motion", batch_group="crowd")  # its owner may add sessions
    token = owner.open("motion", batch_group=True)["batch_group"]
    assert len(token) == 16 and token != other.open("motion", batch_group=True)["batch_group"]
    with pytest.raises(BridgeError) as joined:
        other.open("motion", batch_group=token)
    assert joined.value.code == ErrorCode.NOT_OWNER
    for sid in (mine["session"], second["session"]):
        owner.close_session(sid)
    # The last session of a group gone, its name is free again.
    assert other.open("motion", batch_group="crowd")["batch_group"] == "crowd"
    owner.close()
    other.close()


def test_a_reused_routing_id_inherits_no_session(bridge: BridgeProcess, bystander: Bystander) -> None:
    victim = raw_dealer(bridge.request_port, b"victim")
    sid = ask(victim, {"op": "open", "id": 1, "pipeline": "motion"})["session"]
    victim.close(0)
    time.sleep(0.3)  # the bridge sees the connection end; the session waits for its idle timeout
    thief = raw_dealer(bridge.request_port, b"victim")
    feed = {"op": "input", "id": 2, "session": sid, "seq": 0, "t_capture_ns": 0, "kind": "features"}
    feed |= {"rows": 1, "cols": 35, "data": ROW.tobytes(), "ack": True}
    for message in (feed, {"op": "ping", "id": 3, "session": sid}, {"op": "close", "id": 4, "session": sid}):
        reply = ask(thief, message)
        assert reply["op"] == "error" and reply["code"] == ErrorCode.NOT_OWNER, reply
    thief.close(0)


def test_a_looped_chunk_does_not_fail_the_shared_feature_call() -> None:
    """The same 1/60 s chunk again and again (as bench/capacity.py streams) makes every envelope window
    flat; the beat tracker's comb then had no row and raised, failing the engine call of every session
    batched with it (INTERNAL to the bystander too)."""
    from bridge.audio.music_features import MusicFeatureBatch

    batch = MusicFeatureBatch(60.0)
    stream = batch.open(48_000)
    for _ in range(60 * 8):
        stream.feed(NOISE[:800])
        batch.run()
