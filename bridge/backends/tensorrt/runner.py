"""TensorRT runner: the Backend lifecycle around the model's plans and a pool of execution lanes per plan."""

from __future__ import annotations

import importlib.util
import queue
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bridge.backends.tensorrt.builder.flavour import installed_flavours
from bridge.backends.tensorrt.builder.host import HostSnapshot
from bridge.backends.tensorrt.builder.plan_manifest import PRECISIONS
from bridge.backends.tensorrt.lane import ExecutionLane
from bridge.backends.tensorrt.loader import EngineLoadError, LoadedEngine, find_plans, load_plan
from bridge.backends.tensorrt.tiers import batch_tiers, padded_tier
from bridge.runtime.backend import Backend
from bridge.runtime.cuda import set_device
from bridge.runtime.manifest import ModelManifest, Profile

__all__ = ["TensorRTBackend"]

if not installed_flavours():
    # The backend registry turns this into BackendUnavailable ("install the extra").
    raise ImportError("neither tensorrt nor tensorrt_rtx is installed")  # untested here: CI has tensorrt_rtx


class TensorRTBackend(Backend):
    """Runs the TensorRT plan(s) of the manifest's model.

    One plan holding every tier, or one plan per tier (`build-engine --per-tier`); each plan gets `lanes`
    execution lanes (each its own stream and contexts, sharing the plan's weights), so that many batches
    may run at once; `infer` blocks while all of a plan's lanes are busy. The tier is chosen per batch from
    the input shapes among the plans' own tiers (their manifests), and a batch no tier holds as it is is
    padded to the next tier's batch (zero rows, results dropped). `precision` picks the plans of that
    precision and refuses others; `device_post` offers the GPU to the pipelines' post-processing (torch).
    """

    name = "tensorrt"

    def __init__(
        self,
        manifest: ModelManifest,
        *,
        plan: Path | str | Sequence[Path | str] | None = None,
        lanes: int = 1,
        cuda_graphs: bool = False,
        precision: str | None = None,
        device_post: bool = False,
        rebuild_on_mismatch: bool = False,
        device: int = 0,
        host: HostSnapshot | None = None,
    ) -> None:
        super().__init__(manifest)
        if lanes < 1:
            raise ValueError("lanes must be >= 1")
        if precision is not None and precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
        if device_post and importlib.util.find_spec("torch") is None:
            raise ValueError("device_post needs torch (pip install avatar-bridge[torch])")
        if plan is None:
            self._plans: list[Path] | None = None
        elif isinstance(plan, (str, Path)):
            self._plans = [Path(plan)]
        else:
            self._plans = [Path(p) for p in plan]
        self._lane_count = lanes
        self._cuda_graphs = cuda_graphs
        self._precision = precision
        self.device_post = device_post
        self._rebuild = rebuild_on_mismatch
        self._device = device
        self._host = host
        self._loaded: list[LoadedEngine] = []
        # Every tier of every plan: (its profile, which plan, its profile index in that plan).
        self._tiers: list[tuple[Profile, int, int]] = []
        self._free: list[queue.SimpleQueue[ExecutionLane]] = []
        self._lanes: list[ExecutionLane] = []
        self._thread = threading.local()
        state_in = {p.input: p.batch_axis for p in manifest.state}
        state_out = {p.output: p.batch_axis for p in manifest.state}
        self._in_axes, self._out_axes = state_in, state_out  # other tensors: batch axis 0

    @property
    def plans(self) -> list[Path]:
        return (
            self._plans if self._plans is not None else find_plans(self.manifest, precision=self._precision)
        )

    @property
    def batch_tiers(self) -> tuple[int, ...]:
        """The batch sizes of the loaded plans' tiers (read from the plan manifests; Pipeline.batch_tiers
        cuts calls to them). Empty before activate."""
        return batch_tiers(self.profiles)

    @property
    def profiles(self) -> tuple[Profile, ...]:
        """The loaded plans' tiers (Engine.warmup runs these, not the ONNX manifest's)."""
        return tuple(p for p, _, _ in self._tiers if p.shapes)

    @property
    def post_device(self) -> Any:
        """The torch device for pipelines' post-processing with `device_post=True`, else None."""
        if not self.device_post:
            return None
        import torch  # only here: torch is an optional extra

        return torch.device("cuda", self._device)

    def activate_impl(self) -> None:
        try:
            for plan in self.plans:
                loaded = load_plan(
                    plan, host=self._host, rebuild_on_mismatch=self._rebuild, device=self._device
                )
                if self._precision is not None and loaded.manifest.precision != self._precision:
                    raise EngineLoadError(
                        f"{plan} computes in {loaded.manifest.precision}, not the {self._precision} asked "
                        f"for; build the {self._precision} plan with `avatar-bridge quantize` then "
                        f"`avatar-bridge build-engine` (docs/tensorrt.md)"
                    )
                index = len(self._loaded)
                self._loaded.append(loaded)
                profiles = loaded.manifest.profiles or (Profile("static", {}),)
                self._tiers += [(p, index, i) for i, p in enumerate(profiles)]
                pool: queue.SimpleQueue[ExecutionLane] = queue.SimpleQueue()
                for _ in range(self._lane_count):
                    lane = ExecutionLane(loaded, cuda_graphs=self._cuda_graphs)
                    self._lanes.append(lane)
                    pool.put(lane)
                self._free.append(pool)
        except BaseException:
            self.deactivate_impl()
            raise

    def deactivate_impl(self) -> None:
        self._free = []
        for lane in self._lanes:
            lane.close()
        self._lanes = []
        self._tiers = []
        self._loaded = []  # engines, then runtimes, released by refcount in that order

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not self._loaded:
            raise RuntimeError(f"{self!r}: infer() before activate()")
        if not getattr(self._thread, "device_set", False):
            # The device is per thread in CUDA: make it current on the thread that enqueues (the
            # scheduler's), not only on the one that loaded. Untested on a GPU here (no TensorRT on a GPU
            # anywhere we test); tests count the call against a fake CUDA runtime.
            set_device(self._device)
            self._thread.device_set = True
        shapes = {n: tuple(a.shape) for n, a in feeds.items()}
        first = next(iter(shapes), None)
        rows = shapes[first][self._in_axes.get(first, 0)] if first is not None else 1
        tier, batch = padded_tier([p for p, _, _ in self._tiers], shapes, rows, self._in_axes)
        _, plan, profile = self._tiers[tier]
        if batch > rows:
            feeds = {n: self._pad(a, self._in_axes.get(n, 0), batch) for n, a in feeds.items()}
        pool = self._free[plan]
        lane = pool.get()
        try:
            out = lane.run(profile, feeds)
        finally:
            pool.put(lane)
        if batch > rows:
            out = {n: a[(slice(None),) * self._out_axes.get(n, 0) + (slice(rows),)] for n, a in out.items()}
        return out

    @staticmethod
    def _pad(a: np.ndarray, axis: int, size: int) -> np.ndarray:
        widths = [(0, 0)] * a.ndim
        widths[axis] = (0, size - a.shape[axis])
        return np.pad(a, widths)
