"""Inference backends, one folder per framework, and the registry that names them.

The shape follows NVIDIA Polygraphy's `backend/` package: a folder per framework, each with a loader of
small build steps and a runner with an activate / infer / deactivate lifecycle. A framework is imported
only when a backend of its kind is created, so a missing framework never breaks `import bridge`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from bridge.runtime.backend import Backend, BackendUnavailable
from bridge.runtime.engine import Engine
from bridge.runtime.manifest import ModelManifest, load_manifest, validate_against_onnx

__all__ = ["available_backends", "create_backend", "load_engine", "register_backend"]

# kind -> "module:Class". Registering a backend is one line here (or one register_backend call).
_REGISTRY: dict[str, str] = {
    "onnxruntime": "bridge.backends.onnxruntime.runner:OnnxRuntimeBackend",
    "torch": "bridge.backends.torch.runner:TorchBackend",
    "tensorrt": "bridge.backends.tensorrt.runner:TensorRTBackend",
    "choreographer": "bridge.backends.choreographer.runner:ChoreographerBackend",
    "triton": "bridge.backends.triton.runner:TritonBackend",
}


def register_backend(kind: str, target: str) -> None:
    """Register `kind` as "package.module:ClassName"; the module is imported on first use only."""
    if ":" not in target:
        raise ValueError(f"backend target must be 'module:Class', got {target!r}")
    _REGISTRY[kind] = target


def _load_class(kind: str) -> type[Backend]:
    target = _REGISTRY.get(kind)
    if target is None:
        raise ValueError(f"unknown backend {kind!r}; registered: {sorted(_REGISTRY)}")
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise BackendUnavailable(
            f"backend {kind!r} is not available here: {e} (install its extra, e.g. "
            f"`pip install avatar-bridge[{kind}]`)"
        ) from e
    cls = getattr(module, class_name)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise TypeError(f"{target} is not a Backend subclass")
    return cls


def create_backend(kind: str, manifest: ModelManifest, **options: Any) -> Backend:
    """Create (not activate) a backend of `kind` for `manifest`; options go to its constructor."""
    return _load_class(kind)(manifest, **options)


def available_backends() -> list[str]:
    """Registered kinds whose framework imports here (imports each runner module to find out)."""
    kinds = []
    for kind in sorted(_REGISTRY):
        try:
            _load_class(kind)
        except BackendUnavailable:
            continue
        kinds.append(kind)
    return kinds


def load_engine(
    manifest_or_path: ModelManifest | str | Path,
    backend: str = "onnxruntime",
    warmup: bool = True,
    **options: Any,
) -> Engine:
    """The one engine loader: load the manifest (or the one beside an .onnx), validate it, activate a
    backend of kind `backend`, warm up. `options` go to the backend constructor (e.g.
    `intra_op_threads=2`, `device="cuda"`)."""
    manifest = (
        manifest_or_path if isinstance(manifest_or_path, ModelManifest) else load_manifest(manifest_or_path)
    )
    validate_against_onnx(manifest)
    runner = create_backend(backend, manifest, **options)
    runner.activate()
    engine = Engine(manifest, runner)
    if warmup:
        try:
            engine.warmup()
        except BaseException:
            runner.deactivate()
            raise
    return engine
