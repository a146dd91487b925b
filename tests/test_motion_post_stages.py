"""Motion post-processing stages beyond guard and low-pass: foot planting (manifest
`post_processing: ["foot_plant"]`: the stance foot stays put, the lowest contact is on the floor, rows
are independent, only a model whose manifest asks for it gets it) and the session option `energy`."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from bridge.audio.music_features import MusicFeatureStream
from bridge.backends import load_engine
from bridge.filters.output_guard import GuardStats
from bridge.motion.foot_plant import FLOOR_Y, feet
from bridge.motion.moves import MOVES
from bridge.motion.post import NEUTRAL, MotionPost
from bridge.pipelines.motion import MotionPipeline
from bridge.protocol.codec import ProtocolError
from bridge.protocol.errors import ErrorCode
from bridge.protocol.requests import FeaturesInput
from bridge.rig.smpl import JOINT_LIMIT_ROWS
from bridge.runtime.manifest import ManifestError, load_manifest
from tests.conftest import MODELS
from training.export import export_dance_lstm
from training.songs.synthetic import synthesize_song


def _steps(frames: int, phase: float) -> np.ndarray:
    """Step-touch poses (a leg lifts every other beat) at 120 BPM, root translation zero."""
    b = np.arange(frames) / 30.0 + phase
    pose, _ = MOVES["step_touch"](b, np.full(frames, 1.0))
    return np.concatenate([pose.reshape(frames, 72), np.zeros((frames, 3))], axis=1).astype(np.float32)


def _run(post: MotionPost, slots: np.ndarray, poses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """poses (B, T, 75) through post.step frame by frame → joint quats (B, T, 24, 4), root (B, T, 3)."""
    b, t = poses.shape[:2]
    quats, roots = np.empty((b, t, 24, 4), np.float32), np.empty((b, t, 3), np.float32)
    for i in range(t):
        quats[:, i], roots[:, i], _ = post.step(slots, poses[:, i], np.zeros(b, np.float32))
    return quats, roots


def test_the_stance_foot_stays_put_and_the_lowest_contact_is_on_the_floor() -> None:
    poses = np.stack([_steps(240, 0.0), _steps(240, 0.37)])
    poses[:, :, 72:] = np.random.default_rng(0).standard_normal((2, 240, 3)) * 0.01  # a sliding root
    post = MotionPost(GuardStats(), 1 / 60, foot_plant=True)
    post.prepare(4, np.arange(4))
    slots = np.array([3, 1])
    quats, roots = _run(post, slots, poses)
    for row in range(2):
        toes, contact = feet(quats[row])
        world = toes + roots[row, :, None]
        np.testing.assert_allclose(contact.min(axis=1) + roots[row, :, 1], FLOOR_Y, atol=1e-5)
        gap, lower = np.abs(contact[:, 0] - contact[:, 1]), np.argmin(contact, axis=1)
        # Wherever one foot is clearly the lower for two frames running, that foot does not slide.
        clear = (gap[1:] > 0.02) & (gap[:-1] > 0.02) & (lower[1:] == lower[:-1])
        assert clear.sum() > 50
        moved = np.linalg.norm(np.diff(world[np.arange(240), lower][:, [0, 2]], axis=0), axis=1)
        assert moved[clear].max() < 1e-5, moved[clear].max()
    # Batched rows equal each session alone; a fresh slot starts again at the origin.
    alone = MotionPost(GuardStats(), 1 / 60, foot_plant=True)
    alone.prepare(1, np.arange(1))
    _, root_alone = _run(alone, np.array([0]), poses[1:])
    np.testing.assert_allclose(roots[1], root_alone[0], atol=1e-6)
    post.prepare(4, np.array([3]))
    _, restarted = _run(post, slots, poses[:, :1])
    np.testing.assert_allclose(restarted[0, 0, [0, 2]], 0.0, atol=1e-6)


def test_only_a_manifest_that_asks_for_it_plants_feet(tmp_path: Path) -> None:
    committed = load_manifest(MODELS / "dance_lstm.manifest.json")
    assert committed.post_processing == ("foot_plant",)
    reference = export_dance_lstm(tmp_path)  # the seeded untrained reference asks for nothing
    assert reference.post_processing == ()
    for manifest, backend, planted in (
        (committed, "onnxruntime", True),
        (reference, "onnxruntime", False),
        (committed, "choreographer", False),  # the teacher plants its own feet
    ):
        with load_engine(manifest, backend=backend, warmup=False) as engine:
            post = MotionPipeline(engine).post
            assert isinstance(post, MotionPost) and post.foot_plant is planted
    raw = _steps(4, 0.0)
    raw[:, 72:] = 0.05
    post = MotionPost(GuardStats(), 1 / 60)
    post.prepare(1, np.arange(1))
    _, roots = _run(post, np.array([0]), raw[None])
    np.testing.assert_allclose(roots[0], raw[:, 72:], atol=1e-6)  # without the stage: the model's root


def test_a_manifest_names_known_stages_of_its_task(tmp_path: Path) -> None:
    m = export_dance_lstm(tmp_path)
    data = json.loads(m.path.read_text())
    for stage, task in (("nope", "motion"), ("foot_plant", "face")):
        bad = dict(data, post_processing=[stage], task=task)
        if task == "face":
            bad["inputs"], bad["outputs"], bad["state"], bad["profiles"] = [], [], [], []
        path = tmp_path / f"{stage}.manifest.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(ManifestError, match="post_processing"):
            load_manifest(path)


def test_device_post_leaves_foot_planting_on_the_host(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("torch")
    manifest = MODELS / "dance_lstm.manifest.json"
    with load_engine(manifest, backend="torch", device_post=True) as engine, caplog.at_level(logging.WARNING):
        post = MotionPipeline(engine).post
    assert isinstance(post, MotionPost) and post.foot_plant
    assert "device_post skipped" in caplog.text and "foot_plant" in caplog.text


def test_energy_scales_the_angles_around_the_neutral_stance() -> None:
    from bridge.rig.rotations import quat_to_axis_angle

    raw = _steps(3, 0.25)[None].repeat(2, axis=0)
    posts = [MotionPost(GuardStats(), 1 / 60) for _ in range(2)]
    out = []
    for post, energy in zip(posts, (None, np.array([0.5, 1.5], np.float32)), strict=True):
        post.prepare(2, np.arange(2))
        q, _, _ = post.step(np.arange(2), raw[:, 0], np.zeros(2, np.float32), energy)
        out.append(np.asarray(quat_to_axis_angle(q), np.float64).reshape(2, 72))
        np.testing.assert_array_equal(post.previous(np.arange(2)), raw[:, 0])  # fed back unscaled
    want = NEUTRAL + np.array([[0.5], [1.5]]) * (out[0] - NEUTRAL)
    want = np.clip(want, JOINT_LIMIT_ROWS[:, 0], JOINT_LIMIT_ROWS[:, 1])
    np.testing.assert_allclose(out[1], want, atol=1e-5)
    assert np.abs(out[1][0] - NEUTRAL).sum() < np.abs(out[0][0] - NEUTRAL).sum()


def test_energy_is_a_validated_session_option(tmp_path: Path) -> None:
    with load_engine(export_dance_lstm(tmp_path), warmup=False) as engine:
        pipeline = MotionPipeline(engine)
        assert pipeline.open_session({"energy": 1.25}).energy == 1.25
        assert pipeline.open_session({}).energy == 1.0
        for value, code in (
            (3.0, ErrorCode.BAD_VALUE),
            (0.1, ErrorCode.BAD_VALUE),
            ("x", ErrorCode.BAD_TYPE),
        ):
            with pytest.raises(ProtocolError) as err:
                pipeline.open_session({"energy": value})
            assert err.value.code == code


def test_device_post_scales_energy_as_the_host_post() -> None:
    torch = pytest.importorskip("torch")
    from bridge.motion.post_torch import DeviceMotionPost

    raw = np.stack([_steps(5, 0.1), _steps(5, 0.6)])
    energy = np.array([0.6, 1.4], np.float32)
    host, device = (
        MotionPost(GuardStats(), 1 / 60),
        DeviceMotionPost(GuardStats(), 1 / 60, torch.device("cpu")),
    )
    for post in (host, device):
        post.prepare(2, np.arange(2))
    for t in range(5):
        alpha = np.full(2, 0.3, np.float32)
        want, _, _ = host.step(np.arange(2), raw[:, t], alpha, energy)
        got, _, _ = device.step(np.arange(2), raw[:, t], alpha, energy)
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_offline_chunks_of_a_model_on_its_previous_pose_equal_realtime() -> None:
    song = synthesize_song(4.0, 128.0, seed=9301)
    rows = MusicFeatureStream(song.sample_rate, 60.0).push(song.pcm)[:150]
    with load_engine(MODELS / "dance_lstm.manifest.json", warmup=False) as engine:
        assert engine.manifest.steps_on_previous_pose
        pipeline = MotionPipeline(engine)
        poses = []
        for mode in ("offline", "realtime"):
            state = pipeline.open_session({"mode": mode, "smoothing": 0.0})
            steps = pipeline.prepare(state, FeaturesInput(0, "s", 1, 0, False, rows))
            assert len(steps) == (2 if mode == "offline" else 150)
            slot = np.array([state.slot.index])
            out = []
            for step in steps:
                raw = pipeline.run_batch([state], [step]).rows
                out += [
                    pipeline.post.step(slot, raw[:, t], np.zeros(1, np.float32))[1]
                    for t in range(raw.shape[1])
                ]
            poses.append(np.concatenate(out))
    np.testing.assert_allclose(poses[0], poses[1], atol=1e-5)
