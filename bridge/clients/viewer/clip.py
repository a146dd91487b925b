"""A short MP4 of the viewer page from headless Chromium: the compositor's frames (the DevTools
protocol's screencast, JPEG, as the page shows them) resampled to a constant frame rate and encoded to
H.264 by the `ffmpeg` command.

The screencast sends a frame whenever the page changes, so frames come at the page's own rate; each
output frame repeats the newest screencast frame at its time.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

__all__ = ["ScreencastClip", "can_encode", "resample"]

FPS = 25


def can_encode() -> bool:
    return shutil.which("ffmpeg") is not None


def resample(times_s: list[float], fps: float) -> list[int]:
    """For each output frame from the first input frame's time to the last's, the index of the newest
    input frame at or before it (`times_s` ascending)."""
    if not times_s:
        return []
    out: list[int] = []
    index = 0
    count = int((times_s[-1] - times_s[0]) * fps) + 1
    for k in range(count):
        at = times_s[0] + k / fps
        while index + 1 < len(times_s) and times_s[index + 1] <= at:
            index += 1
        out.append(index)
    return out


class ScreencastClip:
    """Records a Playwright page's screencast between `start()` and `stop()`; `write()` encodes it."""

    def __init__(self, page: Any, size: tuple[int, int]) -> None:
        self._session = page.context.new_cdp_session(page)
        self._size = size
        self._lock = threading.Lock()
        self._frames: list[tuple[float, bytes]] = []  # (compositor timestamp s, JPEG)
        self._session.on("Page.screencastFrame", self._on_frame)

    def _on_frame(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._frames.append((float(event["metadata"]["timestamp"]), base64.b64decode(event["data"])))
        # Chromium sends the next frame only after this one is acknowledged.
        self._session.send("Page.screencastFrameAck", {"sessionId": event["sessionId"]})

    def start(self) -> None:
        width, height = self._size
        self._session.send(
            "Page.startScreencast",
            {"format": "jpeg", "quality": 85, "maxWidth": width, "maxHeight": height, "everyNthFrame": 1},
        )

    def stop(self) -> None:
        self._session.send("Page.stopScreencast")

    @property
    def seconds(self) -> float:
        with self._lock:
            return self._frames[-1][0] - self._frames[0][0] if len(self._frames) > 1 else 0.0

    def write(self, path: Path, fps: int = FPS) -> Path:
        """The recorded frames as an H.264 MP4 at `fps` (yuv420p: plays everywhere)."""
        with self._lock:
            frames = sorted(self._frames)
        if len(frames) < 2:
            raise RuntimeError("the screencast sent fewer than two frames")
        command = [
            "ffmpeg", "-y", "-loglevel", "error",
            "-f", "image2pipe", "-c:v", "mjpeg", "-framerate", str(fps), "-i", "-",
            "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
            # x264's 4:2:0 wants even sizes; the page's size may be odd
            "-vf", "scale=trunc(iw/2)*2:trunc(ih/2)*2", "-movflags", "+faststart", str(path),
        ]  # fmt: skip
        pictures = b"".join(frames[i][1] for i in resample([t for t, _ in frames], fps))
        done = subprocess.run(command, input=pictures, capture_output=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"ffmpeg failed ({done.returncode}): {done.stderr.decode(errors='replace')[-300:]}"
            )
        return path
