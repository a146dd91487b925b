"""Reference models: ONNX Runtime matches PyTorch, exports reproduce the committed models (within stated
tolerances across CPUs), untrained output is sane."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from tests.conftest import MODELS

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

from onnx import numpy_helper  # noqa: E402

from bridge.backends import load_engine  # noqa: E402
from bridge.models.face import DECA_LAYOUT, build_emoca_size, build_face_small  # noqa: E402
from bridge.models.motion import build_dance_lstm  # noqa: E402
from bridge.runtime.manifest import ModelManifest, find_manifests, sha256_file  # noqa: E402
from training.dance.export import load_trained  # noqa: E402
from training.export import REFERENCE_EXPORTS, SEED, export_emoca_size  # noqa: E402

# Tolerances of the reproducibility check. Seeded initialisers differ by ~1e-6 between CPUs
# (nn.init.orthogonal_ is a LAPACK QR); anything near these bounds is a real change, not arithmetic.
WEIGHT_ATOL = 1e-5
OUTPUT_ATOL = 1e-4
RTOL = 1e-4


def _graph_and_weights(path: Path) -> tuple[bytes, dict[str, np.ndarray]]:
    """The model with every tensor's data removed (its structure, compared byte for byte) and the tensors
    themselves: initializers and Constant-node values, by name."""
    proto = onnx.load(str(path))
    weights: dict[str, np.ndarray] = {}
    for init in proto.graph.initializer:
        weights[init.name] = numpy_helper.to_array(init)
        init.ClearField("raw_data")
    for node in proto.graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                weights[f"{node.name}/{attr.name}"] = numpy_helper.to_array(attr.t)
                attr.t.ClearField("raw_data")
    return proto.SerializeToString(), weights


def _outputs(path: Path) -> dict[str, np.ndarray]:
    """The model's outputs for seeded inputs: floats drawn at random, integers (ids) zero, symbolic dims 2."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds: dict[str, np.ndarray] = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 2 for d in i.shape]
        feeds[i.name] = (
            (0.5 * rng.standard_normal(shape)).astype(np.float32)
            if i.type == "tensor(float)"
            else np.zeros(shape, np.int64)
        )
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


@pytest.mark.parametrize("committed", find_manifests(MODELS), ids=lambda m: m.name)
def test_committed_model_is_reproducible(committed: ModelManifest, tmp_path: Path) -> None:
    """Every model in models/ is what its manifest says, and an untrained one is what the seeded export
    produces on this machine: same graph, weights and outputs within the tolerances above."""
    assert sha256_file(committed.onnx_path) == committed.onnx_sha256, f"{committed.name}: manifest sha256"
    if committed.trained:
        return  # reproduced by its training command, not by a seed
    assert committed.name in REFERENCE_EXPORTS, f"untrained {committed.name} has no seeded export"
    fresh = REFERENCE_EXPORTS[committed.name](tmp_path, SEED)

    def described(m: ModelManifest) -> dict[str, object]:
        return {k: v for k, v in m.to_dict().items() if k not in ("onnx_sha256", "onnx_path")}

    assert described(fresh) == described(committed), f"{committed.name}: manifest is stale, re-run the export"
    graph, weights = _graph_and_weights(committed.onnx_path)
    fresh_graph, fresh_weights = _graph_and_weights(fresh.onnx_path)
    assert fresh_graph == graph, f"{committed.name}: graph differs, re-run the export"
    assert fresh_weights.keys() == weights.keys()
    for name, value in weights.items():
        np.testing.assert_allclose(fresh_weights[name], value, rtol=RTOL, atol=WEIGHT_ATOL, err_msg=name)
    expected, got = _outputs(committed.onnx_path), _outputs(fresh.onnx_path)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=RTOL, atol=OUTPUT_ATOL, err_msg=name)


def test_face_onnxruntime_matches_torch() -> None:
    rng = np.random.default_rng(1)
    images = rng.random((3, 3, 224, 224), dtype=np.float32)
    with torch.no_grad():
        expected = build_face_small()(torch.from_numpy(images))
    with load_engine(MODELS / "face_expression_small.onnx", warmup=False) as engine:
        out, _ = engine.run({"image": images})
    for role, value in zip(
        ["flame.expression", "flame.jaw", "flame.head", "flame.eyelids"], expected, strict=True
    ):
        np.testing.assert_allclose(out[role], value.numpy(), atol=1e-4, err_msg=role)


def test_dance_onnxruntime_matches_torch() -> None:
    rng = np.random.default_rng(2)
    b, t = 3, 7
    features = rng.standard_normal((b, t, 35), dtype=np.float32)
    pose_prev = (0.2 * rng.standard_normal((b, 75))).astype(np.float32)
    style = np.array([0, 4, 9], np.int64)
    h = (0.3 * rng.standard_normal((b, 2, 256))).astype(np.float32)
    c = (0.3 * rng.standard_normal((b, 2, 256))).astype(np.float32)
    with torch.no_grad():
        # models/ holds the trained student (issue 14); its weights are committed beside it.
        pose, h_out, c_out = load_trained()[0](
            *(torch.from_numpy(a) for a in (features, pose_prev, style, h, c))
        )
    with load_engine(MODELS / "dance_lstm.onnx", warmup=False) as engine:
        out, state = engine.run(
            {"features": features, "pose.previous": pose_prev, "style": style}, {"h_in": h, "c_in": c}
        )
    np.testing.assert_allclose(out["pose.axis_angle"], pose[..., :72].numpy(), atol=1e-4)
    np.testing.assert_allclose(out["pose.root_translation"], pose[..., 72:].numpy(), atol=1e-4)
    np.testing.assert_allclose(state["h_in"], h_out.numpy(), atol=1e-4)
    np.testing.assert_allclose(state["c_in"], c_out.numpy(), atol=1e-4)


def test_weights_are_seeded_and_leave_the_global_rng_alone() -> None:
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b = build_dance_lstm(), build_dance_lstm()
    assert torch.rand(1) == before
    assert all(
        torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )
    assert not torch.equal(build_face_small(0).head[-1].weight, build_face_small(1).head[-1].weight)


def _beat_music(frames: int) -> np.ndarray:
    """Synthetic 35-d features at 60 FPS, 120 BPM: onset envelope and beat one-hot every 30 frames,
    MFCC/chroma wandering slowly (standardised scale)."""
    t = np.arange(frames)
    f = np.zeros((1, frames, 35), np.float32)
    beat = (t % 30 == 0).astype(np.float32)
    f[0, :, 0] = np.exp(-(t % 30) / 6.0)  # onset envelope decaying after each beat
    f[0, :, 1:21] = np.sin(t[:, None] / 40.0 + np.arange(20)[None, :])
    f[0, :, 21:33] = 0.5 + 0.5 * np.cos(t[:, None] / 90.0 + np.arange(12)[None, :])
    f[0, :, 33] = beat
    f[0, :, 34] = beat
    return f


def test_untrained_dance_is_bounded_and_follows_the_music(tmp_path: Path) -> None:
    untrained = REFERENCE_EXPORTS["dance_lstm"](tmp_path, SEED)  # models/ holds the trained one
    with load_engine(untrained, warmup=False) as engine:

        def dance(features: np.ndarray) -> np.ndarray:
            """Realtime loop: T=1 steps, each output fed back as pose.previous."""
            state = engine.initial_state(1)
            prev = np.zeros((1, 75), np.float32)
            poses = []
            for i in range(features.shape[1]):
                inputs = {
                    "features": features[:, i : i + 1],
                    "pose.previous": prev,
                    "style": np.zeros(1, np.int64),
                }
                out, state = engine.run(inputs, state)
                prev = np.concatenate(
                    [out["pose.axis_angle"][:, 0], out["pose.root_translation"][:, 0]], axis=1
                )
                poses.append(prev[0])
            return np.stack(poses)

        music = dance(_beat_music(240))
        silence = dance(np.zeros((1, 240, 35), np.float32))
    assert np.abs(music[:, :72]).max() <= 0.6 and np.abs(music[:, 72:]).max() <= 0.1
    moving = music[60:, :72].std(axis=0).mean()
    frozen = silence[60:, :72].std(axis=0).mean()
    assert moving > 0.02, "untrained dance should move with the music"
    assert moving > 10 * frozen, "motion should come from the music, not from the net alone"


def test_emoca_layout_is_describable_with_slices(tmp_path: Path) -> None:
    """A tiny model with EMOCA's I/O layout: one [B,236] tensor, roles picked by slices."""
    manifest = export_emoca_size(tmp_path, name="emoca_tiny", layers=(1, 1, 1, 1), base_width=8)
    exp = manifest.output_for("flame.expression")
    assert exp is not None and exp.tensor == "params" and exp.slice == DECA_LAYOUT["exp"]
    images = np.random.default_rng(3).random((2, 3, 224, 224), dtype=np.float32)
    net = build_emoca_size(layers=(1, 1, 1, 1), base_width=8)
    with torch.no_grad():
        params = net(torch.from_numpy(images)).numpy()
        expression = net.expression_head(net.expression_encoder(torch.from_numpy(images))).numpy()
    np.testing.assert_allclose(params[:, 150:200], expression, atol=1e-5)  # E_expression replaced exp
    with load_engine(manifest) as engine:
        out, _ = engine.run({"image": images})
    np.testing.assert_allclose(out["flame.expression"], expression, atol=1e-4)
    np.testing.assert_allclose(out["flame.head"], params[:, 200:203], atol=1e-4)
    np.testing.assert_allclose(out["flame.jaw"], params[:, 203:206], atol=1e-4)
    assert out["extra.light"].shape == (2, 27) and out["extra.flame.shape"].shape == (2, 100)


def test_emoca_size_is_two_resnet50s() -> None:
    net = build_emoca_size()
    encoder = sum(p.numel() for p in net.coarse_encoder.parameters())
    assert encoder == 23_508_032  # torchvision resnet50 without its fc layer
    assert net.coarse_encoder.out_features == 2048
    with torch.no_grad():
        params = net(torch.rand(1, 3, 224, 224))
    assert params.shape == (1, 236) and torch.isfinite(params).all()
    assert params[:, 200:206].abs().max() < 1.0  # untrained head and jaw rotations stay small
