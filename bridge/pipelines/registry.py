"""Which pipeline serves which manifest `task`."""

from __future__ import annotations

from typing import Any

from bridge.pipelines.base import Pipeline
from bridge.pipelines.face import FacePipeline
from bridge.pipelines.face_tracking import FaceTrackingPipeline
from bridge.pipelines.face_tracking_speech import FaceSpeechPipeline
from bridge.pipelines.motion import MotionPipeline
from bridge.pipelines.speech import SpeechPipeline

PIPELINES: dict[str, type[Pipeline[Any, Any]]] = {
    "face": FacePipeline,
    "face_landmarks": FaceTrackingPipeline,  # MediaPipe's mesh model; serves the `face` pipeline
    "motion": MotionPipeline,
    "speech": SpeechPipeline,
}


def attach_voices(pipelines: dict[str, dict[str, Pipeline[Any, Any]]], defaults: dict[str, str]) -> None:
    """Give every loaded face tracker the default speech model, for face sessions opened with
    `speech: true` (pipeline name -> model -> pipeline, and each pipeline's default model)."""
    speech = pipelines.get("speech", {}).get(defaults.get("speech", ""))
    if not isinstance(speech, SpeechPipeline):
        return
    for tracker in pipelines.get("face", {}).values():
        if isinstance(tracker, FaceTrackingPipeline):
            tracker.with_speech = FaceSpeechPipeline(tracker, speech)
