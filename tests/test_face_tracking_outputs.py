"""Face tracking's extra channels in the outputs: eye curves in Live Link Face, eye bones over VMC."""

from __future__ import annotations

import math
import struct

import numpy as np

from bridge.clients.outputs.livelink_face import CURVES, LiveLinkFaceOutput
from bridge.clients.outputs.session import SessionInfo
from bridge.clients.outputs.vmc import VmcOutput
from bridge.protocol import FaceFrame, decode_frame
from bridge.protocol.events import FACE_EYELID_NAMES, FaceRig
from bridge.protocol.frames import encode_face_frame
from bridge.rig.arkit import ARKIT_NAMES
from bridge.rig.humanoid import EYE_OFFSETS

RIG = FaceRig((), FACE_EYELID_NAMES, ARKIT_NAMES, ("TongueOut",), ("head_position", "gaze"))
INFO = SessionInfo("0123456789abcdef", "face", RIG, fps=30.0, model="mediapipe_face")
# Left eye 0.2 rad to the subject's left and 0.1 rad up; right eye 0.3 rad to the right.
GAZE = np.array([0.2, 0.1, -0.3, 0.0], np.float32)


def tracked_frame() -> FaceFrame:
    payload = encode_face_frame(
        INFO.session, 0, 0, 1_000_000_000, face_found=True, expression=np.zeros(0, np.float32),
        eyelids=np.zeros(2, np.float32), jaw=np.array([0, 0, 0, 1], np.float32),
        head=np.array([0, 0, 0, 1], np.float32), blendshapes=np.full(52, 0.25, np.float32), engine_us=1.0,
        batch=1, head_position=np.array([0, 0, -0.6], np.float32), gaze=GAZE,
    )  # fmt: skip
    frame = decode_frame(payload)
    assert isinstance(frame, FaceFrame)
    return frame


def test_live_link_face_packets_carry_the_eye_curves() -> None:
    out = LiveLinkFaceOutput("127.0.0.1", 9)
    try:
        packet = out.packet(tracked_frame(), INFO)
    finally:
        out.close()
    values = dict(
        zip(
            CURVES, struct.unpack_from(f">{len(CURVES)}f", packet, len(packet) - 4 * len(CURVES)), strict=True
        )
    )
    # Unreal's signs, degrees / 180: yaw > 0 towards the avatar's right, pitch > 0 up.
    assert math.isclose(values["LeftEyeYaw"], -0.2 / math.pi, rel_tol=1e-5)
    assert math.isclose(values["LeftEyePitch"], 0.1 / math.pi, rel_tol=1e-5)
    assert math.isclose(values["RightEyeYaw"], 0.3 / math.pi, rel_tol=1e-5)
    assert values["LeftEyeRoll"] == values["RightEyeRoll"] == 0.0
    assert math.isclose(values["EyeBlinkLeft"], 0.25, rel_tol=1e-6)


def test_vmc_sends_eye_bones_and_perfect_sync() -> None:
    out = VmcOutput("127.0.0.1", 9)
    try:
        messages = out.messages(tracked_frame(), INFO)
    finally:
        out.close()
    bones = {m.params[0]: m.params[1:] for m in messages if m.address == "/VMC/Ext/Bone/Pos"}
    blends = {m.params[0] for m in messages if m.address == "/VMC/Ext/Blend/Val"}
    assert set(ARKIT_NAMES) <= blends and set(bones) == {"Neck", "Head", "LeftEye", "RightEye"}
    left = np.array(bones["LeftEye"][3:])
    # Unity is left-handed: a look to the subject's left (wire +Y turn) stays a rotation about Y,
    # mirrored in sign; its angle is what was tracked.
    angle = 2 * math.acos(min(1.0, abs(left[3])))
    assert math.isclose(angle, math.hypot(0.2, 0.1), rel_tol=0.05)
    # The eye's rest offset from Head (Unity axes: the avatar's left is -X), not (0, 0, 0), which
    # receivers that apply bone positions (EVMC4U by default) took as "the eye inside the head bone".
    assert np.allclose(bones["LeftEye"][:3], EYE_OFFSETS[0] * [-1, 1, 1], atol=1e-6)
