"""Face pipeline: RGB frame -> detect + aligned crop -> expression engine -> FLAME -> guard, filter -> frame.

Each session's guard, filter and last output are rows of the pipeline's stores at its slot
(bridge.state), stepped for a whole batch by index; a session whose outputs stay bad is hot-restarted
with fresh rows.

A session opened with `cropped: true` sends the aligned 224×224 crop itself (a client or plugin that
tracks the face on its own): no detection, every image is a face. A model without an eyelid output
(the EMOCA-size encoder pair) reports eyelids as 0 (open).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from bridge.filters.one_euro import flame_one_euro_rows
from bridge.filters.output_guard import RESTART_AFTER, FaceGuardRows
from bridge.pipelines.base import BatchResult, FailedRow, Pipeline, Step
from bridge.pipelines.options import check_options
from bridge.protocol.codec import ProtocolError
from bridge.protocol.errors import ErrorCode
from bridge.protocol.events import FACE_EXPRESSION_NAMES, FACE_EYELID_NAMES, FaceRig
from bridge.protocol.frames import encode_face_frame
from bridge.protocol.requests import ImageInput, Input, JpegInput
from bridge.rig import flame
from bridge.rig.arkit import ARKIT_NAMES
from bridge.rig.flame_to_arkit import FlameToArkit
from bridge.rig.rotations import axis_angle_to_quat
from bridge.runtime.cpu_priority import yield_to_realtime
from bridge.runtime.engine import Engine
from bridge.state.slots import SlotLease, SlotPool, grown
from bridge.vision.face_crop import FaceDetector, FaceTracker, crop_face

log = logging.getLogger(__name__)

CROP_SIZE = 224
# Output role -> its place in the bridge.rig.flame parameter vector.
_ROLES = {
    "flame.expression": flame.EXPRESSION,
    "flame.jaw": flame.JAW,
    "flame.head": flame.HEAD,
    "flame.eyelids": flame.EYELIDS,
}


@dataclass
class FaceState:
    tracker: FaceTracker | None  # None: opened with `cropped`, images are the aligned crop already
    smoothing: bool
    blendshapes: bool
    slot: SlotLease  # row of the pipeline's guard, filter and last-output rows
    options: dict[str, Any]  # what it was opened with, to rebuild it on a hot restart


class FacePipeline(Pipeline[FaceState, np.ndarray | None]):
    name: ClassVar[str] = "face"
    accepts: ClassVar[tuple[str, ...]] = ("image",)
    droppable: ClassVar[bool] = True  # only the newest camera frame matters
    fair_share: ClassVar[bool] = True  # images: detection and cropping cost by pixels

    _mapper = FlameToArkit.default()

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._local = threading.local()
        # Every session's guard, One-Euro filter and last output (held while no face is found), a row per
        # slot.
        self.slot_pool = SlotPool()
        self.guard = FaceGuardRows(self.guard_stats)
        self.smoother = flame_one_euro_rows()
        self.last = np.zeros((0, flame.FLAME_DIM), np.float32)

    def _detector(self) -> FaceDetector:
        """OpenCV's cascade classifier is not thread-safe and the scheduler may pre-process sessions
        on several threads (one session at a time on each): one detector per thread."""
        detector: FaceDetector | None = getattr(self._local, "detector", None)
        if detector is None:
            detector = self._local.detector = FaceDetector()
        return detector

    def open_session(self, options: dict[str, Any]) -> FaceState:
        check_options(self.name, options, {"blendshapes": bool, "smoothing": bool, "cropped": bool})
        return FaceState(
            tracker=None if options.get("cropped", False) else FaceTracker(self._detector()),
            smoothing=options.get("smoothing", True),
            blendshapes=options.get("blendshapes", True),
            slot=self.slot_pool.acquire(),
            options=options,
        )

    def rig(self, state: FaceState) -> FaceRig:
        return FaceRig(FACE_EXPRESSION_NAMES, FACE_EYELID_NAMES, ARKIT_NAMES if state.blendshapes else ())

    def validate(self, state: FaceState, item: Input) -> None:
        if (
            state.tracker is None
            and isinstance(item, ImageInput | JpegInput)
            and (item.height, item.width) != (CROP_SIZE, CROP_SIZE)
        ):
            h, w = item.height, item.width
            raise ProtocolError(
                ErrorCode.BAD_VALUE,
                f"face: a session opened with cropped takes {CROP_SIZE}x{CROP_SIZE} images (the aligned "
                f"face crop), got {w}x{h}",
            )

    def prepare(self, state: FaceState, item: Input) -> list[Step[np.ndarray | None]]:
        yield_to_realtime()  # camera work runs below motion and speech (bridge.runtime.cpu_priority)
        assert isinstance(item, ImageInput)
        if state.tracker is None:
            return [Step(item.pixels, item.seq, item.t_capture_ns)]
        state.tracker.detector = self._detector()
        box = state.tracker.update(item.pixels)
        crop = None if box is None else crop_face(item.pixels, box, CROP_SIZE)
        return [Step(crop, item.seq, item.t_capture_ns)]

    def run_batch(self, states: Sequence[FaceState], steps: Sequence[Step[np.ndarray | None]]) -> BatchResult:
        yield_to_realtime()
        found = [i for i, s in enumerate(steps) if s.payload is not None]
        rows: list[Any] = [None] * len(steps)
        if not found:
            return BatchResult(rows, 0.0)
        # The crops go to the engine as bytes, stacked in its own input buffer (pinned staging on the
        # torch backend, which turns them into float planes on the device; bridge.runtime.images).
        images = self.engine.input_buffer("image", (len(found), CROP_SIZE, CROP_SIZE, 3), np.uint8)
        np.stack([crop for s in steps if (crop := s.payload) is not None], out=images)
        t0 = time.perf_counter()
        outputs, _ = self.engine.run({"image": images})
        engine_us = (time.perf_counter() - t0) * 1e6
        params = np.zeros((len(found), flame.FLAME_DIM), np.float32)
        for role, place in _ROLES.items():
            if role in outputs:
                params[:, place] = outputs[role]
        for row, i in enumerate(found):
            rows[i] = params[row]
        return BatchResult(rows, engine_us)

    def finish_batch(
        self,
        states: Sequence[FaceState],
        sessions: Sequence[str],
        seqs: Sequence[int],
        steps: Sequence[Step[np.ndarray | None]],
        result: BatchResult,
    ) -> list[list[bytes]]:
        # The arithmetic (guard, One-Euro filter, rotations, ARKit map) runs over the batch as arrays,
        # the filter and last output on the sessions' rows by slot. Encoding is per session.
        self._prepare_rows()
        found = [i for i, row in enumerate(result.rows) if row is not None]
        params = self.last[_slots(states)]  # no face: the last output again
        if found:
            slots = _slots(states)[found]
            params[found] = self.guard.apply(slots, np.stack([result.rows[i] for i in found]))
            for i in np.flatnonzero(self.guard.restart_due(slots)).tolist():
                self._restart(states[found[i]])  # fresh rows: guard and filter
            self._prepare_rows()
            slots = _slots(states)
            smoothed = [i for i in found if states[i].smoothing]
            if smoothed:
                params[smoothed] = self.smoother.step(
                    slots[smoothed],
                    params[smoothed],
                    np.array([steps[i].t_capture_ns / 1e9 for i in smoothed]),
                )
            self.last[slots[found]] = params[found]
        rotations = axis_angle_to_quat(np.stack((params[:, flame.JAW], params[:, flame.HEAD]), axis=1))
        blendshapes = self._mapper.map_flame(params)
        frames: list[list[bytes]] = []
        for i, (state, session, seq, step) in enumerate(zip(states, sessions, seqs, steps, strict=True)):
            try:
                frame = encode_face_frame(
                    session,
                    seq,
                    step.input_seq,
                    step.t_capture_ns,
                    face_found=result.rows[i] is not None,
                    expression=params[i, flame.EXPRESSION],
                    eyelids=params[i, flame.EYELIDS],
                    jaw=rotations[i, 0],
                    head=rotations[i, 1],
                    blendshapes=blendshapes[i] if state.blendshapes else None,
                    engine_us=result.engine_us,
                    batch=len(result.rows),
                )
                frames.append([frame])
            except Exception as exc:  # one row that cannot be encoded costs only its own session
                log.exception("face post-processing failed for session %s", session)
                frames.append(FailedRow(f"post-processing failed: {exc}"))
        return frames

    def _prepare_rows(self) -> None:
        """Grow the rows to the pool's and start new (or hot-restarted) sessions' rows afresh."""
        fresh = self.slot_pool.take_fresh()  # before the size: every fresh row is below it
        size = self.slot_pool.size
        self.guard.prepare(size, fresh)
        self.smoother.prepare(size, fresh)
        self.last = grown(self.last, size)
        self.last[fresh] = 0.0

    def _restart(self, state: FaceState) -> None:
        """Hot restart: rebuild the session in place (the scheduler and server hold it) from its open
        options, with a new slot whose rows start afresh; the old slot is freed when its lease goes."""
        vars(state).update(vars(self.open_session(state.options)))
        self.guard_stats.count_restart()
        log.warning("hot restart of a session after %d consecutive bad outputs", RESTART_AFTER)


def _slots(states: Sequence[FaceState]) -> np.ndarray:
    return np.fromiter((s.slot.index for s in states), np.int64, len(states))
