"""Backend interface and registry.

The shape follows NVIDIA Polygraphy's `backend/` package: one folder per framework, each with a
`loader.py` of small build steps and a `runner.py` whose runner has an activate / infer / deactivate
lifecycle. Framework modules are imported only when a backend of that kind is created, so a missing
framework never breaks `import bridge`.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import TracebackType
from typing import Any, ClassVar

import numpy as np

from bridge.runtime.manifest import ModelManifest

__all__ = [
    "Backend",
    "BackendUnavailable",
    "ModelRefused",
    "available_backends",
    "create_backend",
    "register_backend",
]


class BackendUnavailable(RuntimeError):
    """The framework behind a backend kind is not installed (or cannot be imported) here."""


class ModelRefused(RuntimeError):
    """A backend refuses to load the model here (a stale TensorRT plan, say); the message says why and
    what fixes it, so it is shown as it is."""


# kind -> "module:Class". Registering a backend is one line here (or one register_backend call).
_REGISTRY: dict[str, str] = {
    "onnxruntime": "bridge.runtime.onnxrt.runner:OnnxRuntimeBackend",
    "torch": "bridge.runtime.torch.runner:TorchBackend",
    "tensorrt": "bridge.runtime.tensorrt.runner:TensorRTBackend",
    "choreographer": "bridge.choreography.backend:ChoreographerBackend",
    "triton": "bridge.runtime.triton.runner:TritonBackend",
}


class Backend(ABC):
    """Runs one model. Lifecycle: construct (cheap) -> activate (load) -> infer ... -> deactivate.

    Subclasses implement `activate_impl`, `deactivate_impl` and `infer`. `infer` takes and returns
    arrays keyed by *tensor name*; roles, slices and state are the Engine's business.
    """

    name: ClassVar[str]
    # Takes image inputs as [N, H, W, 3] uint8 and converts them itself (bridge.runtime.images);
    # otherwise the engine converts them on the host first.
    converts_uint8_images: ClassVar[bool] = False

    def __init__(self, manifest: ModelManifest) -> None:
        self.manifest = manifest
        self._active = False

    @property
    def is_active(self) -> bool:
        return self._active

    def activate(self) -> None:
        if not self._active:
            self.activate_impl()
            self._active = True

    def deactivate(self) -> None:
        if self._active:
            self._active = False
            self.deactivate_impl()

    @abstractmethod
    def activate_impl(self) -> None:
        """Load the model and allocate what inference needs."""

    @abstractmethod
    def deactivate_impl(self) -> None:
        """Release everything activate_impl acquired."""

    @abstractmethod
    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run once. `feeds` holds every graph input by tensor name; returns every output by name."""

    def unready_reason(self) -> str | None:
        """Why the model cannot be served right now (for /readyz), or None. A backend in this process
        is ready once active; a remote one (Triton) asks its server."""
        return None

    def __enter__(self) -> Backend:
        self.activate()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.deactivate()

    def __repr__(self) -> str:
        state = "active" if self._active else "inactive"
        return f"<{type(self).__name__} {self.manifest.name} {state}>"


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
