"""Dance quality metrics on SMPL pose sequences at 60 FPS.

- Beat Align Score (Bailando, utils/beat_align_score.py): kinematic beats are the local minima of the
  mean joint speed after Gaussian smoothing (σ = 5 frames); the score is the mean over music beats of
  exp(−d²/(2·3²)), d in frames to the nearest kinematic beat.
- Foot skating: mean horizontal speed (m/s) of a foot joint over the frames where it is within 2.5 cm
  of its lowest height in the clip (in contact), over both feet.
- Jerk: mean magnitude of the third time derivative of joint positions (m/s³).
- PFC (EDGE's physical foot contact): mean over frames of min over feet of (foot horizontal speed ·
  foot's... ) — here EDGE's form: root horizontal acceleration × min(left, right foot speed), scaled as
  in EDGE (speeds normalised by their maximum in the clip); lower is more physical.
- Diversity: mean pairwise distance between clips' mean joint-position features (centred on the root).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.ndimage import gaussian_filter1d
from scipy.signal import argrelextrema

from bridge.rig.forward_kinematics import forward_kinematics

__all__ = [
    "beat_align_score",
    "diversity",
    "foot_skating",
    "jerk",
    "joints_of",
    "kinematic_beats",
    "pfc",
    "planted",
]

F64 = npt.NDArray[np.float64]
_FEET = (7, 8, 10, 11)  # ankles and toes
_CONTACT_M = 0.025


def joints_of(poses: npt.ArrayLike) -> F64:
    """(T, 75) poses → (T, 24, 3) world joint positions."""
    p = np.asarray(poses, np.float64)
    return forward_kinematics(p[:, :72].reshape(-1, 24, 3), p[:, 72:75])


def planted(poses: npt.ArrayLike) -> F64:
    """(B, T, 75) raw model poses → the same poses as served with foot planting: each frame through
    the motion post-processing (guard, joint limits, planted feet; no low-pass), the rows of one
    call as sessions; the root translation is the planted one."""
    from bridge.filters.output_guard import GuardStats
    from bridge.motion.post import MotionPost  # the served post, not a copy of its rules
    from bridge.rig.rotations import quat_to_axis_angle

    p = np.asarray(poses, np.float32)
    b, t = p.shape[:2]
    post = MotionPost(GuardStats(), 1.0 / 60.0, foot_plant=True)
    slots = np.arange(b)
    post.prepare(b, slots)
    quats, out = np.empty((b, t, 24, 4), np.float32), np.empty((b, t, 75), np.float64)
    for i in range(t):
        quats[:, i], out[:, i, 72:], _ = post.step(slots, p[:, i], np.zeros(b, np.float32))
    out[..., :72] = np.asarray(quat_to_axis_angle(quats), np.float64).reshape(b, t, 72)
    return out


def kinematic_beats(joints: F64) -> npt.NDArray[np.int64]:
    speed = np.linalg.norm(np.diff(joints, axis=0), axis=-1).mean(axis=1)
    smooth = gaussian_filter1d(speed, 5)
    minima: npt.NDArray[np.int64] = argrelextrema(smooth, np.less)[0].astype(np.int64)
    return minima


def beat_align_score(joints: F64, music_beats: npt.ArrayLike) -> float:
    beats = np.asarray(music_beats, np.float64)
    kin = kinematic_beats(joints)
    if beats.size == 0 or kin.size == 0:
        return 0.0
    d = np.abs(beats[:, None] - kin[None, :]).min(axis=1)
    return float(np.mean(np.exp(-(d**2) / (2 * 3.0**2))))


def foot_skating(joints: F64, fps: float = 60.0) -> float:
    feet = joints[:, _FEET]
    height = feet[..., 1] - feet[..., 1].min(axis=0, keepdims=True)
    speed = np.linalg.norm(np.diff(feet[..., [0, 2]], axis=0), axis=-1) * fps
    contact = height[1:] < _CONTACT_M
    return float(speed[contact].mean()) if contact.any() else 0.0


def jerk(joints: F64, fps: float = 60.0) -> float:
    return float(np.linalg.norm(np.diff(joints, n=3, axis=0), axis=-1).mean() * fps**3)


def pfc(joints: F64, fps: float = 60.0) -> float:
    """EDGE's PFC: mean over frames of |root horizontal acceleration| · min over feet of the foot's
    horizontal speed, with each term normalised by its maximum in the clip (EDGE's definition)."""
    root_acc = np.linalg.norm(np.diff(joints[:, 0, [0, 2]], n=2, axis=0), axis=-1) * fps**2
    speeds = [np.linalg.norm(np.diff(joints[:, f, [0, 2]], axis=0), axis=-1)[1:] * fps for f in (10, 11)]
    foot = np.minimum(speeds[0] / max(speeds[0].max(), 1e-9), speeds[1] / max(speeds[1].max(), 1e-9))
    acc = root_acc / max(root_acc.max(), 1e-9)
    return float(np.mean(acc * foot) * 1e4 / 1e4)


def diversity(clips: list[F64]) -> float:
    feats = [
        np.concatenate([(j - j[:, :1]).mean(axis=0).ravel(), (j - j[:, :1]).std(axis=0).ravel()])
        for j in clips
    ]
    if len(feats) < 2:
        return 0.0
    d = [np.linalg.norm(a - b) for i, a in enumerate(feats) for b in feats[i + 1 :]]
    return float(np.mean(d))
