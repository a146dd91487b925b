"""Planted feet for SMPL poses: the root translation that keeps the weight-bearing foot where it was put
down and the lowest foot contact on the floor, and (served) both feet pinned while they touch the floor.

Shared by the choreographer (bridge.choreography.choreographer, whose moves say which leg swings: it uses
`feet` and `plant_root`) and the served motion post-processing (bridge.pipelines.motion_post:
`FootPlanter`, where the stance foot is the lower one, with hysteresis, and each foot in contact is
pinned by two-bone leg IK). Vectorised over rows (sessions, or one dancer's frame); per-row state is
the caller's (the choreographer) or the planter's own rows (the served post).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from bridge.rig.rotations import quat_multiply
from bridge.rig.smpl import PARENTS, REST_OFFSETS

__all__ = ["FLOOR_Y", "STANCE_HYSTERESIS_M", "FootPlanter", "feet", "lower_foot", "plant_root"]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
Rows = slice | npt.NDArray[np.int64]
# The two leg chains, walked side by side: hip, knee, ankle (their rotations), then the toe's offset.
_CHAIN = ((1, 4, 7, 10), (2, 5, 8, 11))
_LEG_JOINTS = np.array([0, *_CHAIN[0][:3], *_CHAIN[1][:3]])  # the rotations the legs' kinematics read
_PELVIS = np.asarray(REST_OFFSETS[0], np.float64)
_IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])
_OFFSETS = np.asarray(REST_OFFSETS, np.float64)[np.array(_CHAIN)]  # (2 legs, 4, 3)
_THIGH, _SHIN = np.linalg.norm(_OFFSETS[:, 1], axis=-1), np.linalg.norm(_OFFSETS[:, 2], axis=-1)
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


def _apply(m: F64, v: F64) -> F64:
    """Rotation matrices (..., 3, 3) times vectors (..., 3), column by column (faster than matmul
    or einsum on stacks of 3x3)."""
    out: F64 = m[..., 0] * v[..., None, 0] + m[..., 1] * v[..., None, 1] + m[..., 2] * v[..., None, 2]
    return out


def _legs(q: F64) -> tuple[tuple[F64, F64, F64, F64], tuple[F64, F64, F64], F64]:
    """Forward kinematics of the two leg chains, root at the origin. `q` (B, 7, 4): the pelvis, then
    each leg's hip, knee and ankle (`_LEG_JOINTS`). Returns the positions (B, 2, 3) of hip, knee,
    ankle and toe, the world rotations (B, 2, 3, 3) of the pelvis, thigh and shin, and each foot's
    contact height (B, 2): the lower of its ankle and toe. This runs every served frame: two stacked
    3x3 products per leg, the rest matrix-vector."""
    m = _matrices(q)
    pelvis, local = m[:, :1], m[:, 1:].reshape(len(q), 2, 3, 3, 3)
    thigh = pelvis @ local[:, :, 0]
    shin = thigh @ local[:, :, 1]
    hip = _PELVIS + _apply(pelvis, _OFFSETS[:, 0])
    knee = hip + _apply(thigh, _OFFSETS[:, 1])
    ankle = knee + _apply(shin, _OFFSETS[:, 2])
    toe = ankle + _apply(shin, _apply(local[:, :, 2], _OFFSETS[:, 3]))
    frames = (np.broadcast_to(pelvis, thigh.shape), thigh, shin)
    return (hip, knee, ankle, toe), frames, np.minimum(toe[..., 1], ankle[..., 1])


def feet(local_quats: npt.ArrayLike) -> tuple[F64, F64]:
    """Toe positions (B, 2, 3) with the root at the origin, and each foot's contact height (B, 2):
    the lower of its ankle and toe. `local_quats` (B, 24, 4) xyzw; left foot first."""
    (_, _, _, toes), _, contact = _legs(np.asarray(local_quats, np.float64)[:, _LEG_JOINTS])
    return toes, contact


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


# Contact per foot, with hysteresis: a foot whose lowest point is within CONTACT_ON_M of the floor and
# moves slower than SPEED_ON_M_S (horizontally, as the model put it) touches down; it lifts off above
# CONTACT_OFF_M, faster than SPEED_OFF_M_S, or once the model's foot is DRIFT_OFF_M or YAW_OFF_RAD
# from its pin (holding it further would bend the leg away from the pose the model meant); it lands
# again only once it has eased back to within a quarter of those.
CONTACT_ON_M, CONTACT_OFF_M = 0.02, 0.04
SPEED_ON_M_S, SPEED_OFF_M_S = 0.8, 2.0  # 1.3 cm a frame: far beyond a foot that carries weight
DRIFT_OFF_M, YAW_OFF_RAD = 0.12, 0.5
RELEASE_HALFLIFE_S = 0.12  # a lifted foot's offset from the model's decays as a critically damped spring


def _cross(a: F64, b: F64) -> F64:
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _dot(a: F64, b: F64) -> F64:
    out: F64 = np.einsum("...k,...k->...", a, b)
    return out


def _wrap(angle: F64) -> F64:
    return (angle + np.pi) % (2 * np.pi) - np.pi


def leg_ik(
    q: F64, joints: tuple[F64, F64, F64, F64], frames: tuple[F64, F64, F64], ankle: F64, yaw: F64
) -> F64:
    """Two-bone IK of both legs: the local rotations (B, 2, 3, 4) of each leg's hip, knee and ankle
    (`q`, B × `_LEG_JOINTS`, with `joints` and `frames` from `_legs`) turned so that its ankle
    reaches `ankle` (B, 2, 3; root at the origin) in the leg's own bend plane and its foot turns
    `yaw` (B, 2) radians about the vertical. Rotations only, so no bone stretches: a target out of
    reach gets the straight leg pointing at it."""
    hip, knee, foot, _ = joints
    ab, ac, at = knee - hip, foot - hip, ankle - hip
    lac, lat = np.linalg.norm(ac, axis=-1), np.linalg.norm(at, axis=-1)
    reach = np.clip(lat, np.abs(_THIGH - _SHIN) + 1e-4, _THIGH + _SHIN - 1e-4)
    cosines = np.stack(
        [
            (_THIGH**2 + reach**2 - _SHIN**2) / (2 * _THIGH * reach),  # the hip's angle, wanted
            _dot(ac, ab) / (lac * _THIGH),  # and now
            (_THIGH**2 + _SHIN**2 - reach**2) / (2 * _THIGH * _SHIN),  # the knee's, wanted
            _dot(-ab, foot - knee) / (_THIGH * _SHIN),  # and now
        ]
    )
    angle = np.arccos(np.clip(cosines, -1.0, 1.0))
    half = np.stack([angle[0] - angle[1], angle[2] - angle[3]], axis=-1) / 2  # (B, 2, r0 r1)
    bend = _cross(ac, ab)  # the knee's hinge; a straight leg bends about its thigh's -x (knee forward)
    norm = np.linalg.norm(bend, axis=-1, keepdims=True)
    bend = np.where(norm > 1e-9, bend / np.maximum(norm, 1e-9), -frames[1][..., :, 0])
    r01 = np.concatenate([bend[..., None, :] * np.sin(half)[..., None], np.cos(half)[..., None]], axis=-1)
    r0, r1 = r01[..., 0, :], r01[..., 1, :]
    # r0 and r1 keep the hip→ankle direction (the triangle turns in its plane): r2 turns it to the target.
    r2 = np.concatenate([_cross(ac, at), (lac * lat + _dot(ac, at))[..., None]], axis=-1)
    size = np.linalg.norm(r2, axis=-1, keepdims=True)
    r2 = np.where(size > 1e-12, r2 / np.maximum(size, 1e-12), _IDENTITY)  # a target at the hip: none
    thigh = quat_multiply(r2, r0)  # the thigh's world rotation becomes thigh · world, the shin's shin · world
    shin = quat_multiply(thigh, r1)
    # The ankle's world rotation becomes turn · world: in the shin's new frame, shin⁻¹ · turn.
    s, c = np.sin(yaw / 2), np.cos(yaw / 2)
    x, y, z, w = -shin[..., 0], -shin[..., 1], -shin[..., 2], shin[..., 3]
    ankle_turn = np.stack([x * c - z * s, w * s + y * c, x * s + z * c, w * c - y * s], axis=-1)
    world = np.stack([thigh, r1, ankle_turn], axis=-2)  # (B, 2, 3, 4), each in its parent's frame:
    parent = np.stack(frames, axis=-3)  # pelvis, thigh, shin as they were
    local = np.concatenate([np.einsum("...ji,...j->...i", parent, world[..., :3]), world[..., 3:]], -1)
    return np.asarray(quat_multiply(local, q[:, 1:].reshape(len(q), 2, 3, 4)), np.float64)


class FootPlanter:
    """Planted feet for the served motion, one state row per session (slot): the root translation
    from the stance foot (`plant_root`, the lower foot with hysteresis), and each foot that touches
    the floor (height and speed, with hysteresis) pinned where it touched down — its toe's horizontal
    position and its heading — by two-bone leg IK; a lifted foot eases back to the model's from
    where it was held (a critically damped spring on the offset, its velocity continuous). Heights
    stay the model's (the IK target is the model's own height), so the lowest contact stays on the
    floor. Bounded state: a few numbers per foot per row; the step is vectorised over rows."""

    def __init__(self, dt: float) -> None:
        self.dt = dt
        self._damping = 2 * math.log(2) / RELEASE_HALFLIFE_S
        self._decay = math.exp(-self._damping * dt)
        self.capacity = 0
        self._alloc(0)

    def _alloc(self, capacity: int) -> None:
        old = vars(self).copy()
        self.started = np.zeros(capacity, bool)  # the row has a stance foot
        self.stance = np.zeros(capacity, np.int64)  # 0 left, 1 right
        self.plant = np.zeros((capacity, 2, 3), np.float64)  # where each toe was put down (root rule)
        self.root = np.zeros((capacity, 3), np.float64)  # the last root translation
        self.contact = np.zeros((capacity, 2), bool)
        self.pin = np.zeros((capacity, 2, 3), np.float64)  # each pinned toe's world x, z and heading
        self.offset = np.zeros((capacity, 2, 3), np.float64)  # shown - model toe (x, z, heading)
        self.velocity = np.zeros((capacity, 2, 3), np.float64)  # of the offset of a released foot
        self.last = np.zeros((capacity, 2, 3), np.float64)  # the model's toe last frame (x, z, heading)
        for name in ("started", "stance", "plant", "root", "contact", "pin", "offset", "velocity", "last"):
            if name in old:
                getattr(self, name)[: self.capacity] = old[name]
        self.capacity = capacity

    def grow(self, capacity: int) -> None:
        if capacity > self.capacity:
            self._alloc(capacity)

    def reset(self, fresh: npt.NDArray[np.int64]) -> None:
        """A new (or restarted) session's dancer starts at the origin, nothing pinned."""
        self.started[fresh] = False
        self.root[fresh] = 0.0
        self.contact[fresh] = False
        self.offset[fresh] = 0.0
        self.velocity[fresh] = 0.0

    def step(self, rows: Rows, joints: F32) -> tuple[F32, F32]:
        """Local joint quaternions (B, 24, 4) of one output pose per row of `rows` → the same with
        the pinned legs' hips, knees and ankles turned, and the root translations (B, 3)."""
        q = joints[:, _LEG_JOINTS].astype(np.float64)
        legs, frames, contact_y = _legs(q)
        toes = legs[3]
        started, was = self.started[rows], self.stance[rows]
        stance = lower_foot(contact_y, was, started)
        replant = np.zeros((len(stance), 2), bool)
        replant[~started] = True  # a new row puts both feet down where they are
        moved = started & (stance != was)
        replant[np.flatnonzero(moved), stance[moved]] = True
        plant = self.plant[rows]
        root = plant_root(toes, contact_y, stance, replant, plant, self.root[rows])

        forward = toes - legs[2]
        model = np.empty_like(toes)  # the model's toe: world x, z and heading
        model[..., 0], model[..., 1] = root[:, None, 0] + toes[..., 0], root[:, None, 2] + toes[..., 2]
        model[..., 2] = np.arctan2(forward[..., 0], forward[..., 2])
        step = model - np.where(started[:, None, None], self.last[rows], model)
        step[..., 2] = _wrap(step[..., 2])
        speed = np.hypot(step[..., 0], step[..., 1]) / self.dt
        height = contact_y + (root[:, 1:2] - FLOOR_Y)

        was_down, pin = self.contact[rows], self.pin[rows]
        offset, velocity = self.offset[rows], self.velocity[rows]
        # A foot off the floor: its offset eases to zero (the exact step of a critically damped spring).
        j1 = velocity + offset * self._damping
        offset = self._decay * (offset + j1 * self.dt)
        velocity = self._decay * (velocity - j1 * (self._damping * self.dt))
        held = pin - model
        held[..., 2] = _wrap(held[..., 2])
        stays = (height <= CONTACT_OFF_M) & (speed <= SPEED_OFF_M_S) & (np.abs(held[..., 2]) <= YAW_OFF_RAD)
        stays &= np.hypot(held[..., 0], held[..., 1]) <= DRIFT_OFF_M
        lands = (height < CONTACT_ON_M) & (speed < SPEED_ON_M_S)
        # ... and not while it is still easing back from far away (it would be let go again at once).
        lands &= np.hypot(offset[..., 0], offset[..., 1]) < DRIFT_OFF_M / 4
        lands &= np.abs(offset[..., 2]) < YAW_OFF_RAD / 4
        down = np.where(was_down, stays, lands)
        # A foot held last frame is shown at its pin now; lifted, it starts from there as still as
        # the pin was; landed, it is pinned where it is shown.
        offset = np.where(was_down[..., None], held, offset)
        lifted = was_down & ~down
        velocity = np.where(down[..., None], 0.0, np.where(lifted[..., None], step / -self.dt, velocity))
        pin = np.where((down & ~was_down)[..., None], model + offset, pin)

        target = legs[2].copy()  # the ankle: the toe moved by the offset, less the turned foot
        yaw = offset[..., 2]
        c, s = np.cos(yaw), np.sin(yaw)
        target[..., 0] += offset[..., 0] + forward[..., 0] - (c * forward[..., 0] + s * forward[..., 2])
        target[..., 2] += offset[..., 1] + forward[..., 2] - (c * forward[..., 2] - s * forward[..., 0])
        out = joints.copy()
        moving = np.abs(offset).max(axis=-1) > 1e-6  # a foot with no offset keeps the model's leg exactly
        if moving.any():
            turned = leg_ik(q, legs, frames, target, yaw).astype(np.float32)
            out[:, _LEG_JOINTS[1:]] = np.where(
                moving[..., None, None], turned, out[:, _LEG_JOINTS[1:]].reshape(turned.shape)
            ).reshape(len(q), 6, 4)

        self.plant[rows], self.root[rows], self.stance[rows] = plant, root, stance
        self.started[rows] = True
        self.contact[rows], self.pin[rows], self.last[rows] = down, pin, model
        self.offset[rows], self.velocity[rows] = offset, velocity
        return out, root.astype(np.float32)
