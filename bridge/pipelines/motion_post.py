"""Motion post-processing for a whole batch at once: output guard, joint clamp, axis-angle -> quaternion,
low-pass, and, where the model's manifest asks for it (`post_processing: ["foot_plant"]`), planted
feet. One numpy pass per step over every session in the batch, no Python loop per session.

Per-session filter and guard state lives in rows indexed by the session's state slot (the same
`SlotPool` index as its recurrent state), so a batch gathers and scatters it by index. Each rule is
a per-session one applied row-wise (the tests keep those per-session versions as oracles, in
tests/oracles/): a bad output is replaced by the session's last good one, a good one is clamped to
the joint limits and a root speed; the filters are second order with sign continuity. Foot planting
(bridge.rig.foot_plant.FootPlanter) replaces the root translation of the filtered pose: the stance foot
is the lower one (with hysteresis), it stays where it was put down, and the lowest foot contact is on
the floor; each foot touching the floor is pinned by leg IK until it lifts. A model that asks for it is
one whose own root translation slides.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from bridge.choreography.moves import base_pose
from bridge.pipelines.output_guard import (
    ANGLE_MARGIN_RAD,
    GROSS_ROOT_SPEED_M_S,
    MAX_ROOT_SPEED_M_S,
    GuardStats,
)
from bridge.rig import smpl
from bridge.rig.foot_plant import FootPlanter
from bridge.rig.rotations import axis_angle_to_quat
from bridge.rig.smpl import JOINT_LIMIT_ROWS
from bridge.runtime.engine import Engine
from bridge.runtime.manifest import FOOT_PLANT

__all__ = ["BatchPost", "MotionPost", "create_motion_post"]

log = logging.getLogger(__name__)

F32 = npt.NDArray[np.float32]
ANGLES = smpl.NUM_JOINTS * 3
POSE_DIM = ANGLES + 3
_LO, _HI = JOINT_LIMIT_ROWS[:, 0], JOINT_LIMIT_ROWS[:, 1]
_GROSS_LO, _GROSS_HI = _LO - ANGLE_MARGIN_RAD, _HI + ANGLE_MARGIN_RAD  # beyond these an output is bad
# The session option `energy` scales each joint angle's distance from the dance's neutral stance
# (arms down, knees soft: bridge.choreography.moves.base_pose), within the joint limits.
NEUTRAL = base_pose(1).reshape(ANGLES).astype(np.float32)
ENERGY_RANGE = (0.25, 2.0)


class BatchPost(Protocol):
    """Guard and filter rows of every session and the batched step over them (numpy on the host,
    or torch where the engine computes: bridge.pipelines.motion_post_torch)."""

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
    from bridge.pipelines.motion_post_torch import DeviceMotionPost  # torch only where the backend has it

    return DeviceMotionPost(stats, dt, device)


class MotionPost:
    """Rows of guard and filter state, one per slot, and the batched step over them (numpy)."""

    chunk = 512  # numpy releases the GIL inside its loops: large batches go to worker threads

    def __init__(self, stats: GuardStats, dt: float, foot_plant: bool = False) -> None:
        self.stats = stats
        self.dt = dt
        self.foot_plant = foot_plant
        self.planter = FootPlanter(dt) if foot_plant else None  # its state rows are the slots too
        self.capacity = 0
        self._alloc(0)

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
        # Work in slot order: when the batch is a contiguous run of slots (every session of the
        # engine stepping at once, the realtime steady state) the state rows are views, not copies.
        order = np.argsort(slots)
        ordered = slots[order]
        rows: slice | npt.NDArray[np.int64] = ordered
        if len(ordered) and ordered[-1] - ordered[0] + 1 == len(ordered):
            rows = slice(int(ordered[0]), int(ordered[-1]) + 1)
        guarded, held = self._guard(rows, pose[order])
        if energy is not None and (energy != 1.0).any():
            e = energy[order, None]
            scaled = NEUTRAL + e * (guarded[:, :ANGLES] - NEUTRAL)
            guarded[:, :ANGLES] = np.clip(scaled, _LO, _HI)
        joints = axis_angle_to_quat(guarded[:, :ANGLES].reshape(-1, smpl.NUM_JOINTS, 3)).astype(np.float32)
        root = guarded[:, ANGLES:]
        a = alpha[order]
        if (a > 0).all():
            joints, root = self._low_pass(rows, joints, root, a)
        elif (a > 0).any():
            smooth = np.flatnonzero(a > 0)
            joints[smooth], root[smooth] = self._low_pass(
                ordered[smooth], joints[smooth], root[smooth], a[smooth]
            )
        if self.planter is not None:
            joints, root = self.planter.step(rows, joints)
        out_joints, out_root, out_held = np.empty_like(joints), np.empty_like(root), np.empty_like(held)
        out_joints[order], out_root[order], out_held[order] = joints, root, held
        return out_joints, out_root, out_held

    def _guard(self, rows: slice | npt.NDArray[np.int64], pose: F32) -> tuple[F32, npt.NDArray[np.bool_]]:
        x = np.array(pose, dtype=np.float32)
        angles, root = x[:, :ANGLES], x[:, ANGLES:]
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(x).all(axis=1)
            bad |= (angles < _GROSS_LO).any(axis=1) | (angles > _GROSS_HI).any(axis=1)
        last = self.last_good[rows].copy()
        step = root - last[:, ANGLES:]
        distance = np.where(self.has_good[rows], np.linalg.norm(step, axis=1), 0.0)
        bad |= distance > GROSS_ROOT_SPEED_M_S * self.dt
        clamped_angles = np.clip(angles, _LO, _HI)
        clamped = (clamped_angles != angles).any(axis=1)
        angles[:] = clamped_angles
        fast = distance > MAX_ROOT_SPEED_M_S * self.dt
        scale = MAX_ROOT_SPEED_M_S * self.dt / np.where(fast, distance, 1.0)
        root[fast] = last[fast, ANGLES:] + step[fast] * scale[fast, None]
        clamped |= fast
        x[bad] = last[bad]
        good = ~bad
        self.last_good[rows] = np.where(good[:, None], x, last)
        self.has_good[rows] |= good
        self.bad_run[rows] = np.where(bad, self.bad_run[rows] + 1, 0)
        n_bad = int(bad.sum())
        with self.stats._lock:  # one update per batch instead of one lock round per session
            self.stats.outputs += len(x)
            self.stats.held += n_bad
            self.stats.clamped += int((clamped & good).sum())
        return x, bad

    def _low_pass(
        self, rows: slice | npt.NDArray[np.int64], q: F32, root: F32, alpha: F32
    ) -> tuple[F32, F32]:
        started = self.started[rows]
        # Sign continuity: flip q onto the previous output's hemisphere (a new row has none).
        dot = np.einsum("bjk,bjk->bj", q, self.q_out[rows])
        sign = np.where((dot < 0.0) & started[:, None], np.float32(-1.0), np.float32(1.0))
        q = q * sign[..., None]
        qs, rs = self.q_stages[rows], self.r_stages[rows]  # views for a slice, copies for an index
        a = np.where(started, alpha, np.float32(1.0))  # a first sample starts both stages at it
        qs[:, 0] += a[:, None, None] * (q - qs[:, 0])
        qs[:, 1] += a[:, None, None] * (qs[:, 0] - qs[:, 1])
        rs[:, 0] += a[:, None] * (root - rs[:, 0])
        rs[:, 1] += a[:, None] * (rs[:, 0] - rs[:, 1])
        out = qs[:, 1] / np.maximum(np.linalg.norm(qs[:, 1], axis=-1, keepdims=True), np.float32(1e-12))
        self.q_out[rows] = out
        if not isinstance(rows, slice):
            self.q_stages[rows], self.r_stages[rows] = qs, rs
        self.started[rows] = True
        return out, rs[:, 1].copy()
