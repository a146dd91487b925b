"""quantize: FP16/BF16 mixed-precision and INT8 Q/DQ ONNX, accuracy reports, and bad inputs."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from onnx import TensorProto, numpy_helper

from bridge.cli.build import main
from bridge.cli.quantize import QuantizeRequest, quantize
from bridge.runtime.manifest import ManifestError, load_manifest, validate_against_onnx
from tests.conftest import MODELS


def copy_model(name: str, dest: Path) -> Path:
    for suffix in (".onnx", ".manifest.json"):
        shutil.copy(MODELS / f"{name}{suffix}", dest / f"{name}{suffix}")
    return dest / f"{name}.manifest.json"


def face_crops(folder: Path, n: int) -> Path:
    """Seeded face-sized crops (smooth colour blobs with a darker 'eye line'), written as PNG files."""
    folder.mkdir()
    rng = np.random.default_rng(1)
    for i in range(n):
        coarse = rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)
        img = np.asarray(cv2.resize(coarse, (256, 256), interpolation=cv2.INTER_CUBIC), dtype=np.uint8)
        img[90:110, 40:216] = img[90:110, 40:216] // 2
        cv2.imwrite(str(folder / f"crop{i:02d}.png"), img)
    return folder


def feature_sequences(folder: Path, n: int) -> Path:
    folder.mkdir()
    rng = np.random.default_rng(2)
    for i in range(n):
        t = np.arange(40, dtype=np.float32)[:, None]
        seq = np.sin(t * rng.uniform(0.05, 0.4, 35) + rng.uniform(0, 6, 35)).astype(np.float32)
        if i % 2:
            np.savez(folder / f"seq{i}.npz", features=seq, style=np.int64(i % 3))
        else:
            np.save(folder / f"seq{i}.npy", seq)
    return folder


def io_types(model: onnx.ModelProto) -> set[int]:
    return {v.type.tensor_type.elem_type for v in (*model.graph.input, *model.graph.output)}


def test_int8_face_from_a_folder_of_crops(tmp_path: Path) -> None:
    src = copy_model("face_expression_small", tmp_path)
    crops = face_crops(tmp_path / "crops", 10)
    r = quantize(QuantizeRequest(src, "int8", calibration=crops, calibration_samples=8, holdout_samples=2))
    model = onnx.load(str(r.onnx_path))
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("QuantizeLinear") > 0 and ops.count("DequantizeLinear") > 0
    inits = {i.name: i for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "QuantizeLinear":  # symmetric INT8: zero point 0, as TensorRT requires
            zp = inits[n.input[2]]
            assert zp.data_type == TensorProto.INT8 and not numpy_helper.to_array(zp).any()
    assert io_types(model) == {TensorProto.FLOAT}
    rep = r.report
    assert rep.low_precision_ops == {"Conv": 7, "Gemm": 2}
    assert "8 face crops" in rep.calibration and rep.holdout_samples == 2
    assert 0 < rep.roles["flame.expression"].mae < 0.05
    saved = json.loads(r.report_path.read_text())
    assert saved["headline"].startswith("FLAME expression MAE") and saved["precision"] == "int8"
    m = load_manifest(r.manifest_path)
    assert m.name == "face_expression_small_int8"
    validate_against_onnx(m)
    if importlib.util.find_spec("tensorrt_rtx"):  # the Q/DQ graph is one TensorRT parses and builds
        from bridge.backends.tensorrt.builder.builder import BuildRequest, build_engine

        [b] = build_engine(BuildRequest(r.manifest_path, out_dir=tmp_path, flavour="rtx", progress=False))
        assert b.manifest.precision == "int8"


def test_int8_dance_keeps_lstm_fp32(tmp_path: Path) -> None:
    src = copy_model("dance_lstm", tmp_path)
    seqs = feature_sequences(tmp_path / "seqs", 4)
    r = quantize(QuantizeRequest(src, "int8", calibration=seqs, calibration_samples=32, holdout_samples=8))
    assert r.report.high_precision_ops["LSTM"] == 2
    assert set(r.report.low_precision_ops) == {"Gemm", "MatMul"}
    assert "3 feature sequences" in r.report.calibration
    pose = r.report.roles["pose.axis_angle"]
    assert pose.mse > 0 and pose.normalized_mse < 0.05
    assert "joint-pose MSE" in r.report.headline


def test_fp16_face_is_mixed_with_fp32_io_and_builds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("tensorrt_rtx")
    src = copy_model("face_expression_small", tmp_path)
    assert main(["quantize", str(src), "--precision", "fp16", "--holdout", "4"]) == 0
    out = capsys.readouterr().out
    assert "FLAME expression MAE" in out and "kept FP32" in out
    onnx_path = tmp_path / "face_expression_small.fp16.onnx"
    model = onnx.load(str(onnx_path))
    assert io_types(model) == {TensorProto.FLOAT}
    assert any(i.data_type == TensorProto.FLOAT16 for i in model.graph.initializer)
    plans = tmp_path / "plans"
    manifest = tmp_path / "face_expression_small.fp16.manifest.json"
    assert (
        main(["build-engine", str(manifest), "--flavour", "rtx", "--out", str(plans), "--no-progress"]) == 0
    )
    assert json.loads((plans / "face_expression_small.fp16.rtx.plan.json").read_text())["precision"] == "fp16"


def test_bf16_dance_is_emulated_for_the_report_and_builds(tmp_path: Path) -> None:
    pytest.importorskip("tensorrt_rtx")
    from bridge.backends.tensorrt.builder.builder import BuildRequest, build_engine

    r = quantize(QuantizeRequest(copy_model("dance_lstm", tmp_path), "bf16", holdout_samples=4))
    assert "emulated" in r.report.evaluated_as and r.report.high_precision_ops["LSTM"] == 2
    assert 0 < r.report.roles["pose.axis_angle"].normalized_mse < 0.01
    assert "synthetic" not in r.report.calibration  # mixed precision needs no calibration
    [built] = build_engine(BuildRequest(r.manifest_path, out_dir=tmp_path, flavour="rtx", progress=False))
    assert built.manifest.precision == "bf16" and len(built.manifest.profiles) == 3


def test_unknown_precision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = copy_model("face_expression_small", tmp_path)
    assert main(["quantize", str(src), "--precision", "int4"]) == 2
    assert "unknown precision 'int4'; choose one of fp16, bf16, int8" in capsys.readouterr().err


def test_missing_model_and_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        quantize(QuantizeRequest(tmp_path / "nope.onnx", "fp16"))
    lone = tmp_path / "lone.onnx"
    shutil.copy(MODELS / "face_expression_small.onnx", lone)
    with pytest.raises(ManifestError, match="manifest not found"):
        quantize(QuantizeRequest(lone, "fp16"))


def test_onnx_that_does_not_parse(tmp_path: Path) -> None:
    src = copy_model("face_expression_small", tmp_path)
    (tmp_path / "face_expression_small.onnx").write_bytes(b"\x08\x07garbage" * 10)
    with pytest.raises(ValueError, match="not a readable ONNX model"):
        quantize(QuantizeRequest(src, "int8"))


def test_bad_calibration_folders(tmp_path: Path) -> None:
    src = copy_model("face_expression_small", tmp_path)
    with pytest.raises(ValueError, match="calibration folder not found"):
        quantize(QuantizeRequest(src, "int8", calibration=tmp_path / "none"))
    with pytest.raises(ValueError, match="need at least 2 calibration files"):
        quantize(QuantizeRequest(src, "int8", calibration=face_crops(tmp_path / "one", 1)))
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("a.png", "b.png"):
        (broken / name).write_bytes(b"not a png")
    with pytest.raises(ValueError, match="not a readable image"):
        quantize(QuantizeRequest(src, "int8", calibration=broken))
    dance = copy_model("dance_lstm", tmp_path)
    bad_npz = tmp_path / "npz"
    bad_npz.mkdir()
    np.savez(bad_npz / "s.npz", beats=np.zeros(3))
    with pytest.raises(ValueError, match="needs a 'features' array"):
        quantize(QuantizeRequest(dance, "int8", calibration=bad_npz))


def test_single_sequence_holds_out_its_last_quarter(tmp_path: Path) -> None:
    src = copy_model("dance_lstm", tmp_path)
    seqs = feature_sequences(tmp_path / "seqs", 1)
    r = quantize(QuantizeRequest(src, "int8", calibration=seqs, calibration_samples=16, holdout_samples=4))
    assert "last quarter held out" in r.report.calibration and r.report.holdout_samples == 4


def test_other_inputs(tmp_path: Path) -> None:
    from bridge.backends.tensorrt.quantize.mixed import convert_mixed

    text = tmp_path / "model.txt"
    text.write_text("")
    with pytest.raises(ValueError, match=r"expected an \.onnx file"):
        quantize(QuantizeRequest(text, "fp16"))
    with pytest.raises(ValueError, match="mixed precision is fp16 or bf16"):
        convert_mixed(onnx.load(str(MODELS / "face_expression_small.onnx")), "int8")
    src = copy_model("dance_lstm", tmp_path)
    with pytest.raises(ValueError, match="must be >= 1"):
        quantize(QuantizeRequest(src, "int8", holdout_samples=0))
    short = tmp_path / "short"
    short.mkdir()
    np.save(short / "s.npy", np.zeros((1, 35), np.float32))
    with pytest.raises(ValueError, match="sequences too short"):
        quantize(QuantizeRequest(src, "int8", calibration=short))
