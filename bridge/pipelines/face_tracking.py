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
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import cv2
import numpy as np
import numpy.typing as npt

from bridge.filters.one_euro import OneEuroFilter
from bridge.pipelines import face_tracking_geometry as geo
from bridge.pipelines.base import BatchResult, Pipeline, Step
from bridge.pipelines.options import check_options
from bridge.protocol.codec import ProtocolError
from bridge.protocol.errors import ErrorCode
from bridge.protocol.events import FACE_EYELID_NAMES, FaceRig
from bridge.protocol.frames import encode_face_frame
from bridge.protocol.requests import Calibrate, ImageInput, Input
from bridge.rig.arkit import ARKIT_NAMES
from bridge.rig.canonical_face import parse_canonical_mesh
from bridge.rig.rotations import axis_angle_to_quat
from bridge.runtime.engine import Engine

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
    smoother: OneEuroFilter | None
    roi: geo.Roi | None = None  # where to look next frame; None: detect
    last: F32 = field(default_factory=lambda: _neutral())  # last output channels
    lost_since: float | None = None  # capture time (s) the face was lost
    lost_from: F32 = field(default_factory=lambda: _neutral())  # values when it was lost
    offset: F32 = field(default_factory=lambda: np.zeros(N_BLEND, np.float32))  # neutral calibration
    gain: F32 = field(default_factory=lambda: np.ones(N_BLEND, np.float32))
    calibrate_next: bool = False
    dark: bool = False


def _neutral() -> F32:
    return np.zeros(N_CHANNELS, np.float32)


@dataclass
class TrackStep:
    crop: F32 | None  # (3, 256, 256), or None when no face was found
    crop_to_image: F64
    size: tuple[int, int]  # image width, height
    dark: bool


@dataclass(frozen=True)
class TrackedFace:
    """One tracked face of one frame, before filtering (run_batch rows; None where none was found)."""

    landmarks: F64  # (478, 3) image pixels
    blend: F32  # (52,) ARKit order
    rotation: F64  # (3,) axis-angle
    position: F64  # (3,) metres


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
        self.detector = Engine.load(parts / DETECTOR_MANIFEST, backend=backend)
        self.blendshape_engine = Engine.load(parts / BLENDSHAPES_MANIFEST, backend=backend)
        self.canonical = parse_canonical_mesh(Path(parts / GEOMETRY).read_bytes())
        # Serves sessions opened with `speech: true` (bridge.pipelines.face_tracking_speech); set by
        # bridge.pipelines.registry.attach_voices when a speech model is loaded too.
        self.with_speech: Pipeline[Any, Any] | None = None

    @property
    def variants(self) -> tuple[Pipeline[Any, Any], ...]:
        return () if self.with_speech is None else (self.with_speech,)

    def variant(self, options: Mapping[str, Any]) -> Pipeline[Any, Any]:
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
            smoother=_smoother(cutoffs) if options.get("smoothing", True) else None,
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
        if not found:
            return None
        h, w = image.shape[:2]
        if state.select == "central":
            key = [
                -math.hypot((d.box[0] + d.box[2]) / 2 - w / 2, (d.box[1] + d.box[3]) / 2 - h / 2)
                for d in found
            ]
        else:
            key = [float(np.prod(d.box[2:] - d.box[:2])) for d in found]
        return geo.roi_from_detection(found[int(np.argmax(key))])

    # ------------------------------------------------------------------ engines
    def run_batch(self, states: Sequence[TrackingState], steps: Sequence[Step[TrackStep]]) -> BatchResult:
        rows: list[TrackedFace | None] = [None] * len(steps)
        live = [i for i, s in enumerate(steps) if s.payload.crop is not None]
        if not live:
            for state in states:
                state.roi = None
            return BatchResult(rows, 0.0)
        crops = np.stack([c for i in live if (c := steps[i].payload.crop) is not None])
        t0 = time.perf_counter()
        out, _ = self.engine.run({"face.mesh_image": crops})
        present = []
        for row, i in enumerate(live):
            step = steps[i].payload
            lm = geo.project(out["face.landmarks"][row].reshape(-1, 3), step.crop_to_image)
            ok = float(out["face.presence"][row, 0]) >= geo.MIN_PRESENCE and bool(np.isfinite(lm).all())
            # Follow the face from its landmarks; re-detect next frame when it is gone.
            states[i].roi = geo.roi_from_landmarks(lm) if ok else None
            if ok:
                present.append((i, lm))
        blend = np.zeros((len(present), len(MEDIAPIPE_NAMES)), np.float32)
        if present:
            subset = np.stack([lm[geo.BLENDSHAPE_SUBSET, :2] for _, lm in present]).astype(np.float32)
            blend = self.blendshape_engine.run({"face.landmark_subset": subset})[0]["arkit.blendshapes"]
        engine_us = (time.perf_counter() - t0) * 1e6
        for k, (i, lm) in enumerate(present):
            w, h = steps[i].payload.size
            pose = geo.fit_head_pose(lm, self.canonical.vertices, self.canonical.weights, w, h)
            arkit = np.where(ARKIT_FROM_MP >= 0, blend[k][ARKIT_FROM_MP], 0.0).astype(np.float32)
            rotvec = np.asarray(cv2.Rodrigues(pose.rotation)[0], np.float64).ravel()
            rows[i] = TrackedFace(lm, arkit, rotvec, pose.translation)
        for i in set(range(len(steps))) - set(live):
            states[i].roi = None
        return BatchResult(rows, engine_us)

    # ------------------------------------------------------------------ post-process
    def finish_batch(
        self,
        states: Sequence[TrackingState],
        sessions: Sequence[str],
        seqs: Sequence[int],
        steps: Sequence[Step[TrackStep]],
        result: BatchResult,
    ) -> list[list[bytes]]:
        return [
            [self._finish(state, session, seq, step, row, result)]
            for state, session, seq, step, row in zip(states, sessions, seqs, steps, result.rows, strict=True)
        ]

    def _finish(
        self,
        state: TrackingState,
        session: str,
        seq: int,
        step: Step[TrackStep],
        row: TrackedFace | None,
        result: BatchResult,
    ) -> bytes:
        face = self.camera_face(state, step, row)
        return encode_tracked(
            session,
            seq,
            step.input_seq,
            step.t_capture_ns,
            face,
            with_blendshapes=state.blendshapes,
            engine_us=result.engine_us,
            batch=len(result.rows),
        )

    def camera_face(self, state: TrackingState, step: Step[TrackStep], row: TrackedFace | None) -> CameraFace:
        """One frame's values: filtered, held and eased while the face is lost, calibrated."""
        t = step.t_capture_ns / 1e9
        if row is None:
            values = self._lost(state, t)
        else:
            values = np.concatenate([row.blend, row.rotation, row.position]).astype(np.float32)
            if state.smoother is not None:
                if state.lost_since is not None:
                    state.smoother.reset()  # a re-found face does not glide from where it was lost
                values = state.smoother.filter(values, t).copy()
            state.lost_since = None
            state.last[:] = values
        if state.calibrate_next and row is not None:
            state.offset[:] = np.clip(values[:N_BLEND], 0.0, 0.95)
            state.gain[:] = 1.0 / (1.0 - state.offset)
            state.calibrate_next = False
        return calibrated(state, values, found=row is not None, dark=step.payload.dark)

    def _lost(self, state: TrackingState, t: float) -> F32:
        """Hold the last values, then ease them to neutral."""
        if state.lost_since is None:
            state.lost_since = t
            state.lost_from[:] = state.last
        values = eased(state.lost_from, t - state.lost_since)
        state.last[:] = values
        return values


@dataclass(frozen=True)
class CameraFace:
    """What the camera says in one frame, ready to encode (or to mix with a voice)."""

    found: bool
    blend: F32  # (52,) calibrated ARKit weights
    rotation: F32  # (3,) head axis-angle
    position: F32  # (3,) metres
    dark: bool


def eased(values: F32, lost_for_s: float) -> F32:
    """Channels `lost_for_s` seconds after the face was lost: held HOLD_S, then eased to neutral over
    EASE_S (head position holds: it has no neutral)."""
    k = min(max((lost_for_s - HOLD_S) / EASE_S, 0.0), 1.0)
    out = values * np.float32(1.0 - k)
    out[HEAD_POS] = values[HEAD_POS]
    return out


def calibrated(state: TrackingState, values: F32, *, found: bool, dark: bool) -> CameraFace:
    """Filtered channels -> a CameraFace, the session's neutral calibration applied."""
    blend = np.clip((values[:N_BLEND] - state.offset) * state.gain, 0.0, 1.0).astype(np.float32)
    return CameraFace(found, blend, values[HEAD_ROT], values[HEAD_POS], dark)


def encode_tracked(
    session: str,
    seq: int,
    input_seq: int,
    t_capture_ns: int,
    face: CameraFace,
    *,
    with_blendshapes: bool,
    engine_us: float,
    batch: int,
    visemes: F32 | None = None,
    vowels: F32 | None = None,
    voice: bool | None = None,
) -> bytes:
    """A face-tracking frame (docs/protocol.md 5.1), with the speech keys when a voice is mixed in."""
    blend = face.blend
    return encode_face_frame(
        session,
        seq,
        input_seq,
        t_capture_ns,
        face_found=face.found,
        expression=np.zeros(0, np.float32),
        eyelids=blend[[_ARKIT["EyeBlinkLeft"], _ARKIT["EyeBlinkRight"]]],
        jaw=axis_angle_to_quat(jaw_rotation(blend)),
        head=axis_angle_to_quat(face.rotation),
        blendshapes=blend if with_blendshapes else None,
        engine_us=engine_us,
        batch=batch,
        head_position=face.position,
        gaze=gaze(blend),
        warnings=("too_dark",) if face.dark else (),
        visemes=visemes,
        vowels=vowels,
        voice=voice,
    )


def _smoother(cutoffs: dict[str, float]) -> OneEuroFilter:
    min_cutoff = np.empty(N_CHANNELS, np.float32)
    beta = np.empty(N_CHANNELS, np.float32)
    for i, name in enumerate(ARKIT_NAMES):
        group = _group(name)
        min_cutoff[i], beta[i] = cutoffs[group], SMOOTHING_DEFAULTS[group][1]
    min_cutoff[N_BLEND:], beta[N_BLEND:] = cutoffs["head"], SMOOTHING_DEFAULTS["head"][1]
    return OneEuroFilter(N_CHANNELS, min_cutoff, beta)


def gaze(blend: F32) -> F32:
    """Per eye (left, right) yaw and pitch in radians from the eyeLook channels: yaw > 0 towards the
    subject's left, pitch > 0 up (rotations about +Y and -X of the wire axes)."""
    b = {n: float(blend[_ARKIT[n]]) for n in ARKIT_NAMES if n.startswith("EyeLook")}
    return np.array(
        [
            (b["EyeLookOutLeft"] - b["EyeLookInLeft"]) * GAZE_YAW,
            (b["EyeLookUpLeft"] - b["EyeLookDownLeft"]) * GAZE_PITCH,
            (b["EyeLookInRight"] - b["EyeLookOutRight"]) * GAZE_YAW,
            (b["EyeLookUpRight"] - b["EyeLookDownRight"]) * GAZE_PITCH,
        ],
        np.float32,
    )


def jaw_rotation(blend: F32) -> F32:
    """FLAME-style jaw axis-angle from jawOpen (about +X) and jawLeft/jawRight (about Y)."""
    side = blend[_ARKIT["JawLeft"]] - blend[_ARKIT["JawRight"]]
    return np.array([blend[_ARKIT["JawOpen"]] * JAW_OPEN_RAD, side * JAW_SIDE_RAD, 0.0], np.float32)
