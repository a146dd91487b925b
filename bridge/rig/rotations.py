"""Vectorised rotation conversions on the wire convention: quaternions are (x, y, z, w).

Every function works on arrays of any leading shape (``(..., 3)`` or ``(..., 4)``) so a whole
skeleton, or a batch of skeletons, converts in one call with no Python loop over joints.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.floating]

# Below this angle (radians) sin(θ/2)/θ is replaced by its Taylor series, which is exact to
# float64 rounding there and avoids 0/0 at the identity rotation.
SMALL_ANGLE = 1e-4


def normalize_quat(q: npt.ArrayLike) -> FloatArray:
    """Unit quaternions (x, y, z, w); a zero quaternion becomes the identity."""
    qa = np.asarray(q, dtype=np.float64)
    norm = np.linalg.norm(qa, axis=-1, keepdims=True)
    out = np.where(norm > 1e-12, qa / np.maximum(norm, 1e-12), 0.0)
    out[..., 3] = np.where(norm[..., 0] > 1e-12, out[..., 3], 1.0)
    return out


def axis_angle_to_quat(aa: npt.ArrayLike) -> FloatArray:
    """Axis-angle ``(..., 3)`` (direction = axis, norm = angle in radians) to quaternions ``(..., 4)``."""
    v = np.asarray(aa, dtype=np.float64)
    angle = np.linalg.norm(v, axis=-1, keepdims=True)
    half = 0.5 * angle
    small = angle < SMALL_ANGLE
    # sin(θ/2)/θ ≈ 1/2 - θ²/48 near zero.
    scale = np.where(small, 0.5 - angle * angle / 48.0, np.sin(half) / np.where(small, 1.0, angle))
    return np.concatenate([v * scale, np.cos(half)], axis=-1)


def quat_to_axis_angle(q: npt.ArrayLike) -> FloatArray:
    """Quaternions ``(..., 4)`` xyzw to axis-angle ``(..., 3)`` with angle in [0, π].

    q and -q are the same rotation, so w is made non-negative first; atan2 of the vector norm
    and w stays accurate near 0 and π, where acos(w) would lose precision.
    """
    qa = normalize_quat(q)
    qa = np.where(qa[..., 3:4] < 0.0, -qa, qa)
    xyz = qa[..., :3]
    s = np.linalg.norm(xyz, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, qa[..., 3:4])
    small = s < 0.5 * SMALL_ANGLE
    # θ/sin(θ/2) ≈ 2 + θ²/12 near zero (w ≈ 1 there).
    scale = np.where(small, 2.0 + angle * angle / 12.0, angle / np.where(small, 1.0, s))
    out: FloatArray = xyz * scale
    return out


def quat_multiply(a: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    """Hamilton product a ⊗ b (apply b first, then a), xyzw, broadcasting over leading axes."""
    qa = np.asarray(a, dtype=np.float64)
    qb = np.asarray(b, dtype=np.float64)
    ax, ay, az, aw = qa[..., 0], qa[..., 1], qa[..., 2], qa[..., 3]
    bx, by, bz, bw = qb[..., 0], qb[..., 1], qb[..., 2], qb[..., 3]
    return np.stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ],
        axis=-1,
    )


def quat_conjugate(q: npt.ArrayLike) -> FloatArray:
    """Inverse of a unit quaternion."""
    qa = np.array(q, dtype=np.float64)
    qa[..., :3] *= -1.0
    return qa


def quat_to_matrix(q: npt.ArrayLike) -> FloatArray:
    """Quaternions ``(..., 4)`` xyzw to rotation matrices ``(..., 3, 3)`` acting on column vectors."""
    qa = normalize_quat(q)
    x, y, z, w = qa[..., 0], qa[..., 1], qa[..., 2], qa[..., 3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    m = np.empty((*qa.shape[:-1], 3, 3), dtype=np.float64)
    m[..., 0, 0] = 1.0 - 2.0 * (yy + zz)
    m[..., 0, 1] = 2.0 * (xy - wz)
    m[..., 0, 2] = 2.0 * (xz + wy)
    m[..., 1, 0] = 2.0 * (xy + wz)
    m[..., 1, 1] = 1.0 - 2.0 * (xx + zz)
    m[..., 1, 2] = 2.0 * (yz - wx)
    m[..., 2, 0] = 2.0 * (xz - wy)
    m[..., 2, 1] = 2.0 * (yz + wx)
    m[..., 2, 2] = 1.0 - 2.0 * (xx + yy)
    return m


def matrix_to_quat(m: npt.ArrayLike) -> FloatArray:
    """Rotation matrices ``(..., 3, 3)`` to unit quaternions ``(..., 4)`` xyzw (Shepperd's method:
    each one from its largest of w², x², y², z², so no division by a small component)."""
    ma = np.asarray(m, dtype=np.float64)
    m00, m11, m22 = ma[..., 0, 0], ma[..., 1, 1], ma[..., 2, 2]
    # 4·(w², x², y², z²) - 1 up to a common term: pick the largest per matrix.
    diag = np.stack([m00 + m11 + m22, m00 - m11 - m22, m11 - m00 - m22, m22 - m00 - m11], -1)
    pick = np.argmax(diag, -1)
    r = np.sqrt(np.maximum(1.0 + np.take_along_axis(diag, pick[..., None], -1)[..., 0], 1e-300))
    zyx = ma[..., 2, 1] - ma[..., 1, 2], ma[..., 0, 2] - ma[..., 2, 0], ma[..., 1, 0] - ma[..., 0, 1]
    sym = ma[..., 0, 1] + ma[..., 1, 0], ma[..., 0, 2] + ma[..., 2, 0], ma[..., 1, 2] + ma[..., 2, 1]
    candidates = np.stack(
        [
            np.stack([zyx[0], zyx[1], zyx[2], r * r], -1),  # from w
            np.stack([r * r, sym[0], sym[1], zyx[0]], -1),  # from x
            np.stack([sym[0], r * r, sym[2], zyx[1]], -1),  # from y
            np.stack([sym[1], sym[2], r * r, zyx[2]], -1),  # from z
        ],
        -2,
    )
    q = np.take_along_axis(candidates, pick[..., None, None], -2)[..., 0, :] / (2.0 * r[..., None])
    return normalize_quat(q)


def axis_angle_to_matrix(aa: npt.ArrayLike) -> FloatArray:
    """Axis-angle ``(..., 3)`` to rotation matrices ``(..., 3, 3)``."""
    return quat_to_matrix(axis_angle_to_quat(aa))


def quat_rotate(q: npt.ArrayLike, v: npt.ArrayLike) -> FloatArray:
    """Rotate vectors ``(..., 3)`` by unit quaternions ``(..., 4)`` (broadcasting)."""
    qa = np.asarray(q, dtype=np.float64)
    va = np.asarray(v, dtype=np.float64)
    u = qa[..., :3]
    w = qa[..., 3:4]
    # v' = v + 2w(u×v) + 2u×(u×v): two cross products, cheaper than building matrices.
    t = 2.0 * np.cross(u, va)
    return va + w * t + np.cross(u, t)


_AXES = {"x": 0, "y": 1, "z": 2}
_GIMBAL = 1.0 - 1e-9  # |sin(middle angle)| beyond which the first and last axes coincide


def quat_to_euler(q: npt.ArrayLike, order: str) -> FloatArray:
    """Quaternions ``(..., 4)`` xyzw -> intrinsic Tait-Bryan angles ``(..., 3)`` (a, b, c) about `order`.

    An order such as "zxy" means R = Rz(a) @ Rx(b) @ Ry(c) acting on column vectors: rotate about Z
    first in the parent's frame, then about the new X, then the new Y (BVH's reading of "Zrotation
    Xrotation Yrotation"). Right-handed rotations, radians; the middle angle is in [-pi/2, pi/2].
    """
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
