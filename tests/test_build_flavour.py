"""Flavour differences (10.x / 11.x / RTX) and the remaining build-tool branches.

Full TensorRT is not installable here, so its answers are checked by posing the installed tensorrt_rtx
module as `tensorrt` of a given version: the answers only read the version and enum members by name.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from tests.conftest import MODELS

trt = pytest.importorskip("tensorrt_rtx")

from bridge.backends.tensorrt.builder.builder import BuildRequest, _targets, build_engine  # noqa: E402
from bridge.backends.tensorrt.builder.errors import BuildError, ProfileError  # noqa: E402
from bridge.backends.tensorrt.builder.flavour import Flavour, FlavourUnavailable, load_flavour  # noqa: E402
from bridge.backends.tensorrt.builder.plan_manifest import BuildHost  # noqa: E402
from bridge.backends.tensorrt.builder.profiles import parse_profile_flag, select_profiles  # noqa: E402
from bridge.backends.tensorrt.builder.timing_cache import attach_timing_cache, save_timing_cache  # noqa: E402
from bridge.backends.tensorrt.builder.trtlog import trt_logger  # noqa: E402
from bridge.cli.build import main  # noqa: E402
from bridge.runtime.manifest import load_manifest  # noqa: E402

STRONG = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)


def full(version: str) -> Flavour:
    return Flavour("tensorrt", trt, version)


def test_strong_typing_flag_per_version() -> None:
    assert full("10.13.3.9").network_flags() == STRONG  # opt-in on 10.x
    assert full("11.1.0.106").network_flags() == 0  # always on, flag deprecated
    assert load_flavour("rtx").network_flags() == STRONG  # the only mode; passing it avoids a warning


def test_full_tensorrt_answers() -> None:
    f = full("10.13.3.9")
    assert f.major == 10 and not f.is_rtx and not f.builds_without_gpu and f.supports_timing_cache
    assert not f.plans_portable_across_os and not f.has_builtin_cuda_graphs
    assert f.default_targets() == [] and f.cuda_major is None  # no tensorrt-cuXX wheel installed here
    assert f.header_problems(trt.Runtime(trt_logger(f)), b"") == []
    config = trt.Builder(trt_logger(f)).create_builder_config()
    f.set_targets(config, None)
    with pytest.raises(ValueError, match="tensorrt_rtx only"):
        f.set_targets(config, [(8, 6)])


def test_full_tensorrt_targets_its_build_gpu() -> None:
    no_gpu = BuildHost("Linux", "x86_64")
    with pytest.raises(BuildError, match="builds for the GPU it runs on, and this machine has none"):
        _targets(full("10.13.3.9"), BuildRequest(Path("m.onnx")), no_gpu)
    a10 = BuildHost("Linux", "x86_64", "NVIDIA A10", "8.6")
    assert _targets(full("10.13.3.9"), BuildRequest(Path("m.onnx")), a10) == ("8.6",)


def test_timing_cache_round_trip_for_full_tensorrt(tmp_path: Path) -> None:
    f = full("10.13.3.9")
    config = trt.Builder(trt_logger(f)).create_builder_config()
    cache_file = tmp_path / "caches" / "timing.cache"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the RTX module standing in deprecates it
        assert attach_timing_cache(f, config, cache_file) is not None
        save_timing_cache(config, cache_file)
        assert cache_file.stat().st_size > 0
        assert attach_timing_cache(f, config, cache_file) is not None  # reloads the saved bytes
    assert attach_timing_cache(f, config, None) is None


def test_auto_flavour_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRIDGE_TENSORRT_FLAVOUR", "rtx")
    assert load_flavour("auto").name == "tensorrt_rtx"
    monkeypatch.setenv("BRIDGE_TENSORRT_FLAVOUR", "tensorrt")
    with pytest.raises(FlavourUnavailable, match="tensorrt is not installed"):
        load_flavour()
    monkeypatch.delenv("BRIDGE_TENSORRT_FLAVOUR")
    monkeypatch.setattr(
        "bridge.backends.tensorrt.builder.flavour._MODULES",
        {"tensorrt": "no_such_trt", "tensorrt_rtx": "no_such_rtx"},
    )
    with pytest.raises(FlavourUnavailable, match="no TensorRT flavour is installed"):
        load_flavour()


def test_profile_flag_errors() -> None:
    for bad, message in (
        ("image", "expected TENSOR=MIN/OPT/MAX"),
        ("p:", "no tensor shapes"),
    ):
        with pytest.raises(ProfileError, match=message):
            parse_profile_flag(bad, 0)
    manifest = load_manifest(MODELS / "face_expression_small.manifest.json")
    with pytest.raises(ProfileError, match="cannot be combined"):
        select_profiles(manifest, ["image=1x3x224x224"], ["realtime"])
    assert select_profiles(None, [], []) == []


def dynamic_model(path: Path, dims: list[int | str]) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_dynamic_model_without_tiers_is_refused(tmp_path: Path) -> None:
    model = dynamic_model(tmp_path / "dyn.onnx", ["n", 3])
    with pytest.raises(ProfileError, match="has dynamic inputs"):
        build_engine(BuildRequest(model, flavour="rtx", progress=False))


def test_static_model_builds_static_with_cli_options(tmp_path: Path) -> None:
    model = dynamic_model(tmp_path / "fixed.onnx", [2, 3])
    argv = [
        "build-engine",
        str(model),
        "--flavour",
        "rtx",
        "--opt-level",
        "1",
        "--workspace",
        "64M",
        "--no-progress",
    ]
    assert main(argv) == 0
    [r] = build_engine(BuildRequest(model, flavour="rtx", optimization_level=1, progress=False))
    assert r.manifest.static and r.manifest.profiles == () and r.manifest.optimization_level == 1
    assert r.manifest.rebuild_command[-2:] == ("--opt-level", "1")


def test_per_tier_with_flag_profiles(tmp_path: Path) -> None:
    model = dynamic_model(tmp_path / "dyn.onnx", ["n", 3])
    flags = ("one:x=1x3", "many:x=1x3/4x3/8x3")
    results = build_engine(
        BuildRequest(model, flavour="rtx", profile_flags=flags, per_tier=True, progress=False)
    )
    assert [r.plan.name for r in results] == ["dyn.one.rtx.plan", "dyn.many.rtx.plan"]
    assert [r.manifest.static for r in results] == [True, False]
    assert results[1].manifest.rebuild_command.count("--profile") == 1


def test_argument_edges() -> None:
    import argparse

    from bridge.backends.tensorrt.builder.arguments import parse_compute_capability, request_from_command

    with pytest.raises(argparse.ArgumentTypeError, match="not a compute capability"):
        parse_compute_capability("sm86")
    with pytest.raises(ValueError, match="not a build-engine command"):
        request_from_command(["avatar-bridge", "serve"])


def test_build_failure_carries_tensorrts_reasons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bridge.backends.tensorrt.builder.builder as builder_mod
    from bridge.backends.tensorrt.builder.network import ParsedNetwork, parse_onnx

    real = parse_onnx

    class FailingBuilder:
        def __init__(self, inner: object) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

        def build_serialized_network(self, network: object, config: object) -> None:
            trt_logger(load_flavour("rtx")).log(trt.ILogger.ERROR, "out of workspace (simulated)")

    def parse(*args: object) -> ParsedNetwork:
        p = real(*args)  # type: ignore[arg-type]
        return ParsedNetwork(FailingBuilder(p.builder), p.network, p.parser)  # type: ignore[arg-type]

    monkeypatch.setattr(builder_mod, "parse_onnx", parse)
    with pytest.raises(BuildError, match=r"failed to build fixed\.onnx:\n  out of workspace \(simulated\)"):
        build_engine(
            BuildRequest(dynamic_model(tmp_path / "fixed.onnx", [2, 3]), flavour="rtx", progress=False)
        )


def test_unfinished_bars_close() -> None:
    import io

    from bridge.backends.tensorrt.builder.progress import PhaseBars

    out = io.StringIO()
    bars = PhaseBars(file=out)
    bars.start("Building engine", None, 4)
    bars.step("Building engine", 1)
    bars.close()  # a build that raised mid-way
    assert "2/4" in out.getvalue()
