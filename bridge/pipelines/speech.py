"""Speech pipeline: PCM -> causal MFCC frames -> viseme classifier -> mouth shapes -> face frames.

One frame per output frame time j/fps (the manifest's fps; 30 for speech_visemes), from the audio up
to that time: the features look 0 samples ahead (bridge.audio.speech_features), so a frame is ready the
moment its audio has arrived. Frames are face frames with the ARKit mouth channels (the rest 0),
a jaw rotation from JawOpen, VRM A/I/U/E/O, the 15 viseme weights and a voice-activity flag.
Each session keeps its calibration and its feature stream (resampler and samples); the features'
state is a row of the pipeline's SpeechFeatureBatch and its smoothing one of its MouthRows, each at a
slot (bridge.state). `prepare` only feeds the audio; `run_batch` computes the features of every
session fed since the last batch at once, then one engine call classifies one frame of every session
that has one. Method and measurements: docs/speech.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from bridge.audio.speech_features import SpeechFeatureBatch, SpeechFeatureStream
from bridge.pipelines.base import BatchResult, Pipeline, Step
from bridge.pipelines.options import check_options
from bridge.protocol.codec import ProtocolError
from bridge.protocol.errors import ErrorCode
from bridge.protocol.events import FACE_EYELID_NAMES, FaceRig
from bridge.protocol.frames import encode_face_frame
from bridge.protocol.requests import AudioInput, Input
from bridge.rig.arkit import ARKIT_INDEX, ARKIT_NAMES
from bridge.rig.flame_to_arkit import _JAW_OPEN_FULL
from bridge.rig.rotations import axis_angle_to_quat
from bridge.runtime.engine import Engine
from bridge.speech.calibration import CalibrationError, load_reference, measure, offset, reference_path
from bridge.speech.mouth import MouthFrames, MouthRows
from bridge.speech.visemes import SPEECH_CHANNELS
from bridge.state.slots import SlotLease

_JAW_OPEN = ARKIT_INDEX["JawOpen"]
_UNSUPPORTED = tuple(n for i, n in enumerate(ARKIT_NAMES) if i not in SPEECH_CHANNELS)
_RIG = FaceRig(
    expression=(),
    eyelids=FACE_EYELID_NAMES,
    blendshapes=ARKIT_NAMES,
    unsupported=_UNSUPPORTED,
    extras=("visemes", "vowels", "voice"),
)
_NO_EYELIDS = np.zeros(len(FACE_EYELID_NAMES), np.float32)
_NO_EXPRESSION = np.zeros(0, np.float32)
_IDENTITY = np.array([0.0, 0.0, 0.0, 1.0], np.float32)


@dataclass
class SpeechState:
    smoothing: bool
    slot: SlotLease  # this session's row of the pipeline's MouthRows
    reference_db: float = math.nan  # the calibration vowels' level; NaN: the running peak
    offset: np.ndarray = field(default_factory=lambda: np.zeros(0))  # calibration's cepstral shift
    features: SpeechFeatureStream | None = None


@dataclass(frozen=True)
class SpeechStep:
    """One frame's features (FEATURE_DIM,) and level (1,): views of rows the features' batch fills
    before the engine runs (SpeechPipeline.run_batch)."""

    features: np.ndarray
    level: np.ndarray

    @property
    def level_db(self) -> float:
        return float(self.level[0])


class SpeechPipeline(Pipeline[SpeechState, SpeechStep]):
    name: ClassVar[str] = "speech"
    accepts: ClassVar[tuple[str, ...]] = ("audio",)
    droppable: ClassVar[bool] = False  # every frame of a voice counts

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.reference = load_reference(reference_path(engine.manifest.onnx_path))
        # Every session's loudness peak and smoothed mouth, a row per slot; the voiced face sessions
        # (another scheduler thread) hold rows here too.
        self.mouth_rows = MouthRows()
        # Every session's feature state, a row per stream, computed for all of them at once.
        self.features = SpeechFeatureBatch(self.fps)

    def open_session(self, options: dict[str, Any]) -> SpeechState:
        check_options(self.name, options, {"smoothing": bool})
        return SpeechState(smoothing=options.get("smoothing", True), slot=self.mouth_rows.open())

    def rig(self, state: SpeechState) -> FaceRig:
        return _RIG

    def steps_for(self, state: SpeechState, item: Input) -> int:
        return -(-len(item.samples) * int(self.fps) // item.rate) if isinstance(item, AudioInput) else 0

    def calibrate_voice(self, state: SpeechState, rate: int, samples: np.ndarray) -> dict[str, Any]:
        """The five vowels A, I, U, E, O said once: this session's cepstral offset and loudness."""
        if self.reference is None:
            raise ProtocolError(ErrorCode.BAD_VALUE, f"model {self.model_name} has no calibration reference")
        try:
            profile = measure(samples, rate, self.fps)
        except CalibrationError as exc:
            raise ProtocolError(ErrorCode.BAD_VALUE, str(exc)) from None
        state.offset = offset(self.reference, profile)
        state.reference_db = profile.level_db
        if state.features is not None:
            state.features.offset = state.offset  # the scheduler thread's stream picks it up
        return {"vowels": 5, "level_db": round(profile.level_db, 2)}

    def prepare(self, state: SpeechState, item: Input) -> list[Step[SpeechStep]]:
        assert isinstance(item, AudioInput)
        if state.features is None or state.features.sample_rate != item.rate:
            state.features = self.features.open(item.rate)  # a new rate restarts the analysis
            if state.offset.size:
                state.features.offset = state.offset
        # Rows filled by the next `run_batch` (self.features.run), for every session's audio at once;
        # the steps hold views of them.
        rows, levels = state.features.feed(item.samples)
        return [
            Step(SpeechStep(rows[i], levels[i : i + 1]), item.seq, item.t_capture_ns)
            for i in range(len(rows))
        ]

    def run_batch(self, states: Sequence[SpeechState], steps: Sequence[Step[SpeechStep]]) -> BatchResult:
        self.features.run()  # the features of all audio prepared since the last call
        features = np.stack([s.payload.features for s in steps])
        t0 = time.perf_counter()
        outputs, _ = self.engine.run({"speech.features": features})
        engine_us = (time.perf_counter() - t0) * 1e6
        return BatchResult(np.asarray(outputs["speech.visemes"], np.float32), engine_us)

    def mouths(
        self, states: Sequence[SpeechState], steps: Sequence[Step[SpeechStep]], result: BatchResult
    ) -> MouthFrames:
        """The batch's mouth shapes, vowels, visemes and voice flags (advances the sessions' smoothing)."""
        n = len(states)
        levels = np.fromiter((s.payload.level_db for s in steps), np.float32, n)
        smooth = np.fromiter((s.smoothing for s in states), bool, n)
        slots = np.fromiter((s.slot.index for s in states), np.int64, n)
        reference = np.fromiter((s.reference_db for s in states), np.float64, n)
        return self.mouth_rows.frames(slots, reference, result.rows, levels, self.fps, smooth)

    def finish_batch(
        self,
        states: Sequence[SpeechState],
        sessions: Sequence[str],
        seqs: Sequence[int],
        steps: Sequence[Step[SpeechStep]],
        result: BatchResult,
    ) -> list[list[bytes]]:
        n = len(states)
        mouth = self.mouths(states, steps, result)
        jaw_angle = np.zeros((n, 3), np.float32)
        jaw_angle[:, 0] = mouth.blendshapes[:, _JAW_OPEN] * _JAW_OPEN_FULL  # +x opens (FLAME)
        jaws = axis_angle_to_quat(jaw_angle)
        return [
            [
                encode_face_frame(
                    sessions[i],
                    seqs[i],
                    steps[i].input_seq,
                    steps[i].t_capture_ns,
                    face_found=True,  # the voice drives a face: frames are live, never "tracking lost"
                    expression=_NO_EXPRESSION,
                    eyelids=_NO_EYELIDS,
                    jaw=jaws[i],
                    head=_IDENTITY,
                    blendshapes=mouth.blendshapes[i],
                    engine_us=result.engine_us,
                    batch=n,
                    visemes=mouth.visemes[i],
                    vowels=mouth.vowels[i],
                    voice=bool(mouth.voice[i]),
                )
            ]
            for i in range(n)
        ]
