"""Face pre-processing: Haar-cascade face detection, a per-session box tracker, and the DECA crop.

Detection uses OpenCV's frontal-face Haar cascade (``haarcascade_frontalface_default.xml``), bundled
with the OpenCV 4.x wheels under ``cv2.data.haarcascades`` and run by ``cv2.CascadeClassifier``.
OpenCV 5 dropped both from its main wheels, which is why the project pins ``opencv-python-headless<5``.
Another cascade XML can be used with ``$AVATAR_BRIDGE_FACE_CASCADE``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import NamedTuple

import cv2
import numpy as np
import numpy.typing as npt

CASCADE_FILE = "haarcascade_frontalface_default.xml"
CASCADE_ENV = "AVATAR_BRIDGE_FACE_CASCADE"

# DECA's crop rule for detector boxes (decalib/datasets/datasets.py, bbox2point, type 'bbox'):
# square of side mean(w, h) × 1.25, centred on the box centre moved down by 0.12 × mean(w, h).
CROP_SCALE = 1.25
CROP_SHIFT_DOWN = 0.12


class Box(NamedTuple):
    """An axis-aligned face box in pixels of the full-resolution frame."""

    x: float
    y: float
    w: float
    h: float


def find_cascade(path: str | os.PathLike[str] | None = None) -> Path:
    """The cascade XML: the path given, else ``$AVATAR_BRIDGE_FACE_CASCADE``, else OpenCV's bundled one."""
    env = os.environ.get(CASCADE_ENV)
    bundled = getattr(getattr(cv2, "data", None), "haarcascades", None)
    candidate = Path(path or env or Path(bundled or ".") / CASCADE_FILE)
    if not candidate.is_file():
        raise FileNotFoundError(
            f"face cascade {candidate} not found: install opencv-python-headless<5 (which bundles "
            f"{CASCADE_FILE}) or set {CASCADE_ENV}"
        )
    return candidate


class FaceDetector:
    """Frontal-face detector run on a downscaled grey copy of the frame (cost scales with pixels).

    ``detect_width``: for a full-frame search the frame is shrunk to this width (never enlarged);
    ``min_face``: smallest face, in pixels of that shrunk copy. ``detect(..., near=box)`` searches
    only within 0.75 face sizes of a known face and only at 0.75-1.35x its size, on a copy scaled
    so that face is ~40 px wide, accepting weaker clusters (the known face is the prior): what a
    tracker needs, at about a tenth of the cost. One detector can be shared by many sessions: it
    holds no per-frame state.
    """

    _NEAR_FACE_PX = 40.0
    _NEAR_MARGIN = 0.75  # search this many face sizes beyond each side of the known box
    _NEAR_MIN_NEIGHBORS = 1

    def __init__(
        self,
        cascade_path: str | os.PathLike[str] | None = None,
        detect_width: int = 256,
        min_face: int = 24,
        scale_factor: float = 1.2,
        min_neighbors: int = 3,
    ) -> None:
        self.cascade_path = find_cascade(cascade_path)
        self.detect_width = detect_width
        self.min_face = min_face
        self.scale_factor = scale_factor
        self.min_neighbors = min_neighbors
        self._cascade = cv2.CascadeClassifier(str(self.cascade_path))
        if self._cascade.empty():
            raise ValueError(f"{self.cascade_path} is not a readable Haar cascade")

    def detect(self, rgb: npt.NDArray[np.uint8], near: Box | None = None) -> list[Box]:
        """Faces in an ``H×W×3`` RGB uint8 frame, most confident first, in full-resolution pixels."""
        h, w = rgb.shape[:2]
        x0, y0 = 0, 0
        neighbors = self.min_neighbors
        if near is None:
            k = min(1.0, self.detect_width / w)
            lo, hi = float(self.min_face), None
        else:
            # Search a 2.5x box around the known face, scaled so that face is ~40 px wide.
            side = 0.5 * (near.w + near.h)
            pad = self._NEAR_MARGIN * side
            x0, y0 = max(0, int(near.x - pad)), max(0, int(near.y - pad))
            x1, y1 = min(w, int(near.x + near.w + pad)), min(h, int(near.y + near.h + pad))
            if x1 - x0 < 8 or y1 - y0 < 8:
                return []
            rgb = rgb[y0:y1, x0:x1]
            k = min(1.0, self._NEAR_FACE_PX / side)
            lo, hi = 0.75 * side * k, 1.35 * side * k
            neighbors = min(neighbors, self._NEAR_MIN_NEIGHBORS)
            h, w = rgb.shape[:2]
        if k < 1.0:
            rgb = np.asarray(
                cv2.resize(rgb, (round(w * k), round(h * k)), interpolation=cv2.INTER_AREA), np.uint8
            )
        gray = np.asarray(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), np.uint8)
        lo_px = round(lo)
        hi_px = round(hi) if hi is not None else 0
        found = self._cascade.detectMultiScale(
            gray, self.scale_factor, neighbors, minSize=(lo_px, lo_px), maxSize=(hi_px, hi_px)
        )
        boxes = np.asarray(found, np.float32).reshape(-1, 4)
        return [Box(x0 + b[0] / k, y0 + b[1] / k, b[2] / k, b[3] / k) for b in boxes.tolist()]


@functools.lru_cache(maxsize=1)
def default_detector() -> FaceDetector:
    """One shared detector (the cascade is parsed once per process)."""
    return FaceDetector()


def _iou(a: Box, b: Box) -> float:
    ix = max(0.0, min(a.x + a.w, b.x + b.w) - max(a.x, b.x))
    iy = max(0.0, min(a.y + a.h, b.y + b.h) - max(a.y, b.y))
    inter = ix * iy
    return inter / (a.w * a.h + b.w * b.h - inter)


class FaceTracker:
    """Per-session face box.

    While a face is tracked, every ``redetect_every``-th ``update`` re-detects only near the current
    box (cheap) and blends the new box into the old one (``smoothing`` = weight of the old box) so
    the crop does not jitter; frames in between reuse the box. A miss holds the last box for up to
    ``max_missed`` re-detections, then the face is reported lost (None) and the whole frame is
    searched, at most once every ``search_every`` frames so a face-less camera stays cheap.
    """

    def __init__(
        self,
        detector: FaceDetector | None = None,
        redetect_every: int = 2,
        max_missed: int = 5,
        smoothing: float = 0.6,
        search_every: int = 4,
    ) -> None:
        self.detector = detector if detector is not None else default_detector()
        self.redetect_every = max(1, redetect_every)
        self.max_missed = max_missed
        self.smoothing = smoothing
        self.search_every = max(1, search_every)
        self.box: Box | None = None
        self.missed = 0
        self._countdown = 0

    def reset(self) -> None:
        self.box = None
        self.missed = 0
        self._countdown = 0

    def update(self, rgb: npt.NDArray[np.uint8]) -> Box | None:
        """Feed one RGB frame; returns the current face box, or None while no face is tracked."""
        if self._countdown > 0:
            self._countdown -= 1
            return self.box
        prev = self.box
        if prev is None:
            faces = self.detector.detect(rgb)
            if faces:
                self.box = faces[0]
                self.missed = 0
                self._countdown = self.redetect_every - 1
            else:
                self._countdown = self.search_every - 1
            return self.box
        self._countdown = self.redetect_every - 1
        faces = self.detector.detect(rgb, near=prev)
        if not faces:
            self.missed += 1
            if self.missed > self.max_missed:
                self.box = None
                self._countdown = 0
            return self.box
        self.missed = 0
        best = max(faces, key=lambda f: _iou(f, prev))
        a = self.smoothing
        self.box = Box(*(a * p + (1.0 - a) * n for p, n in zip(prev, best, strict=True)))
        return self.box


def crop_transform(box: Box, size: int = 224) -> npt.NDArray[np.float64]:
    """The 2×3 similarity (here: scale + shift) mapping frame pixels to the DECA crop."""
    side = 0.5 * (box.w + box.h)
    cx = box.x + 0.5 * box.w
    cy = box.y + 0.5 * box.h + CROP_SHIFT_DOWN * side
    side *= CROP_SCALE
    # DECA maps the square's corners onto (0, 0) and (size-1, size-1).
    k = (size - 1) / side
    return np.array([[k, 0.0, -k * (cx - 0.5 * side)], [0.0, k, -k * (cy - 0.5 * side)]])


def crop_face(rgb: npt.NDArray[np.uint8], box: Box, size: int = 224) -> npt.NDArray[np.uint8]:
    """DECA-style aligned crop: ``H×W×3`` RGB uint8 → ``size×size×3`` RGB uint8 (the engine takes it
    as it is: bridge.runtime.images).

    Pixels outside the frame are black, as in DECA's warp.
    """
    warped = cv2.warpAffine(
        rgb, crop_transform(box, size), (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT
    )
    return np.asarray(warped, np.uint8)
