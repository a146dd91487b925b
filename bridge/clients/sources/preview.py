"""`--preview DIR`: what the bridge sees, as a picture per source refreshed a few times a second.

Face sources: the last image sent with the head axes of the frame that came back drawn on it (red +X,
green +Y, blue +Z in the wire axes, seen by the camera) and a "face lost" banner. Audio sources: the
last seconds of the dancer's root height as a strip (the bounce shows the beat the dance follows).
"""

from __future__ import annotations

import time
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt

from bridge.protocol.frames import FaceFrame, Frame, MotionFrame
from bridge.rig.rotations import quat_to_matrix

__all__ = ["Preview"]

_PERIOD_S = 0.25
_STRIP = 240  # motion frames shown (4 s at 60 FPS)


def _file_name(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label) + ".png"


class Preview:
    def __init__(self, directory: Path, label: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / _file_name(label)
        self._last_write = 0.0
        self._heights: list[float] = []

    def show(self, frame: Frame, image: npt.NDArray[np.uint8] | None) -> None:
        if isinstance(frame, MotionFrame):
            self._heights = [*self._heights[-(_STRIP - 1) :], float(frame.root[1])]
        now = time.monotonic()
        if now - self._last_write < _PERIOD_S:
            return
        self._last_write = now
        if isinstance(frame, FaceFrame) and image is not None:
            picture = self._face(frame, image)
        elif isinstance(frame, MotionFrame):
            picture = self._strip()
        else:
            return
        tmp = self.path.with_suffix(".tmp.png")
        cv2.imwrite(str(tmp), picture)
        tmp.replace(self.path)  # readers never see a half-written picture

    @staticmethod
    def _face(frame: FaceFrame, image: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        out = np.ascontiguousarray(cv2.cvtColor(image, cv2.COLOR_RGB2BGR), np.uint8)
        h, w = out.shape[:2]
        centre = np.array([w / 2, h / 2])
        axes = quat_to_matrix(frame.head) * (0.25 * min(w, h))
        for column, colour in ((0, (0, 0, 255)), (1, (0, 255, 0)), (2, (255, 0, 0))):
            # Wire axes are Y-up: flip Y for image rows.
            tip = centre + np.array([axes[0, column], -axes[1, column]])
            cv2.line(out, tuple(map(int, centre)), tuple(map(int, tip)), colour, 2)
        if not frame.face_found:
            cv2.putText(out, "face lost", (8, 24), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (0, 0, 255), 2)
        return out

    def _strip(self) -> npt.NDArray[np.uint8]:
        out = np.full((120, _STRIP * 2, 3), 255, np.uint8)
        if len(self._heights) > 1:
            y = np.asarray(self._heights)
            span = max(float(np.ptp(y)), 1e-3)
            rows = (110 - 100 * (y - y.min()) / span).astype(np.int32)
            points = np.stack([np.arange(len(rows)) * 2, rows], axis=1).reshape(-1, 1, 2)
            cv2.polylines(out, [points], False, (40, 40, 40), 1)
        cv2.putText(out, "root height, last 4 s", (4, 14), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1)
        return out
