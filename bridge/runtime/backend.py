"""The backend interface: what every framework's runner offers the Engine.

The registry that names the runners lives in bridge.backends.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import TracebackType
from typing import ClassVar

import numpy as np

from bridge.runtime.manifest import ModelManifest

__all__ = [
    "Backend",
    "BackendUnavailable",
    "ModelRefused",
]


class BackendUnavailable(RuntimeError):
    """The framework behind a backend kind is not installed (or cannot be imported) here."""


class ModelRefused(RuntimeError):
    """A backend refuses to load the model here (a stale TensorRT plan, say); the message says why and
    what fixes it, so it is shown as it is."""




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
