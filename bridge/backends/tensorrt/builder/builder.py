"""ONNX (+ model manifest) -> TensorRT plan + plan manifest, as a few composable steps.

The steps mirror Polygraphy's loaders: parse the network, make the config (tiers, workspace, targets,
timing cache, progress monitor), build the serialized plan, write the plan and its manifest. Each step
is a plain function; `build_engine` runs them in order for one `BuildRequest`.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from bridge.backends.tensorrt.builder.errors import BuildError
from bridge.backends.tensorrt.builder.flavour import Flavour, load_flavour
from bridge.backends.tensorrt.builder.host import HostSnapshot, snapshot
from bridge.backends.tensorrt.builder.network import parse_onnx
from bridge.backends.tensorrt.builder.plan_manifest import BuildHost, PlanManifest, plan_manifest_path
from bridge.backends.tensorrt.builder.precision import network_precision
from bridge.backends.tensorrt.builder.profiles import (
    apply_profiles,
    check_profiles,
    network_inputs,
    select_profiles,
)
from bridge.backends.tensorrt.builder.progress import PhaseBars, progress_monitor
from bridge.backends.tensorrt.builder.timing_cache import attach_timing_cache, save_timing_cache
from bridge.backends.tensorrt.builder.trtlog import recent_errors, trt_logger
from bridge.paths import plan_dir
from bridge.runtime.cuda import format_compute_capability, format_cuda_version
from bridge.runtime.manifest import (
    ModelManifest,
    Profile,
    load_manifest,
    manifest_path_for,
    sha256_file,
    validate_against_onnx,
)

if TYPE_CHECKING:
    import tensorrt_rtx as trt

__all__ = ["BuildRequest", "BuildResult", "build_engine", "resolve_source"]

log = logging.getLogger(__name__)

_FLAVOUR_FLAG = {"tensorrt": "tensorrt", "tensorrt_rtx": "rtx"}


@dataclass(frozen=True)
class BuildRequest:
    """Everything `avatar-bridge build-engine` takes; `rebuild_command` turns it back into that command."""

    source: Path  # an .onnx file or a model manifest (.manifest.json)
    out_dir: Path | None = None  # default: bridge.paths.plan_dir (beside the ONNX, or the user cache)
    flavour: str = "auto"
    profile_flags: tuple[str, ...] = ()
    tiers: tuple[str, ...] = ()
    per_tier: bool = False
    workspace_bytes: int | None = None
    timing_cache: Path | None = None
    compute_capabilities: tuple[tuple[int, int], ...] | None = None
    optimization_level: int | None = None
    progress: bool = True
    progress_file: IO[str] | None = field(default=None, compare=False)

    def rebuild_command(self, flavour: Flavour, out_dir: Path) -> tuple[str, ...]:
        cmd = ["avatar-bridge", "build-engine", str(self.source.resolve())]
        cmd += ["--flavour", _FLAVOUR_FLAG[flavour.name], "--out", str(out_dir.resolve())]
        for p in self.profile_flags:
            cmd += ["--profile", p]
        for t in self.tiers:
            cmd += ["--tier", t]
        if self.per_tier:
            cmd.append("--per-tier")
        if self.workspace_bytes is not None:
            cmd += ["--workspace", str(self.workspace_bytes)]
        if self.timing_cache is not None:
            cmd += ["--timing-cache", str(self.timing_cache.resolve())]
        for cc in self.compute_capabilities or ():
            cmd += ["--compute-capability", format_compute_capability(cc)]
        if self.optimization_level is not None:
            cmd += ["--opt-level", str(self.optimization_level)]
        return tuple(cmd)


@dataclass(frozen=True)
class BuildResult:
    plan: Path
    manifest_path: Path
    manifest: PlanManifest


def resolve_source(source: Path) -> tuple[Path, ModelManifest | None]:
    """(ONNX path, model manifest or None) for an ONNX file or a model manifest."""
    if not source.exists():
        raise BuildError(f"no such file: {source}")
    if source.name.endswith(".json"):
        manifest = load_manifest(source)
        return manifest.onnx_path, manifest
    if source.suffix != ".onnx":
        raise BuildError(f"{source}: expected an .onnx file or a model manifest (.manifest.json)")
    beside = manifest_path_for(source)
    return source.resolve(), load_manifest(beside) if beside.is_file() else None


def _build_host(host: HostSnapshot) -> BuildHost:
    dev = host.device(0)
    return BuildHost(
        system=host.system,
        machine=host.machine,
        gpu_name=dev.name if dev else None,
        compute_capability=format_compute_capability(dev.compute_capability) if dev else None,
        driver_release=host.cuda.driver_release,
        driver_cuda=format_cuda_version(host.cuda.driver_cuda),
        runtime_cuda=format_cuda_version(host.cuda.runtime_cuda),
    )


def _targets(flavour: Flavour, request: BuildRequest, build_host: BuildHost) -> tuple[str, ...]:
    if flavour.is_rtx:
        ccs = request.compute_capabilities or flavour.default_targets()
        return tuple(format_compute_capability(cc) for cc in ccs)
    if build_host.compute_capability is None:
        raise BuildError(
            f"{flavour.name} {flavour.version} builds for the GPU it runs on, and this machine has none; "
            "build with --flavour rtx (TensorRT-RTX compiles without a GPU) or on the target machine"
        )
    return (build_host.compute_capability,)


def _configure(
    flavour: Flavour, builder: trt.Builder, request: BuildRequest
) -> tuple[trt.IBuilderConfig, trt.ITimingCache | None]:
    config = builder.create_builder_config()
    if request.workspace_bytes is not None:
        config.set_memory_pool_limit(flavour.trt.MemoryPoolType.WORKSPACE, request.workspace_bytes)
    if request.optimization_level is not None:
        config.builder_optimization_level = request.optimization_level
    ccs = list(request.compute_capabilities) if request.compute_capabilities else None
    try:
        flavour.set_targets(config, ccs)
    except ValueError as e:
        raise BuildError(str(e)) from None
    cache = attach_timing_cache(flavour, config, request.timing_cache)
    return config, cache


def _build_one(
    flavour: Flavour,
    request: BuildRequest,
    onnx_path: Path,
    onnx_sha256: str,
    manifest: ModelManifest | None,
    profiles: list[Profile],
    out_dir: Path,
    plan_name: str,
    host: HostSnapshot,
) -> BuildResult:
    started = time.perf_counter()
    parsed = parse_onnx(flavour, onnx_path, trt_logger(flavour))
    check_profiles(profiles, network_inputs(parsed.network))
    config, cache = _configure(flavour, parsed.builder, request)
    static = apply_profiles(flavour, parsed.builder, parsed.network, config, profiles)
    bars = PhaseBars(file=request.progress_file, disable=not request.progress)
    monitor = progress_monitor(flavour, bars)  # must outlive the build
    config.progress_monitor = monitor
    recent_errors()
    try:
        serialized = parsed.builder.build_serialized_network(parsed.network, config)
    finally:
        bars.close()
    if serialized is None:
        reasons = "\n  ".join(recent_errors() or ["TensorRT gave no reason; run with -v for its full log"])
        raise BuildError(f"{flavour.name} {flavour.version} failed to build {onnx_path.name}:\n  {reasons}")
    if cache is not None and request.timing_cache is not None:
        save_timing_cache(config, request.timing_cache)  # untested here: full TensorRT builds need a GPU
    out_dir.mkdir(parents=True, exist_ok=True)
    plan = out_dir / plan_name
    data = memoryview(cast(bytes, serialized))  # IHostMemory is a buffer; the generated stubs do not say so
    plan.write_bytes(data)
    build_host = _build_host(host)
    pm = PlanManifest(
        model=manifest.name if manifest else onnx_path.stem,
        plan_file=plan.name,
        plan_sha256=hashlib.sha256(data).hexdigest(),
        onnx_path=str(onnx_path),
        onnx_sha256=onnx_sha256,
        model_manifest=str(manifest.path) if manifest else None,
        precision=network_precision(flavour, parsed.network),
        flavour=flavour.name,
        tensorrt_version=flavour.version,
        onnx_parser_version=flavour.parser_version,
        cuda_major=flavour.cuda_major,
        targets=_targets(flavour, request, build_host),
        build_host=build_host,
        profiles=tuple(profiles),
        static=static,
        workspace_bytes=request.workspace_bytes,
        optimization_level=request.optimization_level,
        timing_cache=str(request.timing_cache.resolve())
        if cache is not None and request.timing_cache
        else None,
        built_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        build_seconds=round(time.perf_counter() - started, 3),
        rebuild_command=request.rebuild_command(flavour, out_dir),
    )
    manifest_path = pm.write(plan_manifest_path(plan))
    log.info("built %s in %.2f s (%s, %d tiers)", plan, pm.build_seconds, pm.precision, len(profiles))
    return BuildResult(plan, manifest_path, pm)


def build_engine(request: BuildRequest, *, host: HostSnapshot | None = None) -> list[BuildResult]:
    """Build one plan (or one per tier with `per_tier`); returns what was written."""
    flavour = load_flavour(request.flavour)
    host = host or snapshot()
    onnx_path, manifest = resolve_source(request.source)
    if manifest is not None:
        validate_against_onnx(manifest)
    # Hashed once for every tier; a pinned manifest hash was just checked against the file.
    onnx_sha256 = (
        manifest.onnx_sha256 if manifest is not None and manifest.onnx_sha256 else sha256_file(onnx_path)
    )
    profiles = select_profiles(manifest, request.profile_flags, request.tiers)
    out_dir = request.out_dir or plan_dir(onnx_path, onnx_sha256)
    tag = flavour.plan_tag
    if not request.per_tier or not profiles:
        name = f"{onnx_path.stem}.{tag}.plan"
        return [_build_one(flavour, request, onnx_path, onnx_sha256, manifest, profiles, out_dir, name, host)]
    results = []
    for i, p in enumerate(profiles):
        # Each tier's rebuild command names just that tier, so a stale tier is rebuilt alone.
        if request.profile_flags:
            one = replace(request, profile_flags=(request.profile_flags[i],))
        else:
            one = replace(request, tiers=(p.name,))
        name = f"{onnx_path.stem}.{p.name}.{tag}.plan"
        results.append(_build_one(flavour, one, onnx_path, onnx_sha256, manifest, [p], out_dir, name, host))
    return results
