"""Synthetic songs with a known beat grid, varied enough to train and test a dancer on.

Each song draws, from its seed: a tempo (given), a meter (4/4 or 3/4), swing on the off-beat eighths,
a drum kit (kick pitch and decay, snare noise colour, hi-hat density), a bass and a chord voice
(sine, saw, square or FM timbre) and 8-bar sections that change the arrangement (so the music has
novelty peaks where a dancer should change moves). The downbeat carries an accent (a louder kick and a
crash), as real pop and dance music does. The ground truth is every beat time and its place in the bar.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Song", "synthesize_song"]

_F32 = npt.NDArray[np.float32]
_F64 = npt.NDArray[np.float64]
# Diatonic progressions as scale degrees of a major key (I, V, vi, IV and friends).
_PROGRESSIONS = ((0, 4, 5, 3), (0, 5, 3, 4), (5, 3, 0, 4), (0, 3, 4, 4), (1, 4, 0, 0))
_MAJOR = (0, 2, 4, 5, 7, 9, 11)
_TIMBRES = ("sine", "saw", "square", "fm")


@dataclass(frozen=True)
class Song:
    pcm: _F32  # mono, [-1, 1]
    sample_rate: int
    bpm: float
    beats_per_bar: int
    swing: float  # 0 = straight eighths, 1/3 = triplet swing
    timbre: str
    beats: _F64  # beat times, seconds
    beat_in_bar: npt.NDArray[np.int64]  # 0 = downbeat
    hats_per_beat: int  # 1 = a hi-hat on each beat, 2 = on every eighth as well (in full sections)


def _tone(freq: float, n: int, sr: int, timbre: str, rng: np.random.Generator) -> _F64:
    t = np.arange(n) / sr
    phase = 2 * np.pi * freq * t
    if timbre == "sine":
        w = np.sin(phase)
    elif timbre == "saw":
        w = np.sum([np.sin(k * phase) / k for k in range(1, 8)], axis=0)
    elif timbre == "square":
        w = np.sum([np.sin(k * phase) / k for k in range(1, 9, 2)], axis=0)
    else:
        w = np.sin(phase + 2.0 * np.exp(-3 * t) * np.sin(2 * phase))
    env = np.minimum(1.0, t * 80) * np.exp(-t * rng.uniform(1.5, 5.0))
    return np.asarray(w * env, np.float64)


def synthesize_song(
    seconds: float,
    bpm: float,
    seed: int,
    sample_rate: int = 48000,
    beats_per_bar: int | None = None,
    swing: float | None = None,
) -> Song:
    """A deterministic song for (seconds, bpm, seed); meter and swing drawn from the seed unless given."""
    rng = np.random.default_rng(seed)
    meter = beats_per_bar if beats_per_bar is not None else int(rng.choice([4, 4, 4, 3]))
    sw = swing if swing is not None else float(rng.choice([0.0, 0.0, 0.15, 1.0 / 3.0]))
    timbre = str(rng.choice(_TIMBRES))
    sr = sample_rate
    n = int(seconds * sr)
    pcm = np.zeros(n, np.float64)
    beat_s = 60.0 / bpm
    beats = np.arange(0.0, seconds, beat_s)
    pos = np.arange(beats.size) % meter

    def add(at_s: float, wave: _F64, gain: float) -> None:
        start = int(at_s * sr)
        if start >= n:
            return
        end = min(n, start + wave.size)
        pcm[start:end] += gain * wave[: end - start]

    hit = int(0.25 * sr)
    ht = np.arange(hit) / sr
    kick_hz = rng.uniform(40, 70)
    kick = np.sin(2 * np.pi * (kick_hz + rng.uniform(60, 140) * np.exp(-ht * 30)) * ht) * np.exp(
        -ht * rng.uniform(10, 25)
    )
    noise = rng.standard_normal(hit)
    snare = (noise - rng.uniform(0, 0.9) * np.roll(noise, 1)) * np.exp(-ht * rng.uniform(20, 40))
    hat_len = int(0.05 * sr)
    hat = np.diff(rng.standard_normal(hat_len + 1)) * np.exp(-np.arange(hat_len) / sr * 90)
    crash = np.diff(rng.standard_normal(hit * 4 + 1)) * np.exp(-np.arange(hit * 4) / sr * 4)
    hat_every = int(rng.choice([1, 2]))  # hats on every beat, or on every eighth
    key = int(rng.integers(0, 12))
    prog = _PROGRESSIONS[int(rng.integers(len(_PROGRESSIONS)))]

    for i, (b, p) in enumerate(zip(beats, pos, strict=True)):
        bar = i // meter
        section = (bar // 8) % 3  # 0: full, 1: no hats, 2: drums thinned to kicks on 1 (a break)
        if p == 0:
            add(b, kick, 1.0)
            if bar % 4 == 0:
                add(b, crash, 0.15)
        elif section != 2:
            # Back-beat: snare on 2 and 4 (4/4), on 2 and 3 (3/4); kick on the rest.
            add(b, snare if (meter == 4 and p % 2 == 1) or (meter == 3) else kick, 0.55 if p else 1.0)
        if section == 0:
            add(b, hat, 0.12)
            if hat_every == 2:
                add(b + beat_s * (0.5 + sw / 2), hat, 0.08)  # swung eighth: later by sw/2 of a beat
        if p == 0:
            degree = prog[bar % len(prog)]
            root = 110.0 * 2 ** ((key + _MAJOR[degree]) / 12.0)
            bar_len = int(meter * beat_s * sr)
            add(b, _tone(root / 2, bar_len, sr, "sine", rng), 0.25)  # bass
            chord = sum(
                _tone(
                    root * 2 ** (_MAJOR[(degree + k) % 7] / 12.0 + (degree + k >= 7)),
                    bar_len,
                    sr,
                    timbre,
                    rng,
                )
                for k in (0, 2, 4)
            )
            add(b, np.asarray(chord, np.float64), 0.05 if section != 1 else 0.09)
    pcm /= max(1e-9, float(np.abs(pcm).max()))
    return Song(
        (0.9 * pcm).astype(np.float32),
        sr,
        float(bpm),
        meter,
        sw,
        timbre,
        beats,
        pos.astype(np.int64),
        hat_every,
    )
