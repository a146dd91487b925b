"""Precision on the ONNX, as TensorRT 11 requires: FP16/BF16 mixed-precision graphs and INT8 Q/DQ graphs,
with an accuracy report against FP32. Entry point: `bridge.cli.quantize.quantize`."""
