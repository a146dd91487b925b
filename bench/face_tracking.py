"""Face tracking on the CPU default: one 640x480 stream, the bridge's tracker vs MediaPipe's own.

The clip is the demo's (bridge.media.face_video: a real face photo that sways, nods, zooms and
tilts) at 640x480, 30 FPS. Per frame, in the same process and interleaved so both see the same
machine load:
- bridge: the face-tracking pipeline's work for one frame (prepare: detect only when not tracking,
  crop; run_batch: mesh + blendshapes through ONNX Runtime, head pose; finish_batch: filters, frame
  encoding), ONNX Runtime with the bridge's default of one intra-op thread;
- MediaPipe: FaceLandmarker.detect_for_video (VIDEO mode, blendshapes on), same bundle, its default
  threading.

    python bench/face_tracking.py [--frames 300] [--out bench/results/face-tracking-cpu.json]

With `--sessions N`, many sessions instead (the GPU target: 256 at 30 FPS): N face-tracking sessions
of the same clip (each at its own phase), ticked together as the scheduler does: every session's
pre-processing on `--workers` threads, then one batched engine call per batch tier's worth of
sessions (mesh + blendshapes), then post-processing; no MediaPipe. Per tick: p50/p99 ms of each stage
and the whole, and whether p99 fits in one frame at 30 and 60 FPS.

    python bench/face_tracking.py --sessions 256 --backend torch [--ticks N] [--workers 16] [--max-batch 256]

Stages: prepare (detection, crops), engines (run_batch: the engine calls and the geometry around them),
engine_calls (the part of it inside the engine calls), post (finish_batch: filters, calibration,
frame encoding), engines_and_post (the two, the figure of earlier runs), tick. `--max-batch N` (torch)
sets the batch tiers up to N: the ONNX's batch axis is dynamic, 32 is only the manifest's top tier.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bridge.backends import load_engine
from bridge.clients.harness.run import percentile, write_bench_json
from bridge.media.face_video import FaceVideo
from bridge.models.mediapipe.convert import SERVED_NAME, ensure_converted
from bridge.models.mediapipe.locate import locate
from bridge.pipelines.face_tracking import FaceTrackingPipeline
from bridge.protocol.requests import ImageInput

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None, help="JSON report (default: bench/results/...)")
    parser.add_argument("--sessions", type=int, default=0, help="many-session mode with N sessions")
    parser.add_argument("--backend", default="onnxruntime", help="many-session mode: onnxruntime or torch")
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--max-batch",
        type=int,
        default=0,
        help="many-session mode, torch: batch tiers up to N (powers of two; default: the manifest's, 32)",
    )
    args = parser.parse_args()
    if args.sessions:
        return many_sessions(args)
    args.out = args.out or ROOT / "bench" / "results" / "face-tracking-cpu.json"

    import mediapipe as mp
    from mediapipe.tasks.python import BaseOptions, vision

    bundle = locate()
    pipeline = FaceTrackingPipeline(load_engine(ensure_converted(bundle) / f"{SERVED_NAME}.onnx"))
    state = pipeline.open_session({})
    landmarker = vision.FaceLandmarker.create_from_options(
        vision.FaceLandmarkerOptions(
            base_options=BaseOptions(model_asset_path=str(bundle.path)),
            running_mode=vision.RunningMode.VIDEO,
            output_face_blendshapes=True,
        )
    )
    video = FaceVideo(640, 480, fps=30.0)
    ours: list[float] = []
    theirs: list[float] = []
    found = [0, 0]
    for i in range(args.warmup + args.frames):
        image = video.frame(i)
        t_ns = int(i * 1e9 / video.fps)
        t0 = time.perf_counter()
        steps = pipeline.prepare(state, ImageInput(i, "bench", i, t_ns, False, image))
        result = pipeline.run_batch([state], steps)
        pipeline.finish_batch([state], ["bench"], [i], steps, result)
        t1 = time.perf_counter()
        r = landmarker.detect_for_video(
            mp.Image(image_format=mp.ImageFormat.SRGB, data=image), t_ns // 1_000_000
        )
        t2 = time.perf_counter()
        if i >= args.warmup:
            ours.append((t1 - t0) * 1e3)
            theirs.append((t2 - t1) * 1e3)
            found[0] += result.rows[0] is not None
            found[1] += bool(r.face_landmarks)
    landmarker.close()

    def stats(ms: list[float]) -> dict[str, float]:
        return {"p50_ms": percentile(ms, 50), "p99_ms": percentile(ms, 99), "mean_ms": float(np.mean(ms))}

    report: dict[str, Any] = {
        "frames": args.frames,
        "stream": "640x480, 30 FPS clip from bridge.media.face_video",
        "bridge": {**stats(ours), "face_found": found[0], "backend": "onnxruntime CPU, 1 intra-op thread"},
        "mediapipe": {**stats(theirs), "face_found": found[1], "mode": "FaceLandmarker VIDEO"},
    }
    report["ratio_p50"] = report["bridge"]["p50_ms"] / report["mediapipe"]["p50_ms"]
    report["ratio_p99"] = report["bridge"]["p99_ms"] / report["mediapipe"]["p99_ms"]
    write_bench_json(args.out, report)
    print("| tracker | frames with a face | p50 ms | p99 ms | mean ms |\n|---|---:|---:|---:|---:|")
    for name in ("bridge", "mediapipe"):
        s = report[name]
        print(
            f"| {name} | {s['face_found']}/{args.frames} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} "
            f"| {s['mean_ms']:.2f} |"
        )
    print(
        f"\nratio bridge / MediaPipe: p50 {report['ratio_p50']:.2f}, "
        f"p99 {report['ratio_p99']:.2f}  ({args.out})"
    )
    return 0


def many_sessions(args: argparse.Namespace) -> int:
    bundle = locate()
    options: dict[str, Any] = {}
    if args.max_batch:
        # The ONNX's batch axis is dynamic; the manifest's tiers (1, 8, 32) only bound the warm-up.
        if args.backend != "torch":
            raise SystemExit("--max-batch sets the torch backend's batch tiers")
        options["max_batch"] = args.max_batch
    engine = load_engine(ensure_converted(bundle) / f"{SERVED_NAME}.onnx", backend=args.backend, **options)
    pipeline = FaceTrackingPipeline(engine)
    n = args.sessions
    states = [pipeline.open_session({}) for _ in range(n)]
    video = FaceVideo(640, 480, fps=30.0)
    clip = [video.frame(i) for i in range(64)]
    ids = [f"{k:016d}" for k in range(n)]  # the wire's 16-character session ids
    pool = ThreadPoolExecutor(args.workers)
    # engines: run_batch (mesh + blendshape calls and the geometry around them: projection, tracking
    # regions, head pose); engine_calls: the part of it inside the engine calls (BatchResult.engine_us);
    # post: finish_batch (filters, calibration, frame encoding); engines_and_post: both, as before.
    stages: dict[str, list[float]] = {
        k: [] for k in ("prepare", "engines", "engine_calls", "post", "engines_and_post", "tick")
    }
    found = 0
    for tick in range(20 + args.ticks):
        t_ns = int(tick * 1e9 / 30)
        t0 = time.perf_counter()
        inputs = [
            ImageInput(tick, ids[k], tick, t_ns, False, clip[(tick + 7 * k) % len(clip)]) for k in range(n)
        ]
        steps = list(pool.map(lambda k, items=inputs: pipeline.prepare(states[k], items[k])[0], range(n)))
        t1 = time.perf_counter()
        engines = calls = post = 0.0
        for lo in range(0, n, pipeline.max_batch):
            hi = min(lo + pipeline.max_batch, n)
            ta = time.perf_counter()
            result = pipeline.run_batch(states[lo:hi], steps[lo:hi])
            tb = time.perf_counter()
            pipeline.finish_batch(states[lo:hi], ids[lo:hi], [tick] * (hi - lo), steps[lo:hi], result)
            post += time.perf_counter() - tb
            engines += tb - ta
            calls += result.engine_us / 1e6
            found += sum(r is not None for r in result.rows) if tick >= 20 else 0
        t2 = time.perf_counter()
        if tick >= 20:
            for key, seconds in (
                ("prepare", t1 - t0),
                ("engines", engines),
                ("engine_calls", calls),
                ("post", post),
                ("engines_and_post", t2 - t1),
                ("tick", t2 - t0),
            ):
                stages[key].append(seconds * 1e3)
    pool.shutdown()
    report: dict[str, Any] = {
        "backend": f"{engine.backend.name} ({getattr(engine.backend, 'device', 'cpu')})",
        "sessions": n,
        "ticks": args.ticks,
        "max_batch": pipeline.max_batch,
        "batch_tiers": list(pipeline.batch_tiers),
        "faces_found": found / (n * args.ticks),
        **{k: {"p50_ms": percentile(v, 50), "p99_ms": percentile(v, 99)} for k, v in stages.items()},
    }
    report["post_us_per_session_frame"] = {k: report["post"][k] * 1e3 / n for k in ("p50_ms", "p99_ms")}
    p99 = report["tick"]["p99_ms"]
    report["fits_30fps"], report["fits_60fps"] = p99 <= 1000 / 30, p99 <= 1000 / 60
    out = args.out or ROOT / "bench" / "results" / f"face-tracking-{args.backend}-{n}.json"
    write_bench_json(out, report)
    columns = ("prepare", "engines", "engine_calls", "post", "tick")
    print(f"| sessions | backend | max batch | {' | '.join(f'{c} ms' for c in columns)} | 30 FPS | 60 FPS |")
    print(f"|---:|---|---:|{'---|' * len(columns)}---|---|")
    cells = " | ".join(f"{report[c]['p50_ms']:.1f} / {report[c]['p99_ms']:.1f}" for c in columns)
    print(
        f"| {n} | {report['backend']} | {pipeline.max_batch} | {cells} "
        f"| {report['fits_30fps']} | {report['fits_60fps']} |"
    )
    per = report["post_us_per_session_frame"]
    print(f"(p50 / p99; post per session-frame {per['p50_ms']:.0f} / {per['p99_ms']:.0f} us)")
    print(f"({out})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
