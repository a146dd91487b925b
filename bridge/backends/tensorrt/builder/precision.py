"""What precision a strongly typed network computes in, read from the parsed network itself.

With strong typing the ONNX decides precision (TensorRT 11 removed the builder's precision flags), so
the plan manifest records what the graph holds rather than what a flag asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bridge.backends.tensorrt.builder.flavour import Flavour

if TYPE_CHECKING:
    import tensorrt_rtx as trt

__all__ = ["network_precision"]


def network_precision(flavour: Flavour, network: trt.INetworkDefinition) -> str:
    """ "int8"/"fp8"/"int4" when Q/DQ nodes quantize to it, else "fp16"/"bf16" when any layer computes
    in it, else "fp32"."""
    t = flavour.trt
    quantized = {t.DataType.INT8: "int8", t.DataType.FP8: "fp8", t.DataType.INT4: "int4"}
    low = {t.DataType.HALF: "fp16", t.DataType.BF16: "bf16"}
    found_low: str | None = None
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        for j in range(layer.num_outputs):
            dtype = layer.get_output(j).dtype
            if layer.type == t.LayerType.QUANTIZE and dtype in quantized:
                return quantized[dtype]
            found_low = found_low or low.get(dtype)
    return found_low or "fp32"
