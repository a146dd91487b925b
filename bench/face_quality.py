"""Face tracking accuracy in harder frames: the bridge's tracker against MediaPipe's FaceLandmarker
(the mediapipe wheel's own graph, same model bundle, IMAGE mode) on the same images, on the CPU.

The images (tests/face_photos.py, real photos from installed packages): faces rolled 30-45 degrees in
frames cut close around them; group photos with faces 60-90 px tall on frames of several shapes; and a
sweep of `--layouts` seeded random group photos (2-3 people, 60-90 px faces, frames 360-700 x 260-480).
Per image: the faces MediaPipe finds, those the bridge finds (its detector, each detection's region
and crop, mesh with presence, blendshapes), and per MediaPipe face the blendshape MAE of the bridge's
nearest face (51 ARKit channels; a face not found counts as missed).

    python bench/face_quality.py [--before COMMIT] [--out bench/results/face-quality-cpu.json]

`--before COMMIT` measures that commit's bridge/ as well (git archive into a temporary folder, run in
a subprocess with it first on the path), so one JSON holds both.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # tests.face_photos; appended so a `--before` tree's bridge/ comes first

from bridge.backends import load_engine  # noqa: E402
from bridge.clients.harness.run import write_bench_json  # noqa: E402
from bridge.models.mediapipe.convert import SERVED_NAME, ensure_converted  # noqa: E402
from bridge.models.mediapipe.locate import locate  # noqa: E402
from bridge.pipelines.face_tracking import FaceTrackingPipeline  # noqa: E402
from tests import face_photos as fp  # noqa: E402

MAX_MAE = 0.02  # the target per face (issue 45)


def random_groups(count: int, seed: int) -> dict[str, fp.Image]:
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(count):
        w, h = int(rng.integers(360, 700)), int(rng.integers(260, 480))
        n = int(rng.integers(2, 4))
        people = [
            (
                ("astronaut", "hopper")[int(rng.integers(2))],
                float(rng.uniform(60, 90)),
                (k + 0.5) / n + float(rng.uniform(-0.05, 0.05)),
                float(rng.uniform(0.35, 0.65)),
            )
            for k in range(n)
        ]
        out[f"layout-{i}-{w}x{h}"] = fp.group((w, h), people)
    return out


def measure(layouts: int, seed: int) -> dict[str, Any]:
    """This tree's bridge against MediaPipe: per named photo, and the random layouts' totals."""
    bundle = locate()
    pipeline = FaceTrackingPipeline(load_engine(ensure_converted(bundle) / f"{SERVED_NAME}.onnx"))
    oracle = fp.MediaPipeFaces(bundle.path)

    def compare(image: fp.Image) -> dict[str, Any]:
        theirs = oracle(image)
        ours = fp.bridge_faces(pipeline, image)
        faces = []
        for face, mine in fp.pair(theirs, ours):
            row: dict[str, Any] = {"height_px": round(face.height, 1), "found": mine is not None}
            if mine is not None:
                diff = np.abs(face.scores[1:] - mine.scores[1:])
                row |= {"mae": float(diff.mean()), "max_abs": float(diff.max())}
            faces.append(row)
        return {
            "size": list(image.shape[1::-1]),
            "mediapipe": len(theirs),
            "bridge": len(ours),
            "faces": faces,
        }

    photos = {name: compare(image) for name, image in {**fp.rolled(), **fp.groups()}.items()}
    swept = [compare(image) for image in random_groups(layouts, seed).values()]
    oracle.close()
    paired = [f for r in swept for f in r["faces"] if f["found"]]
    return {
        "geometry": str(Path(sys.modules["bridge.vision.face_geometry"].__file__ or "")),
        "photos": photos,
        "layouts": {
            "count": layouts,
            "seed": seed,
            "mediapipe_faces": sum(r["mediapipe"] for r in swept),
            "bridge_faces": sum(r["bridge"] for r in swept),
            "missed": sum(not f["found"] for r in swept for f in r["faces"]),
            "images_with_a_miss": sum(any(not f["found"] for f in r["faces"]) for r in swept),
            "images_bridge_none_mediapipe_some": sum(r["bridge"] == 0 < r["mediapipe"] for r in swept),
            "mae_mean": float(np.mean([f["mae"] for f in paired])),
            "mae_max": float(np.max([f["mae"] for f in paired])),
            "faces_over_target": sum(f["mae"] > MAX_MAE for f in paired),
        },
    }


def measure_commit(commit: str, layouts: int, seed: int) -> dict[str, Any]:
    """`measure` on `commit`'s bridge/, in a subprocess with that tree first on the path."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "bridge"], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        env = {**os.environ, "PYTHONPATH": tmp}
        args = [sys.executable, __file__, "--json-stdout", "--layouts", str(layouts), "--seed", str(seed)]
        done = subprocess.run(args, env=env, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return {"commit": commit, **result}


def summary(label: str, result: dict[str, Any]) -> str:
    worst = max(f.get("mae", 0.0) for r in result["photos"].values() for f in r["faces"])
    missed = sum(not f["found"] for r in result["photos"].values() for f in r["faces"])
    s = result["layouts"]
    return (
        f"{label}: photos worst MAE {worst:.4f}, missed {missed}; layouts {s['bridge_faces']}/"
        f"{s['mediapipe_faces']} faces, missed {s['missed']}, "
        f"MAE mean {s['mae_mean']:.4f} max {s['mae_max']:.4f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", type=int, default=70, help="random group photos in the sweep")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--before", help="also measure this commit's bridge/ (e.g. 52ddb22)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "face-quality-cpu.json")
    parser.add_argument("--json-stdout", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    now = measure(args.layouts, args.seed)
    if args.json_stdout:
        print(json.dumps(now))
        return 0
    result: dict[str, Any] = {
        "oracle": "mediapipe FaceLandmarker (Tasks API, IMAGE mode, num_faces 8), same face_landmarker.task",
        "target": f"every face MediaPipe finds found, blendshape MAE <= {MAX_MAE} per face",
        "after": now,
        "command": "python bench/face_quality.py" + (f" --before {args.before}" if args.before else ""),
    }
    if args.before:
        result["before"] = measure_commit(args.before, args.layouts, args.seed)
        print(summary("before", result["before"]))
    write_bench_json(args.out, result)
    print(summary("after", now))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
