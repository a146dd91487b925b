"""Find a model's plan, check it against this machine, deserialize it (Polygraphy's loader steps)."""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.backends.tensorrt.builder.flavour import Flavour, installed_flavours, load_flavour
from bridge.backends.tensorrt.builder.host import HostSnapshot, snapshot
from bridge.backends.tensorrt.builder.plan_manifest import PlanManifest, PlanManifestError
from bridge.backends.tensorrt.builder.rebuild import checked_plan
from bridge.backends.tensorrt.builder.trtlog import recent_errors, trt_logger
from bridge.paths import plan_dir
from bridge.runtime.backend import ModelRefused
from bridge.runtime.cuda import set_device
from bridge.runtime.manifest import ModelManifest, sha256_file

if TYPE_CHECKING:
    import tensorrt_rtx as trt

__all__ = ["EngineLoadError", "LoadedEngine", "find_plans", "load_plan"]


class EngineLoadError(ModelRefused):
    """The plan passed the manifest check but TensorRT still refused it; the message has TensorRT's reason."""


@dataclass
class LoadedEngine:
    flavour: Flavour
    runtime: trt.Runtime  # must outlive the engine
    engine: trt.ICudaEngine
    manifest: PlanManifest
    plan: Path


def _plan_folders(model: ModelManifest, stem: str) -> list[Path]:
    """Beside the model's ONNX, then where `build-engine` puts plans of read-only (installed) models
    (bridge.paths.plan_dir, keyed by the hash of the ONNX the plan is built from)."""
    onnx = model.onnx_path.with_name(f"{stem}.onnx")
    if onnx == model.onnx_path:
        sha = model.onnx_sha256
    elif onnx.is_file():  # a precision variant (`quantize` writes <stem>.<precision>.onnx beside it)
        sha = sha256_file(onnx)
    else:
        return [model.onnx_path.parent]
    return list(dict.fromkeys([model.onnx_path.parent, plan_dir(onnx, sha)]))


def _tier_plans(folder: Path, stem: str, tag: str) -> list[Path]:
    """`build-engine --per-tier` plans of `<stem>.onnx` in `folder`: `<stem>.<tier>.<tag>.plan`. A
    `<stem>.<x>.<tag>.plan` whose manifest names another ONNX (the whole plan of `<stem>.fp16.onnx`) is not
    one; a plan whose manifest cannot be read is kept, so loading refuses it with the reason."""
    suffix = f".{tag}.plan"
    found = []
    for plan in sorted(folder.glob(f"{glob.escape(stem)}.*{suffix}")):
        if "." in plan.name[len(stem) + 1 : -len(suffix)]:
            continue
        try:
            if Path(PlanManifest.read(plan).onnx_path).stem != stem:
                continue
        except PlanManifestError:
            pass
        found.append(plan)
    return found


def find_plans(
    model: ModelManifest, flavours: list[Flavour] | None = None, precision: str | None = None
) -> list[Path]:
    """The plans that serve `model`: `<stem>.trt.plan` or `<stem>.rtx.plan` (one plan, every tier), else
    the per-tier plans `<stem>.<tier>.<tag>.plan`, beside the ONNX, then in bridge.paths.plan_dir, for the
    installed flavours in order. `precision` (fp16, bf16, int8) looks for the plans of the quantized
    ONNX `<stem>.<precision>.onnx` instead."""
    flavours = installed_flavours() if flavours is None else flavours
    stem = model.onnx_path.stem if precision in (None, "fp32") else f"{model.onnx_path.stem}.{precision}"
    tried = []
    for folder in _plan_folders(model, stem):
        for f in flavours:
            whole = folder / f"{stem}.{f.plan_tag}.plan"
            if whole.is_file():
                return [whole]
            tiered = _tier_plans(folder, stem, f.plan_tag)
            if tiered:
                return tiered
            tried += [str(whole), str(folder / f"{stem}.<tier>.{f.plan_tag}.plan")]
    looked = ", ".join(tried) or "nowhere (no TensorRT flavour installed)"
    source = model.path if stem == model.onnx_path.stem else model.onnx_path.with_name(f"{stem}.onnx")
    raise FileNotFoundError(
        f"no TensorRT plan for {model.name}; looked for {looked}. Build one with "
        f"`avatar-bridge build-engine {source}`"
    )


def load_plan(
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
