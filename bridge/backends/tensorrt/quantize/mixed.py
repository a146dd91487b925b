"""FP16 / BF16 mixed precision on the ONNX graph, graph inputs and outputs kept FP32.

What NVIDIA's ModelOpt AutoCast does, reduced to what these models need: nodes of numerically tame op
types compute in the low type; everything else (LSTM/GRU state, normalisations, exp/log/pow, reductions)
stays FP32. A Cast is inserted wherever a tensor crosses between the two, one per tensor and type, right
before its first consumer (or, for graph outputs, right after the producer), so the graph stays
topologically sorted. Initializers read only by low-precision nodes are stored in the low type.

This replaces ONNX Runtime's float16 converter, which on the dance LSTM wrote an unsorted graph that
crashed ONNX Runtime's optimizer, and has no BF16 mode.

BF16 Conv needs ONNX opset 22, so BF16 graphs are converted to opset 22 first. ONNX Runtime's CPU
provider has no BF16 kernels; `emulate_bf16` rewrites a BF16 graph into FP32 compute with every BF16
tensor rounded to BF16 values, which is how the accuracy report measures it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import onnx
import onnx.version_converter
from onnx import TensorProto, helper, numpy_helper

__all__ = ["LOW_PRECISION_OPS", "MixedResult", "convert_mixed", "emulate_bf16", "float_tensors"]

# Op types that run in the low type. Everything else stays FP32.
LOW_PRECISION_OPS = frozenset(
    {
        "Conv", "ConvTranspose", "Gemm", "MatMul", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Add", "Sub",
        "Mul", "GlobalAveragePool", "AveragePool", "MaxPool", "Flatten", "Transpose", "Reshape",
        "Squeeze", "Unsqueeze", "Slice", "Expand",
    }
)  # fmt: skip
# TensorRT-RTX 1.7 fails to build the dance LSTM's time > 1 tier (a Myelin reshape error) when the LSTM's
# sequence input is built in FP16: found by bisection, it takes both the Concat and the nodes feeding the
# recurrent op in FP32 to build. Both only move data, so keeping them FP32 costs little.
_RECURRENT = frozenset({"LSTM", "GRU", "RNN"})
_LOW = {"fp16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}
_BF16_MIN_OPSET = 22


@dataclass(frozen=True)
class MixedResult:
    model: onnx.ModelProto
    low_ops: dict[str, int]  # op type -> nodes computing in the low type
    high_ops: dict[str, int]  # op type -> float nodes kept in FP32


def float_tensors(model: onnx.ModelProto) -> set[str]:
    """Names of every FP32 tensor in the graph (inputs, initializers, constants, inferred intermediates)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    g = inferred.graph
    out = {i.name for i in g.initializer if i.data_type == TensorProto.FLOAT}
    for vi in (*g.input, *g.output, *g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            out.add(vi.name)
    for node in g.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                    out.add(node.output[0])
    return out


def _to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns, rounding to nearest even."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def _low_initializer(init: TensorProto, low: int) -> TensorProto:
    arr = numpy_helper.to_array(init)
    if low == TensorProto.FLOAT16:
        return numpy_helper.from_array(arr.astype(np.float16), init.name)
    t = helper.make_tensor(init.name, TensorProto.BFLOAT16, arr.shape, _to_bf16_bits(arr).tobytes(), raw=True)
    return t


def convert_mixed(model: onnx.ModelProto, precision: str) -> MixedResult:
    if precision not in _LOW:
        raise ValueError(f"mixed precision is fp16 or bf16, not {precision!r}")
    low = _LOW[precision]
    if precision == "bf16" and _opset(model) < _BF16_MIN_OPSET:
        model = onnx.version_converter.convert_version(model, _BF16_MIN_OPSET)
    floats = float_tensors(model)
    g = model.graph
    is_low = [
        n.op_type in LOW_PRECISION_OPS
        and any(i in floats for i in n.input)
        and all(o in floats for o in n.output)
        for n in g.node
    ]
    feeds_recurrent = {i for n in g.node if n.op_type in _RECURRENT for i in n.input}
    is_low = [lo and not feeds_recurrent.intersection(n.output) for n, lo in zip(g.node, is_low, strict=True)]
    # Initializers: store in the low type when every reader computes in it.
    readers: dict[str, list[bool]] = {}
    for node, lo in zip(g.node, is_low, strict=True):
        for i in node.input:
            readers.setdefault(i, []).append(lo)
    inits = {i.name: i for i in g.initializer}
    low_inits = {
        n for n, i in inits.items() if i.data_type == TensorProto.FLOAT and all(readers.get(n, [False]))
    }

    version: dict[tuple[str, int], str] = {}  # (tensor, elem type) -> the name holding it in that type
    for name in [i.name for i in g.input] + list(inits):
        if name in floats:  # node outputs are registered as their producers are rewritten
            version[(name, low if name in low_inits else TensorProto.FLOAT)] = name
    graph_outputs = {o.name for o in g.output}
    nodes: list[onnx.NodeProto] = []

    def as_type(name: str, elem: int) -> str:
        if (name, elem) not in version:
            other = low if elem == TensorProto.FLOAT else TensorProto.FLOAT
            src = version[(name, other)]
            cast = f"{name}__{'fp32' if elem == TensorProto.FLOAT else precision}"
            nodes.append(helper.make_node("Cast", [src], [cast], to=elem, name=f"{cast}__cast"))
            version[(name, elem)] = cast
        return version[(name, elem)]

    low_ops: Counter[str] = Counter()
    high_ops: Counter[str] = Counter()
    for node, lo in zip(g.node, is_low, strict=True):
        want = low if lo else TensorProto.FLOAT
        new = onnx.NodeProto()
        new.CopyFrom(node)
        for k, i in enumerate(node.input):
            if i in floats:
                new.input[k] = as_type(i, want)
        tail: list[onnx.NodeProto] = []
        for k, o in enumerate(node.output):
            if o not in floats:
                continue
            if lo and o in graph_outputs:
                new.output[k] = f"{o}__{precision}"
                tail.append(
                    helper.make_node("Cast", [new.output[k]], [o], to=TensorProto.FLOAT, name=f"{o}__cast")
                )
                version[(o, TensorProto.FLOAT)] = o
            version[(o, want)] = new.output[k]
        nodes.append(new)
        nodes.extend(tail)
        if node.op_type != "Constant" and any(o in floats for o in node.output):
            (low_ops if lo else high_ops)[node.op_type] += 1

    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    del out.graph.value_info[:]  # stale types; TensorRT and ONNX Runtime infer them again
    for k, init in enumerate(out.graph.initializer):
        if init.name in low_inits:
            out.graph.initializer[k].CopyFrom(_low_initializer(init, low))
    onnx.checker.check_model(out)
    return MixedResult(out, dict(low_ops), dict(high_ops))


def _opset(model: onnx.ModelProto) -> int:
    return int(next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")))


def emulate_bf16(model: onnx.ModelProto) -> onnx.ModelProto:
    """The BF16 graph as FP32 compute over BF16-rounded values (for ONNX Runtime's CPU provider).

    BF16 initializers become FP32 holding the same values; each node that produced BF16 now produces FP32
    and is followed by a round trip through BF16, so every stored tensor keeps BF16's precision.
    """
    inferred = onnx.shape_inference.infer_shapes(model)
    bf16 = {
        vi.name for vi in inferred.graph.value_info if vi.type.tensor_type.elem_type == TensorProto.BFLOAT16
    }
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    for k, init in enumerate(g.initializer):
        if init.data_type == TensorProto.BFLOAT16:
            bits = np.frombuffer(init.raw_data, dtype=np.uint16).astype(np.uint32) << 16
            arr = bits.view(np.float32).reshape(tuple(init.dims))
            g.initializer[k].CopyFrom(numpy_helper.from_array(arr, init.name))
    nodes: list[onnx.NodeProto] = []
    for node in g.node:
        new = onnx.NodeProto()
        new.CopyFrom(node)
        rounds = []
        for k, o in enumerate(node.output):
            if o in bf16:
                new.output[k] = f"{o}__emulated"
                rounds += [
                    helper.make_node("Cast", [new.output[k]], [f"{o}__bf16"], to=TensorProto.BFLOAT16),
                    helper.make_node("Cast", [f"{o}__bf16"], [o], to=TensorProto.FLOAT),
                ]
        if node.op_type == "Cast" and new.output[0] != node.output[0]:
            for a in new.attribute:
                if a.name == "to":
                    a.i = TensorProto.FLOAT
        nodes += [new, *rounds]
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    return out
