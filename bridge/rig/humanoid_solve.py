"""Body and hand landmarks -> humanoid local joint rotations, for any avatar's proportions.

The rig is a Unity-humanoid skeleton in T-pose with identity rest rotations (what VRM's "Enforce T-Pose"
exports): each bone's local rotation is relative to its parent bone, wire axes (right-handed, +Y up,
+Z towards the camera, +X the avatar's left). Every bone is solved from *directions* only: its global
rotation takes the bone's rest direction (and a second rest axis fixing its twist) onto the observed
ones, so bone lengths never enter and any avatar's proportions take the same rotations.

- Hips: the hip line and the spine's up when the hips are seen; else rest (upper-body webcam framing).
- Spine, Chest, UpperChest: the shoulder line and spine's up relative to the hips, split in thirds.
- Neck, Head: the face's head rotation relative to the upper chest, split in halves.
- Shoulders: rest. Upper arms: towards the elbow, twist from the forearm's bend (the chest's forward
  when the arm is straight). Lower arms: towards the wrist, twist from the palm. Hands: towards the
  middle knuckle, twist from the palm. Fingers: each segment's direction, twist from the knuckle line
  (the palm's normal for thumbs).
- Legs: towards knee, ankle and toes when hip, knee and ankle are all seen; else rest.
Landmarks come in MediaPipe's world axes (x right, y down, z away from the camera) and are turned to
wire axes first (a rotation: handedness is kept).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bridge.protocol.events import BodyRig
from bridge.rig.rotations import axis_angle_to_quat, matrix_to_quat, quat_to_axis_angle, quat_to_matrix

F64 = npt.NDArray[np.float64]

_FINGERS = ("Thumb", "Index", "Middle", "Ring", "Little")
_PHALANGES = ("Proximal", "Intermediate", "Distal")


def _joints() -> tuple[tuple[str, int, tuple[float, float, float]], ...]:
    """(name, parent, rest offset from the parent in metres, wire axes) per joint, parents first."""
    j: list[tuple[str, int, tuple[float, float, float]]] = [
        ("Hips", -1, (0.0, 0.95, 0.0)),
        ("Spine", 0, (0.0, 0.08, 0.0)),
        ("Chest", 1, (0.0, 0.12, 0.0)),
        ("UpperChest", 2, (0.0, 0.12, 0.0)),
        ("Neck", 3, (0.0, 0.12, 0.0)),
        ("Head", 4, (0.0, 0.1, 0.0)),
    ]
    for side, x in (("Left", 1.0), ("Right", -1.0)):
        base = len(j)
        j += [
            (f"{side}Shoulder", 3, (0.03 * x, 0.09, 0.0)),
            (f"{side}UpperArm", base, (0.09 * x, 0.0, 0.0)),
            (f"{side}LowerArm", base + 1, (0.26 * x, 0.0, 0.0)),
            (f"{side}Hand", base + 2, (0.24 * x, 0.0, 0.0)),
        ]
    for side, x in (("Left", 1.0), ("Right", -1.0)):
        base = len(j)
        j += [
            (f"{side}UpperLeg", 0, (0.09 * x, -0.05, 0.0)),
            (f"{side}LowerLeg", base, (0.0, -0.42, 0.0)),
            (f"{side}Foot", base + 1, (0.0, -0.42, 0.0)),
        ]
    # Fingers: knuckle offsets from the hand, then segment lengths along each finger's rest direction.
    knuckles = {
        "Thumb": (0.025, -0.01, 0.025),
        "Index": (0.09, 0.0, 0.025),
        "Middle": (0.095, 0.0, 0.003),
        "Ring": (0.09, 0.0, -0.017),
        "Little": (0.08, 0.0, -0.035),
    }
    lengths = {
        "Thumb": (0.04, 0.032),
        "Index": (0.04, 0.025),
        "Middle": (0.045, 0.028),
        "Ring": (0.042, 0.026),
        "Little": (0.032, 0.02),
    }
    for side, x in (("Left", 1.0), ("Right", -1.0)):
        hand = [n for n, _, _ in j].index(f"{side}Hand")
        for finger in _FINGERS:
            d = np.array(REST_FINGER_DIRECTION[finger]) * (x, 1.0, 1.0)
            k = knuckles[finger]
            j.append((f"{side}{finger}Proximal", hand, (k[0] * x, k[1], k[2])))
            for phalanx, length in zip(_PHALANGES[1:], lengths[finger], strict=True):
                step = d * length
                j.append(
                    (f"{side}{finger}{phalanx}", len(j) - 1, (float(step[0]), float(step[1]), float(step[2])))
                )
    return tuple(j)


# Rest direction of each finger of the left hand (the right's mirrors x): thumbs point forward-out.
REST_FINGER_DIRECTION = {
    "Thumb": (0.7071, 0.0, 0.7071),
    "Index": (1.0, 0.0, 0.0),
    "Middle": (1.0, 0.0, 0.0),
    "Ring": (1.0, 0.0, 0.0),
    "Little": (1.0, 0.0, 0.0),
}
JOINTS = _joints()
NAMES = tuple(n for n, _, _ in JOINTS)
PARENTS = tuple(p for _, p, _ in JOINTS)
REST_OFFSETS = np.array([o for _, _, o in JOINTS], np.float64)
INDEX = {n: i for i, n in enumerate(NAMES)}
N_JOINTS = len(JOINTS)
# One-Euro groups (bridge.pipelines.face_body): which joints each filters.
GROUPS: dict[str, tuple[int, ...]] = {
    "torso": tuple(INDEX[n] for n in ("Hips", "Spine", "Chest", "UpperChest", "Neck", "Head")),
    "arms": tuple(i for i, n in enumerate(NAMES) if n.endswith(("Shoulder", "Arm", "Hand"))),
    "legs": tuple(i for i, n in enumerate(NAMES) if n.endswith(("Leg", "Foot"))),
    "fingers": tuple(i for i, n in enumerate(NAMES) if any(f in n for f in _FINGERS)),
}


def body_rig() -> BodyRig:
    """The humanoid rig of face sessions opened with `body: true` (every joint has its Unity name)."""
    return BodyRig(NAMES, PARENTS, REST_OFFSETS.copy(), NAMES)


# MediaPipe Pose's 33 landmarks used here, and Hands' 21.
NOSE, L_SHOULDER, R_SHOULDER, L_ELBOW, R_ELBOW, L_WRIST, R_WRIST = 0, 11, 12, 13, 14, 15, 16
L_HIP, R_HIP, L_KNEE, R_KNEE, L_ANKLE, R_ANKLE = 23, 24, 25, 26, 27, 28
L_HEEL, R_HEEL, L_TOE, R_TOE = 29, 30, 31, 32
WRIST, INDEX_MCP, MIDDLE_MCP, PINKY_MCP = 0, 5, 9, 17
FINGER_POINTS = {"Thumb": (1, 2, 3, 4), "Index": (5, 6, 7, 8), "Middle": (9, 10, 11, 12),
                 "Ring": (13, 14, 15, 16), "Little": (17, 18, 19, 20)}  # fmt: skip
MIN_VISIBILITY = 0.5  # hips / legs follow only above this
_TO_WIRE = np.array([1.0, -1.0, -1.0])
_X, _Y, _Z = np.eye(3)


@dataclass(frozen=True)
class BodyObservation:
    """One frame's landmarks of one body (MediaPipe world axes, metres)."""

    world: F64  # (33, 3)
    visibility: F64  # (33,)
    hand_found: tuple[bool, bool]  # left, right (the subject's)
    hand_world: F64  # (2, 21, 3)


def _unit(v: F64) -> F64:
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-9 else v * 0.0


def _frame(primary: F64, secondary: F64) -> F64:
    """Orthonormal basis (columns) with its first axis along `primary`, the second in the plane of the two."""
    p = _unit(primary)
    s = _unit(secondary - np.dot(secondary, p) * p)
    if not s.any():  # parallel: any perpendicular
        s = _unit(np.cross(p, _Z if abs(p[2]) < 0.9 else _X))
    return np.stack([p, s, np.cross(p, s)], 1)


def _aim(rest_p: F64, rest_s: F64, p: F64, s: F64) -> F64:
    """The global rotation taking the rest axes (rest_p, rest_s) onto the observed (p, s)."""
    out: F64 = _frame(p, s) @ _frame(rest_p, rest_s).T
    return out


def _fraction(r: F64, k: float) -> F64:
    """The rotation `r` scaled to fraction `k` of its angle (same axis)."""
    out = quat_to_matrix(axis_angle_to_quat(quat_to_axis_angle(matrix_to_quat(r)) * k))
    return np.asarray(out, np.float64)


def solve(obs: BodyObservation, head: F64 | None = None) -> F64:
    """Local rotations (N_JOINTS, 4) quaternions x, y, z, w of one body; `head` the face's head rotation
    (3x3, wire axes) or None (the head then follows the upper chest)."""
    w = obs.world * _TO_WIRE
    vis = obs.visibility
    g = np.tile(np.eye(3), (N_JOINTS, 1, 1))  # global rotations
    mid_sh = (w[L_SHOULDER] + w[R_SHOULDER]) / 2
    mid_hip = (w[L_HIP] + w[R_HIP]) / 2
    up = mid_sh - mid_hip
    hips_seen = min(vis[L_HIP], vis[R_HIP]) > MIN_VISIBILITY
    hips = _aim(_X, _Y, w[L_HIP] - w[R_HIP], up) if hips_seen else np.eye(3)
    chest = _aim(_X, _Y, w[L_SHOULDER] - w[R_SHOULDER], up)
    g[INDEX["Hips"]] = hips
    third = _fraction(hips.T @ chest, 1.0 / 3.0)
    for k, name in enumerate(("Spine", "Chest", "UpperChest"), 1):
        g[INDEX[name]] = hips @ np.linalg.matrix_power(third, k)
    upper_chest = g[INDEX["UpperChest"]]
    if head is not None:
        half = _fraction(upper_chest.T @ head, 0.5)
        g[INDEX["Neck"]] = upper_chest @ half
        g[INDEX["Head"]] = head
    else:
        g[INDEX["Neck"]] = g[INDEX["Head"]] = upper_chest
    forward = upper_chest @ _Z
    for side, (sh, el, wr) in enumerate(((L_SHOULDER, L_ELBOW, L_WRIST), (R_SHOULDER, R_ELBOW, R_WRIST))):
        name = ("Left", "Right")[side]
        x = 1.0 if side == 0 else -1.0
        g[INDEX[f"{name}Shoulder"]] = upper_chest
        upper = _unit(w[el] - w[sh])
        fore = _unit(w[wr] - w[el])
        bend = fore - np.dot(fore, upper) * upper
        straight = forward - np.dot(forward, upper) * upper
        g_upper = _aim(_X * x, _Z, upper, bend + 0.15 * straight)
        g[INDEX[f"{name}UpperArm"]] = g_upper
        palm_down = g_upper @ -_Y  # no hand: the forearm keeps the upper arm's twist
        hand_dir: F64 | None = None
        if obs.hand_found[side]:
            h = obs.hand_world[side] * _TO_WIRE
            a, b = h[INDEX_MCP] - h[WRIST], h[PINKY_MCP] - h[WRIST]
            palm_down = _unit(np.cross(b, a) if side == 0 else np.cross(a, b))
            hand_dir = h[MIDDLE_MCP] - h[WRIST]
        g_lower = _aim(_X * x, -_Y, fore, palm_down)
        g[INDEX[f"{name}LowerArm"]] = g_lower
        if hand_dir is None:
            g[INDEX[f"{name}Hand"]] = g_lower
            for finger in _FINGERS:
                for phalanx in _PHALANGES:
                    g[INDEX[f"{name}{finger}{phalanx}"]] = g_lower
            continue
        g_hand = _aim(_X * x, -_Y, hand_dir, palm_down)
        g[INDEX[f"{name}Hand"]] = g_hand
        h = obs.hand_world[side] * _TO_WIRE
        across = h[INDEX_MCP] - h[PINKY_MCP]  # towards the thumb: +Z at rest, either hand
        for finger in _FINGERS:
            rest = np.array(REST_FINGER_DIRECTION[finger]) * (x, 1.0, 1.0)
            points = FINGER_POINTS[finger]
            for k, phalanx in enumerate(_PHALANGES):
                seg = h[points[k + 1]] - h[points[k]]
                if finger == "Thumb":
                    g[INDEX[f"{name}{finger}{phalanx}"]] = _aim(rest, -_Y, seg, palm_down)
                else:
                    g[INDEX[f"{name}{finger}{phalanx}"]] = _aim(rest, _Z, seg, across)
    for side, (hp, kn, an, heel, toe) in enumerate(
        ((L_HIP, L_KNEE, L_ANKLE, L_HEEL, L_TOE), (R_HIP, R_KNEE, R_ANKLE, R_HEEL, R_TOE))
    ):
        name = ("Left", "Right")[side]
        seen = hips_seen and min(vis[kn], vis[an]) > MIN_VISIBILITY
        if not seen:
            for part in ("UpperLeg", "LowerLeg", "Foot"):
                g[INDEX[f"{name}{part}"]] = hips
            continue
        foot = w[toe] - w[heel]
        g_thigh = _aim(-_Y, _Z, w[kn] - w[hp], hips @ _Z)
        g_shin = _aim(-_Y, _Z, w[an] - w[kn], foot)
        g[INDEX[f"{name}UpperLeg"]] = g_thigh
        g[INDEX[f"{name}LowerLeg"]] = g_shin
        g[INDEX[f"{name}Foot"]] = _aim(_Z, _Y, foot, g_shin @ _Y)
    return local_quaternions(g)


def local_quaternions(g: F64) -> F64:
    """Global rotations (N_JOINTS, 3, 3) -> local quaternions (N_JOINTS, 4), w >= 0."""
    parents = np.array(PARENTS)
    parent_g = np.where((parents >= 0)[:, None, None], g[np.maximum(parents, 0)], np.eye(3))
    local = np.swapaxes(parent_g, 1, 2) @ g
    q = np.asarray(matrix_to_quat(local), np.float64)
    q *= np.where(q[:, 3:4] < 0, -1.0, 1.0)
    return q
