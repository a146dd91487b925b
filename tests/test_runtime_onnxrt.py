"""Engine on the ONNX Runtime backend, with the committed reference models."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from bridge.backends import _REGISTRY, available_backends, create_backend, load_engine, register_backend
from bridge.runtime import BackendUnavailable, Engine, load_manifest
from tests.conftest import MODELS

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def face() -> Iterator[Engine]:
    with load_engine(MODELS / "face_expression_small.onnx") as engine:
        yield engine


@pytest.fixture(scope="module")
def dance() -> Iterator[Engine]:
    with load_engine(MODELS / "dance_lstm.manifest.json") as engine:
        yield engine


def _images(batch: int) -> np.ndarray:
    return RNG.random((batch, 3, 224, 224), dtype=np.float32)


def _music(batch: int, time: int) -> dict[str, np.ndarray]:
    return {
        "features": RNG.standard_normal((batch, time, 35), dtype=np.float32),
        "pose.previous": (0.1 * RNG.standard_normal((batch, 75))).astype(np.float32),
        "style": RNG.integers(0, 10, batch, dtype=np.int64),
    }


def test_import_needs_no_torch_onnx_or_onnxruntime() -> None:
    code = (
        "import sys, bridge.runtime; "
        "bad = [m for m in ('torch', 'onnx', 'onnxruntime') if m in sys.modules]; "
        "sys.exit(str(bad) if bad else 0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_face_outputs_by_role(face: Engine) -> None:
    out, state = face.run({"image": _images(1)})
    assert state == {}
    assert {k: v.shape for k, v in out.items()} == {
        "flame.expression": (1, 50),
        "flame.jaw": (1, 3),
        "flame.head": (1, 3),
        "flame.eyelids": (1, 2),
    }
    assert all(v.dtype == np.float32 and np.isfinite(v).all() for v in out.values())
    assert ((out["flame.eyelids"] > 0) & (out["flame.eyelids"] < 1)).all()


def test_face_batch_rows_equal_batch_one(face: Engine) -> None:
    images = _images(5)
    batched, _ = face.run({"image": images})
    for i in range(5):
        single, _ = face.run({"image": images[i : i + 1]})
        for role, value in single.items():
            np.testing.assert_allclose(batched[role][i : i + 1], value, atol=1e-5, err_msg=role)


def test_dance_outputs_slices_and_state(dance: Engine) -> None:
    inputs = _music(3, 1)
    out, state = dance.run(inputs)
    assert out["pose.axis_angle"].shape == (3, 1, 72)
    assert out["pose.root_translation"].shape == (3, 1, 3)
    assert set(state) == {"h_in", "c_in"} and state["h_in"].shape == (3, 2, 256)
    # state=None means zeros
    again, _ = dance.run(inputs, dance.initial_state(3))
    np.testing.assert_array_equal(again["pose.axis_angle"], out["pose.axis_angle"])


def test_dance_batch_rows_equal_batch_one(dance: Engine) -> None:
    inputs = _music(4, 6)
    state = {
        k: (0.1 * RNG.standard_normal(v.shape)).astype(np.float32) for k, v in dance.initial_state(4).items()
    }
    batched, batched_state = dance.run(inputs, state)
    for i in range(4):
        row = {k: v[i : i + 1] for k, v in inputs.items()}
        single, single_state = dance.run(row, {k: v[i : i + 1] for k, v in state.items()})
        for role, value in single.items():
            np.testing.assert_allclose(batched[role][i : i + 1], value, atol=1e-5, err_msg=role)
        for name, value in single_state.items():
            np.testing.assert_allclose(batched_state[name][i : i + 1], value, atol=1e-5, err_msg=name)


def test_carried_state_changes_the_output(dance: Engine) -> None:
    inputs = _music(1, 1)
    first, state = dance.run(inputs)
    second, _ = dance.run(inputs, state)
    assert np.abs(first["pose.axis_angle"] - second["pose.axis_angle"]).max() > 1e-3
    # Stepping T=1 with carried state equals one T=8 call (same pose.previous throughout).
    seq = _music(1, 8)
    whole, whole_state = dance.run(seq)
    state = dance.initial_state(1)
    for t in range(8):
        step = {**seq, "features": seq["features"][:, t : t + 1]}
        out, state = dance.run(step, state)
        np.testing.assert_allclose(out["pose.axis_angle"][:, 0], whole["pose.axis_angle"][:, t], atol=1e-5)
    np.testing.assert_allclose(state["c_in"], whole_state["c_in"], atol=1e-5)


def test_offline_profile_shapes_run(dance: Engine) -> None:
    out, _ = dance.run(_music(8, 128))
    assert out["pose.axis_angle"].shape == (8, 128, 72)


@pytest.mark.parametrize(
    ("inputs", "needle"),
    [
        ({}, "missing input role 'image'"),
        ({"image": np.zeros((1, 3, 224, 224), np.float64)}, "float64"),
        ({"image": np.zeros((1, 3, 112, 112), np.float32)}, "[1, 3, 112, 112]"),
        ({"image": np.zeros((3, 224, 224), np.float32)}, "'image'"),
        ({"image": [[0.0]]}, "not an ndarray"),
    ],
)
def test_bad_face_inputs(face: Engine, inputs: dict[str, np.ndarray], needle: str) -> None:
    with pytest.raises(ValueError) as info:
        face.run(inputs)
    assert needle in str(info.value)


def test_bad_dance_inputs(dance: Engine) -> None:
    inputs = _music(2, 1)
    with pytest.raises(ValueError, match="batch"):
        dance.run({**inputs, "style": np.zeros(3, np.int64)})
    with pytest.raises(ValueError, match="'style'"):
        dance.run({**inputs, "style": np.zeros(2, np.int32)})
    with pytest.raises(ValueError, match=r"state 'h_in' expects float32 \[2, 2, 256\]"):
        dance.run(inputs, {**dance.initial_state(2), "h_in": np.zeros((1, 2, 256), np.float32)})
    with pytest.raises(ValueError, match=r"state 'c_in'.*got nothing"):
        dance.run(inputs, {"h_in": np.zeros((2, 2, 256), np.float32)})


def test_backend_lifecycle() -> None:
    manifest = load_manifest(MODELS / "face_expression_small.manifest.json")
    backend = create_backend("onnxruntime", manifest, intra_op_threads=1)
    assert not backend.is_active
    with pytest.raises(RuntimeError, match="before activate"):
        backend.infer({"image": _images(1)})
    with backend:
        assert backend.is_active
        out = backend.infer({"image": _images(2)})
        assert set(out) == {"expression", "jaw", "head", "eyelids"} and out["jaw"].shape == (2, 3)
    assert not backend.is_active
    assert "onnxruntime" in available_backends()


def test_registry_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = load_manifest(MODELS / "face_expression_small.manifest.json")
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        create_backend("nope", manifest)
    monkeypatch.setitem(_REGISTRY, "missing", "bridge.runtime.does_not_exist.runner:Runner")
    with pytest.raises(BackendUnavailable, match="'missing' is not available"):
        create_backend("missing", manifest)
    with pytest.raises(ValueError, match="module:Class"):
        register_backend("bad", "no_colon")


def test_timing_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from training.probes.timing import main

    assert main([str(MODELS / "dance_lstm.onnx"), "--batch", "1", "2", "--seconds", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "dance_lstm" in out and "batch   2: median" in out
