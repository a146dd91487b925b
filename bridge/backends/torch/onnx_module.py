"""Run an ONNX graph as a PyTorch module: the face-tracking networks on the torch backend.

The converted FaceLandmarker graphs (bridge.models.mediapipe) use a small, known set of ops; each
maps onto one torch call, so the module is a list of nodes executed in order, with the float
initializers as buffers (they follow `.to(device, dtype)`) and the integer ones (shapes, axes, pads)
as Python lists. Shapes are Python ints at run time, so the forward pass captures into a CUDA graph.
An op outside the set is refused when the module is built, naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["OnnxModule"]

Value = Any  # a tensor, or a list of ints (shape arithmetic)


def _conv(m: OnnxModule, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, **a: Any) -> Value:
    top, left, bottom, right = a.get("pads", [0, 0, 0, 0])
    if (top, left) != (bottom, right):
        x = F.pad(x, (left, right, top, bottom))
        top = left = 0
    return F.conv2d(
        x, w, b, a.get("strides", [1, 1]), (top, left), a.get("dilations", [1, 1]), a.get("group", 1)
    )


def _max_pool(m: OnnxModule, x: torch.Tensor, **a: Any) -> Value:
    top, left, bottom, right = a.get("pads", [0, 0, 0, 0])
    if any((top, left, bottom, right)):
        x = F.pad(x, (left, right, top, bottom), value=float("-inf"))
    return F.max_pool2d(x, a["kernel_shape"], a.get("strides", a["kernel_shape"]))


def _pad(m: OnnxModule, x: torch.Tensor, pads: list[int], *_: Any, **a: Any) -> Value:
    n = len(pads) // 2
    flat: list[int] = []
    for axis in reversed(range(n)):  # F.pad wants (last_begin, last_end, ...)
        flat += [pads[axis], pads[axis + n]]
    return F.pad(x, flat)


def _slice(
    m: OnnxModule,
    x: Value,
    starts: list[int],
    ends: list[int],
    axes: list[int] | None = None,
    steps: list[int] | None = None,
) -> Value:
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if isinstance(x, list):
        return x[starts[0] : ends[0] : steps[0]]
    index = [slice(None)] * x.dim()
    for s, e, ax, st in zip(starts, ends, axes, steps, strict=True):
        index[ax] = slice(s, min(e, x.shape[ax]), st)
    return x[tuple(index)]


def _concat(m: OnnxModule, *xs: Value, axis: int) -> Value:
    if all(isinstance(x, list) for x in xs):
        return [v for x in xs for v in x]
    return torch.cat(xs, axis)


def _resize(m: OnnxModule, x: torch.Tensor, *, scales: list[float], **a: Any) -> Value:
    """Linear Resize with half-pixel centres (the converter's only kind), by constant scales."""
    if a.get("mode") != b"linear" or a.get("coordinate_transformation_mode") != b"half_pixel":
        raise ValueError(f"Resize {a} is not supported by the torch backend")
    return F.interpolate(x, scale_factor=tuple(scales[2:]), mode="bilinear", align_corners=False)


def _depth_to_space(m: OnnxModule, x: torch.Tensor, blocksize: int, mode: bytes = b"DCR") -> Value:
    n, c, h, w = x.shape
    r = blocksize
    if mode != b"DCR":
        return F.pixel_shuffle(x, r)  # CRD
    return (
        x.reshape(n, r, r, c // (r * r), h, w)
        .permute(0, 3, 4, 1, 5, 2)
        .reshape(n, c // (r * r), h * r, w * r)
    )


def _reduce(op: Callable[..., torch.Tensor]) -> Callable[..., Value]:
    return lambda m, x, axes, keepdims=1: op(x, dim=tuple(axes), keepdim=bool(keepdims))


_OPS: dict[str, Callable[..., Value]] = {
    "Conv": _conv,
    "MaxPool": _max_pool,
    "Pad": _pad,
    "Slice": _slice,
    "Concat": _concat,
    "Add": lambda m, a, b: a + b,
    "Sub": lambda m, a, b: a - b,
    "Mul": lambda m, a, b: a * b,
    "Div": lambda m, a, b: a / b,
    "Max": lambda m, a, b: torch.maximum(a, b),
    "MatMul": lambda m, a, b: a @ b,
    "Relu": lambda m, x: F.relu(x),
    "PRelu": lambda m, x, slope: F.prelu(x, slope.reshape(-1)),  # per-channel slope (C, 1, 1)
    "Sigmoid": lambda m, x: torch.sigmoid(x),
    "Neg": lambda m, x: -x,
    "Sqrt": lambda m, x: torch.sqrt(x),
    "Reciprocal": lambda m, x: torch.reciprocal(x),
    "Identity": lambda m, x: x,
    "Reshape": lambda m, x, shape: x.reshape(shape),
    "Transpose": lambda m, x, perm: x.permute(perm),
    "Squeeze": lambda m, x, axes: x.squeeze(tuple(axes)),
    "ReduceMean": _reduce(torch.mean),
    "ReduceSum": _reduce(torch.sum),
    "Shape": lambda m, x: list(x.shape),
    "Expand": lambda m, x, shape: x.expand(shape),
    "Resize": _resize,
    "Clip": lambda m, x, lo, hi: torch.clamp(x, lo, hi),
    "DepthToSpace": _depth_to_space,
}


class OnnxModule(nn.Module):
    """`OnnxModule(path)`: forward(*inputs) in the graph's input order returns its outputs in order.
    With `fuse` (the default) the graph is first rewritten to do fewer passes (graph_fusion)."""

    def __init__(self, path: str | Path, fuse: bool = True) -> None:
        super().__init__()
        import onnx
        from onnx import numpy_helper

        from bridge.backends.torch.graph_fusion import fuse as fused

        graph = onnx.load(str(path)).graph
        if fuse:
            graph = fused(graph)
        self._ints: dict[str, list[int]] = {}
        self._buffers_by_name: dict[str, str] = {}
        for k, init in enumerate(graph.initializer):
            array = numpy_helper.to_array(init)
            if np.issubdtype(array.dtype, np.integer):
                self._ints[init.name] = [int(v) for v in np.atleast_1d(array)]
            else:
                buffer = f"w{k}"
                self.register_buffer(buffer, torch.from_numpy(array.astype(np.float32).copy()))
                self._buffers_by_name[init.name] = buffer
        self._inputs = [
            i.name for i in graph.input if i.name not in self._ints and i.name not in self._buffers_by_name
        ]
        self._outputs = [o.name for o in graph.output]
        self._nodes: list[tuple[Callable[..., Value], Sequence[str], str, dict[str, Any]]] = []
        for node in graph.node:
            op = _OPS.get(node.op_type)
            if op is None:
                raise ValueError(
                    f"{Path(path).name}: ONNX op {node.op_type} is not supported by the torch backend"
                )
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            attrs = {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in attrs.items()}
            inputs = list(node.input)
            if node.op_type == "Resize":  # constant scales as Python floats: no device read per call
                scales = next(i for i in graph.initializer if i.name == inputs[2])
                attrs["scales"] = [float(v) for v in numpy_helper.to_array(scales)]
                inputs = inputs[:1]
            self._nodes.append((op, inputs, node.output[0], attrs))

    def _value(self, name: str, env: dict[str, Value]) -> Value:
        if name in env:
            return env[name]
        if name in self._ints:
            return self._ints[name]
        return getattr(self, self._buffers_by_name[name])

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        env: dict[str, Value] = dict(zip(self._inputs, inputs, strict=True))
        for op, names, out, attrs in self._nodes:
            env[out] = op(self, *(self._value(n, env) for n in names if n), **attrs)
        return tuple(env[name] for name in self._outputs)
