"""Motion post-processing for a whole batch at once: output guard, joint clamp, axis-angle -> quaternion,
low-pass, and, where the model's manifest asks for it (`post_processing: ["foot_plant"]`), planted
feet. One compiled loop over the sessions of a batch per step (numba, bridge.motion.compiled: it runs
without the GIL, so the I/O thread runs beside it; numpy spent ~0.2 ms a call on its own overhead
even for one row).

Per-session filter and guard state lives in rows indexed by the session's state slot (the same
`SlotPool` index as its recurrent state), so a batch gathers and scatters it by index. Each rule is
a per-session one applied row-wise (the tests keep those per-session versions as oracles, in
tests/oracles/): a bad output is replaced by the session's last good one, a good one is clamped to
the joint limits and a root speed; the filters are second order with sign continuity. Foot planting
(bridge.motion.foot_plant.FootPlanter) replaces the root translation of the filtered pose: the stance foot
is the lower one (with hysteresis), it stays where it was put down, and the lowest foot contact is on
the floor; each foot touching the floor is pinned by leg IK until it lifts. A model that asks for it is
one whose own root translation slides.
"""

from __future__ import annotations

import logging
import math
import sys
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from bridge.filters.output_guard import (
    ANGLE_MARGIN_RAD,
    GROSS_ROOT_SPEED_M_S,
    MAX_ROOT_SPEED_M_S,
    GuardStats,
)
from bridge.motion import foot_plant
from bridge.motion.compiled import jit, uncached
from bridge.motion.foot_plant import FootPlanter
from bridge.motion.moves import base_pose
from bridge.rig import smpl
from bridge.rig.rotations import SMALL_ANGLE
from bridge.rig.smpl import JOINT_LIMIT_ROWS
from bridge.runtime.engine import Engine
from bridge.runtime.manifest import FOOT_PLANT

__all__ = ["BatchPost", "MotionPost", "compile_all", "create_motion_post"]

log = logging.getLogger(__name__)

F32 = npt.NDArray[np.float32]
ANGLES = smpl.NUM_JOINTS * 3
POSE_DIM = ANGLES + 3
_LO, _HI = np.ascontiguousarray(JOINT_LIMIT_ROWS.T)  # contiguous: numba caches code with constant arrays
_GROSS_LO, _GROSS_HI = _LO - ANGLE_MARGIN_RAD, _HI + ANGLE_MARGIN_RAD  # beyond these an output is bad
# The session option `energy` scales each joint angle's distance from the dance's neutral stance
# (arms down, knees soft: bridge.motion.moves.base_pose), within the joint limits.
NEUTRAL = base_pose(1).reshape(ANGLES).astype(np.float32)
ENERGY_RANGE = (0.25, 2.0)


class BatchPost(Protocol):
    """Guard and filter rows of every session and the batched step over them (numpy on the host,
    or torch where the engine computes: bridge.motion.post_torch)."""

    stats: GuardStats
    chunk: int  # rows per task when a large batch is split over worker threads

    def prepare(self, size: int, fresh: npt.NDArray[np.int64]) -> None: ...

    def previous(self, slots: npt.NDArray[np.int64]) -> F32: ...

    def restart_due(self, slots: npt.NDArray[np.int64], after: int) -> npt.NDArray[np.bool_]: ...

    def step(
        self, slots: npt.NDArray[np.int64], pose: F32, alpha: F32, energy: F32 | None = None
    ) -> tuple[F32, F32, npt.NDArray[np.bool_]]: ...


@runtime_checkable
class DevicePostBackend(Protocol):
    """A backend that offers a torch device for post-processing where it computes (the torch backend
    with `device_post=True`); None where it does not."""

    @property
    def post_device(self) -> Any: ...


@runtime_checkable
class PlantingBackend(Protocol):
    """A backend whose motion already has planted feet (the choreographer backend): the manifest's
    foot_plant stage is for the model's own output, not for it."""

    plants_feet: bool


def create_motion_post(engine: Engine, stats: GuardStats, dt: float) -> BatchPost:
    backend = engine.backend
    device = backend.post_device if isinstance(backend, DevicePostBackend) else None
    foot_plant = FOOT_PLANT in engine.manifest.post_processing
    foot_plant &= not (isinstance(backend, PlantingBackend) and backend.plants_feet)
    if device is not None and foot_plant:
        # The device post has no foot planting: this model's post-processing stays on the host
        # rather than serving different motion (docs/tensorrt.md, device_post).
        log.warning(
            "%s: device_post skipped: its manifest asks for foot_plant, which only the host "
            "post-processing does; motion post-processing runs on the host",
            engine.manifest.name,
        )
        device = None
    if device is None:
        return MotionPost(stats, dt, foot_plant)
    from bridge.motion.post_torch import DeviceMotionPost  # torch only where the backend has it

    return DeviceMotionPost(stats, dt, device)


class MotionPost:
    """Rows of guard and filter state, one per slot, and the batched step over them (numpy)."""

    chunk = 512  # the compiled loops run without the GIL: large batches go to worker threads

    def __init__(self, stats: GuardStats, dt: float, foot_plant: bool = False) -> None:
        self.stats = stats
        self.dt = dt
        self.foot_plant = foot_plant
        self.planter = FootPlanter(dt) if foot_plant else None  # its state rows are the slots too
        self.capacity = 0
        self._alloc(0)
        if uncached(sys.modules[__name__], sys.modules[FootPlanter.__module__]):
            log.info(
                "compiling the motion post-processing kernels (numba; this machine's first run only, "
                "15-40 s on two cores, then cached)"
            )
        none = np.zeros(0, np.int64)
        self.step(
            none, np.zeros((0, POSE_DIM), np.float32), np.zeros(0, np.float32)
        )  # compile (or load) it now

    def _alloc(self, capacity: int) -> None:
        j = smpl.NUM_JOINTS
        old = vars(self).copy()
        self.last_good = np.zeros((capacity, POSE_DIM), np.float32)  # also the model's pose.previous
        self.has_good = np.zeros(capacity, bool)
        self.bad_run = np.zeros(capacity, np.int64)  # consecutive bad outputs
        self.started = np.zeros(capacity, bool)
        self.q_stages = np.zeros((capacity, 2, j, 4), np.float32)
        self.q_out = np.zeros((capacity, j, 4), np.float32)
        self.r_stages = np.zeros((capacity, 2, 3), np.float32)
        for name in ("last_good", "has_good", "bad_run", "started", "q_stages", "q_out", "r_stages"):
            if name in old:
                getattr(self, name)[: self.capacity] = old[name]
        if self.planter is not None:
            self.planter.grow(capacity)
        self.capacity = capacity

    def prepare(self, size: int, fresh: npt.NDArray[np.int64]) -> None:
        """Grow to `size` rows and clear the rows of new (or restarted) sessions."""
        if size > self.capacity:
            self._alloc(max(size, 2 * self.capacity, 16))
        self.last_good[fresh] = 0.0
        self.has_good[fresh] = False
        self.bad_run[fresh] = 0
        self.started[fresh] = False
        if self.planter is not None:
            self.planter.reset(fresh)

    def previous(self, slots: npt.NDArray[np.int64]) -> F32:
        """The last good pose of each slot: the model's `pose.previous`."""
        return self.last_good[slots]

    def restart_due(self, slots: npt.NDArray[np.int64], after: int) -> npt.NDArray[np.bool_]:
        """Which rows have had `after` bad outputs in a row (their session needs a hot restart)."""
        return self.bad_run[slots] >= after

    def step(
        self, slots: npt.NDArray[np.int64], pose: F32, alpha: F32, energy: F32 | None = None
    ) -> tuple[F32, F32, npt.NDArray[np.bool_]]:
        """Post-process one model output per session: `pose` (B, 75) raw, `alpha` (B,) low-pass
        factors (0: no smoothing), `energy` (B,) amplitude around the neutral stance (None: all 1).
        Returns joint quaternions (B, 24, 4), root (B, 3) and which rows were held (bad). Updates
        the rows of `slots`; the model's pose.previous stays its own (unscaled) output."""
        order = np.argsort(slots)  # slot order: the state rows are read and written in sequence
        rows = np.asarray(slots[order], np.int64)
        n = len(rows)
        joints = np.empty((n, smpl.NUM_JOINTS, 4), np.float32)
        root = np.empty((n, 3), np.float32)
        held = np.empty(n, bool)
        scale = np.ones(n, np.float32) if energy is None else np.asarray(energy[order], np.float32)
        bad, clamped = _post_rows(
            rows, np.asarray(pose[order], np.float32), np.asarray(alpha[order], np.float32), scale,
            self.dt, self.last_good, self.has_good, self.bad_run, self.started, self.q_stages,
            self.q_out, self.r_stages, joints, root, held,
        )  # fmt: skip
        with self.stats._lock:  # one update per batch instead of one lock round per session
            self.stats.outputs += n
            self.stats.held += bad
            self.stats.clamped += clamped
        if self.planter is not None:
            joints, root = self.planter.step(rows, joints)
        out_joints, out_root, out_held = np.empty_like(joints), np.empty_like(root), np.empty_like(held)
        out_joints[order], out_root[order], out_held[order] = joints, root, held
        return out_joints, out_root, out_held


@jit
def _post_rows(
    rows: npt.NDArray[np.int64],
    pose: F32,
    alpha: F32,
    energy: F32,
    dt: float,
    last_good: F32,
    has_good: npt.NDArray[np.bool_],
    bad_run: npt.NDArray[np.int64],
    started: npt.NDArray[np.bool_],
    q_stages: F32,
    q_out: F32,
    r_stages: F32,
    joints: F32,
    root: F32,
    held: npt.NDArray[np.bool_],
) -> tuple[int, int]:
    """MotionPost.step's rules for each row b of a batch, state row rows[b]: the guard (a non-finite
    or grossly out-of-range output, or a root jump, is bad and replaced by the last good one; a good
    one is clamped to the joint limits and the root speed), the energy scale, axis-angle to
    quaternions, and, where alpha[b] > 0, the second-order low-pass with sign continuity. Writes
    `joints`, `root`, `held`; returns how many rows were bad and how many good ones were clamped.
    float32 as the numpy rules it replaced (the tests' oracles check it within 1e-5)."""
    gross, limit = np.float32(GROSS_ROOT_SPEED_M_S * dt), np.float32(MAX_ROOT_SPEED_M_S * dt)
    x = np.empty(POSE_DIM, np.float32)
    n_bad = n_clamped = 0
    for b in range(len(rows)):
        r = rows[b]
        bad = False
        for k in range(POSE_DIM):
            x[k] = pose[b, k]
            if not np.isfinite(x[k]) or (k < ANGLES and not _GROSS_LO[k] <= x[k] <= _GROSS_HI[k]):
                bad = True
        distance = np.float32(0.0)
        if has_good[r]:
            squares = np.float32(0.0)
            for k in range(ANGLES, POSE_DIM):
                squares += (x[k] - last_good[r, k]) ** 2
            distance = np.sqrt(squares)
        if distance > gross:
            bad = True
        clamped = False
        for k in range(ANGLES):
            limited = min(max(x[k], _LO[k]), _HI[k])
            if limited != x[k]:
                clamped = True
            x[k] = limited
        if distance > limit:  # the root moves at the speed limit towards where the model put it
            shrink = limit / distance
            for k in range(ANGLES, POSE_DIM):
                x[k] = last_good[r, k] + (x[k] - last_good[r, k]) * shrink
            clamped = True
        if bad:
            x[:] = last_good[r]
            bad_run[r] += 1
            n_bad += 1
        else:
            last_good[r] = x
            has_good[r] = True
            bad_run[r] = 0
            n_clamped += clamped
        held[b] = bad
        e = energy[b]
        if e != 1.0:  # around the neutral stance, within the limits; pose.previous stays unscaled
            for k in range(ANGLES):
                x[k] = min(max(NEUTRAL[k] + e * (x[k] - NEUTRAL[k]), _LO[k]), _HI[k])
        for j in range(smpl.NUM_JOINTS):  # bridge.rig.rotations.axis_angle_to_quat, in float64
            vx, vy, vz = np.float64(x[3 * j]), np.float64(x[3 * j + 1]), np.float64(x[3 * j + 2])
            angle = math.sqrt(vx * vx + vy * vy + vz * vz)
            # sin(θ/2)/θ ≈ 1/2 - θ²/48 near zero.
            sine = 0.5 - angle * angle / 48.0 if angle < SMALL_ANGLE else math.sin(0.5 * angle) / angle
            joints[b, j, 0], joints[b, j, 1], joints[b, j, 2] = vx * sine, vy * sine, vz * sine
            joints[b, j, 3] = math.cos(0.5 * angle)
        root[b] = x[ANGLES:]
        if alpha[b] > 0:
            _low_pass(joints[b], root[b], alpha[b], started[r], q_stages[r], q_out[r], r_stages[r])
            started[r] = True
    return n_bad, n_clamped


@jit
def _low_pass(
    q: F32, root: F32, alpha: float, started: bool, q_stages: F32, q_out: F32, r_stages: F32
) -> None:
    """One row's second-order low-pass, in place on `q` (24, 4) and `root` (3,): each quaternion
    first flipped onto the previous output's hemisphere; a row not yet started starts both stages
    at its sample."""
    a = alpha if started else np.float32(1.0)
    for j in range(len(q)):
        dot = np.float32(0.0)
        for k in range(4):
            dot += q[j, k] * q_out[j, k]
        sign = np.float32(-1.0) if dot < 0 and started else np.float32(1.0)
        squares = np.float32(0.0)
        for k in range(4):
            q_stages[0, j, k] += a * (sign * q[j, k] - q_stages[0, j, k])
            q_stages[1, j, k] += a * (q_stages[0, j, k] - q_stages[1, j, k])
            squares += q_stages[1, j, k] ** 2
        norm = max(np.sqrt(squares), np.float32(1e-12))
        for k in range(4):
            q[j, k] = q_out[j, k] = q_stages[1, j, k] / norm
    for k in range(3):
        r_stages[0, k] += a * (root[k] - r_stages[0, k])
        r_stages[1, k] += a * (r_stages[0, k] - r_stages[1, k])
        root[k] = r_stages[1, k]


def compile_all() -> None:
    """Compile (or load from the cache) the motion post-processing's kernels, foot planting's too:
    what scripts/install.sh runs."""
    foot_plant.compile_all()
    MotionPost(GuardStats(), 1 / 60, foot_plant=True)
