"""Synthetic music with a known tempo: kick and snare on the beat grid plus sustained chords.

Deterministic for a given seed, so tests can check beat and onset features against the ground truth.
"""

from __future__ import annotations

import numpy as np

# I - V - vi - IV in C major, as frequencies of three-note chords.
_CHORDS_HZ = (
    (261.63, 329.63, 392.00),
    (196.00, 246.94, 293.66),
    (220.00, 261.63, 329.63),
    (174.61, 220.00, 261.63),
)


def synthesize_music(
    seconds: float, bpm: float = 120.0, sample_rate: int = 48000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Return (mono float32 PCM in [-1, 1], beat times in seconds)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sample_rate)
    t = np.arange(n) / sample_rate
    pcm = np.zeros(n, np.float64)
    beat = 60.0 / bpm
    beats = np.arange(0.0, seconds, beat)
    kick_len = int(0.15 * sample_rate)
    kt = np.arange(kick_len) / sample_rate
    # Kick: a pitch-dropping sine with a fast decay; snare: decaying noise on beats 2 and 4.
    kick = np.sin(2 * np.pi * (50 + 100 * np.exp(-kt * 30)) * kt) * np.exp(-kt * 18)
    snare = rng.standard_normal(kick_len) * np.exp(-kt * 30) * 0.5
    for i, b in enumerate(beats):
        start = int(b * sample_rate)
        end = min(start + kick_len, n)
        pcm[start:end] += (snare if i % 2 else kick)[: end - start]
    bar = 4 * beat
    for i, start_s in enumerate(np.arange(0.0, seconds, bar)):
        start, end = int(start_s * sample_rate), min(int((start_s + bar) * sample_rate), n)
        seg = t[start:end] - start_s
        chord = sum(np.sin(2 * np.pi * f * seg) for f in _CHORDS_HZ[i % len(_CHORDS_HZ)])
        pcm[start:end] += 0.08 * chord * np.minimum(1.0, seg * 20)
    pcm /= max(1e-9, float(np.abs(pcm).max()))
    return (0.9 * pcm).astype(np.float32), beats.astype(np.float64)
