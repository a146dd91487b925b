"""A face-tracking session with the body: one camera frame -> the face (as `face` sessions) plus the
body's humanoid rotations, arms, hands and fingers included (docs/protocol.md 5.1.2, docs/body-tracking.md).

A `face` session opened with `body: true` runs on this pipeline: the face tracker's engines and the body
tracker's four (bridge.pipelines.body_tracking), each network called once per batch of sessions. The
landmarks become local rotations (bridge.rig.humanoid_solve; the head from the face), filtered per joint
group with One-Euro on the quaternions. While no body is found the last rotations hold, then ease to the
rest pose, as the face does; a lost hand does the same for its hand and fingers (bridge.tracking.body_post:
each session's state is a row of the pipeline's BodyPost at its slot).
`mirror` flips the frame before both trackers, so the avatar moves as a mirror image.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import cv2
import numpy as np
import numpy.typing as npt

from bridge.pipelines.base import BatchResult, Pipeline, Step
from bridge.pipelines.body_tracking import BodyRows, BodyStep, BodyTracker, BodyTrackState
from bridge.pipelines.face_tracking import FaceTrackingPipeline, TrackingState
from bridge.protocol.events import FaceRig
from bridge.protocol.requests import ImageInput, Input
from bridge.rig import humanoid_solve as hs
from bridge.rig.rotations import axis_angle_to_matrix
from bridge.state.slots import SlotLease
from bridge.tracking.body_post import BodyPost
from bridge.tracking.face_post import CameraFace, encode_tracked

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


@dataclass
class FaceBodyState:
    track: TrackingState
    body: BodyTrackState
    mirror: bool
    smoothing: bool
    slot: SlotLease  # this session's row of the pipeline's body rows (filter, holds, last rotations)


@dataclass(frozen=True)
class BodyFrames:
    """The body keys of n sessions' frames (docs/protocol.md 5.1.2), as encode_tracked takes them."""

    body: F32  # (n, joints, 4) local rotations
    found: list[bool]
    hands_found: list[tuple[bool, bool]]

    def keys(self) -> dict[str, Any]:
        return {"body": self.body, "body_found": self.found, "hands_found": self.hands_found}


@dataclass(frozen=True)
class _Rows:
    face: Any  # TrackedFaces
    body: BodyRows


class FaceBodyPipeline(Pipeline[FaceBodyState, Any]):
    name: ClassVar[str] = "face"
    accepts: ClassVar[tuple[str, ...]] = ("image",)
    droppable: ClassVar[bool] = True
    fair_share: ClassVar[bool] = True

    def __init__(self, tracker: FaceTrackingPipeline, body: BodyTracker) -> None:
        super().__init__(tracker.engine)
        self.tracker = tracker
        self.body = body
        # Every session's body post-processing state, a row per slot; the voiced variant's sessions
        # (another scheduler thread) hold rows here too.
        self.body_post = BodyPost()

    @property
    def model_name(self) -> str:
        return f"{self.tracker.model_name}+body"

    @property
    def batch_tiers(self) -> tuple[int, ...]:
        return self.tracker.batch_tiers

    def open_session(self, options: dict[str, Any]) -> FaceBodyState:
        track = self.tracker.open_session(options)
        mirror = track.mirror
        track.mirror = False  # the frame is flipped once, here, for both trackers
        return FaceBodyState(track, self.body.open(), mirror, track.smoothing, self.body_post.open())

    def rig(self, state: FaceBodyState) -> FaceRig:
        rig = self.tracker.rig(state.track)
        return replace(rig, extras=(*rig.extras, "body"), body=hs.body_rig())

    def calibrate(self, state: FaceBodyState, request: Any = None) -> None:
        self.tracker.calibrate(state.track, request)

    def prepare(self, state: FaceBodyState, item: Input) -> list[Step[Any]]:
        assert isinstance(item, ImageInput)
        if state.mirror:
            item = replace(item, pixels=cv2.flip(item.pixels, 1))
        face = self.tracker.prepare(state.track, item)[0]
        body = self.body.prepare(state.body, item.pixels, item.t_capture_ns / 1e9)
        return [Step((face.payload, body), item.seq, item.t_capture_ns)]

    def run_batch(self, states: Sequence[FaceBodyState], steps: Sequence[Step[Any]]) -> BatchResult:
        face_steps = [replace(s, payload=s.payload[0]) for s in steps]
        face = self.tracker.run_batch([s.track for s in states], face_steps)
        body_steps: list[BodyStep] = [s.payload[1] for s in steps]
        t0 = _now_us()
        rows = self.body.run([s.body for s in states], body_steps)
        return BatchResult(_Rows(face.rows, rows), face.engine_us + _now_us() - t0)

    def finish_batch(
        self,
        states: Sequence[FaceBodyState],
        sessions: Sequence[str],
        seqs: Sequence[int],
        steps: Sequence[Step[Any]],
        result: BatchResult,
    ) -> list[list[bytes]]:
        face, body = self.camera_frames(states, steps, result.rows)
        frames = encode_tracked(
            sessions,
            seqs,
            [replace(s, payload=s.payload[0]) for s in steps],
            face,
            [s.track.blendshapes for s in states],
            engine_us=result.engine_us,
            batch=len(steps),
            **body.keys(),
        )
        return [[frame] for frame in frames]

    def camera_frames(
        self, states: Sequence[FaceBodyState], steps: Sequence[Step[Any]], rows: Any
    ) -> tuple[CameraFace, BodyFrames]:
        """Each row's face (as FaceTrackingPipeline.camera_faces) and body for one frame, from
        run_batch's rows. Reads and writes the rows' session state."""
        rows_: _Rows = rows
        face_steps = [replace(s, payload=s.payload[0]) for s in steps]
        face = self.tracker.camera_faces([s.track for s in states], face_steps, rows_.face)
        heads = axis_angle_to_matrix(face.rotation.astype(np.float64))
        b = rows_.body
        solved = [
            hs.solve(
                hs.BodyObservation(
                    b.world[i],
                    b.visibility[i],
                    (bool(b.hand_found[i, 0]), bool(b.hand_found[i, 1])),
                    b.hand_world[i],
                ),
                heads[i],
            )
            if b.found[i]
            else None
            for i in range(len(states))
        ]
        body = self.body_post.camera(
            _slots(states),
            np.array([step.t_capture_ns / 1e9 for step in steps]),
            solved,
            np.asarray(b.hand_found, bool),
            np.fromiter((s.smoothing for s in states), bool, len(states)),
        ).astype(np.float32)
        hands = [(bool(h[0]), bool(h[1])) for h in b.hand_found]
        return face, BodyFrames(body, b.found.tolist(), hands)

    def held_frames(self, states: Sequence[FaceBodyState], lost_for_s: F64) -> tuple[CameraFace, BodyFrames]:
        """The sessions' face and body `lost_for_s` (n,) seconds after the camera's last frame: held,
        then eased to rest, as when tracking is lost (a voiced session's frames while no image comes)."""
        face = self.tracker.held_faces([s.track for s in states], lost_for_s)
        body = self.body_post.held(_slots(states), lost_for_s).astype(np.float32)
        return face, BodyFrames(body, [False] * len(states), [(False, False)] * len(states))


def _slots(states: Sequence[FaceBodyState]) -> npt.NDArray[np.int64]:
    return np.fromiter((s.slot.index for s in states), np.int64, len(states))


def _now_us() -> float:
    return time.perf_counter() * 1e6
