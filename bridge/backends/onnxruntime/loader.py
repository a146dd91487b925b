"""Small composable steps that build an ONNX Runtime session (Polygraphy's loader idea)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import onnxruntime as ort

__all__ = ["Device", "GraphOptimization", "create_session", "select_providers", "session_options"]

log = logging.getLogger(__name__)

Device = Literal["cpu", "cuda", "auto"]
GraphOptimization = Literal["disable", "basic", "extended", "all"]

_OPT_LEVELS: dict[str, ort.GraphOptimizationLevel] = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def session_options(
    *,
    intra_op_threads: int = 1,
    inter_op_threads: int = 1,
    optimization: GraphOptimization = "all",
    allow_spinning: bool = False,
) -> ort.SessionOptions:
    """Session options for a bridge engine.

    One intra-op thread by default: the bridge hosts many engines (one per model, several sessions each)
    on machines with as few as 2 cores, and per-engine thread pools would oversubscribe them. Spinning
    worker threads are off for the same reason (they burn a core while idle between 60 Hz ticks).
    """
    if intra_op_threads < 1 or inter_op_threads < 1:
        raise ValueError("thread counts must be >= 1")
    so = ort.SessionOptions()
    so.intra_op_num_threads = intra_op_threads
    so.inter_op_num_threads = inter_op_threads
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = _OPT_LEVELS[optimization]
    spin = "1" if allow_spinning else "0"
    so.add_session_config_entry("session.intra_op.allow_spinning", spin)
    so.add_session_config_entry("session.inter_op.allow_spinning", spin)
    so.log_severity_level = 3  # errors only: ORT warns about every unused initializer otherwise
    return so


def select_providers(device: Device = "cpu", device_id: int = 0) -> list[str | tuple[str, dict[str, str]]]:
    """Execution providers in priority order. "cuda" requires the CUDA EP; "auto" uses it if present."""
    available = ort.get_available_providers()
    has_cuda = "CUDAExecutionProvider" in available
    if device == "cuda" and not has_cuda:
        raise RuntimeError(f"device='cuda' needs onnxruntime-gpu; available providers: {available}")
    providers: list[str | tuple[str, dict[str, str]]] = []
    if device in ("cuda", "auto") and has_cuda:
        providers.append(("CUDAExecutionProvider", {"device_id": str(device_id)}))
    providers.append("CPUExecutionProvider")
    return providers


def create_session(
    onnx_path: Path,
    options: ort.SessionOptions,
    providers: Sequence[str | tuple[str, dict[str, str]]],
) -> ort.InferenceSession:
    session = ort.InferenceSession(str(onnx_path), sess_options=options, providers=list(providers))
    log.debug("onnxruntime session for %s on %s", onnx_path.name, session.get_providers())
    return session
