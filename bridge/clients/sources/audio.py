"""Audio sources: a sound file through libsndfile (soundfile: wav, flac, ogg, mp3) and a microphone
through PortAudio (sounddevice), plus optional playback of a file to the speakers.

Chunks are mono float32 at the source's own rate; the bridge resamples. PortAudio is not on the test
machines, so `MicrophoneSource` and `Speaker` are thin adapters that no test here runs (they import
sounddevice only when used, so a missing PortAudio never breaks a file source).
"""

from __future__ import annotations

import queue
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import soundfile

from bridge.clients.sources.base import SourceError, SourceKind
from bridge.system_packages import PORTAUDIO

__all__ = ["AudioFileSource", "MicrophoneSource", "Speaker", "audio_devices", "check_playback", "portaudio"]

F32 = npt.NDArray[np.float32]
CHUNK_S = 1.0 / 60.0  # one dance frame of audio per chunk: the finest pacing the motion pipeline uses


def _mono(block: npt.NDArray[np.floating[Any]]) -> F32:
    return np.ascontiguousarray(block.mean(axis=1) if block.ndim == 2 else block, np.float32)


class AudioFileSource:
    """A sound file in chunks of `chunk_s` seconds at the file's own rate."""

    kind: SourceKind = "audio"
    realtime = False
    live = False

    def __init__(self, path: Path, chunk_s: float = CHUNK_S) -> None:
        self.label = str(path)
        if not path.is_file():
            raise SourceError(f"audio {path}: no such file")
        try:
            self._file = soundfile.SoundFile(str(path))
        except (soundfile.LibsndfileError, RuntimeError) as exc:
            raise SourceError(f"audio {path}: not a sound file libsndfile can decode ({exc})") from None
        self.rate = float(self._file.samplerate)
        self.channels = self._file.channels
        self._chunk = max(1, round(self.rate * chunk_s))

    def read(self) -> F32 | None:
        block = self._file.read(self._chunk, dtype="float32", always_2d=True)
        return _mono(block) if len(block) else None

    def rewind(self) -> None:
        self._file.seek(0)

    def reopen(self) -> None:
        raise SourceError(f"audio {self.label}: ended")

    def describe(self) -> str:
        return (
            f"audio {self.label}: {self.rate:g} Hz, {self.channels} channel(s) mixed to mono, "
            f"{self._file.frames / self.rate:.1f} s"
        )

    def close(self) -> None:
        self._file.close()


def portaudio() -> Any:
    """The sounddevice module; SourceError naming the fix when PortAudio (or sounddevice) is missing."""
    try:
        import sounddevice
    except (ImportError, OSError) as exc:  # OSError: the PortAudio library itself is missing
        raise SourceError(
            f"--microphone and --play need PortAudio, which did not load ({exc}); {PORTAUDIO.fix()}"
        ) from None
    return sounddevice


def audio_devices() -> str:
    """PortAudio's device list, as `python -m sounddevice` prints it."""
    return str(portaudio().query_devices())


def check_playback() -> None:
    """What `Speaker` needs, checked before anything starts: PortAudio and a default output device."""
    sd = portaudio()
    try:
        sd.query_devices(kind="output")
    except (ValueError, sd.PortAudioError) as exc:
        raise SourceError(f"--play: no output device ({exc}); devices here:\n{sd.query_devices()}") from None


class MicrophoneSource:
    """A capture device by name or index (None: the default input), mono at its default rate."""

    kind: SourceKind = "audio"
    realtime = True
    live = True

    def __init__(self, device: str | None, chunk_s: float = CHUNK_S) -> None:
        sd = portaudio()
        self.label = f"microphone {device or 'default'}"
        self._device: int | str | None = int(device) if device and device.isdigit() else device
        try:
            info = sd.query_devices(self._device, "input")
        except (ValueError, sd.PortAudioError) as exc:
            raise SourceError(f"{self.label}: {exc}; devices here:\n{sd.query_devices()}") from None
        self.rate = float(info["default_samplerate"])
        self._chunk = max(1, round(self.rate * chunk_s))
        # Latest wins: the callback drops the oldest chunk rather than grow a backlog.
        self._chunks: queue.Queue[F32] = queue.Queue(maxsize=32)
        self._stream: Any = None
        self.reopen()

    def _callback(self, block: Any, frames: int, time: Any, status: Any) -> None:
        chunk = _mono(np.asarray(block))
        if self._chunks.full():
            self._chunks.get_nowait()
        self._chunks.put_nowait(chunk)

    def read(self) -> F32 | None:
        try:
            return self._chunks.get(timeout=1.0)
        except queue.Empty:
            return None  # the device stopped delivering: the feeder treats it as lost

    def rewind(self) -> None:
        pass

    def reopen(self) -> None:
        sd = portaudio()
        self.close()
        try:
            self._stream = sd.InputStream(
                device=self._device,
                channels=1,
                samplerate=self.rate,
                blocksize=self._chunk,
                dtype="float32",
                callback=self._callback,
            )
            self._stream.start()
        except sd.PortAudioError as exc:
            raise SourceError(f"{self.label}: {exc}") from None

    def describe(self) -> str:
        return f"{self.label}: {self.rate:g} Hz mono, {self._chunk} samples per chunk"

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None


class Speaker:
    """Plays a file source's chunks on the default output, `offset_s` after they are sent to the bridge
    (the bridge's own latency, so the dance lines up with what the user hears)."""

    def __init__(self, rate: float, offset_s: float) -> None:
        sd = portaudio()
        self.offset_s = offset_s
        self._stream = sd.OutputStream(samplerate=rate, channels=1, dtype="float32")
        self._stream.start()

    def play(self, chunk: F32) -> None:
        self._stream.write(chunk.reshape(-1, 1))

    def close(self) -> None:
        self._stream.close()
