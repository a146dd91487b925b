"""`doctor` on this GPU-less machine says so plainly and explains why each plan cannot load."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import MODELS

pytest.importorskip("tensorrt_rtx")

from bridge.backends.tensorrt.builder.builder import BuildRequest, build_engine
from bridge.backends.tensorrt.builder.doctor import diagnose
from bridge.backends.tensorrt.builder.host import HostSnapshot
from bridge.cli.build import main
from bridge.runtime.cuda import CudaEnvironment, DeviceInfo


@pytest.fixture
def engines(tmp_path: Path) -> Path:
    for suffix in (".onnx", ".manifest.json"):
        shutil.copy(MODELS / f"dance_lstm{suffix}", tmp_path / f"dance_lstm{suffix}")
    build_engine(
        BuildRequest(tmp_path / "dance_lstm.onnx", flavour="rtx", tiers=("realtime",), progress=False)
    )
    (tmp_path / "orphan.rtx.plan").write_bytes(b"plan without a manifest")
    return tmp_path


def test_doctor_without_gpu(engines: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--models", str(engines)]) == 0
    out = capsys.readouterr().out
    assert "tensorrt_rtx" in out
    assert "none: this machine has no usable NVIDIA GPU" in out
    assert "onnxruntime: yes (CPU)" in out and "tensorrt: no:" in out
    assert "dance_lstm.rtx.plan: cannot load" in out and "GPU: plan built for compute capability" in out
    assert "rebuild: avatar-bridge build-engine" in out
    assert "orphan.rtx.plan: cannot load" in out and "no plan manifest" in out


def test_doctor_json(engines: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--engines", str(engines), "--json"]) == 0  # the hidden name before 0.2
    report = json.loads(capsys.readouterr().out)
    assert report["backends"]["onnxruntime"] == "yes (CPU)"
    assert [p["ok"] for p in report["plans"]] == [False, False]


def test_doctor_on_a_described_gpu_machine(engines: Path) -> None:
    from bridge.backends.tensorrt.builder.flavour import load_flavour

    version = load_flavour("rtx").version
    gpus = (
        DeviceInfo(0, "NVIDIA RTX A4000", (8, 6), 16 << 30),
        DeviceInfo(1, "NVIDIA H200", (9, 0), 141 << 30),
    )
    host = HostSnapshot(
        {"tensorrt_rtx": version}, "Linux", "x86_64", CudaEnvironment(13000, 13000, "580", gpus)
    )
    report = diagnose(engines, host=host)
    assert report.backends["tensorrt"] == "yes on NVIDIA RTX A4000"
    assert [p.ok for p in report.plans] == [True, False]
    only_hopper = HostSnapshot(
        {"tensorrt_rtx": version}, "Linux", "x86_64", CudaEnvironment(13000, 13000, "580", gpus[1:])
    )
    assert "does not support" in diagnose(engines, host=only_hopper).backends["tensorrt"]


def test_doctor_render_with_gpus_and_no_tensorrt(tmp_path: Path) -> None:
    from bridge.backends.tensorrt.builder.doctor import render

    gpu = DeviceInfo(0, "NVIDIA H200", (9, 0), 141 << 30)
    host = HostSnapshot({}, "Linux", "x86_64", CudaEnvironment(13000, 13030, "580.159.04", (gpu,)))
    text = render(diagnose(tmp_path, host=host))
    assert "0: NVIDIA H200, compute capability 9.0, 141 GiB" in text
    assert "tensorrt: no: neither tensorrt nor tensorrt_rtx is installed" in text
    assert "TensorRT:\n  not installed" in text and "Plans:\n  none found" in text
