"""VMC protocol sender: real frames over a real PUB socket, received by a python-osc server over UDP."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from bridge.clients.outputs.router import OutputRouter
from bridge.clients.outputs.vmc import MAX_DATAGRAM, VmcOutput
from bridge.motion.foot_plant import FLOOR_Y
from bridge.rig import arkit, smpl

from .test_outputs_helpers import (
    FACE_SESSION,
    SESSION,
    OscCapture,
    Publisher,
    face_frame,
    face_rig,
    identity_joints,
    motion_frame,
    motion_rig,
    opened_event,
    osc_elements,
    wait_for,
)

HUMANOID = [name for name in smpl.UNITY_BONE_NAMES if name]
S45 = float(np.sqrt(0.5))


@pytest.fixture
def osc() -> Iterator[OscCapture]:
    capture = OscCapture()
    yield capture
    capture.close()


MOTION_MESSAGES = 3 + len(HUMANOID)  # OK, T, Root/Pos, bones
FACE_MESSAGES = 2 + 2 + 52 + 5 + 1  # OK, T, Neck and Head, ARKit values, VRM presets, Apply


def run_frames(
    osc: OscCapture, messages: list[tuple[str, bytes]], expect: int, *, bundle: bool = True
) -> None:
    """Publish `messages` to a router feeding one VmcOutput; return once `expect` OSC messages arrived."""
    publisher = Publisher()
    router = OutputRouter([VmcOutput("127.0.0.1", osc.port, bundle=bundle)], publisher.endpoint)
    try:
        router.start()
        publisher.wait_subscribed()
        for topic, payload in messages:
            publisher.send(topic, payload)
        wait_for(lambda: len(osc.messages) >= expect)
        time.sleep(0.05)  # nothing more should come
        assert len(osc.messages) == expect
    finally:
        router.stop()
        publisher.close()


def by_address(osc: OscCapture, address: str) -> list[list[object]]:
    return [args for a, args in osc.messages if a == address]


def test_motion_frame_sends_every_humanoid_bone_in_unity_space(osc: OscCapture) -> None:
    joints = identity_joints()
    elbow = smpl.JOINT_NAMES.index("left_elbow")
    joints[elbow] = [0.0, S45, 0.0, S45]  # 90 degrees about wire +Y (up)
    root = np.array([0.1, 0.9, 0.2], np.float32)
    run_frames(
        osc,
        [
            (f"event/{SESSION}", opened_event(SESSION, "motion", motion_rig())),
            (f"frame/{SESSION}", motion_frame(0, joints, root)),
        ],
        MOTION_MESSAGES,
    )
    addresses = [a for a, _ in osc.messages]
    assert addresses[:3] == ["/VMC/Ext/OK", "/VMC/Ext/T", "/VMC/Ext/Root/Pos"]
    assert addresses[3:] == ["/VMC/Ext/Bone/Pos"] * len(HUMANOID)

    (ok,) = by_address(osc, "/VMC/Ext/OK")
    assert ok == [1, 3, 0, 1] and all(type(v) is int for v in ok)
    (t,) = by_address(osc, "/VMC/Ext/T")
    assert type(t[0]) is float and 0.0 <= t[0] < 10.0

    (root_args,) = by_address(osc, "/VMC/Ext/Root/Pos")
    assert root_args[0] == "root"
    # The avatar's root on the floor under the skeleton: the horizontal translation (x flips),
    # identity rotation; the height goes to Hips, above the root.
    assert np.allclose(np.array(root_args[1:], dtype=float), [-0.1, 0, 0.2, 0, 0, 0, 1], atol=1e-6)

    bones = {
        str(args[0]): np.array(args[1:], dtype=np.float64) for args in by_address(osc, "/VMC/Ext/Bone/Pos")
    }
    assert sorted(bones) == sorted(HUMANOID)
    # 90 degrees about up on the wire turns the forearm towards the avatar's left; in Unity's
    # left-handed frame that is -90 degrees about +Y: (x, -y, -z, w).
    assert np.allclose(bones["LeftLowerArm"][3:], [0, -S45, 0, S45], atol=1e-6)
    assert np.allclose(bones["LeftLowerArm"][:3], smpl.REST_OFFSETS[elbow] * [-1, 1, 1], atol=1e-6)
    # Hips stand at the rig's hip height above the floor (the rest pose's lowest foot point, the
    # floor the planted feet stand on) plus the frame's vertical translation. It used to be the bare
    # rest offset (y = -0.22), which put a receiver's feet 1.2 m under its floor.
    hip_height = smpl.REST_OFFSETS[0][1] - FLOOR_Y
    assert np.allclose(
        bones["Hips"][:3], smpl.REST_OFFSETS[0] * [-1, 0, 1] + [0, hip_height + 0.9, 0], atol=1e-6
    )
    for name in HUMANOID:
        if name != "LeftLowerArm":
            assert np.allclose(bones[name][3:], [0, 0, 0, 1], atol=1e-7)

    tags = {a: t for dgram in osc.datagrams for a, t in osc_elements(dgram)}
    assert tags == {
        "/VMC/Ext/OK": ",iiii",
        "/VMC/Ext/T": ",f",
        "/VMC/Ext/Root/Pos": ",sfffffff",
        "/VMC/Ext/Bone/Pos": ",sfffffff",
    }
    assert all(d.startswith(b"#bundle\0") and len(d) <= MAX_DATAGRAM for d in osc.datagrams)
    assert len(osc.datagrams) >= 2  # 22 bones do not fit one safe datagram


def test_any_rotation_converts_as_the_same_physical_rotation(osc: OscCapture) -> None:
    joints = Rotation.random(24, random_state=7).as_quat().astype(np.float32)
    run_frames(
        osc,
        [
            (f"event/{SESSION}", opened_event(SESSION, "motion", motion_rig())),
            (f"frame/{SESSION}", motion_frame(0, joints)),
        ],
        MOTION_MESSAGES,
    )
    bones = {
        str(args[0]): np.array(args[1:], dtype=np.float64) for args in by_address(osc, "/VMC/Ext/Bone/Pos")
    }
    flip = np.array([-1.0, 1.0, 1.0])  # wire -> Unity position (protocol section 3)
    for j, name in enumerate(smpl.UNITY_BONE_NAMES):
        if not name:
            continue
        unity = Rotation.from_quat(bones[name][3:])
        for v in np.eye(3):
            # rotating then converting == converting then rotating with the converted quaternion
            expected = Rotation.from_quat(joints[j]).apply(v) * flip
            assert np.allclose(unity.apply(v * flip), expected, atol=1e-5)


def test_face_frame_sends_arkit_and_vrm_blendshapes_then_apply_without_bundles(osc: OscCapture) -> None:
    weights = np.arange(1, 53, dtype=np.float32) / 100.0
    run_frames(
        osc,
        [
            (f"event/{FACE_SESSION}", opened_event(FACE_SESSION, "face", face_rig())),
            (f"frame/{FACE_SESSION}", face_frame(0, weights)),
        ],
        FACE_MESSAGES,
        bundle=False,
    )
    addresses = [a for a, _ in osc.messages]
    assert addresses[:4] == ["/VMC/Ext/OK", "/VMC/Ext/T", "/VMC/Ext/Bone/Pos", "/VMC/Ext/Bone/Pos"]
    assert [args[0] for args in by_address(osc, "/VMC/Ext/Bone/Pos")] == ["Neck", "Head"]
    assert addresses[-1] == "/VMC/Ext/Blend/Apply"
    values = by_address(osc, "/VMC/Ext/Blend/Val")
    names = [v[0] for v in values]
    assert names[:52] == list(arkit.ARKIT_NAMES)  # PascalCase, as Unity's ARKitBlendShapeLocation
    assert names[52:] == ["Blink_L", "Blink_R", "A", "U", "O"]
    got = {v[0]: v[1] for v in values}
    assert all(type(v[1]) is float for v in values)
    for i, name in enumerate(arkit.ARKIT_NAMES):
        assert got[name] == pytest.approx(weights[i], abs=1e-6)
    for preset, source in [("Blink_L", "EyeBlinkLeft"), ("Blink_R", "EyeBlinkRight"), ("A", "JawOpen")]:
        assert got[preset] == got[source]
    assert by_address(osc, "/VMC/Ext/Blend/Apply") == [[]]
    assert not any(d.startswith(b"#bundle") for d in osc.datagrams)
    assert len(osc.datagrams) == len(osc.messages)
    tags = {a: t for dgram in osc.datagrams for a, t in osc_elements(dgram)}
    assert tags["/VMC/Ext/Blend/Val"] == ",sf" and tags["/VMC/Ext/Blend/Apply"] == ","


def test_face_bundles_stay_small_and_apply_comes_last(osc: OscCapture) -> None:
    weights = np.full(52, 0.5, np.float32)
    run_frames(
        osc,
        [
            (f"event/{FACE_SESSION}", opened_event(FACE_SESSION, "face", face_rig())),
            (f"frame/{FACE_SESSION}", face_frame(0, weights)),
        ],
        FACE_MESSAGES,
    )
    assert len(osc.datagrams) >= 3 and all(len(d) <= MAX_DATAGRAM for d in osc.datagrams)
    flat = [a for d in osc.datagrams for a, _ in osc_elements(d)]
    assert flat == [a for a, _ in osc.messages]  # bundles keep message order
    assert flat[-1] == "/VMC/Ext/Blend/Apply" and flat.count("/VMC/Ext/Blend/Val") == 57
