"""Rewrites of a converted ONNX graph that make the torch backend do fewer passes over activations.

Our TFLite converter (bridge.models.mediapipe.tflite_onnx) writes PReLU as `s * x + (1 - s) * Relu(x)`
with both products as 1x1 depthwise convolutions, which suits ONNX Runtime's blocked CPU layout. On a
GPU each of those four nodes is a full read and write of the activation, and the face mesh has 69 of
them; its convolutions and element-wise ops are memory-bound there (docs/benchmarks.md, the mesh's
profile). Both rewrites are exact algebra, so outputs change only by rounding:
- that PReLU pattern becomes one `PRelu` node (one kernel);
- a depthwise convolution's bias moves into the bias of the unpadded 1x1 convolution that alone
  reads it (W·(dw(x) + b) + c = W·dw(x) + (W·b + c)), so the depthwise convolution adds no bias pass.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

__all__ = ["fuse"]

_SLOPE_TOLERANCE = 1e-6  # how far the two branch scales may sum from 1 and still be one PReLU


def fuse(graph: onnx.GraphProto) -> onnx.GraphProto:
    """A copy of `graph` with both rewrites applied wherever they match exactly."""
    out = onnx.GraphProto()
    out.CopyFrom(graph)
    _fuse_prelu(out)
    _fold_depthwise_bias(out)
    return out


class _Index:
    """Producers, consumers and constants of a graph, for matching a node's neighbourhood."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.producer = {o: n for n in graph.node for o in n.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for n in graph.node:
            for i in n.input:
                self.consumers[i].append(n)
        self.constants = {i.name: i for i in graph.initializer}
        self.outputs = {o.name for o in graph.output}

    def only_reader(self, name: str, node: onnx.NodeProto) -> bool:
        """Whether `node` is the one reader of `name` (so the value can disappear into it)."""
        return name not in self.outputs and [id(n) for n in self.consumers[name]] == [id(node)]

    def array(self, name: str) -> np.ndarray | None:
        init = self.constants.get(name)
        return None if init is None else numpy_helper.to_array(init)

    def attrs(self, node: onnx.NodeProto) -> dict[str, Any]:
        return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _depthwise_weight(index: _Index, node: onnx.NodeProto | None) -> np.ndarray | None:
    """The constant weight (C, 1, kh, kw) of a depthwise Conv (one filter per channel), else None."""
    if node is None or node.op_type != "Conv":
        return None
    w = index.array(node.input[1])
    if w is None or w.shape[1] != 1 or index.attrs(node).get("group") != w.shape[0]:
        return None
    return w


def _channel_scale(index: _Index, node: onnx.NodeProto | None) -> np.ndarray | None:
    """The per-channel scale of a bias-free 1x1 depthwise Conv (its weight, shape (C,)), else None."""
    w = _depthwise_weight(index, node)
    if node is None or w is None or len(node.input) != 2 or w.shape[2:] != (1, 1):
        return None
    a = index.attrs(node)
    if any(a.get("pads", [0])) or list(a.get("strides", [1, 1])) != [1, 1]:
        return None
    return w.reshape(-1).astype(np.float32)


def _fuse_prelu(graph: onnx.GraphProto) -> None:
    index = _Index(graph)
    drop: set[int] = set()
    replace: dict[int, onnx.NodeProto] = {}
    for add in graph.node:
        if add.op_type != "Add" or len(add.input) != 2:
            continue
        a, b = (index.producer.get(i) for i in add.input)
        for kept, scaled in ((a, b), (b, a)):
            k, s = _channel_scale(index, kept), _channel_scale(index, scaled)
            if kept is None or scaled is None or k is None or s is None:
                continue
            relu = index.producer.get(kept.input[0])
            if relu is None or relu.op_type != "Relu" or relu.input[0] != scaled.input[0]:
                continue
            if k.shape != s.shape or float(np.abs(k + s - 1.0).max()) > _SLOPE_TOLERANCE:
                continue
            if not all(
                index.only_reader(n.output[0], r) for n, r in ((relu, kept), (kept, add), (scaled, add))
            ):
                continue
            slope = f"{add.output[0]}/prelu_slope"
            graph.initializer.append(numpy_helper.from_array(s.reshape(-1, 1, 1), slope))
            replace[id(add)] = onnx.helper.make_node("PRelu", [scaled.input[0], slope], [add.output[0]])
            drop |= {id(relu), id(kept), id(scaled)}
            break
    nodes = [replace.get(id(n), n) for n in graph.node if id(n) not in drop]
    del graph.node[:]
    graph.node.extend(nodes)


def _fold_depthwise_bias(graph: onnx.GraphProto) -> None:
    index = _Index(graph)
    for dw in graph.node:
        if len(dw.input) != 3 or _depthwise_weight(index, dw) is None:
            continue
        bias = index.array(dw.input[2])
        if bias is None:
            continue
        readers = index.consumers[dw.output[0]]
        if len(readers) != 1 or dw.output[0] in index.outputs:
            continue
        pw = readers[0]
        pw_w = index.array(pw.input[1]) if pw.op_type == "Conv" and len(pw.input) == 3 else None
        pw_b = index.array(pw.input[2]) if pw_w is not None else None
        a = index.attrs(pw)
        if pw_w is None or pw_b is None or pw_w.shape[2:] != (1, 1) or a.get("group", 1) != 1:
            continue
        if any(a.get("pads", [0])):  # a padded border would miss the bias
            continue
        folded = pw_b.astype(np.float64) + pw_w[:, :, 0, 0].astype(np.float64) @ bias.astype(np.float64)
        name = f"{pw.output[0]}/folded_bias"
        graph.initializer.append(numpy_helper.from_array(folded.astype(np.float32), name))
        pw.input[2] = name
        del dw.input[2]
