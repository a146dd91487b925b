"""Which pipeline serves which manifest `task`."""

from __future__ import annotations

from typing import Any

from bridge.pipelines.base import Pipeline
from bridge.pipelines.face import FacePipeline
from bridge.pipelines.face_tracking import FaceTrackingPipeline
from bridge.pipelines.motion import MotionPipeline
from bridge.pipelines.speech import SpeechPipeline

PIPELINES: dict[str, type[Pipeline[Any, Any]]] = {
    "face": FacePipeline,
    "face_landmarks": FaceTrackingPipeline,  # MediaPipe's mesh model; serves the `face` pipeline
    "motion": MotionPipeline,
    "speech": SpeechPipeline,
}
