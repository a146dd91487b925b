"""Torch runner: the Backend lifecycle around one PyTorch module.

On CUDA every call runs at a batch *tier* (the smallest configured size that fits; rows beyond the
batch are padding whose results are ignored) so each (tier, non-batch shape) has fixed buffers and
one captured CUDA graph: a step is one graph replay instead of hundreds of kernel launches. Inputs go
host -> pinned buffer -> device on a copy stream, compute runs on its own stream after an event, and
outputs come back on the copy stream: the copy engine, not the compute stream, carries the transfers,
so one engine's copies overlap another engine's (or another scheduler thread's) compute.

Batch norm is folded into the convolutions at activation (eval: the same function, fewer kernels).
Every tier's plan is made at load (`profiles`, which `Engine.warmup` runs), not at a session's
first call at that size. With `compile=True` the module also goes through torch.compile (Inductor,
dynamic batch): its kernels inside the same captured graphs, an EMOCA-size call of 64 in `serve` on
an H100 in 6.1 ms instead of 11.4 (docs/scheduling.md section 5), at ~40 s more load time.
Image inputs given as uint8 `[N, H, W, 3]` (bridge.runtime.images) cross as bytes, a quarter of the
float32 planes, and become planes on the device, into the same buffers (and graph) a float32 call uses.

On the CPU the same code runs eagerly at the exact batch (no tiers, graphs, pinned memory or streams):
that is what the CI tests exercise.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from bridge.backends.torch.modules import module_for
from bridge.backends.torch.state_slots import DeviceStateSlots
from bridge.runtime.backend import Backend
from bridge.runtime.engine import Engine
from bridge.runtime.images import SCALE
from bridge.runtime.manifest import ModelManifest, Profile

# How the host waits for a call's results: "block" sleeps until the GPU is done, "spin" polls. CUDA
# spins by default while there are fewer contexts than cores, so with `serve --workers N` every worker
# burns a core per call, and where cores are shared (pinned, or load generators beside) a spinning
# worker keeps the threads that feed the GPU off the CPU (issue 46). Read once, at import.
BLOCKING_WAIT = os.environ.get("AVATAR_BRIDGE_CUDA_WAIT", "block") != "spin"

__all__ = ["Device", "Precision", "TorchBackend", "run_on_device"]

log = logging.getLogger(__name__)

Device = Literal["cpu", "cuda", "auto"]
Precision = Literal["float32", "float16", "bfloat16"]
_PRECISIONS: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}
_HOST_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "int64": torch.int64,
    "int32": torch.int32,
    "uint8": torch.uint8,  # image inputs fed as bytes
}


class _Plan:
    """Fixed buffers for one (tier, non-batch shape): pinned host staging, device inputs and outputs,
    and the captured graph that reads the one and writes the other."""

    def __init__(self, tier: int) -> None:
        self.tier = tier
        self.host_in: dict[str, torch.Tensor] = {}
        self.dev_in: dict[str, torch.Tensor] = {}
        self.dev_out: dict[str, torch.Tensor] = {}
        self.host_out: dict[str, torch.Tensor] = {}
        # Image inputs fed as bytes: [tier, H, W, 3] uint8, made at the first such call.
        self.host_bytes: dict[str, torch.Tensor] = {}
        self.dev_bytes: dict[str, torch.Tensor] = {}
        self.slots_host = torch.empty(0, dtype=torch.int64)
        self.slots_dev = torch.empty(0, dtype=torch.int64)
        self.graph: torch.cuda.CUDAGraph | None = None


class TorchBackend(Backend):
    """Runs the manifest's reference PyTorch module (or `module`) with the manifest's tensor names.

    Inputs of the module's `forward` are the manifest's role input tensors in manifest order, then
    its state inputs; its outputs are the role output tensors (each named once), then state outputs.
    State must be batch-first (batch_axis 0).
    """

    name = "torch"
    converts_uint8_images = True

    def __init__(
        self,
        manifest: ModelManifest,
        *,
        device: Device = "auto",
        precision: Precision | None = None,
        cuda_graphs: bool = True,
        batch_tiers: Sequence[int] | None = None,
        max_batch: int | None = None,
        module: nn.Module | None = None,
        seed: int = 0,
        device_post: bool = False,
        compile: bool = False,
    ) -> None:
        super().__init__(manifest)
        if any(p.batch_axis != 0 for p in manifest.state):
            raise ValueError(f"{manifest.name}: the torch backend needs batch-first state (batch_axis 0)")
        if device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("device='cuda' but torch sees no CUDA device")
        use_cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
        self.device = torch.device("cuda" if use_cuda else "cpu")
        self.precision = _PRECISIONS[precision or ("float16" if use_cuda else "float32")]
        self.cuda_graphs = cuda_graphs and use_cuda
        # The ONNX batch axis is dynamic: the manifest's profiles only set the default top tier (small
        # enough for a CPU warm-up); `max_batch` raises or lowers it on a GPU (bigger calls, fewer of them).
        if max_batch is not None and max_batch < 1:
            raise ValueError(f"{manifest.name}: max_batch must be >= 1, got {max_batch}")
        self.batch_tiers = (
            tuple(sorted(set(batch_tiers)))
            if batch_tiers
            else powers_of_two_up_to(max_batch or max((p.max_batch for p in manifest.profiles), default=1))
        )
        self._module = module
        self._seed = seed
        self.device_post = device_post
        self.compile = compile
        self._role_inputs = list(dict.fromkeys(s.tensor for s in manifest.inputs))
        self._input_dtypes = {s.tensor: s.dtype for s in manifest.inputs}  # the manifest's dtype names
        self._state_inputs = [p.input for p in manifest.state]
        self._state_outputs = [p.output for p in manifest.state]
        self._role_outputs = list(dict.fromkeys(s.tensor for s in manifest.outputs))
        self._channels_last = any(len(s.shape) == 4 for s in manifest.inputs)
        self._net: nn.Module | None = None
        self._eager: nn.Module | None = None  # the module before torch.compile: the fallback
        self._plans: dict[tuple[Any, ...], _Plan] = {}
        self._staging: dict[tuple[str, np.dtype[Any]], torch.Tensor] = {}
        self._copy: torch.cuda.Stream | None = None
        self._compute: torch.cuda.Stream | None = None
        self._pool: Any = None

    # ------------------------------------------------------------------------------- lifecycle
    def activate_impl(self) -> None:
        net = (self._module if self._module is not None else module_for(self.manifest, self._seed)).eval()
        if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in net.modules()):
            # Batch norm folded into the convolution before it, in float32 (torch.fx's eval fusion):
            # a ResNet-50 pass loses a third of its kernels, which bound it at small batches.
            net = _fused_conv_bn(net)
        net = net.to(self.device, self.precision)
        if self._channels_last:
            net = net.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # NHWC: the layout fp16 tensor-core convs want
        self._eager = self._net = net
        if self.compile:
            # Lazy: Inductor compiles at the first call (one dynamic-batch graph, then a little per tier).
            self._net = torch.compile(net, dynamic=True)  # type: ignore[assignment]
        if self.device.type == "cuda":
            torch.backends.cudnn.benchmark = True  # shapes are fixed per tier, so autotuning pays once
            self._copy = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]
            self._compute = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]
            self._pool = torch.cuda.graph_pool_handle()

    def deactivate_impl(self) -> None:
        self._plans.clear()
        self._staging.clear()
        self._net = self._eager = None
        self._copy = self._compute = self._pool = None

    @property
    def profiles(self) -> tuple[Profile, ...]:
        """On CUDA graphs, one profile per batch tier at the manifest's first profile's smallest row
        shapes (the realtime step), so `Engine.warmup` makes every tier's plan at load: a session's
        first call at a new size would otherwise wait for cuDNN's autotuning, the capture and, with
        `compile=True`, Inductor (~1 s a tier). None elsewhere (the manifest's profiles then)."""
        if not self.cuda_graphs or not self.manifest.profiles:
            return ()
        rows = {name: shapes[0][1:] for name, shapes in self.manifest.profiles[0].shapes.items()}
        return tuple(
            Profile(f"tier{tier}", {name: ((tier, *row),) * 3 for name, row in rows.items()})
            for tier in self.batch_tiers
        )

    def create_state_slots(self, engine: Engine) -> DeviceStateSlots:
        return DeviceStateSlots(engine, self)

    @property
    def post_device(self) -> torch.device | None:
        """The device for pipelines' post-processing, with `device_post=True`. Off by default: its fixed
        cost (eager kernel launches, ~3 ms per call on the H200 host) beats numpy only beyond
        ~1000 sessions per call (docs/scheduling.md)."""
        return self.device if self.device_post else None

    # ------------------------------------------------------------------------------- inference
    def staging(self, name: str, shape: Sequence[int], dtype: np.dtype[Any] | None = None) -> np.ndarray:
        """A host array (pinned on CUDA) to assemble role input tensor `name` in (`dtype` np.uint8: an
        image input's bytes): a call whose input is this array copies it to the device directly,
        skipping a host copy into staging (images are large: 0.6 MB each as float32). Valid until the
        next `staging` call for the same name and dtype."""
        kind = np.dtype(dtype if dtype is not None else self._input_dtypes[name])
        size = int(np.prod(shape))
        buffer = self._staging.get((name, kind))
        if buffer is None or buffer.numel() < size:
            buffer = self._staging[name, kind] = torch.empty(
                size, dtype=_HOST_DTYPES[kind.name], pin_memory=self.device.type == "cuda"
            )
        return buffer[:size].numpy().reshape(shape)

    def _staged(self, name: str, array: np.ndarray) -> torch.Tensor | None:
        """`array` as a view of its staging buffer, when it is one (see `staging`)."""
        buffer = self._staging.get((name, array.dtype))
        if buffer is None or array.ctypes.data != buffer.data_ptr() or not array.flags.c_contiguous:
            return None
        return buffer[: array.size].view(array.shape)

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self._run(feeds, None, None, 0, np.empty(0, np.int64))

    def infer_slots(
        self,
        feeds: Mapping[str, np.ndarray],
        slots: DeviceStateSlots,
        index: np.ndarray,
        size: int,
        fresh: np.ndarray,
    ) -> dict[str, np.ndarray]:
        """Like `infer`, but state rows come from (and go back to) `slots` on the device by `index`."""
        return self._run(feeds, slots, index, size, fresh)

    def _run(
        self,
        feeds: Mapping[str, np.ndarray],
        slots: DeviceStateSlots | None,
        index: np.ndarray | None,
        size: int,
        fresh: np.ndarray,
    ) -> dict[str, np.ndarray]:
        if self._net is None:
            raise RuntimeError(f"{self!r}: infer() before activate()")
        batch = len(feeds[self._role_inputs[0]])
        plan = self._plan(batch, feeds)
        staged = [*self._role_inputs, *(self._state_inputs if slots is None else ())]
        fetched = [*self._role_outputs, *(self._state_outputs if slots is None else ())]
        as_bytes = [name for name in self._role_inputs if feeds[name].dtype == np.uint8]
        with torch.no_grad():
            with self._on(self._copy):
                for name in staged:
                    host, dev = plan.host_in, plan.dev_in
                    if name in as_bytes:
                        host, dev = self._byte_buffers(plan, name, feeds[name].shape[1:])
                    source = self._staged(name, feeds[name])
                    if source is None:
                        host[name][:batch].numpy()[...] = feeds[name]
                        source = host[name][:batch]
                    dev[name][:batch].copy_(source, non_blocking=True)
                if index is not None:
                    plan.slots_host[:batch].numpy()[...] = index
                    plan.slots_dev[:batch].copy_(plan.slots_host[:batch], non_blocking=True)
                loaded = self._record(self._copy)
            with self._on(self._compute):
                self._wait(self._compute, loaded)
                for name in as_bytes:  # bytes -> the float32 planes the graph reads
                    planes = plan.dev_in[name][:batch]
                    planes.copy_(plan.dev_bytes[name][:batch].permute(0, 3, 1, 2)).mul_(float(SCALE))
                if slots is not None:
                    slots.prepare(size, fresh)
                    rows = plan.slots_dev[:batch]
                    for name in self._state_inputs:
                        torch.index_select(slots.rows[name], 0, rows, out=plan.dev_in[name][:batch])
                if plan.graph is not None:
                    plan.graph.replay()
                else:
                    plan.dev_out = self._forward(plan.dev_in)
                if slots is not None:
                    for name_in, name_out in zip(self._state_inputs, self._state_outputs, strict=True):
                        slots.rows[name_in].index_copy_(0, rows, plan.dev_out[name_out][:batch])
                computed = self._record(self._compute)
            with self._on(self._copy):
                self._wait(self._copy, computed)
                for name in fetched:
                    plan.host_out[name][:batch].copy_(plan.dev_out[name][:batch], non_blocking=True)
                done = self._record(self._copy, blocking=BLOCKING_WAIT)
            if done is not None:
                done.synchronize()
        return {name: plan.host_out[name][:batch].numpy().copy() for name in fetched}

    def infer_device(self, feeds: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Like `infer`, for inputs already on this backend's device (by tensor name; image inputs as
        float32 planes) and with the outputs left there: no host round trip. The same plans (tiers,
        captured graphs) as `infer`; runs after the work queued on the caller's stream, and the
        caller's stream waits for it. Stateless models only (the face tracker's networks)."""
        if self._net is None:
            raise RuntimeError(f"{self!r}: infer_device() before activate()")
        if self._state_inputs:
            raise ValueError(f"{self.manifest.name}: infer_device runs stateless models only")
        batch = len(feeds[self._role_inputs[0]])
        plan = self._plan(batch, feeds)
        caller = torch.cuda.current_stream(self.device) if self._compute is not None else None
        with torch.no_grad(), self._on(self._compute):
            if self._compute is not None and caller is not None:
                self._compute.wait_stream(caller)
            for name in self._role_inputs:
                plan.dev_in[name][:batch].copy_(feeds[name])
            if plan.graph is not None:
                plan.graph.replay()
            else:
                plan.dev_out = self._forward(plan.dev_in)
        if self._compute is not None and caller is not None:
            caller.wait_stream(self._compute)
        # Copies on the caller's stream (its memory is the caller's to free): the plan's buffers are the
        # next call's, which waits for the caller's stream first.
        with torch.no_grad():
            return {name: plan.dev_out[name][:batch].clone() for name in self._role_outputs}

    def _forward(self, inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        assert self._net is not None
        args = []
        for name in (*self._role_inputs, *self._state_inputs):
            t = inputs[name]
            if t.is_floating_point():
                fmt = torch.channels_last if t.dim() == 4 and self._channels_last else torch.contiguous_format
                t = t.to(self.precision, memory_format=fmt)
            args.append(t)
        out = self._net(*args)
        results = out if isinstance(out, (tuple, list)) else (out,)
        named = dict(zip((*self._role_outputs, *self._state_outputs), results, strict=True))
        # Role outputs leave in float32 (the manifest's dtype); state stays in the compute precision.
        for name in self._role_outputs:
            named[name] = named[name].float().contiguous()
        return named

    # ------------------------------------------------------------------------------- plans
    def tier_for(self, batch: int) -> int:
        """The batch a call of `batch` rows runs at: the next tier on CUDA graphs, else exactly `batch`."""
        if not self.cuda_graphs:
            return batch
        return next((t for t in self.batch_tiers if t >= batch), batch)

    def _byte_buffers(
        self, plan: _Plan, name: str, shape: tuple[int, ...]
    ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """The plan's uint8 host and device buffers for image input `name` ([H, W, 3] rows)."""
        if name not in plan.dev_bytes:
            full = (plan.tier, *shape)
            plan.host_bytes[name] = torch.empty(
                full, dtype=torch.uint8, pin_memory=self.device.type == "cuda"
            )
            plan.dev_bytes[name] = torch.zeros(full, dtype=torch.uint8, device=self.device)
        return plan.host_bytes, plan.dev_bytes

    def _plan(self, batch: int, feeds: Mapping[str, np.ndarray | torch.Tensor]) -> _Plan:
        tier = self.tier_for(batch)
        key = (tier, *(_row_shape(feeds[n]) for n in self._role_inputs))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._new_plan(tier, feeds)
        return plan

    def _new_plan(self, tier: int, feeds: Mapping[str, np.ndarray | torch.Tensor]) -> _Plan:
        pinned = self.device.type == "cuda"
        plan = _Plan(tier)
        shapes = {n: (tier, *_row_shape(feeds[n])) for n in self._role_inputs}
        host_dtypes = {name: _HOST_DTYPES[dtype] for name, dtype in self._input_dtypes.items()}
        for p in self.manifest.state:
            shapes[p.input] = p.zeros_shape(tier)
            host_dtypes[p.input] = _HOST_DTYPES[p.dtype]
        for name, shape in shapes.items():
            plan.host_in[name] = torch.empty(shape, dtype=host_dtypes[name], pin_memory=pinned)
            dev_dtype = self.precision if name in self._state_inputs else host_dtypes[name]
            # Zeros: padding rows compute on whatever the buffer holds, which must stay finite.
            plan.dev_in[name] = torch.zeros(shape, dtype=dev_dtype, device=self.device)
        plan.slots_host = torch.zeros(tier, dtype=torch.int64, pin_memory=pinned)
        plan.slots_dev = torch.zeros(tier, dtype=torch.int64, device=self.device)
        with torch.no_grad(), self._on(self._compute):
            plan.dev_out = self._first_forward(plan)  # also lets cuDNN pick its algorithms
            if self.cuda_graphs:
                plan.graph = self._capture(plan)
        plan.host_out = {
            name: torch.empty(t.shape, dtype=torch.float32, pin_memory=pinned)
            for name, t in plan.dev_out.items()
        }
        return plan

    def _first_forward(self, plan: _Plan) -> dict[str, torch.Tensor]:
        """A new plan's first call; where torch.compile fails (no C++ compiler, an op Inductor lacks)
        the backend says why once and goes on with the eager module."""
        try:
            return self._forward(plan.dev_in)
        except Exception:
            if self._net is self._eager:
                raise
            log.exception("%s: torch.compile failed; running the eager module", self.manifest.name)
            self._net = self._eager
            return self._forward(plan.dev_in)

    def _capture(self, plan: _Plan) -> torch.cuda.CUDAGraph | None:
        assert self._compute is not None
        self._forward(plan.dev_in)
        self._compute.synchronize()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, pool=self._pool, stream=self._compute):
                plan.dev_out = self._forward(plan.dev_in)
        except RuntimeError:
            log.exception(
                "%s: CUDA graph capture failed at batch %d; running eagerly", self.manifest.name, plan.tier
            )
            plan.dev_out = self._forward(plan.dev_in)
            return None
        return graph

    # ------------------------------------------------------------------------------- streams
    @staticmethod
    @contextlib.contextmanager
    def _on(stream: torch.cuda.Stream | None) -> Iterator[None]:
        if stream is None:
            yield
        else:
            with torch.cuda.stream(stream):
                yield

    @staticmethod
    def _record(stream: torch.cuda.Stream | None, blocking: bool = False) -> torch.cuda.Event | None:
        if stream is None:
            return None
        event = torch.cuda.Event(blocking=blocking)  # type: ignore[no-untyped-call]
        event.record(stream)
        return event

    @staticmethod
    def _wait(stream: torch.cuda.Stream | None, event: torch.cuda.Event | None) -> None:
        if stream is not None and event is not None:
            stream.wait_event(event)


def _row_shape(feed: np.ndarray | torch.Tensor) -> tuple[int, ...]:
    """One row's shape as the module takes it: an image fed as [N, H, W, 3] bytes is [3, H, W]."""
    if isinstance(feed, np.ndarray) and feed.dtype == np.uint8:
        return (feed.shape[3], feed.shape[1], feed.shape[2])
    return tuple(feed.shape[1:])


def powers_of_two_up_to(largest: int) -> tuple[int, ...]:
    """The batch tiers up to `largest`: its powers of two and `largest` itself."""
    return tuple(sorted({1 << i for i in range(largest.bit_length()) if 1 << i <= largest} | {largest}))


def _fused_conv_bn(net: nn.Module) -> nn.Module:
    with warnings.catch_warnings():  # the module imports torch.jit's deprecated script_method on load
        warnings.simplefilter("ignore", DeprecationWarning)
        from torch.fx.experimental.optimization import fuse

    try:
        fused: nn.Module = fuse(net)
    except Exception as exc:  # not traceable by torch.fx (data-dependent control flow): run it as it is
        log.warning("%s: batch norm not folded (torch.fx cannot trace it: %s)", type(net).__name__, exc)
        return net
    return fused


def run_on_device(engine: Engine, inputs_by_role: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`Engine.run` for a stateless engine on the torch backend with its inputs on the backend's device:
    roles in, roles out (slices applied, as views), nothing through the host."""
    backend = engine.backend
    if not isinstance(backend, TorchBackend):
        raise TypeError(f"{engine.manifest.name}: run_on_device needs the torch backend, not {backend.name}")
    feeds = {s.tensor: inputs_by_role[s.role] for s in engine.manifest.inputs}
    results = backend.infer_device(feeds)
    return {
        s.role: results[s.tensor] if s.slice is None else results[s.tensor][..., slice(*s.slice)]
        for s in engine.manifest.outputs
    }
