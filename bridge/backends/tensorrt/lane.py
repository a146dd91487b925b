"""One execution lane: a CUDA stream, one execution context per tier, fixed device and pinned buffers.

A lane serves one batch at a time. Several lanes share the engine (its weights) and run concurrently on
their own streams, so one lane's copies overlap another's compute. Within a lane the tier contexts
run strictly one after another on the lane's stream, which is what lets them share one scratch buffer
(TensorRT forbids sharing only between contexts that may run at the same time). Each context is bound to
its tier once, so the hot path never switches profiles. Buffers are sized for the largest shape any tier
allows and their addresses never change, which keeps captured CUDA graphs valid.

Not executed by any test here: everything below `_Buffers.allocate` needs a GPU that TensorRT runs on
(see docs/tensorrt.md, "What no test executes"); tests/test_tensorrt_runtime.py drives it with a fake
TensorRT and a fake CUDA runtime instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from bridge.backends.tensorrt.builder.dims import to_tuple
from bridge.backends.tensorrt.loader import LoadedEngine
from bridge.runtime.cuda import (
    DeviceBuffer,
    GraphExec,
    PinnedBuffer,
    Stream,
    capture_graph,
    copy_device_to_host,
    copy_host_to_device,
)

if TYPE_CHECKING:
    import tensorrt_rtx as trt

__all__ = ["ExecutionLane"]

Shape = tuple[int, ...]


def _nbytes(shape: Shape, dtype: np.dtype[Any]) -> int:
    return int(np.prod(shape, dtype=np.int64)) * dtype.itemsize


class ExecutionLane:
    def __init__(self, loaded: LoadedEngine, *, cuda_graphs: bool) -> None:
        self._loaded = loaded
        engine = loaded.engine
        flavour = loaded.flavour
        t = flavour.trt
        self._names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        self._inputs = [n for n in self._names if engine.get_tensor_mode(n) == t.TensorIOMode.INPUT]
        self._outputs = [n for n in self._names if n not in self._inputs]
        self._dtypes = {n: np.dtype(t.nptype(engine.get_tensor_dtype(n))) for n in self._names}
        # RTX captures graphs itself (runtime config); full TensorRT needs manual stream capture.
        builtin = cuda_graphs and flavour.has_builtin_cuda_graphs
        self._capture = cuda_graphs and not flavour.has_builtin_cuda_graphs
        self.stream = Stream()
        tiers = engine.num_optimization_profiles
        self._contexts = [flavour.create_context(engine, builtin_graphs=builtin) for _ in range(tiers)]
        scratch = max(engine.get_device_memory_size_for_profile_v2(i) for i in range(tiers))
        self._scratch = DeviceBuffer(scratch)
        sizes = dict.fromkeys(self._names, 0)
        for i, ctx in enumerate(self._contexts):
            ctx.set_optimization_profile_async(i, self.stream.handle)
            ctx.set_device_memory(self._scratch.ptr, scratch)
            for name in self._inputs:
                biggest = to_tuple(engine.get_tensor_profile_shape(name, i)[2])
                ctx.set_input_shape(name, biggest)
                sizes[name] = max(sizes[name], _nbytes(biggest, self._dtypes[name]))
            ctx.infer_shapes()
            for name in self._outputs:
                sizes[name] = max(
                    sizes[name], _nbytes(to_tuple(ctx.get_tensor_shape(name)), self._dtypes[name])
                )
        self._device = {n: DeviceBuffer(sizes[n]) for n in self._names}
        self._host = {n: PinnedBuffer(sizes[n]) for n in self._names}
        for ctx in self._contexts:
            for n in self._names:
                ctx.set_tensor_address(n, self._device[n].ptr)
        self._shapes: list[dict[str, Shape]] = [{} for _ in self._contexts]
        self._graphs: dict[tuple[int, tuple[Shape, ...]], GraphExec | None] = {}
        self.stream.synchronize()

    def _set_shapes(self, tier: int, ctx: trt.IExecutionContext, feeds: Mapping[str, np.ndarray]) -> bool:
        """Set changed input shapes on the tier's context; True when any changed."""
        current = self._shapes[tier]
        changed = False
        for name in self._inputs:
            shape = tuple(feeds[name].shape)
            if current.get(name) != shape:
                if not ctx.set_input_shape(name, shape):
                    raise ValueError(f"input {name!r}: shape {list(shape)} is outside the plan's tier {tier}")
                current[name] = shape
                changed = True
        if changed:
            ctx.infer_shapes()
        return changed

    def _execute(self, ctx: trt.IExecutionContext) -> None:
        if not ctx.execute_async_v3(self.stream.handle):
            raise RuntimeError("TensorRT enqueue failed (see the bridge.tensorrt log)")

    def _enqueue(self, tier: int, ctx: trt.IExecutionContext, key: tuple[Shape, ...]) -> None:
        if not self._capture:
            self._execute(ctx)
            return
        graph_key = (tier, key)
        if graph_key not in self._graphs:
            # One plain run first so deferred shape/profile work is not captured (as trtexec does).
            self._execute(ctx)
            self.stream.synchronize()
            self._graphs[graph_key] = capture_graph(
                self.stream, lambda: bool(ctx.execute_async_v3(self.stream.handle))
            )
            return
        graph = self._graphs[graph_key]
        if graph is None:  # the engine cannot be captured: plain enqueue for this shape
            self._execute(ctx)
        else:
            graph.launch(self.stream)

    def run(self, tier: int, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        ctx = self._contexts[tier]
        self._set_shapes(tier, ctx, feeds)
        for name in self._inputs:
            arr = feeds[name]
            host = self._host[name].view(self._dtypes[name], arr.shape)
            np.copyto(host, arr, casting="same_kind")
            copy_host_to_device(self._device[name], self._host[name], host.nbytes, self.stream)
        self._enqueue(tier, ctx, tuple(self._shapes[tier][n] for n in self._inputs))
        views = {}
        for name in self._outputs:
            shape = to_tuple(ctx.get_tensor_shape(name))
            views[name] = self._host[name].view(self._dtypes[name], shape)
            copy_device_to_host(self._host[name], self._device[name], views[name].nbytes, self.stream)
        self.stream.synchronize()
        # Copies: the pinned buffers are reused by the next batch on this lane.
        return {name: v.copy() for name, v in views.items()}

    def close(self) -> None:
        for graph in self._graphs.values():
            if graph is not None:
                graph.close()
        self._graphs.clear()
        self._contexts.clear()  # contexts before the memory they use
        for buf in (*self._device.values(), *self._host.values(), self._scratch):
            buf.close()
        self.stream.close()
