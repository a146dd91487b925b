"""Per-voice calibration from the five vowels A, I, U, E, O said once (as uLipSync's MFCC profiles).

The clip is cut into its voiced stretches by level (louder than the clip's peak minus VOICED_DB,
gaps shorter than MERGE_S joined, stretches shorter than MIN_VOICED_S dropped); there must be exactly
five, in VRM order. Each vowel's profile is the mean MFCC of the middle of its stretch. The session's
cepstral offset is the mean of (reference profile - this voice's profile) over the vowels: one
shift, added to every feature frame, that moves the voice's vowels onto the training voices'
(cepstral mean normalisation anchored on known sounds, so it also cancels the microphone's colour
and the input gain). The loudness reference is the vowels' mean level: the jaw opens fully there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bridge.audio.speech_features import N_MFCC, SpeechFeatureStream
from bridge.speech.visemes import VRM_VOWELS

VOICED_DB = 25.0
MERGE_S = 0.08
MIN_VOICED_S = 0.08
REFERENCE_SUFFIX = ".calibration.json"


class CalibrationError(ValueError):
    """The clip does not hold five clearly separated vowels; the message says what was found."""


@dataclass(frozen=True)
class VoiceProfile:
    vowels: npt.NDArray[np.float64]  # (5, N_MFCC) mean MFCC per vowel, VRM order
    level_db: float  # mean level of the vowels


def measure(pcm: npt.ArrayLike, rate: int, fps: float) -> VoiceProfile:
    stream = SpeechFeatureStream(rate, fps)
    features, levels = stream.push(pcm)
    mfcc = features[:, -N_MFCC:].astype(np.float64)  # each frame's newest sub-frame
    if not len(levels):
        raise CalibrationError("calibration: the clip is empty")
    voiced = levels > levels.max() - VOICED_DB
    runs = _runs(voiced, round(MERGE_S * fps), round(MIN_VOICED_S * fps))
    if len(runs) != len(VRM_VOWELS):
        raise CalibrationError(
            f"calibration: found {len(runs)} voiced stretches, expected {len(VRM_VOWELS)} "
            f"(say {', '.join(VRM_VOWELS)} with a short pause after each)"
        )
    profiles, vowel_levels = [], []
    for start, stop in runs:
        trim = (stop - start) // 5  # the middle 60 %: away from the onset and the release
        core = slice(start + trim, max(stop - trim, start + trim + 1))
        profiles.append(mfcc[core].mean(axis=0))
        vowel_levels.append(float(levels[core].mean()))
    return VoiceProfile(np.stack(profiles), float(np.mean(vowel_levels)))


def _runs(mask: npt.NDArray[np.bool_], merge: int, min_len: int) -> list[tuple[int, int]]:
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    runs = [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]
    merged: list[tuple[int, int]] = []
    for a, b in runs:
        if merged and a - merged[-1][1] < merge:
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return [(a, b) for a, b in merged if b - a >= min_len]


def offset(reference: VoiceProfile, voice: VoiceProfile) -> npt.NDArray[np.float64]:
    """The cepstral shift that maps `voice` onto `reference`, per MFCC coefficient."""
    shift: npt.NDArray[np.float64] = (reference.vowels - voice.vowels).mean(axis=0)
    return shift


def reference_path(onnx_path: Path) -> Path:
    return onnx_path.with_name(onnx_path.stem + REFERENCE_SUFFIX)


def save_reference(path: Path, reference: VoiceProfile) -> None:
    doc = {
        "vowels": list(VRM_VOWELS),
        "profiles": [[round(float(v), 5) for v in row] for row in reference.vowels],
        "level_db": round(reference.level_db, 5),
    }
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def load_reference(path: Path) -> VoiceProfile | None:
    """The training voices' profile written beside a model; None when the model has none."""
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    vowels = np.asarray(doc["profiles"], np.float64)
    if vowels.shape != (len(VRM_VOWELS), N_MFCC) or list(doc["vowels"]) != list(VRM_VOWELS):
        raise ValueError(f"{path}: expected {len(VRM_VOWELS)} vowel profiles of {N_MFCC} MFCCs")
    return VoiceProfile(vowels, float(doc["level_db"]))
