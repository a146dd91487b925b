"""Planted feet for SMPL poses: the root translation that keeps the weight-bearing foot where it was put
down and the lowest foot contact on the floor, and (served) both feet pinned while they touch the floor.

Shared by the choreographer (bridge.motion.choreographer, whose moves say which leg swings: it uses
`feet` and `plant_root`) and the served motion post-processing (bridge.motion.post:
`FootPlanter`, where the stance foot is the lower one, with hysteresis, and each foot in contact is
pinned by two-bone leg IK). Per-row state is the caller's (the choreographer) or the planter's own rows
(the served post).

The maths runs row by row in numba-compiled loops. Per row it is a few hundred scalar operations on
3-vectors, which numpy spent as as many array calls: 1.1 ms a call even for one session, most of the
served post-processing. Compiled, a row costs about a microsecond. numba compiles once per checkout
(some 15 s on two cores; scripts/install.sh does it, `compile_all`) and caches the code beside this
module (`cache=True`); `FootPlanter()` loads or compiles it (the first compiled call of a process
takes ~1 s, numba's runtime loading), so the first served frame does not.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from bridge.motion.compiled import jit
from bridge.rig.smpl import PARENTS, REST_OFFSETS

__all__ = [
    "FLOOR_Y",
    "LEG_ROTATIONS",
    "STANCE_HYSTERESIS_M",
    "FootPlanter",
    "compile_all",
    "feet",
    "leg_ik",
    "leg_joints",
    "plant_root",
]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
Rows = slice | npt.NDArray[np.int64]

# The two leg chains, left first: hip, knee, ankle (their rotations), then the toe's offset.
_CHAIN = np.array(((1, 4, 7, 10), (2, 5, 8, 11)))
LEG_ROTATIONS = _CHAIN[:, :3]  # (2 legs, 3): the joints whose rotations the leg IK turns
assert all(PARENTS[c[0]] == 0 and all(PARENTS[c[k + 1]] == c[k] for k in range(3)) for c in _CHAIN)
_PELVIS = np.asarray(REST_OFFSETS[0], np.float64)
_OFFSETS = np.asarray(REST_OFFSETS, np.float64)[_CHAIN]  # (2 legs, 4, 3)
_BONES = np.linalg.norm(_OFFSETS[:, 1:3], axis=-1)  # (2 legs: thigh, shin)
# The floor: the lowest contact (the lower of ankle and toe) of the rest pose with the root at the origin.
_REST_ANKLES = _PELVIS + _OFFSETS[:, :3].sum(axis=1)
FLOOR_Y = float(min(_REST_ANKLES[:, 1].min(), (_REST_ANKLES + _OFFSETS[:, 3])[:, 1].min()))
STANCE_HYSTERESIS_M = 0.005  # the other foot must be this much lower to take the weight (5 mm: on
# the choreographer's poses 1.5 cm skated 4 % more and 3 cm 13 % more; a change of feet never jumps)

# Contact per foot, with hysteresis: a foot whose lowest point is within CONTACT_ON_M of the floor and
# moves slower than SPEED_ON_M_S (horizontally, as the model put it) touches down; it lifts off above
# CONTACT_OFF_M, faster than SPEED_OFF_M_S, or once the model's foot is DRIFT_OFF_M or YAW_OFF_RAD
# from its pin (holding it further would bend the leg away from the pose the model meant); it lands
# again only once it has eased back to within a quarter of those.
CONTACT_ON_M, CONTACT_OFF_M = 0.02, 0.04
SPEED_ON_M_S, SPEED_OFF_M_S = 0.8, 2.0  # 1.3 cm a frame: far beyond a foot that carries weight
DRIFT_OFF_M, YAW_OFF_RAD = 0.12, 0.5
RELEASE_HALFLIFE_S = 0.12  # a lifted foot's offset from the model's decays as a critically damped spring


# The row maths below holds 3-vectors and quaternions in tuples, which numba keeps in registers: a
# small numpy array there is a heap allocation, and at thousands of rows those cost more than the maths.
V3 = tuple[float, float, float]
Q4 = tuple[float, float, float, float]
_PELVIS_AT = (float(_PELVIS[0]), float(_PELVIS[1]), float(_PELVIS[2]))


@jit
def _matrix(q: F64, out: F64) -> None:
    """Unit quaternion (4,) xyzw → rotation matrix (3, 3), into `out`."""
    x, y, z, w = q[0], q[1], q[2], q[3]
    out[0, 0], out[0, 1], out[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
    out[1, 0], out[1, 1], out[1, 2] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
    out[2, 0], out[2, 1], out[2, 2] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)


@jit
def _product(a: F64, b: F64, out: F64) -> None:
    """3x3 matrix product a · b into `out`."""
    for i in range(3):
        for j in range(3):
            out[i, j] = a[i, 0] * b[0, j] + a[i, 1] * b[1, j] + a[i, 2] * b[2, j]


@jit
def _vec(a: F64) -> V3:
    return (a[0], a[1], a[2])


@jit
def _put(row: F64, v: V3) -> None:
    row[0], row[1], row[2] = v


@jit
def _add(a: V3, b: V3) -> V3:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@jit
def _sub(a: V3, b: V3) -> V3:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@jit
def _dot(a: V3, b: V3) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@jit
def _cross(a: V3, b: V3) -> V3:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@jit
def _rotate(m: F64, v: V3) -> V3:
    """3x3 matrix times vector."""
    return (
        m[0, 0] * v[0] + m[0, 1] * v[1] + m[0, 2] * v[2],
        m[1, 0] * v[0] + m[1, 1] * v[1] + m[1, 2] * v[2],
        m[2, 0] * v[0] + m[2, 1] * v[1] + m[2, 2] * v[2],
    )


@jit
def _hamilton(a: Q4, b: Q4) -> Q4:
    """Quaternion product a ⊗ b (b first, then a), xyzw (bridge.rig.rotations.quat_multiply)."""
    return (
        a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1],
        a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0],
        a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3],
        a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2],
    )


@jit
def _wrap(angle: float) -> float:
    return (angle + np.pi) % (2 * np.pi) - np.pi


@jit
def _angle(cosine: float) -> float:
    return math.acos(min(max(cosine, -1.0), 1.0))


@jit
def _leg(q: F64, leg: int, local: F64, frames: F64, joints: F64) -> None:
    """Forward kinematics of one leg of a row, root at the origin. `q` (24, 4) the row's local
    rotations. Writes the leg's local rotation matrices `local` (3, 3, 3: hip, knee, ankle), the world
    rotations `frames` (3, 3, 3) of pelvis, thigh and shin, and the positions `joints` (4, 3) of hip,
    knee, ankle and toe."""
    _matrix(q[0], frames[0])
    for k in range(3):
        _matrix(q[_CHAIN[leg, k]], local[k])
    _product(frames[0], local[0], frames[1])
    _product(frames[1], local[1], frames[2])
    hip = _add(_PELVIS_AT, _rotate(frames[0], _vec(_OFFSETS[leg, 0])))
    knee = _add(hip, _rotate(frames[1], _vec(_OFFSETS[leg, 1])))
    ankle = _add(knee, _rotate(frames[2], _vec(_OFFSETS[leg, 2])))
    toe = _add(ankle, _rotate(frames[2], _rotate(local[2], _vec(_OFFSETS[leg, 3]))))
    _put(joints[0], hip)
    _put(joints[1], knee)
    _put(joints[2], ankle)
    _put(joints[3], toe)


@jit
def _to_parent(frame: F64, world: Q4, q: F64, out: F64) -> None:
    """A joint's new rotation `world` · (its old world rotation), written as its local rotation:
    `world` taken into the parent's `frame` as it was, times the joint's old local rotation `q`."""
    x, y, z = _rotate(frame.T, (world[0], world[1], world[2]))  # the inverse rotation
    out[0], out[1], out[2], out[3] = _hamilton((x, y, z, world[3]), (q[0], q[1], q[2], q[3]))


@jit
def _ik(q: F64, leg: int, frames: F64, joints: F64, ankle: V3, yaw: float, out: F64) -> None:
    """Two-bone IK of one leg: the local rotations `out` (3, 4) of its hip, knee and ankle (`q`, with
    `frames` and `joints` from `_leg`) turned so that its ankle reaches `ankle` (root at the origin)
    in the leg's own bend plane and its foot turns `yaw` radians about the vertical. Rotations only,
    so no bone stretches: a target out of reach gets the straight leg pointing at it."""
    hip, knee, foot = _vec(joints[0]), _vec(joints[1]), _vec(joints[2])
    thigh_len, shin_len = _BONES[leg, 0], _BONES[leg, 1]
    ab, ac, at = _sub(knee, hip), _sub(foot, hip), _sub(ankle, hip)
    lac, lat = math.sqrt(_dot(ac, ac)), math.sqrt(_dot(at, at))
    reach = min(max(lat, abs(thigh_len - shin_len) + 1e-4), thigh_len + shin_len - 1e-4)
    hip_wanted = _angle((thigh_len**2 + reach**2 - shin_len**2) / (2 * thigh_len * reach))
    hip_now = _angle(_dot(ac, ab) / (lac * thigh_len))
    knee_wanted = _angle((thigh_len**2 + shin_len**2 - reach**2) / (2 * thigh_len * shin_len))
    knee_now = _angle(-_dot(ab, _sub(foot, knee)) / (thigh_len * shin_len))
    bx, by, bz = _cross(ac, ab)  # the knee's hinge; a straight leg bends about its thigh's -x (knee forward)
    norm = math.sqrt(bx * bx + by * by + bz * bz)
    if norm > 1e-9:
        bx, by, bz = bx / norm, by / norm, bz / norm
    else:
        bx, by, bz = -frames[1, 0, 0], -frames[1, 1, 0], -frames[1, 2, 0]
    s0, s1 = math.sin((hip_wanted - hip_now) / 2), math.sin((knee_wanted - knee_now) / 2)
    r0 = (bx * s0, by * s0, bz * s0, math.cos((hip_wanted - hip_now) / 2))
    r1 = (bx * s1, by * s1, bz * s1, math.cos((knee_wanted - knee_now) / 2))
    # r0 and r1 keep the hip→ankle direction (the triangle turns in its plane): r2 turns it to the target.
    cx, cy, cz = _cross(ac, at)
    cw = lac * lat + _dot(ac, at)
    size = math.sqrt(cx * cx + cy * cy + cz * cz + cw * cw)
    r2 = (cx / size, cy / size, cz / size, cw / size) if size > 1e-12 else (0.0, 0.0, 0.0, 1.0)
    thigh = _hamilton(r2, r0)  # the thigh's world rotation becomes thigh · world, the shin's shin · world
    shin = _hamilton(thigh, r1)
    # The ankle's world rotation becomes turn · world: in the shin's new frame, shin⁻¹ · turn.
    s, c = math.sin(yaw / 2), math.cos(yaw / 2)
    x, y, z, w = -shin[0], -shin[1], -shin[2], shin[3]
    turn = (x * c - z * s, w * s + y * c, x * s + z * c, w * c - y * s)
    _to_parent(frames[0], thigh, q[_CHAIN[leg, 0]], out[0])
    _to_parent(frames[1], r1, q[_CHAIN[leg, 1]], out[1])
    _to_parent(frames[2], turn, q[_CHAIN[leg, 2]], out[2])


@jit
def _stance(left: float, right: float, was: int, started: bool) -> int:
    """The stance foot from the feet's contact heights: the lower foot, changing only when the other
    is lower by STANCE_HYSTERESIS_M (so a foot does not flicker between two near-level feet); a row
    not yet started takes the lower."""
    if not started:
        return 0 if left <= right else 1
    contact = (left, right)
    return 1 - was if contact[1 - was] < contact[was] - STANCE_HYSTERESIS_M else was


@jit
def _root(toes: F64, lowest: float, stance: int, replant: tuple[bool, bool], plant: F64, root: F64) -> V3:
    """The root translation that keeps the stance toe on its plant point and the lowest contact
    `lowest` at FLOOR_Y. Feet in `replant` are put down now at the previous root `root` plus their
    toe offset (`plant` (2, 3) is updated in place): one replanted under the stance gives `root` back."""
    for leg in range(2):
        if replant[leg]:
            _put(plant[leg], _add(_vec(root), _vec(toes[leg])))
    return (plant[stance, 0] - toes[stance, 0], FLOOR_Y - lowest, plant[stance, 2] - toes[stance, 2])


@jit
def _leg_joints_rows(q: F64, out: F64) -> None:
    local, frames = np.empty((3, 3, 3)), np.empty((3, 3, 3))
    for b in range(len(q)):
        for leg in range(2):
            _leg(q[b], leg, local, frames, out[b, leg])


def leg_joints(local_quats: npt.ArrayLike) -> F64:
    """Positions (B, 2 legs, 4, 3) of each leg's hip, knee, ankle and toe, root at the origin, from
    local joint quaternions (B, 24, 4) xyzw; left leg first."""
    q = np.ascontiguousarray(local_quats, np.float64)
    out = np.empty((len(q), 2, 4, 3))
    _leg_joints_rows(q, out)
    return out


def feet(local_quats: npt.ArrayLike) -> tuple[F64, F64]:
    """Toe positions (B, 2, 3) with the root at the origin, and each foot's contact height (B, 2):
    the lower of its ankle and toe. `local_quats` (B, 24, 4) xyzw; left foot first."""
    joints = leg_joints(local_quats)
    return joints[:, :, 3], np.minimum(joints[:, :, 2, 1], joints[:, :, 3, 1])


@jit
def _ik_rows(q: F64, ankle: F64, yaw: F64, out: F64) -> None:
    local, frames, joints = np.empty((3, 3, 3)), np.empty((3, 3, 3)), np.empty((4, 3))
    for b in range(len(q)):
        for leg in range(2):
            _leg(q[b], leg, local, frames, joints)
            _ik(q[b], leg, frames, joints, _vec(ankle[b, leg]), yaw[b, leg], out[b, leg])


def leg_ik(local_quats: npt.ArrayLike, ankle: npt.ArrayLike, yaw: npt.ArrayLike) -> F64:
    """Two-bone IK of both legs: the local rotations (B, 2 legs, 3, 4) of each leg's hip, knee and
    ankle (LEG_ROTATIONS) turned so that its ankle reaches `ankle` (B, 2, 3; root at the origin) in
    the leg's own bend plane and its foot turns `yaw` (B, 2) radians about the vertical."""
    q = np.ascontiguousarray(local_quats, np.float64)
    out = np.empty((len(q), 2, 3, 4))
    _ik_rows(q, np.ascontiguousarray(ankle, np.float64), np.ascontiguousarray(yaw, np.float64), out)
    return out


@jit
def _plant_root_rows(
    toes: F64,
    contact: F64,
    stance: npt.NDArray[np.int64],
    replant: npt.NDArray[np.bool_],
    plant: F64,
    root: F64,
) -> F64:
    out = np.empty((len(toes), 3))
    for b in range(len(toes)):
        lowest = min(contact[b, 0], contact[b, 1])
        _put(out[b], _root(toes[b], lowest, stance[b], (replant[b, 0], replant[b, 1]), plant[b], root[b]))
    return out


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
    return _plant_root_rows(toes, contact_y, stance.astype(np.int64), replant, plant, root)


@jit
def _plant_rows(
    joints: F32,
    rows: npt.NDArray[np.int64],
    dt: float,
    damping: float,
    decay: float,
    started: npt.NDArray[np.bool_],
    stance: npt.NDArray[np.int64],
    plant: F64,
    root: F64,
    contact: npt.NDArray[np.bool_],
    pin: F64,
    offset: F64,
    velocity: F64,
    last: F64,
    out: F32,
    out_root: F32,
) -> None:
    """FootPlanter.step over the rows of one batch (the state arrays indexed by `rows`)."""
    q = np.empty((24, 4))
    local, frames, joints_at = np.empty((3, 3, 3)), np.empty((2, 3, 3, 3)), np.empty((2, 4, 3))
    turned = np.empty((3, 4))
    for b in range(len(rows)):
        r = rows[b]
        q[:] = joints[b]
        for leg in range(2):
            _leg(q, leg, local, frames[leg], joints_at[leg])
        height = (min(joints_at[0, 2, 1], joints_at[0, 3, 1]), min(joints_at[1, 2, 1], joints_at[1, 3, 1]))
        toes = joints_at[:, 3]
        first = not started[r]
        foot = _stance(height[0], height[1], stance[r], started[r])
        moved = foot != stance[r]  # a change of stance puts the new stance foot down; a new row both
        replant = (first or (moved and foot == 0), first or (moved and foot == 1))
        new_root = _root(toes, min(height[0], height[1]), foot, replant, plant[r], root[r])
        for leg in range(2):
            fx, fz = toes[leg, 0] - joints_at[leg, 2, 0], toes[leg, 2] - joints_at[leg, 2, 2]
            # The model's toe: world x, z and heading; its step since last frame.
            mx, mz, mh = new_root[0] + toes[leg, 0], new_root[2] + toes[leg, 2], math.atan2(fx, fz)
            sx, sz, sh = 0.0, 0.0, 0.0
            if not first:
                sx, sz, sh = mx - last[r, leg, 0], mz - last[r, leg, 1], _wrap(mh - last[r, leg, 2])
            speed = math.hypot(sx, sz) / dt
            above = height[leg] + (new_root[1] - FLOOR_Y)
            # A foot off the floor: its offset eases to zero (the exact step of a critically damped spring).
            o, v = _vec(offset[r, leg]), _vec(velocity[r, leg])
            j = (v[0] + o[0] * damping, v[1] + o[1] * damping, v[2] + o[2] * damping)
            eased = (decay * (o[0] + j[0] * dt), decay * (o[1] + j[1] * dt), decay * (o[2] + j[2] * dt))
            kick = damping * dt
            vel = (decay * (v[0] - j[0] * kick), decay * (v[1] - j[1] * kick), decay * (v[2] - j[2] * kick))
            held = (pin[r, leg, 0] - mx, pin[r, leg, 1] - mz, _wrap(pin[r, leg, 2] - mh))
            if contact[r, leg]:
                down = above <= CONTACT_OFF_M and speed <= SPEED_OFF_M_S and abs(held[2]) <= YAW_OFF_RAD
                down = down and math.hypot(held[0], held[1]) <= DRIFT_OFF_M
                # A foot held last frame is shown at its pin now; lifted, it starts from there as
                # still as the pin was.
                off = held
                if not down:
                    vel = (sx / -dt, sz / -dt, sh / -dt)
            else:  # ... and it lands only once it has eased back from far away (or it is let go at once)
                down = above < CONTACT_ON_M and speed < SPEED_ON_M_S
                down = down and math.hypot(eased[0], eased[1]) < DRIFT_OFF_M / 4
                down = down and abs(eased[2]) < YAW_OFF_RAD / 4
                off = eased
                if down:  # landed: pinned where it is shown
                    _put(pin[r, leg], (mx + off[0], mz + off[1], mh + off[2]))
            if down:
                vel = (0.0, 0.0, 0.0)
            if max(abs(off[0]), abs(off[1]), abs(off[2])) > 1e-6:  # no offset: the model's leg exactly
                # The ankle's target: the toe moved by the offset, less the turned foot.
                c, s = math.cos(off[2]), math.sin(off[2])
                ax, ay, az = _vec(joints_at[leg, 2])
                target = (ax + (off[0] + fx - (c * fx + s * fz)), ay, az + (off[1] + fz - (c * fz - s * fx)))
                _ik(q, leg, frames[leg], joints_at[leg], target, off[2], turned)
                for k in range(3):
                    out[b, _CHAIN[leg, k]] = turned[k]
            contact[r, leg] = down
            _put(offset[r, leg], off)
            _put(velocity[r, leg], vel)
            _put(last[r, leg], (mx, mz, mh))
        stance[r], started[r] = foot, True
        _put(root[r], new_root)
        _put(out_root[b], new_root)


class FootPlanter:
    """Planted feet for the served motion, one state row per session (slot): the root translation
    from the stance foot (`plant_root`'s rule, the lower foot with hysteresis), and each foot that
    touches the floor (height and speed, with hysteresis) pinned where it touched down — its toe's
    horizontal position and its heading — by two-bone leg IK; a lifted foot eases back to the model's
    from where it was held (a critically damped spring on the offset, its velocity continuous).
    Heights stay the model's (the IK target is the model's own height), so the lowest contact stays
    on the floor. Bounded state: a few numbers per foot per row."""

    def __init__(self, dt: float) -> None:
        self.dt = dt
        self._damping = 2 * math.log(2) / RELEASE_HALFLIFE_S
        self._decay = math.exp(-self._damping * dt)
        self.capacity = 0
        self._alloc(0)
        self.step(np.zeros(0, np.int64), np.zeros((0, 24, 4), np.float32))  # compile (or load) it now

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
        index = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else np.asarray(rows, np.int64)
        joints = np.ascontiguousarray(joints, np.float32)
        out, root = joints.copy(), np.empty((len(joints), 3), np.float32)
        _plant_rows(
            joints, index, self.dt, self._damping, self._decay, self.started, self.stance, self.plant,
            self.root, self.contact, self.pin, self.offset, self.velocity, self.last, out, root,
        )  # fmt: skip
        return out, root


def compile_all() -> None:
    """Compile (or load from the cache) every kernel of this module: what scripts/install.sh runs."""
    none = np.zeros((0, 24, 4))
    feet(none)
    leg_ik(none, np.zeros((0, 2, 3)), np.zeros((0, 2)))
    plant_root(
        np.zeros((0, 2, 3)),
        np.zeros((0, 2)),
        np.zeros(0, np.int64),
        np.zeros((0, 2), bool),
        np.zeros((0, 2, 3)),
        np.zeros((0, 3)),
    )
    FootPlanter(1 / 60)
