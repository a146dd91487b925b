"""Body tracking (issue 42): the converted networks against the .tflite, the pipeline against MediaPipe's
own Holistic graph on real photos and clips made from them, the solver, and `serve --video --body` over
VMC into an independent receiver.

Real images that ship in packages: scikit-image's astronaut (a person with arms), matplotlib's
Grace Hopper portrait, scikit-image's cameraman; clips are warps of them. The oracle is MediaPipe
0.10.21's Holistic (tests/oracles/holistic.py), installed by scripts/install.sh --dev apart from the
venv's packages (it needs numpy < 2) and run in a subprocess.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from bridge.clients.harness.process import BridgeProcess
from bridge.models.mediapipe import body_locate
from bridge.models.mediapipe.body_convert import NETWORKS, ensure_converted
from bridge.pipelines.body_tracking import BodyTracker
from bridge.rig import humanoid_solve as hs
from bridge.rig.rotations import quat_to_matrix
from training import body_quality as q

from .oracles.vmc_receiver import VmcReceiver
from .test_outputs_helpers import udp_listener, wait_for
from .test_sources import _llf_packet

skimage_data = pytest.importorskip("skimage.data")


@pytest.fixture(scope="module")
def files() -> dict[str, Path]:
    try:
        return body_locate.locate()
    except body_locate.BodyModelError as exc:
        pytest.skip(f"body models not installed (avatar-bridge models install body): {exc}")


@pytest.fixture(scope="module")
def tracker(files: dict[str, Path]) -> BodyTracker:
    return BodyTracker(ensure_converted(files))


def oracle(images: list[np.ndarray], tmp: Path, mode: str = "still") -> dict[str, np.ndarray]:
    try:
        return q.oracle(images, tmp, mode)
    except q.OracleMissing as exc:
        pytest.skip(str(exc))


ours = q.track


def test_converted_networks_match_tflite_on_real_crops(files: dict[str, Path], tracker: BodyTracker) -> None:
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    image = skimage_data.astronaut()
    engines = {
        "pose_detector": tracker.detector,
        "pose_landmarks": tracker.pose,
        "hand_recrop": tracker.recrop,
        "hand_landmarks": tracker.hand,
    }
    for net in NETWORKS:
        size = net.input_shape[1]
        crop = (
            cv2.resize(image, (size, size))
            if net.name != "hand_landmarks"
            else cv2.resize(image[300:512, 0:212], (size, size))
        )
        interpreter = litert.Interpreter(model_path=str(files[net.member]))
        interpreter.allocate_tensors()
        x = crop[None].astype(np.float32) / 255.0 * net.inputs[0].scale + net.inputs[0].offset
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
        details = interpreter.get_output_details()
        out, _ = engines[net.name].run({net.input_role: crop[None]})
        for spec, role in zip(net.outputs, net.output_roles, strict=True):
            want = interpreter.get_tensor(details[spec.tflite_index]["index"]).ravel()
            got = out[role].ravel()
            assert np.abs(got - want).max() <= 1e-3 * max(1.0, float(np.abs(want).max())), (net.name, role)


def test_landmarks_and_joint_angles_match_mediapipe_holistic(tracker: BodyTracker, tmp_path: Path) -> None:
    """Same input, same networks, each frame from a detection (MediaPipe's still-image mode), on the
    photos and a clip warped from one: every landmark MediaPipe's own graph sees within 2 % of torso
    size of its, and joint angles within 5 degrees."""
    images = [*q.photos(), *q.warped_clip(skimage_data.astronaut())]
    ref = oracle(images, tmp_path)
    rows = ours(tracker, images, tracking=False)
    seen = ~np.isnan(ref["pose"][:, 0, 0])
    assert (rows.found == seen).all() and seen.all()
    err = q.landmark_error(rows.landmarks, ref["pose"], ref["pose"][:, :, 3])
    assert float(err.max()) < 0.02, (float(np.median(err)), float(np.percentile(err, 90)), float(err.max()))
    a, b = q.joint_angles(rows.world), q.joint_angles(ref["world"])
    for joint in a:
        assert float(np.abs(a[joint] - b[joint]).max()) < 5.0, joint
    assert (rows.hand_found == ~np.isnan(ref["hands"][:, :, 0, 0])).all()


def test_hands_match_mediapipe_holistic_on_photos_with_hands(tracker: BodyTracker, tmp_path: Path) -> None:
    """OpenCV's sample photos of people with their hands in view (Debian's opencv-doc) and their mirror
    images: the same hands found as MediaPipe's own graph, every hand landmark within 2 % of the torso
    and 5 % of the hand's size of its, and finger curl (image x, y and the hand's depth, MediaPipe's
    z / 0.4) within 5 degrees."""
    try:
        images = [im for photo in q.hand_photos() for im in (photo, np.ascontiguousarray(photo[:, ::-1]))]
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    scored = 0
    for image in images:
        ref = oracle([image], tmp_path)
        rows = ours(tracker, [image], tracking=False)
        theirs = ~np.isnan(ref["hands"][0, :, 0, 0])
        assert (rows.hand_found[0] == theirs).all()
        for side in np.flatnonzero(theirs).tolist():
            mine, want = rows.hands[:, side], ref["hands"][:, side]
            d = np.linalg.norm(mine[..., :2] - want[..., :2], axis=-1)
            assert float(d.max() / q.torso_size(ref["pose"])[0]) < 0.02
            assert float(q.hand_error(mine, want).max()) < 0.05
            assert float(np.abs(q.finger_curl(mine) - q.finger_curl(want)).max()) < 5.0
            scored += 1
    assert scored >= 8


def test_tracking_stays_within_mediapipes_own_wander(tracker: BodyTracker, tmp_path: Path) -> None:
    """Tracked from the last landmarks (MediaPipe's video mode, smoothing off) on a still half-body photo,
    MediaPipe's own landmarks wander 1-3 % of the torso from frame to frame (the body region reaches far
    below the frame); ours stay as close to its as it stays to itself."""
    images = [skimage_data.astronaut()] * 6
    ref = oracle(images, tmp_path, "video")
    rows = ours(tracker, images, tracking=True)
    err = q.landmark_error(rows.landmarks, ref["pose"], ref["pose"][:, :, 3])
    own = q.landmark_error(
        ref["pose"][1:], np.repeat(ref["pose"][:1], 5, 0), np.repeat(ref["pose"][:1, :, 3], 5, 0)
    )
    assert float(np.median(err)) <= max(0.02, 1.5 * float(np.median(own)))


def test_solver_aims_every_bone_at_its_landmarks_for_any_proportions(tracker: BodyTracker) -> None:
    rows = ours(tracker, [skimage_data.astronaut()], tracking=False)
    obs = hs.BodyObservation(rows.world[0], rows.visibility[0], (False, False), rows.hand_world[0])
    rotations = hs.solve(obs)
    wire = rows.world[0] * (1.0, -1.0, -1.0)
    for scale in (1.0, 0.6):  # a smaller avatar: the same rotations reach the same directions
        g: list[np.ndarray] = []
        for j, parent in enumerate(hs.PARENTS):
            local = quat_to_matrix(rotations[j])
            g.append(local if parent < 0 else g[parent] @ local)
        for bone, child, a, b in ARM_BONES:
            d = g[hs.INDEX[bone]] @ (hs.REST_OFFSETS[hs.INDEX[child]] * scale)
            o = wire[b] - wire[a]
            assert (
                np.degrees(
                    np.arccos(np.clip(np.dot(d, o) / np.linalg.norm(d) / np.linalg.norm(o), -1.0, 1.0))
                )
                < 0.5
            )


ARM_BONES = (
    ("LeftUpperArm", "LeftLowerArm", 11, 13),
    ("LeftLowerArm", "LeftHand", 13, 15),
    ("RightUpperArm", "RightLowerArm", 12, 14),
    ("RightLowerArm", "RightHand", 14, 16),
)


@pytest.fixture
def receiver() -> Iterator[VmcReceiver]:
    r = VmcReceiver()
    yield r
    r.close()


def test_serve_video_with_body_moves_the_arms_over_vmc(
    files: dict[str, Path], tmp_path: Path, receiver: VmcReceiver
) -> None:
    """`serve --video clip --body --osc vmc://... --livelink-face ...`: an independent receiver sees the arm
    bones turn as the clip switches between the astronaut and her mirror image (the arms in other
    places), and Live Link Face keeps getting the face."""
    astronaut = skimage_data.astronaut()
    clip = tmp_path / "arms.avi"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter.fourcc(*"MJPG"), 15.0, (512, 512))
    for i in range(30):
        frame = astronaut if (i // 5) % 2 == 0 else np.ascontiguousarray(astronaut[:, ::-1])
        writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    writer.release()
    llf = udp_listener(60)
    outputs = [
        "--osc",
        f"vmc://127.0.0.1:{receiver.port}",
        "--livelink-face",
        f"127.0.0.1:{llf.getsockname()[1]}",
    ]
    bridge = BridgeProcess("--video", str(clip), "--loop", "--body", *outputs).start()
    try:
        wait_for(lambda: len(receiver.poses) >= 25 and "LeftLowerArm" in receiver.bones_seen, timeout_s=60)
        subject, values = _llf_packet(llf.recv(2048))
    finally:
        bridge.stop()
        llf.close()
    assert subject and len(values) == 61 and all(np.isfinite(values))
    assert {
        "LeftUpperArm",
        "RightLowerArm",
        "LeftHand",
        "Hips",
        "Neck",
        "Head",
    } <= receiver.bones_seen
    assert max(receiver.datagram_sizes) <= 1500
    turns = [p.rotations["LeftLowerArm"].as_rotvec() for p in receiver.poses[-20:]]
    spread = max(np.degrees(np.linalg.norm(a - b)) for a in turns for b in turns)
    assert spread > 10.0


def test_vmc_sends_every_humanoid_bone_fingers_included_within_the_datagram_limit(
    tracker: BodyTracker,
) -> None:
    """The receiver above knows no finger bones; the sender's messages for a body frame name them all, in
    bundles under the 1500-byte limit (split where needed)."""
    from bridge.clients.outputs.session import SessionInfo
    from bridge.clients.outputs.vmc import VmcOutput, pack_datagrams
    from bridge.protocol import FaceFrame, decode_frame
    from bridge.protocol.events import FaceRig
    from bridge.protocol.frames import encode_face_frame

    rows = ours(tracker, [skimage_data.astronaut()], tracking=False)
    obs = hs.BodyObservation(rows.world[0], rows.visibility[0], (False, False), rows.hand_world[0])
    body = hs.solve(obs).astype(np.float32)
    payload = encode_face_frame(
        "s", 0, 0, 0, face_found=True, expression=np.zeros(0, np.float32), eyelids=np.zeros(2, np.float32),
        jaw=np.array([0, 0, 0, 1], np.float32), head=np.array([0, 0, 0, 1], np.float32), blendshapes=None,
        engine_us=0.0, batch=1, body=body, body_found=True, hands_found=(False, False),
    )  # fmt: skip
    frame = decode_frame(payload)
    assert isinstance(frame, FaceFrame)
    assert frame.body.shape == (hs.N_JOINTS, 4) and frame.body_found is True
    rig = FaceRig(expression=(), eyelids=(), blendshapes=(), body=hs.body_rig())
    output = VmcOutput("127.0.0.1", 9)
    try:
        messages = output.messages(frame, SessionInfo("s", "face", rig))
    finally:
        output.close()
    bones = {m.params[0] for m in messages if m.address == "/VMC/Ext/Bone/Pos"}
    assert set(hs.NAMES) <= bones
    datagrams = pack_datagrams(messages, bundle=True)
    assert len(datagrams) > 1 and max(len(d) for d in datagrams) <= 1500


def _t_pose_hand(curl_index_deg: float) -> np.ndarray:
    """A left hand at T-pose in wire axes (fingers along +X, thumb forward +Z, palm down), the index's
    middle and last segments curled towards the palm by `curl_index_deg` at the middle knuckle; returned
    in MediaPipe's world axes (x, -y, -z of the wire's)."""
    fingers = {
        5: (0.025, (0.09, 0.13, 0.155, 0.175)),
        9: (0.003, (0.095, 0.14, 0.168, 0.19)),
        13: (-0.017, (0.09, 0.132, 0.158, 0.178)),
        17: (-0.035, (0.08, 0.112, 0.132, 0.15)),
    }
    hand = np.zeros((21, 3))
    hand[1:5] = [(0.02, 0, 0.02), (0.04, 0, 0.04), (0.065, 0, 0.065), (0.085, 0, 0.085)]
    for base, (z, xs) in fingers.items():
        hand[base : base + 4] = [(x, 0.0, z) for x in xs]
    a = np.radians(curl_index_deg)
    pip = hand[6].copy()
    for k in (7, 8):  # turn about the knuckle line (+Z) so the tip goes down (-Y), to the palm side
        d = hand[k] - pip
        hand[k] = pip + np.array([d[0] * np.cos(a), -d[0] * np.sin(a), d[2]])
    return hand * (1.0, -1.0, -1.0)


def test_finger_joints_follow_a_curl_and_rest_flat() -> None:
    """Fingers solved from a hand's landmarks: a flat T-pose hand leaves the index at rest, a 60 degree
    curl at its middle knuckle turns IndexIntermediate by 60 degrees about the knuckle line."""
    wire = np.zeros((33, 3))  # arms straight out, shoulders 0.45 m above the hips
    for left, right, x, y in (
        (11, 12, 0.18, 0.45),
        (13, 14, 0.44, 0.45),
        (15, 16, 0.70, 0.45),
        (23, 24, 0.1, 0),
    ):
        wire[left], wire[right] = (x, y, 0.0), (-x, y, 0.0)
    world = wire * (1.0, -1.0, -1.0)
    for curl in (0.0, 60.0):
        hands = np.stack([_t_pose_hand(curl), _t_pose_hand(0.0) * (-1.0, 1.0, 1.0)])
        q = hs.solve(hs.BodyObservation(world, np.ones(33), (True, True), hands))
        intermediate = q[hs.INDEX["LeftIndexIntermediate"]]
        angle = np.degrees(2 * np.arccos(min(1.0, abs(intermediate[3]))))
        assert angle == pytest.approx(curl, abs=1.0)
        if curl:
            axis = intermediate[:3] / np.linalg.norm(intermediate[:3])
            assert abs(axis[2]) > 0.97  # about the knuckle line
        assert np.degrees(2 * np.arccos(min(1.0, abs(q[hs.INDEX["LeftIndexProximal"], 3])))) < 3.0
        assert np.degrees(2 * np.arccos(min(1.0, abs(q[hs.INDEX["LeftHand"], 3])))) < 3.0


def test_one_call_per_network_serves_a_batch_of_sessions_as_each_alone(tracker: BodyTracker) -> None:
    """Three sessions in one `run` (one pose, one re-crop and one hand-landmark call for all of them) give
    what each gives alone."""
    images = q.photos()
    states = [tracker.open() for _ in images]
    together = tracker.run(
        states, [tracker.prepare(s, im, 0.0) for s, im in zip(states, images, strict=True)]
    )
    for k, image in enumerate(images):
        alone = ours(tracker, [image], tracking=False)
        assert together.found[k] == alone.found[0]
        assert np.abs(together.landmarks[k] - alone.landmarks[0]).max() < 0.05
        assert (together.hand_found[k] == alone.hand_found[0]).all()
