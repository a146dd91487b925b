"""The plan manifest: `<plan>.plan.json` beside each plan, recording what the plan is bound to.

A TensorRT plan only runs on the TensorRT version that built it, on the GPUs it was compiled for, with
a driver that supports its CUDA; loading it anywhere else fails deep inside TensorRT (or, with old
versions, produced garbage: the seed's outage). The manifest lets the loader compare *before*
deserializing, and holds the exact command that rebuilds the plan.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from bridge.runtime.backend import ModelRefused
from bridge.runtime.manifest import Profile

__all__ = [
    "PLAN_MANIFEST_SUFFIX",
    "PLAN_MANIFEST_VERSION",
    "PRECISIONS",
    "BuildHost",
    "PlanManifest",
    "PlanManifestError",
    "Precision",
    "plan_manifest_path",
]

PLAN_MANIFEST_VERSION = 1
PLAN_MANIFEST_SUFFIX = ".json"
# What a plan computes in (the manifest's `precision`) that `serve` can ask for: fp32 is the model's own
# ONNX, the others the ONNX `avatar-bridge quantize` writes (<stem>.<precision>.onnx).
Precision = Literal["fp32", "fp16", "bf16", "int8"]
PRECISIONS: tuple[str, ...] = get_args(Precision)


class PlanManifestError(ValueError, ModelRefused):
    """A plan manifest is missing, unreadable or of an unknown format."""


def plan_manifest_path(plan: Path) -> Path:
    """`face.plan` -> `face.plan.json`."""
    return plan.with_name(plan.name + PLAN_MANIFEST_SUFFIX)


@dataclass(frozen=True)
class BuildHost:
    """The machine that built the plan. GPU fields are None for a GPU-less (RTX ahead-of-time) build."""

    system: str
    machine: str
    gpu_name: str | None = None
    compute_capability: str | None = None  # "8.6"
    driver_release: str | None = None
    driver_cuda: str | None = None  # highest CUDA the driver supports, "13.0"
    runtime_cuda: str | None = None


@dataclass(frozen=True)
class PlanManifest:
    model: str
    plan_file: str  # file name, beside the manifest
    plan_sha256: str
    onnx_path: str  # absolute: what --rebuild-on-mismatch rebuilds from
    onnx_sha256: str
    model_manifest: str | None  # absolute path of the model manifest, when the build had one
    precision: str
    flavour: str
    tensorrt_version: str
    onnx_parser_version: str
    cuda_major: int | None  # of the TensorRT wheel; the driver must support it
    targets: tuple[str, ...]  # compute capabilities the plan runs on, "8.6"
    build_host: BuildHost
    profiles: tuple[Profile, ...]
    static: bool
    workspace_bytes: int | None
    optimization_level: int | None
    timing_cache: str | None
    built_at: str  # ISO 8601, UTC
    build_seconds: float
    rebuild_command: tuple[str, ...] = field(default_factory=tuple)
    format_version: int = PLAN_MANIFEST_VERSION

    @property
    def rebuild_command_line(self) -> str:
        return shlex.join(self.rebuild_command)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["targets"] = list(self.targets)
        d["rebuild_command"] = list(self.rebuild_command)
        d["profiles"] = [
            {"name": p.name, "shapes": {t: [list(s) for s in mm] for t, mm in p.shapes.items()}}
            for p in self.profiles
        ]
        return d

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PlanManifest:
        version = d.get("format_version")
        if version != PLAN_MANIFEST_VERSION:
            raise PlanManifestError(
                f"plan manifest format {version!r} is not readable by this bridge (it reads "
                f"{PLAN_MANIFEST_VERSION})"
            )
        fields = dict(d)
        fields["targets"] = tuple(d["targets"])
        fields["rebuild_command"] = tuple(d["rebuild_command"])
        fields["build_host"] = BuildHost(**d["build_host"])
        fields["profiles"] = tuple(
            Profile(
                name=p["name"],
                shapes={t: (tuple(s[0]), tuple(s[1]), tuple(s[2])) for t, s in p["shapes"].items()},
            )
            for p in d["profiles"]
        )
        return cls(**fields)

    @classmethod
    def read(cls, path: Path) -> PlanManifest:
        """Read the manifest at `path` (or the one beside a plan, given the plan)."""
        if path.suffix != PLAN_MANIFEST_SUFFIX:
            path = plan_manifest_path(path)
        if not path.is_file():
            raise PlanManifestError(f"no plan manifest at {path}: the plan's build is unknown, rebuild it")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return cls.from_dict(raw)
        except PlanManifestError as e:
            raise PlanManifestError(f"{path}: {e}") from None
        except (ValueError, KeyError, TypeError) as e:
            raise PlanManifestError(f"{path}: malformed plan manifest ({e!r}); rebuild the plan") from None
