"""Load an ONNX file into a strongly typed TensorRT network; parser errors name the node."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.backends.tensorrt.builder.errors import BuildError
from bridge.backends.tensorrt.builder.flavour import Flavour

if TYPE_CHECKING:
    import tensorrt_rtx as trt

__all__ = ["OnnxParseError", "ParsedNetwork", "parse_onnx"]


class OnnxParseError(BuildError):
    """TensorRT's ONNX parser rejected the model. The message lists each failing node."""


@dataclass
class ParsedNetwork:
    """The builder and network, plus the parser: TensorRT needs the parser alive as long as the network."""

    builder: trt.Builder
    network: trt.INetworkDefinition
    parser: trt.OnnxParser


def _describe(err: Any) -> str:
    node = f"node {err.node_name()!r} ({err.node_operator()})" if err.node() >= 0 else "the model"
    return f"{node}: {err.desc()} [{err.code().name}]"


def parse_onnx(flavour: Flavour, onnx_path: Path, logger: trt.ILogger) -> ParsedNetwork:
    t = flavour.trt
    builder = t.Builder(logger)
    network = builder.create_network(flavour.network_flags())
    parser = t.OnnxParser(network, logger)
    # parse_from_file resolves external-data files relative to the model, unlike parse(bytes).
    if not parser.parse_from_file(str(onnx_path)):
        lines = [_describe(parser.get_error(i)) for i in range(parser.num_errors)]
        raise OnnxParseError(
            f"TensorRT {flavour.name} {flavour.version} (ONNX parser {flavour.parser_version}) cannot parse "
            f"{onnx_path.name}:\n  " + "\n  ".join(lines or ["no detail from the parser"])
        )
    if network.num_outputs == 0:
        # protobuf accepts many non-ONNX byte strings as an empty model; say what it really is.
        raise OnnxParseError(f"{onnx_path.name} has no graph outputs: it is empty or not an ONNX model")
    return ParsedNetwork(builder, network, parser)
