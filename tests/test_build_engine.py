"""Real TensorRT-RTX builds (no GPU needed) of both reference models, with several shape tiers."""

from __future__ import annotations

import argparse
import io
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import MODELS

pytest.importorskip("tensorrt_rtx")

from bridge.backends.tensorrt.builder.builder import BuildRequest, build_engine
from bridge.backends.tensorrt.builder.plan_manifest import PlanManifest, plan_manifest_path
from bridge.backends.tensorrt.builder.progress import PhaseBars
from bridge.cli.build import main, register_commands


def copy_model(name: str, dest: Path) -> Path:
    """Copy a reference model and its manifest, so builds and edits never touch models/."""
    for suffix in (".onnx", ".manifest.json"):
        shutil.copy(MODELS / f"{name}{suffix}", dest / f"{name}{suffix}")
    return dest / f"{name}.manifest.json"


def test_face_model_builds_with_manifest_tiers(tmp_path: Path) -> None:
    bars = io.StringIO()
    [r] = build_engine(
        BuildRequest(
            copy_model("face_expression_small", tmp_path),
            out_dir=tmp_path / "out",
            flavour="rtx",
            workspace_bytes=256 << 20,
            progress_file=bars,
        )
    )
    m = r.manifest
    assert r.plan.stat().st_size > 100_000
    assert r.manifest_path == plan_manifest_path(r.plan)
    assert m.flavour == "tensorrt_rtx" and m.precision == "fp32" and not m.static
    assert [p.name for p in m.profiles] == ["realtime", "batched"]
    assert m.build_host.gpu_name is None  # built without a GPU
    assert "8.6" in m.targets and "9.0" not in m.targets
    assert m.workspace_bytes == 256 << 20 and m.timing_cache is None
    assert "Building engine" in bars.getvalue()  # the progress bar was fed by TensorRT's monitor
    assert PlanManifest.read(r.plan) == m


def test_face_model_three_flag_tiers(tmp_path: Path) -> None:
    tiers = [
        "b1:image=1x3x224x224",
        "b4:image=1x3x224x224/4x3x224x224/4x3x224x224",
        "b8:image=1x3x224x224/8x3x224x224/8x3x224x224",
    ]
    copy_model("face_expression_small", tmp_path)
    onnx = tmp_path / "face_expression_small.onnx"
    [r] = build_engine(
        BuildRequest(onnx, out_dir=tmp_path, flavour="rtx", profile_flags=tuple(tiers), progress=False)
    )
    assert [p.name for p in r.manifest.profiles] == ["b1", "b4", "b8"]
    assert r.manifest.profiles[2].shapes["image"][2] == (8, 3, 224, 224)


def test_dance_model_per_tier_plans_fixed_tier_is_static(tmp_path: Path) -> None:
    results = build_engine(
        BuildRequest(
            copy_model("dance_lstm", tmp_path), out_dir=tmp_path, flavour="rtx", per_tier=True, progress=False
        )
    )
    by_tier = {r.manifest.profiles[0].name: r for r in results}
    assert set(by_tier) == {"realtime", "batched", "offline"}
    assert by_tier["realtime"].manifest.static  # min == opt == max: built with fixed input shapes
    assert not by_tier["offline"].manifest.static
    assert by_tier["offline"].manifest.profiles[0].shapes["features"][2] == (8, 128, 35)
    for tier, r in by_tier.items():
        assert r.plan.name == f"dance_lstm.{tier}.rtx.plan"
        cmd = r.manifest.rebuild_command
        assert cmd[cmd.index("--tier") + 1] == tier and "--per-tier" in cmd  # rebuilds just this tier


def test_cli_build_engine_writes_plan_and_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = copy_model("dance_lstm", tmp_path)
    out = tmp_path / "plans"
    rc = main(
        [
            "build-engine",
            str(src),
            "--flavour",
            "rtx",
            "--out",
            str(out),
            "--tier",
            "realtime",
            "--tier",
            "offline",
            "--compute-capability",
            "8.6",
            "--compute-capability",
            "8.9",
            "--no-progress",
        ]
    )
    assert rc == 0
    plan = out / "dance_lstm.rtx.plan"
    manifest = json.loads(plan_manifest_path(plan).read_text())
    assert manifest["targets"] == ["8.6", "8.9"]
    assert [p["name"] for p in manifest["profiles"]] == ["realtime", "offline"]
    assert "dance_lstm.rtx.plan" in capsys.readouterr().out


def test_register_commands_adds_build_and_quantize() -> None:
    """`doctor` is a subcommand of its own (bridge.cli.doctor), which runs the GPU checks too."""
    parser = argparse.ArgumentParser()
    register_commands(parser.add_subparsers(dest="command"))
    for argv in (["build-engine", "m.onnx"], ["quantize", "m.onnx", "--precision", "int8"]):
        ns = parser.parse_args(argv)
        assert callable(ns.func)


def test_timing_cache_is_ignored_for_rtx(tmp_path: Path) -> None:
    cache = tmp_path / "timing.cache"
    [r] = build_engine(
        BuildRequest(
            copy_model("face_expression_small", tmp_path),
            out_dir=tmp_path,
            flavour="rtx",
            tiers=("realtime",),
            timing_cache=cache,
            progress=False,
        )
    )
    assert r.manifest.static and r.manifest.timing_cache is None and not cache.exists()


def test_phase_bars_follow_nested_phases() -> None:
    out = io.StringIO()
    bars = PhaseBars(file=out)
    bars.start("Building engine", None, 2)
    bars.start("Optimizing graph", "Building engine", 3)
    bars.step("Optimizing graph", 0)
    bars.finish("Optimizing graph")
    bars.step("Building engine", 0)
    bars.finish("Building engine")
    bars.close()
    assert bars.phases_seen == ["Building engine", "Optimizing graph"]
    assert "2/2" in out.getvalue() and "Optimizing graph" in out.getvalue()
