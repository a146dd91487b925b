"""INT8 explicit quantization: symmetric Q/DQ from calibration data with the entropy (KL) method.

ONNX Runtime's static quantizer does the work (`QuantFormat.QDQ`, `CalibrationMethod.Entropy`, the
calibration the seeds' TensorRT IInt8EntropyCalibrator2 did). Settings are TensorRT's requirements:
symmetric INT8 activations and weights (zero point 0), per-channel weights, and biases left in FP32
(TensorRT's parser refuses the INT32 bias DequantizeLinear that ONNX Runtime writes by default).
Only Conv, Gemm and MatMul are quantized: the ops INT8 kernels speed up. LSTM stays FP32.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx

from bridge.backends.tensorrt.quantize.mixed import float_tensors

__all__ = ["INT8_OPS", "int8_op_split", "quantize_int8"]

log = logging.getLogger(__name__)

INT8_OPS = ("Conv", "Gemm", "MatMul")
_QDQ = {"QuantizeLinear", "DequantizeLinear", "Constant"}


def quantize_int8(fp32: Path, out: Path, calibration: list[dict[str, np.ndarray]]) -> None:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class _Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._it: Iterator[dict[str, np.ndarray]] = iter(calibration)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._it, None)

    chatter = io.StringIO()
    with contextlib.redirect_stdout(chatter):  # the calibrator prints its histogram settings
        quantize_static(
            str(fp32),
            str(out),
            _Reader(),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
            calibrate_method=CalibrationMethod.Entropy,
            op_types_to_quantize=list(INT8_OPS),
            extra_options={"ActivationSymmetric": True, "WeightSymmetric": True, "QuantizeBias": False},
        )
    log.debug("onnxruntime quantizer: %s", chatter.getvalue().strip())


def int8_op_split(model: onnx.ModelProto) -> tuple[dict[str, int], dict[str, int]]:
    """(ops that read dequantized INT8 inputs, float ops that do not) by op type."""
    dequantized = {o for n in model.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    floats = float_tensors(model)
    low: Counter[str] = Counter()
    high: Counter[str] = Counter()
    for n in model.graph.node:
        if n.op_type in _QDQ or not any(o in floats for o in n.output):
            continue  # Q/DQ plumbing and shape arithmetic are not "computing in" a precision
        if n.op_type in INT8_OPS and any(i in dequantized for i in n.input):
            low[n.op_type] += 1
        else:
            high[n.op_type] += 1
    return dict(low), dict(high)
