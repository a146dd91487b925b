"""An independent VMC Marionette for tests: applies what it receives to a humanoid as EVMC4U does.

Written from the VMC protocol spec (protocol.vmc.info, marionette-spec) and the receiving side of
EVMC4U's ExternalReceiver, never from the bridge's sender (bridge/clients/outputs/vmc.py):

- /VMC/Ext/Root/Pos (name, p.xyz, q.xyzw[, scale, offset]): the model root's pose, applied as the
  root's local position and rotation (RootPositionSynchronize and RootRotationSynchronize, both on
  by default; the MR scale/offset is off by default and ignored here).
- /VMC/Ext/Bone/Pos (HumanBodyBones name, p.xyz, q.xyzw): the bone's *local* pose. The values are
  cached per bone and, once a frame, written into the bone's Transform: localRotation always, and
  localPosition too while BonePositionSynchronize is on (its default). Unknown names are ignored.
- /VMC/Ext/Blend/Val (name, value) is cached; /VMC/Ext/Blend/Apply applies the cache.
  VMC4UE (Unreal) does the same with no option: each bone's received location and rotation, composed
  with its parent's, and Root/Pos at the skeleton's root.
- Values are Unity's: left-handed, Y up, metres, the avatar facing +Z (its right is +X),
  quaternions (x, y, z, w).
- Packets are OSC bundles (or single messages) "within 1500 bytes"; each datagram's size is kept.

The humanoid is its own: a VRM-typical T-posed avatar (identity rest rotations, as VRM's
"Enforce T-Pose" exports), about 1.6 m tall, standing on the floor y = 0, with rest offsets rounded
from a VRoid-like model. Bones the sender does not send keep their rest pose, as in Unity.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pythonosc.dispatcher import Dispatcher
from pythonosc.osc_server import BlockingOSCUDPServer
from scipy.spatial.transform import Rotation

# HumanBodyBones name -> (parent, rest localPosition in Unity axes, metres). Parents precede children.
REST: dict[str, tuple[str | None, tuple[float, float, float]]] = {
    "Hips": (None, (0.0, 0.90, 0.0)),
    "Spine": ("Hips", (0.0, 0.07, 0.0)),
    "Chest": ("Spine", (0.0, 0.10, -0.01)),
    "UpperChest": ("Chest", (0.0, 0.11, -0.01)),
    "Neck": ("UpperChest", (0.0, 0.12, 0.0)),
    "Head": ("Neck", (0.0, 0.08, 0.01)),
    "LeftEye": ("Head", (-0.03, 0.06, 0.05)),
    "RightEye": ("Head", (0.03, 0.06, 0.05)),
    "LeftShoulder": ("UpperChest", (-0.03, 0.09, 0.0)),
    "LeftUpperArm": ("LeftShoulder", (-0.08, 0.0, 0.0)),
    "LeftLowerArm": ("LeftUpperArm", (-0.23, 0.0, 0.0)),
    "LeftHand": ("LeftLowerArm", (-0.22, 0.0, 0.0)),
    "RightShoulder": ("UpperChest", (0.03, 0.09, 0.0)),
    "RightUpperArm": ("RightShoulder", (0.08, 0.0, 0.0)),
    "RightLowerArm": ("RightUpperArm", (0.23, 0.0, 0.0)),
    "RightHand": ("RightLowerArm", (0.22, 0.0, 0.0)),
    "LeftUpperLeg": ("Hips", (-0.08, -0.06, 0.0)),
    "LeftLowerLeg": ("LeftUpperLeg", (0.0, -0.38, 0.0)),
    "LeftFoot": ("LeftLowerLeg", (0.0, -0.38, 0.0)),
    "LeftToes": ("LeftFoot", (0.0, -0.06, 0.10)),
    "RightUpperLeg": ("Hips", (0.08, -0.06, 0.0)),
    "RightLowerLeg": ("RightUpperLeg", (0.0, -0.38, 0.0)),
    "RightFoot": ("RightLowerLeg", (0.0, -0.38, 0.0)),
    "RightToes": ("RightFoot", (0.0, -0.06, 0.10)),
}
FEET = ("LeftFoot", "LeftToes", "RightFoot", "RightToes")
IDENTITY = Rotation.identity()


@dataclass
class Pose:
    """World pose of every bone after forward kinematics: position (3,) and Rotation."""

    positions: dict[str, np.ndarray]
    rotations: dict[str, Rotation]

    def lowest_foot(self) -> float:
        return min(float(self.positions[b][1]) for b in FEET)


@dataclass
class Avatar:
    apply_positions: bool = True  # EVMC4U's BonePositionSynchronize (on by default)
    root_position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    root_rotation: Rotation = IDENTITY
    local_positions: dict[str, np.ndarray] = field(
        default_factory=lambda: {name: np.array(p, float) for name, (_, p) in REST.items()}
    )
    local_rotations: dict[str, Rotation] = field(default_factory=lambda: dict.fromkeys(REST, IDENTITY))

    def forward_kinematics(self) -> Pose:
        positions: dict[str, np.ndarray] = {}
        rotations: dict[str, Rotation] = {}
        for name, (parent, _) in REST.items():
            if parent is None:
                at, turn = self.root_position, self.root_rotation
            else:
                at, turn = positions[parent], rotations[parent]
            positions[name] = at + turn.apply(self.local_positions[name])
            rotations[name] = turn * self.local_rotations[name]
        return Pose(positions, rotations)


class VmcReceiver:
    """A UDP OSC server on 127.0.0.1 that keeps an Avatar up to date and a pose per received frame.

    A frame is what arrives between two /VMC/Ext/OK messages (senders start each frame with it);
    when the next one arrives, the cached bone values are written into the avatar (EVMC4U applies its
    cache once per Unity frame) and its forward kinematics is kept in `poses`, and what that frame itself
    carried (bone names, blendshape values) in `frames`.
    """

    def __init__(self, apply_positions: bool = True) -> None:
        self.avatar = Avatar(apply_positions=apply_positions)
        self.poses: list[Pose] = []
        self.datagram_sizes: list[int] = []
        self.blendshapes: dict[str, float] = {}
        self.bones_seen: set[str] = set()
        self.frames: list[tuple[frozenset[str], dict[str, float]]] = []
        self._frame_bones: set[str] = set()
        self._frame_blends: dict[str, float] = {}
        self._bones: dict[str, tuple[np.ndarray, Rotation]] = {}
        self._blend_cache: dict[str, float] = {}
        self._frame_open = False
        self._lock = threading.Lock()
        dispatcher = Dispatcher()
        dispatcher.map("/VMC/Ext/OK", self._on_ok)
        dispatcher.map("/VMC/Ext/Root/Pos", self._on_root)
        dispatcher.map("/VMC/Ext/Bone/Pos", self._on_bone)
        dispatcher.map("/VMC/Ext/Blend/Val", self._on_blend)
        dispatcher.map("/VMC/Ext/Blend/Apply", self._on_apply)
        sizes = self.datagram_sizes

        class Server(BlockingOSCUDPServer):
            def verify_request(self, request: Any, client_address: Any) -> bool:
                sizes.append(len(request[0]))
                return bool(super().verify_request(request, client_address))

        self.server = Server(("127.0.0.1", 0), dispatcher)
        self.port = int(self.server.server_address[1])
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def _on_ok(self, address: str, *args: Any) -> None:
        with self._lock:
            self._end_frame()
            self._frame_open = True

    def _on_root(self, address: str, *args: Any) -> None:
        if len(args) < 8 or not isinstance(args[0], str) or not all(isinstance(a, float) for a in args[1:8]):
            return  # the spec: too few or mistyped arguments are ignored
        with self._lock:
            self.avatar.root_position = np.array(args[1:4], float)
            self.avatar.root_rotation = Rotation.from_quat(args[4:8])

    def _on_bone(self, address: str, *args: Any) -> None:
        if len(args) < 8 or not isinstance(args[0], str) or not all(isinstance(a, float) for a in args[1:8]):
            return
        name = args[0]
        if name not in REST:
            return  # a bone this avatar does not have
        with self._lock:
            self.bones_seen.add(name)
            self._frame_bones.add(name)
            self._bones[name] = (np.array(args[1:4], float), Rotation.from_quat(args[4:8]))

    def _on_blend(self, address: str, *args: Any) -> None:
        if len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], float):
            with self._lock:
                self._blend_cache[args[0]] = args[1]
                self._frame_blends[args[0]] = args[1]

    def _on_apply(self, address: str, *args: Any) -> None:
        with self._lock:
            self.blendshapes.update(self._blend_cache)

    def _end_frame(self) -> None:
        if not self._frame_open:
            return
        for name, (position, rotation) in self._bones.items():
            if self.avatar.apply_positions:
                self.avatar.local_positions[name] = position
            self.avatar.local_rotations[name] = rotation
        self.poses.append(self.avatar.forward_kinematics())
        self.frames.append((frozenset(self._frame_bones), self._frame_blends))
        self._frame_bones, self._frame_blends = set(), {}

    def flush(self) -> Pose:
        """Apply what the last frame sent and return the avatar's pose now."""
        with self._lock:
            self._end_frame()
            self._frame_open = False
            return self.avatar.forward_kinematics()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
