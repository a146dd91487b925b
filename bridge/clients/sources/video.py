"""Image sources over OpenCV's capture: a video file (paced by the feeder, optionally looped) and a camera.

The camera adapter is thin on purpose: no test here has a camera, so `CameraSource` is exercised only
through a fake capture object (tests/test_sources.py); what it does with a real device is OpenCV's.
"""

from __future__ import annotations

import glob
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from bridge.clients.sources.base import SourceError, SourceKind
from bridge.system_packages import FFMPEG, OPENCV_FFMPEG, reencode_command

__all__ = ["CameraSource", "VideoFileSource", "camera_devices"]

_DEFAULT_FPS = 30.0


def _rgb(frame: Any) -> npt.NDArray[np.uint8]:
    return np.ascontiguousarray(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB), np.uint8)


class VideoFileSource:
    """Frames of a video file at the file's own frame rate."""

    kind: SourceKind = "image"
    realtime = False
    live = False

    def __init__(self, path: Path) -> None:
        self.label = str(path)
        if not path.is_file():
            raise SourceError(f"video {path}: no such file")
        self._capture = cv2.VideoCapture(str(path))
        ok, first = self._capture.read() if self._capture.isOpened() else (False, None)
        if not ok:
            self._capture.release()
            raise SourceError(f"video {path}: not a video OpenCV can decode; {_decoder_fix(path)}")
        self._first: npt.NDArray[np.uint8] | None = _rgb(first)
        fps = float(self._capture.get(cv2.CAP_PROP_FPS))
        self.rate = fps if 1.0 <= fps <= 240.0 else _DEFAULT_FPS
        self.size = (self._first.shape[1], self._first.shape[0])

    def read(self) -> npt.NDArray[np.uint8] | None:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        ok, frame = self._capture.read()
        return _rgb(frame) if ok else None

    def rewind(self) -> None:
        self._capture.set(cv2.CAP_PROP_POS_FRAMES, 0)

    def reopen(self) -> None:  # a file does not come back
        raise SourceError(f"video {self.label}: ended")

    def describe(self) -> str:
        return f"video {self.label}: {self.size[0]}x{self.size[1]} at {self.rate:g} fps"

    def close(self) -> None:
        self._capture.release()


def _decoder_fix(path: Path) -> str:
    if not cv2.videoio_registry.hasBackend(cv2.CAP_FFMPEG):
        return f"this OpenCV has no FFmpeg video backend: {OPENCV_FFMPEG.fix()}"
    return (
        f"if it plays elsewhere, make an H.264 copy OpenCV decodes: `{reencode_command(str(path))}` "
        f"(to get ffmpeg, {FFMPEG.fix()})"
    )


def camera_devices() -> list[str]:
    """Camera devices this machine shows (Linux: /dev/video*); elsewhere OpenCV takes indices 0, 1, ..."""
    if sys.platform.startswith("linux"):
        return sorted(glob.glob("/dev/video*"))
    return []


def _device_hint() -> str:
    found = camera_devices()
    return f"devices here: {', '.join(found)}" if found else "no camera devices found (try index 0, 1, ...)"


class CameraSource:
    """A camera by index or device path, at a requested size, frame rate and pixel format (FOURCC)."""

    kind: SourceKind = "image"
    realtime = True
    live = True

    def __init__(
        self,
        device: str,
        *,
        size: tuple[int, int] | None = None,
        fps: float | None = None,
        fourcc: str | None = None,
        capture: Any = None,  # a cv2.VideoCapture-like object (tests); None opens the device
    ) -> None:
        self.label = f"camera {device}"
        self._device: int | str = int(device) if device.isdigit() else device
        self._wanted = (size, fps, fourcc)
        self._capture = capture if capture is not None else self._open()
        self._configure()

    def _open(self) -> Any:
        capture = cv2.VideoCapture(self._device)
        if not capture.isOpened():
            capture.release()
            raise SourceError(f"{self.label}: cannot open (unknown or busy); {_device_hint()}")
        return capture

    def _configure(self) -> None:
        size, fps, fourcc = self._wanted
        if fourcc is not None:
            self._capture.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter.fourcc(*fourcc))
        if size is not None:
            self._capture.set(cv2.CAP_PROP_FRAME_WIDTH, size[0])
            self._capture.set(cv2.CAP_PROP_FRAME_HEIGHT, size[1])
        if fps is not None:
            self._capture.set(cv2.CAP_PROP_FPS, fps)
        # Report what the driver granted, not what was asked for.
        actual_fps = float(self._capture.get(cv2.CAP_PROP_FPS))
        self.rate = actual_fps if actual_fps >= 1.0 else (fps or _DEFAULT_FPS)
        self.size = (
            int(self._capture.get(cv2.CAP_PROP_FRAME_WIDTH)),
            int(self._capture.get(cv2.CAP_PROP_FRAME_HEIGHT)),
        )
        code = int(self._capture.get(cv2.CAP_PROP_FOURCC))
        self.fourcc = "".join(chr((code >> (8 * i)) & 0xFF) for i in range(4)) if code else "?"

    def read(self) -> npt.NDArray[np.uint8] | None:
        ok, frame = self._capture.read()
        return _rgb(frame) if ok else None

    def rewind(self) -> None:
        pass

    def reopen(self) -> None:
        self._capture.release()
        self._capture = self._open()
        self._configure()

    def describe(self) -> str:
        return f"{self.label}: {self.size[0]}x{self.size[1]} at {self.rate:g} fps, {self.fourcc}"

    def close(self) -> None:
        self._capture.release()
