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

from bridge.rig.forward_kinematics import forward_kinematics_quat
from bridge.rig.smpl import PARENTS, REST_OFFSETS

__all__ = ["FLOOR_Y", "STANCE_HYSTERESIS_M", "feet", "lower_foot", "plant_root"]

F64 = npt.NDArray[np.float64]
_TOES, _ANKLES = (10, 11), (7, 8)
# The leg chains only (pelvis, hips, knees, ankles, toes): planting needs nothing above the pelvis.
_LEGS = (0, 1, 2, 4, 5, 7, 8, 10, 11)
_LEG_PARENTS = tuple(-1 if PARENTS[j] < 0 else _LEGS.index(PARENTS[j]) for j in _LEGS)
_LEG_OFFSETS = np.asarray(REST_OFFSETS, np.float64)[list(_LEGS)]
_LEG_TOES = tuple(_LEGS.index(j) for j in _TOES)
_LEG_ANKLES = tuple(_LEGS.index(j) for j in _ANKLES)
STANCE_HYSTERESIS_M = 0.005  # the other foot must be this much lower to take the weight (5 mm: on
# the choreographer's poses 1.5 cm skated 4 % more and 3 cm 13 % more; a change of feet never jumps)


def feet(local_quats: npt.ArrayLike) -> tuple[F64, F64]:
    """Toe positions (B, 2, 3) with the root at the origin, and each foot's contact height (B, 2):
    the lower of its ankle and toe. `local_quats` (B, 24, 4) xyzw; left foot first."""
    q = np.asarray(local_quats, np.float64)[:, list(_LEGS)]
    pos, _ = forward_kinematics_quat(q, None, _LEG_OFFSETS, _LEG_PARENTS)
    toes = pos[:, list(_LEG_TOES)]
    return toes, np.minimum(toes[..., 1], pos[:, list(_LEG_ANKLES), 1])


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
