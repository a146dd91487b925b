"""Our own TFLite -> ONNX converter for MediaPipe's networks (the `tflite` package gives the schema).

It covers the built-in ops of the FaceLandmarker's three graphs and of the pose, palm, hand and hand
re-crop graphs of the `mediapipe` 0.10.21 wheel, and writes graphs shaped for ONNX Runtime rather than
a literal copy:
- 4-D activations are kept NCHW end to end (TFLite is NHWC), so convolutions need no transposes; a
  tensor goes back to NHWC only where an op's meaning depends on the layout (reshape, reductions...).
- fp16 weights (`DEQUANTIZE` of constants) are folded to float32 initializers at conversion time.
- PReLU becomes `s * x + (1 - s) * Relu(x)` with both per-channel products as 1x1 depthwise
  convolutions: the same function in ops ONNX Runtime keeps in its blocked NCHWc layout. Its own
  broadcasting PRelu took 40 % of the mesh's CPU time (mesh 25 -> ~12 ms on one core).
- 1x1 convolutions on tensors kept in NHWC (the blendshape MLP-Mixer) become MatMul over the last axis.
- Sparse constants (`DENSIFY`, TFLite's CSR format) are made dense at conversion time.
- Batch is dynamic (axis 0), so the scheduler can batch sessions; constants concatenated with
  activations are expanded to the batch.
- Nodes no output needs (e.g. the pose model's segmentation head when it is not asked for) are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import tflite
from onnx import TensorProto, helper, numpy_helper

OPSET = 18
_TO_NCHW = (0, 3, 1, 2)
_TO_NHWC = (0, 2, 3, 1)
_NHWC_AXIS_IN_NCHW = {0: 0, 1: 2, 2: 3, 3: 1}


class ConversionError(ValueError):
    """The graph uses something this converter does not handle; the message names the op."""


@dataclass(frozen=True)
class InputSpec:
    name: str
    nchw: bool  # the ONNX input is NCHW (a [B,H,W,C] TFLite image); else the TFLite layout
    scale: float = 1.0  # the graph computes x * scale + offset first (e.g. [0,1] -> [-1,1])
    offset: float = 0.0


@dataclass(frozen=True)
class OutputSpec:
    tflite_index: int  # position in the TFLite subgraph's outputs
    name: str
    shape: tuple[int, ...]  # shape after batch
    sigmoid: bool = False


@dataclass
class _Value:
    name: str
    shape: tuple[int, ...]  # the TFLite (NHWC) shape, batch 1
    nchw: bool = False


class _Converter:
    def __init__(self, data: bytes) -> None:
        self.model = tflite.Model.GetRootAsModel(data, 0)
        if self.model.SubgraphsLength() != 1:
            raise ConversionError("only single-subgraph models are supported")
        self.graph = self.model.Subgraphs(0)
        self.values: dict[int, _Value] = {}
        self.consts: dict[int, np.ndarray] = {}
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._uid = 0

    # ------------------------------------------------------------------ helpers
    def fresh(self, hint: str) -> str:
        self._uid += 1
        return f"{hint}_{self._uid}"

    def node(self, op: str, inputs: Sequence[str], hint: str, **attrs: Any) -> str:
        out = self.fresh(hint)
        self.nodes.append(helper.make_node(op, list(inputs), [out], **attrs))
        return out

    def init(self, array: np.ndarray | np.generic, hint: str) -> str:
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def shape_of(self, index: int) -> tuple[int, ...]:
        t = self.graph.Tensors(index)
        return tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()

    def const(self, index: int) -> np.ndarray | None:
        if index in self.consts:
            return self.consts[index]
        t = self.graph.Tensors(index)
        raw = self.model.Buffers(t.Buffer()).DataAsNumpy()
        if isinstance(raw, int) or raw.size == 0:
            return None
        dtype = {
            tflite.TensorType.FLOAT32: np.float32,
            tflite.TensorType.FLOAT16: np.float16,
            tflite.TensorType.INT32: np.int32,
            tflite.TensorType.INT64: np.int64,
        }.get(t.Type())
        if dtype is None:
            raise ConversionError(f"constant {t.Name().decode()} has unsupported type {t.Type()}")
        values = np.asarray(raw).view(dtype)
        sparsity = t.Sparsity()
        array: np.ndarray = (
            values.reshape(self.shape_of(index))
            if sparsity is None
            else _densify(values, sparsity, self.shape_of(index), t.Name().decode())
        )
        self.consts[index] = array
        return array

    def native(self, v: _Value) -> str:
        """The value in TFLite's own layout."""
        return self.node("Transpose", [v.name], "nhwc", perm=list(_TO_NHWC)) if v.nchw else v.name

    def operand(self, index: int, like_nchw: bool) -> str:
        """A value or constant, in NCHW when the other operand of an elementwise op is."""
        c = self.const(index)
        if c is None:
            v = self.values[index]
            if like_nchw and not v.nchw:
                return self.node("Transpose", [v.name], "nchw", perm=list(_TO_NCHW))
            return v.name if like_nchw or not v.nchw else self.native(v)
        c = c.astype(np.float32) if c.dtype == np.float16 else c
        if like_nchw:
            c = c.reshape((1,) * (4 - c.ndim) + c.shape).transpose(_TO_NCHW)
        return self.init(c, "const")

    def activation(self, name: str, fused: int) -> str:
        act = tflite.ActivationFunctionType
        if fused == act.NONE:
            return name
        if fused == act.RELU:
            return self.node("Relu", [name], "relu")
        if fused == act.RELU6:
            return self.node(
                "Clip", [name, self.init(np.float32(0), "lo"), self.init(np.float32(6), "hi")], "relu6"
            )
        raise ConversionError(f"fused activation {fused} is not supported")

    @staticmethod
    def options(op: Any, cls: Any) -> Any:
        table = op.BuiltinOptions()
        opts = cls()
        if table is not None:
            opts.Init(table.Bytes, table.Pos)
        return opts

    def pads(
        self,
        in_hw: tuple[int, ...],
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        dilation: tuple[int, ...],
        padding: int,
    ) -> list[int]:
        if padding == tflite.Padding.VALID:
            return [0, 0, 0, 0]
        before, after = [], []
        for size, k, s, d in zip(in_hw, kernel, stride, dilation, strict=True):
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            before.append(total // 2)
            after.append(total - total // 2)
        return before + after

    # ------------------------------------------------------------------ ops
    def conv(self, op: Any, depthwise: bool) -> _Value:
        x = self.values[op.Inputs(0)]
        w = self.const(op.Inputs(1))
        b = self.const(op.Inputs(2)) if op.InputsLength() > 2 and op.Inputs(2) >= 0 else None
        if w is None:
            raise ConversionError("convolution weights must be constants")
        w = w.astype(np.float32)
        o = self.options(op, tflite.DepthwiseConv2DOptions if depthwise else tflite.Conv2DOptions)
        out_shape = self.shape_of(op.Outputs(0))
        kh, kw = w.shape[1:3]
        stride, dil = (o.StrideH(), o.StrideW()), (o.DilationHFactor(), o.DilationWFactor())
        pads = self.pads(x.shape[1:3], (kh, kw), stride, dil, o.Padding())
        pointwise = not depthwise and kh == kw == 1 and stride == (1, 1) and pads == [0, 0, 0, 0]
        if pointwise and not x.nchw:
            # NHWC 1x1 conv = a matrix product over the channel axis.
            y = self.node("MatMul", [x.name, self.init(w.reshape(w.shape[0], -1).T.copy(), "w")], "mm")
            if b is not None:
                y = self.node("Add", [y, self.init(b.astype(np.float32), "b")], "bias")
            return _Value(self.activation(y, o.FusedActivationFunction()), out_shape, nchw=False)
        xin = x.name if x.nchw else self.node("Transpose", [x.name], "nchw", perm=list(_TO_NCHW))
        if depthwise:
            weight = w.transpose(3, 0, 1, 2)  # [1,kh,kw,C*m] -> [C*m,1,kh,kw]
            group = x.shape[3]
        else:
            weight = w.transpose(0, 3, 1, 2)  # [O,kh,kw,I] -> [O,I,kh,kw]
            group = 1
        inputs = [xin, self.init(weight, "w")]
        if b is not None:
            inputs.append(self.init(b.astype(np.float32), "b"))
        y = self.node(
            "Conv",
            inputs,
            "conv",
            kernel_shape=[kh, kw],
            strides=list(stride),
            dilations=list(dil),
            pads=pads,
            group=group,
        )
        return _Value(self.activation(y, o.FusedActivationFunction()), out_shape, nchw=True)

    def max_pool(self, op: Any) -> _Value:
        x = self.values[op.Inputs(0)]
        o = self.options(op, tflite.Pool2DOptions)
        k, s = (o.FilterHeight(), o.FilterWidth()), (o.StrideH(), o.StrideW())
        pads = self.pads(x.shape[1:3], k, s, (1, 1), o.Padding())
        xin = x.name if x.nchw else self.node("Transpose", [x.name], "nchw", perm=list(_TO_NCHW))
        y = self.node("MaxPool", [xin], "pool", kernel_shape=list(k), strides=list(s), pads=pads)
        return _Value(self.activation(y, o.FusedActivationFunction()), self.shape_of(op.Outputs(0)), True)

    def binary(self, op: Any, onnx_op: str, opts_cls: Any | None) -> _Value:
        a, b = op.Inputs(0), op.Inputs(1)
        layouts = [self.values[i].nchw for i in (a, b) if i in self.values]
        nchw = bool(layouts) and all(layouts) and len(self.shape_of(op.Outputs(0))) == 4
        y = self.node(onnx_op, [self.operand(a, nchw), self.operand(b, nchw)], onnx_op.lower())
        if opts_cls is not None:
            y = self.activation(y, self.options(op, opts_cls).FusedActivationFunction())
        return _Value(y, self.shape_of(op.Outputs(0)), nchw)

    def unary(self, op: Any, onnx_op: str) -> _Value:
        x = self.values[op.Inputs(0)]
        return _Value(self.node(onnx_op, [x.name], onnx_op.lower()), self.shape_of(op.Outputs(0)), x.nchw)

    def prelu(self, op: Any) -> _Value:
        x = self.values[op.Inputs(0)]
        slope = self.const(op.Inputs(1))
        if slope is None:
            raise ConversionError("PRELU slopes must be constants")
        slope = slope.astype(np.float32)
        if x.nchw:
            # s * x + (1 - s) * relu(x) with both per-channel products as 1x1 depthwise convolutions:
            # ONNX Runtime keeps those (and the Add) in its blocked NCHWc layout, where broadcasting
            # Mul/Max/PRelu need a layout round trip each.
            c = slope.size
            scaled = self.depthwise_scale(x.name, slope.ravel(), c)
            kept = self.depthwise_scale(self.node("Relu", [x.name], "relu"), 1 - slope.ravel(), c)
            y = self.node("Add", [kept, scaled], "prelu")
        elif float(slope.max()) <= 1.0:
            y = self.node(
                "Max", [x.name, self.node("Mul", [x.name, self.init(slope, "slope")], "neg")], "prelu"
            )
        else:
            pos = self.node("Mul", [self.node("Relu", [x.name], "relu"), self.init(1 - slope, "keep")], "pos")
            y = self.node("Add", [self.node("Mul", [x.name, self.init(slope, "slope")], "neg"), pos], "prelu")
        return _Value(y, self.shape_of(op.Outputs(0)), x.nchw)

    def depthwise_scale(self, x: str, scale: np.ndarray, channels: int) -> str:
        weight = self.init(scale.reshape(channels, 1, 1, 1).astype(np.float32), "dw")
        return self.node("Conv", [x, weight], "scale", kernel_shape=[1, 1], group=channels)

    def pad(self, op: Any) -> _Value:
        x = self.values[op.Inputs(0)]
        p = self.const(op.Inputs(1))
        if p is None:
            raise ConversionError("PAD amounts must be constants")
        p = p.astype(np.int64)
        if x.nchw:
            p = p[list(_TO_NCHW)]
        pads = np.concatenate([p[:, 0], p[:, 1]])
        y = self.node("Pad", [x.name, self.init(pads, "pads")], "pad")
        return _Value(y, self.shape_of(op.Outputs(0)), x.nchw)

    def concat(self, op: Any) -> _Value:
        o = self.options(op, tflite.ConcatenationOptions)
        ins = [op.Inputs(i) for i in range(op.InputsLength())]
        out_shape = self.shape_of(op.Outputs(0))
        axis = o.Axis() % len(out_shape)
        nchw = all(self.values[i].nchw for i in ins if i in self.values) and len(out_shape) == 4
        if axis == 0:
            raise ConversionError("CONCATENATION along the batch axis is not supported")
        like = next(self.operand(i, nchw) for i in ins if i in self.values)
        names = []
        for i in ins:
            name = self.operand(i, nchw)
            if i not in self.values:  # a constant: one copy per batch row
                c = self.consts[i]
                rest = c.shape[1:] if not nchw else tuple(np.array(c.shape)[list(_TO_NCHW)][1:])
                batch = self.node(
                    "Slice",
                    [
                        self.node("Shape", [like], "shape"),
                        self.init(np.array([0]), "s0"),
                        self.init(np.array([1]), "s1"),
                    ],
                    "batch",
                )
                target = self.node(
                    "Concat", [batch, self.init(np.array(rest, np.int64), "rest")], "tgt", axis=0
                )
                name = self.node("Expand", [name, target], "expand")
            names.append(name)
        onnx_axis = _NHWC_AXIS_IN_NCHW[axis] if nchw else axis
        y = self.node("Concat", names, "concat", axis=onnx_axis)
        return _Value(self.activation(y, o.FusedActivationFunction()), out_shape, nchw)

    def reshape(self, op: Any) -> _Value:
        x = self.values[op.Inputs(0)]
        target = self.shape_of(op.Outputs(0))
        # Keep batch on axis 0: a leading 1 becomes -1; a shape that drops it flattens the rest.
        shape = [-1, *target[1:]] if len(target) > 1 and target[0] == 1 else [-1, int(np.prod(target))]
        y = self.node("Reshape", [self.native(x), self.init(np.array(shape, np.int64), "shape")], "reshape")
        return _Value(y, target, False)

    def transpose(self, op: Any) -> _Value:
        x = self.values[op.Inputs(0)]
        perm = self.const(op.Inputs(1))
        if perm is None or int(perm[0]) != 0:
            raise ConversionError("TRANSPOSE must keep the batch axis first")
        y = self.node("Transpose", [self.native(x)], "transpose", perm=[int(v) for v in perm])
        return _Value(y, self.shape_of(op.Outputs(0)), False)

    def reduce(self, op: Any, onnx_op: str) -> _Value:
        x = self.values[op.Inputs(0)]
        axes = self.const(op.Inputs(1))
        if axes is None:
            raise ConversionError(f"{onnx_op} axes must be constants")
        rank = len(x.shape)
        ax = sorted({int(a) % rank for a in np.atleast_1d(axes)})
        if 0 in ax:
            raise ConversionError(f"{onnx_op} over the batch axis is not supported")
        keep = int(self.options(op, tflite.ReducerOptions).KeepDims())
        y = self.node(
            onnx_op, [self.native(x), self.init(np.array(ax, np.int64), "axes")], "reduce", keepdims=keep
        )
        return _Value(y, self.shape_of(op.Outputs(0)), False)

    def strided_slice(self, op: Any) -> _Value:
        x = self.values[op.Inputs(0)]
        begin, end, strides = (self.const(op.Inputs(i)) for i in (1, 2, 3))
        if begin is None or end is None or strides is None:
            raise ConversionError("STRIDED_SLICE bounds must be constants")
        o = self.options(op, tflite.StridedSliceOptions)
        if o.EllipsisMask() or o.NewAxisMask():
            raise ConversionError("STRIDED_SLICE ellipsis/new-axis masks are not supported")
        starts: list[int] = []
        ends: list[int] = []
        axes: list[int] = []
        steps: list[int] = []
        squeeze: list[int] = []
        big = np.iinfo(np.int64).max
        for axis in range(1, len(begin)):  # axis 0 is the batch: always kept whole
            lo = 0 if o.BeginMask() >> axis & 1 else int(begin[axis])
            hi = big if o.EndMask() >> axis & 1 else int(end[axis])
            if o.ShrinkAxisMask() >> axis & 1:
                hi = lo + 1
                squeeze.append(axis)
            if (lo, hi, int(strides[axis])) != (0, big, 1):
                starts.append(lo)
                ends.append(hi)
                axes.append(axis)
                steps.append(int(strides[axis]))
        y = self.native(x)
        if axes:
            y = self.node(
                "Slice",
                [y, *(self.init(np.array(v, np.int64), "ss") for v in (starts, ends, axes, steps))],
                "slice",
            )
        if squeeze:
            y = self.node("Squeeze", [y, self.init(np.array(squeeze, np.int64), "sq")], "squeeze")
        return _Value(y, self.shape_of(op.Outputs(0)), False)

    def squared_difference(self, op: Any) -> _Value:
        d = self.binary(op, "Sub", None)
        return _Value(self.node("Mul", [d.name, d.name], "sq"), d.shape, d.nchw)

    def rsqrt(self, op: Any) -> _Value:
        s = self.unary(op, "Sqrt")
        return _Value(self.node("Reciprocal", [s.name], "rsqrt"), s.shape, s.nchw)

    def resize_bilinear(self, op: Any) -> _Value:
        x = self.values[op.Inputs(0)]
        o = self.options(op, tflite.ResizeBilinearOptions)
        mode = "align_corners" if o.AlignCorners() else "half_pixel" if o.HalfPixelCenters() else "asymmetric"
        out_shape = self.shape_of(op.Outputs(0))
        xin = x.name if x.nchw else self.node("Transpose", [x.name], "nchw", perm=list(_TO_NCHW))
        # Scales, not sizes: the batch axis stays dynamic (scale 1).
        scales = np.array([1.0, 1.0, out_shape[1] / x.shape[1], out_shape[2] / x.shape[2]], np.float32)
        y = self.node(
            "Resize", [xin, "", self.init(scales, "scales")], "resize", mode="linear",
            coordinate_transformation_mode=mode,
        )  # fmt: skip
        return _Value(y, out_shape, True)

    def depth_to_space(self, op: Any) -> _Value:
        x = self.values[op.Inputs(0)]
        block = self.options(op, tflite.DepthToSpaceOptions).BlockSize()
        xin = x.name if x.nchw else self.node("Transpose", [x.name], "nchw", perm=list(_TO_NCHW))
        # TensorFlow's NHWC depth-to-space orders the channels as ONNX's DCR mode does.
        y = self.node("DepthToSpace", [xin], "d2s", blocksize=block, mode="DCR")
        return _Value(y, self.shape_of(op.Outputs(0)), True)

    def fully_connected(self, op: Any) -> _Value:
        x = self.values[op.Inputs(0)]
        w = self.const(op.Inputs(1))
        b = self.const(op.Inputs(2)) if op.InputsLength() > 2 and op.Inputs(2) >= 0 else None
        if w is None:
            raise ConversionError("FULLY_CONNECTED weights must be constants")
        o = self.options(op, tflite.FullyConnectedOptions)
        out_shape = self.shape_of(op.Outputs(0))
        flat = self.node(
            "Reshape", [self.native(x), self.init(np.array([-1, w.shape[1]], np.int64), "shape")], "flat"
        )
        y = self.node("MatMul", [flat, self.init(w.astype(np.float32).T.copy(), "w")], "fc")
        if b is not None:
            y = self.node("Add", [y, self.init(b.astype(np.float32), "b")], "bias")
        if len(out_shape) != 2:
            shape = np.array([-1, *out_shape[1:]], np.int64)
            y = self.node("Reshape", [y, self.init(shape, "shape")], "unflat")
        return _Value(self.activation(y, o.FusedActivationFunction()), out_shape, False)

    # ------------------------------------------------------------------ driver
    def handlers(self) -> dict[str, Callable[[Any], _Value]]:
        return {
            "CONV_2D": lambda op: self.conv(op, depthwise=False),
            "DEPTHWISE_CONV_2D": lambda op: self.conv(op, depthwise=True),
            "MAX_POOL_2D": self.max_pool,
            "ADD": lambda op: self.binary(op, "Add", tflite.AddOptions),
            "SUB": lambda op: self.binary(op, "Sub", tflite.SubOptions),
            "MUL": lambda op: self.binary(op, "Mul", tflite.MulOptions),
            "DIV": lambda op: self.binary(op, "Div", tflite.DivOptions),
            "SQUARED_DIFFERENCE": self.squared_difference,
            "RELU": lambda op: self.unary(op, "Relu"),
            "LOGISTIC": lambda op: self.unary(op, "Sigmoid"),
            "NEG": lambda op: self.unary(op, "Neg"),
            "SQRT": lambda op: self.unary(op, "Sqrt"),
            "RSQRT": self.rsqrt,
            "PRELU": self.prelu,
            "PAD": self.pad,
            "CONCATENATION": self.concat,
            "RESHAPE": self.reshape,
            "TRANSPOSE": self.transpose,
            "MEAN": lambda op: self.reduce(op, "ReduceMean"),
            "SUM": lambda op: self.reduce(op, "ReduceSum"),
            "STRIDED_SLICE": self.strided_slice,
            "RESIZE_BILINEAR": self.resize_bilinear,
            "DEPTH_TO_SPACE": self.depth_to_space,
            "FULLY_CONNECTED": self.fully_connected,
        }

    def convert(
        self, inputs: Sequence[InputSpec], outputs: Sequence[OutputSpec], name: str
    ) -> onnx.ModelProto:
        graph_inputs = []
        for i, spec in enumerate(inputs):
            index = self.graph.Inputs(i)
            shape = self.shape_of(index)
            dims: list[str | int] = ["batch", *((shape[3], shape[1], shape[2]) if spec.nchw else shape[1:])]
            graph_inputs.append(helper.make_tensor_value_info(spec.name, TensorProto.FLOAT, dims))
            x = spec.name
            if spec.scale != 1.0:
                x = self.node("Mul", [x, self.init(np.float32(spec.scale), "scale")], "scale")
            if spec.offset != 0.0:
                x = self.node("Add", [x, self.init(np.float32(spec.offset), "offset")], "offset")
            self.values[index] = _Value(x, shape, spec.nchw)
        table = self.handlers()
        for k in range(self.graph.OperatorsLength()):
            op = self.graph.Operators(k)
            code = self.model.OperatorCodes(op.OpcodeIndex())
            opname = tflite.utils.opcode2name(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()))
            if opname in ("DEQUANTIZE", "DENSIFY"):
                src = self.const(op.Inputs(0))
                if src is None:
                    raise ConversionError(f"{opname} of a non-constant is not supported")
                self.consts[op.Outputs(0)] = src.astype(np.float32)
                continue
            handler = table.get(opname)
            if handler is None:
                raise ConversionError(f"op {opname} (operator {k}) is not supported")
            self.values[op.Outputs(0)] = handler(op)
        graph_outputs = []
        for out in outputs:
            v = self.values[self.graph.Outputs(out.tflite_index)]
            y = self.node(
                "Reshape", [self.native(v), self.init(np.array([-1, *out.shape], np.int64), "out")], "flat"
            )
            if out.sigmoid:
                y = self.node("Sigmoid", [y], "sigmoid")
            self.nodes.append(helper.make_node("Identity", [y], [out.name]))
            graph_outputs.append(
                helper.make_tensor_value_info(out.name, TensorProto.FLOAT, ["batch", *out.shape])
            )
        nodes, inits = _needed(self.nodes, self.inits, [o.name for o in outputs])
        graph = helper.make_graph(nodes, name, graph_inputs, graph_outputs, inits)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="avatar-bridge tflite_onnx"
        )
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def convert(
    data: bytes, inputs: Sequence[InputSpec], outputs: Sequence[OutputSpec], name: str
) -> onnx.ModelProto:
    """Convert one TFLite flatbuffer (`data`) to an ONNX model with the given inputs and outputs."""
    return _Converter(data).convert(inputs, outputs, name)


def _needed(
    nodes: Sequence[onnx.NodeProto], inits: Sequence[onnx.TensorProto], outputs: Sequence[str]
) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """The nodes (in order) and initializers that the outputs depend on."""
    wanted = set(outputs)
    kept = []
    for node in reversed(nodes):
        if wanted.intersection(node.output):
            kept.append(node)
            wanted.update(i for i in node.input if i)
    return kept[::-1], [t for t in inits if t.name in wanted]


_INDEX_VECTORS = {
    tflite.SparseIndexVector.Int32Vector: tflite.Int32Vector,
    tflite.SparseIndexVector.Uint16Vector: tflite.Uint16Vector,
    tflite.SparseIndexVector.Uint8Vector: tflite.Uint8Vector,
}


def _index_vector(kind: int, table: Any, what: str) -> np.ndarray:
    cls = _INDEX_VECTORS.get(kind)
    if cls is None or table is None:
        raise ConversionError(f"sparse constant {what}: index vector type {kind} is not supported")
    vector = cls()
    vector.Init(table.Bytes, table.Pos)
    return np.asarray(vector.ValuesAsNumpy(), np.int64)


def _densify(values: np.ndarray, sparsity: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    """A TFLite sparse constant (dense and CSR dimensions in the tensor's own order, no blocks) as a
    dense array: each level maps a position of the previous one to its children's positions."""
    order = sparsity.TraversalOrderAsNumpy()
    if sparsity.BlockMapLength() or not np.array_equal(order, np.arange(len(shape))):
        raise ConversionError(f"sparse constant {what}: block or reordered sparsity is not supported")
    flat = np.zeros(int(np.prod(shape)), values.dtype)
    # Per level: the dense flat offset of each stored position, and the stored position of each.
    offsets = np.zeros(1, np.int64)
    stored = np.zeros(1, np.int64)
    for level, size in enumerate(shape):
        meta = sparsity.DimMetadata(level)
        if meta.Format() == tflite.DimensionType.DENSE:
            offsets = (offsets[:, None] * size + np.arange(size)).ravel()
            stored = (stored[:, None] * size + np.arange(size)).ravel()
            continue
        segments = _index_vector(meta.ArraySegmentsType(), meta.ArraySegments(), what)
        indices = _index_vector(meta.ArrayIndicesType(), meta.ArrayIndices(), what)
        counts = segments[stored + 1] - segments[stored]
        children = np.concatenate([np.arange(segments[p], segments[p + 1]) for p in stored.tolist()])
        offsets = np.repeat(offsets, counts) * size + indices[children]
        stored = children
    flat[offsets] = values[stored]
    return flat.reshape(shape)
