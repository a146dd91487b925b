"""Input sources for the harness: generated or from a file, one item per tick."""

from __future__ import annotations

import wave
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np

from bridge.media.face_video import FaceVideo
from bridge.media.music import synthesize_music

AUDIO_RATE = 48000


def face_frames(seconds: float, fps: float, path: Path | None = None) -> Iterator[np.ndarray]:
    """RGB uint8 frames: from a video or image file, or the generated face clip."""
    count = int(seconds * fps)
    if path is None:
        video = FaceVideo(fps=fps)
        for i in range(count):
            yield video.frame(i)
        return
    capture = cv2.VideoCapture(str(path))
    frames: list[np.ndarray] = []
    while len(frames) < count:
        ok, bgr = capture.read()
        if not ok:
            break
        frames.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    capture.release()
    if not frames:
        raise ValueError(f"no frames could be read from {path}")
    for i in range(count):  # loop a short clip (or repeat a still image) to fill the duration
        yield frames[i % len(frames)]


def audio_chunks(seconds: float, fps: float, path: Path | None = None) -> tuple[int, Iterator[np.ndarray]]:
    """(sample rate, float32 mono chunks of one output frame each): from a WAV file or generated music."""
    if path is None:
        pcm, _ = synthesize_music(seconds, bpm=120.0, sample_rate=AUDIO_RATE)
        rate = AUDIO_RATE
    else:
        rate, pcm = read_wav(path)
    per_tick = rate / fps
    count = min(int(seconds * fps), int(len(pcm) / per_tick))

    def chunks() -> Iterator[np.ndarray]:
        for i in range(count):
            yield pcm[round(i * per_tick) : round((i + 1) * per_tick)]

    return rate, chunks()


def read_wav(path: Path) -> tuple[int, np.ndarray]:
    """Mono float32 samples of a 16-bit PCM WAV (channels averaged)."""
    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError(f"{path}: only 16-bit PCM WAV is supported")
        rate, channels = w.getframerate(), w.getnchannels()
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
    return rate, data.reshape(-1, channels).mean(axis=1)
