"""Mixing rule for a face session that has both a camera and a voice (docs/speech.md).

The camera drives everything except the mouth; the mouth follows the voice while the person speaks,
and the camera otherwise (a silent smile still shows), except that expression channels the voice
does not produce (smile, frown, dimple) keep the camera's value even while speaking (the larger of
the two). When the camera cannot see the mouth (no face found, or the image too dark), the voice
drives the mouth all the time, so silence closes it. A mouth that is covered while the face is still
found reads as whatever the camera guesses; speaking hands it to the voice. Switching is a crossfade
with weight w: w moves toward 1 (voice) or 0 (camera) by FADE per frame, so the mouth never jumps.

`VoiceMix` keeps every voiced session's latest speech frame and weight as rows at its slot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bridge.rig.arkit import ARKIT_INDEX, ARKIT_NAMES, NUM_ARKIT
from bridge.speech.mouth import NUM_VOWELS, MouthFrames
from bridge.speech.visemes import NUM_VISEMES, SIL
from bridge.state.slots import SlotLease, SlotPool

FADE = 0.34  # per frame: ~3 frames (100 ms at 30 fps) from one source to the other
_MOUTH = np.array([n.startswith(("Jaw", "Mouth", "Tongue")) for n in ARKIT_NAMES])
_EXPRESSION = np.zeros(NUM_ARKIT, bool)
_EXPRESSION[
    [ARKIT_INDEX[f"Mouth{k}{s}"] for k in ("Smile", "Frown", "Dimple") for s in ("Left", "Right")]
] = True


def mix_speech(
    camera: npt.NDArray[np.float32],
    speech: npt.NDArray[np.float32],
    voice: bool,
    mouth_seen: bool,
    weight: float,
) -> tuple[npt.NDArray[np.float32], float]:
    """(52,) camera and speech ARKit weights -> the mixed (52,) and the new crossfade weight.
    `mouth_seen`: the camera found the face in an image that is not too dark."""
    target = 1.0 if voice or not mouth_seen else 0.0
    weight = float(np.clip(target, weight - FADE, weight + FADE))
    mouth = weight * speech + (1.0 - weight) * camera
    mouth = np.where(_EXPRESSION, np.maximum(mouth, camera), mouth)
    out: npt.NDArray[np.float32] = np.where(_MOUTH, mouth, camera).astype(np.float32)
    return out, weight


class VoiceMix:
    """Every voiced face session's latest speech frame (mouth, visemes, vowels, voice flag, and when it
    was made, monotonic s) and its crossfade weight, a row per slot (bridge.state). One scheduler
    thread steps them (the voiced pipeline's); rows grow and start afresh on it."""

    def __init__(self, stale_s: float) -> None:
        self.stale_s = stale_s  # a speech frame older than this: the voice is silent
        self.pool = SlotPool()
        self.weight = np.zeros(0, np.float64)
        self.mouth = np.zeros((0, NUM_ARKIT), np.float32)
        self.visemes = np.zeros((0, NUM_VISEMES), np.float32)
        self.vowels = np.zeros((0, NUM_VOWELS), np.float32)
        self.voice = np.zeros(0, bool)
        self.voice_at = np.zeros(0, np.float64)

    def open(self) -> SlotLease:
        """A new session's row (I/O thread); it starts afresh at the next batch that sees it."""
        return self.pool.acquire()

    def _prepare(self) -> None:
        fresh = self.pool.grow(self, "weight", "mouth", "visemes", "vowels", "voice", "voice_at")
        self.weight[fresh], self.mouth[fresh], self.vowels[fresh] = 0.0, 0.0, 0.0
        self.visemes[fresh] = _SILENT_VISEMES
        self.voice[fresh], self.voice_at[fresh] = False, -math.inf

    def heard(self, slots: npt.NDArray[np.int64], frames: MouthFrames, now: float) -> None:
        """The sessions' latest speech frames (row i of `frames` is slot `slots[i]`'s), made `now`."""
        self._prepare()
        self.mouth[slots], self.visemes[slots], self.vowels[slots] = (
            frames.blendshapes,
            frames.visemes,
            frames.vowels,
        )
        self.voice[slots], self.voice_at[slots] = frames.voice, now

    def mixed(
        self,
        slots: npt.NDArray[np.int64],
        camera: npt.NDArray[np.float32],
        mouth_seen: npt.NDArray[np.bool_],
        now: float,
    ) -> VoicedFrames:
        """The sessions' camera weights `camera` (n, 52) with their voices mixed into the mouth
        (`mix_speech`; `mouth_seen`: the camera found the face in an image that is not too dark), at
        `now`: a voice whose latest frame is stale is silent, its mouth closed. Their weights advance."""
        self._prepare()
        fresh = now - self.voice_at[slots] <= self.stale_s
        voice = self.voice[slots] & fresh
        blend = np.empty_like(camera)
        for i, (k, heard, speaking) in enumerate(
            zip(slots.tolist(), fresh.tolist(), voice.tolist(), strict=True)
        ):
            blend[i], self.weight[k] = mix_speech(
                camera[i],
                self.mouth[k] if heard else _CLOSED,
                speaking,
                mouth_seen=bool(mouth_seen[i]),
                weight=float(self.weight[k]),
            )
        visemes = np.where(fresh[:, None], self.visemes[slots], _SILENT_VISEMES)
        vowels = np.where(fresh[:, None], self.vowels[slots], np.float32(0.0))
        return VoicedFrames(blend, visemes, vowels, voice.tolist())


@dataclass(frozen=True)
class VoicedFrames:
    """What a voice adds to n face frames: the mixed ARKit weights, visemes, vowels, voice flags."""

    blend: npt.NDArray[np.float32]  # (n, 52)
    visemes: npt.NDArray[np.float32]  # (n, 15)
    vowels: npt.NDArray[np.float32]  # (n, 5)
    voice: list[bool]


_SILENT_VISEMES = np.zeros(NUM_VISEMES, np.float32)
_SILENT_VISEMES[SIL] = 1.0
_CLOSED = np.zeros(NUM_ARKIT, np.float32)
