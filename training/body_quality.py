"""Body-tracking quality against MediaPipe's own graph: landmark error normalised by torso size, and
joint-angle errors (elbow flexion, shoulder elevation, wrist, finger curl), from the same frames.

Used by tests/test_body_tracking.py and bench/body.py; the oracle's landmarks come from
tests/oracles/holistic.py (MediaPipe 0.10.21's Holistic, run in a subprocess by `oracle`). The
images are real photos that ship in packages (`photos`) and clips warped from them (`warped_clip`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt

from bridge.models.mediapipe.body_locate import VERSION
from bridge.pipelines.body_tracking import BodyRows, BodyTracker

F64 = npt.NDArray[np.float64]
U8 = npt.NDArray[np.uint8]

# scripts/install.sh --dev puts MediaPipe's wheel here, apart from the venv's packages (it needs numpy < 2).
ORACLE_DIR = Path(sys.prefix) / f"mediapipe-{VERSION}-oracle"
ORACLE = Path(__file__).resolve().parents[1] / "tests" / "oracles" / "holistic.py"


def track(tracker: BodyTracker, images: list[U8], tracking: bool) -> BodyRows:
    """Each frame through the tracker: fresh (detection every frame, as the oracle's still-image mode)
    or tracking (the region from the previous frame's landmarks)."""
    state = tracker.open()
    rows = []
    for k, image in enumerate(images):
        if not tracking:
            state = tracker.open()
        rows.append(tracker.run([state], [tracker.prepare(state, image, (k + 1) / 30.0)]))
    return BodyRows(*(np.concatenate([getattr(r, f) for r in rows]) for f in BodyRows.__dataclass_fields__))


class OracleMissing(RuntimeError):
    """MediaPipe's own graph is not installed here (scripts/install.sh --dev)."""


def oracle(images: list[U8], tmp: Path, mode: str = "still") -> dict[str, F64]:
    """MediaPipe Holistic's landmarks for same-sized RGB images (tests/oracles/holistic.py's OUT.npz
    arrays: pose, world, hands, ms)."""
    if not (ORACLE_DIR / "mediapipe").is_dir():
        raise OracleMissing(f"MediaPipe {VERSION} oracle not installed at {ORACLE_DIR} (install.sh --dev)")
    if len({im.shape for im in images}) != 1:
        raise ValueError("the oracle takes images of one size")
    np.save(tmp / "images.npy", np.stack(images))
    env = dict(os.environ, PYTHONPATH=str(ORACLE_DIR))
    run = subprocess.run(
        [sys.executable, str(ORACLE), str(tmp / "images.npy"), str(tmp / "oracle.npz"), mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if run.returncode != 0:
        raise RuntimeError(f"the oracle failed: {run.stderr[-2000:]}")
    return dict(np.load(tmp / "oracle.npz"))


def photos() -> list[U8]:
    """The photos scored, RGB 512x512: scikit-image's astronaut, her mirror image, and matplotlib's
    Grace Hopper portrait. scikit-image's cameraman is left out: his body region hangs on the frame's
    edge, where moving the region half a pixel moves some landmarks by 15 % of the torso (in MediaPipe
    as here), so any two runs differ there."""
    import matplotlib.cbook as cbook
    from skimage import data

    hopper = np.asarray(cv2.imread(str(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))))
    astronaut: U8 = data.astronaut()  # type: ignore[no-untyped-call]
    portrait = cv2.resize(cv2.cvtColor(hopper, cv2.COLOR_BGR2RGB)[:512], (512, 512))
    return [astronaut, np.ascontiguousarray(astronaut[:, ::-1]), np.asarray(portrait, np.uint8)]


# Real photos of people with their hands in view that MediaPipe finds, from OpenCV's samples (Debian's
# opencv-doc, installed by scripts/install.sh --dev): the Middlebury "Basketball" pair (grey, two people
# throwing a ball) and a footballer. Hands there are small (16-26 px from wrist to middle knuckle).
OPENCV_SAMPLES = Path("/usr/share/doc/opencv-doc/examples/data")
HAND_PHOTOS = ("basketball1.png", "basketball2.png", "messi5.jpg")


def hand_photos() -> list[U8]:
    """The hand photos, RGB (not of one size); FileNotFoundError where opencv-doc is not installed."""
    out: list[U8] = []
    for name in HAND_PHOTOS:
        image = cv2.imread(str(OPENCV_SAMPLES / name))
        if image is None:
            raise FileNotFoundError(f"{OPENCV_SAMPLES / name} (opencv-doc: scripts/install.sh --dev)")
        out.append(np.ascontiguousarray(cv2.cvtColor(image, cv2.COLOR_BGR2RGB), np.uint8))
    return out


def hand_size(hands: F64) -> F64:
    """Wrist to middle-finger knuckle (image pixels) per hand; hands (..., 21, >=2)."""
    size: F64 = np.linalg.norm(hands[..., 9, :2] - hands[..., 0, :2], axis=-1)
    return size


def hand_error(ours: F64, oracle: F64) -> F64:
    """Per landmark of hands both found (n, 21, >=2 each), the image-plane distance over the oracle's
    hand size (n, 21)."""
    d: F64 = np.linalg.norm(ours[..., :2] - oracle[..., :2], axis=-1) / hand_size(oracle)[:, None]
    return d


def warped_clip(image: U8, frames: int = 8) -> list[U8]:
    """The photo turning up to 10 degrees, zooming and sliding: a clip for the tracking path."""
    h, w = image.shape[:2]
    out: list[U8] = []
    for i in range(frames):
        k = i / (frames - 1)
        m = cv2.getRotationMatrix2D((w / 2, h / 2), 10.0 * np.sin(2 * np.pi * k), 1.0 - 0.15 * k)
        m[0, 2] += 20 * k
        warped = cv2.warpAffine(image, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
        out.append(np.asarray(warped, np.uint8))
    return out


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
