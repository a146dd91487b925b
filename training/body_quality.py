"""Body-tracking quality against MediaPipe's own graph: landmark error normalised by torso size, and
joint-angle errors (elbow flexion, shoulder elevation, wrist, finger curl), from the same frames.

Used by tests/test_body_tracking.py and bench/body.py; the oracle's landmarks come from
tests/oracles/holistic.py (MediaPipe 0.10.21's Holistic, run in a subprocess).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]

L_SHOULDER, R_SHOULDER, L_ELBOW, R_ELBOW, L_WRIST, R_WRIST = 11, 12, 13, 14, 15, 16
L_INDEX, R_INDEX, L_HIP, R_HIP = 19, 20, 23, 24
MIN_VISIBILITY = 0.5  # landmarks scored: those the oracle sees


def torso_size(pose: F64) -> F64:
    """Distance from mid-shoulder to mid-hip (image pixels) per frame; pose (n, 33, >=2)."""
    shoulders = (pose[:, L_SHOULDER, :2] + pose[:, R_SHOULDER, :2]) / 2
    hips = (pose[:, L_HIP, :2] + pose[:, R_HIP, :2]) / 2
    size: F64 = np.linalg.norm(shoulders - hips, axis=1)
    return size


def landmark_error(ours: F64, oracle: F64, visibility: F64) -> F64:
    """Per visible landmark, the image-plane distance over the frame's torso size (a flat array)."""
    d = np.linalg.norm(ours[..., :2] - oracle[..., :2], axis=-1) / torso_size(oracle)[:, None]
    out: F64 = d[visibility >= MIN_VISIBILITY]
    return out


def _angle(a: F64, b: F64) -> F64:
    cos = (a * b).sum(-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)
    out: F64 = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
    return out


def joint_angles(world: F64) -> dict[str, F64]:
    """Angles in degrees from world landmarks (n, 33, 3), both sides stacked: elbow flexion, shoulder
    elevation (upper arm against the torso's down), wrist (forearm against wrist -> index)."""
    down = (world[:, [L_HIP, R_HIP]] - world[:, [L_SHOULDER, R_SHOULDER]]).mean(1)
    out: dict[str, list[F64]] = {"elbow_flexion": [], "shoulder_elevation": [], "wrist": []}
    for sh, el, wr, ix in ((L_SHOULDER, L_ELBOW, L_WRIST, L_INDEX), (R_SHOULDER, R_ELBOW, R_WRIST, R_INDEX)):
        upper, fore = world[:, el] - world[:, sh], world[:, wr] - world[:, el]
        out["elbow_flexion"].append(_angle(upper, fore))
        out["shoulder_elevation"].append(_angle(upper, down))
        out["wrist"].append(_angle(fore, world[:, ix] - world[:, wr]))
    return {k: np.concatenate(v) for k, v in out.items()}


def finger_curl(hands: F64) -> F64:
    """Per finger (index to little) of each hand (n, 21, 3): the angle between knuckle and tip segments."""
    curls = [_angle(hands[:, b + 1] - hands[:, b], hands[:, b + 3] - hands[:, b + 2]) for b in (5, 9, 13, 17)]
    out: F64 = np.concatenate(curls)
    return out
