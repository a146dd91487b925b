"""TensorRT runner: the Backend lifecycle around one engine and a pool of execution lanes."""

from __future__ import annotations

import queue
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bridge.engine_builder.flavour import installed_flavours
from bridge.engine_builder.host import HostSnapshot
from bridge.runtime.backend import Backend
from bridge.runtime.manifest import ModelManifest
from bridge.runtime.tensorrt.lane import ExecutionLane
from bridge.runtime.tensorrt.loader import LoadedEngine, find_plan, load_engine
from bridge.runtime.tensorrt.tiers import select_tier

__all__ = ["TensorRTBackend"]

if not installed_flavours():
    # The backend registry turns this into BackendUnavailable ("install the extra").
    raise ImportError("neither tensorrt nor tensorrt_rtx is installed")  # untested here: CI has tensorrt_rtx


class TensorRTBackend(Backend):
    """Runs a TensorRT plan of the manifest's model.

    `lanes` is how many batches may run at once (each on its own stream and contexts, sharing the engine's
    weights); `infer` blocks while all are busy. The tier is chosen per batch from the input shapes.
    """

    name = "tensorrt"

    def __init__(
        self,
        manifest: ModelManifest,
        *,
        plan: Path | str | None = None,
        lanes: int = 1,
        cuda_graphs: bool = False,
        rebuild_on_mismatch: bool = False,
        device: int = 0,
        host: HostSnapshot | None = None,
    ) -> None:
        super().__init__(manifest)
        if lanes < 1:
            raise ValueError("lanes must be >= 1")
        self._plan = Path(plan) if plan is not None else None
        self._lane_count = lanes
        self._cuda_graphs = cuda_graphs
        self._rebuild = rebuild_on_mismatch
        self._device = device
        self._host = host
        self._loaded: LoadedEngine | None = None
        self._lanes: list[ExecutionLane] = []
        self._free: queue.SimpleQueue[ExecutionLane] = queue.SimpleQueue()

    @property
    def plan(self) -> Path:
        return self._plan if self._plan is not None else find_plan(self.manifest)

    def activate_impl(self) -> None:
        self._loaded = load_engine(
            self.plan, host=self._host, rebuild_on_mismatch=self._rebuild, device=self._device
        )
        self._lanes = [
            ExecutionLane(self._loaded, cuda_graphs=self._cuda_graphs) for _ in range(self._lane_count)
        ]
        for lane in self._lanes:
            self._free.put(lane)

    def deactivate_impl(self) -> None:
        while not self._free.empty():
            self._free.get_nowait()
        for lane in self._lanes:
            lane.close()
        self._lanes = []
        self._loaded = None  # engine, then runtime, released by refcount in that order

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._loaded is None:
            raise RuntimeError(f"{self!r}: infer() before activate()")
        tier = select_tier(self._loaded.manifest.profiles, {n: tuple(a.shape) for n, a in feeds.items()})
        lane = self._free.get()
        try:
            return lane.run(tier, feeds)
        finally:
            self._free.put(lane)
