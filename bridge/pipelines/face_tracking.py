"""Face tracking: RGB frame -> 52 ARKit blendshapes, head rotation and position, eye gaze.

MediaPipe FaceLandmarker's three networks through the bridge's own engines: BlazeFace (only while
no face is tracked) -> rotated region from its eye keypoints -> 478-point mesh, batched across
sessions -> the next frame's region from these landmarks (re-detection when presence drops) ->
blendshapes from the 146-landmark subset, batched -> head pose fitted to the canonical mesh -> gaze
from the eyeLook channels -> per-channel One-Euro, neutral calibration -> frame.

The served engine is the mesh model (manifest task `face_landmarks`); the detector, blendshape model
and canonical mesh are loaded from `parts/` beside it (bridge.models.mediapipe.convert's layout).
FLAME expression codes are never produced: frames carry none and the rig says so. Jaw and eyelids
are derived from jawOpen / jawLeft / jawRight and eyeBlink (approximations, docs/face-tracking.md).

Tracking loss: while no face is found, the frame says so (`face_found` false) and the last values
hold for HOLD_S, then ease to neutral over EASE_S.

Everything after the engine calls works on the whole batch at once (no Python step per face but
building each frame's message): projection, tracking regions and head pose in `run_batch`; filters,
loss, calibration and the frame's values in `finish_batch`, over each session's state rows stacked
for the batch (`TrackingState.channels` and `clock`) and written back.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import cv2
import numpy as np
import numpy.typing as npt

from bridge.backends import load_engine
from bridge.filters.one_euro import D_CUTOFF_DEFAULT, one_euro_rows
from bridge.pipelines.base import BatchResult, Pipeline, Step
from bridge.pipelines.options import check_options
from bridge.protocol.codec import ProtocolError
from bridge.protocol.errors import ErrorCode
from bridge.protocol.events import FACE_EYELID_NAMES, FaceRig
from bridge.protocol.frames import encode_face_frame
from bridge.protocol.requests import Calibrate, ImageInput, Input, JpegInput
from bridge.rig.arkit import ARKIT_NAMES
from bridge.rig.canonical_face import parse_canonical_mesh
from bridge.rig.rotations import axis_angle_to_quat, matrix_to_quat, quat_to_axis_angle
from bridge.runtime.cpu_priority import yield_to_realtime
from bridge.runtime.engine import Engine
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
_ARKIT = {n: i for i, n in enumerate(ARKIT_NAMES)}
# Filter channels: 52 blendshapes (ARKit order), head rotation (axis-angle, 3), head position (3).
N_BLEND = len(ARKIT_NAMES)
HEAD_ROT = slice(N_BLEND, N_BLEND + 3)
HEAD_POS = slice(N_BLEND + 3, N_BLEND + 6)
N_CHANNELS = N_BLEND + 6
# A session's state rows (TrackingState.channels), each N_CHANNELS wide: the One-Euro filter's value
# and derivative, the last output, the values when the face was lost, and the neutral calibration's
# offset and gain (blendshape columns only; the rest unused).
FILTER_VALUE, FILTER_DERIVATIVE, LAST, LOST_FROM, OFFSET, GAIN = range(6)
# Its clock (TrackingState.clock): the filter's last sample time (s), when the face was lost (s; NaN
# while tracked), whether the filter has a sample (1.0) or starts afresh (0.0).
FILTER_T, LOST_SINCE, STARTED = range(3)
# One-Euro (min_cutoff Hz, beta) per group at camera rates: eyes lightest (blinks last ~100 ms),
# mouth heavier, brows/cheeks/nose steadier still; head in radians and metres.
SMOOTHING_DEFAULTS: dict[str, tuple[float, float]] = {
    "eyes": (4.0, 20.0),
    "mouth": (1.5, 5.0),
    "brows": (1.0, 2.0),
    "head": (1.0, 3.0),
}
HOLD_S = 0.5
EASE_S = 1.0
DARK_LUMA = 40.0  # mean luma (0-255) under which a frame is flagged too dark
# Gaze range the eyeLook channels span (ARKit-style rigs: about 30 degrees sideways, 25 up/down).
GAZE_YAW = math.radians(30.0)
GAZE_PITCH = math.radians(25.0)
# Jaw derived from the jaw channels: full jawOpen ~ 0.35 rad, full jawLeft/Right ~ 0.1 rad.
JAW_OPEN_RAD = 0.35
JAW_SIDE_RAD = 0.1


def _group(name: str) -> str:
    if name.startswith("Eye"):
        return "eyes"
    if name.startswith(("Mouth", "Jaw", "Tongue")):
        return "mouth"
    return "brows"


@dataclass
class TrackingState:
    mirror: bool
    select: str  # "largest" or "central": the face followed when several are detected
    blendshapes: bool
    smoothing: bool
    min_cutoff: F32  # (N_CHANNELS,) One-Euro min cutoff per channel, Hz
    roi: geo.Roi | None = None  # where to look next frame; None: detect
    channels: F32 = field(default_factory=lambda: _fresh_channels())  # rows FILTER_VALUE..GAIN
    clock: F64 = field(default_factory=lambda: np.array([0.0, math.nan, 0.0]))  # FILTER_T..STARTED
    calibrate_next: bool = False

    @property
    def last(self) -> F32:
        """The last output channels."""
        last: F32 = self.channels[LAST]
        return last


def _fresh_channels() -> F32:
    channels = np.zeros((6, N_CHANNELS), np.float32)
    channels[GAIN] = 1.0
    return channels


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

    def take(self, rows: Sequence[int]) -> TrackedFaces:
        """The given rows, in order (the face arrays are shared)."""
        return replace(self, where=self.where[np.asarray(rows, np.intp)])

    def spread(self, rows: Sequence[int], size: int) -> TrackedFaces:
        """These rows placed at `rows` of a batch of `size` rows; the others without a face."""
        where = np.full(size, -1, np.intp)
        where[np.asarray(rows, np.intp)] = self.where
        return replace(self, where=where)


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
        self.detector = load_engine(parts / DETECTOR_MANIFEST, backend=backend)
        # The blendshape model runs on the mesh's rows: on torch (CUDA graphs per tier) at the mesh
        # engine's tiers, so a top tier set above the manifest's 32 serves both in one call each.
        tiers = getattr(engine.backend, "batch_tiers", None) if backend == "torch" else None
        self.blendshape_engine = load_engine(
            parts / BLENDSHAPES_MANIFEST, backend=backend, **({"batch_tiers": tiers} if tiers else {})
        )
        self.canonical = parse_canonical_mesh(Path(parts / GEOMETRY).read_bytes())
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

    @property
    def variants(self) -> tuple[Pipeline[Any, Any], ...]:
        return tuple(p for p in (self.with_speech, self.with_body) if p is not None)

    def variant(self, options: Mapping[str, Any]) -> Pipeline[Any, Any]:
        if options.get("body") is True:
            if options.get("speech") is True:
                raise ProtocolError(
                    ErrorCode.BAD_VALUE, "face: options 'body' and 'speech' do not combine yet"
                )
            if self.with_body is None:
                raise ProtocolError(
                    ErrorCode.BAD_VALUE,
                    "face: option 'body' needs the body models; run `avatar-bridge models install body`",
                )
            return self.with_body
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
            min_cutoff=_min_cutoffs(cutoffs),
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
        calibrated. Reads and writes the rows' session state (the sessions are distinct)."""
        n = len(states)
        channels = np.stack([s.channels for s in states])  # (n, 6, C), a copy: written back below
        clock = np.stack([s.clock for s in states])  # (n, 3)
        t = np.fromiter((s.t_capture_ns for s in steps), np.int64, n) / 1e9
        found = rows.found
        lost = ~found
        values = np.empty((n, N_CHANNELS), np.float32)
        # Lost: hold the last values, then ease them to neutral.
        newly_lost = lost & np.isnan(clock[:, LOST_SINCE])
        clock[newly_lost, LOST_SINCE] = t[newly_lost]
        channels[newly_lost, LOST_FROM] = channels[newly_lost, LAST]
        values[lost] = eased(channels[lost, LOST_FROM], t[lost] - clock[lost, LOST_SINCE])
        # Found: filtered; a re-found face starts its filter afresh (no glide from where it was lost).
        k = rows.where[found]
        values[found, :N_BLEND] = rows.blend[k]
        values[found, HEAD_ROT] = rows.rotation[k]
        values[found, HEAD_POS] = rows.position[k]
        smooth = found & np.fromiter((s.smoothing for s in states), bool, n)
        if smooth.any():
            started = (clock[smooth, STARTED] > 0.0) & np.isnan(clock[smooth, LOST_SINCE])
            value, derivative, clock[smooth, FILTER_T] = one_euro_rows(
                values[smooth],
                t[smooth],
                channels[smooth, FILTER_VALUE],
                channels[smooth, FILTER_DERIVATIVE],
                clock[smooth, FILTER_T],
                started,
                np.stack([s.min_cutoff for s, on in zip(states, smooth.tolist(), strict=True) if on]),
                BETA,
                D_CUTOFF,
            )
            channels[smooth, FILTER_VALUE], channels[smooth, FILTER_DERIVATIVE] = value, derivative
            clock[smooth, STARTED] = 1.0
            values[smooth] = value
        clock[found, LOST_SINCE] = math.nan
        channels[:, LAST] = values
        # Neutral calibration: the next tracked frame's weights become the offsets.
        calibrate = found & np.fromiter((s.calibrate_next for s in states), bool, n)
        if calibrate.any():
            offset = np.clip(values[calibrate, :N_BLEND], 0.0, 0.95)
            channels[calibrate, OFFSET, :N_BLEND] = offset
            channels[calibrate, GAIN, :N_BLEND] = 1.0 / (1.0 - offset)
            for i in np.flatnonzero(calibrate).tolist():
                states[i].calibrate_next = False
        for state, c, k_ in zip(states, channels, clock, strict=True):
            state.channels, state.clock = c, k_
        dark = np.fromiter((s.payload.dark for s in steps), bool, n)
        return calibrated(channels, values, found=found, dark=dark)

    def held_faces(self, states: Sequence[TrackingState], lost_for_s: F64) -> CameraFace:
        """The sessions' last values `lost_for_s` (n,) seconds after the camera stopped (held, then
        eased as when the face is lost), calibrated, `face_found` false."""
        channels = np.stack([s.channels for s in states])
        held = eased(channels[:, LAST], lost_for_s)
        none = np.zeros(len(states), bool)
        return calibrated(channels, held, found=none, dark=none)


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


@dataclass(frozen=True)
class CameraFace:
    """What the camera says in one frame of n sessions, ready to encode (or to mix with a voice)."""

    found: npt.NDArray[np.bool_]  # (n,)
    blend: F32  # (n, 52) calibrated ARKit weights
    rotation: F32  # (n, 3) head axis-angle
    position: F32  # (n, 3) metres
    dark: npt.NDArray[np.bool_]  # (n,)


def eased(values: F32, lost_for_s: F64) -> F32:
    """Channels (n, C) `lost_for_s` (n,) seconds after the face was lost: held HOLD_S, then eased to
    neutral over EASE_S (head position holds: it has no neutral)."""
    k = np.clip((lost_for_s - HOLD_S) / EASE_S, 0.0, 1.0)
    out = values * (1.0 - k).astype(np.float32)[:, None]
    out[:, HEAD_POS] = values[:, HEAD_POS]
    return out


def calibrated(
    channels: F32, values: F32, *, found: npt.NDArray[np.bool_], dark: npt.NDArray[np.bool_]
) -> CameraFace:
    """Filtered channels (n, C) -> a CameraFace, each session's neutral calibration (its state rows
    `channels` (n, 6, C)) applied."""
    offset, gain = channels[:, OFFSET, :N_BLEND], channels[:, GAIN, :N_BLEND]
    blend = np.clip((values[:, :N_BLEND] - offset) * gain, 0.0, 1.0).astype(np.float32)
    return CameraFace(found, blend, values[:, HEAD_ROT], values[:, HEAD_POS], dark)


def encode_tracked(
    sessions: Sequence[str],
    seqs: Sequence[int],
    steps: Sequence[Step[Any]],
    face: CameraFace,
    with_blendshapes: Sequence[bool],
    *,
    engine_us: float,
    batch: int,
    visemes: F32 | None = None,
    vowels: F32 | None = None,
    voice: Sequence[bool] | None = None,
    body: F32 | None = None,
    body_found: Sequence[bool] | None = None,
    hands_found: Sequence[tuple[bool, bool]] | None = None,
) -> list[bytes]:
    """Face-tracking frames (docs/protocol.md 5.1), one per row, with the speech keys (visemes (n, 15),
    vowels (n, 5), voice (n,)) when a voice is mixed in, and the body keys (body (n, J, 4) local
    rotations, body_found (n,), hands_found (n,)) for body tracking (5.1.2). The derived channels are
    computed for all rows at once; only the message itself is built per row."""
    blend = face.blend
    eyelids = np.ascontiguousarray(blend[:, [_ARKIT["EyeBlinkLeft"], _ARKIT["EyeBlinkRight"]]])
    jaw = axis_angle_to_quat(jaw_rotation(blend)).astype(np.float32)
    head = axis_angle_to_quat(face.rotation).astype(np.float32)
    looks = gaze(blend)
    position = np.ascontiguousarray(face.position)
    no_expression = np.zeros(0, np.float32)
    too_dark = ("too_dark",)
    return [
        encode_face_frame(
            sessions[i],
            seqs[i],
            step.input_seq,
            step.t_capture_ns,
            face_found=found,
            expression=no_expression,
            eyelids=eyelids[i],
            jaw=jaw[i],
            head=head[i],
            blendshapes=blend[i] if with_blendshapes[i] else None,
            engine_us=engine_us,
            batch=batch,
            head_position=position[i],
            gaze=looks[i],
            warnings=too_dark if dark else (),
            visemes=None if visemes is None else visemes[i],
            vowels=None if vowels is None else vowels[i],
            voice=None if voice is None else voice[i],
            body=None if body is None else body[i],
            body_found=None if body_found is None else body_found[i],
            hands_found=None if hands_found is None else hands_found[i],
        )
        for i, (step, found, dark) in enumerate(
            zip(steps, face.found.tolist(), face.dark.tolist(), strict=True)
        )
    ]


# Each channel's smoothing group: blendshapes by name, then head rotation and position.
_GROUPS = (*(_group(n) for n in ARKIT_NAMES), *("head",) * 6)
BETA = np.array([SMOOTHING_DEFAULTS[g][1] for g in _GROUPS], np.float32)  # One-Euro beta per channel
D_CUTOFF = np.full(N_CHANNELS, D_CUTOFF_DEFAULT, np.float32)


def _min_cutoffs(cutoffs: dict[str, float]) -> F32:
    """One-Euro min cutoff per channel from each group's (a session's `smoothing_*` options)."""
    return np.array([cutoffs[g] for g in _GROUPS], np.float32)


# gaze's channels: (positive, negative, range) per output, left yaw, left pitch, right yaw, right pitch.
_GAZE = (
    ("EyeLookOutLeft", "EyeLookInLeft", GAZE_YAW),
    ("EyeLookUpLeft", "EyeLookDownLeft", GAZE_PITCH),
    ("EyeLookInRight", "EyeLookOutRight", GAZE_YAW),
    ("EyeLookUpRight", "EyeLookDownRight", GAZE_PITCH),
)
_GAZE_PLUS = np.array([_ARKIT[p] for p, _, _ in _GAZE], np.intp)
_GAZE_MINUS = np.array([_ARKIT[m] for _, m, _ in _GAZE], np.intp)
_GAZE_RANGE = np.array([r for _, _, r in _GAZE])


def gaze(blend: F32) -> F32:
    """Per eye (left, right) yaw and pitch in radians from the eyeLook channels (n, 52) -> (n, 4): yaw
    > 0 towards the subject's left, pitch > 0 up (rotations about +Y and -X of the wire axes)."""
    b = blend.astype(np.float64)
    looks: F32 = ((b[:, _GAZE_PLUS] - b[:, _GAZE_MINUS]) * _GAZE_RANGE).astype(np.float32)
    return looks


def jaw_rotation(blend: F32) -> F32:
    """FLAME-style jaw axis-angle (n, 3) from jawOpen (about +X) and jawLeft/jawRight (about Y)."""
    side = blend[:, _ARKIT["JawLeft"]] - blend[:, _ARKIT["JawRight"]]
    jaw = np.zeros((len(blend), 3), np.float32)
    jaw[:, 0] = blend[:, _ARKIT["JawOpen"]] * JAW_OPEN_RAD
    jaw[:, 1] = side * JAW_SIDE_RAD
    return jaw
