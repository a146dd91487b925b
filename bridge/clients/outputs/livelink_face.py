"""Live Link Face (ARKit) sender: the version-6 UDP packet that Unreal's Apple ARKit Face Support reads.

Packet (all multi-byte fields big-endian, as UE's FNboSerializer writes them): uint8 version 6;
int32 length + UTF-8 device id; int32 length + UTF-8 subject name; frame time = int32 frame number,
float32 sub-frame, int32 rate numerator, int32 rate denominator; uint8 count 61; 61 float32 values:
the 52 ARKit weights in EARFaceBlendShape order, HeadYaw, HeadPitch, HeadRoll, then yaw, pitch, roll
of the left and the right eye.

Head angles: the frame's head quaternion, converted to Unreal's axes (protocol section 3), as the
FRotator Unreal computes from it, in degrees divided by 180 - the [-1, 1] scale UE's own ARKit
code uses (AppleARKitConversion.h, ToBlendShapeMap). HeadYaw > 0 turns the head to the avatar's
right, HeadPitch > 0 raises the chin, HeadRoll > 0 tilts it towards the avatar's right shoulder.
Eye yaw and pitch come from the frame's gaze (face tracking; 0 for models without one), on the same
scale and with the same signs as the head's; eye roll is 0.
"""

from __future__ import annotations

import logging
import math
import struct
import uuid
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from bridge.clients.outputs.router import Output, Received
from bridge.clients.outputs.session import DEFAULT_FPS, FaceRig, SessionEvent, SessionInfo
from bridge.clients.outputs.udp import UdpDestination
from bridge.protocol import FaceFrame, Frame
from bridge.rig.arkit import ARKIT_INDEX, ARKIT_NAMES
from bridge.rig.rotations import quat_to_euler

log = logging.getLogger(__name__)

DEFAULT_PORT = 11111  # Live Link Face's default target port
DEFAULT_SUBJECT = "AvatarBridge"
PACKET_VERSION = 6
EXTRA_CURVES = (
    "HeadYaw",
    "HeadPitch",
    "HeadRoll",
    "LeftEyeYaw",
    "LeftEyePitch",
    "LeftEyeRoll",
    "RightEyeYaw",
    "RightEyePitch",
    "RightEyeRoll",
)
CURVES: tuple[str, ...] = (*ARKIT_NAMES, *EXTRA_CURVES)  # EARFaceBlendShape, 61 entries
# UE reads a packet into a fixed buffer sized for names of up to 256 characters and drops longer ones.
MAX_SUBJECT_BYTES = 200
_NS_PER_DAY = 86_400 * 10**9
# Device ids are UUID strings like the app's; derived from the session so each session is stable.
_DEVICE_NAMESPACE = uuid.UUID("6f3a0c52-8a55-4d55-9b5e-0a7a5b1d2c01")


def head_angles(q: npt.ArrayLike) -> tuple[float, float, float]:
    """Wire head quaternion (x, y, z, w) -> (HeadYaw, HeadPitch, HeadRoll) in [-1, 1] (= degrees / 180).

    Decomposed as yaw about up, then pitch about the head's left axis, then roll about its forward
    axis (intrinsic Y-X-Z on the wire, the order of UE's FRotator). On the wire (right-handed, +X =
    avatar's left) positive yaw turns left and positive pitch lowers the chin, so those two flip.
    """
    yaw, pitch, roll = quat_to_euler(q, "yxz")
    return -float(yaw) / math.pi, -float(pitch) / math.pi, float(roll) / math.pi


def frame_time(t_ns: int, rate: Fraction) -> tuple[int, float]:
    """Timecode-style frame time of a wall-clock instant: (frame number of the day, sub-frame)."""
    frames = Fraction(t_ns % _NS_PER_DAY, 10**9) * rate
    whole = math.floor(frames)
    return whole, float(frames - whole)


def encode_packet(
    device_id: str, subject: str, frame_number: int, sub_frame: float, rate: Fraction, values: npt.ArrayLike
) -> bytes:
    v = np.asarray(values, dtype=">f4")
    if v.shape != (len(CURVES),):
        raise ValueError(f"expected {len(CURVES)} values, got shape {v.shape}")
    device, name = device_id.encode(), subject.encode()
    return b"".join(
        (
            struct.pack(">Bi", PACKET_VERSION, len(device)),
            device,
            struct.pack(">i", len(name)),
            name,
            struct.pack(">ifiiB", frame_number, sub_frame, rate.numerator, rate.denominator, len(CURVES)),
            v.tobytes(),
        )
    )


class LiveLinkFaceOutput(Output):
    def __init__(
        self,
        host: str,
        port: int = DEFAULT_PORT,
        *,
        subject: str = DEFAULT_SUBJECT,
        max_rate_hz: float | None = None,
    ) -> None:
        if not 0 < len(subject.encode()) <= MAX_SUBJECT_BYTES:
            raise ValueError(f"subject name must be 1..{MAX_SUBJECT_BYTES} UTF-8 bytes")
        self.name = f"livelink-face://{host}:{port}"
        self.max_rate_hz = max_rate_hz
        self.subject = subject
        self.destination = UdpDestination(host, port, self.name)
        self._sessions: dict[str, _Session] = {}

    def on_frame(self, frame: Frame, session: SessionInfo, received: Received) -> None:
        if not isinstance(frame, FaceFrame) or not isinstance(session.rig, FaceRig):
            return  # motion sessions have no face
        self.destination.send([self.packet(frame, session)])

    def on_event(self, event: SessionEvent, received: Received) -> None:
        if event.event == "closed":
            self._sessions.pop(event.session, None)

    def close(self) -> None:
        self.destination.close()

    def packet(self, frame: FaceFrame, session: SessionInfo) -> bytes:
        s = self._sessions.get(session.session)
        if s is None or s.info is not session:
            s = self._sessions[session.session] = _Session.of(session)
        values = np.zeros(len(CURVES), dtype=np.float64)
        if frame.blendshapes.size and frame.blendshapes.size == s.n_blendshapes:
            values[s.target] = np.clip(frame.blendshapes[s.source], 0.0, 1.0)
        values[len(ARKIT_NAMES) : len(ARKIT_NAMES) + 3] = head_angles(frame.head)
        if frame.gaze.size == 4:  # wire: yaw > 0 to the subject's left, pitch > 0 up
            eyes = len(ARKIT_NAMES) + 3
            left_yaw, left_pitch, right_yaw, right_pitch = (float(v) / math.pi for v in frame.gaze)
            values[eyes : eyes + 6] = (-left_yaw, left_pitch, 0.0, -right_yaw, right_pitch, 0.0)
        number, sub = frame_time(frame.header.t_capture_ns, s.rate)
        return encode_packet(s.device_id, self.subject, number, sub, s.rate, values)


@dataclass(frozen=True)
class _Session:
    """What every packet of one session shares, worked out once when its first frame arrives."""

    info: SessionInfo
    device_id: str
    rate: Fraction
    n_blendshapes: int  # in the rig, so in every frame that carries blendshapes
    source: npt.NDArray[np.intp]  # rig blendshapes with an ARKit name ...
    target: npt.NDArray[np.intp]  # ... and their EARFaceBlendShape index

    @classmethod
    def of(cls, info: SessionInfo) -> _Session:
        names = info.rig.blendshapes if isinstance(info.rig, FaceRig) else ()
        # Map by name: the rig promises EARFaceBlendShape order, but names are the contract.
        index = np.array([ARKIT_INDEX.get(n, -1) for n in names], dtype=np.intp)
        return cls(
            info,
            device_id=str(uuid.uuid5(_DEVICE_NAMESPACE, info.session)),
            rate=Fraction(info.fps or DEFAULT_FPS).limit_denominator(1001),
            n_blendshapes=len(names),
            source=np.flatnonzero(index >= 0),
            target=index[index >= 0],
        )
