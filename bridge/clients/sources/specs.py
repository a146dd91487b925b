"""Which sources `serve` opens: one `SourceSpec` per `--camera/--video/--microphone/--audio` (or config key),
and the one function that turns a spec into an open source."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from bridge.clients.sources.audio import AudioFileSource, MicrophoneSource, check_playback, portaudio
from bridge.clients.sources.base import MediaSource, SourceError
from bridge.clients.sources.video import CameraSource, VideoFileSource

__all__ = ["SourceSpec", "check_sources", "open_source", "parse_size", "voice_into_face"]

SpecKind = Literal["camera", "video", "microphone", "audio"]
_DEFAULT_PIPELINE: dict[SpecKind, str] = {
    "camera": "face",
    "video": "face",
    "microphone": "motion",
    "audio": "motion",
}


@dataclass(frozen=True)
class SourceSpec:
    kind: SpecKind
    target: str  # camera index or device, file path, microphone name or index ("" = default input)
    pipeline: str | None = None  # None: face for images, motion for audio
    loop: bool = False  # files
    size: tuple[int, int] | None = None  # camera
    fps: float | None = None  # camera
    fourcc: str | None = None  # camera pixel format, e.g. MJPG
    play_offset_s: float | None = None  # audio files: play to the speakers, this long after sending
    # A speech source whose voice goes into the one image source's face session (opened with `speech:
    # true`) instead of a speech session of its own: the camera and the microphone as one avatar.
    into_face: bool = False

    @property
    def session_pipeline(self) -> str:
        return self.pipeline or _DEFAULT_PIPELINE[self.kind]


def parse_size(text: str) -> tuple[int, int]:
    """`WxH` -> (W, H)."""
    width, sep, height = text.lower().partition("x")
    if not (sep and width.isdigit() and height.isdigit() and int(width) > 0 and int(height) > 0):
        raise ValueError(f"size {text!r}: expected WIDTHxHEIGHT, e.g. 640x480")
    return int(width), int(height)


def voice_into_face(specs: list[SourceSpec]) -> list[SourceSpec]:
    """`specs` with the voice marked `into_face` when there is exactly one camera or video and exactly one
    microphone or sound file for speech; otherwise (several faces or voices: which goes with which is
    not known) unchanged. Audio for a motion session (a song for the dancer) is never a voice."""
    images = [s for s in specs if s.kind in ("camera", "video")]
    voices = [s for s in specs if s.kind in ("microphone", "audio") and s.session_pipeline == "speech"]
    if len(images) != 1 or len(voices) != 1:
        return specs
    return [replace(s, into_face=True) if s is voices[0] else s for s in specs]


def check_sources(specs: list[SourceSpec]) -> None:
    """What the sources need from this machine, checked before the bridge loads its models: PortAudio
    for a microphone and for --play, a decoder for each video file. Raises SourceError naming the fix.
    Devices themselves are opened once, by `open_source`."""
    for spec in specs:
        if spec.kind == "microphone":
            portaudio()
        elif spec.kind == "audio" and spec.play_offset_s is not None:
            check_playback()
        elif spec.kind == "video":
            VideoFileSource(Path(spec.target)).close()


def open_source(spec: SourceSpec) -> MediaSource:
    """Open the file or device; raises SourceError naming it (and listing devices for a device)."""
    if spec.kind == "camera":
        if spec.fourcc is not None and len(spec.fourcc) != 4:
            raise SourceError(f"camera pixel format {spec.fourcc!r}: expected four characters, e.g. MJPG")
        return CameraSource(spec.target, size=spec.size, fps=spec.fps, fourcc=spec.fourcc)
    if spec.kind == "video":
        return VideoFileSource(Path(spec.target))
    if spec.kind == "microphone":
        return MicrophoneSource(spec.target or None)
    return AudioFileSource(Path(spec.target))
