"""Humanoid bones an avatar has beyond the SMPL skeleton, for outputs that send bone offsets (VMC).

A VMC receiver such as EVMC4U copies each received bone position onto the avatar's bone as its
localPosition, so a bone sent without a real offset is pulled onto its parent. The SMPL table
(bridge.rig.smpl) covers the body and head; the eyes are here.

EYE_OFFSETS: each eye's rest offset from the Head bone, in the wire convention (right-handed, Y up,
+X the avatar's own left, +Z the way it faces), metres, for an adult-sized humanoid (the SMPL
neutral's proportions, whose Head joint sits at the top of the neck like a VRM's Head bone).
Approximate, good to about ±1 cm: half a typical adult interpupillary distance (63-64 mm) to each
side, the eyes' centres some 6-7 cm above the top of the neck and 5-6 cm in front of it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

EYE_BONE_NAMES: tuple[str, str] = ("LeftEye", "RightEye")  # Unity HumanBodyBones, left first

EYE_OFFSETS: npt.NDArray[np.float64] = np.array(
    [
        [0.032, 0.065, 0.055],  # LeftEye (the avatar's left: +X on the wire)
        [-0.032, 0.065, 0.055],  # RightEye
    ],
    dtype=np.float64,
)
