"""Find a model's plan, check it against this machine, deserialize it (Polygraphy's loader steps)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.engine_builder.flavour import Flavour, installed_flavours, load_flavour
from bridge.engine_builder.host import HostSnapshot, snapshot
from bridge.engine_builder.plan_manifest import PlanManifest
from bridge.engine_builder.rebuild import checked_plan
from bridge.engine_builder.trtlog import recent_errors, trt_logger
from bridge.paths import plan_dir
from bridge.runtime.cuda import set_device
from bridge.runtime.manifest import ModelManifest

if TYPE_CHECKING:
    import tensorrt_rtx as trt

__all__ = ["EngineLoadError", "LoadedEngine", "find_plan", "load_engine"]


class EngineLoadError(RuntimeError):
    """The plan passed the manifest check but TensorRT still refused it; the message has TensorRT's reason."""


@dataclass
class LoadedEngine:
    flavour: Flavour
    runtime: trt.Runtime  # must outlive the engine
    engine: trt.ICudaEngine
    manifest: PlanManifest
    plan: Path


def find_plan(model: ModelManifest, flavours: list[Flavour] | None = None) -> Path:
    """`<stem>.trt.plan` or `<stem>.rtx.plan` beside the model's ONNX, then where `build-engine` puts plans
    of read-only (installed) models (bridge.paths.plan_dir), for the installed flavours in order."""
    flavours = installed_flavours() if flavours is None else flavours
    stem = model.onnx_path.stem
    folders = dict.fromkeys([model.onnx_path.parent, plan_dir(model.onnx_path, model.onnx_sha256)])
    tried = [folder / f"{stem}.{f.plan_tag}.plan" for folder in folders for f in flavours]
    for plan in tried:
        if plan.is_file():
            return plan
    looked = ", ".join(str(p) for p in tried) or "nowhere (no TensorRT flavour installed)"
    raise FileNotFoundError(
        f"no TensorRT plan for {model.name}; looked for {looked}. Build one with "
        f"`avatar-bridge build-engine {model.path}`"
    )


def load_engine(
    plan: Path, *, host: HostSnapshot | None = None, rebuild_on_mismatch: bool = False, device: int = 0
) -> LoadedEngine:
    """Check the plan manifest first (a mismatch raises PlanMismatchError naming each difference), then let
    the flavour's header check and TensorRT itself have their say."""
    pm = checked_plan(plan, host or snapshot(), rebuild_on_mismatch=rebuild_on_mismatch, device=device)
    flavour = load_flavour(pm.flavour)
    data = plan.read_bytes()
    set_device(device)
    runtime = flavour.trt.Runtime(trt_logger(flavour))
    recent_errors()
    problems = flavour.header_problems(runtime, data)
    if problems:
        raise EngineLoadError(
            f"{flavour.name} {flavour.version} refuses {plan.name}: {', '.join(problems)} "
            f"({'; '.join(recent_errors()) or 'no detail'}). Rebuild with:\n  {pm.rebuild_command_line}"
        )
    # Untested here, to the end of this function: it needs a GPU that TensorRT runs on (docs/tensorrt.md).
    engine = runtime.deserialize_cuda_engine(data)  # returns None on failure; the reason goes to the logger
    if engine is None:
        raise EngineLoadError(
            f"{flavour.name} {flavour.version} could not deserialize {plan.name}: "
            f"{'; '.join(recent_errors()) or 'no detail'}. Rebuild with:\n  {pm.rebuild_command_line}"
        )
    return LoadedEngine(flavour, runtime, engine, pm, plan)
