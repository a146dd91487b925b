"""Motion pipeline: music (PCM or feature rows) -> autoregressive dance step -> joint limits, low-pass -> frame.

Each output frame is one engine step. The recurrent state (h, c) and the previous pose live in the
session; one engine call steps every ready session at once (their state rows are stacked along the
manifest's batch axis and split back afterwards).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from bridge.filters.low_pass import QuatLowPass, VectorLowPass
from bridge.pipelines.base import BatchResult, Pipeline, Step
from bridge.pipelines.music_features import MusicFeatureStream
from bridge.pipelines.options import check_options
from bridge.pipelines.output_guard import MotionOutputGuard, stats_for
from bridge.protocol.codec import ProtocolError
from bridge.protocol.errors import ErrorCode
from bridge.protocol.frames import encode_motion_frame
from bridge.protocol.requests import AudioInput, FeaturesInput, Input
from bridge.rig import smpl
from bridge.rig.rotations import axis_angle_to_quat

FEATURE_COLS = 35
POSE_DIM = smpl.NUM_JOINTS * 3 + 3
DEFAULT_STYLE = "house"
DEFAULT_SMOOTHING = 0.5
_COORDINATES = {"handedness": "right", "up": "+y", "forward": "+z", "units": "m"}
_REST_OFFSETS = np.asarray(smpl.REST_OFFSETS, dtype="<f4").tobytes()


@dataclass
class MotionState:
    style: int
    state: dict[str, np.ndarray]  # recurrent tensors of this session, batch of one
    previous_pose: np.ndarray  # (75,) what the model produced last step, after joint limits
    joints_filter: QuatLowPass | None
    root_filter: VectorLowPass | None
    guard: MotionOutputGuard
    features: MusicFeatureStream | None = None


def smoothing_cutoff_hz(smoothing: float, fps: float) -> float:
    """Map the user's 0..1 smoothing strength to a low-pass cutoff: 0.5 -> ~6 Hz at 60 fps."""
    return (fps / 2) * (1.0 - smoothing) ** 2 * 0.8


class MotionPipeline(Pipeline[MotionState, np.ndarray]):
    name: ClassVar[str] = "motion"
    accepts: ClassVar[tuple[str, ...]] = ("audio", "features")
    droppable: ClassVar[bool] = False  # autoregressive: every step counts

    def open_session(self, options: dict[str, Any]) -> MotionState:
        check_options(self.name, options, {"style": str, "smoothing": (float, int)})
        styles = self.engine.manifest.styles
        style = options.get("style", DEFAULT_STYLE if DEFAULT_STYLE in styles else styles[0])
        if style not in styles:
            raise ProtocolError(ErrorCode.BAD_VALUE, f"motion: unknown style '{style}' (known: {', '.join(styles)})")
        smoothing = float(options.get("smoothing", DEFAULT_SMOOTHING))
        if not 0.0 <= smoothing < 1.0:
            raise ProtocolError(ErrorCode.BAD_VALUE, f"motion: smoothing must be in [0, 1), got {smoothing}")
        cutoff = smoothing_cutoff_hz(smoothing, self.fps)
        return MotionState(
            style=styles.index(style),
            state=self.engine.initial_state(1),
            previous_pose=np.zeros(POSE_DIM, np.float32),
            joints_filter=QuatLowPass(smpl.NUM_JOINTS, cutoff) if smoothing > 0 else None,
            root_filter=VectorLowPass((3,), cutoff) if smoothing > 0 else None,
            guard=MotionOutputGuard(stats_for(self), lambda: self.open_session(options)),
        )

    def rig(self, state: MotionState) -> dict[str, Any]:
        return {
            "kind": "body",
            "coordinates": _COORDINATES,
            "quaternion_order": "xyzw",
            "joints": list(smpl.JOINT_NAMES),
            "parents": list(smpl.PARENTS),
            "rest_offsets": _REST_OFFSETS,
            "humanoid": [name or "" for name in smpl.UNITY_BONE_NAMES],
        }

    def validate(self, state: MotionState, item: Input) -> None:
        if isinstance(item, FeaturesInput) and item.rows.shape[1] != FEATURE_COLS:
            raise ProtocolError(
                ErrorCode.BAD_VALUE, f"motion: features need {FEATURE_COLS} columns, got {item.rows.shape[1]}"
            )

    def prepare(self, state: MotionState, item: Input) -> list[Step[np.ndarray]]:
        if isinstance(item, AudioInput):
            if state.features is None or state.features.sample_rate != item.rate:
                # A new rate restarts feature extraction; the dance itself (recurrent state) goes on.
                state.features = MusicFeatureStream(item.rate, self.fps)
            rows = state.features.push(item.samples)
        else:
            assert isinstance(item, FeaturesInput)
            rows = item.rows
        return [Step(row, item.seq, item.t_capture_ns) for row in rows]

    def run_batch(self, states: Sequence[MotionState], steps: Sequence[Step[np.ndarray]]) -> BatchResult:
        inputs = {
            "features": np.stack([s.payload for s in steps])[:, None, :].astype(np.float32, copy=False),
            "pose.previous": np.stack([s.previous_pose for s in states]),
            "style": np.array([s.style for s in states], dtype=np.int64),
        }
        axes = {p.input: p.batch_axis for p in self.engine.manifest.state}
        stacked = {name: np.concatenate([s.state[name] for s in states], axis=axis) for name, axis in axes.items()}
        t0 = time.perf_counter()
        outputs, new_state = self.engine.run(inputs, stacked)
        engine_us = (time.perf_counter() - t0) * 1e6
        for name, axis in axes.items():
            for i, part in enumerate(np.split(new_state[name], len(states), axis=axis)):
                states[i].state[name] = part
        pose = np.concatenate((outputs["pose.axis_angle"][:, 0], outputs["pose.root_translation"][:, 0]), axis=1)
        return BatchResult(list(pose), engine_us)

    def finish(
        self, state: MotionState, session: str, seq: int, step: Step[np.ndarray], row: Any, result: BatchResult
    ) -> bytes:
        pose = state.guard.apply(row, 1.0 / self.fps)
        state.previous_pose = pose
        state.guard.restart_if_due(state)
        joints = axis_angle_to_quat(pose[:72].reshape(smpl.NUM_JOINTS, 3))
        root = pose[72:]
        dt = 1.0 / self.fps
        if state.joints_filter is not None and state.root_filter is not None:
            joints = state.joints_filter.filter(joints, dt)
            root = state.root_filter.filter(root, dt)
        return encode_motion_frame(
            session,
            seq,
            step.input_seq,
            step.t_capture_ns,
            joints=joints,
            root=root,
            engine_us=result.engine_us,
            batch=len(result.rows),
        )
