"""`avatar-bridge doctor`: what this machine can build and run, and whether each plan can load here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bridge.backends.tensorrt.builder.compat import PlanMismatchError
from bridge.backends.tensorrt.builder.flavour import RTX_SUPPORTED_CCS
from bridge.backends.tensorrt.builder.host import HostSnapshot, snapshot
from bridge.backends.tensorrt.builder.plan_manifest import PlanManifestError
from bridge.backends.tensorrt.builder.rebuild import checked_plan
from bridge.runtime.cuda import format_compute_capability, format_cuda_version

__all__ = ["PlanStatus", "Report", "diagnose", "render"]


@dataclass(frozen=True)
class PlanStatus:
    plan: Path
    ok: bool
    reasons: tuple[str, ...] = ()
    rebuild_command: str | None = None


@dataclass(frozen=True)
class Report:
    host: HostSnapshot
    backends: dict[str, str]  # backend kind -> "yes" or why not
    plans: list[PlanStatus] = field(default_factory=list)


def _backends(host: HostSnapshot) -> dict[str, str]:
    out = {"onnxruntime": "yes (CPU)"}
    if not host.flavours:
        out["tensorrt"] = "no: neither tensorrt nor tensorrt_rtx is installed"
    elif not host.cuda.has_gpu:
        out["tensorrt"] = f"no: {host.cuda.problem or 'no GPU'} (plans can still be built with tensorrt_rtx)"
    else:
        runnable = []
        for dev in host.cuda.devices:
            if "tensorrt" in host.flavours or dev.compute_capability in RTX_SUPPORTED_CCS:
                runnable.append(dev.name)
        out["tensorrt"] = (
            f"yes on {', '.join(runnable)}"
            if runnable
            else "no: tensorrt_rtx does not support these GPUs' compute capability (install full tensorrt)"
        )
    return out


def diagnose(folder: Path, *, rebuild_on_mismatch: bool = False, host: HostSnapshot | None = None) -> Report:
    host = host or snapshot()
    plans = []
    for plan in sorted(folder.glob("*.plan")):
        try:
            checked_plan(plan, host, rebuild_on_mismatch=rebuild_on_mismatch)
            plans.append(PlanStatus(plan, True))
        except PlanMismatchError as e:
            plans.append(
                PlanStatus(plan, False, tuple(str(m) for m in e.mismatches), e.manifest.rebuild_command_line)
            )
        except PlanManifestError as e:
            plans.append(PlanStatus(plan, False, (str(e),)))
    return Report(host, _backends(host), plans)


def render(report: Report) -> str:
    h = report.host
    lines = ["TensorRT:"]
    lines += [f"  {name} {version}" for name, version in h.flavours.items()] or ["  not installed"]
    c = h.cuda
    lines.append("CUDA:")
    lines.append(
        f"  driver: {c.driver_release or 'none'} (supports CUDA {format_cuda_version(c.driver_cuda) or '-'})"
    )
    lines.append(f"  runtime (cuda-python): {format_cuda_version(c.runtime_cuda) or 'none'}")
    lines.append("GPUs:")
    if not c.has_gpu:
        lines.append(f"  none: this machine has no usable NVIDIA GPU ({c.problem})")
    for d in c.devices:
        lines.append(
            f"  {d.index}: {d.name}, compute capability {format_compute_capability(d.compute_capability)}, "
            f"{d.total_memory / 2**30:.0f} GiB"
        )
    lines.append("Backends that can run here:")
    lines += [f"  {kind}: {state}" for kind, state in report.backends.items()]
    lines.append("Plans:")
    if not report.plans:
        lines.append("  none found")
    for p in report.plans:
        lines.append(f"  {p.plan.name}: {'can load' if p.ok else 'cannot load'}")
        lines += [f"    - {r}" for r in p.reasons]
        if p.rebuild_command:
            lines.append(f"    rebuild: {p.rebuild_command}")
    return "\n".join(lines)
