"""Batching never mixes up sessions: batched pipeline steps equal each session run alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import pytest

from bridge.backends import load_engine
from bridge.filters.low_pass import smoothing_factor, time_constant
from bridge.filters.output_guard import GuardStats
from bridge.motion.post import BatchPost, MotionPost
from bridge.pipelines.base import BatchResult, Step
from bridge.pipelines.face_flame import FacePipeline, FaceState
from bridge.pipelines.motion import OFFLINE_MAX_STEPS, MotionPipeline, MotionState, smoothing_cutoff_hz
from bridge.protocol.frames import FaceFrame, MotionFrame, decode_frame
from bridge.protocol.motion_frames import encode_motion_frames
from bridge.protocol.requests import FeaturesInput
from bridge.rig import flame
from bridge.rig.rotations import axis_angle_to_quat
from tests.conftest import MODELS
from tests.oracles.frames import encode_motion_frame
from tests.oracles.low_pass import QuatLowPass, VectorLowPass
from tests.oracles.motion_guard import MotionOutputGuard

SIDS = [f"{i:016x}" for i in range(64)]


@pytest.fixture(scope="module", params=["onnxruntime", "torch", "torch device_post"])
def motion(request: pytest.FixtureRequest) -> Iterator[MotionPipeline]:
    backend, *post = str(request.param).split()
    if backend == "torch":
        pytest.importorskip("torch")
    options = {"device_post": True} if post else {}
    engine = load_engine(MODELS / "dance_lstm.manifest.json", backend=backend, **options)
    yield MotionPipeline(engine)
    engine.close()


def features(sessions: int, steps: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((sessions, steps, 35)).astype(np.float32)


def motion_frame(payload: bytes) -> MotionFrame:
    frame = decode_frame(payload)
    assert isinstance(frame, MotionFrame)
    return frame


def step_all(
    pipeline: MotionPipeline, states: list[MotionState], feats: np.ndarray, t: int, seqs: list[int]
) -> list[MotionFrame]:
    steps = [
        pipeline.prepare(s, FeaturesInput(0, SIDS[i], t, t, False, feats[i, t : t + 1]))[0]
        for i, s in enumerate(states)
    ]
    result = pipeline.run_batch(states, steps)
    frames = pipeline.finish_batch(states, SIDS[: len(states)], seqs, steps, result)
    return [motion_frame(f[0]) for f in frames]


def run_alone(pipeline: MotionPipeline, feats: np.ndarray, options: dict[str, Any]) -> np.ndarray:
    state = pipeline.open_session(dict(options))
    return np.stack(
        [step_all(pipeline, [state], feats[None], t, [t])[0].joints for t in range(feats.shape[0])]
    )


@pytest.mark.parametrize("chunk", [512, 2])
def test_batched_motion_equals_each_session_alone(
    motion: MotionPipeline, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(motion.post, "chunk", chunk)  # 2: post-processing on worker threads
    n, steps = 5, 12
    feats = features(n, steps)
    options: list[dict[str, Any]] = [
        {"style": "pop"},
        {"style": "krump", "smoothing": 0.0},
        {},
        {"smoothing": 0.9},
        {"style": "break"},
    ]
    alone = [run_alone(motion, feats[i], options[i]) for i in range(n)]
    states = [motion.open_session(dict(o)) for o in options]
    batched = [step_all(motion, states, feats, t, [t] * n) for t in range(steps)]
    for i in range(n):
        got = np.stack([batched[t][i].joints for t in range(steps)])
        np.testing.assert_allclose(got, alone[i], atol=2e-5)
        assert [batched[t][i].header.session for t in range(steps)] == [SIDS[i]] * steps
        assert batched[0][i].header.batch == n


def test_offline_mode_chunks_whole_sequences(motion: MotionPipeline) -> None:
    state = motion.open_session({"mode": "offline"})
    rows = features(1, 300)[0]
    item = FeaturesInput(0, SIDS[0], 7, 0, False, rows)
    assert motion.steps_for(state, item) == 300  # the pending bound counts frames in both modes
    steps = motion.prepare(state, item)
    assert sum(motion.step_frames(s) for s in steps) == 300
    assert [len(s.payload) for s in steps] == [
        OFFLINE_MAX_STEPS,
        OFFLINE_MAX_STEPS,
        300 - 2 * OFFLINE_MAX_STEPS,
    ]
    assert len({motion.batch_key(state, s) for s in steps}) == 2
    seq, poses = 0, []
    for step in steps:
        result = motion.run_batch([state], [step])
        frames = motion.finish_batch([state], [SIDS[0]], [seq], [step], result)[0]
        decoded = [motion_frame(f) for f in frames]
        assert [f.header.seq for f in decoded] == list(range(seq, seq + len(step.payload)))
        seq += len(frames)
        poses += [f.joints for f in decoded]
    assert seq == 300 and np.isfinite(np.stack(poses)).all()


@pytest.mark.parametrize("where", ["numpy", "torch"])
def test_batched_post_processing_equals_per_session_filters(where: str) -> None:
    """Batched post (numpy, or torch as the torch backend runs it) == MotionOutputGuard +
    QuatLowPass/VectorLowPass per session."""
    rng = np.random.default_rng(3)
    n, steps, fps = 9, 8, 60.0
    dt = 1.0 / fps
    cutoffs = [smoothing_cutoff_hz(s, fps) if s > 0 else 0.0 for s in rng.choice([0.0, 0.3, 0.5, 0.8], n)]
    alpha = np.array([smoothing_factor(time_constant(c), dt) if c > 0 else 0.0 for c in cutoffs], np.float32)
    stats = GuardStats()
    post: BatchPost = MotionPost(stats, dt)
    if where == "torch":
        torch = pytest.importorskip("torch")
        from bridge.motion.post_torch import DeviceMotionPost

        post = DeviceMotionPost(stats, dt, torch.device("cpu"))
    post.prepare(n, np.arange(n))
    reference = [
        (
            MotionOutputGuard(GuardStats(), lambda: None),
            QuatLowPass(24, c) if c > 0 else None,
            VectorLowPass((3,), c) if c > 0 else None,
        )
        for c in cutoffs
    ]
    for t in range(steps):
        pose = (0.4 * rng.standard_normal((n, 75))).astype(np.float32)
        pose[:, 72:] = 0.01 * t + 0.001 * rng.standard_normal((n, 3))
        pose[t % n, 5] = np.nan  # a bad output: held
        pose[(t + 3) % n, 10] = 9.0  # grossly out of range: held
        # Alternate a shuffled batch (index path) with the slot order (view path).
        slots = rng.permutation(n) if t % 2 else np.arange(n)
        joints, root, held = post.step(slots, pose[slots], alpha[slots])
        for row, slot in enumerate(slots):
            guard, qf, rf = reference[slot]
            good = guard.apply(pose[slot], dt)
            want_j = axis_angle_to_quat(good[:72].reshape(24, 3))
            want_r = good[72:]
            if qf is not None and rf is not None:
                want_j, want_r = qf.filter(want_j, dt), rf.filter(want_r, dt)
            np.testing.assert_allclose(joints[row], want_j, atol=1e-5)
            np.testing.assert_allclose(root[row], want_r, atol=1e-6)
            assert held[row] == (guard.consecutive_bad > 0)
        np.testing.assert_allclose(
            post.previous(np.arange(n)), [g._last_good for g, _, _ in reference], atol=1e-6
        )
        assert not post.restart_due(np.arange(n), 2).any()
    assert stats.outputs == n * steps and stats.held == 2 * steps


def test_batch_frame_encoding_decodes_like_one_frame() -> None:
    rng = np.random.default_rng(0)
    joints = rng.standard_normal((3, 24, 4)).astype(np.float32)
    root = rng.standard_normal((3, 3)).astype(np.float32)
    input_seqs = [1, 2, 2**64 - 1]  # every uint64 is a legal seq
    batch = encode_motion_frames(
        SIDS[:3], [0, 5, 2**40], input_seqs, [10, 20, 30], joints=joints, root=root, engine_us=12.5, batch=3
    )
    for i, payload in enumerate(batch):
        got = decode_frame(payload)
        want = decode_frame(
            encode_motion_frame(
                SIDS[i], [0, 5, 2**40][i], input_seqs[i], [10, 20, 30][i],
                joints=joints[i], root=root[i], engine_us=12.5, batch=3,
            )
        )  # fmt: skip
        assert isinstance(got, MotionFrame) and isinstance(want, MotionFrame)
        assert got.header == type(got.header)(
            **{**vars(want.header), "t_publish_ns": got.header.t_publish_ns}
        )
        assert np.array_equal(got.joints, want.joints) and np.array_equal(got.root, want.root)
    with pytest.raises(ValueError, match="16 characters"):
        encode_motion_frames(["short"], [0], [0], [0], joints=joints[:1], root=root[:1], engine_us=0, batch=1)


@pytest.mark.parametrize(
    "backend", ["onnxruntime", "torch"]
)  # torch: the batch is built in its staging buffer
def test_batched_face_equals_each_session_alone(backend: str) -> None:
    """Face rows come back to the session they came from (no face: no row, the others unmoved)."""
    if backend == "torch":
        pytest.importorskip("torch")
    engine = load_engine(MODELS / "face_expression_small.manifest.json", backend=backend)
    pipeline = FacePipeline(engine)
    crops = np.random.default_rng(1).integers(0, 256, (4, 224, 224, 3), dtype=np.uint8)
    payloads = [crops[0], None, crops[2], crops[3]]
    steps = [Step(p, i, 0) for i, p in enumerate(payloads)]
    states = [cast(FaceState, None)] * 4  # run_batch keeps no per-session face state
    batched = pipeline.run_batch(states, steps).rows
    assert batched[1] is None
    for i in (0, 2, 3):
        alone = pipeline.run_batch(states[:1], [steps[i]]).rows[0]
        np.testing.assert_allclose(batched[i], alone, atol=1e-5)
    engine.close()


def test_batched_face_post_processing_equals_each_session_alone() -> None:
    """finish_batch over a batch (guard, One-Euro filter, rotations, ARKit map as arrays) gives each
    session, bit for bit, what it gives that session alone: smoothing on and off, blendshapes on and
    off, rows without a face, bad rows held by the guard, duplicate timestamps, a hot restart."""
    engine = load_engine(MODELS / "face_expression_small.manifest.json", backend="onnxruntime")
    rng = np.random.default_rng(4)
    n = 6
    options = [{"cropped": True, "smoothing": i % 2 == 0, "blendshapes": i % 3 != 0} for i in range(n)]
    batch, alone = FacePipeline(engine), FacePipeline(engine)
    together = [batch.open_session(o) for o in options]
    apart = [alone.open_session(o) for o in options]
    for tick in range(45):
        rows: list[np.ndarray | None] = []
        for i in range(n):
            row = (rng.standard_normal(flame.FLAME_DIM) * (4.0 if rng.random() < 0.2 else 1.0)).astype(
                np.float32
            )
            if i == 0 and tick > 5:
                row[:] = np.nan  # session 0 goes bad for good: held, then hot-restarted after 30
            rows.append(None if rng.random() < 0.15 else row)
        t_ns = [round(tick * 1e9 / 60) if rng.random() < 0.9 else 0 for _ in range(n)]
        steps = [Step(None, tick, t_ns[i]) for i in range(n)]
        frames = batch.finish_batch(together, SIDS[:n], [tick] * n, steps, BatchResult(list(rows), 1.0))
        for i in range(n):
            one = alone.finish_batch(
                [apart[i]], SIDS[i : i + 1], [tick], steps[i : i + 1], BatchResult([rows[i]], 1.0)
            )
            a, b = decode_frame(frames[i][0]), decode_frame(one[0][0])
            assert isinstance(a, FaceFrame) and isinstance(b, FaceFrame)
            assert (a.header.seq, a.face_found) == (b.header.seq, b.face_found)
            for name in ("expression", "eyelids", "jaw", "head", "blendshapes"):
                np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert batch.guard_stats.restarts == alone.guard_stats.restarts == 1
    engine.close()
