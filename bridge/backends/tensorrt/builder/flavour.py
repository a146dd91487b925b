"""TensorRT flavours: `tensorrt` (10.x, 11.x) and `tensorrt_rtx` (1.x). Every difference lives here.

The two share one Python API family (same class names); what differs, and how it is handled:

| concern              | tensorrt 10.x          | tensorrt 11.x           | tensorrt_rtx 1.x                 |
|----------------------|------------------------|-------------------------|----------------------------------|
| strong typing        | opt-in flag            | always on, flag ignored | only mode; flag avoids a warning |
| STRONGLY_TYPED value | 1                      | 0                       | 0                                |
| build needs a GPU    | yes (times tactics)    | yes                     | no (CPU-only AOT by default)     |
| GPU targets of plan  | the build GPU's CC     | the build GPU's CC      | list of SMxx set on the config   |
| timing cache         | yes, persisted         | yes, persisted          | no-op; breaks CPU-only builds    |
| header pre-check     | none                   | none                    | Runtime.get_engine_validity      |
| plan portable to OS  | no                     | no                      | yes                              |
| CUDA graphs          | manual stream capture  | manual stream capture   | built-in (runtime config)        |

Flags are always looked up by name (BuilderFlag and NetworkDefinitionCreationFlag were renumbered in 11),
and nothing TensorRT 11 removed is referenced (EXPLICIT_BATCH, precision flags, calibrators,
max_workspace_size, device_memory_size).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import tensorrt_rtx as trt

__all__ = [
    "FLAVOUR_ALIASES",
    "RTX_SUPPORTED_CCS",
    "Flavour",
    "FlavourName",
    "FlavourUnavailable",
    "installed_flavours",
    "load_flavour",
]

FlavourName = Literal["tensorrt", "tensorrt_rtx"]
_MODULES: dict[FlavourName, str] = {"tensorrt": "tensorrt", "tensorrt_rtx": "tensorrt_rtx"}
# What users may type for --flavour.
FLAVOUR_ALIASES: dict[str, FlavourName | None] = {
    "auto": None,
    "tensorrt": "tensorrt",
    "trt": "tensorrt",
    "rtx": "tensorrt_rtx",
    "tensorrt_rtx": "tensorrt_rtx",
    "tensorrt-rtx": "tensorrt_rtx",
}
# TensorRT-RTX support matrix (1.0-1.7): Turing only when requested alone; Hopper and data-centre
# Blackwell are not supported at all (measured: the runtime refuses an H200, CC 9.0).
RTX_SUPPORTED_CCS: tuple[tuple[int, int], ...] = ((7, 5), (8, 0), (8, 6), (8, 9), (12, 0), (12, 1))


class FlavourUnavailable(RuntimeError):
    """The requested TensorRT flavour is not installed (or imports with an error)."""


@dataclass(frozen=True)
class Flavour:
    """One imported TensorRT flavour plus the answers to every question where the flavours differ."""

    name: FlavourName
    trt: Any  # the imported module; typed as tensorrt_rtx at the use sites (same API family)
    version: str

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def is_rtx(self) -> bool:
        return self.name == "tensorrt_rtx"

    @property
    def plan_tag(self) -> str:
        """The flavour's part of a plan's file name: `<stem>.trt.plan`, `<stem>.rtx.plan`."""
        return "rtx" if self.is_rtx else "trt"

    @property
    def builds_without_gpu(self) -> bool:
        return self.is_rtx

    @property
    def supports_timing_cache(self) -> bool:
        # RTX: deprecated no-op since 1.2 that makes the AOT build query a GPU (fails without one).
        return not self.is_rtx

    @property
    def plans_portable_across_os(self) -> bool:
        return self.is_rtx

    @property
    def has_builtin_cuda_graphs(self) -> bool:
        return self.is_rtx

    @property
    def cuda_major(self) -> int | None:
        """The CUDA major the wheel was built for (tensorrt-cu12 / tensorrt-rtx-cu13 ...); the driver must
        support it. None when the package metadata does not say (e.g. a tarball install)."""
        stem = "tensorrt-rtx" if self.is_rtx else "tensorrt"
        for major in (13, 12, 11):
            try:
                importlib.metadata.version(f"{stem}-cu{major}")
            except importlib.metadata.PackageNotFoundError:
                continue
            return major
        return None

    @property
    def parser_version(self) -> str:
        return str(self.trt.get_nv_onnx_parser_version())  # an encoded int; recorded, compared as is

    def network_flags(self) -> int:
        """Creation flags for a strongly typed network (explicit batch is implicit since 10.0)."""
        if self.name == "tensorrt" and self.major >= 11:
            return 0  # strong typing is always on in 11 and the flag is deprecated
        return 1 << int(self.trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)

    def set_targets(self, config: trt.IBuilderConfig, ccs: list[tuple[int, int]] | None) -> None:
        """RTX: compile for these compute capabilities (None: the flavour's default set).

        Full TensorRT has no such list: it builds for the GPU it runs on.
        """
        if ccs is None:
            return
        if not self.is_rtx:
            raise ValueError(
                "--compute-capability applies to tensorrt_rtx only (tensorrt builds for its GPU)"
            )
        members = self.trt.ComputeCapability.__members__
        names = [f"SM{a}{b}" for a, b in ccs]
        unknown = [n for n in names if n not in members]
        if unknown:
            known = sorted(m for m in members if m.startswith("SM"))
            raise ValueError(f"tensorrt_rtx {self.version} cannot target {unknown}; it knows {known}")
        config.num_compute_capabilities = len(names)
        for i, n in enumerate(names):
            config.set_compute_capability(members[n], i)

    def default_targets(self) -> list[tuple[int, int]]:
        """The compute capabilities a plan built without explicit targets runs on."""
        if not self.is_rtx:
            return []  # the build GPU's, filled in by the caller
        members = self.trt.ComputeCapability.__members__
        known = [(int(m[2:-1]), int(m[-1])) for m in members if m.startswith("SM")]
        # The default set is Ampere and later; Turing must be requested alone.
        return sorted(cc for cc in known if cc >= (8, 0) and cc in RTX_SUPPORTED_CCS)

    def header_problems(self, runtime: trt.Runtime, plan: bytes) -> list[str]:
        """RTX's cheap header check (version, CC, driver) before deserializing; [] when fine or n/a."""
        if not self.is_rtx:
            return []
        validity, mask = runtime.get_engine_validity(plan[: runtime.engine_header_size])
        if validity == self.trt.EngineValidity.VALID:
            return []  # untested here: needs a GPU TensorRT-RTX supports
        flags = self.trt.EngineInvalidityDiagnostics.__members__.items()
        reasons = [name.lower().replace("_", " ") for name, v in flags if int(mask) & int(v)]
        return reasons or [f"engine validity {validity.name}"]

    def create_context(self, engine: trt.ICudaEngine, *, builtin_graphs: bool) -> trt.IExecutionContext:
        """A context whose scratch memory the caller supplies (so a slot's tier contexts share one buffer).

        RTX goes through a runtime config, which is also where its built-in CUDA graphs are switched on.
        """
        t = self.trt
        user_managed = t.ExecutionContextAllocationStrategy.USER_MANAGED
        if not self.is_rtx:
            return engine.create_execution_context(user_managed)
        config = engine.create_runtime_config()
        config.set_execution_context_allocation_strategy(user_managed)
        strategy = t.CudaGraphStrategy.WHOLE_GRAPH_CAPTURE if builtin_graphs else t.CudaGraphStrategy.DISABLED
        config.cuda_graph_strategy = strategy
        return engine.create_execution_context(config)


def _import(name: FlavourName) -> Flavour:
    try:
        module = importlib.import_module(_MODULES[name])
    except ImportError as e:
        extra = "tensorrt-rtx" if name == "tensorrt_rtx" else "tensorrt"
        raise FlavourUnavailable(
            f"{name} is not installed here ({e}); `pip install avatar-bridge[{extra}]`"
        ) from e
    return Flavour(name, module, str(module.__version__))


def load_flavour(choice: str = "auto") -> Flavour:
    """Import a flavour by name or alias. "auto": $BRIDGE_TENSORRT_FLAVOUR, else tensorrt, else rtx.

    Full TensorRT wins in auto mode because where it is installed there is a GPU it can build for.
    """
    key = choice.lower()
    if key not in FLAVOUR_ALIASES:
        raise ValueError(f"unknown TensorRT flavour {choice!r}; choose one of {sorted(FLAVOUR_ALIASES)}")
    wanted = FLAVOUR_ALIASES[key]
    if wanted is not None:
        return _import(wanted)
    env = os.environ.get("BRIDGE_TENSORRT_FLAVOUR")
    if env and env.lower() != "auto":
        return load_flavour(env)
    problems = []
    for name in ("tensorrt", "tensorrt_rtx"):
        try:
            return _import(name)
        except FlavourUnavailable as e:
            problems.append(str(e))
    raise FlavourUnavailable("no TensorRT flavour is installed: " + "; ".join(problems))


def installed_flavours() -> list[Flavour]:
    found = []
    for name in ("tensorrt", "tensorrt_rtx"):
        try:
            found.append(_import(name))
        except FlavourUnavailable:
            continue
    return found
