"""Triton benchmark on the CPU default: `serve --backend triton` against the local ONNX Runtime backend.

In one run: a local Triton (training.tools.triton_local: the nvidia-pytriton wheel's server, the
Python backend running ONNX Runtime) hosting the dance model; then for each backend a `serve` process
and 16 motion sessions at 60 FPS from the harness. Per backend: frames lost, end-to-end latency
p50/p99 and the engine time each frame reports (for Triton: the whole gRPC round trip); and the engine
step alone, called directly, at batch 16. Needs a checkout (scripts/install_triton.sh makes the venv).

    python bench/triton.py [--seconds 10] [--sessions 16] [--out bench/results/triton-cpu.json]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from bridge.backends import create_backend
from bridge.backends.triton.repository import write_repository
from bridge.clients.harness.client import BridgeClient
from bridge.clients.harness.process import BridgeProcess
from bridge.clients.harness.run import percentile, run_harness, write_bench_json
from bridge.runtime.manifest import load_manifest
from training.tools.triton_local import LocalTriton

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "models" / "dance_lstm.manifest.json"


def step_ms(backend_kind: str, batch: int, repeats: int, **options: str) -> float:
    manifest = load_manifest(MANIFEST)
    rng = np.random.default_rng(0)
    feeds: dict[str, np.ndarray] = {
        "features": rng.standard_normal((batch, 1, 35)).astype(np.float32),
        "pose_prev": np.zeros((batch, 75), np.float32),
        "style": np.zeros(batch, np.int64),
        "h_in": np.zeros((batch, 2, 256), np.float32),
        "c_in": np.zeros((batch, 2, 256), np.float32),
    }
    with create_backend(backend_kind, manifest, **options) as backend:
        backend.infer(feeds)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            backend.infer(feeds)
            times.append((time.perf_counter() - t0) * 1e3)
    return percentile(times, 50)


def serve_run(serve_args: list[str], sessions: int, seconds: float) -> dict[str, float | int]:
    with BridgeProcess(*serve_args, "--idle-timeout", "60") as bridge:
        client = BridgeClient("127.0.0.1", bridge.request_port, timeout_s=10)
        try:
            report = run_harness(client, "motion", seconds=seconds, sessions=sessions)
        finally:
            client.close()
    latency = [x / 1e6 for t in report.tracks for x in t.latencies_ns]
    engine = [x / 1e3 for t in report.tracks for x in t.engine_us]
    return {
        "frames_received": report.frames_received,
        "frames_lost": report.frames_lost,
        "errors": len(report.errors),
        "latency_ms_p50": percentile(latency, 50),
        "latency_ms_p99": percentile(latency, 99),
        "engine_ms_p50": percentile(engine, 50),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/triton-cpu.json")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="avatar-bridge-triton-"))
    write_repository([load_manifest(MANIFEST)], work / "repository", "python")
    triton = LocalTriton(work / "repository", work, ["dance_lstm"]).start()
    try:
        rows = {
            "onnxruntime (local)": {
                **serve_run([], args.sessions, args.seconds),
                "step_ms_batch16": step_ms("onnxruntime", 16, 200),
            },
            "triton (gRPC, Python backend + ORT)": {
                **serve_run(["--backend", "triton", "--triton-url", triton.url], args.sessions, args.seconds),
                "step_ms_batch16": step_ms("triton", 16, 200, url=triton.url),
            },
        }
    finally:
        triton.stop()
    local, remote = rows.values()
    hop_ms = float(remote["step_ms_batch16"]) - float(local["step_ms_batch16"])
    print(f"{args.sessions} motion sessions at 60 FPS, {args.seconds:g} s each")
    print(f"{'backend':<38} {'lost':>5} {'err':>4} {'p50 ms':>7} {'p99 ms':>7} {'engine':>7} {'step16':>7}")
    for name, r in rows.items():
        print(
            f"{name:<38} {r['frames_lost']:>5} {r['errors']:>4} {r['latency_ms_p50']:>7.2f} "
            f"{r['latency_ms_p99']:>7.2f} {r['engine_ms_p50']:>7.2f} {r['step_ms_batch16']:>7.2f}"
        )
    print(f"the Triton hop adds {hop_ms:.2f} ms per batched step")
    result = {
        "sessions": args.sessions,
        "seconds": args.seconds,
        "rows": rows,
        "triton_hop_ms_per_step": hop_ms,
    }
    write_bench_json(args.out, result)


if __name__ == "__main__":
    main()
