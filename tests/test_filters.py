"""One-Euro, low-pass, joint-limit and range-guard filters."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from bridge.filters.one_euro import OneEuroRows, flame_one_euro_rows
from bridge.rig import flame
from bridge.rig.flame import FLAME_RANGES
from bridge.rig.rotations import axis_angle_to_quat, quat_to_axis_angle
from bridge.rig.smpl import JOINT_LIMITS_RAD
from tests.oracles.low_pass import QuatLowPass, VectorLowPass
from tests.oracles.motion_guard import clamp_joint_limits

FPS = 60.0


def one_row(rows: OneEuroRows) -> Callable[[npt.ArrayLike, float], np.ndarray]:
    """One session's row of `rows` (slot 0), stepped a sample at a time."""
    rows.prepare(1, np.array([0]))
    slot = np.array([0])
    return lambda x, t: rows.step(slot, np.asarray(x, np.float32)[None], np.array([t]))[0]


def _scalar_one_euro(xs: np.ndarray, ts: np.ndarray, mc: float, beta: float, dc: float) -> np.ndarray:
    """Textbook scalar One-Euro (Casiez 2012), the reference for the vectorised one."""

    def alpha(cutoff: float, dt: float) -> float:
        tau = 1.0 / (2.0 * math.pi * cutoff)
        return 1.0 / (1.0 + tau / dt)

    out = [xs[0]]
    x_prev, dx_prev = xs[0], 0.0
    for x, t0, t1 in zip(xs[1:], ts[:-1], ts[1:], strict=True):
        dt = t1 - t0
        dx = (x - x_prev) / dt
        dx_hat = dx_prev + alpha(dc, dt) * (dx - dx_prev)
        x_hat = x_prev + alpha(mc + beta * abs(dx_hat), dt) * (x - x_prev)
        out.append(x_hat)
        x_prev, dx_prev = x_hat, dx_hat
    return np.array(out)


def test_one_euro_matches_scalar_reference_per_channel() -> None:
    rng = np.random.default_rng(0)
    n, steps = 5, 200
    mc = np.array([0.5, 1.0, 2.0, 1.0, 3.0])
    beta = np.array([0.0, 0.5, 2.0, 10.0, 0.1])
    ts = np.cumsum(rng.uniform(0.01, 0.03, size=steps))  # jittery frame times
    xs = np.cumsum(rng.normal(size=(steps, n)), axis=0) * 0.1
    f = one_row(OneEuroRows(n, mc, beta, 1.0))
    got = np.array([f(x, t) for x, t in zip(xs, ts, strict=True)])
    for c in range(n):
        np.testing.assert_allclose(got[:, c], _scalar_one_euro(xs[:, c], ts, mc[c], beta[c], 1.0), atol=1e-4)


def test_one_euro_smooths_jitter_and_beta_cuts_lag() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(600) / FPS
    noise = rng.normal(scale=0.05, size=(600, 1))
    still = one_row(OneEuroRows(1, min_cutoff=1.0, beta=0.0))
    out = np.array([still(x, ti)[0] for x, ti in zip(noise, t, strict=True)])
    assert out[60:].std() < 0.3 * noise[60:].std()
    ramp = (3.0 * t)[:, None]  # 3 units/s
    lags = []
    for beta in (0.0, 2.0):
        f = one_row(OneEuroRows(1, min_cutoff=1.0, beta=beta))
        y = np.array([f(x, ti)[0] for x, ti in zip(ramp, t, strict=True)])
        lags.append(ramp[-1, 0] - y[-1])
    assert lags[1] < 0.25 * lags[0]


def test_one_euro_duplicate_timestamp_and_reset() -> None:
    rows = OneEuroRows(2, 1.0, 0.5)
    f = one_row(rows)
    f([0.0, 0.0], 0.0)
    first = f([1.0, 1.0], 1 / FPS)
    np.testing.assert_array_equal(f([9.0, 9.0], 1 / FPS), first)
    rows.reset(np.array([0]))
    np.testing.assert_array_equal(f([5.0, -5.0], 2.0), [5.0, -5.0])
    with pytest.raises(ValueError):
        OneEuroRows(2, min_cutoff=0.0)


def test_flame_one_euro_defaults_cover_every_channel() -> None:
    rows = flame_one_euro_rows()
    assert rows.n_channels == flame.FLAME_DIM
    x = np.zeros(flame.FLAME_DIM, np.float32)
    assert one_row(rows)(x, 0.0).dtype == np.float32


def test_vector_low_pass_cutoff_and_critical_damping() -> None:
    fc = 2.0
    t = np.arange(int(20 * FPS)) / FPS
    for order in (1, 2):
        lp = VectorLowPass((1,), fc, order)
        y = np.array([lp.filter([math.sin(2 * math.pi * fc * ti)], 1 / FPS)[0] for ti in t])
        gain = np.abs(y[len(y) // 2 :]).max()
        assert gain == pytest.approx(1 / math.sqrt(2), abs=0.04), order
    lp = VectorLowPass((1,), fc, 2)
    lp.filter([0.0], 1 / FPS)
    step = np.array([lp.filter([1.0], 1 / FPS)[0] for _ in range(240)])
    assert np.all(np.diff(step) >= 0) and step.max() <= 1.0  # no overshoot
    assert step[-1] == pytest.approx(1.0, abs=1e-3)


def test_quat_low_pass_sign_continuity_and_unit_norm() -> None:
    rng = np.random.default_rng(2)
    aa = rng.normal(size=(24, 3)) * 0.5
    q = axis_angle_to_quat(aa).astype(np.float32)
    lp = QuatLowPass(24, cutoff_hz=4.0)
    for i in range(30):
        out = lp.filter(q if i % 2 == 0 else -q, 1 / FPS)  # same rotation, flipped sign
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(quat_to_axis_angle(out), aa, atol=1e-5)
    # A jump converges to the new pose.
    target = axis_angle_to_quat(aa + 0.3).astype(np.float32)
    for _ in range(120):
        out = lp.filter(target, 1 / FPS)
    np.testing.assert_allclose(quat_to_axis_angle(out), quat_to_axis_angle(target), atol=1e-3)


def test_joint_limits_clamp_and_count() -> None:
    pose = np.zeros((24, 3), np.float32)
    clamped, n = clamp_joint_limits(pose)
    assert int(n) == 0
    np.testing.assert_array_equal(clamped, pose)
    pose[4, 0] = 3.0  # left knee over-bent
    pose[18, 1] = 1.0  # left elbow hyper-extended
    pose[0] = 3.0  # root is unlimited
    clamped, n = clamp_joint_limits(pose)
    assert int(n) == 2
    assert clamped[4, 0] == pytest.approx(JOINT_LIMITS_RAD[4, 0, 1])
    assert clamped[0, 0] == 3.0
    batch = np.stack([pose.reshape(72), np.zeros(72, np.float32)])
    flat, counts = clamp_joint_limits(batch)
    assert flat.shape == (2, 72)
    np.testing.assert_array_equal(counts, [2, 0])
    np.testing.assert_array_equal(flat[0], clamped.reshape(72))
    # In place, on the first 72 values of a 75-value AIST++ frame, as the motion pipeline does.
    frame = np.concatenate([pose.reshape(72), [0.1, 0.9, 0.2]]).astype(np.float32)
    _, n = clamp_joint_limits(frame[:72], out=frame[:72])
    assert int(n) == 2
    np.testing.assert_array_equal(frame[:72], clamped.reshape(72))
    nan_pose = np.full((24, 3), np.nan, np.float32)
    assert int(clamp_joint_limits(nan_pose)[1]) == 0


def test_flame_ranges_cover_every_channel() -> None:
    assert FLAME_RANGES.shape == (flame.FLAME_DIM, 2)
    assert np.all(FLAME_RANGES[:, 0] < FLAME_RANGES[:, 1])


def test_one_euro_rows_equal_per_session_filters_bit_for_bit() -> None:
    """The batched step (face tracking's) against the per-session in-place filter it replaced
    (tests/oracles/one_euro.py): per-row cutoffs, resets, duplicate timestamps, rows joining late."""
    from bridge.filters.one_euro import one_euro_rows
    from tests.oracles.one_euro import OneEuroOracle

    rng = np.random.default_rng(3)
    n, c = 5, 7
    mc = rng.uniform(0.5, 5.0, (n, c)).astype(np.float32)
    beta = rng.uniform(0.0, 20.0, c).astype(np.float32)
    oracles = [OneEuroOracle(c, mc[i], beta, 1.0) for i in range(n)]
    value = np.zeros((n, c), np.float32)
    derivative = np.zeros((n, c), np.float32)
    last_t = np.zeros(n)
    started = np.zeros(n, bool)
    for frame in range(40):
        x = rng.normal(size=(n, c)).astype(np.float32)
        t = frame / 30.0 + rng.uniform(0, 0.004, n)
        if frame == 12:
            t[1] = last_t[1]  # a duplicate frame
        rows = np.arange(n) if frame >= 3 else np.arange(2)  # rows 2.. start late
        if frame == 20:
            started[3] = False  # a reset
            oracles[3].reset()
        v, d, lt = one_euro_rows(
            x[rows], t[rows], value[rows], derivative[rows], last_t[rows], started[rows], mc[rows], beta,
            np.float32(1.0) * np.ones(c, np.float32),
        )  # fmt: skip
        value[rows], derivative[rows], last_t[rows], started[rows] = v, d, lt, True
        for k, i in enumerate(rows):
            np.testing.assert_array_equal(v[k], oracles[i].filter(x[i], float(t[i])))
    f = one_row(OneEuroRows(c, mc[0], beta, 1.0))
    reference = OneEuroOracle(c, mc[0], beta, 1.0)
    for frame in range(10):
        x = rng.normal(size=c).astype(np.float32)
        np.testing.assert_array_equal(f(x, frame / 60.0), reference.filter(x, frame / 60.0))


def test_rows_stepped_by_slot_equal_each_session_alone_bit_for_bit() -> None:
    """Face sessions' rows stepped together by slot (OneEuroRows) against each session's own store
    stepped alone: first samples, duplicate timestamps, a reset, rows that skip a tick."""
    rng = np.random.default_rng(5)
    n = 4
    together = flame_one_euro_rows()
    together.prepare(n, np.arange(n))
    alone = [flame_one_euro_rows() for _ in range(n)]
    apart = [one_row(rows) for rows in alone]
    for frame in range(30):
        rows = [i for i in range(n) if frame >= i and (frame + i) % 7]  # rows start late, skip ticks
        if not rows:
            continue
        x = rng.normal(size=(len(rows), together.n_channels)).astype(np.float32)
        t = np.array([frame / 60.0 if frame != 9 else 8 / 60.0 for _ in rows])  # frame 9 repeats 8's time
        if frame == 15:
            together.reset(np.array([2]))
            alone[2].reset(np.array([0]))
        out = together.step(np.array(rows), x, t)
        for k, i in enumerate(rows):
            np.testing.assert_array_equal(out[k], apart[i](x[k], float(t[k])))


def test_body_aux_rows_equal_per_session_smoothers_bit_for_bit() -> None:
    """The body tracker's region smoothing stepped for a batch by slot (AuxRows) against the per-session
    smoother it replaced (tests/oracles/aux_smoother.py): first frames at t = 0, restarts (a detected
    region), duplicate times, points of no size, rows joining late and skipping frames."""
    from bridge.vision.body_geometry import AuxRows
    from tests.oracles.aux_smoother import AuxSmoother

    rng = np.random.default_rng(11)
    n = 5
    rows = AuxRows()
    leases = [rows.open() for _ in range(n)]
    oracles = [AuxSmoother() for _ in range(n)]
    for frame in range(60):
        live = [i for i in range(n) if frame >= 2 * i and (frame + i) % 5]
        restart = [i for i in live if frame in (2 * i, 25 + i)]
        if restart:
            rows.reset(np.array([leases[i].index for i in restart], np.int64))
            for i in restart:
                oracles[i].reset()
        points = np.cumsum(rng.normal(size=(len(live), 2, 3)) * 20.0, axis=0) + 300.0
        if frame == 30 and live:
            points[0] = points[0, :1]  # both points at one place: no size
        t = np.array([0.0 if frame == 2 * i else frame / 30.0 + 0.003 * i for i in live])
        if frame == 40:
            t[:] = 39 / 30.0 + 0.003 * np.array(live)  # frame 39's times again
        out = rows.step(np.array([leases[i].index for i in live], np.int64), points, t)
        for k, i in enumerate(live):
            np.testing.assert_array_equal(out[k], oracles[i](points[k], float(t[k])))
