"""Body tracking: RGB frame -> 33 body landmarks (image and world) and 21 per hand, as MediaPipe Holistic.

The networks are MediaPipe Pose's and Holistic's hand models (bridge.models.mediapipe.body_convert),
run through the bridge's own engines. Per session: the pose detector only while no body is tracked
(in `prepare`, like the face's detector), then the body region from the last frame's auxiliary
landmarks. Per batch of sessions, one call each: pose landmarks over every tracked body; Holistic's hand
re-crop model over every visible wrist's search region (from the pose's wrist, pinky and index); the
hand landmark model over every hand, on the previous frame's hand region while it still agrees with the
re-crop, else on the re-crop's. Everything after each call works on the whole batch's arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bridge.backends import load_engine
from bridge.models.mediapipe.body_convert import MANIFESTS
from bridge.runtime.engine import Engine
from bridge.state.slots import SlotLease
from bridge.vision import body_geometry as bgeo
from bridge.vision import face_geometry as geo
from bridge.vision.face_geometry import Roi

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
U8 = npt.NDArray[np.uint8]
SIDES = 2  # the subject's left, right


@dataclass
class BodyTrackState:
    """What a session's body tracker keeps between frames (`BodyTracker.open`)."""

    aux: SlotLease  # this session's row of the tracker's auxiliary-landmark smoothing (bgeo.AuxRows)
    roi: Roi | None = None  # the body region to look in next; None: detect
    hand_rois: list[Roi | None] = field(default_factory=lambda: [None, None])
    hand_landmarks: list[F64 | None] = field(default_factory=lambda: [None, None])


@dataclass(frozen=True)
class BodyStep:
    image: U8  # the (mirrored, where asked) frame: the hands are cropped from it after the pose
    crop: U8 | None  # (256, 256, 3) body crop, or None when no body was found
    crop_to_image: F64
    t: float  # capture time, seconds


@dataclass(frozen=True)
class BodyRows:
    """One batch's bodies and hands; rows without a body have found False and zeros."""

    found: npt.NDArray[np.bool_]  # (n,)
    landmarks: F64  # (n, 33, 3) image pixels (z in x's scale)
    visibility: F64  # (n, 33)
    world: F64  # (n, 33, 3) metres, hip-centred, camera axes (x right, y down, z away)
    hand_found: npt.NDArray[np.bool_]  # (n, 2) left, right
    hands: F64  # (n, 2, 21, 3) image pixels
    hand_world: F64  # (n, 2, 21, 3) metres, camera axes

    @staticmethod
    def empty(n: int) -> BodyRows:
        return BodyRows(
            np.zeros(n, bool),
            np.zeros((n, bgeo.NUM_POSE, 3)),
            np.zeros((n, bgeo.NUM_POSE)),
            np.zeros((n, bgeo.NUM_POSE, 3)),
            np.zeros((n, SIDES), bool),
            np.zeros((n, SIDES, 21, 3)),
            np.zeros((n, SIDES, 21, 3)),
        )


class BodyTracker:
    """The four engines, the per-batch steps and every session's auxiliary-landmark smoothing, a row
    per slot; sessions keep a BodyTrackState each (`open`)."""

    def __init__(self, folder: Path, backend: str = "onnxruntime") -> None:
        self.detector = load_engine(folder / MANIFESTS["pose_detector"], backend=backend)
        self.pose = load_engine(folder / MANIFESTS["pose_landmarks"], backend=backend)
        self.recrop = load_engine(folder / MANIFESTS["hand_recrop"], backend=backend)
        self.hand = load_engine(folder / MANIFESTS["hand_landmarks"], backend=backend)
        self.aux = bgeo.AuxRows()

    def open(self) -> BodyTrackState:
        """A new session's tracking state, with its smoothing row (it starts afresh)."""
        return BodyTrackState(self.aux.open())

    def prepare(self, state: BodyTrackState, image: U8, t: float) -> BodyStep:
        """Detect when not tracking; crop the body region. `t`: the frame's capture time, seconds."""
        roi = state.roi if state.roi is not None else self.detect(image)
        if roi is None:
            return BodyStep(image, None, np.zeros((2, 3)), t)
        crop, m = geo.crop(image, roi, bgeo.POSE_SIZE, bgeo.BORDER)
        return BodyStep(image, crop, m, t)

    def detect(self, image: U8) -> Roi | None:
        tensor, back = bgeo.letterbox(image)
        out, _ = self.detector.run({"body.detector_image": tensor[None]})
        return bgeo.pose_roi_from_detection(out["body.detections"][0], out["body.detection_scores"][0], back)

    def run(self, states: list[BodyTrackState], steps: list[BodyStep]) -> BodyRows:
        """One frame of each session: pose, hand re-crop and hand landmarks, one engine call each."""
        n = len(steps)
        rows = BodyRows.empty(n)
        detected = [s.aux.index for s in states if s.roi is None]  # the region's smoothing starts afresh
        if detected:
            self.aux.reset(np.array(detected, np.int64))
        for state in states:
            state.roi = None
        live = [i for i, s in enumerate(steps) if s.crop is not None]
        if not live:
            self._forget_hands(states, rows.hand_found)
            return rows
        crops = self.pose.input_buffer(
            "body.pose_image", (len(live), bgeo.POSE_SIZE, bgeo.POSE_SIZE, 3), np.uint8
        )
        np.stack([c for i in live if (c := steps[i].crop) is not None], out=crops)
        out, _ = self.pose.run({"body.pose_image": crops})
        raw = out["body.landmarks"].reshape(len(live), -1, 5)
        to_image = np.stack([steps[i].crop_to_image for i in live])
        refined = bgeo.refine_from_heatmap(raw[..., :3], out["body.heatmap"])
        lm = geo.project(refined, to_image)
        ok = (out["body.presence"][:, 0] >= bgeo.MIN_POSE_PRESENCE) & np.isfinite(lm).all(axis=(1, 2))
        present = np.asarray(live, np.intp)[ok]
        lm, raw = lm[ok], raw[ok]
        angles = np.array([np.arctan2(m[1, 0], m[0, 0]) for m in to_image[ok]])
        world = bgeo.rotate_world(out["body.world_landmarks"].reshape(len(live), -1, 3)[ok], angles)
        aux = self.aux.step(
            np.fromiter((states[i].aux.index for i in present.tolist()), np.int64, len(present)),
            lm[:, [bgeo.AUX_CENTRE, bgeo.AUX_SCALE]],
            np.array([steps[i].t for i in present.tolist()], np.float64),
        )
        for i, roi in zip(present.tolist(), bgeo.pose_rois_from_aux(aux), strict=True):
            states[i].roi = roi
        rows.found[present] = True
        rows.landmarks[present] = lm[:, : bgeo.NUM_POSE]
        rows.visibility[present] = geo.sigmoid(raw[:, : bgeo.NUM_POSE, 3])
        rows.world[present] = world[:, : bgeo.NUM_POSE]
        self._hands(states, steps, rows, present)
        return rows

    def _hands(
        self,
        states: list[BodyTrackState],
        steps: list[BodyStep],
        rows: BodyRows,
        present: npt.NDArray[np.intp],
    ) -> None:
        # Every visible wrist of every body: (row, side).
        wanted = [
            (int(i), side)
            for i in present.tolist()
            for side in range(SIDES)
            if rows.visibility[i, bgeo.HAND_FROM_POSE[side, 0]] > bgeo.MIN_WRIST_VISIBILITY
        ]
        if wanted:
            points = np.stack([rows.landmarks[i, bgeo.HAND_FROM_POSE[side], :2] for i, side in wanted])
            search = bgeo.hand_rois_from_pose(points)
            images = [steps[i].image for i, _ in wanted]
            crops, m = _crop_into(self.recrop, "hand.recrop_image", images, search, bgeo.RECROP_SIZE)
            out, _ = self.recrop.run({"hand.recrop_image": crops})
            two = out["hand.recrop"].reshape(len(wanted), 2, 2).astype(np.float64)
            two = two @ np.swapaxes(m[:, :, :2], 1, 2) + m[:, None, :, 2]
            rois = bgeo.hand_rois_from_recrop(two)
            for k, (i, side) in enumerate(wanted):
                previous, prev_lm = states[i].hand_rois[side], states[i].hand_landmarks[side]
                if (
                    previous is not None
                    and prev_lm is not None
                    and bgeo.keep_tracking(previous, rois[k], prev_lm)
                ):
                    rois[k] = previous
            crops, m = _crop_into(self.hand, "hand.image", images, rois, bgeo.HAND_SIZE)
            out, _ = self.hand.run({"hand.image": crops})
            raw = out["hand.landmarks"].reshape(len(wanted), 21, 3).copy()
            raw[..., 2] /= bgeo.HAND_NORMALIZE_Z
            lm = geo.project(raw, m)
            angles = np.arctan2(m[:, 1, 0], m[:, 0, 0])
            world = bgeo.rotate_world(out["hand.world_landmarks"].reshape(len(wanted), 21, 3), angles)
            ok = (out["hand.presence"][:, 0] >= bgeo.MIN_HAND_PRESENCE) & np.isfinite(lm).all(axis=(1, 2))
            for k, (i, side) in enumerate(wanted):
                if ok[k]:
                    rows.hand_found[i, side] = True
                    rows.hands[i, side] = lm[k]
                    rows.hand_world[i, side] = world[k]
        self._forget_hands(states, rows.hand_found, rows.hands)

    @staticmethod
    def _forget_hands(
        states: list[BodyTrackState], found: npt.NDArray[np.bool_], hands: F64 | None = None
    ) -> None:
        """Keep each found hand's landmarks and region for the next frame's tracking; drop lost ones."""
        for i, state in enumerate(states):
            for side in range(SIDES):
                if hands is not None and found[i, side]:
                    lm = hands[i, side]
                    state.hand_landmarks[side] = lm.copy()
                    state.hand_rois[side] = bgeo.hand_rois_from_landmarks(lm[None])[0]
                else:
                    state.hand_landmarks[side] = None
                    state.hand_rois[side] = None


def _crop_into(engine: Engine, name: str, images: list[U8], rois: list[Roi], size: int) -> tuple[U8, F64]:
    """Each image's region cropped (size x size) into `engine`'s input buffer `name`, and the stacked
    maps from crop pixels back to each image's."""
    crops = engine.input_buffer(name, (len(rois), size, size, 3), np.uint8)
    maps = []
    for k, (image, roi) in enumerate(zip(images, rois, strict=True)):
        crops[k], m = geo.crop(image, roi, size, bgeo.BORDER)
        maps.append(m)
    return crops, np.stack(maps)
