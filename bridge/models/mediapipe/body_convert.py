"""Convert the body tracker's four networks to ONNX with manifests, once, into the user cache.

Layout (bridge.pipelines.body_tracking loads them by these names):

    <cache>/mediapipe_body/onnx-v<CONVERTER_VERSION>-<sha256 of the files' hashes, [:12]>/
        pose_detector.onnx / .manifest.json     (pose_detection.tflite)
        pose_landmarks.onnx / .manifest.json    (pose_landmark_full.tflite: 33 + 6 auxiliary landmarks)
        hand_recrop.onnx / .manifest.json       (Holistic's hand re-crop model)
        hand_landmarks.onnx / .manifest.json    (hand_landmark_full.tflite: 21 landmarks)

Written to a temporary folder and renamed into place, as the face's (bridge.models.mediapipe.convert).
The palm detector is located and checked with the others but not converted: MediaPipe's Holistic
graph, which the body tracker follows, finds hands from the pose, never by palm detection.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
from pathlib import Path

from bridge.models.mediapipe.body_locate import FILES, SOURCE, cache_dir
from bridge.models.mediapipe.convert import _Network, _write
from bridge.models.mediapipe.tflite_onnx import InputSpec, OutputSpec

CONVERTER_VERSION = 1  # bump when the converter's output changes: old conversions are then ignored
POSE_TIERS = (1, 8, 32)
HAND_TIERS = (2, 16, 64)  # two hands per session

log = logging.getLogger(__name__)

NETWORKS = (
    _Network(
        "pose_detection.tflite",
        "pose_detector",
        "pose_detector",
        (InputSpec("image", nchw=True, scale=2.0, offset=-1.0),),
        (OutputSpec(0, "detections", (2254, 12)), OutputSpec(1, "scores", (2254,))),
        "body.detector_image",
        (3, 224, 224),
        ("body.detections", "body.detection_scores"),
        POSE_TIERS,
        f"BlazePose detector of {SOURCE}",
    ),
    _Network(
        "pose_landmark_full.tflite",
        "pose_landmarks",
        "pose_landmarks",
        (InputSpec("image", nchw=True),),
        (
            OutputSpec(0, "landmarks", (195,)),
            OutputSpec(1, "presence", (1,)),
            OutputSpec(4, "world_landmarks", (117,)),
            OutputSpec(3, "heatmap", (64, 64, 39)),
        ),
        "body.pose_image",
        (3, 256, 256),
        ("body.landmarks", "body.presence", "body.world_landmarks", "body.heatmap"),
        POSE_TIERS,
        f"BlazePose GHUM full: 33 body landmarks with world coordinates, of {SOURCE}",
    ),
    _Network(
        "hand_recrop.tflite",
        "hand_recrop",
        "hand_recrop",
        (InputSpec("image", nchw=True),),
        (OutputSpec(0, "crop", (4,)),),
        "hand.recrop_image",
        (3, 256, 256),
        ("hand.recrop",),
        HAND_TIERS,
        f"Holistic hand re-crop model of {SOURCE}",
    ),
    _Network(
        "hand_landmark_full.tflite",
        "hand_landmarks",
        "hand_landmarks",
        (InputSpec("image", nchw=True),),
        (
            OutputSpec(0, "landmarks", (63,)),
            OutputSpec(1, "presence", (1,)),
            OutputSpec(2, "handedness", (1,)),
            OutputSpec(3, "world_landmarks", (63,)),
        ),
        "hand.image",
        (3, 224, 224),
        ("hand.landmarks", "hand.presence", "hand.handedness", "hand.world_landmarks"),
        HAND_TIERS,
        f"21 hand landmarks (full) of {SOURCE}",
    ),
)
MANIFESTS = {net.task: f"{net.name}.manifest.json" for net in NETWORKS}


def converted_dir(cache: Path | None = None) -> Path:
    key = hashlib.sha256("".join(f.sha256 for f in FILES).encode()).hexdigest()[:12]
    return (cache or cache_dir()) / f"onnx-v{CONVERTER_VERSION}-{key}"


def ensure_converted(files: dict[str, Path], cache: Path | None = None) -> Path:
    """The folder of converted body models for the located `files` (converting when not cached)."""
    target = converted_dir(cache)
    if all((target / m).is_file() for m in MANIFESTS.values()):
        return target
    log.info("converting the body tracker's four networks to ONNX into %s (once, a few seconds)", target)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".converting-", dir=target.parent))
    try:
        for net in NETWORKS:
            _write(net, files[net.member].read_bytes(), work)
        try:
            work.rename(target)
        except OSError:  # another process converted it first
            if not all((target / m).is_file() for m in MANIFESTS.values()):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target
