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
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from bridge.harness.run import percentile
from bridge.media.face_video import FaceVideo
from bridge.models.mediapipe.convert import SERVED_NAME, ensure_converted
from bridge.models.mediapipe.locate import locate
from bridge.pipelines.face_tracking import FaceTrackingPipeline
from bridge.protocol.requests import ImageInput
from bridge.runtime.engine import Engine

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "face-tracking-cpu.json")
    args = parser.parse_args()

    import mediapipe as mp
    from mediapipe.tasks.python import BaseOptions, vision

    bundle = locate()
    pipeline = FaceTrackingPipeline(Engine.load(ensure_converted(bundle) / f"{SERVED_NAME}.onnx"))
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
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "frames": args.frames,
        "stream": "640x480, 30 FPS clip from bridge.media.face_video",
        "bridge": {**stats(ours), "face_found": found[0], "backend": "onnxruntime CPU, 1 intra-op thread"},
        "mediapipe": {**stats(theirs), "face_found": found[1], "mode": "FaceLandmarker VIDEO"},
    }
    report["ratio_p50"] = report["bridge"]["p50_ms"] / report["mediapipe"]["p50_ms"]
    report["ratio_p99"] = report["bridge"]["p99_ms"] / report["mediapipe"]["p99_ms"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
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


if __name__ == "__main__":
    raise SystemExit(main())
