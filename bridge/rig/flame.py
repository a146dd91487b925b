"""FLAME parameter layout as the face pipeline produces it (DECA/EMOCA + SMIRK-style eyelids).

One frame is a flat float32 vector of ``FLAME_DIM`` values laid out as the slices below. Jaw and
head are axis-angle in radians in FLAME's own frame (right-handed, Y-up, +Z towards the viewer);
eyelids are closure in [0, 1] (0 open, 1 closed), as SMIRK predicts them.
"""

from __future__ import annotations

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
