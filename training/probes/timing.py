"""Time Engine.run for a model at given batch sizes: the per-call figure pipelines will see.

    python -m training.probes.timing models/face_expression_small.onnx --batch 1 8
    python -m training.probes.timing models/dance_lstm.onnx --batch 1 8 --time 1

Inputs are random arrays shaped from the manifest (dynamic non-batch dims take --time); the time
includes the engine's input checks and output slicing. Reports median and p90 in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bridge.backends import load_engine
from bridge.runtime.engine import Engine

__all__ = ["main", "time_engine"]


def _random_inputs(engine: Engine, batch: int, steps: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    out: dict[str, np.ndarray] = {}
    for spec in engine.manifest.inputs:
        shape = tuple(
            batch if i == 0 else (d if isinstance(d, int) else steps) for i, d in enumerate(spec.shape)
        )
        if np.issubdtype(np.dtype(spec.dtype), np.integer):
            high = max(len(engine.manifest.styles), 1)
            out[spec.role] = rng.integers(0, high, shape).astype(spec.dtype)
        else:
            out[spec.role] = rng.random(shape, dtype=np.float32).astype(spec.dtype)
    return out


def time_engine(engine: Engine, batch: int, steps: int = 1, seconds: float = 1.0) -> list[float]:
    """Per-call wall times in ms of `engine.run` over about `seconds`, state carried between calls."""
    inputs = _random_inputs(engine, batch, steps)
    state = engine.initial_state(batch)
    for _ in range(5):
        _, state = engine.run(inputs, state)
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(times) < 10:
        t0 = time.perf_counter()
        _, state = engine.run(inputs, state)
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.probes.timing", description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path, help="model .onnx or .manifest.json")
    ap.add_argument("--backend", default="onnxruntime")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--time", type=int, default=1, help="size for dynamic non-batch dims (motion T)")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads (onnxruntime)")
    ap.add_argument("--seconds", type=float, default=2.0, help="measuring time per batch size")
    ns = ap.parse_args(argv)
    options = {"intra_op_threads": ns.threads} if ns.backend == "onnxruntime" else {}
    with load_engine(ns.model, backend=ns.backend, **options) as engine:
        label = "UNTRAINED " if not engine.manifest.trained else ""
        print(f"{label}{engine.manifest.name} on {ns.backend} ({ns.threads} thread(s)), T={ns.time}")
        for batch in ns.batch:
            t = time_engine(engine, batch, ns.time, ns.seconds)
            median, p90 = statistics.median(t), statistics.quantiles(t, n=10)[-1]
            print(f"  batch {batch:3d}: median {median:8.3f} ms  p90 {p90:8.3f} ms  ({len(t)} calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
