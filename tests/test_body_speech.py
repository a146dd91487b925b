"""A face session with the body and a voice (options `body: true` and `speech: true`): the camera moves the
face and the body, the voice the mouth, in one frame stream (the VTuber's camera and microphone in one
session; bridge.pipelines.face_tracking_speech over bridge.pipelines.face_body).

A real bridge on loopback serves MediaPipe's face tracker (converted from the installed bundle), the body
networks (`avatar-bridge models install body`) and the committed speech model; eSpeak NG says a phrase;
the person is scikit-image's astronaut with her mouth blacked out, so the mouth can only be the voice's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bridge.backends import load_engine
from bridge.clients.harness.client import BridgeClient
from bridge.models.mediapipe import body_locate
from bridge.models.mediapipe.body_convert import ensure_converted as ensure_body
from bridge.models.mediapipe.convert import SERVED_NAME
from bridge.pipelines.body_tracking import BodyTracker
from bridge.pipelines.face_body import FaceBodyPipeline
from bridge.pipelines.face_tracking import FaceTrackingPipeline
from bridge.pipelines.face_tracking_speech import FaceSpeechPipeline
from bridge.pipelines.speech import SpeechPipeline
from bridge.protocol import FaceFrame
from bridge.protocol.requests import AudioInput, ImageInput
from bridge.rig import humanoid_solve as hs
from bridge.runtime.manifest import load_manifest
from bridge.serving.server import Bridge
from bridge.speech.corpus import speak
from bridge.tracking.face_post import EASE_S, HOLD_S

from .conftest import MODELS, start_bridge, stop_bridge
from .test_face_speech import JAW, VOICE, feed, frames_of, masked_face, phrase
from .test_face_tracking import bundle, models  # noqa: F401  (fixtures: the face model, converted once a module)

skimage_data = pytest.importorskip("skimage.data")
ARM = hs.INDEX["LeftUpperArm"]


@pytest.fixture(scope="module")
def body_folder() -> Path:
    try:
        return ensure_body(body_locate.locate())
    except body_locate.BodyModelError as exc:
        pytest.skip(f"body models not installed (avatar-bridge models install body): {exc}")


@pytest.fixture(scope="module")
def served(models: Path, body_folder: Path) -> Iterator[Bridge]:  # noqa: F811
    server, thread = start_bridge(extra_model_dirs=(models,))
    yield server
    stop_bridge(server, thread)


def test_camera_moves_face_and_body_and_the_voice_the_mouth(served: Bridge) -> None:
    client = BridgeClient("127.0.0.1", served.sockets.request_port, timeout_s=10.0)
    try:
        client.hello()
        client.subscribe()
        time.sleep(0.05)
        opened = client.open("face", body=True, speech=True)
        sid = opened["session"]
        assert opened["accepts"] == ["image", "audio"] and opened["model"] == SERVED_NAME
        assert opened["rig"]["extras"] == ["head_position", "gaze", "body", "visemes", "vowels", "voice"]
        assert opened["rig"]["body"]["humanoid"][ARM] == "LeftUpperArm"
        pcm, rate, chunk = phrase()
        masked = masked_face()
        frames: list[FaceFrame] = []
        for k, start in enumerate(range(0, len(pcm) - 3 * chunk + 1, 3 * chunk)):  # 10 images a second
            client.send_audio(sid, k, pcm[start : start + 3 * chunk], rate)
            client.send_image(sid, k, masked)
            time.sleep(0.1)
        frames_of(client, sid, frames, lambda f: any(x.voice for x in f) and len(f) >= 10, 15.0)
        seen = [f for f in frames if f.face_found]
        assert seen and all(f.body_found and f.body.shape == (hs.N_JOINTS, 4) for f in seen)
        assert max(f.blendshapes[JAW] for f in frames) > 0.2 and any(f.voice for f in frames)
        # Audio alone, once the camera stops: frames keep coming, the body held (not found, not lost).
        for k in range(10):
            client.send_audio(sid, 100 + k, pcm[k * chunk : (k + 1) * chunk] * 0, rate)
            time.sleep(0.033)
        voiced_only: list[FaceFrame] = []
        frames_of(client, sid, voiced_only, lambda f: any(not x.face_found for x in f), 10.0)
        held = [f for f in voiced_only if not f.face_found]
        assert held and all(f.body_found is False and f.body.shape == (hs.N_JOINTS, 4) for f in held)
        client.close_session(sid)
    finally:
        client.close()


# ------------------------------------------------------------------------------ in process
@pytest.fixture(scope="module")
def voiced(models: Path, body_folder: Path) -> Iterator[FaceSpeechPipeline]:  # noqa: F811
    tracker = FaceTrackingPipeline(load_engine(models / f"{SERVED_NAME}.onnx"))
    speech = SpeechPipeline(load_engine(load_manifest(MODELS / "speech_visemes.manifest.json")))
    yield FaceSpeechPipeline(tracker, speech, FaceBodyPipeline(tracker, BodyTracker(body_folder)))
    for engine in (tracker.engine, tracker.detector, tracker.blendshape_engine, speech.engine):
        engine.close()


def turn_deg(q: np.ndarray) -> float:
    return float(np.degrees(2 * np.arccos(min(1.0, abs(float(q[3]))))))


def test_the_body_holds_then_eases_to_rest_while_only_the_voice_comes(voiced: FaceSpeechPipeline) -> None:
    """Images move the arms and a hidden mouth follows the voice; with audio alone the body holds its
    last pose for HOLD_S, then eases to rest by HOLD_S + EASE_S (ages set on the session's clock)."""
    state = voiced.open_session({"body": True, "speech": True, "smoothing": False})
    u = speak(VOICE, "Ah, ah.")
    chunk, masked = u.rate // 30, masked_face()
    frames: list[FaceFrame] = []
    for k, start in enumerate(range(0, len(u.audio) - chunk + 1, 2 * chunk)):
        audio = AudioInput(0, "s", k, 0, False, u.rate, u.audio[start : start + 2 * chunk])
        frames += feed(voiced, state, [audio, ImageInput(0, "s", k, k * 66_000_000, False, masked)])
    seen = [f for f in frames if f.face_found]
    assert seen and all(f.body_found for f in seen)
    assert max(f.blendshapes[JAW] for f in seen) > 0.2 and any(f.voice for f in seen)
    arm = seen[-1].body[ARM].copy()
    assert turn_deg(arm) > 20.0  # her arm is down, the rest pose's is out
    silence = AudioInput(0, "s", 999, 0, False, u.rate, np.zeros(chunk, np.int16))
    for age, held in ((HOLD_S / 2, True), (HOLD_S + EASE_S + 0.1, False)):
        state.image_at = time.monotonic() - age
        (frame,) = feed(voiced, state, [silence])
        assert not frame.face_found and frame.body_found is False
        if held:
            assert np.abs(frame.body[ARM] - arm).max() < 1e-5
        else:
            assert turn_deg(frame.body[ARM]) < 0.1
    # The camera again: the body is found at once and leaves the rest pose.
    (frame,) = feed(voiced, state, [ImageInput(0, "s", 50, 60 * 66_000_000, False, masked)])
    assert frame.face_found and frame.body_found and turn_deg(frame.body[ARM]) > 20.0
