"""The scheduler with real motion pipelines: order under load, closing mid-batch, slots, batching window."""

from __future__ import annotations

import gc
import threading
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from bridge.backends import load_engine
from bridge.pipelines.base import BatchResult, Step
from bridge.pipelines.motion import MotionPipeline, MotionState
from bridge.protocol.errors import ErrorCode
from bridge.protocol.frames import MotionFrame, decode_frame
from bridge.protocol.requests import FeaturesInput
from bridge.runtime.engine import Engine
from bridge.serving.scheduler import Scheduler
from bridge.serving.sessions import Session
from bridge.serving.stats import BridgeStats
from bridge.transport.zmq_sockets import Delivery
from tests.conftest import MODELS


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    e = load_engine(MODELS / "dance_lstm.manifest.json")
    yield e
    e.close()


class Published:
    """Publish function that decodes and keeps every frame, per session."""

    def __init__(self) -> None:
        self.frames: dict[str, list[MotionFrame]] = defaultdict(list)
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, topic: bytes, payload: bytes, *, hold: bool = False) -> Delivery:
        frame = decode_frame(payload)
        assert isinstance(frame, MotionFrame) and topic == b"frame/" + frame.header.session.encode()
        with self._lock:
            self.frames[frame.header.session].append(frame)
        return Delivery.SENT

    def report(self, session: Session, code: ErrorCode, message: str) -> None:
        self.errors.append(message)

    def wait(self, count: dict[str, int], timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while any(len(self.frames[s]) < n for s, n in count.items()) and time.monotonic() < deadline:
            time.sleep(0.005)


def make_scheduler(pipeline: MotionPipeline, out: Published, **options: Any) -> Scheduler:
    scheduler = Scheduler(pipeline, out, out.report, BridgeStats(), **options)
    scheduler.start()
    return scheduler


def open_sessions(pipeline: MotionPipeline, count: int) -> list[Session]:
    return [Session(f"{i:016x}", pipeline, pipeline.open_session({}), ()) for i in range(count)]


def alone(engine: Engine, feats: np.ndarray) -> np.ndarray:
    """Reference: one fresh pipeline, one session, one step per call."""
    pipeline = MotionPipeline(engine)
    state = pipeline.open_session({})
    joints = []
    for t, row in enumerate(feats):
        steps = pipeline.prepare(state, FeaturesInput(0, "0" * 16, t, 0, False, row[None]))
        result = pipeline.run_batch([state], steps)
        frame = decode_frame(pipeline.finish_batch([state], ["0" * 16], [t], steps, result)[0][0])
        assert isinstance(frame, MotionFrame)
        joints.append(frame.joints)
    return np.stack(joints)


def test_order_and_outputs_under_load(engine: Engine) -> None:
    """32 sessions each burst 3 inputs of 4 rows: every frame in order, each equal to running alone."""
    pipeline, out = MotionPipeline(engine), Published()
    sessions = open_sessions(pipeline, 32)
    feats = np.random.default_rng(0).standard_normal((32, 12, 35)).astype(np.float32)
    scheduler = make_scheduler(pipeline, out, max_batch=8)
    try:
        for k in range(3):
            scheduler.submit_many(
                [
                    (s, FeaturesInput(0, s.id, k, k, False, feats[i, 4 * k : 4 * k + 4]))
                    for i, s in enumerate(sessions)
                ]
            )
        out.wait({s.id: 12 for s in sessions})
    finally:
        scheduler.stop()
    assert not out.errors
    for i, s in enumerate(sessions):
        frames = out.frames[s.id]
        assert [f.header.seq for f in frames] == list(range(12))
        assert [f.header.input_seq for f in frames] == [k for k in range(3) for _ in range(4)]
        assert max(f.header.batch for f in frames) <= 8
        np.testing.assert_allclose(np.stack([f.joints for f in frames]), alone(engine, feats[i]), atol=2e-5)


class ClosingPipeline(MotionPipeline):
    """Closes one session while its batch is in the engine (as the I/O thread may at any time)."""

    victim: Session | None = None
    close_at = 3
    calls = 0

    def run_batch(self, states: Sequence[MotionState], steps: Sequence[Step[np.ndarray]]) -> BatchResult:
        self.calls += 1
        if self.victim is not None and self.calls == self.close_at:
            self.victim.closed = True
        return super().run_batch(states, steps)


def test_session_closing_mid_batch_does_not_disturb_the_others(engine: Engine) -> None:
    pipeline, out = ClosingPipeline(engine), Published()
    sessions = open_sessions(pipeline, 4)
    pipeline.victim = sessions[1]
    feats = np.random.default_rng(1).standard_normal((4, 6, 35)).astype(np.float32)
    scheduler = make_scheduler(pipeline, out)
    try:
        for s, f in zip(sessions, feats, strict=True):
            scheduler.submit(s, FeaturesInput(0, s.id, 0, 0, False, f))
        out.wait({s.id: 6 for s in sessions if s is not pipeline.victim})
    finally:
        scheduler.stop()
    assert len(out.frames[sessions[1].id]) == pipeline.close_at - 1  # nothing after it closed
    for i in (0, 2, 3):
        got = np.stack([f.joints for f in out.frames[sessions[i].id]])
        np.testing.assert_allclose(got, alone(engine, feats[i]), atol=2e-5)


def test_slots_are_freed_on_close_and_reused_from_zero(engine: Engine) -> None:
    pipeline, out = MotionPipeline(engine), Published()
    feats = np.random.default_rng(2).standard_normal((5, 35)).astype(np.float32)
    scheduler = make_scheduler(pipeline, out)
    try:
        sessions = open_sessions(pipeline, 3)
        assert [s.state.slot.index for s in sessions] == [0, 1, 2]
        for s in sessions:
            scheduler.submit(s, FeaturesInput(0, s.id, 0, 0, False, feats))
        out.wait({s.id: 5 for s in sessions})
        sessions[1].closed = True  # what SessionTable.remove does; the last reference then goes
        del sessions[1]
        gc.collect()
        deadline = time.monotonic() + 5
        while pipeline.slot_pool.in_use != 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pipeline.slot_pool.in_use == 2
        reopened = Session("f" * 16, pipeline, pipeline.open_session({}), ())
        assert reopened.state.slot.index == 1  # the freed row, lowest first
        scheduler.submit(reopened, FeaturesInput(0, reopened.id, 0, 0, False, feats))
        out.wait({reopened.id: 5})
    finally:
        scheduler.stop()
    got = np.stack([f.joints for f in out.frames[reopened.id]])
    np.testing.assert_allclose(got, alone(engine, feats), atol=2e-5)  # the reused row started from zeros
    assert pipeline.state_slots.capacity >= 3


def test_batching_window_waits_only_for_sessions_due(engine: Engine) -> None:
    pipeline, out = MotionPipeline(engine), Published()
    a, b = open_sessions(pipeline, 2)
    row = np.zeros((1, 35), np.float32)
    scheduler = make_scheduler(pipeline, out, max_queue_delay_us=5000)
    try:
        # Alone: no wait.
        t0 = time.perf_counter()
        scheduler.submit(a, FeaturesInput(0, a.id, 0, 0, False, row))
        out.wait({a.id: 1})
        assert time.perf_counter() - t0 < 0.1
        # Both stream every 15 ms, b 3 ms after a: a's step waits for b's, and they share calls.
        start = time.perf_counter()
        for k in range(1, 21):
            time.sleep(max(0.0, start + 0.015 * k - time.perf_counter()))
            scheduler.submit(a, FeaturesInput(0, a.id, k, 0, False, row))
            time.sleep(0.003)
            scheduler.submit(b, FeaturesInput(0, b.id, k, 0, False, row))
        out.wait({a.id: 21, b.id: 20})
    finally:
        scheduler.stop()
    shared = [f.header.batch for f in out.frames[a.id][3:]]
    assert shared.count(2) >= len(shared) // 2, shared


def test_queue_bound_counts_rows_not_yet_prepared(engine: Engine) -> None:
    pipeline, out = MotionPipeline(engine), Published()
    (s,) = open_sessions(pipeline, 1)
    scheduler = Scheduler(pipeline, out, out.report, BridgeStats(), max_pending=64)  # not started
    rows = np.zeros((100, 35), np.float32)
    assert scheduler.submit_many([(s, FeaturesInput(0, s.id, k, 0, False, rows)) for k in range(2)]) == [
        True,
        False,
    ]


class FixedCostPipeline(MotionPipeline):
    """Each call costs ~10 ms whatever its rows (the face tracker on a GPU is mostly this), and counts
    its rows."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.rows: list[int] = []

    def run_batch(self, states: Sequence[MotionState], steps: Sequence[Step[np.ndarray]]) -> BatchResult:
        self.rows.append(len(steps))
        time.sleep(0.010 + 0.00005 * len(steps))
        return super().run_batch(states, steps)


def test_a_calls_fixed_cost_does_not_cut_rounds_into_smaller_calls(engine: Engine) -> None:
    """24 sessions of three clients, one input each per 60 Hz frame: the round budget (a third of a
    frame) counts what a row adds, so the calls stay full. Counted in the mean cost per row (10 ms /
    24 rows at first), the budget cut rounds to a few rows, which raised the mean: calls of one to
    three rows, the queue growing (the face tracker on the H100, 2026-12-07)."""
    pipeline, out = FixedCostPipeline(engine), Published()
    sessions = [
        Session(f"{i:016x}", pipeline, pipeline.open_session({}), (), owner=b"id:%d" % (i % 3))
        for i in range(24)
    ]
    row = np.zeros((1, 35), np.float32)
    scheduler = make_scheduler(pipeline, out, max_batch=32)
    try:
        for t in range(40):
            scheduler.submit_many([(s, FeaturesInput(0, s.id, t, t, False, row)) for s in sessions])
            time.sleep(1 / 60)
        out.wait({s.id: 40 for s in sessions})
    finally:
        scheduler.stop()
    assert not out.errors
    late = pipeline.rows[len(pipeline.rows) // 2 :]
    assert sum(late) / len(late) >= 12, pipeline.rows
