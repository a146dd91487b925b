"""Triton Python-backend model that runs the model folder's `model.onnx` through ONNX Runtime.

Copied into a model repository as `model.py` by `avatar-bridge triton-repo --runtime python` and run by
Triton's Python backend stub, never imported by the bridge (`triton_python_backend_utils` exists only
inside Triton). Triton hands `execute` every request its dynamic batcher grouped; they are joined on the
batch axis into one ONNX Runtime call and split again, so a group costs one engine call, as in the bridge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args: dict[str, Any]) -> None:
        config = json.loads(args["model_config"])
        folder = Path(args["model_repository"]) / args["model_version"]
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = [i["name"] for i in config["input"]]
        self._outputs = [o["name"] for o in config["output"]]
        self._batched = int(config.get("max_batch_size", 0)) > 0

    def execute(self, requests: list[Any]) -> list[Any]:
        feeds = [
            {name: pb_utils.get_input_tensor_by_name(request, name).as_numpy() for name in self._inputs}
            for request in requests
        ]
        if self._batched and len(feeds) > 1:
            sizes = [len(next(iter(f.values()))) for f in feeds]
            joined = {name: np.concatenate([f[name] for f in feeds]) for name in self._inputs}
            results = self._session.run(self._outputs, joined)
            bounds = np.cumsum([0, *sizes])
            parts = [[r[bounds[i] : bounds[i + 1]] for r in results] for i in range(len(feeds))]
        else:
            parts = [self._session.run(self._outputs, f) for f in feeds]
        return [
            pb_utils.InferenceResponse(
                output_tensors=[
                    pb_utils.Tensor(n, np.ascontiguousarray(a)) for n, a in zip(self._outputs, p, strict=True)
                ]
            )
            for p in parts
        ]

    def finalize(self) -> None:
        self._session = None
