"""The torch backend's graph rewrites (bridge.backends.torch.graph_fusion) on small graphs built here in
the shapes our TFLite converter writes: what they match, what they leave, and that the module computes
what ONNX Runtime computes on the graph as written. The real mesh through both backends is
tests/test_face_tracking.py::test_torch_backend_runs_the_converted_networks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from bridge.backends.torch.graph_fusion import fuse

torch = pytest.importorskip("torch")
from bridge.backends.torch.onnx_module import OnnxModule  # noqa: E402  (needs torch)

C = 4


def _graph(slopes_sum_to_one: bool = True, relu_read_twice: bool = False) -> onnx.ModelProto:
    """x -> Conv 3x3 -> PReLU as the converter writes it -> depthwise 3x3 -> 1x1 -> + PReLU's output."""
    rng = np.random.default_rng(0)
    slope = rng.uniform(0.05, 0.3, C).astype(np.float32)
    keep = (1 - slope) if slopes_sum_to_one else (1.2 - slope)
    consts = {
        "w0": rng.normal(size=(C, C, 3, 3)),
        "b0": rng.normal(size=C),
        "keep": keep.reshape(C, 1, 1, 1),
        "slope": slope.reshape(C, 1, 1, 1),
        "wd": rng.normal(size=(C, 1, 3, 3)),
        "bd": rng.normal(size=C),
        "wp": rng.normal(size=(C, C, 1, 1)),
        "bp": rng.normal(size=C),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c0"], ["r"]),
        helper.make_node("Conv", ["r", "keep"], ["kept"], kernel_shape=[1, 1], group=C),
        helper.make_node("Conv", ["c0", "slope"], ["scaled"], kernel_shape=[1, 1], group=C),
        helper.make_node("Add", ["kept", "scaled"], ["p"]),
        helper.make_node("Conv", ["p", "wd", "bd"], ["d"], group=C, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["d", "wp", "bp"], ["q"]),
        helper.make_node("Add", ["p", "q"], ["y"]),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", C, 8, 8])]
    if relu_read_twice:
        outputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, ["n", C, 8, 8]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", C, 8, 8])],
        outputs,
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _ops(graph: onnx.GraphProto) -> list[str]:
    return [n.op_type for n in graph.node]


def test_the_converters_prelu_becomes_one_node_and_the_depthwise_bias_moves() -> None:
    graph = fuse(_graph().graph)
    assert _ops(graph) == ["Conv", "PRelu", "Conv", "Conv", "Add"]
    depthwise, pointwise = graph.node[2], graph.node[3]
    assert len(depthwise.input) == 2  # no bias of its own
    assert pointwise.input[2].endswith("folded_bias")


def test_near_misses_are_left_as_written() -> None:
    assert "PRelu" not in _ops(fuse(_graph(slopes_sum_to_one=False).graph))  # not a PReLU
    assert "PRelu" not in _ops(fuse(_graph(relu_read_twice=True).graph))  # its Relu is read elsewhere


@pytest.mark.parametrize("kind", ["prelu", "not a prelu", "relu read twice"])
def test_the_module_computes_what_onnx_runtime_computes(kind: str, tmp_path: Path) -> None:
    model = _graph(slopes_sum_to_one=kind != "not a prelu", relu_read_twice=kind == "relu read twice")
    path = tmp_path / "g.onnx"
    onnx.save(model, str(path))
    x = np.random.default_rng(1).normal(size=(3, C, 8, 8)).astype(np.float32)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    with torch.no_grad():
        got = OnnxModule(path)(torch.from_numpy(x))
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-4)
