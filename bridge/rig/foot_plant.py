"""Planted feet for SMPL poses: the root translation that keeps the weight-bearing foot where it was put
down and the lowest foot contact on the floor.

Shared by the choreographer (bridge.choreography.choreographer, whose moves say which leg swings) and
the served motion post-processing (bridge.pipelines.motion_post, where the stance foot is the lower
one, with hysteresis). Vectorised over rows (sessions, or one dancer's frame); the caller keeps the
per-row state: the stance foot, the two plant points and the last root.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridge.rig.smpl import PARENTS, REST_OFFSETS

__all__ = ["FLOOR_Y", "STANCE_HYSTERESIS_M", "feet", "lower_foot", "plant_root"]

F64 = npt.NDArray[np.float64]
_TOES, _ANKLES = (10, 11), (7, 8)
# The two leg chains, walked side by side: hip, knee, ankle (their rotations), then the toe's offset.
_CHAIN = ((1, 4, 7, 10), (2, 5, 8, 11))
_OFFSETS = np.asarray(REST_OFFSETS, np.float64)[np.array(_CHAIN)]  # (2 legs, 4, 3)
assert all(PARENTS[c[0]] == 0 and all(PARENTS[c[k + 1]] == c[k] for k in range(3)) for c in _CHAIN)
STANCE_HYSTERESIS_M = 0.005  # the other foot must be this much lower to take the weight (5 mm: on
# the choreographer's poses 1.5 cm skated 4 % more and 3 cm 13 % more; a change of feet never jumps)


def _matrices(q: F64) -> F64:
    """Unit quaternions (..., 4) xyzw → rotation matrices (..., 3, 3)."""
    x, y, z, w = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
            2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
            2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y),
        ],
        axis=-1,
    ).reshape(*q.shape[:-1], 3, 3)  # fmt: skip


def feet(local_quats: npt.ArrayLike) -> tuple[F64, F64]:
    """Toe positions (B, 2, 3) with the root at the origin, and each foot's contact height (B, 2):
    the lower of its ankle and toe. `local_quats` (B, 24, 4) xyzw; left foot first. Forward
    kinematics of the two leg chains only, both legs in one pass (this runs every served frame)."""
    q = np.asarray(local_quats, np.float64)
    pelvis = _matrices(q[:, 0])[:, None]  # (B, 1, 3, 3)
    legs = _matrices(q[:, np.array(_CHAIN)[:, :3]])  # (B, 2, 3, 3, 3): hip, knee, ankle
    world = np.broadcast_to(pelvis, (*legs.shape[:2], 3, 3))
    pos = np.asarray(REST_OFFSETS[0], np.float64)[:, None] + world @ _OFFSETS[:, 0, :, None]  # the hips
    for k in range(3):
        world = world @ legs[:, :, k]
        pos = pos + world @ _OFFSETS[:, k + 1, :, None]
        if k == 1:
            ankle_y = pos[..., 1, 0]  # after the knee's rotation and the ankle's offset
    toes = pos[..., 0]
    return toes, np.minimum(toes[..., 1], ankle_y)


def _floor() -> float:
    """The lowest contact of the rest pose with the root at the origin: the floor's height."""
    _, contact = feet(np.tile([0.0, 0.0, 0.0, 1.0], (1, 24, 1)))
    return float(contact.min())


FLOOR_Y = _floor()


def lower_foot(
    contact_y: F64, stance: npt.NDArray[np.int64], started: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """The stance foot per row: the lower foot, changing only when the other is lower by
    STANCE_HYSTERESIS_M (so a foot does not flicker between two near-level feet); a row not yet
    started takes the lower foot."""
    lower = np.argmin(contact_y, axis=1)
    rows = np.arange(len(contact_y))
    other_lower = contact_y[rows, 1 - stance] < contact_y[rows, stance] - STANCE_HYSTERESIS_M
    return np.where(~started, lower, np.where(other_lower, 1 - stance, stance)).astype(np.int64)


def plant_root(
    toes: F64,
    contact_y: F64,
    stance: npt.NDArray[np.int64],
    replant: npt.NDArray[np.bool_],
    plant: F64,
    root: F64,
) -> F64:
    """The root translation per row (B, 3) that keeps the stance toe on its plant point, the lowest
    contact at FLOOR_Y. `replant` (B, 2): feet put down now, at the previous root `root` (B, 3) plus
    their toe offset; `plant` (B, 2, 3) is updated in place for them. A foot replanted under the
    stance gives the previous root back: no jump when the weight changes feet."""
    plant[replant] = (root[:, None] + toes)[replant]
    rows = np.arange(len(toes))
    out = plant[rows, stance] - toes[rows, stance]
    out[:, 1] = FLOOR_Y - contact_y.min(axis=1)
    return out
