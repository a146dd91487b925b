"""Can this plan run here? Compare its manifest with the host before TensorRT ever sees the bytes.

Each difference becomes one `Mismatch` line naming what the plan needs and what this machine has;
`PlanMismatchError` joins them and ends with the exact command that rebuilds the plan. Differences that
a rebuild cannot fix (no GPU, flavour not installed, a GPU the flavour does not support) are marked so
`--rebuild-on-mismatch` does not try.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bridge.backends.tensorrt.builder.flavour import RTX_SUPPORTED_CCS
from bridge.backends.tensorrt.builder.host import HostSnapshot
from bridge.backends.tensorrt.builder.plan_manifest import PlanManifest
from bridge.runtime.backend import ModelRefused
from bridge.runtime.cuda import format_compute_capability, format_cuda_version
from bridge.runtime.manifest import sha256_file

__all__ = ["Mismatch", "PlanMismatchError", "check_plan", "raise_on_mismatch"]


@dataclass(frozen=True)
class Mismatch:
    what: str  # "tensorrt version", "compute capability", ...
    plan: str  # what the plan was built for
    here: str  # what this machine has
    rebuild_fixes: bool  # False: no rebuild on this machine can make the plan run

    def __str__(self) -> str:
        return f"{self.what}: plan built for {self.plan}, this machine has {self.here}"


class PlanMismatchError(ModelRefused):
    def __init__(self, plan: Path, manifest: PlanManifest, mismatches: list[Mismatch]) -> None:
        self.plan = plan
        self.manifest = manifest
        self.mismatches = mismatches
        lines = "\n".join(f"  - {m}" for m in mismatches)
        if all(m.rebuild_fixes for m in mismatches):
            fix = f"Rebuild it with:\n  {manifest.rebuild_command_line}\n(or load with --rebuild-on-mismatch)"
        else:
            fix = (
                "A rebuild on this machine cannot fix all of this (see above); once it can run, rebuild "
                f"with:\n  {manifest.rebuild_command_line}"
            )
        super().__init__(f"refusing TensorRT plan {plan}:\n{lines}\n{fix}")


def _gpu_mismatches(pm: PlanManifest, host: HostSnapshot, device: int) -> list[Mismatch]:
    dev = host.device(device)
    if dev is None:
        why = f"no usable GPU ({host.cuda.problem or f'no CUDA device {device}'})"
        return [Mismatch("GPU", f"compute capability {', '.join(pm.targets)}", why, rebuild_fixes=False)]
    out: list[Mismatch] = []
    here = format_compute_capability(dev.compute_capability)
    if pm.flavour == "tensorrt_rtx" and dev.compute_capability not in RTX_SUPPORTED_CCS:
        out.append(
            Mismatch(
                "compute capability",
                ", ".join(pm.targets),
                f"{dev.name} ({here}), which TensorRT-RTX does not support (use full TensorRT there)",
                rebuild_fixes=False,
            )
        )
    elif here not in pm.targets:
        out.append(Mismatch("compute capability", ", ".join(pm.targets), f"{dev.name} ({here})", True))
    if pm.cuda_major is not None:
        driver = host.cuda.driver_cuda
        if driver is None or driver // 1000 < pm.cuda_major:
            out.append(
                Mismatch(
                    "CUDA driver",
                    f"CUDA {pm.cuda_major}.x (the {pm.flavour} wheel's CUDA)",
                    f"a driver supporting CUDA {format_cuda_version(driver)} (update the NVIDIA driver)",
                    rebuild_fixes=False,
                )
            )
    return out


def check_plan(
    pm: PlanManifest, plan: Path, host: HostSnapshot, *, device: int = 0, check_gpu: bool = True
) -> list[Mismatch]:
    """Every reason `plan` (described by `pm`) cannot run on `host`; [] when it can.

    `check_gpu=False` answers "is it the right build?" only (used right after building, on a GPU-less
    machine, and by the tests of the non-GPU cases).
    """
    out: list[Mismatch] = []
    installed = host.flavours.get(pm.flavour)
    if installed is None:
        have = ", ".join(f"{k} {v}" for k, v in host.flavours.items()) or "no TensorRT"
        out.append(Mismatch("TensorRT flavour", f"{pm.flavour} {pm.tensorrt_version}", have, False))
    elif installed != pm.tensorrt_version:
        # Plans are bound to the exact version (major.minor.patch.build), RTX included.
        out.append(Mismatch("TensorRT version", f"{pm.flavour} {pm.tensorrt_version}", installed, True))
    built = pm.build_host
    if pm.flavour == "tensorrt" and (built.system, built.machine) != (host.system, host.machine):
        out.append(
            Mismatch("platform", f"{built.system} {built.machine}", f"{host.system} {host.machine}", True)
        )
    elif pm.flavour == "tensorrt_rtx" and built.machine != host.machine:
        out.append(Mismatch("CPU architecture", built.machine, host.machine, True))
    onnx = Path(pm.onnx_path)
    if not onnx.is_file():
        out.append(Mismatch("source ONNX", str(onnx), "no such file (the rebuild needs it)", False))
    elif (now := sha256_file(onnx)) != pm.onnx_sha256:
        out.append(
            Mismatch("source ONNX", f"sha256 {pm.onnx_sha256[:12]}", f"{onnx.name} at {now[:12]}", True)
        )
    if not plan.is_file():
        out.append(Mismatch("plan file", pm.plan_file, "no such file", True))
    elif (now := sha256_file(plan)) != pm.plan_sha256:
        out.append(Mismatch("plan file", f"sha256 {pm.plan_sha256[:12]}", f"a plan file at {now[:12]}", True))
    if check_gpu:
        out += _gpu_mismatches(pm, host, device)
    return out


def raise_on_mismatch(
    pm: PlanManifest, plan: Path, host: HostSnapshot, *, device: int = 0, check_gpu: bool = True
) -> None:
    mismatches = check_plan(pm, plan, host, device=device, check_gpu=check_gpu)
    if mismatches:
        raise PlanMismatchError(plan, pm, mismatches)
