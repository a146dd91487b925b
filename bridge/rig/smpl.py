"""SMPL 24-joint skeleton: names, parents, approximate rest offsets, Unity bone names, joint limits.

Frame: SMPL's own, which is the wire convention — right-handed, Y up, metres, the body faces +Z
and its left side is +X. Pose vectors are AIST++'s layout: 24 joints × axis-angle (radians) in
the parent's frame, joint 0 (pelvis) being the global orientation, plus a root translation.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

NUM_JOINTS = 24

JOINT_NAMES: tuple[str, ...] = (
    "pelvis",
    "left_hip",
    "right_hip",
    "spine1",
    "left_knee",
    "right_knee",
    "spine2",
    "left_ankle",
    "right_ankle",
    "spine3",
    "left_foot",
    "right_foot",
    "neck",
    "left_collar",
    "right_collar",
    "head",
    "left_shoulder",
    "right_shoulder",
    "left_elbow",
    "right_elbow",
    "left_wrist",
    "right_wrist",
    "left_hand",
    "right_hand",
)

# Parent index per joint (-1 for the root); every parent precedes its children, so forward
# kinematics can run in index order.
PARENTS: tuple[int, ...] = (-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21)

# Rest-pose (T-pose) offset of each joint from its parent, metres. APPROXIMATE values of the SMPL
# neutral template's regressed joints (rounded to the millimetre, good to about ±1 cm); they are
# used for BVH export and skeleton drawing only, never for anything that needs a fitted body.
# Row 0 is the pelvis position in SMPL model space: SMPL adds the root translation to all
# vertices, so the pelvis lands at translation + REST_OFFSETS[0].
REST_OFFSETS: npt.NDArray[np.float64] = np.array(
    [
        [0.000, -0.223, 0.028],  # pelvis (model-space position)
        [0.058, -0.082, -0.018],  # left_hip
        [-0.060, -0.091, -0.014],  # right_hip
        [0.004, 0.124, -0.038],  # spine1
        [0.043, -0.386, 0.008],  # left_knee
        [-0.043, -0.383, -0.005],  # right_knee
        [0.004, 0.138, 0.027],  # spine2
        [-0.015, -0.427, -0.037],  # left_ankle
        [0.019, -0.420, -0.034],  # right_ankle
        [-0.001, 0.056, 0.002],  # spine3
        [0.041, -0.060, 0.122],  # left_foot
        [-0.035, -0.062, 0.130],  # right_foot
        [-0.013, 0.212, -0.033],  # neck
        [0.072, 0.114, -0.019],  # left_collar
        [-0.083, 0.112, -0.024],  # right_collar
        [0.010, 0.089, 0.050],  # head
        [0.123, 0.045, -0.018],  # left_shoulder
        [-0.113, 0.047, -0.008],  # right_shoulder
        [0.255, -0.016, -0.023],  # left_elbow
        [-0.261, -0.014, -0.031],  # right_elbow
        [0.266, 0.013, -0.007],  # left_wrist
        [-0.269, 0.007, -0.006],  # right_wrist
        [0.087, -0.010, -0.016],  # left_hand
        [-0.089, -0.009, -0.010],  # right_hand
    ],
    dtype=np.float64,
)

# Unity HumanBodyBones names (also the VMC protocol's bone names). SMPL's hand joints sit at the
# knuckles and have no HumanBodyBones counterpart, so they map to None and are not sent.
UNITY_BONE_NAMES: tuple[str | None, ...] = (
    "Hips",
    "LeftUpperLeg",
    "RightUpperLeg",
    "Spine",
    "LeftLowerLeg",
    "RightLowerLeg",
    "Chest",
    "LeftFoot",
    "RightFoot",
    "UpperChest",
    "LeftToes",
    "RightToes",
    "Neck",
    "LeftShoulder",
    "RightShoulder",
    "Head",
    "LeftUpperArm",
    "RightUpperArm",
    "LeftLowerArm",
    "RightLowerArm",
    "LeftHand",
    "RightHand",
    None,
    None,
)

# Per-joint, per-axis-angle-component limits in degrees, shape (24, 3, 2) = [joint, x/y/z, lo/hi].
# Source: Healthcare-Robotics/bodies-at-rest, lib_py/mesh_depth_lib_br.py ("axang_limits_patrick",
# joints 1..23, also reused in PROX-derived code). That table was tuned for people lying in bed and
# pins several joints to ±0.6°, which would freeze a dancer, so these entries are WIDENED here
# (marked "widened"): knee/elbow off-axis ±10, toes and hands ±30 (x) / ±15, spine twist and side
# bend, hip extension to 45 (kicks, arabesques). The source's right-hip y range [-32.6, -33.7] is a
# typo; the mirror of the left hip, [-32.6, 33.7], is used. Clamping axis-angle components one by
# one is a HEURISTIC: the components are not Euler angles, so near large rotations a clamped vector
# is not the nearest legal pose. The pelvis (global orientation) is not limited.
JOINT_LIMITS_DEG: npt.NDArray[np.float64] = np.array(
    [
        [[-180.0, 180.0], [-180.0, 180.0], [-180.0, 180.0]],  # pelvis: unlimited
        [[-115.0, 45.0], [-33.7, 32.6], [-30.5, 38.6]],  # left_hip (x widened)
        [[-115.0, 45.0], [-32.6, 33.7], [-38.6, 30.5]],  # right_hip (x widened, y typo fixed)
        [[-30.0, 110.0], [-25.0, 25.0], [-20.0, 20.0]],  # spine1 (y, z widened)
        [[-1.3, 139.9], [-10.0, 10.0], [-10.0, 10.0]],  # left_knee (y, z widened)
        [[-1.3, 139.9], [-10.0, 10.0], [-10.0, 10.0]],  # right_knee (y, z widened)
        [[-20.0, 20.0], [-15.0, 15.0], [-15.0, 15.0]],  # spine2 (y, z widened)
        [[-45.0, 60.0], [-30.0, 30.0], [-30.0, 30.0]],  # left_ankle
        [[-45.0, 60.0], [-30.0, 30.0], [-30.0, 30.0]],  # right_ankle
        [[-20.0, 20.0], [-15.0, 15.0], [-15.0, 15.0]],  # spine3 (y, z widened)
        [[-30.0, 30.0], [-15.0, 15.0], [-15.0, 15.0]],  # left_foot (widened)
        [[-30.0, 30.0], [-15.0, 15.0], [-15.0, 15.0]],  # right_foot (widened)
        [[-45.0, 60.0], [-15.0, 15.0], [-20.0, 20.0]],  # neck
        [[-35.0, 42.1], [-50.0, 14.6], [-30.0, 60.0]],  # left_collar
        [[-35.0, 42.1], [-14.6, 50.0], [-60.0, 30.0]],  # right_collar
        [[-30.0, 60.0], [-5.0, 5.0], [-5.0, 5.0]],  # head
        [[-70.0, 84.3], [-100.0, 45.0], [-75.0, 30.0]],  # left_shoulder
        [[-70.0, 84.3], [-45.0, 100.0], [-30.0, 75.0]],  # right_shoulder
        [[-10.0, 10.0], [-160.0, 2.7], [-10.0, 10.0]],  # left_elbow (x, z widened)
        [[-10.0, 10.0], [-2.7, 160.0], [-10.0, 10.0]],  # right_elbow (x, z widened)
        [[-30.0, 30.0], [-15.0, 15.0], [-30.0, 30.0]],  # left_wrist
        [[-30.0, 30.0], [-15.0, 15.0], [-30.0, 30.0]],  # right_wrist
        [[-30.0, 30.0], [-15.0, 15.0], [-15.0, 15.0]],  # left_hand (widened)
        [[-30.0, 30.0], [-15.0, 15.0], [-15.0, 15.0]],  # right_hand (widened)
    ],
    dtype=np.float64,
)

JOINT_LIMITS_RAD: npt.NDArray[np.float64] = np.deg2rad(JOINT_LIMITS_DEG)
# The same limits as float32 (lo, hi) rows, one per pose component: the layout batched clamps use.
JOINT_LIMIT_ROWS: npt.NDArray[np.float32] = np.asarray(JOINT_LIMITS_RAD, np.float32).reshape(-1, 2)
