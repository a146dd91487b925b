"""Body + face tracking's engine calls for many sessions on one GPU (torch backend, CUDA graphs): per tick,
what N face+body sessions need at 30 FPS, each network called once for the whole batch.

Per tick: face mesh (N crops of 256), face blendshapes (N), pose landmarks (N crops of 256), hand re-crop
(2N crops of 256), hand landmarks (2N crops of 224): every session with both hands in view, the worst
case. Inputs are uint8 crops (as the pipelines pass them; the backend makes float planes on the
device). Timed: the five engine calls, host to host, p50/p99 over the ticks; the detectors (run only
on tracking loss) and the CPU work around the calls (crops, geometry, filters, solve) are not in it.

    python bench/body_gpu.py [--models DIR] [--sessions 1,16,64,128,256] [--ticks 200]
        [--out bench/results/body-gpu.json]

DIR holds the converted ONNX folders (`face/` with the face tracker's, `body/` with the body's); by
default the user cache's ($AVATAR_BRIDGE_CACHE or ~/.cache/avatar-bridge), converted there by
`avatar-bridge models install face|body` and a first serve: face_landmarker/onnx-v2-*/ and
mediapipe_body/onnx-v1-*/. Needs only numpy, onnx, torch and the bridge's own light wheels (no
MediaPipe, no ONNX Runtime): a machine without the installs can be handed those two folders. Each
engine's CUDA graphs are captured at load for the batch sizes it meets here only (N, or 2N for the
hands), so the whole run takes about a minute on an H100.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from bridge.backends import load_engine

ROOT = Path(__file__).resolve().parents[1]
FRAME_MS = 1000.0 / 30.0


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def _folders(models: Path | None) -> tuple[Path, Path]:
    if models is not None:
        return models / "face", models / "body"
    from bridge.models.mediapipe.body_convert import converted_dir as body_dir
    from bridge.models.mediapipe.convert import converted_dir as face_dir

    return face_dir(), body_dir()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=None)
    parser.add_argument("--sessions", default="1,16,64,128,256")
    parser.add_argument("--ticks", type=int, default=200)
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "body-gpu.json")
    args = parser.parse_args()
    counts = [int(n) for n in args.sessions.split(",")]
    face, body = _folders(args.models)
    # (manifest, rows per session): both hands of every session go through the hand networks.
    manifests = {
        "face_mesh": (face / "mediapipe_face.manifest.json", 1),
        "face_blendshapes": (face / "parts" / "face_blendshapes.manifest.json", 1),
        "pose": (body / "pose_landmarks.manifest.json", 1),
        "hand_recrop": (body / "hand_recrop.manifest.json", 2),
        "hand": (body / "hand_landmarks.manifest.json", 2),
    }
    started = time.perf_counter()
    engines = {}
    for name, (path, rows) in manifests.items():
        # On torch, a CUDA graph per batch size this run uses, captured at load (warm-up).
        tiers = [rows * n for n in counts]
        options: dict[str, object] = {"batch_tiers": tiers} if args.backend == "torch" else {}
        engines[name] = load_engine(path, args.backend, True, **options)
    load_s = time.perf_counter() - started
    print(f"engines loaded and warmed up in {load_s:.1f} s")
    rng = np.random.default_rng(0)
    results = []
    for n in counts:
        feeds = {
            "face_mesh": {"face.mesh_image": rng.integers(0, 255, (n, 256, 256, 3), np.uint8)},
            "face_blendshapes": {"face.landmark_subset": rng.random((n, 146, 2), np.float32) * 256},
            "pose": {"body.pose_image": rng.integers(0, 255, (n, 256, 256, 3), np.uint8)},
            "hand_recrop": {"hand.recrop_image": rng.integers(0, 255, (2 * n, 256, 256, 3), np.uint8)},
            "hand": {"hand.image": rng.integers(0, 255, (2 * n, 224, 224, 3), np.uint8)},
        }
        for _ in range(10):  # warm-up: plans, CUDA graphs
            for name, engine in engines.items():
                engine.run(feeds[name])
        ticks: list[float] = []
        calls: dict[str, list[float]] = {name: [] for name in engines}
        for _ in range(args.ticks):
            t0 = time.perf_counter()
            for name, engine in engines.items():
                t1 = time.perf_counter()
                engine.run(feeds[name])
                calls[name].append((time.perf_counter() - t1) * 1e3)
            ticks.append((time.perf_counter() - t0) * 1e3)
        row = {
            "sessions": n,
            "tick_p50_ms": percentile(ticks, 50),
            "tick_p99_ms": percentile(ticks, 99),
            "fits_30fps": percentile(ticks, 99) <= FRAME_MS,
            "calls_p50_ms": {name: percentile(v, 50) for name, v in calls.items()},
        }
        results.append(row)
        print(f"{n:4d} sessions: tick p50 {row['tick_p50_ms']:.2f} ms, p99 {row['tick_p99_ms']:.2f} ms")
    device, versions = "CPU", {"numpy": np.__version__}
    try:
        import torch

        versions["torch"] = torch.__version__
        if torch.cuda.is_available():
            device = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    # Written here, not by bridge.clients.harness.run: the device machine has none of the harness's packages.
    doc = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **{
            "device": device,
            "backend": args.backend,
            "precision": str(getattr(engines["pose"].backend, "precision", "float32")),
            "versions": versions,
            "work_per_tick": "face mesh N, blendshapes N, pose N, hand re-crop 2N, hand landmarks 2N",
            "load_and_warmup_s": load_s,
            "total_s": time.perf_counter() - started,
            "results": results,
            "command": "python bench/body_gpu.py",
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
