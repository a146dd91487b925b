"""Plan manifest round trip and every mismatch case of the compatibility check, on real RTX plans."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import MODELS

pytest.importorskip("tensorrt_rtx")

from bridge.backends.tensorrt.builder.builder import BuildRequest, BuildResult, build_engine
from bridge.backends.tensorrt.builder.compat import Mismatch, PlanMismatchError, check_plan, raise_on_mismatch
from bridge.backends.tensorrt.builder.flavour import load_flavour
from bridge.backends.tensorrt.builder.host import HostSnapshot, snapshot
from bridge.backends.tensorrt.builder.plan_manifest import (
    BuildHost,
    PlanManifest,
    PlanManifestError,
    plan_manifest_path,
)
from bridge.backends.tensorrt.builder.rebuild import checked_plan
from bridge.runtime.cuda import CudaEnvironment, DeviceInfo

RTX = load_flavour("rtx")


def gpu_host(cc: tuple[int, int] = (8, 9), *, driver: int = 13000, **kw: object) -> HostSnapshot:
    """A machine described by hand: the check is plain data, so any GPU can be simulated."""
    cuda = CudaEnvironment(
        driver, 13000, "580.65.06", (DeviceInfo(0, "NVIDIA GeForce RTX 4090", cc, 24 << 30),)
    )
    fields: dict[str, object] = {
        "flavours": {"tensorrt_rtx": RTX.version},
        "system": "Linux",
        "machine": "x86_64",
    }
    fields.update(kw)
    return HostSnapshot(cuda=cuda, **fields)  # type: ignore[arg-type]


@pytest.fixture
def built(tmp_path: Path) -> BuildResult:
    for suffix in (".onnx", ".manifest.json"):
        shutil.copy(MODELS / f"face_expression_small{suffix}", tmp_path / f"face_expression_small{suffix}")
    [r] = build_engine(
        BuildRequest(
            tmp_path / "face_expression_small.manifest.json",
            out_dir=tmp_path / "plans",
            flavour="rtx",
            tiers=("realtime",),
            progress=False,
        )
    )
    return r


def rewrite(r: BuildResult, **changes: object) -> PlanManifest:
    pm = replace(r.manifest, **changes)  # type: ignore[arg-type]
    pm.write(r.manifest_path)
    return pm


def whats(mismatches: list[Mismatch]) -> list[str]:
    return [m.what for m in mismatches]


def test_manifest_round_trip(built: BuildResult) -> None:
    raw = json.loads(built.manifest_path.read_text())
    for key in (
        "flavour",
        "tensorrt_version",
        "targets",
        "build_host",
        "precision",
        "profiles",
        "onnx_sha256",
        "plan_sha256",
        "cuda_major",
        "built_at",
        "build_seconds",
        "rebuild_command",
    ):
        assert key in raw
    assert PlanManifest.from_dict(raw) == built.manifest
    assert PlanManifest.read(built.manifest_path) == PlanManifest.read(built.plan)


def test_matching_gpu_host_passes(built: BuildResult) -> None:
    assert check_plan(built.manifest, built.plan, gpu_host()) == []
    raise_on_mismatch(built.manifest, built.plan, gpu_host((8, 6)))


def test_this_gpu_less_machine_is_refused_plainly(built: BuildResult) -> None:
    [m] = check_plan(built.manifest, built.plan, snapshot())
    assert m.what == "GPU" and "no usable GPU" in m.here and not m.rebuild_fixes
    assert check_plan(built.manifest, built.plan, snapshot(), check_gpu=False) == []


def test_tensorrt_version_mismatch_names_both_and_the_rebuild_command(built: BuildResult) -> None:
    pm = rewrite(built, tensorrt_version="1.5.0.0")
    with pytest.raises(PlanMismatchError) as e:
        raise_on_mismatch(pm, built.plan, gpu_host())
    text = str(e.value)
    assert "TensorRT version: plan built for tensorrt_rtx 1.5.0.0, this machine has " + RTX.version in text
    assert pm.rebuild_command_line in text and "--rebuild-on-mismatch" in text
    assert (
        "avatar-bridge build-engine" in pm.rebuild_command_line
        and "--tier realtime" in pm.rebuild_command_line
    )


def test_flavour_missing_or_other(built: BuildResult) -> None:
    assert whats(check_plan(built.manifest, built.plan, gpu_host(flavours={}))) == ["TensorRT flavour"]
    [m] = check_plan(built.manifest, built.plan, gpu_host(flavours={"tensorrt": "10.13.3.9"}))
    assert m.what == "TensorRT flavour" and "tensorrt 10.13.3.9" in m.here and not m.rebuild_fixes


def test_compute_capability_outside_targets(built: BuildResult) -> None:
    pm = rewrite(built, targets=("8.6",))
    [m] = check_plan(pm, built.plan, gpu_host((12, 0)))
    assert m.what == "compute capability" and "(12.0)" in m.here and m.rebuild_fixes


def test_hopper_is_refused_for_rtx_plans(built: BuildResult) -> None:
    [m] = check_plan(built.manifest, built.plan, gpu_host((9, 0)))
    assert "TensorRT-RTX does not support" in m.here and not m.rebuild_fixes


def test_full_tensorrt_plan_needs_the_build_gpu_and_platform(built: BuildResult) -> None:
    host = gpu_host((8, 9), flavours={"tensorrt": "10.13.3.9"}, system="Windows", machine="amd64")
    pm = rewrite(
        built,
        flavour="tensorrt",
        tensorrt_version="10.13.3.9",
        targets=("8.6",),
        build_host=BuildHost("Linux", "x86_64", "NVIDIA A10", "8.6", "580.65.06", "13.0", "13.0"),
    )
    assert whats(check_plan(pm, built.plan, host)) == ["platform", "compute capability"]


def test_rtx_plan_other_cpu_architecture(built: BuildResult) -> None:
    assert whats(check_plan(built.manifest, built.plan, gpu_host(machine="aarch64"))) == ["CPU architecture"]


def test_driver_too_old_for_the_wheels_cuda(built: BuildResult) -> None:
    [m] = check_plan(built.manifest, built.plan, gpu_host(driver=12080))
    assert m.what == "CUDA driver" and "12.8" in m.here and not m.rebuild_fixes


def test_source_onnx_changed_or_gone(built: BuildResult) -> None:
    onnx = Path(built.manifest.onnx_path)
    onnx.write_bytes(onnx.read_bytes() + b"\0")
    [m] = check_plan(built.manifest, built.plan, gpu_host())
    assert m.what == "source ONNX" and m.rebuild_fixes
    onnx.unlink()
    [m] = check_plan(built.manifest, built.plan, gpu_host())
    assert m.what == "source ONNX" and not m.rebuild_fixes


def test_plan_file_changed_or_gone(built: BuildResult) -> None:
    data = bytearray(built.plan.read_bytes())
    data[-1] ^= 0xFF
    built.plan.write_bytes(bytes(data))
    assert whats(check_plan(built.manifest, built.plan, gpu_host())) == ["plan file"]
    built.plan.unlink()
    assert whats(check_plan(built.manifest, built.plan, gpu_host())) == ["plan file"]


def test_every_difference_is_listed_at_once(built: BuildResult) -> None:
    pm = rewrite(built, tensorrt_version="1.5.0.0", targets=("8.6",))
    with pytest.raises(PlanMismatchError) as e:
        checked_plan(built.plan, gpu_host((8, 9), driver=12000, machine="aarch64"))
    assert whats(e.value.mismatches) == [
        "TensorRT version",
        "CPU architecture",
        "compute capability",
        "CUDA driver",
    ]
    assert "cannot fix all of this" in str(e.value) and pm.rebuild_command_line in str(e.value)


def test_missing_unknown_or_malformed_manifest(built: BuildResult) -> None:
    path = plan_manifest_path(built.plan)
    raw = json.loads(path.read_text())
    path.write_text(json.dumps(raw | {"format_version": 99}))
    with pytest.raises(PlanManifestError, match="format 99"):
        PlanManifest.read(built.plan)
    path.write_text("{not json")
    with pytest.raises(PlanManifestError, match="malformed"):
        PlanManifest.read(built.plan)
    path.unlink()
    with pytest.raises(PlanManifestError, match="no plan manifest"):
        checked_plan(built.plan, gpu_host())


def test_rebuild_on_mismatch_rebuilds_from_the_recorded_onnx(built: BuildResult) -> None:
    rewrite(built, tensorrt_version="1.5.0.0")
    with pytest.raises(PlanMismatchError):
        checked_plan(built.plan, gpu_host())
    pm = checked_plan(built.plan, gpu_host(), rebuild_on_mismatch=True)
    assert pm.tensorrt_version == RTX.version and pm.plan_sha256 != "" and pm.built_at
    assert check_plan(PlanManifest.read(built.plan), built.plan, gpu_host()) == []


def test_rebuild_is_not_attempted_when_it_cannot_help(built: BuildResult) -> None:
    rewrite(built, tensorrt_version="1.5.0.0")
    before = built.plan.read_bytes()
    with pytest.raises(PlanMismatchError):
        checked_plan(built.plan, gpu_host((9, 0)), rebuild_on_mismatch=True)
    assert built.plan.read_bytes() == before


def test_rebuild_of_a_renamed_plan_is_refused(built: BuildResult) -> None:
    rewrite(built, tensorrt_version="1.5.0.0")
    renamed = built.plan.with_name("renamed.rtx.plan")
    built.plan.rename(renamed)
    plan_manifest_path(built.plan).rename(plan_manifest_path(renamed))
    with pytest.raises(PlanMismatchError, match="TensorRT version"):
        checked_plan(renamed, gpu_host(), rebuild_on_mismatch=True)


def test_rebuild_that_cannot_cure_is_reported(tmp_path: Path) -> None:
    """A plan pinned to 8.6 by its command, on an 8.9 GPU: the rebuild repeats the pin, so it still fails."""
    for suffix in (".onnx", ".manifest.json"):
        shutil.copy(MODELS / f"face_expression_small{suffix}", tmp_path / f"face_expression_small{suffix}")
    [r] = build_engine(
        BuildRequest(
            tmp_path / "face_expression_small.onnx",
            flavour="rtx",
            tiers=("realtime",),
            compute_capabilities=((8, 6),),
            progress=False,
        )
    )
    with pytest.raises(PlanMismatchError, match=r"compute capability: plan built for 8\.6"):
        checked_plan(r.plan, gpu_host((8, 9)), rebuild_on_mismatch=True)
