"""Face tracking: RGB frame -> 52 ARKit blendshapes, head rotation and position, eye gaze.

MediaPipe FaceLandmarker's three networks through the bridge's own engines: BlazeFace (only while
no face is tracked) -> rotated region from its eye keypoints -> 478-point mesh, batched across
sessions -> the next frame's region from these landmarks (re-detection when presence drops) ->
blendshapes from the 146-landmark subset, batched -> head pose fitted to the canonical mesh -> gaze
from the eyeLook channels -> per-channel One-Euro, hold and ease on loss, neutral calibration ->
frame (the post-processing: bridge.tracking.face_post).

The served engine is the mesh model (manifest task `face_landmarks`); the detector, blendshape model
and canonical mesh are loaded from `parts/` beside it (bridge.models.mediapipe.convert's layout).
FLAME expression codes are never produced: frames carry none and the rig says so. Jaw and eyelids
are derived from jawOpen / jawLeft / jawRight and eyeBlink (approximations, docs/face-tracking.md).

Everything after the engine calls works on the whole batch at once (no Python step per face but
building each frame's message): projection, tracking regions and head pose in `run_batch`; filters,
loss, calibration and the frame's values in `finish_batch`, over the sessions' rows of the pipeline's
`FacePost`, read and written by each session's slot (`TrackingState.slot`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import cv2
import numpy as np
import numpy.typing as npt

from bridge.backends import load_engine
from bridge.pipelines.base import BatchResult, Pipeline, Step
from bridge.pipelines.options import check_options
from bridge.protocol.codec import ProtocolError
from bridge.protocol.errors import ErrorCode
from bridge.protocol.events import FACE_EYELID_NAMES, FaceRig
from bridge.protocol.requests import Calibrate, ImageInput, Input, JpegInput
from bridge.rig.arkit import ARKIT_NAMES
from bridge.rig.canonical_face import parse_canonical_mesh
from bridge.rig.rotations import matrix_to_quat, quat_to_axis_angle
from bridge.runtime.cpu_priority import yield_to_realtime
from bridge.runtime.engine import Engine
from bridge.state.slots import SlotLease
from bridge.tracking.face_post import (
    HEAD_POS,
    HEAD_ROT,
    N_BLEND,
    N_CHANNELS,
    SMOOTHING_DEFAULTS,
    CameraFace,
    FacePost,
    encode_tracked,
    min_cutoffs,
)
from bridge.vision import face_geometry as geo

if TYPE_CHECKING:
    from bridge.pipelines.face_tracking_device import DeviceTracker

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]

PARTS = "parts"
DETECTOR_MANIFEST = "face_detector.manifest.json"
BLENDSHAPES_MANIFEST = "face_blendshapes.manifest.json"
GEOMETRY = "geometry_pipeline_metadata_landmarks.binarypb"

# The blendshape model's output order (face_blendshapes_graph.cc kBlendshapeNames, `_neutral` first).
MEDIAPIPE_NAMES: tuple[str, ...] = (
    "_neutral", "browDownLeft", "browDownRight", "browInnerUp", "browOuterUpLeft", "browOuterUpRight",
    "cheekPuff", "cheekSquintLeft", "cheekSquintRight", "eyeBlinkLeft", "eyeBlinkRight", "eyeLookDownLeft",
    "eyeLookDownRight", "eyeLookInLeft", "eyeLookInRight", "eyeLookOutLeft", "eyeLookOutRight",
    "eyeLookUpLeft", "eyeLookUpRight", "eyeSquintLeft", "eyeSquintRight", "eyeWideLeft", "eyeWideRight",
    "jawForward", "jawLeft", "jawOpen", "jawRight", "mouthClose", "mouthDimpleLeft", "mouthDimpleRight",
    "mouthFrownLeft", "mouthFrownRight", "mouthFunnel", "mouthLeft", "mouthLowerDownLeft",
    "mouthLowerDownRight", "mouthPressLeft", "mouthPressRight", "mouthPucker", "mouthRight",
    "mouthRollLower", "mouthRollUpper", "mouthShrugLower", "mouthShrugUpper", "mouthSmileLeft",
    "mouthSmileRight", "mouthStretchLeft", "mouthStretchRight", "mouthUpperUpLeft", "mouthUpperUpRight",
    "noseSneerLeft", "noseSneerRight",
)  # fmt: skip
_MP_INDEX = {n[0].upper() + n[1:]: i for i, n in enumerate(MEDIAPIPE_NAMES)}
# ARKit order <- MediaPipe index; TongueOut has no MediaPipe channel (-1: always 0).
ARKIT_FROM_MP = np.array([_MP_INDEX.get(n, -1) for n in ARKIT_NAMES], np.intp)
UNSUPPORTED = tuple(n for n, i in zip(ARKIT_NAMES, ARKIT_FROM_MP, strict=True) if i < 0)
DARK_LUMA = 40.0  # mean luma (0-255) under which a frame is flagged too dark


@dataclass
class TrackingState:
    mirror: bool
    select: str  # "largest" or "central": the face followed when several are detected
    blendshapes: bool
    smoothing: bool
    min_cutoff: F32  # (N_CHANNELS,) One-Euro min cutoff per channel, Hz
    slot: SlotLease  # this session's row of the pipeline's FacePost (filter, hold, calibration)
    roi: geo.Roi | None = None  # where to look next frame; None: detect
    calibrate_next: bool = False  # set by the I/O thread, taken by the next tracked frame


@dataclass
class TrackStep:
    crop: npt.NDArray[np.uint8] | None  # (256, 256, 3) RGB, or None when no face was found
    crop_to_image: F64
    size: tuple[int, int]  # image width, height
    dark: bool
    # The device path's (bridge.pipelines.face_tracking_device): the frame as it came, or its JPEG,
    # mirrored, measured, cropped in `run_batch`; `crop` stays None there.
    frame: npt.NDArray[np.uint8] | JpegInput | None = None


@dataclass(frozen=True)
class TrackedFace:
    """One tracked face of one frame, before filtering (a row of TrackedFaces)."""

    landmarks: F64  # (478, 3) image pixels
    blend: F32  # (52,) ARKit order
    rotation: F64  # (3,) axis-angle
    position: F64  # (3,) metres


@dataclass(frozen=True)
class TrackedFaces:
    """The faces of one batch (run_batch's rows): arrays over the faces found, and which row has which;
    indexing gives a row's TrackedFace, or None where no face was found."""

    where: npt.NDArray[np.intp]  # (rows,) index into the arrays, -1 where no face was found
    landmarks: F64  # (faces, 478, 3) image pixels
    blend: F32  # (faces, 52) ARKit order
    rotation: F64  # (faces, 3) axis-angle
    position: F64  # (faces, 3) metres

    @staticmethod
    def none(rows: int) -> TrackedFaces:
        return TrackedFaces(
            np.full(rows, -1, np.intp),
            np.zeros((0, 478, 3)),
            np.zeros((0, N_BLEND), np.float32),
            np.zeros((0, 3)),
            np.zeros((0, 3)),
        )

    @property
    def found(self) -> npt.NDArray[np.bool_]:
        return self.where >= 0

    def __len__(self) -> int:
        return len(self.where)

    def __getitem__(self, row: int) -> TrackedFace | None:
        k = int(self.where[row])
        if k < 0:
            return None
        return TrackedFace(self.landmarks[k], self.blend[k], self.rotation[k], self.position[k])

    def __iter__(self) -> Iterator[TrackedFace | None]:
        return (self[i] for i in range(len(self)))


class FaceTrackingPipeline(Pipeline[TrackingState, TrackStep]):
    name: ClassVar[str] = "face"
    accepts: ClassVar[tuple[str, ...]] = ("image",)
    droppable: ClassVar[bool] = True
    fair_share: ClassVar[bool] = True  # images: detection and cropping cost by pixels
    preferred: ClassVar[bool] = True  # the face pipeline's default model when it is loaded

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        parts = engine.manifest.onnx_path.parent / PARTS
        backend = engine.backend.name
        # On torch, the detector and the blendshape model on the mesh's device, at its precision and its
        # batch tiers (CUDA graphs per tier): the device path calls the detector on the call's frames
        # that need it and the blendshape model on the mesh's rows, so a top tier set above the
        # manifest's 32 serves all three in one call each.
        on_device: dict[str, Any] = {}
        if backend == "torch":
            runner: Any = engine.backend  # bridge.backends.torch.runner.TorchBackend
            precision = str(runner.precision).removeprefix("torch.")
            on_device = {
                "device": runner.device.type,
                "precision": precision,
                "batch_tiers": runner.batch_tiers,
            }
        self.detector = load_engine(parts / DETECTOR_MANIFEST, backend=backend, **on_device)
        self.blendshape_engine = load_engine(parts / BLENDSHAPES_MANIFEST, backend=backend, **on_device)
        self.canonical = parse_canonical_mesh(Path(parts / GEOMETRY).read_bytes())
        # Every session's post-processing state, a row per slot; the voiced and body variants' sessions
        # (other scheduler threads) hold rows here too (bridge.tracking.face_post).
        self.face_post = FacePost()
        # On the torch backend the batch's frames are decoded, detected, cropped and fitted on its device
        # (bridge.pipelines.face_tracking_device); the other backends prepare each session on the CPU.
        self.device_path: DeviceTracker | None = None
        if backend == "torch":
            from bridge.pipelines.face_tracking_device import DeviceTracker

            self.device_path = DeviceTracker(self)
            self.decodes_jpeg = self.device_path.decodes_jpeg
        # Serves sessions opened with `speech: true` (bridge.pipelines.face_tracking_speech); set by
        # bridge.pipelines.registry.attach_voices when a speech model is loaded too.
        self.with_speech: Pipeline[Any, Any] | None = None
        # Serves sessions opened with `body: true` (bridge.pipelines.face_body); set by
        # bridge.pipelines.registry.attach_bodies when the body models are installed.
        self.with_body: Pipeline[Any, Any] | None = None
        # Serves sessions opened with both (camera: face and body; voice: mouth); set with `with_body`
        # when a speech model is loaded too.
        self.with_body_speech: Pipeline[Any, Any] | None = None

    @property
    def variants(self) -> tuple[Pipeline[Any, Any], ...]:
        variants = (self.with_speech, self.with_body, self.with_body_speech)
        return tuple(p for p in variants if p is not None)

    def variant(self, options: Mapping[str, Any]) -> Pipeline[Any, Any]:
        if options.get("body") is True:
            if self.with_body is None:
                raise ProtocolError(
                    ErrorCode.BAD_VALUE,
                    "face: option 'body' needs the body models; run `avatar-bridge models install body`",
                )
            if options.get("speech") is not True:
                return self.with_body
            if self.with_body_speech is None:
                raise ProtocolError(
                    ErrorCode.BAD_VALUE, "face: option 'speech' needs a speech model; none is loaded"
                )
            return self.with_body_speech
        if options.get("speech") is not True:
            return self
        if self.with_speech is None:
            raise ProtocolError(
                ErrorCode.BAD_VALUE, "face: option 'speech' needs a speech model; none is loaded"
            )
        return self.with_speech

    # ------------------------------------------------------------------ sessions
    def open_session(self, options: dict[str, Any]) -> TrackingState:
        allowed: dict[str, type | tuple[type, ...]] = {
            "blendshapes": bool,
            "smoothing": bool,
            "mirror": bool,
            "select": str,
            "speech": bool,  # true: served by the voiced variant (`variant`)
            "body": bool,  # true: served by the body-tracking variant (`variant`)
            **{f"smoothing_{g}": (int, float) for g in SMOOTHING_DEFAULTS},
        }
        check_options(self.name, options, allowed)
        select = options.get("select", "largest")
        if select not in ("largest", "central"):
            raise ProtocolError(ErrorCode.BAD_VALUE, "face: option 'select' must be 'largest' or 'central'")
        cutoffs = {g: float(options.get(f"smoothing_{g}", d[0])) for g, d in SMOOTHING_DEFAULTS.items()}
        if any(not 0 < c <= 1000 for c in cutoffs.values()):
            raise ProtocolError(ErrorCode.BAD_VALUE, "face: smoothing_* cutoffs must be in (0, 1000] Hz")
        return TrackingState(
            mirror=bool(options.get("mirror", False)),
            select=select,
            blendshapes=bool(options.get("blendshapes", True)),
            smoothing=bool(options.get("smoothing", True)),
            min_cutoff=min_cutoffs(cutoffs),
            slot=self.face_post.open(),
        )

    def rig(self, state: TrackingState) -> FaceRig:
        return FaceRig(
            expression=(),  # no FLAME codes from this model
            eyelids=FACE_EYELID_NAMES,
            blendshapes=ARKIT_NAMES if state.blendshapes else (),
            unsupported=UNSUPPORTED if state.blendshapes else (),
            extras=("head_position", "gaze"),
        )

    def calibrate(self, state: TrackingState, request: Calibrate | None = None) -> None:
        """Take the next tracked frame as the user's neutral face (per-channel offset and gain); the
        request carries nothing the face needs (the I/O thread calls this; the flag is read by the
        scheduler thread on the next frame)."""
        state.calibrate_next = True

    # ------------------------------------------------------------------ pre-process
    def prepare(self, state: TrackingState, item: Input) -> list[Step[TrackStep]]:
        yield_to_realtime()  # camera work runs below motion and speech (bridge.runtime.cpu_priority)
        if self.device_path is not None:
            return [self.device_path.prepare(state, item)]
        assert isinstance(item, ImageInput)
        image = item.pixels
        if state.mirror:
            image = cv2.flip(image, 1)
        dark = float(image[::8, ::8].mean()) < DARK_LUMA
        roi = state.roi if state.roi is not None else self._detect(state, image)
        h, w = image.shape[:2]
        if roi is None:
            return [Step(TrackStep(None, np.zeros((2, 3)), (w, h), dark), item.seq, item.t_capture_ns)]
        crop, m = geo.crop(image, roi)
        return [Step(TrackStep(crop, m, (w, h), dark), item.seq, item.t_capture_ns)]

    def _detect(self, state: TrackingState, image: npt.NDArray[np.uint8]) -> geo.Roi | None:
        tensor, scale, px, py = geo.letterbox(image)
        out, _ = self.detector.run({"face.detector_image": tensor[None]})
        found = geo.decode_detections(
            out["face.detections"][0], out["face.detection_scores"][0], scale, px, py
        )
        h, w = image.shape[:2]
        return followed_face(found, state.select, w, h)

    # ------------------------------------------------------------------ engines
    def run_batch(self, states: Sequence[TrackingState], steps: Sequence[Step[TrackStep]]) -> BatchResult:
        yield_to_realtime()
        if self.device_path is not None:
            return self.device_path.run_batch(states, steps)
        n = len(steps)
        for state in states:
            state.roi = None  # re-detect next frame unless a face is followed below
        live = [i for i, s in enumerate(steps) if s.payload.crop is not None]
        if not live:
            return BatchResult(TrackedFaces.none(n), 0.0)
        # Bytes (a quarter of the float planes), stacked in the engine's staging buffer: the torch
        # backend makes the planes on the device (bridge.runtime.images).
        crops = self.engine.input_buffer(
            "face.mesh_image", (len(live), geo.MESH_SIZE, geo.MESH_SIZE, 3), np.uint8
        )
        np.stack([c for i in live if (c := steps[i].payload.crop) is not None], out=crops)
        t0 = time.perf_counter()
        out, _ = self.engine.run({"face.mesh_image": crops})
        to_image = np.stack([steps[i].payload.crop_to_image for i in live])
        lm = geo.project(out["face.landmarks"].reshape(len(live), -1, 3), to_image)
        ok = (out["face.presence"][:, 0] >= geo.MIN_PRESENCE) & np.isfinite(lm).all(axis=(1, 2))
        present = np.asarray(live, np.intp)[ok]
        lm = lm[ok]
        blend = np.zeros((len(present), len(MEDIAPIPE_NAMES)), np.float32)
        if len(present):
            subset = lm[:, geo.BLENDSHAPE_SUBSET, :2].astype(np.float32)
            blend = self.blendshape_engine.run({"face.landmark_subset": subset})[0]["arkit.blendshapes"]
        engine_us = (time.perf_counter() - t0) * 1e6
        # Follow each face from its landmarks next frame.
        for i, roi in zip(present.tolist(), geo.rois_from_landmarks(lm), strict=True):
            states[i].roi = roi
        size = np.array([steps[i].payload.size for i in present.tolist()], np.float64).reshape(-1, 2)
        pose = geo.fit_head_pose(lm, self.canonical.vertices, self.canonical.weights, size[:, 0], size[:, 1])
        where = np.full(n, -1, np.intp)
        where[present] = np.arange(len(present))
        arkit = np.where(ARKIT_FROM_MP >= 0, blend[:, ARKIT_FROM_MP], 0.0).astype(np.float32)
        rotvec = quat_to_axis_angle(matrix_to_quat(pose.rotation)).astype(np.float64)
        return BatchResult(TrackedFaces(where, lm, arkit, rotvec, pose.translation), engine_us)

    # ------------------------------------------------------------------ post-process
    def finish_batch(
        self,
        states: Sequence[TrackingState],
        sessions: Sequence[str],
        seqs: Sequence[int],
        steps: Sequence[Step[TrackStep]],
        result: BatchResult,
    ) -> list[list[bytes]]:
        faces = self.camera_faces(states, steps, result.rows)
        with_blendshapes = [s.blendshapes for s in states]
        frames = encode_tracked(
            sessions, seqs, steps, faces, with_blendshapes, engine_us=result.engine_us, batch=len(steps)
        )
        return [[frame] for frame in frames]

    def camera_faces(
        self, states: Sequence[TrackingState], steps: Sequence[Step[TrackStep]], rows: TrackedFaces
    ) -> CameraFace:
        """Each row's values for one frame: filtered, held and eased while the face is lost,
        calibrated; the sessions' rows of `face_post` advance (the sessions are distinct)."""
        n = len(states)
        found = rows.found
        tracked = np.zeros((n, N_CHANNELS), np.float32)
        k = rows.where[found]
        tracked[found, :N_BLEND] = rows.blend[k]
        tracked[found, HEAD_ROT] = rows.rotation[k]
        tracked[found, HEAD_POS] = rows.position[k]
        smooth = found & np.fromiter((s.smoothing for s in states), bool, n)
        min_cutoff = np.array(
            [s.min_cutoff for s, on in zip(states, smooth.tolist(), strict=True) if on], np.float32
        )
        calibrate = found & np.fromiter((s.calibrate_next for s in states), bool, n)
        for i in np.flatnonzero(calibrate).tolist():
            states[i].calibrate_next = False
        return self.face_post.camera(
            _slots(states),
            np.fromiter((s.t_capture_ns for s in steps), np.int64, n) / 1e9,
            tracked,
            found=found,
            smooth=smooth,
            min_cutoff=min_cutoff.reshape(-1, N_CHANNELS),
            calibrate=calibrate,
            dark=np.fromiter((s.payload.dark for s in steps), bool, n),
        )

    def held_faces(self, states: Sequence[TrackingState], lost_for_s: F64) -> CameraFace:
        """The sessions' last values `lost_for_s` (n,) seconds after the camera stopped (held, then
        eased as when the face is lost), calibrated, `face_found` false."""
        return self.face_post.held(_slots(states), lost_for_s)


def _slots(states: Sequence[TrackingState]) -> npt.NDArray[np.int64]:
    return np.fromiter((s.slot.index for s in states), np.int64, len(states))


def followed_face(found: Sequence[geo.Detection], select: str, width: int, height: int) -> geo.Roi | None:
    """The region of the face a session follows among a frame's detections (`select`: the largest, or
    the one nearest the centre of a `width` x `height` frame), or None when none was found."""
    if not found:
        return None
    if select == "central":
        key = [
            -math.hypot((d.box[0] + d.box[2]) / 2 - width / 2, (d.box[1] + d.box[3]) / 2 - height / 2)
            for d in found
        ]
    else:
        key = [float(np.prod(d.box[2:] - d.box[:2])) for d in found]
    return geo.roi_from_detection(found[int(np.argmax(key))])
