"""The scheduler's tick clock and its per-client fair admission (issues 16 and 11), with real pipelines.

Tick clock: 16 sessions whose inputs arrive within a tick make one engine call per tick (calls are
counted, not timed). Fair admission: while several clients have work queued, each may hold its share
(images weighed by size, never less than its sessions' own bounds) and a bystander is always
admitted; alone, a client has only the per-session bounds. A live flood of max-size images from two
clients leaves a bystander clean.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zmq

from bridge.backends import load_engine
from bridge.cli.serve import add_arguments, config_from_args
from bridge.cli.serve_config import ConfigError, load_serve_table
from bridge.pipelines.base import BatchResult, Pipeline, Step
from bridge.pipelines.face_flame import FacePipeline
from bridge.pipelines.motion import MotionPipeline
from bridge.protocol import ErrorCode, pack, unpack_map
from bridge.protocol.requests import FeaturesInput, ImageInput
from bridge.runtime.engine import Engine
from bridge.serving.scheduler import Scheduler
from bridge.serving.server import Bridge
from bridge.serving.sessions import Session
from bridge.serving.stats import BridgeStats
from tests.conftest import MODELS

from .bystander import Bystander
from .conftest import start_bridge, stop_bridge
from .test_scheduler import Published

ROW = np.zeros((1, 35), np.float32)
LARGEST = np.zeros((1024, 2048, 3), np.uint8)  # the largest legal image: 7 work units
SMALL = np.zeros((120, 160, 3), np.uint8)  # 1 unit


@pytest.fixture(scope="module")
def motion() -> Iterator[Engine]:
    e = load_engine(MODELS / "dance_lstm.manifest.json")
    yield e
    e.close()


@pytest.fixture(scope="module")
def face() -> Iterator[Engine]:
    e = load_engine(MODELS / "face_expression_small.manifest.json")
    yield e
    e.close()


def sessions(pipeline: Pipeline[Any, Any], owner: bytes, count: int) -> list[Session]:
    return [
        Session(f"{owner.hex()}{i:04x}".ljust(16, "0"), pipeline, pipeline.open_session({}), (), owner)
        for i in range(count)
    ]


def count_calls(pipeline: MotionPipeline, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    run_batch = pipeline.run_batch

    def counted(states: Sequence[Any], steps: Sequence[Step[Any]]) -> BatchResult:
        calls.append(len(steps))
        return run_batch(states, steps)

    monkeypatch.setattr(pipeline, "run_batch", counted)
    return calls


def test_tick_clock_makes_one_call_per_tick_for_16_sessions(
    motion: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline, out = MotionPipeline(motion), Published()
    calls = count_calls(pipeline, monkeypatch)
    streams = sessions(pipeline, b"c", 16)
    # A slow clock (2 Hz) and a wide first window (0.4 s) keep the test free of timing luck on a loaded
    # machine: the 16 inputs of a tick arrive one by one, 1 ms apart, as 16 independent clients' would.
    scheduler = Scheduler(pipeline, out, out.report, BridgeStats(), tick_hz=2.0, gather_window_us=400_000)
    scheduler.start()
    ticks = 3
    try:
        for tick in range(ticks):
            for s in streams:
                scheduler.submit(s, FeaturesInput(0, s.id, tick, 0, False, ROW))
                time.sleep(0.001)
            out.wait({s.id: tick + 1 for s in streams})
    finally:
        scheduler.stop()
    assert calls == [16] * ticks
    assert all(len(out.frames[s.id]) == ticks for s in streams) and not out.errors


def test_tick_clock_follows_inputs_that_come_earlier(motion: Engine) -> None:
    """Clients whose inputs start coming well before the tick (a phase step, or a client clock a
    little faster than the bridge's) pull the clock earlier: it locks just after their last input again
    instead of holding every input until the old tick."""
    pipeline, out = MotionPipeline(motion), Published()
    streams = sessions(pipeline, b"c", 4)
    period, shift = 0.05, 0.03
    scheduler = Scheduler(pipeline, out, out.report, BridgeStats(), tick_hz=1 / period, gather_window_us=2000)
    scheduler.start()
    try:
        start = time.perf_counter()
        for tick in range(10):
            # From the 4th period on, every input comes `shift` earlier than the clock had learnt.
            time.sleep(max(0.0, start + tick * period - (shift if tick >= 3 else 0.0) - time.perf_counter()))
            for s in streams:
                scheduler.submit(s, FeaturesInput(0, s.id, tick, time.time_ns(), False, ROW))
        out.wait({s.id: 10 for s in streams})
    finally:
        scheduler.stop()
    waits = [(f.header.t_publish_ns - f.header.t_capture_ns) / 1e9 for f in out.frames[streams[0].id][-5:]]
    # Held for the old tick, each of them would wait about `shift` (30 ms).
    assert float(np.median(waits)) < shift / 2, waits
    assert not out.errors


def test_tick_clock_runs_leftover_steps_at_once(motion: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline, out = MotionPipeline(motion), Published()
    calls = count_calls(pipeline, monkeypatch)
    (s,) = sessions(pipeline, b"c", 1)
    # A 100 s tick: a second step of the same tick waiting for the clock would never arrive in time.
    scheduler = Scheduler(pipeline, out, out.report, BridgeStats(), tick_hz=0.01)
    scheduler.submit_many([(s, FeaturesInput(0, s.id, k, 0, False, ROW)) for k in range(3)])
    scheduler.start()
    try:
        out.wait({s.id: 3})
    finally:
        scheduler.stop()
    assert [f.header.input_seq for f in out.frames[s.id]] == [0, 1, 2] and calls == [1, 1, 1]


def image(s: Session, pixels: np.ndarray, seq: int = 0) -> tuple[Session, ImageInput]:
    return s, ImageInput(0, s.id, seq, 0, False, pixels)


def test_image_work_is_weighed_by_size(face: Engine) -> None:
    pipeline = FacePipeline(face)
    (s,) = sessions(pipeline, b"a", 1)
    assert pipeline.work(s.state, image(s, LARGEST)[1]) == 7
    assert pipeline.work(s.state, image(s, SMALL)[1]) == 1


def test_flooding_clients_get_their_share_and_a_bystander_is_always_admitted(face: Engine) -> None:
    pipeline = FacePipeline(face)
    out = Published()
    scheduler = Scheduler(pipeline, out, out.report, BridgeStats(), fair_work=16)  # not started: work stays
    (by,) = sessions(pipeline, b"by", 1)
    a, b = sessions(pipeline, b"a", 4), sessions(pipeline, b"b", 4)
    burst = [image(by, SMALL), *(image(s, LARGEST) for s in a), image(a[0], LARGEST, 1)]
    burst += [*(image(s, LARGEST) for s in b), image(by, SMALL, 1)]
    # by: 1 unit. a (2 clients with work: share 8): 0 -> 7 -> 14, then refused; a[0]'s newer image
    # replaces its own (latest wins), so it fits. b (3 clients: share 5): 0 -> 7, then refused. The
    # bystander's newer image replaces its older one: always admitted.
    assert scheduler.submit_many(burst) == [
        True,
        True,
        True,
        False,
        False,
        True,
        True,
        False,
        False,
        False,
        True,
    ]
    assert [len(s.inbox) for s in (by, *a, *b)] == [1, 1, 1, 0, 0, 1, 0, 0, 0]
    # Alone, a client has only the per-session bounds (latest wins here): every session is admitted.
    alone = Scheduler(pipeline, out, out.report, BridgeStats(), fair_work=16)
    c = sessions(pipeline, b"c", 8)
    assert alone.submit_many([image(s, LARGEST) for s in c]) == [True] * 8


def test_motion_clients_that_fall_behind_together_keep_their_own_bounds(motion: Engine) -> None:
    pipeline, out = MotionPipeline(motion), Published()
    scheduler = Scheduler(pipeline, out, out.report, BridgeStats(), max_pending=16)  # not started: a stall
    clients = [sessions(pipeline, bytes([65 + c]), 1)[0] for c in range(9)]
    # Nine one-session clients, 16 frames each behind: far over a ninth of the pool (64 // 9), never
    # refused for it; each session's own bound (16) refuses the 17th.
    burst = [(s, FeaturesInput(0, s.id, k, 0, False, ROW)) for k in range(17) for s in clients]
    assert scheduler.submit_many(burst) == [True] * (16 * 9) + [False] * 9
    # A client with a second session may hold both sessions' bounds, no more.
    (extra,) = sessions(pipeline, b"A2", 1)
    extra.owner = clients[0].owner
    assert scheduler.submit_many([(extra, FeaturesInput(0, extra.id, 0, 0, False, ROW))] * 17) == (
        [True] * 16 + [False]
    )


@pytest.fixture(scope="module")
def bridge() -> Iterator[Bridge]:
    server, thread = start_bridge(idle_timeout_s=5.0, max_sessions_per_client=4, client_fair_work=16)
    yield server
    stop_bridge(server, thread)


def test_image_floods_from_two_clients_leave_the_bystander_clean(bridge: Bridge) -> None:
    bystander = Bystander(bridge.sockets.request_port)
    bystander.start()
    attackers: list[zmq.Socket[bytes]] = []
    codes: list[int] = []
    try:
        for _ in range(2):
            sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.SNDHWM, 4)  # the attacker's own queue: a few images, not gigabytes
            sock.connect(f"tcp://127.0.0.1:{bridge.sockets.request_port}")
            attackers.append(sock)
        sids = []
        for sock in attackers:
            for _ in range(4):
                sock.send(pack({"op": "open", "pipeline": "face"}))
                assert sock.poll(5000)
                sids.append((sock, unpack_map(sock.recv())["session"]))
        data = LARGEST.tobytes()
        deadline = time.monotonic() + 1.5
        seq = 0
        while time.monotonic() < deadline:  # every session of both clients, max-size images, flat out
            for sock, sid in sids:
                message = {"op": "input", "session": sid, "seq": seq, "t_capture_ns": time.time_ns()}
                with contextlib.suppress(zmq.Again):  # as fast as they go out
                    sock.send(
                        pack({**message, "kind": "image", "width": 2048, "height": 1024, "data": data}),
                        zmq.NOBLOCK,
                    )
            seq += 1
            for sock in attackers:
                while sock.poll(0):
                    codes.append(unpack_map(sock.recv())["code"])
        time.sleep(0.5)
        for sock in attackers:
            while sock.poll(200):
                codes.append(unpack_map(sock.recv())["code"])
    finally:
        report = bystander.stop()
        for sock in attackers:
            sock.close(0)
    assert report.clean, report
    assert set(codes) == {ErrorCode.OVERLOADED}, codes  # the flooders were held to their shares


def test_the_scheduler_options_are_typed_config_keys_and_flags(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    path = tmp_path / "bridge.toml"
    path.write_text(
        '[serve]\nscheduler = "tick"\ntick_hz = 30.0\ngather_window_us = 500\nclient_fair_work = 32\n'
    )
    config = config_from_args(parser.parse_args(["--config", str(path), "--gather-window-us", "800"]))
    assert (config.scheduler, config.tick_hz, config.gather_window_us, config.client_fair_work) == (
        "tick",
        30.0,
        800,  # the flag wins
        32,
    )
    for bad in ('scheduler = "fast"', "gather_window_us = -1", 'tick_hz = "60"'):
        path.write_text(f"[serve]\n{bad}\n")
        with pytest.raises(ConfigError, match=bad.split()[0]):
            load_serve_table(path)
