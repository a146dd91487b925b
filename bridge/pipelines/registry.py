"""Which pipeline serves which manifest `task`."""

from __future__ import annotations

import logging
from typing import Any

from bridge.pipelines.base import Pipeline
from bridge.pipelines.face_flame import FacePipeline
from bridge.pipelines.face_tracking import FaceTrackingPipeline
from bridge.pipelines.face_tracking_speech import FaceSpeechPipeline
from bridge.pipelines.motion import MotionPipeline
from bridge.pipelines.speech import SpeechPipeline

log = logging.getLogger(__name__)

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


def attach_bodies(pipelines: dict[str, dict[str, Pipeline[Any, Any]]]) -> None:
    """Give every loaded face tracker the body tracker, for face sessions opened with `body: true` (and
    with `speech: true` too, when attach_voices gave it a voice), when the body models are installed
    (`avatar-bridge models install body`); converted on first use."""
    trackers = [t for t in pipelines.get("face", {}).values() if isinstance(t, FaceTrackingPipeline)]
    if not trackers:
        return
    from bridge.models.mediapipe.body_convert import ensure_converted
    from bridge.models.mediapipe.body_locate import BodyModelError, locate
    from bridge.pipelines.body_tracking import BodyTracker
    from bridge.pipelines.face_body import FaceBodyPipeline

    try:
        folder = ensure_converted(locate())
    except BodyModelError as exc:
        log.info("body tracking off: %s", exc)
        return
    for tracker in trackers:
        body = FaceBodyPipeline(tracker, BodyTracker(folder, tracker.engine.backend.name))
        tracker.with_body = body
        if isinstance(tracker.with_speech, FaceSpeechPipeline):  # attach_voices ran first
            tracker.with_body_speech = FaceSpeechPipeline(tracker, tracker.with_speech.speech, body)
    log.info("body tracking: face sessions opened with body: true (models in %s)", folder)
