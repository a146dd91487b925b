"""Viseme classes, the phoneme -> viseme table, and each viseme's mouth shape (ARKit and VRM).

The 15 classes are Oculus/Meta's (OVRLipSync): the set VSeeFace, Warudo and most VTuber tools use.
Phonemes are eSpeak NG mnemonics (its Kirshenbaum-like ASCII names, shared by most of its
languages); `viseme_of` maps one by its consonant or its first vowel letter, so diphthongs take the
shape they open with.

The mouth shapes are hand-set ARKit weights (eyeballed from Apple's reference pictures, not fitted
to anything): what each viseme looks like at full loudness. The pipeline mixes them by the classifier's
probabilities, so coarticulation shows as blends between neighbouring shapes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridge.rig.arkit import ARKIT_INDEX, NUM_ARKIT

VISEMES: tuple[str, ...] = (
    "sil", "PP", "FF", "TH", "DD", "kk", "CH", "SS", "nn", "RR", "aa", "E", "ih", "oh", "ou",
)  # fmt: skip
VISEME_INDEX: dict[str, int] = {name: i for i, name in enumerate(VISEMES)}
NUM_VISEMES = len(VISEMES)
SIL = VISEME_INDEX["sil"]
# VRM's five vowel presets and the viseme each is (VRM 0.x names; VRM 1.0 spells them aa, ih, ou, ee, oh).
VRM_VOWELS: tuple[str, ...] = ("A", "I", "U", "E", "O")
VRM_VOWEL_VISEMES: tuple[int, ...] = tuple(VISEME_INDEX[v] for v in ("aa", "ih", "ou", "E", "oh"))
OPEN_VOWELS: tuple[int, ...] = tuple(VISEME_INDEX[v] for v in ("aa", "E", "oh"))

# Multi-letter consonants first (affricates), then one letter: eSpeak's consonant mnemonics.
_AFFRICATES = {"tS": "CH", "dZ": "CH", "ts": "SS", "dz": "SS", "tC": "CH", "dJ": "CH"}
_CONSONANTS = {
    "p": "PP", "b": "PP", "m": "PP",
    "f": "FF", "v": "FF", "B": "FF",  # B: Spanish intervocalic b, a lip fricative
    "T": "TH", "D": "TH",
    "t": "DD", "d": "DD",
    "k": "kk", "g": "kk", "N": "kk", "x": "kk", "G": "kk", "h": "kk", "q": "kk", "X": "kk", "c": "kk",
    "S": "CH", "Z": "CH", "C": "CH", "J": "nn",
    "s": "SS", "z": "SS",
    "n": "nn", "l": "nn", "L": "nn",
    "r": "RR", "R": "RR",
    "w": "ou", "j": "ih",
}  # fmt: skip
_VOWELS = {
    "a": "aa", "A": "aa", "V": "aa", "&": "aa", "0": "oh",
    "e": "E", "E": "E", "@": "E", "3": "E",
    "i": "ih", "I": "ih", "y": "ou", "Y": "ou",
    "o": "oh", "O": "oh", "W": "oh",
    "u": "ou", "U": "ou",
}  # fmt: skip


def viseme_of(phoneme: str) -> int:
    """The viseme class of one eSpeak NG phoneme mnemonic (pauses and unknown symbols are silence)."""
    name = phoneme.lstrip("'%=,")
    if not name or name.startswith("_"):
        return SIL
    if name[:2] in _AFFRICATES:
        return VISEME_INDEX[_AFFRICATES[name[:2]]]
    label = _CONSONANTS.get(name[0]) or _VOWELS.get(name[0])
    return SIL if label is None else VISEME_INDEX[label]


def _shapes() -> npt.NDArray[np.float32]:
    poses: dict[str, dict[str, float]] = {
        "sil": {"MouthClose": 0.0},
        "PP": {"MouthClose": 0.6, "MouthPressLeft": 0.5, "MouthPressRight": 0.5, "MouthRollLower": 0.2},
        "FF": {"JawOpen": 0.1, "MouthRollLower": 0.6, "MouthUpperUpLeft": 0.3, "MouthUpperUpRight": 0.3},
        "TH": {"JawOpen": 0.2, "TongueOut": 0.4, "MouthStretchLeft": 0.1, "MouthStretchRight": 0.1},
        "DD": {"JawOpen": 0.25, "MouthStretchLeft": 0.2, "MouthStretchRight": 0.2},
        "kk": {"JawOpen": 0.3, "MouthStretchLeft": 0.15, "MouthStretchRight": 0.15},
        "CH": {"JawOpen": 0.15, "MouthFunnel": 0.5, "MouthShrugUpper": 0.3, "MouthShrugLower": 0.2},
        "SS": {"JawOpen": 0.1, "MouthStretchLeft": 0.4, "MouthStretchRight": 0.4, "MouthSmileLeft": 0.2,
               "MouthSmileRight": 0.2},
        "nn": {"JawOpen": 0.2, "MouthStretchLeft": 0.15, "MouthStretchRight": 0.15},
        "RR": {"JawOpen": 0.2, "MouthFunnel": 0.3, "MouthPucker": 0.2},
        "aa": {"JawOpen": 0.7, "MouthLowerDownLeft": 0.3, "MouthLowerDownRight": 0.3,
               "MouthUpperUpLeft": 0.1, "MouthUpperUpRight": 0.1},
        "E": {"JawOpen": 0.45, "MouthStretchLeft": 0.4, "MouthStretchRight": 0.4,
              "MouthLowerDownLeft": 0.2, "MouthLowerDownRight": 0.2},
        "ih": {"JawOpen": 0.25, "MouthSmileLeft": 0.4, "MouthSmileRight": 0.4, "MouthStretchLeft": 0.3,
               "MouthStretchRight": 0.3},
        "oh": {"JawOpen": 0.5, "MouthFunnel": 0.6, "MouthPucker": 0.2},
        "ou": {"JawOpen": 0.2, "MouthPucker": 0.8, "MouthFunnel": 0.3},
    }  # fmt: skip
    table = np.zeros((NUM_VISEMES, NUM_ARKIT), np.float32)
    for viseme, pose in poses.items():
        for name, weight in pose.items():
            table[VISEME_INDEX[viseme], ARKIT_INDEX[name]] = weight
    table.setflags(write=False)
    return table


VISEME_SHAPES = _shapes()  # (15, 52) ARKit weights of each viseme at full loudness
# The ARKit channels speech moves (the rows above use no others); the rest stay 0 in speech frames.
SPEECH_CHANNELS: tuple[int, ...] = tuple(int(i) for i in np.flatnonzero(VISEME_SHAPES.any(axis=0)))
