"""Clamp SMPL axis-angle poses against per-joint, per-component limits (bridge.rig.smpl).

Per-component clamping of axis-angle is a heuristic (the components are not Euler angles); it
catches a generator's wild outputs, it does not make a pose anatomically exact.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridge.rig.smpl import JOINT_LIMITS_RAD, NUM_JOINTS

# float32 lo/hi planes, converted once rather than per frame.
_LO: npt.NDArray[np.float32] = np.ascontiguousarray(JOINT_LIMITS_RAD[..., 0], np.float32)
_HI: npt.NDArray[np.float32] = np.ascontiguousarray(JOINT_LIMITS_RAD[..., 1], np.float32)


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
