"""Convert the bundle's three networks to ONNX with manifests, once, into the user cache directory.

Layout (the served folder holds only the mesh model, the one a pipeline serves; the detector, the
blendshape model and the canonical mesh it needs sit in `parts/` beside it, so a bridge scanning the
folder finds one face model):

    <cache>/onnx-v<CONVERTER_VERSION>-<bundle sha256[:12]>/
        mediapipe_face.onnx, mediapipe_face.manifest.json        (face_landmarks_detector)
        parts/face_detector.onnx, parts/face_detector.manifest.json
        parts/face_blendshapes.onnx, parts/face_blendshapes.manifest.json
        parts/geometry_pipeline_metadata_landmarks.binarypb

Each ONNX is written and hashed into its manifest before the folder is renamed into place, so a
half-written conversion is never served. Needs tflite and onnx (core dependencies).
`build-engine` builds TensorRT plans from these files.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import onnx

from bridge.models.mediapipe.locate import BUNDLE_SHA256, Bundle, cache_dir
from bridge.models.mediapipe.tflite_onnx import InputSpec, OutputSpec, convert
from bridge.runtime.manifest import ModelManifest, Profile, Task, TensorSpec, sha256_file

CONVERTER_VERSION = 2  # bump when the converter's output changes: old conversions are then ignored
SERVED_NAME = "mediapipe_face"
PARTS = "parts"
GEOMETRY = "geometry_pipeline_metadata_landmarks.binarypb"
# Batch tiers (TensorRT profiles, torch CUDA-graph sizes). Engines warm up at each tier's largest
# batch, so the top tier stays small enough for a CPU start (a 256 warm-up needs gigabytes); more
# sessions are served as several calls per tick.
TIERS = (1, 8, 32)
_SOURCE = "Google MediaPipe FaceLandmarker (face_landmarker.task float16/1, Apache-2.0)"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Network:
    member: str
    name: str  # ONNX / manifest stem
    task: Task
    inputs: tuple[InputSpec, ...]
    outputs: tuple[OutputSpec, ...]
    input_role: str
    input_shape: tuple[int, ...]
    output_roles: tuple[str, ...]
    tiers: tuple[int, ...]
    description: str


NETWORKS = (
    _Network(
        "face_landmarks_detector.tflite",
        SERVED_NAME,
        "face_landmarks",
        (InputSpec("image", nchw=True),),
        (OutputSpec(0, "landmarks", (1434,)), OutputSpec(1, "presence", (1,), sigmoid=True)),
        "face.mesh_image",
        (3, 256, 256),
        ("face.landmarks", "face.presence"),
        TIERS,
        f"478-point face mesh (FaceMesh V2) of {_SOURCE}; face tracking with 52 ARKit blendshapes",
    ),
    _Network(
        "face_detector.tflite",
        "face_detector",
        "face_detector",
        (InputSpec("image", nchw=True, scale=2.0, offset=-1.0),),
        (OutputSpec(0, "detections", (896, 16)), OutputSpec(1, "scores", (896,))),
        "face.detector_image",
        (3, 128, 128),
        ("face.detections", "face.detection_scores"),
        TIERS,
        f"BlazeFace short-range face detector of {_SOURCE}",
    ),
    _Network(
        "face_blendshapes.tflite",
        "face_blendshapes",
        "face_blendshapes",
        (InputSpec("landmarks", nchw=False),),
        (OutputSpec(0, "blendshapes", (52,)),),
        "face.landmark_subset",
        (146, 2),
        ("arkit.blendshapes",),
        TIERS,
        f"52 blendshape scores (MLP-Mixer over 146 landmarks) of {_SOURCE}",
    ),
)


def converted_dir(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / f"onnx-v{CONVERTER_VERSION}-{BUNDLE_SHA256[:12]}"


def ensure_converted(bundle: Bundle, cache: Path | None = None) -> Path:
    """The folder of converted models for `bundle` (converting now when it is not cached yet)."""
    target = converted_dir(cache)
    if (target / f"{SERVED_NAME}.manifest.json").is_file():
        return target
    # Said before it starts: a first run is otherwise silent for seconds.
    log.info("converting the face model's three networks to ONNX into %s (once, a few seconds)", target)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".converting-", dir=target.parent))
    try:
        (work / PARTS).mkdir()
        for net in NETWORKS:
            folder = work if net.name == SERVED_NAME else work / PARTS
            _write(net, bundle.read(net.member), folder)
        (work / PARTS / GEOMETRY).write_bytes(bundle.read(GEOMETRY))
        try:
            work.rename(target)
        except OSError:  # another process converted it first
            if not (target / f"{SERVED_NAME}.manifest.json").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _write(net: _Network, data: bytes, folder: Path) -> None:
    path = folder / f"{net.name}.onnx"
    onnx.save(convert(data, net.inputs, net.outputs, net.name), path)
    input_tensor = net.inputs[0].name
    shapes = [(t, *net.input_shape) for t in net.tiers]
    profiles = tuple(
        Profile(f"b{n}", {input_tensor: (shapes[0], shape, shape)})
        for n, shape in zip(net.tiers, shapes, strict=True)
    )
    ModelManifest(
        name=net.name,
        task=net.task,
        onnx_path=path,
        onnx_sha256=sha256_file(path),
        trained=True,
        fps=30.0,
        inputs=(TensorSpec(net.input_role, input_tensor, ("batch", *net.input_shape), "float32"),),
        outputs=tuple(
            TensorSpec(role, spec.name, ("batch", *spec.shape), "float32")
            for role, spec in zip(net.output_roles, net.outputs, strict=True)
        ),
        state=(),
        profiles=profiles,
        description=net.description + "; converted to ONNX by bridge.models.mediapipe",
    ).write()
