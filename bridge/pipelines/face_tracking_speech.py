"""A face-tracking session with a voice: the camera drives eyes, brows, cheeks, nose and head, the voice
the mouth (the mixing rule of bridge.speech.mix), in one face frame stream (docs/speech.md).

A `face` session opened with the option `speech: true` runs on this pipeline: the face tracker's
engines and the speech model's, shared with the plain face and speech sessions, under a scheduler of
its own, so that one session's images and audio keep one order and one frame counter.

- Images make the frames, one each (the camera's rate): the camera's channels with the mouth mixed
  from the voice's latest speech frame. Latest wins, as in face sessions, but here in `prepare`: an
  image still queued when a newer one is prepared is skipped. The scheduler's inbox cannot drop for
  this pipeline, because audio must never be dropped.
- Audio: each 1/fps of audio is one speech step, which updates the voice's mouth. While no image has
  made a frame for CAMERA_STALE_S (bridge clock), each speech step also makes a frame: the camera's
  last values held, then eased to neutral as when the face is lost, `face_found` false, the mouth
  from the voice. So audio alone moves the mouth, at the speech model's rate.
- The voice counts as silent when its latest speech frame is older than VOICE_STALE_S (the audio
  stopped): its mouth then closes rather than freezing open. Each session's latest speech frame and
  crossfade weight are a row of the pipeline's VoiceMix at its slot (bridge.speech.mix).
- With `body: true` too, the camera's part is the body tracker's (bridge.pipelines.face_body): images
  move the face and the body, the voice the mouth; while no image comes the body holds, then eases to
  rest, as the face does.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from bridge.pipelines.base import BatchResult, Pipeline, Step
from bridge.pipelines.face_tracking import FaceTrackingPipeline, TrackingState
from bridge.pipelines.speech import SpeechPipeline, SpeechState, SpeechStep
from bridge.protocol.events import FaceRig
from bridge.protocol.requests import AudioInput, Calibrate, Input
from bridge.speech.mix import VoiceMix
from bridge.state.slots import SlotLease
from bridge.tracking.face_post import CameraFace, encode_tracked

if TYPE_CHECKING:
    from bridge.pipelines.face_body import FaceBodyPipeline

CAMERA_STALE_S = 0.2  # no image frame for this long: speech steps make the frames
VOICE_STALE_S = 0.2  # no speech frame for this long: the voice is silent


@dataclass(frozen=True)
class _Ran:
    """An image call's rows: which of the call's steps ran (the others were superseded), and the
    camera part's rows for them."""

    live: list[int]
    rows: Any


@dataclass
class VoicedState:
    track: TrackingState
    speech: SpeechState
    camera: Any  # the camera part's session state: `track`, or a FaceBodyState holding it
    slot: SlotLease  # its row of the pipeline's VoiceMix: the latest speech frame, the crossfade
    image_at: float = -math.inf  # when (monotonic) an image last made a frame
    queued_image: Step[Any] | None = None  # the image step prepared and not run yet (latest wins)


class FaceSpeechPipeline(Pipeline[VoicedState, Any]):
    name: ClassVar[str] = "face"
    accepts: ClassVar[tuple[str, ...]] = ("image", "audio")
    droppable: ClassVar[bool] = False  # audio is never dropped; images are superseded in prepare
    fair_share: ClassVar[bool] = True  # images: detection and cropping cost by pixels

    def __init__(
        self, tracker: FaceTrackingPipeline, speech: SpeechPipeline, body: FaceBodyPipeline | None = None
    ) -> None:
        super().__init__(tracker.engine)
        self.tracker = tracker
        self.speech = speech
        self.body = body  # the camera part tracks the body too (sessions opened with `body: true`)
        self.camera: FaceTrackingPipeline | FaceBodyPipeline = tracker if body is None else body
        self.voice_mix = VoiceMix(VOICE_STALE_S)

    @property
    def model_name(self) -> str:
        return f"{self.camera.model_name}+{self.speech.model_name}"

    @property
    def batch_tiers(self) -> tuple[int, ...]:
        """The tracker's tiers that the speech model can run too."""
        return tuple(t for t in self.tracker.batch_tiers if t <= self.speech.max_batch) or (1,)

    # ------------------------------------------------------------------ sessions
    def open_session(self, options: dict[str, Any]) -> VoicedState:
        camera: Any = self.camera.open_session(options)
        track: TrackingState = camera if self.body is None else camera.track
        speech = self.speech.open_session({"smoothing": options.get("smoothing", True)})
        return VoicedState(track, speech, camera, self.voice_mix.open())

    def rig(self, state: VoicedState) -> FaceRig:
        rig = self.camera.rig(state.camera)
        return replace(rig, unsupported=(), extras=(*rig.extras, "visemes", "vowels", "voice"))

    def calibrate(self, state: VoicedState, request: Calibrate | None = None) -> None:
        self.tracker.calibrate(state.track, request)

    def calibrate_voice(self, state: VoicedState, rate: int, samples: np.ndarray) -> dict[str, Any]:
        return self.speech.calibrate_voice(state.speech, rate, samples)

    def steps_for(self, state: VoicedState, item: Input) -> int:
        return self.speech.steps_for(state.speech, item) if isinstance(item, AudioInput) else 1

    def step_frames(self, step: Step[Any]) -> int:
        return 0 if step.payload is None else 1  # a superseded image makes nothing

    def batch_key(self, state: VoicedState, step: Step[Any]) -> str:
        return "speech" if isinstance(step.payload, SpeechStep) else "image"

    # ------------------------------------------------------------------ steps
    def prepare(self, state: VoicedState, item: Input) -> list[Step[Any]]:
        if isinstance(item, AudioInput):
            return list(self.speech.prepare(state.speech, item))
        steps: list[Step[Any]] = list(self.camera.prepare(state.camera, item))
        if state.queued_image is not None:
            state.queued_image.payload = None  # a newer image is here: skip the older one
        state.queued_image = steps[-1]
        return steps

    def run_batch(self, states: Sequence[VoicedState], steps: Sequence[Step[Any]]) -> BatchResult:
        if isinstance(steps[0].payload, SpeechStep):
            return self.speech.run_batch([s.speech for s in states], steps)
        for state, step in zip(states, steps, strict=True):
            if state.queued_image is step:
                state.queued_image = None
        live = [i for i, s in enumerate(steps) if s.payload is not None]
        if not live:
            return BatchResult(_Ran(live, None), 0.0)
        result = self.camera.run_batch([states[i].camera for i in live], [steps[i] for i in live])
        return BatchResult(_Ran(live, result.rows), result.engine_us)

    def finish_batch(
        self,
        states: Sequence[VoicedState],
        sessions: Sequence[str],
        seqs: Sequence[int],
        steps: Sequence[Step[Any]],
        result: BatchResult,
    ) -> list[list[bytes]]:
        now = time.monotonic()
        if isinstance(steps[0].payload, SpeechStep):
            return self._finish_speech(states, sessions, seqs, steps, result, now)
        ran: _Ran = result.rows
        live = ran.live  # a superseded image makes none
        if not live:
            return [[] for _ in steps]
        live_states, live_steps = [states[i] for i in live], [steps[i] for i in live]
        if self.body is None:
            face = self.tracker.camera_faces([s.track for s in live_states], live_steps, ran.rows)
            keys: dict[str, Any] = {}
        else:
            face, body = self.body.camera_frames([s.camera for s in live_states], live_steps, ran.rows)
            keys = body.keys()
        for state in live_states:
            state.image_at = now
        return self._frames(live, states, sessions, seqs, steps, face, keys, result.engine_us, len(live), now)

    def _finish_speech(
        self,
        states: Sequence[VoicedState],
        sessions: Sequence[str],
        seqs: Sequence[int],
        steps: Sequence[Step[Any]],
        result: BatchResult,
        now: float,
    ) -> list[list[bytes]]:
        self.voice_mix.heard(
            _slots(states), self.speech.mouths([s.speech for s in states], steps, result), now
        )
        # The camera makes the frames while it sends; otherwise this step makes one from its held values.
        rows = [i for i, state in enumerate(states) if now - state.image_at > CAMERA_STALE_S]
        if not rows:
            return [[] for _ in states]
        lost_for_s = now - np.array([states[i].image_at for i in rows])
        if self.body is None:
            face = self.tracker.held_faces([states[i].track for i in rows], lost_for_s)
            keys: dict[str, Any] = {}
        else:
            face, body = self.body.held_frames([states[i].camera for i in rows], lost_for_s)
            keys = body.keys()
        return self._frames(
            rows, states, sessions, seqs, steps, face, keys, result.engine_us, len(states), now
        )

    def _frames(
        self,
        rows: Sequence[int],
        call_states: Sequence[VoicedState],
        sessions: Sequence[str],
        seqs: Sequence[int],
        steps: Sequence[Step[Any]],
        face: CameraFace,
        camera_keys: dict[str, Any],
        engine_us: float,
        batch: int,
        now: float,
    ) -> list[list[bytes]]:
        """The call's frames: for each of `rows` (indices into the call; `face` and `camera_keys`, the
        body's, hold theirs) its camera face with its voice mixed into the mouth, encoded; the other
        rows make none."""
        states = [call_states[i] for i in rows]
        voiced = self.voice_mix.mixed(_slots(states), face.blend, face.found & ~face.dark, now)
        encoded = encode_tracked(
            [sessions[i] for i in rows],
            [seqs[i] for i in rows],
            [steps[i] for i in rows],
            replace(face, blend=voiced.blend),
            [state.track.blendshapes for state in states],
            engine_us=engine_us,
            batch=batch,
            visemes=voiced.visemes,
            vowels=voiced.vowels,
            voice=voiced.voice,
            **camera_keys,
        )
        frames: list[list[bytes]] = [[] for _ in call_states]
        for i, frame in zip(rows, encoded, strict=True):
            frames[i] = [frame]
        return frames


def _slots(states: Sequence[VoicedState]) -> np.ndarray:
    return np.fromiter((s.slot.index for s in states), np.int64, len(states))
