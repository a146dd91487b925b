"""Mixing rule for a face session that has both a camera and a voice (docs/speech.md).

The camera drives everything except the mouth; the mouth follows the voice while the person speaks,
and the camera otherwise (a silent smile still shows), except that expression channels the voice
does not produce (smile, frown, dimple) keep the camera's value even while speaking (the larger of
the two). When the camera cannot see the mouth (no face found, or the image too dark), the voice
drives the mouth all the time, so silence closes it. A mouth that is covered while the face is still
found reads as whatever the camera guesses; speaking hands it to the voice. Switching is a crossfade
with weight w: w moves toward 1 (voice) or 0 (camera) by FADE per frame, so the mouth never jumps.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridge.rig.arkit import ARKIT_INDEX, ARKIT_NAMES, NUM_ARKIT

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
