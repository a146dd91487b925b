"""ONNX Runtime runner: the Backend lifecycle around one InferenceSession."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnxruntime as ort

from bridge.backends.onnxruntime.loader import (
    Device,
    GraphOptimization,
    create_session,
    select_providers,
    session_options,
)
from bridge.runtime.backend import Backend
from bridge.runtime.manifest import ModelManifest

__all__ = ["OnnxRuntimeBackend"]


class OnnxRuntimeBackend(Backend):
    """Runs the manifest's ONNX file with ONNX Runtime. Batch (and time) sizes follow the feeds."""

    name = "onnxruntime"

    def __init__(
        self,
        manifest: ModelManifest,
        *,
        device: Device = "cpu",
        device_id: int = 0,
        intra_op_threads: int = 1,
        inter_op_threads: int = 1,
        optimization: GraphOptimization = "all",
        allow_spinning: bool = False,
    ) -> None:
        super().__init__(manifest)
        self._options = session_options(
            intra_op_threads=intra_op_threads,
            inter_op_threads=inter_op_threads,
            optimization=optimization,
            allow_spinning=allow_spinning,
        )
        self._providers = select_providers(device, device_id)
        self._session: ort.InferenceSession | None = None
        self._output_names: list[str] = []

    @property
    def providers(self) -> list[str]:
        """Providers the active session actually uses (empty when inactive)."""
        return list(self._session.get_providers()) if self._session is not None else []

    def activate_impl(self) -> None:
        self._session = create_session(self.manifest.onnx_path, self._options, self._providers)
        self._output_names = [o.name for o in self._session.get_outputs()]

    def deactivate_impl(self) -> None:
        self._session = None

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._session is None:
            raise RuntimeError(f"{self!r}: infer() before activate()")
        # ORT wants a real dict; the Engine already passes one, so avoid copying it per call.
        results = self._session.run(self._output_names, feeds if isinstance(feeds, dict) else dict(feeds))
        return dict(zip(self._output_names, results, strict=True))
