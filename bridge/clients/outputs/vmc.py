"""VMC protocol Performer: frames -> OSC over UDP to a Marionette (VSeeFace, Warudo, EVMC4U, VMC4UE).

Every frame sends /VMC/Ext/OK and /VMC/Ext/T, then for motion sessions /VMC/Ext/Root/Pos and one
/VMC/Ext/Bone/Pos per joint that has a Unity HumanBodyBones name; for face sessions the head as Neck
and Head bones, the LeftEye / RightEye bones where the frame carries gaze (face tracking), one
/VMC/Ext/Blend/Val per ARKit blendshape (PerfectSync clip names, PascalCase as in Unity's
ARKitBlendShapeLocation) plus the VRM0 presets derivable from them, then /VMC/Ext/Blend/Apply.

Values are Unity transform values (left-handed, Y-up, metres; quaternion x, y, z, w), converted
from the wire with protocol section 3. Bone poses are *local*, what a receiver writes into the
bone's Transform: EVMC4U's default sets both localPosition and localRotation of each received bone
(ExternalReceiver, BonePositionSynchronize), so every position sent is the bone's rest offset from
its parent in a T-posed humanoid whose bones have identity rest rotations (what VRM "Enforce
T-Pose" exports): the rig's rest offsets for the body, bridge.rig.humanoid for the eyes. Root/Pos is
the avatar's root on the floor (the spec's "model root", applied as the root's local pose), and the
Hips sit above it at the rig's hip height, so a standing pose has its feet on the floor (y = 0).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
from pythonosc.osc_message import OscMessage
from pythonosc.osc_message_builder import OscMessageBuilder

from bridge.clients.outputs.router import Output, Received
from bridge.clients.outputs.session import BodyRig, FaceRig, SessionInfo
from bridge.clients.outputs.udp import UdpDestination
from bridge.protocol import FaceFrame, Frame, MotionFrame
from bridge.rig import smpl
from bridge.rig.forward_kinematics import forward_kinematics_quat
from bridge.rig.humanoid import EYE_BONE_NAMES, EYE_OFFSETS
from bridge.rig.rotations import (
    FloatArray,
    axis_angle_to_quat,
    quat_multiply,
    quat_rotate,
    quat_to_axis_angle,
)

log = logging.getLogger(__name__)

DEFAULT_PORT = 39539  # the Marionette port the VMC spec, VSeeFace and Warudo use
# Largest datagram we send. The spec has a frame's messages bundled in packets within 1500 bytes;
# below a 1500-byte Ethernet MTU minus IP/UDP headers a frame is split into several bundles instead of
# relying on IP fragmentation (one lost fragment loses all).
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

# Face sessions' Neck and Head local positions: the SMPL rest offsets (Neck from UpperChest, Head from
# Neck), the same the body rig sends, so a receiver that applies positions keeps a human neck.
NECK_OFFSET = smpl.REST_OFFSETS[smpl.JOINT_NAMES.index("neck")]
HEAD_OFFSET = smpl.REST_OFFSETS[smpl.JOINT_NAMES.index("head")]
# The bones whose lowest rest point is the floor of a standing pose (any joint if a rig has none).
FOOT_BONES = frozenset({"LeftFoot", "RightFoot", "LeftToes", "RightToes"})
OPTIONS_HELP = "options: rate=HZ, neck=0..1, eyes=on|off, presets=on|off"


@dataclass(frozen=True)
class VmcOptions:
    """What a receiver wants, from `vmc://HOST:PORT?...` (see `from_query`)."""

    # Share of a face session's head rotation sent on the Neck bone; the Head bone gets the rest, so
    # Neck then Head is the whole rotation. 0.5 spreads a turn over the neck like a person's;
    # 1 is everything on the Neck (Kalidokit's VRM samples), 0 everything on the Head.
    neck: float = 0.5
    eyes: bool = True  # send LeftEye / RightEye (with their rest offsets) where the frame has gaze
    presets: bool = True  # send the VRM0 presets (Blink_L, A, ...) beside the PerfectSync names

    KEYS: ClassVar[tuple[str, ...]] = ("neck", "eyes", "presets")  # their names in a vmc:// URL

    @classmethod
    def from_query(cls, items: Mapping[str, str]) -> VmcOptions:
        """`neck=SHARE` (0..1), `eyes=on|off`, `presets=on|off`; ValueError names a bad one."""
        unknown = sorted(set(items) - set(cls.KEYS))
        if unknown:
            raise ValueError(f"unknown VMC option '{unknown[0]}' ({OPTIONS_HELP})")
        options = cls()
        if "neck" in items:
            try:
                neck = float(items["neck"])
            except ValueError:
                neck = -1.0
            if not 0.0 <= neck <= 1.0:
                raise ValueError(f"neck={items['neck']}: expected a share from 0 to 1")
            options = replace(options, neck=neck)
        if "eyes" in items:
            options = replace(options, eyes=_switch("eyes", items["eyes"]))
        if "presets" in items:
            options = replace(options, presets=_switch("presets", items["presets"]))
        return options


def _switch(key: str, value: str) -> bool:
    on, off = ("on", "1", "true", "yes"), ("off", "0", "false", "no")
    if value.lower() not in on + off:
        raise ValueError(f"{key}={value}: expected on or off")
    return value.lower() in on


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
    from_root: bool  # the chain starts at the skeleton's root: its position is relative to the avatar root


@dataclass(frozen=True)
class _Skeleton:
    bones: tuple[_Bone, ...]
    floor: float  # wire y of the floor with the root translation at 0: the rest pose's lowest foot point


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
        bones.append(_Bone(name, tuple(chain), rig.parents[chain[0]] < 0))
    return bones


def floor_height(rig: BodyRig) -> float:
    """Wire y of the floor for a root translation of 0: the lowest foot bone of the rest pose.

    For the SMPL rig this is bridge.motion.foot_plant.FLOOR_Y (the lower of ankle and toe), the floor
    the served motion's planted feet stand on.
    """
    rest = np.zeros((len(rig.parents), 4))
    rest[:, 3] = 1.0
    positions, _ = forward_kinematics_quat(rest, None, rig.rest_offsets, rig.parents)
    feet = [j for j, name in enumerate(rig.humanoid) if name in FOOT_BONES] or list(range(len(rig.parents)))
    return float(positions[feet, 1].min())


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


def split_head(head: npt.ArrayLike, neck_share: float) -> tuple[FloatArray, FloatArray]:
    """(Neck, Head) local rotations whose product Neck·Head is `head`: the same axis, the angle shared."""
    turn = quat_to_axis_angle(head)
    return axis_angle_to_quat(turn * neck_share), axis_angle_to_quat(turn * (1.0 - neck_share))


def message(address: str, *args: str | float | int) -> OscMessage:
    builder = OscMessageBuilder(address)
    for arg in args:
        builder.add_arg(arg, "s" if isinstance(arg, str) else "i" if isinstance(arg, int) else "f")
    return builder.build()


def bone_message(name: str, position: npt.ArrayLike, rotation: npt.ArrayLike) -> OscMessage:
    """/VMC/Ext/Bone/Pos from a wire-convention local position and rotation."""
    p, q = to_unity_position(position), to_unity_quaternion(rotation)
    return message("/VMC/Ext/Bone/Pos", name, *map(float, p), *map(float, q))


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
        options: VmcOptions = VmcOptions(),
        max_datagram: int = MAX_DATAGRAM,
    ) -> None:
        self.name = f"vmc://{host}:{port}"
        self.max_rate_hz = max_rate_hz
        self.bundle = bundle
        self.options = options
        self.max_datagram = max_datagram
        self.destination = UdpDestination(host, port, self.name)
        self._t0 = time.monotonic()
        self._skeletons: dict[tuple[tuple[str, ...], tuple[int, ...], bytes], _Skeleton] = {}
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
            if session.rig.body is not None and frame.body.size:  # body tracking: the whole humanoid
                out += self._bones(frame.body, np.zeros(3), session.rig.body) + self._eyes(frame)
            elif session.pipeline != "speech":  # a voice has no head pose: leave the head to other sources
                out += self._head(frame)
            out += self._blendshapes(frame, session.session, session.rig)
        return out

    def _skeleton(self, rig: BodyRig) -> _Skeleton:
        key = (rig.humanoid, rig.parents, np.asarray(rig.rest_offsets, np.float64).tobytes())
        skeleton = self._skeletons.get(key)
        if skeleton is None:
            skeleton = self._skeletons[key] = _Skeleton(tuple(humanoid_bones(rig)), floor_height(rig))
        return skeleton

    def _body(self, frame: MotionFrame, rig: BodyRig) -> list[OscMessage]:
        return self._bones(frame.joints, frame.root, rig)

    def _bones(
        self, joints: npt.NDArray[np.float32], translation: npt.ArrayLike, rig: BodyRig
    ) -> list[OscMessage]:
        """Root/Pos and every humanoid bone of `rig` posed by local rotations `joints` (J, 4)."""
        skeleton = self._skeleton(rig)
        root = np.asarray(translation, np.float64)
        # Root/Pos is the avatar's root on the floor under the skeleton's origin: the horizontal
        # translation, identity rotation (the body's orientation is the Hips rotation, as in SMPL,
        # where the pelvis rotation is the global orientation).
        on_floor = to_unity_position((root[0], 0.0, root[2]))
        out = [message("/VMC/Ext/Root/Pos", "root", *map(float, on_floor), 0.0, 0.0, 0.0, 1.0)]
        # The root-level bone (Hips) sits that far above the avatar root: its rest height over the
        # floor (the rig's hip height) plus the frame's vertical translation.
        lift = np.array((0.0, root[1] - skeleton.floor, 0.0))
        for bone in skeleton.bones:
            position, rotation = local_pose(bone, joints, rig.rest_offsets)
            out.append(bone_message(bone.name, position + lift if bone.from_root else position, rotation))
        return out

    def _head(self, frame: FaceFrame) -> list[OscMessage]:
        neck, head = split_head(frame.head, self.options.neck)
        head_bones = [bone_message("Neck", NECK_OFFSET, neck), bone_message("Head", HEAD_OFFSET, head)]
        return head_bones + self._eyes(frame)

    def _eyes(self, frame: FaceFrame) -> list[OscMessage]:
        out = []
        if self.options.eyes and frame.gaze.size == 4:  # face tracking: eye bones from the gaze
            for name, offset, (yaw, pitch) in zip(
                EYE_BONE_NAMES, EYE_OFFSETS, (frame.gaze[:2], frame.gaze[2:]), strict=True
            ):
                out.append(bone_message(name, offset, eye_rotation(float(yaw), float(pitch))))
        return out

    def _blendshapes(self, frame: FaceFrame, session: str, rig: FaceRig) -> list[OscMessage]:
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
        if self.options.presets:
            presets = {p: weights[a] for p, a in VRM0_PRESETS if a in weights}
            if frame.vowels.size == len(SPEECH_VOWEL_PRESETS):  # speech: the real A I U E O, not derived
                presets.update(zip(SPEECH_VOWEL_PRESETS, frame.vowels.tolist(), strict=True))
            out += [message("/VMC/Ext/Blend/Val", p, w) for p, w in presets.items()]
        out.append(message("/VMC/Ext/Blend/Apply"))
        return out


def eye_rotation(yaw: float, pitch: float) -> npt.NDArray[np.float64]:
    """Wire quaternion of an eye looking `yaw` to the subject's left (about +Y), then `pitch` up (about
    -X), relative to the eye's rest orientation (looking forward)."""
    turn = axis_angle_to_quat([0.0, float(yaw), 0.0])
    lift = axis_angle_to_quat([-float(pitch), 0.0, 0.0])
    q: npt.NDArray[np.float64] = np.asarray(quat_multiply(turn, lift), np.float64)
    return q
