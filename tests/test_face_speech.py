"""A face-tracking session with a voice (option `speech: true`): the camera drives the eyes, brows and
head, the voice the mouth, in one frame stream (bridge.pipelines.face_tracking_speech).

A real bridge on loopback serves MediaPipe's face tracker (converted from the installed bundle, as in
test_face_tracking) and the committed speech model; eSpeak NG (Debian `espeak-ng`) says a held-out
phrase; the face is scikit-image's astronaut, with the mouth blacked out where the camera should
lose it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bridge.backends import load_engine
from bridge.clients.harness.client import BridgeClient, BridgeError
from bridge.models.mediapipe.convert import SERVED_NAME
from bridge.pipelines.base import Step
from bridge.pipelines.face_tracking import FaceTrackingPipeline
from bridge.pipelines.face_tracking_speech import FaceSpeechPipeline, VoicedState
from bridge.pipelines.speech import SpeechPipeline
from bridge.protocol import FaceFrame, decode_frame
from bridge.protocol.errors import ErrorCode
from bridge.protocol.requests import AudioInput, ImageInput, Input
from bridge.rig.arkit import ARKIT_INDEX
from bridge.runtime.manifest import load_manifest
from bridge.serving.server import Bridge
from bridge.speech.corpus import Voice, speak

from .conftest import MODELS, start_bridge, stop_bridge
from .test_face_tracking import bundle, models  # noqa: F401  (fixtures: the face model, converted once a module)

skimage_data = pytest.importorskip("skimage.data")

JAW = ARKIT_INDEX["JawOpen"]
VOICE = Voice("en-us", "m6")  # held out of the speech model's training
PHRASE = "Hello, how are you today?"


@pytest.fixture(scope="module")
def served(models: Path) -> Iterator[Bridge]:  # noqa: F811
    server, thread = start_bridge(extra_model_dirs=(models,))
    yield server
    stop_bridge(server, thread)


@pytest.fixture
def client(served: Bridge) -> Iterator[BridgeClient]:
    c = BridgeClient("127.0.0.1", served.sockets.request_port, timeout_s=10.0)
    c.hello()
    c.subscribe()
    time.sleep(0.05)
    yield c
    c.close()


def masked_face() -> np.ndarray:
    """The astronaut with her mouth blacked out (lips at x 202-244, y 139-155 in the mesh): the
    tracker still finds the face, and reads the mouth as closed."""
    image: np.ndarray = skimage_data.astronaut().copy()
    image[129:166, 190:256] = 0
    return image


def phrase() -> tuple[np.ndarray, int, int]:
    """The phrase and half a second of silence as floats in [-1, 1], its rate, one frame's samples."""
    u = speak(VOICE, PHRASE)
    pcm = np.concatenate([u.audio, np.zeros(u.rate // 2, np.int16)]) / 32768.0
    return pcm, u.rate, u.rate // 30


def frames_of(
    client: BridgeClient, session: str, frames: list[FaceFrame], until: Any, timeout_s: float
) -> None:
    """Collect the session's frames into `frames` until `until(frames)` or the timeout."""
    deadline = time.monotonic() + timeout_s
    while not until(frames) and time.monotonic() < deadline:
        for r in client.recv_frames(50):
            if isinstance(r.frame, FaceFrame) and r.frame.header.session == session:
                frames.append(r.frame)


def reference_jaw(pcm: np.ndarray, rate: int, chunk: int) -> np.ndarray:
    """JawOpen of a plain speech session fed the same chunks (one frame each)."""
    speech = SpeechPipeline(load_engine(load_manifest(MODELS / "speech_visemes.manifest.json")))
    state = speech.open_session({})
    jaw = []
    for start in range(0, len(pcm) - chunk + 1, chunk):
        samples = (np.clip(pcm[start : start + chunk], -1, 1) * 32767).astype(np.int16)
        for step in speech.prepare(state, AudioInput(0, "s", 0, 0, False, rate, samples)):
            result = speech.run_batch([state], [step])
            jaw.append(float(speech.mouths([state], [step], result).blendshapes[0, JAW]))
    out: np.ndarray = np.array(jaw, np.float64)
    return out


def test_voice_moves_a_hidden_mouth_and_a_bystander_face_is_unchanged(client: BridgeClient) -> None:
    opened = client.open("face", speech=True)
    sid = opened["session"]
    assert opened["model"] == SERVED_NAME and opened["accepts"] == ["image", "audio"]
    assert opened["rig"]["extras"] == ["head_position", "gaze", "visemes", "vowels", "voice"]
    assert opened["rig"]["unsupported"] == [] and len(opened["rig"]["blendshapes"]) == 52
    plain = client.open("face")
    pid = plain["session"]
    assert plain["accepts"] == ["image"] and plain["rig"]["extras"] == ["head_position", "gaze"]

    pcm, rate, chunk = phrase()
    masked, photo = masked_face(), skimage_data.astronaut()
    frames: list[FaceFrame] = []
    bystander: list[FaceFrame] = []

    def camera_frame(k: int) -> bool:
        seen = any(f.face_found and f.header.input_seq == k for f in frames)
        return seen and any(f.header.input_seq == k for f in bystander)

    steps = range(0, len(pcm) - chunk + 1, chunk)
    for k, start in enumerate(steps):  # paced: 1/30 s of voice, then the camera image that ends it
        client.send_audio(sid, k, pcm[start : start + chunk], rate)
        client.send_image(sid, k, masked)
        client.send_image(pid, k, photo)
        deadline = time.monotonic() + 10
        while not camera_frame(k) and time.monotonic() < deadline:
            for r in client.recv_frames(50):
                if isinstance(r.frame, FaceFrame):
                    (frames if r.frame.header.session == sid else bystander).append(r.frame)
    n = len(steps)
    assert [f.header.seq for f in frames] == list(range(len(frames)))  # one stream, one counter
    # The camera's frames (the first audio, before any image, makes a voice-only frame, and so may a
    # pause over 200 ms on a loaded machine).
    voiced = [f for f in frames if f.face_found]
    assert [f.header.input_seq for f in voiced] == list(range(n))
    assert all(f.gaze.shape == (4,) and -1.0 < f.head_position[2] < -0.2 for f in voiced)
    jaw = np.array([f.blendshapes[JAW] for f in voiced])
    expected = reference_jaw(pcm, rate, chunk)  # image k mixes speech frame k
    assert jaw.max() > 0.2 and np.corrcoef(jaw, expected)[0, 1] > 0.9, (jaw.round(2), expected.round(2))
    assert any(f.voice for f in voiced) and all(f.visemes.shape == (15,) for f in voiced)
    assert not any(f.voice for f in voiced[-5:]) and jaw[-5:].max() < 0.05  # silence: the camera's mouth
    # The bystander: every frame, in order, a face frame exactly as before (no speech keys).
    assert [f.header.seq for f in bystander] == list(range(n))
    assert all(f.face_found and f.visemes.size == 0 and f.voice is None for f in bystander)
    client.close_session(sid)
    client.close_session(pid)


def test_audio_alone_makes_frames(client: BridgeClient) -> None:
    sid = client.open("face", speech=True)["session"]
    pcm, rate, chunk = phrase()
    piece = 6 * chunk  # 0.2 s per input
    for k, start in enumerate(range(0, len(pcm), piece)):
        client.send_audio(sid, k, pcm[start : start + piece], rate)
        time.sleep(0.05)
    expected = len(pcm) * 30 // rate  # one frame per 1/30 s of audio, the speech model's rate
    frames: list[FaceFrame] = []
    frames_of(client, sid, frames, lambda f: len(f) >= expected, 10.0)
    assert len(frames) >= expected and [f.header.seq for f in frames] == list(range(len(frames)))
    assert not any(f.face_found for f in frames)  # no camera: tracking is honestly lost
    assert max(f.blendshapes[JAW] for f in frames) > 0.2 and any(f.voice for f in frames)
    client.close_session(sid)


def test_bad_audio_and_options_get_their_codes(client: BridgeClient) -> None:
    sid = client.open("face", speech=True)["session"]
    nan = np.full(100, np.nan, np.float32).tobytes()
    bad = [
        (ErrorCode.BAD_VALUE, dict(rate=4000, format="s16le", data=b"\0\0" * 100)),  # rate out of range
        (ErrorCode.BAD_SIZE, dict(rate=16000, format="s16le", data=b"")),  # empty chunk
        (ErrorCode.BAD_VALUE, dict(rate=16000, format="f32le", data=nan)),
    ]
    for code, fields in bad:
        with pytest.raises(BridgeError) as err:
            client.request("input", session=sid, kind="audio", seq=9, t_capture_ns=0, ack=True, **fields)
        assert err.value.name == code.name, fields
    plain = client.open("face")["session"]
    with pytest.raises(BridgeError) as err:
        client.request(
            "input", session=plain, kind="audio", seq=0, t_capture_ns=0, ack=True, rate=16000,
            format="s16le", data=b"\0\0" * 100,
        )  # fmt: skip
    assert err.value.name == "WRONG_INPUT_KIND"
    with pytest.raises(BridgeError, match="BAD_TYPE"):
        client.open("face", speech="yes")
    with pytest.raises(BridgeError, match="BAD_VALUE"):
        client.open("face", model="face_expression_small", speech=True)  # a FLAME model has no voice
    # The voiced session still serves.
    client.send_image(sid, 1, skimage_data.astronaut())
    frames: list[FaceFrame] = []
    frames_of(client, sid, frames, lambda f: len(f) >= 1, 10.0)
    assert frames and frames[0].face_found
    client.close_session(sid)
    client.close_session(plain)


# ------------------------------------------------------------------------------ in process
@pytest.fixture(scope="module")
def voiced(models: Path) -> Iterator[FaceSpeechPipeline]:  # noqa: F811
    tracker = FaceTrackingPipeline(load_engine(models / f"{SERVED_NAME}.onnx"))
    speech = SpeechPipeline(load_engine(load_manifest(MODELS / "speech_visemes.manifest.json")))
    yield FaceSpeechPipeline(tracker, speech)
    for engine in (tracker.engine, tracker.detector, tracker.blendshape_engine, speech.engine):
        engine.close()


def feed(pipeline: FaceSpeechPipeline, state: VoicedState, items: list[Input]) -> list[FaceFrame]:
    """Prepare every item, then run the steps one at a time, as the scheduler does."""
    steps: list[Step[Any]] = [step for item in items for step in pipeline.prepare(state, item)]
    frames: list[FaceFrame] = []
    for step in steps:
        result = pipeline.run_batch([state], [step])
        for payload in pipeline.finish_batch([state], ["s"], [len(frames)], [step], result)[0]:
            frame = decode_frame(payload)
            assert isinstance(frame, FaceFrame)
            frames.append(frame)
    return frames


def test_a_newer_image_supersedes_a_queued_one(voiced: FaceSpeechPipeline) -> None:
    state = voiced.open_session({"speech": True})
    photo = skimage_data.astronaut()
    frames = feed(
        voiced, state, [ImageInput(0, "s", 1, 0, False, photo), ImageInput(0, "s", 2, 0, False, photo)]
    )
    assert [f.header.input_seq for f in frames] == [2]


def test_vmc_and_live_link_face_carry_the_mixed_channels(voiced: FaceSpeechPipeline) -> None:
    from bridge.clients.outputs.livelink_face import CURVES, LiveLinkFaceOutput
    from bridge.clients.outputs.session import SessionInfo
    from bridge.clients.outputs.vmc import VmcOutput

    state = voiced.open_session({"speech": True})
    u = speak(VOICE, "Ah, ah.")
    chunk, masked = u.rate // 30, masked_face()
    frames: list[FaceFrame] = []
    for start in range(0, len(u.audio) - chunk + 1, chunk):
        image = ImageInput(0, "s", 0, time.time_ns(), False, masked)
        frames += feed(
            voiced, state, [AudioInput(0, "s", 0, 0, False, u.rate, u.audio[start : start + chunk]), image]
        )
    frame = max(frames, key=lambda f: float(f.blendshapes[JAW]))
    assert frame.face_found and frame.voice and frame.blendshapes[JAW] > 0.2
    info = SessionInfo(session="s", pipeline="face", rig=voiced.rig(state), fps=30.0)
    vmc = VmcOutput("127.0.0.1", 9)
    messages = vmc.messages(frame, info)
    sent = {m.params[0]: m.params[1] for m in messages if m.address == "/VMC/Ext/Blend/Val"}
    assert sent["A"] == pytest.approx(float(frame.vowels[0]), abs=1e-6)  # the voice's vowels
    assert sent["JawOpen"] == pytest.approx(float(frame.blendshapes[JAW]), abs=1e-6)
    assert {"LeftEye", "RightEye"} <= {m.params[0] for m in messages if m.address == "/VMC/Ext/Bone/Pos"}
    vmc.close()
    llf = LiveLinkFaceOutput("127.0.0.1", 9)
    values = np.frombuffer(llf.packet(frame, info)[-4 * len(CURVES) :], ">f4")
    assert values[JAW] == pytest.approx(float(frame.blendshapes[JAW]), abs=1e-6)
    llf.close()


def test_a_dark_image_hands_the_mouth_to_the_voice(voiced: FaceSpeechPipeline) -> None:
    """Silent and seen, the camera's mouth shows; too dark to trust, the (silent) voice's closed mouth
    takes over, while the eyes and head stay the camera's."""
    upper = ARKIT_INDEX["MouthUpperUpRight"]  # the astronaut's largest mouth channel (~0.5)
    photo = skimage_data.astronaut()
    dark = (photo * 0.3).astype(np.uint8)  # mean luma ~34 < 40: too_dark, the face still found
    for image, seen in ((photo, True), (dark, False)):
        state = voiced.open_session({"speech": True, "smoothing": False})
        frames: list[FaceFrame] = []
        for k in range(4):  # the crossfade settles within ~3 frames
            frames += feed(voiced, state, [ImageInput(0, "s", k, k * 33_000_000, False, image)])
        last = frames[-1]
        assert last.face_found and last.voice is False and ("too_dark" in last.warnings) is not seen
        assert bool(last.blendshapes[upper] > 0.3) is seen, last.blendshapes[upper]
        assert last.gaze.shape == (4,) and -1.0 < last.head_position[2] < -0.2


def test_a_superseded_image_leaves_the_pending_count_at_zero(voiced: FaceSpeechPipeline) -> None:
    """The scheduler's frame counter is charged when steps are prepared and paid back when they run; an
    image superseded in between (its step then makes no frame) must be paid back as charged."""
    from bridge.serving.scheduler import Scheduler
    from bridge.serving.sessions import Session
    from bridge.serving.stats import BridgeStats

    scheduler = Scheduler(voiced, lambda *a, **k: None, lambda *a: None, BridgeStats())  # never started
    session = Session("0" * 16, voiced, voiced.open_session({"speech": True}), ())
    photo = skimage_data.astronaut()
    for seq in (1, 2):
        assert scheduler.submit(session, ImageInput(0, session.id, seq, 0, False, photo))
        scheduler._prepare_session(session)
    while session.steps:
        scheduler._run([session])
    assert session.steps_frames == 0 and scheduler._pending(session) == 0
