"""Bad inputs to build-engine and doctor give clear errors, never tracebacks."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from tests.conftest import MODELS

pytest.importorskip("tensorrt_rtx")

from bridge.backends.tensorrt.builder.builder import BuildRequest, build_engine
from bridge.backends.tensorrt.builder.errors import BuildError, ProfileError
from bridge.backends.tensorrt.builder.flavour import load_flavour
from bridge.backends.tensorrt.builder.network import OnnxParseError
from bridge.backends.tensorrt.builder.profiles import parse_profile_flag
from bridge.cli.build import main

FACE = MODELS / "face_expression_small.onnx"


def unsupported_op_model(path: Path) -> Path:
    node = helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery_node", domain="example.custom")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("example.custom", 1)]
    )
    onnx.save(model, str(path))
    return path


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(args)
    return rc, capsys.readouterr().err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = run_cli(["build-engine", str(tmp_path / "nope.onnx"), "--flavour", "rtx"], capsys)
    assert rc == 2 and err == f"error: no such file: {tmp_path / 'nope.onnx'}\n"


def test_not_an_onnx_file(tmp_path: Path) -> None:
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"this is not protobuf")
    with pytest.raises(OnnxParseError, match=r"garbage\.onnx has no graph outputs"):
        build_engine(BuildRequest(bad, flavour="rtx", progress=False))


def test_unsupported_node_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = unsupported_op_model(tmp_path / "custom.onnx")
    rc, err = run_cli(["build-engine", str(model), "--flavour", "rtx", "--no-progress"], capsys)
    assert rc == 2 and "node 'mystery_node' (NoSuchOp)" in err


def test_wrong_extension(tmp_path: Path) -> None:
    other = tmp_path / "model.pt"
    other.write_bytes(b"")
    with pytest.raises(BuildError, match=r"expected an \.onnx file"):
        build_engine(BuildRequest(other, flavour="rtx"))


def test_profile_outside_the_models_dims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = run_cli(
        [
            "build-engine",
            str(FACE),
            "--flavour",
            "rtx",
            "--out",
            str(tmp_path),
            "--profile",
            "big:image=1x3x448x448/4x3x448x448/8x3x448x448",
            "--profile",
            "bad:image=4x3x224x224/2x3x224x224/8x3x224x224",
        ],
        capsys,
    )
    assert rc == 2
    assert "profile 'big' tensor 'image': dim 2 is 448 but the model fixes it to 224" in err
    assert "profile 'bad' tensor 'image': dim 0 needs 1 <= min <= opt <= max, got 4/2/8" in err
    assert not list(tmp_path.glob("*.plan"))


def test_profile_rank_and_unknown_tensor(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as e:
        build_engine(
            BuildRequest(FACE, out_dir=tmp_path, flavour="rtx", profile_flags=("p:image=1x3,lips=1x2",))
        )
    assert "rank 2, the model's input has rank 4" in str(e.value) and "no such input" in str(e.value)
    with pytest.raises(ProfileError, match="no shape range for dynamic input 'image'"):
        build_engine(BuildRequest(FACE, out_dir=tmp_path, flavour="rtx", profile_flags=("p:lips=1x2",)))


def test_unknown_tier_and_malformed_flags(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="no tier"):
        build_engine(BuildRequest(FACE, out_dir=tmp_path, flavour="rtx", tiers=("huge",)))
    with pytest.raises(ProfileError, match="not a shape"):
        parse_profile_flag("image=1by3", 0)
    with pytest.raises(ProfileError, match="one shape or three"):
        parse_profile_flag("image=1x3/2x3", 0)


def test_unknown_flavour_and_compute_capability(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="unknown TensorRT flavour"):
        load_flavour("cuda-magic")
    rc, err = run_cli(
        [
            "build-engine",
            str(FACE),
            "--flavour",
            "rtx",
            "--out",
            str(tmp_path),
            "--compute-capability",
            "9.0",
            "--tier",
            "realtime",
        ],
        capsys,
    )
    assert rc == 2 and "cannot target ['SM90']" in err


def test_full_tensorrt_is_not_installed_here(capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = run_cli(["build-engine", str(FACE), "--flavour", "tensorrt"], capsys)
    assert rc == 2 and "tensorrt is not installed here" in err


def test_bad_size_flag() -> None:
    with pytest.raises(SystemExit):
        main(["build-engine", str(FACE), "--workspace", "lots"])
