"""Quaternion -> intrinsic Tait-Bryan angles, for outputs that speak Euler (BVH, Live Link Face).

bridge.rig.rotations has no Euler decomposition; this is the one the outputs share. An order such
as "zxy" means R = Rz(a) @ Rx(b) @ Ry(c) acting on column vectors: rotate about Z first in the
parent's frame, then about the new X, then the new Y (BVH's reading of "Zrotation Xrotation
Yrotation"). Right-handed rotations, radians; the middle angle is in [-pi/2, pi/2].
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridge.rig.rotations import quat_to_matrix

FloatArray = npt.NDArray[np.float64]

_AXES = {"x": 0, "y": 1, "z": 2}
_GIMBAL = 1.0 - 1e-9  # |sin(middle angle)| beyond which the first and last axes coincide


def quat_to_euler(q: npt.ArrayLike, order: str) -> FloatArray:
    """Quaternions ``(..., 4)`` xyzw -> angles ``(..., 3)`` (a, b, c) about the axes of `order`."""
    if len(order) != 3 or set(order) - set(_AXES) or len(set(order)) != 3:
        raise ValueError(f"order must be a permutation of 'xyz', got '{order}'")
    i, j, k = (_AXES[a] for a in order)
    # Even permutations of xyz (xyz, yzx, zxy) and odd ones (xzy, yxz, zyx) differ only in signs.
    s = 1.0 if (j - i) % 3 == 1 else -1.0
    r = quat_to_matrix(q)
    sin_b = np.clip(s * r[..., i, k], -1.0, 1.0)
    b = np.arcsin(sin_b)
    a = np.arctan2(-s * r[..., j, k], r[..., k, k])
    c = np.arctan2(-s * r[..., i, j], r[..., i, i])
    # At gimbal lock only a + c (or a - c) is defined: put it all in `a`, c = 0.
    lock = np.abs(sin_b) > _GIMBAL
    a = np.where(lock, np.arctan2(s * r[..., k, j], r[..., j, j]), a)
    c = np.where(lock, 0.0, c)
    return np.stack([a, b, c], axis=-1)
