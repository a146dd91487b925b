"""A short "camera" video made from one bundled face photo, moved, zoomed and tilted over time.

The photo is a crop of `skimage.data.astronaut()` (NASA, public domain), bundled so no download or
scikit-image is needed at run time.
"""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np

FACE_PHOTO = Path(__file__).with_name("data") / "face.jpg"


def load_face_photo() -> np.ndarray:
    """The bundled face photo as RGB uint8."""
    bgr = cv2.imread(str(FACE_PHOTO), cv2.IMREAD_COLOR)
    if bgr is None:
        raise FileNotFoundError(f"bundled face photo missing: {FACE_PHOTO}")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


class FaceVideo:
    """Frame `i` of a synthetic webcam clip: the face sways, nods and zooms a little."""

    def __init__(self, width: int = 320, height: int = 240, fps: float = 60.0) -> None:
        self.width, self.height, self.fps = width, height, fps
        photo = load_face_photo()
        # Fit the photo into the frame with a margin of background around it.
        scale = 0.8 * min(width / photo.shape[1], height / photo.shape[0])
        self._photo = cv2.resize(photo, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)

    def frame(self, index: int) -> np.ndarray:
        t = index / self.fps
        angle = 6.0 * math.sin(2 * math.pi * 0.3 * t)
        zoom = 1.0 + 0.05 * math.sin(2 * math.pi * 0.2 * t)
        dx = 0.05 * self.width * math.sin(2 * math.pi * 0.25 * t)
        dy = 0.03 * self.height * math.sin(2 * math.pi * 0.4 * t)
        h, w = self._photo.shape[:2]
        m = cv2.getRotationMatrix2D((w / 2, h / 2), angle, zoom)
        m[0, 2] += (self.width - w) / 2 + dx
        m[1, 2] += (self.height - h) / 2 + dy
        return cv2.warpAffine(
            self._photo, m, (self.width, self.height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
        )
