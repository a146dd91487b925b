"""Speech pipeline on held-out synthesized voices: visemes, lip sync, silence, calibration, bad audio.

Data: eSpeak NG (Debian `espeak-ng`) speaks held-out sentences with held-out voices at test time.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from bridge.backends import load_engine
from bridge.clients.harness.client import BridgeClient, BridgeError
from bridge.pipelines.base import Step
from bridge.pipelines.speech import SpeechPipeline, SpeechState
from bridge.protocol.errors import ErrorCode
from bridge.protocol.frames import FaceFrame, decode_frame
from bridge.protocol.requests import AudioInput
from bridge.rig.arkit import ARKIT_INDEX
from bridge.runtime.manifest import load_manifest
from bridge.serving.server import Bridge
from bridge.speech.corpus import Voice, calibration_clip, sentences, speak
from bridge.speech.espeak import viseme_track
from bridge.speech.visemes import SIL
from tests.conftest import MODELS
from training.speech import scoring

VOICES = (Voice("en-us", "m6"), Voice("de", "f4"), Voice("fr", "Annie"))
JAW = ARKIT_INDEX["JawOpen"]


@pytest.fixture(scope="module")
def pipeline() -> SpeechPipeline:
    return SpeechPipeline(load_engine(load_manifest(MODELS / "speech_visemes.manifest.json")))


def run(
    pipeline: SpeechPipeline, state: SpeechState, pcm: np.ndarray, rate: int, chunk: int
) -> list[FaceFrame]:
    """Feed PCM in chunks through prepare / run_batch / finish_batch, as the scheduler does."""
    frames: list[FaceFrame] = []
    for seq, start in enumerate(range(0, len(pcm), chunk)):
        item = AudioInput(0, "s", seq, 0, False, rate, pcm[start : start + chunk])
        for step in pipeline.prepare(state, item):
            steps: list[Step[object]] = [step]  # type: ignore[list-item]
            result = pipeline.run_batch([state], steps)  # type: ignore[arg-type]
            payload = pipeline.finish_batch([state], ["s"], [len(frames)], steps, result)[0][0]  # type: ignore[arg-type]
            frame = decode_frame(payload)
            assert isinstance(frame, FaceFrame)
            frames.append(frame)
    return frames


def test_held_out_voices_visemes_and_lip_sync(pipeline: SpeechPipeline) -> None:
    predicted, truth, jaw = [], [], []
    for voice in VOICES:
        state = pipeline.open_session({})
        clip, rate = calibration_clip(voice)
        assert pipeline.calibrate_voice(state, rate, clip)["vowels"] == 5
        for text in sentences(voice.language, held_out=True)[:2]:
            u = speak(voice, text)
            frames = run(pipeline, state, u.audio, u.rate, chunk=u.rate // 50)  # 20 ms chunks
            track = viseme_track(u, pipeline.fps)[: len(frames)]
            predicted.append([int(np.argmax(f.visemes)) for f in frames])
            truth.append(track)
            jaw.append([f.blendshapes[JAW] for f in frames])
    p, t, j = np.concatenate(predicted), np.concatenate(truth), np.concatenate(jaw)
    acc, base = scoring.accuracy(p, t), scoring.chance(t)
    assert acc > base + 0.3, (acc, base)  # measured ~0.7 against ~0.25 (bench/speech.py)
    assert abs(scoring.lipsync_offset(j, t)) <= 1


def test_silence_closes_the_mouth_and_clears_voice(pipeline: SpeechPipeline) -> None:
    state = pipeline.open_session({})
    u = speak(VOICES[0], "Hello there.")
    pcm = np.concatenate([u.audio, np.zeros(u.rate, np.int16)])  # a second of silence after speech
    frames = run(pipeline, state, pcm, u.rate, chunk=u.rate // 30)
    assert max(f.blendshapes[JAW] for f in frames) > 0.2
    tail = frames[-10:]
    assert all(not f.voice for f in tail)
    assert all(
        float(np.abs(f.blendshapes).max()) < 0.02 and float(np.abs(f.vowels).max()) < 0.02 for f in tail
    )
    assert all(int(np.argmax(f.visemes)) == SIL for f in tail)


def test_frames_do_not_depend_on_chunking(pipeline: SpeechPipeline) -> None:
    u = speak(VOICES[1], sentences("de", held_out=True)[0])
    a = run(pipeline, pipeline.open_session({}), u.audio, u.rate, chunk=len(u.audio))
    b = run(pipeline, pipeline.open_session({}), u.audio, u.rate, chunk=333)
    assert len(a) == len(b)
    np.testing.assert_allclose(
        np.stack([f.blendshapes for f in a]), np.stack([f.blendshapes for f in b]), atol=1e-4
    )


def test_calibration_clip_must_hold_five_vowels(pipeline: SpeechPipeline) -> None:
    from bridge.protocol.codec import ProtocolError

    state = pipeline.open_session({})
    u = speak(VOICES[0], "Hello.")
    with pytest.raises(ProtocolError) as err:
        pipeline.calibrate_voice(state, u.rate, u.audio)
    assert err.value.code == ErrorCode.BAD_VALUE and "expected 5" in err.value.message


def test_speech_session_over_the_wire(bridge: Bridge, client: BridgeClient) -> None:
    client.subscribe()
    time.sleep(0.05)
    opened = client.open("speech")
    sid = opened["session"]
    assert opened["rig"]["extras"] == ["visemes", "vowels", "voice"] and opened["accepts"] == ["audio"]
    clip, rate = calibration_clip(VOICES[2])
    reply = client.request("calibrate", session=sid, rate=rate, format="s16le", data=clip.tobytes())
    assert reply["vowels"] == 5
    u = speak(VOICES[2], sentences("fr", held_out=True)[0])
    chunk = u.rate // 30
    for seq, start in enumerate(range(0, len(u.audio), chunk)):
        client.send_audio(sid, seq, u.audio[start : start + chunk] / 32768.0, u.rate)
    expected = len(u.audio) * 30 // u.rate
    frames: list[FaceFrame] = []
    deadline = time.monotonic() + 10
    while len(frames) < expected and time.monotonic() < deadline:
        frames += [r.frame for r in client.recv_frames(50) if r.frame.header.session == sid]  # type: ignore[misc]
    assert len(frames) >= expected and [f.header.seq for f in frames] == list(range(len(frames)))
    assert any(f.voice for f in frames) and max(f.blendshapes[JAW] for f in frames) > 0.2
    assert frames[0].vowels.shape == (5,) and frames[0].visemes.shape == (15,)
    # Bad audio: each gets its code, the session keeps going.
    bad = {
        ErrorCode.BAD_VALUE: dict(rate=4000, format="s16le", data=b"\0\0" * 100),  # rate out of range
        ErrorCode.BAD_SIZE: dict(rate=16000, format="s16le", data=b""),  # empty chunk
    }
    nan = np.full(100, np.nan, np.float32).tobytes()
    for code, fields in [*bad.items(), (ErrorCode.BAD_VALUE, dict(rate=16000, format="f32le", data=nan))]:
        with pytest.raises(BridgeError) as err:
            client.request("input", session=sid, kind="audio", seq=999, t_capture_ns=0, ack=True, **fields)
        assert err.value.name == code.name, fields
    with pytest.raises(BridgeError) as err:
        client.request(
            "calibrate", session=sid, rate=16000, format="s16le", data=np.zeros(16000, np.int16).tobytes()
        )
    assert err.value.name == "BAD_VALUE"
    client.close_session(sid)


def test_vmc_sends_the_speech_vowels(pipeline: SpeechPipeline) -> None:
    from bridge.clients.outputs.session import SessionInfo
    from bridge.clients.outputs.vmc import VmcOutput

    state = pipeline.open_session({})
    u = speak(VOICES[0], "Ah, ah.")
    frames = run(pipeline, state, u.audio, u.rate, chunk=u.rate // 30)
    frame = max(frames, key=lambda f: float(f.vowels[0]))
    output = VmcOutput("127.0.0.1", 9)
    info = SessionInfo(session="s", pipeline="speech", rig=pipeline.rig(state), fps=30.0)
    sent = {
        m.params[0]: m.params[1] for m in output.messages(frame, info) if m.address == "/VMC/Ext/Blend/Val"
    }
    assert sent["A"] == pytest.approx(float(frame.vowels[0]), abs=1e-6) and sent["A"] > 0.1
    assert {"A", "I", "U", "E", "O", "JawOpen"} <= set(sent)
    output.close()


def test_mixing_rule_mouth_from_voice_rest_from_camera() -> None:
    from bridge.speech.mix import mix_speech

    camera = np.full(52, 0.3, np.float32)
    speech = np.zeros(52, np.float32)
    speech[JAW] = 0.8
    weight = 0.0
    for _ in range(4):  # the crossfade reaches the voice within ~3 frames
        mixed, weight = mix_speech(camera, speech, voice=True, mouth_seen=True, weight=weight)
    assert mixed[JAW] == pytest.approx(0.8) and mixed[ARKIT_INDEX["EyeBlinkLeft"]] == pytest.approx(0.3)
    assert mixed[ARKIT_INDEX["MouthSmileLeft"]] == pytest.approx(0.3)  # the camera's smile stays
    assert mixed[ARKIT_INDEX["MouthPucker"]] == pytest.approx(0.0)
    for _ in range(4):
        mixed, weight = mix_speech(camera, speech, voice=False, mouth_seen=True, weight=weight)
    assert mixed[JAW] == pytest.approx(0.3)  # silent: the camera's mouth
    mixed, weight = mix_speech(camera, speech, voice=False, mouth_seen=False, weight=1.0)
    assert mixed[JAW] == pytest.approx(0.8)  # no face in view: the voice keeps the mouth


def test_live_link_face_carries_the_mouth(pipeline: SpeechPipeline) -> None:
    from bridge.clients.outputs.livelink_face import CURVES, LiveLinkFaceOutput
    from bridge.clients.outputs.session import SessionInfo

    state = pipeline.open_session({})
    u = speak(VOICES[0], "Ah, ah.")
    frame = max(
        run(pipeline, state, u.audio, u.rate, chunk=u.rate // 30), key=lambda f: float(f.blendshapes[JAW])
    )
    output = LiveLinkFaceOutput("127.0.0.1", 9)
    info = SessionInfo(session="s", pipeline="speech", rig=pipeline.rig(state), fps=30.0)
    values = np.frombuffer(output.packet(frame, info)[-4 * len(CURVES) :], ">f4")
    assert values[JAW] == pytest.approx(float(frame.blendshapes[JAW]), abs=1e-6) and values[JAW] > 0.3
    output.close()


def test_streams_computed_together_equal_each_stream_alone() -> None:
    """The features of several sessions' streams fed in different chunks and computed in one run of
    their batch (a pipeline's sessions) are, bit for bit, those of each stream pushed alone."""
    from bridge.audio.speech_features import SpeechFeatureBatch, SpeechFeatureStream

    rng = np.random.default_rng(7)
    batch = SpeechFeatureBatch(30.0)
    rates = (16000, 48000, 15360)
    streams = [batch.open(rate) for rate in rates]
    streams[1].offset = rng.normal(size=streams[1].offset.size)
    fed: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in rates]
    alone: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in rates]
    pcm = [(rng.normal(size=rate) * 3000).astype(np.int16) for rate in rates]
    solo = [SpeechFeatureStream(rate, 30.0) for rate in rates]
    solo[1].offset = streams[1].offset
    at = [0] * len(rates)
    for tick in range(40):
        for i, rate in enumerate(rates):
            chunk = pcm[i][at[i] : at[i] + int(rng.integers(1, rate // 20))]
            at[i] += len(chunk)
            fed[i].append(streams[i].feed(chunk))
            alone[i].append(solo[i].push(chunk))
        if tick % 3 == 0:
            batch.run()
    batch.run()
    for i in range(len(rates)):
        together = [np.concatenate([f[k] for f in fed[i]]) for k in range(2)]
        apart = [np.concatenate([f[k] for f in alone[i]]) for k in range(2)]
        assert len(together[0]) > 10
        np.testing.assert_array_equal(together[0], apart[0])
        np.testing.assert_array_equal(together[1], apart[1])
