"""The move library: each move is a pose as a function of beat position, on the SMPL 24-joint skeleton.

A move takes the beat position `b` (float beats, an integer on every beat; shape (T,)) and an amplitude
`a` (T,) in about 0.3..1.3, and returns local axis-angle rotations (T, 24, 3) in radians plus the leg
that swings (T,) int: 0 left, 1 right, -1 both feet planted. Every moving component is a cosine of
π·b or 2π·b (or a squared sine of those), so its velocity is zero exactly on the beats: the body's
speed has a minimum on every beat (Bailando's kinematic beat). Angles are composed per component,
the same heuristic the joint-limit clamp uses; moves stay well inside bridge.rig.smpl's limits.

Conventions (SMPL, Y up, facing +Z, left = +X): hip/knee/spine/neck x > 0 bends forward/down except the
hip, where x < 0 is flexion (thigh forward); left shoulder z < 0 lowers the left arm, right shoulder
z > 0 lowers the right; shoulder y < 0 (left) / > 0 (right) brings the arm forward; elbow y likewise.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from bridge.rig.smpl import JOINT_NAMES, NUM_JOINTS

__all__ = ["MOVES", "Move", "base_pose", "knee_bend"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Move = Callable[[F64, F64], tuple[F64, I64]]

J = {name: i for i, name in enumerate(JOINT_NAMES)}
_DEG = np.pi / 180.0


def base_pose(t: int) -> F64:
    """The neutral dance stance for t frames: arms down and relaxed, knees soft, feet flat."""
    p = np.zeros((t, NUM_JOINTS, 3))
    p[:, J["left_shoulder"], 2] = -65 * _DEG
    p[:, J["right_shoulder"], 2] = 65 * _DEG
    p[:, J["left_elbow"], 1] = -20 * _DEG
    p[:, J["right_elbow"], 1] = 20 * _DEG
    knee_bend(p, np.full(t, 8.0))
    return p


def knee_bend(p: F64, deg: F64, legs: tuple[int, ...] = (0, 1)) -> None:
    """Bend knees by 2·deg with hip and ankle compensating, so the thigh-shin-foot chain keeps the
    foot flat and under the hip (a squat, not a lean)."""
    for leg in legs:
        side = ("left", "right")[leg]
        p[:, J[f"{side}_hip"], 0] -= deg * _DEG
        p[:, J[f"{side}_knee"], 0] += 2 * deg * _DEG
        p[:, J[f"{side}_ankle"], 0] -= deg * _DEG


def _c1(b: F64) -> F64:
    return np.cos(2 * np.pi * b)  # once per beat: +1 on the beat, -1 half-way


def _c2(b: F64) -> F64:
    return np.cos(np.pi * b)  # once per two beats: +1 on even beats, -1 on odd


def _down(b: F64) -> F64:
    return 0.5 * (1 + _c1(b))  # 1 on the beat ("down on the beat"), 0 half-way


def _lift(b: F64) -> F64:
    return np.sin(np.pi * b) ** 2  # 0 on the beat, 1 half-way: a foot or hand in the air between beats


def _no_swing(t: int) -> I64:
    return np.full(t, -1, np.int64)


def _alternate(b: F64, beats: int) -> I64:
    """The leg that swings: left for `beats` beats, then right."""
    return (np.floor(b / beats).astype(np.int64) % 2).astype(np.int64)


def _lift_swinging_leg(p: F64, swing: I64, lift: F64, hip_deg: F64, knee_deg: F64) -> None:
    """Raise the swinging leg's thigh by `hip_deg` and bend its knee by `knee_deg`, scaled by `lift`."""
    for leg in (0, 1):
        on = (swing == leg).astype(np.float64)
        side = ("left", "right")[leg]
        p[:, J[f"{side}_hip"], 0] -= hip_deg * _DEG * lift * on
        p[:, J[f"{side}_knee"], 0] += knee_deg * _DEG * lift * on


def bounce(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    knee_bend(p, 9 * a * _down(b))
    p[:, J["spine2"], 0] += 4 * _DEG * a * _down(b)
    p[:, J["left_elbow"], 1] -= 15 * _DEG * a * _down(b)
    p[:, J["right_elbow"], 1] += 15 * _DEG * a * _down(b)
    return p, _no_swing(b.size)


def sway(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    s = 9 * _DEG * a * _c2(b)
    # Both legs tilt the same way (a parallelogram): the hips move sideways over planted feet.
    p[:, J["left_hip"], 2] += s
    p[:, J["right_hip"], 2] += s
    p[:, J["spine1"], 2] -= 0.8 * s
    p[:, J["spine3"], 2] -= 0.4 * s
    p[:, J["left_shoulder"], 2] += 0.8 * s
    p[:, J["right_shoulder"], 2] += 0.8 * s
    knee_bend(p, 4 * a * _down(b))
    return p, _no_swing(b.size)


def step_touch(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    swing = _alternate(b, 1)
    _lift_swinging_leg(p, swing, _lift(b), 18 * a, 36 * a)
    s = 6 * _DEG * a * _c2(b)
    p[:, J["spine1"], 2] += s
    p[:, J["left_shoulder"], 2] += 1.5 * s
    p[:, J["right_shoulder"], 2] += 1.5 * s
    return p, swing


def arm_pump(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    up = 1 - _down(b)  # fists up between beats, punched down on the beat
    p[:, J["left_shoulder"], 1] -= (30 + 25 * a * up) * _DEG
    p[:, J["right_shoulder"], 1] += (30 + 25 * a * up) * _DEG
    p[:, J["left_shoulder"], 2] += 20 * _DEG * a * up
    p[:, J["right_shoulder"], 2] -= 20 * _DEG * a * up
    p[:, J["left_elbow"], 1] -= (60 + 40 * a * up) * _DEG
    p[:, J["right_elbow"], 1] += (60 + 40 * a * up) * _DEG
    knee_bend(p, 7 * a * _down(b))
    return p, _no_swing(b.size)


def arm_wave(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    w = a * _c2(b)
    # Arms up to the sides and waving across: one side high while the other is low.
    p[:, J["left_shoulder"], 2] += (70 + 25 * w) * _DEG
    p[:, J["right_shoulder"], 2] -= (70 - 25 * w) * _DEG
    p[:, J["left_elbow"], 1] -= (25 - 20 * w) * _DEG
    p[:, J["right_elbow"], 1] += (25 + 20 * w) * _DEG
    p[:, J["left_wrist"], 2] -= 20 * _DEG * w
    p[:, J["right_wrist"], 2] -= 20 * _DEG * w
    p[:, J["spine3"], 2] += 5 * _DEG * w
    knee_bend(p, 5 * a * _down(b))
    return p, _no_swing(b.size)


def clap(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    close = _down(b)  # hands meet on the beat
    p[:, J["left_shoulder"], 2] += 45 * _DEG
    p[:, J["right_shoulder"], 2] -= 45 * _DEG
    p[:, J["left_shoulder"], 1] -= (45 + 30 * a * close) * _DEG
    p[:, J["right_shoulder"], 1] += (45 + 30 * a * close) * _DEG
    p[:, J["left_elbow"], 1] -= (70 - 30 * a * close) * _DEG
    p[:, J["right_elbow"], 1] += (70 - 30 * a * close) * _DEG
    knee_bend(p, 6 * a * close)
    return p, _no_swing(b.size)


def head_nod(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    d = _down(b)
    p[:, J["neck"], 0] += 18 * _DEG * a * d
    p[:, J["head"], 0] += 12 * _DEG * a * d
    p[:, J["spine2"], 0] += 6 * _DEG * a * d
    knee_bend(p, 6 * a * d)
    p[:, J["left_elbow"], 1] -= 30 * _DEG
    p[:, J["right_elbow"], 1] += 30 * _DEG
    return p, _no_swing(b.size)


def hip_roll(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    tilt = 8 * _DEG * a * _c2(b)
    pitch = 5 * _DEG * a * _c1(b)
    # The pelvis tilts and the hips counter-rotate, so the legs stay vertical under it.
    p[:, J["pelvis"], 2] += tilt
    p[:, J["pelvis"], 0] += pitch
    for side in ("left", "right"):
        p[:, J[f"{side}_hip"], 2] -= tilt
        p[:, J[f"{side}_hip"], 0] -= pitch
    p[:, J["spine1"], 2] -= 1.3 * tilt
    p[:, J["spine1"], 0] -= pitch
    p[:, J["left_shoulder"], 2] += 1.5 * tilt
    p[:, J["right_shoulder"], 2] += 1.5 * tilt
    knee_bend(p, 6 + 3 * a * _down(b))
    return p, _no_swing(b.size)


def kick(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    swing = _alternate(b, 2)
    k = np.sin(np.pi * b / 2) ** 2  # 0 on even beats (foot down), 1 on odd beats (leg out)
    chamber = _lift(b)
    for leg in (0, 1):
        on = (swing == leg).astype(np.float64)
        side = ("left", "right")[leg]
        p[:, J[f"{side}_hip"], 0] -= (45 * k * a) * _DEG * on
        p[:, J[f"{side}_knee"], 0] += (40 * chamber * a) * _DEG * on
        p[:, J[f"{side}_ankle"], 0] += 20 * k * a * _DEG * on
    p[:, J["spine1"], 0] -= 6 * _DEG * k * a
    p[:, J["left_shoulder"], 1] -= 25 * _DEG * k * a
    p[:, J["right_shoulder"], 1] += 25 * _DEG * k * a
    return p, swing


def turn(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    tw = 12 * _DEG * a * _c2(b)
    for spine in ("spine1", "spine2", "spine3"):
        p[:, J[spine], 1] += tw
    p[:, J["neck"], 1] -= 0.8 * tw
    p[:, J["left_shoulder"], 1] -= 2 * tw
    p[:, J["right_shoulder"], 1] -= 2 * tw
    p[:, J["left_elbow"], 1] -= 50 * _DEG
    p[:, J["right_elbow"], 1] += 50 * _DEG
    knee_bend(p, 6 * a * _down(b))
    return p, _no_swing(b.size)


def shuffle(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    heels = 1 - _down(b)  # heels up between beats, down on the beat; toes stay planted
    for side in ("left", "right"):
        p[:, J[f"{side}_ankle"], 0] += 22 * _DEG * a * heels
        p[:, J[f"{side}_foot"], 0] -= 22 * _DEG * a * heels
    knee_bend(p, 4 * a * _down(b))
    s = 8 * _DEG * a * _c2(b)
    p[:, J["left_shoulder"], 1] -= s + 15 * _DEG
    p[:, J["right_shoulder"], 1] -= s - 15 * _DEG
    p[:, J["left_elbow"], 1] -= 60 * _DEG
    p[:, J["right_elbow"], 1] += 60 * _DEG
    return p, _no_swing(b.size)


def point(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    r = 0.5 * (1 - _c2(b))  # right arm out on odd beats, left on even
    left = 1 - r
    p[:, J["right_shoulder"], 2] -= (95 * r * a) * _DEG
    p[:, J["right_shoulder"], 1] += 30 * r * a * _DEG
    p[:, J["right_elbow"], 1] -= 15 * r * a * _DEG
    p[:, J["left_shoulder"], 2] += (95 * left * a) * _DEG
    p[:, J["left_shoulder"], 1] -= 30 * left * a * _DEG
    p[:, J["left_elbow"], 1] += 15 * left * a * _DEG
    p[:, J["spine1"], 1] += 8 * _DEG * a * _c2(b)
    knee_bend(p, 6 * a * _down(b))
    return p, _no_swing(b.size)


def body_roll(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    w = a * _c2(b)
    p[:, J["spine1"], 0] += 8 * _DEG * w
    p[:, J["spine2"], 0] -= 8 * _DEG * w
    p[:, J["spine3"], 0] += 6 * _DEG * w
    p[:, J["neck"], 0] -= 10 * _DEG * w
    p[:, J["left_shoulder"], 1] -= 20 * _DEG * (1 + w)
    p[:, J["right_shoulder"], 1] += 20 * _DEG * (1 + w)
    knee_bend(p, 7 + 5 * a * _down(b))
    return p, _no_swing(b.size)


def march(b: F64, a: F64) -> tuple[F64, I64]:
    p = base_pose(b.size)
    swing = _alternate(b, 1)
    _lift_swinging_leg(p, swing, _lift(b), 45 * a, 65 * a)
    arm = 25 * _DEG * a * _c2(b)  # arms swing opposite to the legs
    p[:, J["left_shoulder"], 1] += arm
    p[:, J["right_shoulder"], 1] += arm
    p[:, J["left_elbow"], 1] -= 50 * _DEG
    p[:, J["right_elbow"], 1] += 50 * _DEG
    return p, swing


MOVES: dict[str, Move] = {
    "bounce": bounce,
    "sway": sway,
    "step_touch": step_touch,
    "arm_pump": arm_pump,
    "arm_wave": arm_wave,
    "clap": clap,
    "head_nod": head_nod,
    "hip_roll": hip_roll,
    "kick": kick,
    "turn": turn,
    "shuffle": shuffle,
    "point": point,
    "body_roll": body_roll,
    "march": march,
}
