"""Forward kinematics for the SMPL skeleton: local rotations → joint world positions.

Used for skeleton plots, BVH export and foot/beat metrics, not on the 60 Hz streaming path, so
it loops over the 24 joints once per call but stays vectorised over any batch of frames.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridge.rig.rotations import axis_angle_to_quat, quat_multiply, quat_rotate
from bridge.rig.smpl import PARENTS, REST_OFFSETS

FloatArray = npt.NDArray[np.float64]


def forward_kinematics_quat(
    local_quats: npt.ArrayLike,
    root_translation: npt.ArrayLike | None = None,
    offsets: npt.ArrayLike = REST_OFFSETS,
    parents: tuple[int, ...] = PARENTS,
) -> tuple[FloatArray, FloatArray]:
    """World joint positions ``(..., J, 3)`` and world rotations ``(..., J, 4)`` xyzw.

    ``local_quats`` is ``(..., J, 4)``, each joint's rotation in its parent's frame (joint 0 in
    the world frame). ``root_translation`` ``(..., 3)`` is added to every joint, SMPL-style.
    """
    q = np.asarray(local_quats, dtype=np.float64)
    off = np.asarray(offsets, dtype=np.float64)
    lead = q.shape[:-2]
    n = q.shape[-2]
    world_pos = np.empty((*lead, n, 3), dtype=np.float64)
    world_rot = np.empty((*lead, n, 4), dtype=np.float64)
    world_rot[..., 0, :] = q[..., 0, :]
    world_pos[..., 0, :] = off[0]
    for j in range(1, n):
        p = parents[j]
        world_rot[..., j, :] = quat_multiply(world_rot[..., p, :], q[..., j, :])
        world_pos[..., j, :] = world_pos[..., p, :] + quat_rotate(world_rot[..., p, :], off[j])
    if root_translation is not None:
        world_pos += np.asarray(root_translation, dtype=np.float64)[..., None, :]
    return world_pos, world_rot


def forward_kinematics(
    axis_angle: npt.ArrayLike,
    root_translation: npt.ArrayLike | None = None,
    offsets: npt.ArrayLike = REST_OFFSETS,
    parents: tuple[int, ...] = PARENTS,
) -> FloatArray:
    """World joint positions ``(..., J, 3)`` from local axis-angle ``(..., J, 3)`` or ``(..., J*3)``."""
    aa = np.asarray(axis_angle, dtype=np.float64)
    n = len(parents)
    if aa.shape[-1] != 3:
        aa = aa.reshape(*aa.shape[:-1], n, 3)
    positions, _ = forward_kinematics_quat(axis_angle_to_quat(aa), root_translation, offsets, parents)
    return positions
