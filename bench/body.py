"""Face + body + hands from one camera on the CPU default: the bridge's `face` session with `body: true`
against MediaPipe Holistic (the mediapipe 0.10.21 wheel's own graph) in the same run.

The clip: scikit-image's astronaut photo (a real person with arms) on a 640x480 canvas, turning, zooming
and sliding over time (frames made once, the same for both). Per frame:
- bridge: the FaceBodyPipeline's work for one frame of one session (prepare: face and body crops,
  detection only when not tracking; run_batch: face mesh + blendshapes, pose landmarks, hand re-crop and
  hand landmarks through ONNX Runtime with the bridge's default of one intra-op thread; finish_batch:
  filters, the humanoid solve, frame encoding);
- MediaPipe: Holistic.process in video mode (model_complexity 1, its defaults: smoothing on), its own
  threading, in a subprocess (its wheel needs numpy < 2: .venv/mediapipe-0.10.21-oracle, installed by
  scripts/install.sh --dev), timed inside that process around each process() call.
The two alternate in blocks (bridge, MediaPipe, bridge, MediaPipe) so both see the same machine load.
Holistic runs the older 468-point face mesh without blendshapes; the bridge the FaceLandmarker's mesh
and its 52 blendshapes: the bridge does more face work per frame.

    python bench/body.py [--frames 150] [--out bench/results/body-cpu.json]

`--quality` instead: jitter on that clip, the session with its One-Euro filters against the same
session with `smoothing: false` (the rotations straight from the landmarks): per joint group, the
mean angle between consecutive frames' second difference (how much the motion shakes), degrees.

    python bench/body.py --quality [--out bench/results/body-jitter.json]

`--accuracy` instead: against MediaPipe's own Holistic graph (each frame from a detection, its
still-image mode), on the photos and the warped clip of tests/test_body_tracking.py (body landmarks,
% of torso; elbow, shoulder and wrist angles) and on OpenCV's sample photos with hands (hand landmarks,
% of torso and of hand size; finger curl, degrees). Needs scripts/install.sh --dev (the oracle, opencv-doc).

    python bench/body.py --accuracy [--out bench/results/body-accuracy.json]
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

import cv2
import numpy as np

from bridge.backends import load_engine
from bridge.clients.harness.run import percentile, write_bench_json
from bridge.models.mediapipe.body_convert import ensure_converted as convert_body
from bridge.models.mediapipe.body_locate import VERSION
from bridge.models.mediapipe.body_locate import locate as locate_body
from bridge.models.mediapipe.convert import SERVED_NAME, ensure_converted
from bridge.models.mediapipe.locate import locate
from bridge.pipelines.body_tracking import BodyTracker
from bridge.pipelines.face_body import FaceBodyPipeline
from bridge.pipelines.face_tracking import FaceTrackingPipeline
from bridge.protocol.requests import ImageInput

ROOT = Path(__file__).resolve().parents[1]
ORACLE_DIR = Path(sys.prefix) / f"mediapipe-{VERSION}-oracle"
ORACLE = ROOT / "tests" / "oracles" / "holistic.py"


def clip(frames: int) -> np.ndarray:
    from skimage import data

    person = cv2.resize(data.astronaut(), (480, 480), interpolation=cv2.INTER_AREA)  # type: ignore[no-untyped-call]
    canvas = np.full((480, 640, 3), 90, np.uint8)
    canvas[:, 80:560] = person
    out = np.empty((frames, 480, 640, 3), np.uint8)
    for i in range(frames):
        k = i / 30.0
        m = cv2.getRotationMatrix2D((320, 240), 6.0 * np.sin(k), 1.0 + 0.08 * np.sin(0.7 * k))
        m[0, 2] += 25 * np.sin(0.5 * k)
        out[i] = cv2.warpAffine(canvas, m, (640, 480), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    return out


def bridge_block(
    pipeline: FaceBodyPipeline, state: Any, frames: np.ndarray, start: int
) -> tuple[list[float], list[bool]]:
    import time

    times: list[float] = []
    found: list[bool] = []
    for i, frame in enumerate(frames):
        t_ns = int((start + i) / 30.0 * 1e9)
        t0 = time.perf_counter()
        steps = pipeline.prepare(state, ImageInput(0, "s", start + i, t_ns, False, frame))
        result = pipeline.run_batch([state], steps)
        pipeline.finish_batch([state], ["s"], [start + i], steps, result)
        times.append((time.perf_counter() - t0) * 1e3)
        found.append(bool(result.rows.body.found[0]))
    return times, found


def mediapipe_block(frames: np.ndarray, tmp: Path) -> tuple[list[float], list[bool]]:
    np.save(tmp / "frames.npy", frames)
    env = dict(os.environ, PYTHONPATH=str(ORACLE_DIR))
    subprocess.run(
        [sys.executable, str(ORACLE), str(tmp / "frames.npy"), str(tmp / "out.npz"), "timed"],
        env=env,
        check=True,
    )
    out = np.load(tmp / "out.npz")
    return out["ms"].tolist(), (~np.isnan(out["pose"][:, 0, 0])).tolist()


def _rotations(pipeline: FaceBodyPipeline, frames: np.ndarray, smoothing: bool) -> np.ndarray:
    """Each frame's 50 local rotations (n, 50, 4) from one session."""
    from bridge.protocol import FaceFrame, decode_frame

    state = pipeline.open_session({"body": True, "smoothing": smoothing})
    out = []
    for i, frame in enumerate(frames):
        steps = pipeline.prepare(state, ImageInput(0, "s", i, int(i / 30.0 * 1e9), False, frame))
        result = pipeline.run_batch([state], steps)
        frame_out = decode_frame(bytes(pipeline.finish_batch([state], ["s"], [i], steps, result)[0][0]))
        assert isinstance(frame_out, FaceFrame)
        out.append(frame_out.body)
    return np.stack(out).astype(np.float64)


def _shake(q: np.ndarray) -> float:
    """Mean angle (degrees) of the second difference of rotations (n, J, 4): a rotation's change from one
    frame to the next, compared with the previous change."""
    from bridge.rig.rotations import quat_conjugate, quat_multiply, quat_to_axis_angle

    step = quat_to_axis_angle(quat_multiply(quat_conjugate(q[:-1]), q[1:]))  # (n-1, J, 3)
    return float(np.degrees(np.linalg.norm(step[1:] - step[:-1], axis=-1)).mean())


def jitter(args: argparse.Namespace) -> int:
    from bridge.rig import humanoid_solve as hs

    out = args.out if args.out != ROOT / "bench" / "results" / "body-cpu.json" else None
    out = out or ROOT / "bench" / "results" / "body-jitter.json"
    tracker = FaceTrackingPipeline(load_engine(ensure_converted(locate()) / f"{SERVED_NAME}.onnx"))
    pipeline = FaceBodyPipeline(tracker, BodyTracker(convert_body(locate_body())))
    frames = clip(args.frames)
    raw, filtered = _rotations(pipeline, frames, False), _rotations(pipeline, frames, True)
    groups = {g: list(j) for g, j in hs.GROUPS.items() if g != "legs"}  # legs rest: out of view
    unfiltered = {g: _shake(raw[:, j]) for g, j in groups.items()}
    smoothed = {g: _shake(filtered[:, j]) for g, j in groups.items()}
    result = {
        "frames": len(frames),
        "stream": "640x480, 30 FPS clip warped from skimage.data.astronaut()",
        "measure": "mean |second difference| of each joint's local rotation between frames, degrees",
        "unfiltered": unfiltered,
        "filtered": smoothed,
        "command": "python bench/body.py --quality",
    }
    write_bench_json(out, result)
    for g in groups:
        print(f"{g}: unfiltered {unfiltered[g]:.3f} deg, filtered {smoothed[g]:.3f} deg")
    return 0


def _spread(values: np.ndarray) -> dict[str, float]:
    return {
        "median": float(np.median(values)),
        "p90": float(np.percentile(values, 90)),
        "max": float(values.max()),
        "count": int(values.size),
    }


def accuracy(args: argparse.Namespace) -> int:
    from skimage import data

    from training import body_quality as q

    out = args.out if args.out != ROOT / "bench" / "results" / "body-cpu.json" else None
    out = out or ROOT / "bench" / "results" / "body-accuracy.json"
    tracker = BodyTracker(convert_body(locate_body()))
    images = [*q.photos(), *q.warped_clip(data.astronaut())]  # type: ignore[no-untyped-call]
    hand_images = [im for photo in q.hand_photos() for im in (photo, np.ascontiguousarray(photo[:, ::-1]))]
    with tempfile.TemporaryDirectory() as tmp:
        ref = q.oracle(images, Path(tmp))
        hand_refs = [q.oracle([im], Path(tmp)) for im in hand_images]
    rows = q.track(tracker, images, tracking=False)
    body = q.landmark_error(rows.landmarks, ref["pose"], ref["pose"][:, :, 3])
    a, b = q.joint_angles(rows.world), q.joint_angles(ref["world"])
    angles = {joint: _spread(np.abs(a[joint] - b[joint])) for joint in a}
    hand_torso, hand_size, curl = [], [], []
    same = True
    for image, r in zip(hand_images, hand_refs, strict=True):
        mine = q.track(tracker, [image], tracking=False)
        theirs = ~np.isnan(r["hands"][0, :, 0, 0])
        same &= bool((mine.hand_found[0] == theirs).all())
        for side in np.flatnonzero(mine.hand_found[0] & theirs).tolist():
            ours_hand, ref_hand = mine.hands[:, side], r["hands"][:, side]
            d = np.linalg.norm(ours_hand[..., :2] - ref_hand[..., :2], axis=-1)
            hand_torso.append((d / q.torso_size(r["pose"])[:, None]).ravel())
            hand_size.append(q.hand_error(ours_hand, ref_hand).ravel())
            curl.append(np.abs(q.finger_curl(ours_hand) - q.finger_curl(ref_hand)))
    result = {
        "body": {
            "images": "skimage astronaut, its mirror image, matplotlib's Grace Hopper, 8 frames warped from "
            "the astronaut",
            "landmark_error_of_torso": _spread(body),
            "joint_angle_error_deg": angles,
        },
        "hands": {
            "images": f"OpenCV samples {', '.join(q.HAND_PHOTOS)} and their mirror images (opencv-doc)",
            "same_hands_found": same,
            "hands_scored": len(curl),
            "landmark_error_of_torso": _spread(np.concatenate(hand_torso)),
            "landmark_error_of_hand_size": _spread(np.concatenate(hand_size)),
            "finger_curl_error_deg": _spread(np.concatenate(curl)),
        },
        "oracle": f"MediaPipe Holistic {VERSION}, still-image mode, model_complexity 1",
        "command": "python bench/body.py --accuracy",
    }
    write_bench_json(out, result)
    print(json.dumps(result, indent=1))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=150, help="per tool, in two blocks each")
    parser.add_argument("--warmup", type=int, default=10, help="frames each tool runs before timing")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "body-cpu.json")
    parser.add_argument("--quality", action="store_true", help="jitter, filtered against unfiltered")
    parser.add_argument("--accuracy", action="store_true", help="landmarks and angles against MediaPipe's")
    args = parser.parse_args()
    if args.quality:
        return jitter(args)
    if args.accuracy:
        return accuracy(args)
    if not (ORACLE_DIR / "mediapipe").is_dir():
        print(f"MediaPipe {VERSION} not installed at {ORACLE_DIR}: run scripts/install.sh --dev")
        return 1
    tracker = FaceTrackingPipeline(load_engine(ensure_converted(locate()) / f"{SERVED_NAME}.onnx"))
    pipeline = FaceBodyPipeline(tracker, BodyTracker(convert_body(locate_body())))
    state = pipeline.open_session({"body": True})
    frames = clip(args.frames + args.warmup)
    half = args.warmup + args.frames // 2
    ours: list[float] = []
    theirs: list[float] = []
    ours_found = theirs_found = 0
    with tempfile.TemporaryDirectory() as tmp:
        for lo, hi in ((0, half), (half, len(frames))):
            times, found = bridge_block(pipeline, state, frames[lo:hi], lo)
            skip = args.warmup if lo == 0 else 0
            ours += times[skip:]
            ours_found += sum(found[skip:])
            # MediaPipe restarts per block: its warm-up frames come first each time, not timed.
            times, found = mediapipe_block(np.concatenate([frames[: args.warmup], frames[lo:hi]]), Path(tmp))
            theirs += times[args.warmup + skip :]
            theirs_found += sum(found[args.warmup + skip :])

    def stats(ms: list[float]) -> dict[str, float]:
        return {"p50_ms": percentile(ms, 50), "p99_ms": percentile(ms, 99), "mean_ms": float(np.mean(ms))}

    result = {
        "frames": len(ours),
        "stream": "640x480, 30 FPS clip warped from skimage.data.astronaut()",
        "bridge": {
            **stats(ours),
            "body_found": ours_found,
            "backend": "onnxruntime CPU, 1 intra-op thread",
            "work": "face mesh + 52 blendshapes, pose, hand re-crop + landmarks, humanoid solve, filters",
        },
        "mediapipe": {
            **stats(theirs),
            "body_found": theirs_found,
            "mode": f"Holistic {VERSION} video mode, model_complexity 1, defaults",
        },
        "ratio_p50": percentile(ours, 50) / percentile(theirs, 50),
        "ratio_mean": float(np.mean(ours) / np.mean(theirs)),
        "command": "python bench/body.py",
    }
    write_bench_json(args.out, result)
    print(
        f"bridge p50 {percentile(ours, 50):.1f} ms, MediaPipe Holistic p50 {percentile(theirs, 50):.1f} ms: "
        f"{result['ratio_p50']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
