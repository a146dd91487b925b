"""Face tracking's post-processing one session at a time: the oracle for the batched forms in
bridge.pipelines.face_tracking (run_batch's projection, tracking region and head pose) and
bridge.tracking.face_post (finish_batch's filters, loss, calibration and frame encoding). The per-row
code the pipeline ran before it was batched, with the same engines: each frame of a batch is
projected, fitted, filtered and encoded alone (cv2.Rodrigues for the head's axis-angle, one One-Euro
filter object per session)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import cv2
import numpy as np
import numpy.typing as npt

from bridge.pipelines import face_tracking as ft
from bridge.pipelines.base import Step
from bridge.protocol.frames import encode_face_frame
from bridge.protocol.requests import ImageInput
from bridge.rig.arkit import ARKIT_NAMES
from bridge.rig.rotations import axis_angle_to_quat
from bridge.tracking import face_post as fp
from bridge.vision import face_geometry as geo
from tests.oracles.one_euro import OneEuroOracle

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
_ARKIT = {n: i for i, n in enumerate(ARKIT_NAMES)}


@dataclass
class RowState:
    """One session's state as the per-row code kept it (prepare reads mirror, select and roi)."""

    mirror: bool
    select: str
    blendshapes: bool
    smoother: OneEuroOracle | None
    roi: geo.Roi | None = None
    last: F32 = field(default_factory=lambda: np.zeros(fp.N_CHANNELS, np.float32))
    lost_since: float | None = None
    lost_from: F32 = field(default_factory=lambda: np.zeros(fp.N_CHANNELS, np.float32))
    offset: F32 = field(default_factory=lambda: np.zeros(fp.N_BLEND, np.float32))
    gain: F32 = field(default_factory=lambda: np.ones(fp.N_BLEND, np.float32))
    calibrate_next: bool = False


@dataclass(frozen=True)
class RowFace:
    landmarks: F64
    blend: F32
    rotation: F64
    position: F64


def open_row(pipeline: ft.FaceTrackingPipeline, options: dict[str, Any]) -> RowState:
    state = pipeline.open_session(options)  # the same option checks and cutoffs
    smoother = OneEuroOracle(fp.N_CHANNELS, state.min_cutoff, fp.BETA, 1.0) if state.smoothing else None
    return RowState(state.mirror, state.select, state.blendshapes, smoother)


def prepare(pipeline: ft.FaceTrackingPipeline, state: RowState, item: ImageInput) -> Step[ft.TrackStep]:
    return pipeline.prepare(cast(ft.TrackingState, state), item)[0]


def project(landmarks: F32, m: F64) -> F64:
    xy = landmarks[:, :2].astype(np.float64) @ m[:, :2].T + m[:, 2]
    z = landmarks[:, 2:3].astype(np.float64) * math.hypot(m[0, 0], m[1, 0])
    return np.concatenate([xy, z], 1)


def roi_from_landmarks(landmarks: F64) -> geo.Roi:
    lo, hi = landmarks[:, :2].min(0), landmarks[:, :2].max(0)
    side = float((hi - lo).max()) * geo.ROI_SCALE
    a, b = landmarks[geo.LEFT_EYE_OUTER], landmarks[geo.RIGHT_EYE_OUTER]
    angle = -math.atan2(-(b[1] - a[1]), b[0] - a[0])
    angle = (angle + math.pi) % (2 * math.pi) - math.pi
    return geo.Roi(float(lo[0] + hi[0]) / 2, float(lo[1] + hi[1]) / 2, side, side, angle)


def fit_head_pose(
    landmarks: F64, canonical: F64, weights: F64, image_w: int, image_h: int
) -> tuple[F64, F64]:
    obs = np.stack([landmarks[:468, 0], -landmarks[:468, 1], -landmarks[:468, 2]], 1)
    w = weights / weights.sum()
    mu_o, mu_c = w @ obs, w @ canonical
    o, c = obs - mu_o, canonical - mu_c
    cov = (o * w[:, None]).T @ c
    u, s, vt = np.linalg.svd(cov)
    d = np.sign(np.linalg.det(u @ vt))
    fix = np.diag([1.0, 1.0, d])
    rotation = u @ fix @ vt
    scale = float((s * np.diag(fix)).sum() / (w @ (c**2).sum(1)))
    focal = (image_h / 2) / math.tan(math.radians(63.0) / 2)
    centre = mu_o - scale * (rotation @ mu_c)
    translation = np.array(
        [(centre[0] - image_w / 2) / scale, (centre[1] + image_h / 2) / scale, -focal / scale]
    )
    return rotation, translation / 100.0


def run_batch(
    pipeline: ft.FaceTrackingPipeline, states: Sequence[RowState], steps: Sequence[Step[ft.TrackStep]]
) -> list[RowFace | None]:
    rows: list[RowFace | None] = [None] * len(steps)
    live = [i for i, s in enumerate(steps) if s.payload.crop is not None]
    for state in states:
        state.roi = None
    if not live:
        return rows
    crops = np.stack([c for i in live if (c := steps[i].payload.crop) is not None])
    out, _ = pipeline.engine.run({"face.mesh_image": crops})
    present = []
    for row, i in enumerate(live):
        lm = project(out["face.landmarks"][row].reshape(-1, 3), steps[i].payload.crop_to_image)
        ok = float(out["face.presence"][row, 0]) >= geo.MIN_PRESENCE and bool(np.isfinite(lm).all())
        states[i].roi = roi_from_landmarks(lm) if ok else None
        if ok:
            present.append((i, lm))
    if not present:
        return rows
    subset = np.stack([lm[geo.BLENDSHAPE_SUBSET, :2] for _, lm in present]).astype(np.float32)
    blend = pipeline.blendshape_engine.run({"face.landmark_subset": subset})[0]["arkit.blendshapes"]
    canonical = pipeline.canonical
    for k, (i, lm) in enumerate(present):
        w, h = steps[i].payload.size
        rotation, translation = fit_head_pose(lm, canonical.vertices, canonical.weights, w, h)
        arkit = np.where(ft.ARKIT_FROM_MP >= 0, blend[k][ft.ARKIT_FROM_MP], 0.0).astype(np.float32)
        rotvec = np.asarray(cv2.Rodrigues(rotation)[0], np.float64).ravel()
        rows[i] = RowFace(lm, arkit, rotvec, translation)
    return rows


def finish(
    state: RowState, session: str, seq: int, step: Step[ft.TrackStep], row: RowFace | None, batch: int
) -> bytes:
    t = step.t_capture_ns / 1e9
    if row is None:
        if state.lost_since is None:
            state.lost_since = t
            state.lost_from[:] = state.last
        k = min(max((t - state.lost_since - fp.HOLD_S) / fp.EASE_S, 0.0), 1.0)
        values = state.lost_from * np.float32(1.0 - k)
        values[fp.HEAD_POS] = state.lost_from[fp.HEAD_POS]
        state.last[:] = values
    else:
        values = np.concatenate([row.blend, row.rotation, row.position]).astype(np.float32)
        if state.smoother is not None:
            if state.lost_since is not None:
                state.smoother.reset()
            values = state.smoother.filter(values, t)
        state.lost_since = None
        state.last[:] = values
    if state.calibrate_next and row is not None:
        state.offset[:] = np.clip(values[: fp.N_BLEND], 0.0, 0.95)
        state.gain[:] = 1.0 / (1.0 - state.offset)
        state.calibrate_next = False
    blend = np.clip((values[: fp.N_BLEND] - state.offset) * state.gain, 0.0, 1.0).astype(np.float32)
    b = {n: float(blend[_ARKIT[n]]) for n in ARKIT_NAMES if n.startswith("EyeLook")}
    gaze = np.array(
        [
            (b["EyeLookOutLeft"] - b["EyeLookInLeft"]) * fp.GAZE_YAW,
            (b["EyeLookUpLeft"] - b["EyeLookDownLeft"]) * fp.GAZE_PITCH,
            (b["EyeLookInRight"] - b["EyeLookOutRight"]) * fp.GAZE_YAW,
            (b["EyeLookUpRight"] - b["EyeLookDownRight"]) * fp.GAZE_PITCH,
        ],
        np.float32,
    )
    side = blend[_ARKIT["JawLeft"]] - blend[_ARKIT["JawRight"]]
    jaw = np.array([blend[_ARKIT["JawOpen"]] * fp.JAW_OPEN_RAD, side * fp.JAW_SIDE_RAD, 0.0], np.float32)
    return encode_face_frame(
        session,
        seq,
        step.input_seq,
        step.t_capture_ns,
        face_found=row is not None,
        expression=np.zeros(0, np.float32),
        eyelids=blend[[_ARKIT["EyeBlinkLeft"], _ARKIT["EyeBlinkRight"]]],
        jaw=axis_angle_to_quat(jaw),
        head=axis_angle_to_quat(values[fp.HEAD_ROT]),
        blendshapes=blend if state.blendshapes else None,
        engine_us=0.0,
        batch=batch,
        head_position=values[fp.HEAD_POS],
        gaze=gaze,
        warnings=("too_dark",) if step.payload.dark else (),
    )
