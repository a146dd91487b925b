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

Every session's running peak and smoothed output are rows of `MouthRows` at its slot (bridge.state):
a batch reads and writes them by index. Speech sessions and the voiced face sessions built on them run
on different scheduler threads and share the rows, so a batch holds the store's lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bridge.rig.arkit import NUM_ARKIT
from bridge.speech.visemes import NUM_VISEMES, SIL, VISEME_SHAPES, VRM_VOWEL_VISEMES, VRM_VOWELS
from bridge.state.slots import SlotLease, SlotPool

RANGE_DB = 30.0
SILENCE_DB = 35.0
PEAK_DECAY_DB_PER_S = 6.0
ATTACK = 0.8
RELEASE = 0.5
NUM_VOWELS = len(VRM_VOWELS)
START_PEAK_DB = -60.0
_F32 = npt.NDArray[np.float32]
_OUTPUTS = NUM_ARKIT + NUM_VOWELS + NUM_VISEMES


@dataclass(frozen=True)
class MouthFrames:
    blendshapes: _F32  # (n, 52)
    vowels: _F32  # (n, 5) VRM A I U E O
    visemes: _F32  # (n, 15)
    voice: npt.NDArray[np.bool_]  # (n,)


class MouthRows:
    """Every session's running peak level (dB) and last smoothed output (52 + 5 + 15), a row per slot."""

    def __init__(self) -> None:
        self.pool = SlotPool()
        self.peak_db = np.zeros(0, np.float64)
        self.smoothed = np.zeros((0, _OUTPUTS), np.float32)
        self._lock = threading.Lock()

    def open(self) -> SlotLease:
        """A new session's row (I/O thread); it starts afresh at the next batch that sees it."""
        return self.pool.acquire()

    def frames(
        self,
        slots: npt.NDArray[np.int64],
        reference_db: npt.NDArray[np.float64],
        probs: _F32,
        level_db: _F32,
        fps: float,
        smooth: npt.NDArray[np.bool_],
    ) -> MouthFrames:
        """One frame for each of the n distinct sessions at `slots`: viseme probabilities `probs` (n, 15)
        at `level_db` (n,); `reference_db` (n,) each one's calibrated level (NaN: its running peak);
        smoothed where `smooth`. Their rows advance."""
        with self._lock:
            fresh = self.pool.grow(self, "peak_db", "smoothed")
            self.peak_db[fresh], self.smoothed[fresh] = START_PEAK_DB, 0.0
            # fmax: a NaN level leaves the peak as it was.
            peak = np.fmax(self.peak_db[slots] - PEAK_DECAY_DB_PER_S / fps, level_db.astype(np.float64))
            self.peak_db[slots] = peak
            ref = np.where(np.isnan(reference_db), peak, reference_db).astype(np.float32)
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
            previous = self.smoothed[slots]
            alpha = np.where(target > previous, ATTACK, RELEASE).astype(np.float32)
            out = np.where(smooth[:, None], previous + alpha * (target - previous), target).astype(np.float32)
            self.smoothed[slots] = out
        return MouthFrames(
            out[:, :NUM_ARKIT],
            out[:, NUM_ARKIT : NUM_ARKIT + NUM_VOWELS],
            out[:, NUM_ARKIT + NUM_VOWELS :],
            voice,
        )
