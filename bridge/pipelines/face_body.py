"""A face-tracking session with the body: one camera frame -> the face (as `face` sessions) plus the
body's humanoid rotations, arms, hands and fingers included (docs/protocol.md 5.1.2, docs/body-tracking.md).

A `face` session opened with `body: true` runs on this pipeline: the face tracker's engines and the body
tracker's four (bridge.pipelines.body_tracking), each network called once per batch of sessions. The
landmarks become local rotations (bridge.rig.humanoid_solve; the head from the face), filtered per joint
group with One-Euro on the quaternions. While no body is found the last rotations hold for HOLD_S, then
ease to the rest pose over EASE_S, as the face does; a lost hand does the same for its hand and fingers.
`mirror` flips the frame before both trackers, so the avatar moves as a mirror image.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import cv2
import numpy as np
import numpy.typing as npt

from bridge.filters.one_euro import OneEuroFilter
from bridge.pipelines.base import BatchResult, Pipeline, Step
from bridge.pipelines.body_tracking import BodyRows, BodyStep, BodyTracker, BodyTrackState
from bridge.pipelines.face_tracking import (
    EASE_S,
    HOLD_S,
    CameraFace,
    FaceTrackingPipeline,
    TrackingState,
    encode_tracked,
)
from bridge.protocol.events import FaceRig
from bridge.protocol.requests import ImageInput, Input
from bridge.rig import humanoid_solve as hs
from bridge.rig.rotations import axis_angle_to_matrix, axis_angle_to_quat, quat_to_axis_angle

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]

# One-Euro (min_cutoff Hz, beta) per joint group, on quaternion components: the torso steadiest,
# fingers the quickest to follow.
SMOOTHING: dict[str, tuple[float, float]] = {
    "torso": (1.0, 0.5),
    "arms": (1.5, 1.0),
    "legs": (1.0, 0.5),
    "fingers": (2.0, 1.0),
}
_HAND_JOINTS = tuple(
    tuple(
        i
        for i, n in enumerate(hs.NAMES)
        if n.startswith(side) and (n.endswith("Hand") or i in hs.GROUPS["fingers"])
    )
    for side in ("Left", "Right")
)


def _channel_params() -> tuple[F32, F32]:
    cutoff = np.empty((hs.N_JOINTS, 4), np.float32)
    beta = np.empty((hs.N_JOINTS, 4), np.float32)
    for group, joints in hs.GROUPS.items():
        cutoff[list(joints)], beta[list(joints)] = SMOOTHING[group]
    return cutoff.ravel(), beta.ravel()


_CUTOFF, _BETA = _channel_params()


def _rest() -> F64:
    q = np.zeros((hs.N_JOINTS, 4))
    q[:, 3] = 1.0
    return q


@dataclass
class _Hold:
    """Hold-then-ease bookkeeping for one set of joints."""

    since: float = math.nan  # when it was lost (capture clock, s); NaN while tracked
    start: F64 = field(default_factory=_rest)  # the rotations when it was lost


@dataclass
class FaceBodyState:
    track: TrackingState
    body: BodyTrackState
    mirror: bool
    smoothing: bool
    filter: OneEuroFilter = field(default_factory=lambda: OneEuroFilter(hs.N_JOINTS * 4, _CUTOFF, _BETA))
    last: F64 = field(default_factory=_rest)  # the last output rotations
    body_hold: _Hold = field(default_factory=_Hold)
    t_last: float = math.nan  # capture clock (s) of the last image
    hand_hold: list[_Hold] = field(default_factory=lambda: [_Hold(), _Hold()])


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
        return FaceBodyState(track, BodyTrackState(), mirror, track.smoothing)

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
        body = np.stack(
            [
                self._rotations(state, rows_.body, i, heads[i], step.t_capture_ns / 1e9)
                for i, (state, step) in enumerate(zip(states, steps, strict=True))
            ]
        ).astype(np.float32)
        hands = [(bool(h[0]), bool(h[1])) for h in rows_.body.hand_found]
        return face, BodyFrames(body, rows_.body.found.tolist(), hands)

    def held_frames(self, states: Sequence[FaceBodyState], lost_for_s: F64) -> tuple[CameraFace, BodyFrames]:
        """The sessions' face and body `lost_for_s` (n,) seconds after the camera's last frame: held,
        then eased to rest, as when tracking is lost (a voiced session's frames while no image comes)."""
        face = self.tracker.held_faces([s.track for s in states], lost_for_s)
        body = np.stack(
            [
                state.last if math.isnan(t) else self._lost(state, t + age, since=t)
                for state, t, age in zip(states, [s.t_last for s in states], lost_for_s.tolist(), strict=True)
            ]
        ).astype(np.float32)
        return face, BodyFrames(body, [False] * len(states), [(False, False)] * len(states))

    def _rotations(self, state: FaceBodyState, rows: BodyRows, i: int, head: F64, t: float) -> F64:
        """One session's local rotations for this frame: solved, held or eased, filtered."""
        state.t_last = t
        if not rows.found[i]:
            return self._lost(state, t)
        state.body_hold.since = math.nan
        obs = hs.BodyObservation(
            rows.world[i],
            rows.visibility[i],
            (bool(rows.hand_found[i, 0]), bool(rows.hand_found[i, 1])),
            rows.hand_world[i],
        )
        q = hs.solve(obs, head)
        for side, joints in enumerate(_HAND_JOINTS):
            hold = state.hand_hold[side]
            if rows.hand_found[i, side]:
                hold.since = math.nan
                continue
            if math.isnan(hold.since):
                hold.since, hold.start = t, state.last.copy()
            idx = list(joints)
            q[idx] = _eased(hold.start[idx], t - hold.since)
        q *= np.where((q * state.last).sum(1, keepdims=True) < 0, -1.0, 1.0)  # the last's hemisphere
        if state.smoothing:
            q = (
                state.filter.filter(q.ravel().astype(np.float32), t)
                .reshape(hs.N_JOINTS, 4)
                .astype(np.float64)
            )
            q /= np.linalg.norm(q, axis=1, keepdims=True)
        state.last = q
        return q

    @staticmethod
    def _lost(state: FaceBodyState, t: float, since: float | None = None) -> F64:
        """The rotations at `t` (capture clock, s) with no body: the last held, then eased to rest;
        lost `since` then (default `t`) unless already lost."""
        hold = state.body_hold
        if math.isnan(hold.since):
            hold.since, hold.start = t if since is None else since, state.last.copy()
            state.filter.reset()
        state.last = _eased(hold.start, t - hold.since)
        return state.last


def _eased(start: F64, lost_for_s: float) -> F64:
    """Rotations `lost_for_s` seconds after tracking stopped: held HOLD_S, then eased to rest over EASE_S."""
    k = min(max((lost_for_s - HOLD_S) / EASE_S, 0.0), 1.0)
    eased: F64 = axis_angle_to_quat(quat_to_axis_angle(start) * (1.0 - k)).astype(np.float64)
    return eased


def _now_us() -> float:
    return time.perf_counter() * 1e6
