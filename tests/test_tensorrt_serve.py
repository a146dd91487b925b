"""TensorRT reachable from `serve`: the `[serve.tensorrt]` table and flags, per-tier plans found and
loaded, batches padded to the tiers of the PLANS' manifests, mismatches refused (or rebuilt), and the
CUDA device made current on the thread that enqueues.

Plans are real tensorrt_rtx builds (CPU, under a second each here). TensorRT cannot execute on this
machine, so inference runs on the stand-ins of tests/test_tensorrt_runtime.py (a fake CUDA runtime
over host memory, a fake engine that runs the ONNX with ONNX Runtime); the refusals go through the real
loader and plan check. What no test here runs: cudaSetDevice on a real GPU from the scheduler thread.
"""

from __future__ import annotations

import argparse
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorrt_rtx")

import bridge.backends.tensorrt.runner as runner_mod
import bridge.runtime.cuda.api as cuda_api
from bridge.backends import create_backend, load_engine
from bridge.backends.tensorrt.builder.builder import BuildRequest, BuildResult, build_engine
from bridge.backends.tensorrt.builder.compat import PlanMismatchError
from bridge.backends.tensorrt.builder.flavour import Flavour, load_flavour
from bridge.backends.tensorrt.builder.host import HostSnapshot
from bridge.backends.tensorrt.builder.plan_manifest import PlanManifest, plan_manifest_path
from bridge.backends.tensorrt.loader import EngineLoadError, LoadedEngine, find_plans
from bridge.backends.tensorrt.runner import TensorRTBackend
from bridge.backends.tensorrt.tiers import padded_tier
from bridge.cli.serve import add_arguments, config_from_args
from bridge.cli.serve_config import ConfigError
from bridge.pipelines.registry import PIPELINES
from bridge.runtime.cuda import CudaEnvironment, DeviceInfo
from bridge.runtime.manifest import ModelManifest, load_manifest
from bridge.serving.server import Bridge
from tests.conftest import MODELS
from tests.test_tensorrt_runtime import (
    DANCE_REALTIME_SHAPES,
    FakeCudart,
    FakeEngine,
    FakeTrt,
    assert_same,
    face_feeds,
    reference,
)

FACE = "face_expression_small"
STATIC_TIERS = ("b1:image=1x3x224x224", "b4:image=4x3x224x224", "b8:image=8x3x224x224")


@pytest.fixture
def cudart(monkeypatch: pytest.MonkeyPatch) -> FakeCudart:
    """The fake CUDA runtime of tests/test_tensorrt_runtime.py in place of cuda-python."""
    fake = FakeCudart()
    monkeypatch.setattr(cuda_api, "_runtime", lambda: fake)
    return fake


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def _config(tmp_path: Path, text: str, *argv: str) -> Any:
    path = tmp_path / "bridge.toml"
    path.write_text(text)
    return config_from_args(_args("--config", str(path), *argv))


def _model(tmp_path: Path) -> ModelManifest:
    for suffix in (".onnx", ".manifest.json"):
        shutil.copy(MODELS / f"{FACE}{suffix}", tmp_path / f"{FACE}{suffix}")
    return load_manifest(tmp_path / f"{FACE}.manifest.json")


def _per_tier(model: ModelManifest, flags: tuple[str, ...] = ()) -> list[BuildResult]:
    request = BuildRequest(model.path, flavour="rtx", profile_flags=flags, per_tier=True, progress=False)
    return build_engine(request)


def _fake_loads(
    monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart, model: ModelManifest
) -> list[FakeEngine]:
    """runner.load_plan -> a fake engine per plan, with that plan's manifest (its real tiers)."""
    engines: list[FakeEngine] = []

    def load(plan: Path, **_: Any) -> LoadedEngine:
        pm = PlanManifest.read(plan)
        engines.append(FakeEngine(model.onnx_path, list(pm.profiles), cudart))
        return LoadedEngine(Flavour("tensorrt", FakeTrt, "0.fake"), None, engines[-1], pm, plan)

    monkeypatch.setattr(runner_mod, "load_plan", load)
    return engines


# ------------------------------------------------------------------------------------------- config


def test_tensorrt_table_and_flags_reach_the_backend(tmp_path: Path) -> None:
    text = (
        '[serve]\nbackend = "tensorrt"\nrebuild_on_mismatch = true\n'
        '[serve.tensorrt]\ncuda_graphs = true\nlanes = 2\nprecision = "fp16"\n'
        "device = 1\ndevice_post = true\n"
    )
    config = _config(tmp_path, text, "--tensorrt-lanes", "3", "--tensorrt-precision", "int8")
    assert config.backend_options == {
        "cuda_graphs": True,
        "lanes": 3,  # flags win
        "precision": "int8",
        "device": 1,
        "device_post": True,
        "rebuild_on_mismatch": True,
    }
    # One model on TensorRT beside ONNX Runtime: the options go to that backend only.
    config = _config(tmp_path, "[serve.tensorrt]\nlanes = 2\n", "--backend-for", f"{FACE}=tensorrt")
    assert config.backend_for(FACE) == ("tensorrt", {"lanes": 2})
    assert config.backend_for("dance_lstm") == ("onnxruntime", {})


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[serve.tensorrt]\nlane = 2\n", "lane"),
        ('[serve.tensorrt]\nlanes = "2"\n', "lanes"),
        ("[serve.tensorrt]\nlanes = 0\n", "lanes"),
        ('[serve.tensorrt]\nprecision = "fp8"\n', "precision"),
        ("[serve.tensorrt]\ndevice = -1\n", "device"),
        ('[serve.tensorrt]\ncuda_graphs = "yes"\n', "cuda_graphs"),
        ("[serve]\ntensorrt = 1\n", "tensorrt"),
    ],
)
def test_bad_tensorrt_keys_fail_at_start_naming_them(tmp_path: Path, text: str, named: str) -> None:
    with pytest.raises(ConfigError, match=rf"[`.]{named}`"):
        _config(tmp_path, text)


def test_bad_tensorrt_flags_fail_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--tensorrt-lanes must be >= 1"):
        _config(tmp_path, "", "--tensorrt-lanes", "0")
    with pytest.raises(SystemExit):  # argparse: not one of the choices
        _args("--tensorrt-precision", "fp8")


# ------------------------------------------------------------------------------------------- plans


def test_per_tier_plans_found_and_a_whole_plan_wins(tmp_path: Path) -> None:
    model = _model(tmp_path)
    results = _per_tier(model)
    assert [r.plan.name for r in results] == [f"{FACE}.realtime.rtx.plan", f"{FACE}.batched.rtx.plan"]
    assert find_plans(model) == sorted(r.plan for r in results)
    # The whole plan of a quantized ONNX (<stem>.fp16.rtx.plan) is not a tier of this model's.
    fp16 = tmp_path / f"{FACE}.fp16.rtx.plan"
    shutil.copy(results[0].plan, fp16)
    d = json.loads(plan_manifest_path(results[0].plan).read_text())
    plan_manifest_path(fp16).write_text(json.dumps(d | {"onnx_path": str(tmp_path / f"{FACE}.fp16.onnx")}))
    assert find_plans(model) == sorted(r.plan for r in results)
    assert find_plans(model, precision="fp16") == [fp16]
    with pytest.raises(FileNotFoundError, match=rf"build-engine {tmp_path}/{FACE}\.int8\.onnx"):
        find_plans(model, precision="int8")
    [whole] = build_engine(BuildRequest(model.path, flavour="rtx", progress=False))
    assert find_plans(model) == [whole.plan]


def test_static_tier_plans_pad_the_batch_and_set_the_pipeline_tiers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    model = _model(tmp_path)
    _per_tier(model, STATIC_TIERS)  # the ONNX manifest says (1, 8); these plans hold 1, 4 or 8 rows
    engines = _fake_loads(monkeypatch, cudart, model)
    engine = load_engine(model, backend="tensorrt")  # as serve loads it: warm-up at the plans' tiers
    backend = engine.backend
    assert isinstance(backend, TensorRTBackend) and backend.batch_tiers == (1, 4, 8)
    pipeline = PIPELINES[model.task](engine)
    assert pipeline.batch_tiers == (1, 4, 8) and pipeline.max_batch == 8
    b1, b4, b8 = (e.contexts[0] for e in engines)
    warm = (b1.runs, b4.runs, b8.runs)
    for batch in (1, 3, 4, 6):
        feeds = face_feeds(batch, seed=batch)
        assert_same(backend.infer(feeds), reference(model, feeds))  # padding rows computed and dropped
    assert (b1.runs, b4.runs, b8.runs) == (warm[0] + 1, warm[1] + 2, warm[2] + 1)
    assert b4.shapes["image"] == (4, 3, 224, 224)
    with pytest.raises(ValueError, match="no shape tier of the plan holds this batch"):
        backend.infer(face_feeds(9))
    engine.close()


def test_a_plan_of_fewer_tiers_than_the_onnx_manifest_loads_and_bounds_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    model = _model(tmp_path)
    build_engine(BuildRequest(model.path, flavour="rtx", tiers=("realtime",), progress=False))
    _fake_loads(monkeypatch, cudart, model)
    engine = load_engine(model, backend="tensorrt")  # the manifest's batch 8 is not warmed up: no tier
    assert PIPELINES[model.task](engine).max_batch == 1  # not the ONNX manifest's 8
    engine.close()


def test_padded_tier_respects_each_tensors_batch_axis() -> None:
    dance = load_manifest(MODELS / "dance_lstm.manifest.json")
    profiles = dance.profiles[:1]  # realtime: exactly one row, time 1
    shapes = DANCE_REALTIME_SHAPES
    assert padded_tier(profiles, shapes, 1, {}) == (0, 1)
    moved = shapes | {"h_in": (2, 1, 256)}  # a state tensor whose batch axis is 1
    with pytest.raises(ValueError, match="no shape tier"):
        padded_tier(profiles, moved, 1, {"h_in": 1})


def test_device_made_current_on_each_enqueueing_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    model = _model(tmp_path)
    _per_tier(model)
    _fake_loads(monkeypatch, cudart, model)
    with create_backend("tensorrt", model, device=0) as backend:
        before = cudart.calls["cudaSetDevice"]  # the fake loads set none
        backend.infer(face_feeds(1))
        backend.infer(face_feeds(2))
        scheduler = threading.Thread(target=backend.infer, args=(face_feeds(1),))  # as a scheduler thread
        scheduler.start()
        scheduler.join()
        assert cudart.calls["cudaSetDevice"] - before == 2  # once per thread, on its first call


def test_precision_and_device_post(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    model = _model(tmp_path)
    results = _per_tier(model)
    _fake_loads(monkeypatch, cudart, model)
    backend = create_backend("tensorrt", model, plan=[r.plan for r in results], precision="fp16")
    with pytest.raises(EngineLoadError, match="computes in fp32, not the fp16 asked for"):
        backend.activate()
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        TensorRTBackend(model, precision="fp8")
    assert TensorRTBackend(model).post_device is None
    assert str(TensorRTBackend(model, device=1, device_post=True).post_device) == "cuda:1"


# ------------------------------------------------------------------------------------------- refusals


def _gpu_host() -> HostSnapshot:
    rtx = load_flavour("rtx")
    devices = (DeviceInfo(0, "NVIDIA RTX 4090", (8, 9), 24 << 30),)
    return HostSnapshot(
        {"tensorrt_rtx": rtx.version}, "Linux", "x86_64", CudaEnvironment(13000, 13000, "580", devices)
    )


def test_a_stale_tier_plan_is_refused_with_its_rebuild_command_or_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model(tmp_path)
    _, batched = _per_tier(model)  # found first (sorted by name): loaded first
    pm_path = plan_manifest_path(batched.plan)
    d = json.loads(pm_path.read_text())
    pm_path.write_text(json.dumps(d | {"tensorrt_version": "0.0.1"}))  # built by another TensorRT
    monkeypatch.setattr("bridge.backends.tensorrt.loader.set_device", lambda index: None)
    with pytest.raises(
        PlanMismatchError, match=r"TensorRT version: plan built for tensorrt_rtx 0\.0\.1"
    ) as e:
        create_backend("tensorrt", model, host=_gpu_host()).activate()
    assert "--tier batched" in str(e.value) and "--per-tier" in str(e.value)  # rebuilds that tier alone
    # --rebuild-on-mismatch: rebuilt by the recorded command, then TensorRT-RTX's own header check (real)
    # refuses: there is no GPU behind the described one.
    backend = create_backend("tensorrt", model, host=_gpu_host(), rebuild_on_mismatch=True)
    with pytest.raises(EngineLoadError, match=r"refuses face_expression_small\.batched\.rtx\.plan"):
        backend.activate()
    assert PlanManifest.read(batched.plan).tensorrt_version == d["tensorrt_version"]
    with pytest.raises(PlanMismatchError, match="no usable GPU"):  # this machine as it is
        create_backend("tensorrt", model).activate()


# ------------------------------------------------------------------------------------------- serve


def test_serve_loads_the_model_on_tensorrt_or_refuses_it_naming_the_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    model = _model(tmp_path)
    _per_tier(model, STATIC_TIERS)
    ports = ("--request-port", "0", "--frames-port", "0", "--models", str(tmp_path))
    argv = (*ports, "--backend-for", f"{FACE}=tensorrt", "--tensorrt-lanes", "2")
    _fake_loads(monkeypatch, cudart, model)
    bridge = Bridge(config_from_args(_args(*argv)))
    bridge.start()
    try:
        pipeline = bridge.pipelines["face"][FACE]
        assert pipeline.engine.backend.name == "tensorrt" and pipeline.batch_tiers == (1, 4, 8)
    finally:
        bridge.close()
    # The real loader on this GPU-less machine: refused at start, the reason and rebuild command named.
    monkeypatch.undo()
    with pytest.raises(
        ValueError,
        match=r"(?s)refusing TensorRT plan .*no usable GPU.*build-engine .*--profile b1:image=1x3x224x224",
    ):
        Bridge(config_from_args(_args(*argv)))
