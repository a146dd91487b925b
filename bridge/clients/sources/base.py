"""What every live source offers the feeder, and the one error a source raises."""

from __future__ import annotations

from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

__all__ = ["MediaSource", "SourceError", "SourceKind"]

SourceKind = Literal["image", "audio"]


class SourceError(RuntimeError):
    """A source cannot open or read; the message names the file or device (and lists devices)."""


class MediaSource(Protocol):
    """Frames (RGB uint8, HxWx3) or audio chunks (mono float32) in capture order, at `rate` per second."""

    kind: SourceKind
    label: str  # the file or device, for messages and events
    rate: float  # image sources: frames/s; audio sources: samples/s
    realtime: bool  # a live device paces itself; files are paced by the feeder
    live: bool  # a device that may vanish and come back (retried), not a file (which ends)

    def read(self) -> npt.NDArray[np.uint8] | npt.NDArray[np.float32] | None:
        """The next frame or chunk; None at a file's end or when a device stops delivering."""

    def rewind(self) -> None:
        """Start a file again (loop); devices ignore it."""

    def reopen(self) -> None:
        """Open a lost device again; raises SourceError while it is still gone."""

    def describe(self) -> str:
        """The values actually in use (size, fps, rate, format), for the start log."""

    def close(self) -> None: ...
