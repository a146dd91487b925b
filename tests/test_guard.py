"""The output guard: clamp, hold, count, and hot-restart one session without touching the others."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pytest

from bridge.clients.harness.client import BridgeClient
from bridge.filters.output_guard import (
    GROSS_ROOT_SPEED_M_S,
    MAX_ROOT_SPEED_M_S,
    RESTART_AFTER,
    FaceGuardRows,
    GuardStats,
)
from bridge.protocol import MotionFrame
from bridge.rig import flame
from bridge.rig.flame import FLAME_RANGES
from bridge.rig.smpl import JOINT_LIMITS_RAD
from bridge.serving.server import Bridge
from tests.oracles.motion_guard import MotionOutputGuard

DT = 1 / 60
ROW = np.array([0])


def test_face_guard_clamps_mild_and_holds_bad_outputs() -> None:
    stats = GuardStats()
    rows = FaceGuardRows(stats)
    rows.prepare(1, ROW)

    class Guard:  # one session's row
        def apply(self, params: np.ndarray) -> np.ndarray:
            out: np.ndarray = rows.apply(ROW, params[None])[0]
            return out

        @property
        def consecutive_bad(self) -> int:
            return int(rows.bad_run[0])

    guard = Guard()
    good = np.zeros(flame.FLAME_DIM, np.float32)
    good[flame.EXPRESSION] = 0.5
    assert np.array_equal(guard.apply(good), good)
    mild = good.copy()
    mild[flame.EXPRESSION.start] = 4.0  # outside ±3, within the margin: clamped
    out = guard.apply(mild)
    assert out[flame.EXPRESSION.start] == FLAME_RANGES[flame.EXPRESSION.start, 1]
    for bad_value in (np.nan, np.inf, 50.0):  # non-finite, or grossly out of range: held
        bad = good.copy()
        bad[flame.JAW.start] = bad_value
        assert np.array_equal(guard.apply(bad), out)
    assert (stats.outputs, stats.clamped, stats.held) == (5, 1, 3)
    assert guard.consecutive_bad == 3
    guard.apply(good)
    assert guard.consecutive_bad == 0


def test_motion_guard_limits_joints_and_root_speed() -> None:
    stats = GuardStats()
    guard = MotionOutputGuard(stats, lambda: None)
    pose = np.zeros(75, np.float32)
    pose[72:] = (0.0, 0.9, 0.0)  # the first root may be anywhere: no previous one to judge speed by
    assert np.array_equal(guard.apply(pose, DT), pose)
    knee = 4 * 3  # left knee, x component
    bent = pose.copy()
    bent[knee] = JOINT_LIMITS_RAD[4, 0, 1] + 0.2
    fast = bent.copy()
    fast[72] += 2 * MAX_ROOT_SPEED_M_S * DT
    out = guard.apply(fast, DT)
    assert out[knee] == pytest.approx(JOINT_LIMITS_RAD[4, 0, 1])
    assert np.linalg.norm(out[72:] - pose[72:]) == pytest.approx(MAX_ROOT_SPEED_M_S * DT, rel=1e-4)
    teleport = out.copy()
    teleport[72] += 2 * GROSS_ROOT_SPEED_M_S * DT
    wild = out.copy()
    wild[knee] += math.pi
    nan = out.copy()
    nan[5] = np.nan
    for bad in (teleport, wild, nan):
        assert np.array_equal(guard.apply(bad, DT), out)
    assert (stats.outputs, stats.clamped, stats.held) == (5, 1, 3)


def test_restart_is_due_after_n_bad_outputs_and_a_fresh_row_starts_over() -> None:
    """Rows of distinct sessions: only the one with RESTART_AFTER bad outputs in a row is due; its new
    row (a hot restart's) holds nothing and counts from zero. The pipeline's rebuild in place:
    tests/test_batching.py (a session that goes bad for good is restarted once, alone)."""
    stats = GuardStats()
    rows = FaceGuardRows(stats)
    rows.prepare(3, np.arange(3))
    slots = np.array([0, 1])
    good = np.zeros(flame.FLAME_DIM, np.float32)
    bad = np.full(flame.FLAME_DIM, np.nan, np.float32)
    for _ in range(RESTART_AFTER - 1):
        rows.apply(slots, np.stack([bad, good]))
        assert not rows.restart_due(slots).any()
    rows.apply(slots, np.stack([bad, good]))
    assert rows.restart_due(slots).tolist() == [True, False]
    rows.prepare(3, np.array([2]))  # the restarted session's new row
    assert not rows.restart_due(np.array([2])).any()
    assert np.array_equal(rows.apply(np.array([2]), bad[None])[0], np.zeros(flame.FLAME_DIM, np.float32))
    assert stats.held == RESTART_AFTER + 1 and stats.outputs == 2 * RESTART_AFTER + 1


def wait_session_frames(client: BridgeClient, frames: dict[str, list[MotionFrame]], count: int) -> None:
    deadline = time.monotonic() + 30
    while min(len(v) for v in frames.values()) < count and time.monotonic() < deadline:
        for r in client.recv_frames(50):
            if r.frame.header.session in frames:
                assert isinstance(r.frame, MotionFrame)
                frames[r.frame.header.session].append(r.frame)
    assert min(len(v) for v in frames.values()) >= count, {k: len(v) for k, v in frames.items()}


def test_a_diverged_session_is_held_then_hot_restarted_alone(
    bridge: Bridge, client: BridgeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.subscribe()
    time.sleep(0.05)
    sick, healthy = (client.open("motion", smoothing=0.0)["session"] for _ in range(2))
    pipeline = bridge.sessions.get(sick).pipeline  # type: ignore[union-attr]
    sick_state = bridge.sessions.get(sick).state  # type: ignore[union-attr]
    guard_stats = pipeline.guard_stats
    restarts = guard_stats.restarts
    diverged = False
    run_batch = pipeline.run_batch

    def diverging_run_batch(states: Any, steps: Any) -> Any:
        # The failure a hot restart exists for: a model whose recurrent state went NaN keeps
        # producing NaN until its state is rebuilt.
        result = run_batch(states, steps)
        if diverged and guard_stats.restarts == restarts:
            for i, state in enumerate(states):
                if state is sick_state:
                    result.rows[i][...] = np.nan
        return result

    monkeypatch.setattr(pipeline, "run_batch", diverging_run_batch)
    rows = np.random.default_rng(1).standard_normal((RESTART_AFTER + 20, 35)).astype(np.float32)
    frames: dict[str, list[MotionFrame]] = {sick: [], healthy: []}
    for sid in frames:
        client.send_features(sid, 0, rows[:5])
    wait_session_frames(client, frames, 5)
    diverged = True
    for sid in frames:
        client.send_features(sid, 1, rows[5:])
    wait_session_frames(client, frames, len(rows))
    assert guard_stats.restarts == restarts + 1  # the sick session only
    last_good = frames[sick][4].joints
    held = frames[sick][5 : 5 + RESTART_AFTER]
    assert all(np.array_equal(f.joints, last_good) for f in held), (
        "bad outputs must repeat the last good frame"
    )
    recovered = frames[sick][5 + RESTART_AFTER :]
    assert all(np.isfinite(f.joints).all() and not np.array_equal(f.joints, last_good) for f in recovered)
    for sid in frames:  # both streams complete and in order; the healthy one never held a frame
        assert [f.header.seq for f in frames[sid]] == list(range(len(rows)))
    assert all(np.isfinite(f.joints).all() for f in frames[healthy])
    assert all(
        not np.array_equal(a.joints, b.joints)
        for a, b in zip(frames[healthy][:-1], frames[healthy][1:], strict=True)
    )
    assert not client.errors
