"""FLAME parameter layout as the face pipeline produces it (DECA/EMOCA + SMIRK-style eyelids).

One frame is a flat float32 vector of ``FLAME_DIM`` values laid out as the slices below. Jaw and
head are axis-angle in radians in FLAME's own frame (right-handed, Y-up, +Z towards the viewer);
eyelids are closure in [0, 1] (0 open, 1 closed), as SMIRK predicts them.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

N_EXPRESSION = 50
N_JAW = 3
N_HEAD = 3
N_EYELIDS = 2

EXPRESSION = slice(0, N_EXPRESSION)
JAW = slice(EXPRESSION.stop, EXPRESSION.stop + N_JAW)
HEAD = slice(JAW.stop, JAW.stop + N_HEAD)
EYELIDS = slice(HEAD.stop, HEAD.stop + N_EYELIDS)

FLAME_DIM = EYELIDS.stop

FLAME_CHANNEL_NAMES: tuple[str, ...] = (
    *(f"expression_{i:02d}" for i in range(N_EXPRESSION)),
    "jaw_x",
    "jaw_y",
    "jaw_z",
    "head_x",
    "head_y",
    "head_z",
    "eyelid_left",
    "eyelid_right",
)

# (lo, hi) per FLAME channel, shape (FLAME_DIM, 2). Expression: ψ is roughly unit-variance, ±3 σ.
# Jaw (rad): opening x in [-0.05, 0.6] (SMIRK's jaw-open is ReLU'd ≥ 0; 0.6 rad ≈ 34° is past a
# wide yawn), lateral y/z ±0.2 (SMIRK clamps them there). Head (rad, axis-angle components):
# pitch x ±1.0, yaw y ±1.5, roll z ±0.8 — beyond this a frontal face crop no longer tracks.
# Eyelids: closure in [0, 1].
FLAME_RANGES: npt.NDArray[np.float32] = np.empty((FLAME_DIM, 2), np.float32)
FLAME_RANGES[EXPRESSION] = (-3.0, 3.0)
FLAME_RANGES[JAW] = ((-0.05, 0.6), (-0.2, 0.2), (-0.2, 0.2))
FLAME_RANGES[HEAD] = ((-1.0, 1.0), (-1.5, 1.5), (-0.8, 0.8))
FLAME_RANGES[EYELIDS] = (0.0, 1.0)
