"""Viseme probabilities + loudness -> mouth blendshapes, VRM vowels, voice activity; smoothed.

Rules (docs/speech.md):
- loudness L in [0, 1]: 1 at the voice's reference level (the calibration vowels' level, else the
  loudest frame so far, decaying 6 dB/s), 0 at RANGE_DB below it. Every shape scales with L, so the
  jaw follows the voice's energy and quiet speech opens the mouth less.
- voice activity: the classifier's non-silence probability > 0.5 and the level within SILENCE_DB of the
  reference. No voice -> every target is 0: silence closes the mouth.
- ARKit weights = probabilities @ VISEME_SHAPES * L (a blend of neighbouring shapes where the classifier
  hesitates: coarticulation); VRM A/I/U/E/O = their visemes' probabilities * L.
- smoothing: one pole per channel, fast attack (ATTACK per frame) and slower release (RELEASE), so
  mouths open on time and do not flutter shut between syllables. At 30 fps the attack's delay is
  a quarter frame, the release's one frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bridge.rig.arkit import NUM_ARKIT
from bridge.speech.visemes import NUM_VISEMES, SIL, VISEME_SHAPES, VRM_VOWEL_VISEMES, VRM_VOWELS

RANGE_DB = 30.0
SILENCE_DB = 35.0
PEAK_DECAY_DB_PER_S = 6.0
ATTACK = 0.8
RELEASE = 0.5
NUM_VOWELS = len(VRM_VOWELS)
_F32 = npt.NDArray[np.float32]


@dataclass
class MouthState:
    """One session's smoothing and loudness state."""

    reference_db: float | None = None  # calibrated level; None: track the running peak
    peak_db: float = -60.0
    smoothed: _F32 | None = None  # (52 + 5 + 15,) last output

    def __post_init__(self) -> None:
        if self.smoothed is None:
            self.smoothed = np.zeros(NUM_ARKIT + NUM_VOWELS + NUM_VISEMES, np.float32)


@dataclass(frozen=True)
class MouthFrames:
    blendshapes: _F32  # (n, 52)
    vowels: _F32  # (n, 5) VRM A I U E O
    visemes: _F32  # (n, 15)
    voice: npt.NDArray[np.bool_]  # (n,)


def mouth_frames(
    states: list[MouthState], probs: _F32, level_db: _F32, fps: float, smooth: npt.NDArray[np.bool_]
) -> MouthFrames:
    """One frame for each of n sessions (row i belongs to states[i]); updates their state."""
    n = len(states)
    decay = PEAK_DECAY_DB_PER_S / fps
    for s, level in zip(states, level_db, strict=True):
        s.peak_db = max(s.peak_db - decay, float(level))
    ref = np.fromiter(
        (s.reference_db if s.reference_db is not None else s.peak_db for s in states), np.float32, n
    )
    loud = np.clip((level_db - (ref - RANGE_DB)) / RANGE_DB, 0.0, 1.0)
    voice = (1.0 - probs[:, SIL] > 0.5) & (level_db > ref - SILENCE_DB)
    gain = (loud * voice)[:, None].astype(np.float32)
    target = np.concatenate(
        (
            probs @ VISEME_SHAPES * gain,
            probs[:, VRM_VOWEL_VISEMES] * gain,
            np.where(voice[:, None], probs, 0.0),
        ),
        axis=1,
    ).astype(np.float32)
    target[~voice, NUM_ARKIT + NUM_VOWELS + SIL] = 1.0
    previous = np.stack([s.smoothed for s in states if s.smoothed is not None])
    alpha = np.where(target > previous, ATTACK, RELEASE).astype(np.float32)
    out = np.where(smooth[:, None], previous + alpha * (target - previous), target).astype(np.float32)
    for s, row in zip(states, out, strict=True):
        s.smoothed = row
    return MouthFrames(
        out[:, :NUM_ARKIT],
        out[:, NUM_ARKIT : NUM_ARKIT + NUM_VOWELS],
        out[:, NUM_ARKIT + NUM_VOWELS :],
        voice,
    )
