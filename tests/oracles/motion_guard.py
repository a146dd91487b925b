"""One session's motion output guard, frame by frame: the oracle for the batched guard in
bridge.motion.post (same limits, margins and speeds, per-component joint clamp)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from bridge.filters.output_guard import (
    ANGLE_MARGIN_RAD,
    GROSS_ROOT_SPEED_M_S,
    MAX_ROOT_SPEED_M_S,
    RESTART_AFTER,
    GuardStats,
)
from bridge.rig.smpl import JOINT_LIMIT_ROWS, JOINT_LIMITS_RAD, NUM_JOINTS

# float32 lo/hi planes, converted once rather than per frame.
_LO: npt.NDArray[np.float32] = np.ascontiguousarray(JOINT_LIMITS_RAD[..., 0], np.float32)
_HI: npt.NDArray[np.float32] = np.ascontiguousarray(JOINT_LIMITS_RAD[..., 1], np.float32)
log = logging.getLogger(__name__)


def clamp_joint_limits(
    pose: npt.ArrayLike, out: npt.NDArray[np.float32] | None = None
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """Clamp ``(..., 24, 3)`` or flat ``(..., 72)`` axis-angle (radians) to the SMPL joint limits
    (``bridge.rig.smpl.JOINT_LIMITS_RAD``).

    Returns the clamped pose (same shape as the input, float32; written into ``out`` when given)
    and the number of joints with at least one clamped component, one count per frame (a 0-d
    array for a single frame). NaN components are left as they are (the caller's guard owns them).
    """
    p = np.asarray(pose, dtype=np.float32)
    flat = p.shape[-1] == NUM_JOINTS * 3
    joints = p.reshape(*p.shape[:-1], NUM_JOINTS, 3) if flat else p
    if joints.shape[-2:] != (NUM_JOINTS, 3):
        raise ValueError(f"expected (..., 24, 3) or (..., 72) axis-angle, got {p.shape}")
    if out is None:
        out = np.empty(p.shape, np.float32)
    # Counted before clipping so ``out`` may alias ``pose``; NaN compares False and is not counted.
    changed = np.any((joints < _LO) | (joints > _HI), axis=-1)
    np.clip(joints, _LO, _HI, out=out.reshape(joints.shape))
    return out, np.count_nonzero(changed, axis=-1).astype(np.int64)


class OutputGuard:
    """Per-session guard state: last good output, consecutive bad count, how to reopen the session."""

    def __init__(
        self, stats: GuardStats, reopen: Callable[[], object], size: int, restart_after: int = RESTART_AFTER
    ) -> None:
        self.stats = stats
        self.restart_after = restart_after
        self.consecutive_bad = 0
        self._reopen = reopen
        self._last_good = np.zeros(size, np.float32)
        self._has_good = False

    def _accept(self, out: npt.NDArray[np.float32], clamped: bool) -> npt.NDArray[np.float32]:
        self.stats.record(clamped, held=False)
        self.consecutive_bad = 0
        self._last_good[:] = out
        self._has_good = True
        return out

    def _hold(self) -> npt.NDArray[np.float32]:
        self.stats.record(clamped=False, held=True)
        self.consecutive_bad += 1
        return self._last_good.copy()

    def restart_if_due(self, state: object) -> bool:
        """Rebuild `state` in place (the scheduler and server hold references to it) once it is due."""
        if self.consecutive_bad < self.restart_after:
            return False
        fresh = self._reopen()
        vars(state).update(vars(fresh))  # the fresh state brings a fresh guard: the count starts over
        self.stats.count_restart()
        log.warning("hot restart of a session after %d consecutive bad outputs", self.consecutive_bad)
        return True


class MotionOutputGuard(OutputGuard):
    """SMPL pose (24 x axis-angle + root translation) against joint limits and root speed."""

    def __init__(
        self, stats: GuardStats, reopen: Callable[[], object], restart_after: int = RESTART_AFTER
    ) -> None:
        super().__init__(stats, reopen, NUM_JOINTS * 3 + 3, restart_after)

    def apply(self, pose: npt.ArrayLike, dt: float) -> npt.NDArray[np.float32]:
        x = np.array(pose, dtype=np.float32)
        angles, root = x[: NUM_JOINTS * 3], x[NUM_JOINTS * 3 :]
        if (
            not np.isfinite(x).all()
            or np.any(angles < JOINT_LIMIT_ROWS[:, 0] - ANGLE_MARGIN_RAD)
            or np.any(angles > JOINT_LIMIT_ROWS[:, 1] + ANGLE_MARGIN_RAD)
        ):
            return self._hold()
        # Speed is judged against the last good root only: the first output may start anywhere.
        step = root - self._last_good[NUM_JOINTS * 3 :]
        distance = float(np.linalg.norm(step)) if self._has_good else 0.0
        if distance > GROSS_ROOT_SPEED_M_S * dt:
            return self._hold()
        _, joints_clamped = clamp_joint_limits(angles, out=angles)
        clamped = bool(joints_clamped)
        if distance > MAX_ROOT_SPEED_M_S * dt:
            root[:] = self._last_good[NUM_JOINTS * 3 :] + step * (MAX_ROOT_SPEED_M_S * dt / distance)
            clamped = True
        return self._accept(x, clamped)
