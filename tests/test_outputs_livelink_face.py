"""Live Link Face sender: packets received on a real UDP socket and decoded from the v6 layout
(shared/design/research/live-link-protocols.md section 2), not with the encoder under test."""

from __future__ import annotations

import math
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from bridge.clients.outputs.livelink_face import LiveLinkFaceOutput
from bridge.clients.outputs.router import OutputRouter

from .test_outputs_helpers import FACE_SESSION, Publisher, face_frame, face_rig, opened_event, udp_listener

# Unreal's EARFaceBlendShape order, written out from the research notes (section 3).
EAR_FACE_BLEND_SHAPE = [
    "EyeBlinkLeft",
    "EyeLookDownLeft",
    "EyeLookInLeft",
    "EyeLookOutLeft",
    "EyeLookUpLeft",
    "EyeSquintLeft",
    "EyeWideLeft",
    "EyeBlinkRight",
    "EyeLookDownRight",
    "EyeLookInRight",
    "EyeLookOutRight",
    "EyeLookUpRight",
    "EyeSquintRight",
    "EyeWideRight",
    "JawForward",
    "JawLeft",
    "JawRight",
    "JawOpen",
    "MouthClose",
    "MouthFunnel",
    "MouthPucker",
    "MouthLeft",
    "MouthRight",
    "MouthSmileLeft",
    "MouthSmileRight",
    "MouthFrownLeft",
    "MouthFrownRight",
    "MouthDimpleLeft",
    "MouthDimpleRight",
    "MouthStretchLeft",
    "MouthStretchRight",
    "MouthRollLower",
    "MouthRollUpper",
    "MouthShrugLower",
    "MouthShrugUpper",
    "MouthPressLeft",
    "MouthPressRight",
    "MouthLowerDownLeft",
    "MouthLowerDownRight",
    "MouthUpperUpLeft",
    "MouthUpperUpRight",
    "BrowDownLeft",
    "BrowDownRight",
    "BrowInnerUp",
    "BrowOuterUpLeft",
    "BrowOuterUpRight",
    "CheekPuff",
    "CheekSquintLeft",
    "CheekSquintRight",
    "NoseSneerLeft",
    "NoseSneerRight",
    "TongueOut",
    "HeadYaw",
    "HeadPitch",
    "HeadRoll",
    "LeftEyeYaw",
    "LeftEyePitch",
    "LeftEyeRoll",
    "RightEyeYaw",
    "RightEyePitch",
    "RightEyeRoll",
]


@dataclass
class Packet:
    version: int
    device_id: str
    subject: str
    frame_number: int
    sub_frame: float
    rate: tuple[int, int]
    values: dict[str, float]


def decode(data: bytes) -> Packet:
    version = data[0]
    offset = 1
    (n,) = struct.unpack_from(">i", data, offset)
    device = data[offset + 4 : offset + 4 + n].decode()
    offset += 4 + n
    (m,) = struct.unpack_from(">i", data, offset)
    subject = data[offset + 4 : offset + 4 + m].decode()
    offset += 4 + m
    frame_number, sub_frame, numerator, denominator = struct.unpack_from(">ifii", data, offset)
    offset += 16
    count = data[offset]
    offset += 1
    values = struct.unpack_from(f">{count}f", data, offset)
    assert offset + 4 * count == len(data), "trailing bytes"
    assert count == len(EAR_FACE_BLEND_SHAPE) == 61
    return Packet(
        version,
        device,
        subject,
        frame_number,
        sub_frame,
        (numerator, denominator),
        dict(zip(EAR_FACE_BLEND_SHAPE, values, strict=True)),
    )


@pytest.fixture
def receiver() -> Iterator[socket.socket]:
    with udp_listener(5.0) as sock:
        yield sock


def send_face_frames(
    receiver: socket.socket, rig: dict[str, object], frames: list[bytes], fps: float = 30.0
) -> list[bytes]:
    port = receiver.getsockname()[1]
    publisher = Publisher()
    router = OutputRouter([LiveLinkFaceOutput("127.0.0.1", port, subject="Bridge")], publisher.endpoint)
    try:
        router.start()
        publisher.wait_subscribed()
        publisher.send(f"event/{FACE_SESSION}", opened_event(FACE_SESSION, "face", rig, fps))
        packets = []
        for payload in frames:  # one at a time: the router keeps only the newest frame per session
            publisher.send(f"frame/{FACE_SESSION}", payload)
            packets.append(receiver.recv(2048))
        return packets
    finally:
        router.stop()
        publisher.close()


def quat(axis: str, degrees: float) -> np.ndarray:
    return np.asarray(Rotation.from_euler(axis, degrees, degrees=True).as_quat(), dtype=np.float32)


def test_packet_layout_names_order_and_values(receiver: socket.socket) -> None:
    # The rig lists blendshapes alphabetically: the sender must map by name, not by position.
    names = sorted(EAR_FACE_BLEND_SHAPE[:52])
    weights = {name: (i + 1) / 100.0 for i, name in enumerate(names)}
    t_capture = 1_700_000_000_123_456_789
    frame = face_frame(0, np.array([weights[n] for n in names], np.float32), t_capture_ns=t_capture)
    (data,) = send_face_frames(receiver, face_rig(names), [frame], fps=30.0)

    assert data[0] == 6
    assert data[1:5] == b"\x00\x00\x00\x24"  # big-endian length 36 of a UUID string
    packet = decode(data)
    assert packet.version == 6 and packet.subject == "Bridge" and len(packet.device_id) == 36
    assert packet.rate == (30, 1)
    seconds_of_day = (t_capture % (86400 * 10**9)) / 1e9
    assert packet.frame_number == math.floor(seconds_of_day * 30)
    assert packet.sub_frame == pytest.approx(seconds_of_day * 30 % 1, abs=1e-3)
    for name in EAR_FACE_BLEND_SHAPE[:52]:
        assert packet.values[name] == pytest.approx(weights[name], abs=1e-6), name
    for name in EAR_FACE_BLEND_SHAPE[52:]:
        assert packet.values[name] == 0.0  # identity head, no gaze


def test_head_angles_are_unreal_rotator_degrees_over_180(receiver: socket.socket) -> None:
    weights = np.zeros(52, np.float32)
    heads = [
        quat("y", -30),  # wire: -30 about up = turning to the avatar's right
        quat("x", -20),  # wire: -20 about +X (avatar's left) = chin up
        quat("z", 10),  # wire: +10 about forward = left ear up, tilt to the avatar's right
    ]
    frames = [face_frame(i, weights, head=h) for i, h in enumerate(heads)]
    packets = [decode(p).values for p in send_face_frames(receiver, face_rig(), frames)]
    assert packets[0]["HeadYaw"] == pytest.approx(30 / 180, abs=1e-5)
    assert packets[1]["HeadPitch"] == pytest.approx(20 / 180, abs=1e-5)
    assert packets[2]["HeadRoll"] == pytest.approx(10 / 180, abs=1e-5)
    assert packets[0]["HeadPitch"] == pytest.approx(0, abs=1e-6) and packets[0]["HeadRoll"] == pytest.approx(
        0, abs=1e-6
    )


def unreal_rotator(q: np.ndarray) -> tuple[float, float, float]:
    """UE's FQuat::Rotator() (yaw, pitch, roll in degrees) of a wire quaternion converted to
    Unreal's axes with protocol section 3: (x, y, z, w) -> (-z, x, -y, w)."""
    x, y, z, w = -q[2], q[0], -q[1], q[3]
    pitch = math.degrees(math.asin(2.0 * (z * x - w * y)))
    yaw = math.degrees(math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))
    roll = math.degrees(math.atan2(-2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y)))
    return yaw, pitch, roll


def test_head_angles_match_unreal_for_any_rotation(receiver: socket.socket) -> None:
    rng = np.random.default_rng(3)
    # moderate head poses (no gimbal lock): yaw/pitch/roll within +-60 degrees
    heads = (
        Rotation.from_euler("YXZ", rng.uniform(-60, 60, (5, 3)), degrees=True).as_quat().astype(np.float32)
    )
    frames = [face_frame(i, np.zeros(52, np.float32), head=h) for i, h in enumerate(heads)]
    for q, data in zip(heads, send_face_frames(receiver, face_rig(), frames), strict=True):
        values = decode(data).values
        yaw, pitch, roll = unreal_rotator(q.astype(np.float64))
        assert values["HeadYaw"] == pytest.approx(yaw / 180, abs=1e-5)
        assert values["HeadPitch"] == pytest.approx(pitch / 180, abs=1e-5)
        assert values["HeadRoll"] == pytest.approx(roll / 180, abs=1e-5)


def test_session_without_blendshapes_still_sends_head(receiver: socket.socket) -> None:
    (data,) = send_face_frames(receiver, face_rig([]), [face_frame(0, None, head=quat("y", -45))])
    values = decode(data).values
    assert all(values[n] == 0.0 for n in EAR_FACE_BLEND_SHAPE[:52])
    assert values["HeadYaw"] == pytest.approx(0.25, abs=1e-5)
