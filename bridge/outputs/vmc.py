"""VMC protocol Performer: frames -> OSC over UDP to a Marionette (VSeeFace, Warudo, EVMC4U, VMC4UE).

Every frame sends /VMC/Ext/OK and /VMC/Ext/T, then for motion sessions /VMC/Ext/Root/Pos and one
/VMC/Ext/Bone/Pos per joint that has a Unity HumanBodyBones name, and for face sessions one
/VMC/Ext/Blend/Val per ARKit blendshape (PerfectSync clip names, PascalCase as in Unity's
ARKitBlendShapeLocation) plus the VRM0 presets derivable from them, then /VMC/Ext/Blend/Apply, and
the LeftEye / RightEye bones where the frame carries gaze (face tracking).

Values are Unity transform values (left-handed, Y-up, metres; quaternion x, y, z, w), converted
from the wire with protocol section 3. Bone poses are *local*: rotation relative to the parent bone
and position = the rest offset from it, as a Unity Transform's localRotation/localPosition of a
T-posed avatar whose bones have identity rest rotations (what VRM "Enforce T-Pose" exports).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
from pythonosc.osc_message import OscMessage
from pythonosc.osc_message_builder import OscMessageBuilder

from bridge.outputs.router import Output, Received
from bridge.outputs.session import BodyRig, FaceRig, SessionInfo
from bridge.outputs.udp import UdpDestination
from bridge.protocol import FaceFrame, Frame, MotionFrame
from bridge.rig.rotations import axis_angle_to_quat, quat_multiply, quat_rotate

log = logging.getLogger(__name__)

DEFAULT_PORT = 39539  # the Marionette port the VMC spec, VSeeFace and Warudo use
# Largest datagram we send: below a 1500-byte Ethernet MTU minus IP/UDP headers, so a full
# skeleton bundle is split instead of relying on IP fragmentation (one lost fragment loses all).
MAX_DATAGRAM = 1400
_BUNDLE_HEADER = 16  # "#bundle\0" + 8-byte time tag

# VRM0 BlendShapeProxy presets that an ARKit weight drives directly (VRM0 names are case sensitive).
# The vowels are coarse: A = jaw open, U = pucker, O = funnel; I and E have no single ARKit shape.
VRM0_PRESETS: tuple[tuple[str, str], ...] = (
    ("Blink_L", "EyeBlinkLeft"),
    ("Blink_R", "EyeBlinkRight"),
    ("A", "JawOpen"),
    ("U", "MouthPucker"),
    ("O", "MouthFunnel"),
)

# Speech frames carry the five VRM0 vowel presets themselves (frame `vowels`, docs/protocol.md 6.2).
SPEECH_VOWEL_PRESETS = ("A", "I", "U", "E", "O")

# /VMC/Ext/OK arguments after `loaded`: calibration state 3 (calibrated), calibration mode 0 (normal).
_CALIBRATED, _NORMAL_MODE = 3, 0


def to_unity_position(p: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Wire (right-handed, +X = avatar's left) -> Unity (left-handed, +X = avatar's right), metres."""
    return np.asarray(p, dtype=np.float64) * (-1.0, 1.0, 1.0)


def to_unity_quaternion(q: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The same change of basis for rotations: (x, y, z, w) -> (x, -y, -z, w)."""
    return np.asarray(q, dtype=np.float64) * (1.0, -1.0, -1.0, 1.0)


@dataclass(frozen=True)
class _Bone:
    name: str  # HumanBodyBones
    chain: tuple[int, ...]  # joints from the first one below the parent bone down to this bone's joint


def humanoid_bones(rig: BodyRig) -> list[_Bone]:
    """Each joint with a humanoid name, with the unnamed joints between it and its parent bone.

    A joint without a HumanBodyBones name is not sent, so its rotation and offset are folded into
    the next named joint below it; with the SMPL rig only the hands (leaves) are unnamed.
    """
    bones = []
    for joint, name in enumerate(rig.humanoid):
        if not name:
            continue
        chain = [joint]
        parent = rig.parents[joint]
        while parent >= 0 and not rig.humanoid[parent]:
            chain.insert(0, parent)
            parent = rig.parents[parent]
        bones.append(_Bone(name, tuple(chain)))
    return bones


def local_pose(
    bone: _Bone, joints: npt.NDArray[np.float32], offsets: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(position, rotation) of a bone in its parent bone's frame, wire convention."""
    first = bone.chain[0]
    position = offsets[first].astype(np.float64)
    rotation = joints[first].astype(np.float64)
    for joint in bone.chain[1:]:
        position = position + quat_rotate(rotation, offsets[joint])
        rotation = quat_multiply(rotation, joints[joint])
    return position, rotation


def message(address: str, *args: str | float | int) -> OscMessage:
    builder = OscMessageBuilder(address)
    for arg in args:
        builder.add_arg(arg, "s" if isinstance(arg, str) else "i" if isinstance(arg, int) else "f")
    return builder.build()


def pack_datagrams(messages: list[OscMessage], bundle: bool, limit: int = MAX_DATAGRAM) -> list[bytes]:
    """Messages -> datagrams: one per message, or bundles of consecutive messages below `limit` bytes."""
    if not bundle:
        return [m.dgram for m in messages]
    datagrams: list[bytes] = []
    builder, size = OscBundleBuilder(IMMEDIATELY), _BUNDLE_HEADER
    count = 0
    for m in messages:
        need = 4 + m.size  # int32 element size + the message
        if count and size + need > limit:
            datagrams.append(builder.build().dgram)
            builder, size, count = OscBundleBuilder(IMMEDIATELY), _BUNDLE_HEADER, 0
        builder.add_content(m)
        size += need
        count += 1
    if count:
        datagrams.append(builder.build().dgram)
    return datagrams


class VmcOutput(Output):
    def __init__(
        self,
        host: str,
        port: int = DEFAULT_PORT,
        *,
        bundle: bool = True,
        max_rate_hz: float | None = None,
        vrm_presets: bool = True,
        max_datagram: int = MAX_DATAGRAM,
    ) -> None:
        self.name = f"vmc://{host}:{port}"
        self.max_rate_hz = max_rate_hz
        self.bundle = bundle
        self.vrm_presets = vrm_presets
        self.max_datagram = max_datagram
        self.destination = UdpDestination(host, port, self.name)
        self._t0 = time.monotonic()
        self._bones: dict[tuple[tuple[str, ...], tuple[int, ...]], list[_Bone]] = {}  # by (humanoid, parents)
        self._warned: set[str] = set()

    def on_frame(self, frame: Frame, session: SessionInfo, received: Received) -> None:
        messages = self.messages(frame, session)
        self.destination.send(pack_datagrams(messages, self.bundle, self.max_datagram))

    def close(self) -> None:
        self.destination.close()

    def messages(self, frame: Frame, session: SessionInfo) -> list[OscMessage]:
        """All messages of one frame, in sending order."""
        tracking = int(frame.face_found) if isinstance(frame, FaceFrame) else 1
        out = [
            message("/VMC/Ext/OK", 1, _CALIBRATED, _NORMAL_MODE, tracking),
            message("/VMC/Ext/T", time.monotonic() - self._t0),
        ]
        if isinstance(frame, MotionFrame) and isinstance(session.rig, BodyRig):
            out += self._body(frame, session.rig)
        elif isinstance(frame, FaceFrame) and isinstance(session.rig, FaceRig):
            out += self._face(frame, session.session, session.rig)
        return out

    def _body(self, frame: MotionFrame, rig: BodyRig) -> list[OscMessage]:
        key = (rig.humanoid, rig.parents)
        bones = self._bones.get(key)
        if bones is None:
            bones = self._bones[key] = humanoid_bones(rig)
        root = to_unity_position(frame.root)
        # The root carries the translation only; the body's orientation is the Hips rotation, as
        # in SMPL, where the pelvis rotation is the global orientation.
        out = [message("/VMC/Ext/Root/Pos", "root", *map(float, root), 0.0, 0.0, 0.0, 1.0)]
        for bone in bones:
            position, rotation = local_pose(bone, frame.joints, rig.rest_offsets)
            p, q = to_unity_position(position), to_unity_quaternion(rotation)
            out.append(message("/VMC/Ext/Bone/Pos", bone.name, *map(float, p), *map(float, q)))
        return out

    def _face(self, frame: FaceFrame, session: str, rig: FaceRig) -> list[OscMessage]:
        if not rig.blendshapes or frame.blendshapes.size != len(rig.blendshapes):
            if session not in self._warned:
                self._warned.add(session)
                log.warning(
                    "%s: face session %s has no blendshapes (opened with blendshapes=false)",
                    self.name,
                    session,
                )
            return []
        weights = {name: float(w) for name, w in zip(rig.blendshapes, frame.blendshapes, strict=True)}
        out = [message("/VMC/Ext/Blend/Val", name, w) for name, w in weights.items()]
        if self.vrm_presets:
            presets = {p: weights[a] for p, a in VRM0_PRESETS if a in weights}
            if frame.vowels.size == len(SPEECH_VOWEL_PRESETS):  # speech: the real A I U E O, not derived
                presets.update(zip(SPEECH_VOWEL_PRESETS, frame.vowels.tolist(), strict=True))
            out += [message("/VMC/Ext/Blend/Val", p, w) for p, w in presets.items()]
        out.append(message("/VMC/Ext/Blend/Apply"))
        if frame.gaze.size == 4:  # face tracking: eye bones from the gaze
            out += [
                message(
                    "/VMC/Ext/Bone/Pos",
                    bone,
                    0.0,
                    0.0,
                    0.0,
                    *map(float, to_unity_quaternion(eye_rotation(y, p))),
                )
                for bone, y, p in (("LeftEye", *frame.gaze[:2]), ("RightEye", *frame.gaze[2:]))
            ]
        return out


def eye_rotation(yaw: float, pitch: float) -> npt.NDArray[np.float64]:
    """Wire quaternion of an eye looking `yaw` to the subject's left (about +Y), then `pitch` up (about
    -X). Sent as the bone's local rotation with position 0: receivers keep the eye's own offset."""
    turn = axis_angle_to_quat([0.0, float(yaw), 0.0])
    lift = axis_angle_to_quat([-float(pitch), 0.0, 0.0])
    q: npt.NDArray[np.float64] = np.asarray(quat_multiply(turn, lift), np.float64)
    return q
