"""The camera and the microphone as one avatar: `serve` with one camera or video and one microphone or sound
file for speech opens ONE face session (`speech: true`, and `body: true` with --body) fed by both, so
every output sees one stream; `--separate-speech` keeps the voice's own speech session; a song for the
dancer stays a motion session of its own.

End to end with real parts: a video of scikit-image's astronaut (mouth blacked out, so the mouth can only
be the voice's) switching to her mirror image (arms and head elsewhere), a wav eSpeak NG speaks, the
installed face and body networks, and an independent VMC receiver (tests/oracles/vmc_receiver.py).
"""

from __future__ import annotations

import argparse
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
import soundfile

from bridge.cli.sources import add_source_arguments, source_specs
from bridge.clients.harness.client import BridgeClient, BridgeError
from bridge.clients.harness.process import BridgeProcess
from bridge.clients.sources.feeder import FeederOptions, SourceFeeder
from bridge.clients.sources.specs import SourceSpec, open_source
from bridge.models.mediapipe import body_locate
from bridge.models.mediapipe import locate as face_locate
from bridge.protocol import FaceFrame
from bridge.serving.server import Bridge
from bridge.speech.corpus import speak

from .oracles.vmc_receiver import VmcReceiver
from .test_face_speech import PHRASE, VOICE, masked_face
from .test_outputs_helpers import udp_listener, wait_for
from .test_sources import _events

LLF_JAW_OPEN, LLF_HEAD_YAW = 17, 52  # Live Link Face's curve order: ARKit's 52, then head yaw, pitch, roll
ARMS_AND_HEAD = {"LeftUpperArm", "LeftLowerArm", "RightLowerArm", "LeftHand", "Neck", "Head"}


def specs_of(*argv: str) -> list[tuple[str, str, bool]]:
    parser = argparse.ArgumentParser()
    add_source_arguments(parser)
    return [(s.kind, s.session_pipeline, s.into_face) for s in source_specs(parser.parse_args(argv), {})]


def test_one_face_and_one_voice_make_one_session_and_nothing_else_does() -> None:
    speech = ("--audio-pipeline", "speech")
    assert specs_of("--camera", "0", "--microphone", *speech) == [
        ("camera", "face", False),
        ("microphone", "speech", True),
    ]
    assert specs_of("--video", "v.mp4", "--audio", "voice.wav", *speech)[1] == ("audio", "speech", True)
    # The old two sessions on request, and from the config file's key.
    assert not any(i for *_, i in specs_of("--camera", "0", "--microphone", *speech, "--separate-speech"))
    parser = argparse.ArgumentParser()
    add_source_arguments(parser)
    table = {"camera": "0", "microphone": "", "audio_pipeline": "speech", "separate_speech": True}
    assert not any(s.into_face for s in source_specs(parser.parse_args([]), table))
    # A microphone beside a camera is a voice unless told otherwise; alone, or a song file, a dance.
    assert specs_of("--camera", "0", "--microphone")[1] == ("microphone", "speech", True)
    assert specs_of("--camera", "0", "--microphone", "--audio-pipeline", "motion")[1][1:] == ("motion", False)
    assert specs_of("--microphone") == [("microphone", "motion", False)]
    assert specs_of("--camera", "0", "--audio", "song.ogg") == [
        ("camera", "face", False),
        ("audio", "motion", False),
    ]
    # Two faces or two voices: which goes with which is not known, so each keeps its own session.
    assert not any(i for *_, i in specs_of("--camera", "0", "--camera", "1", "--microphone", *speech))
    assert not any(i for *_, i in specs_of("--camera", "0", "--microphone", "--audio", "v.wav", *speech))


@pytest.fixture(scope="module")
def installed() -> None:
    try:
        face_locate.locate()
        body_locate.locate()
    except (face_locate.FaceModelError, body_locate.BodyModelError) as exc:
        pytest.skip(f"face or body models not installed (avatar-bridge models install face body): {exc}")


@pytest.fixture
def receiver() -> Iterator[VmcReceiver]:
    r = VmcReceiver()
    yield r
    r.close()


def _clip(path: Path) -> Path:
    """2 s at 15 fps: the masked astronaut for 1/3 s, then her mirror image, and so on."""
    face = masked_face()
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), 15.0, (face.shape[1], face.shape[0]))
    for i in range(30):
        frame = face if (i // 5) % 2 == 0 else np.ascontiguousarray(face[:, ::-1])
        writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    writer.release()
    return path


def _voice(path: Path) -> Path:
    """The phrase, then half a second of silence (the mouth closes)."""
    u = speak(VOICE, PHRASE)
    soundfile.write(str(path), np.concatenate([u.audio, np.zeros(u.rate // 2, np.int16)]), u.rate)
    return path


def _llf(packet: bytes) -> tuple[str, tuple[float, ...]]:
    """A Live Link Face v6 packet's device id and curve values, from the published layout (big-endian)."""
    (length,) = struct.unpack_from(">i", packet, 1)
    device = packet[5 : 5 + length].decode()
    offset = 5 + length
    (length,) = struct.unpack_from(">i", packet, offset)
    offset += 4 + length + 16  # subject name; frame number, sub-frame, rate numerator and denominator
    return device, struct.unpack_from(f">{packet[offset]}f", packet, offset + 1)


def _drain(sock: socket.socket, into: list[tuple[str, tuple[float, ...]]]) -> None:
    try:
        while True:
            into.append(_llf(sock.recv(2048)))
    except BlockingIOError:
        pass


def test_video_and_voice_drive_one_stream_with_head_arms_and_mouth(
    installed: None, tmp_path: Path, receiver: VmcReceiver
) -> None:
    sources = ["--video", str(_clip(tmp_path / "arms.avi")), "--audio", str(_voice(tmp_path / "voice.wav"))]
    serve = [*sources, "--audio-pipeline", "speech", "--body", "--loop"]
    llf = udp_listener(0.0)  # non-blocking: read between the frames
    outputs = [
        "--osc",
        f"vmc://127.0.0.1:{receiver.port}",
        "--livelink-face",
        f"127.0.0.1:{llf.getsockname()[1]}",
    ]
    bridge = BridgeProcess(*serve, *outputs).start()
    client = BridgeClient("127.0.0.1", bridge.request_port, timeout_s=30.0)  # answers once serving
    sessions: set[str] = set()
    voiced: list[FaceFrame] = []
    packets: list[tuple[str, tuple[float, ...]]] = []
    try:
        client.hello()
        client.subscribe()

        def heard() -> bool:
            for r in client.recv_frames(50):
                if isinstance(r.frame, FaceFrame):
                    sessions.add(r.frame.header.session)
                    voiced.extend([r.frame] if r.frame.voice else [])
            _drain(llf, packets)
            return len(receiver.frames) >= 60 and len(voiced) >= 5

        wait_for(heard, timeout_s=30)
    finally:
        client.close()
        bridge.stop()
        llf.close()
    assert len(sessions) == 1, sessions  # one session on the bridge's own stream
    # Live Link Face: one device (a session's), its packets carrying the voice's jaw and the camera's head.
    assert len({device for device, _ in packets}) == 1
    assert max(v[LLF_JAW_OPEN] for _, v in packets) > 0.2
    assert all(abs(v[LLF_HEAD_YAW]) > 0.0 for _, v in packets[5:])
    assert all(f.body.size for f in voiced)  # the voice's frames carry the body
    # Over VMC, every frame that moves the mouth moves the head and the arms too: one avatar, not two
    # streams taking turns.
    frames = receiver.frames[5:]
    assert frames and all(bones >= ARMS_AND_HEAD for bones, blends in frames if "JawOpen" in blends)
    jaw = [blends["JawOpen"] for _, blends in frames if "JawOpen" in blends]
    assert max(jaw) > 0.2 and min(jaw) < 0.05, (min(jaw), max(jaw))  # spoken, then silent
    assert max(blends.get("A", 0.0) for _, blends in frames) > 0.1  # VRM's vowel preset, from the voice
    # The astronaut and her mirror image: her forearm turns ~60 degrees, her head (turned a little
    # aside in the photo) ~5 (measured).
    for bone, least_deg in (("LeftLowerArm", 20.0), ("Head", 2.0)):
        turns = [p.rotations[bone].as_rotvec() for p in receiver.poses[-30:]]
        spread = max(np.degrees(np.linalg.norm(a - b)) for a in turns for b in turns)
        assert spread > least_deg, (bone, spread)


def _tone(path: Path, seconds: float) -> Path:
    rate = 16000
    t = np.arange(int(rate * seconds)) / rate
    soundfile.write(str(path), (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), rate)
    return path


def test_a_joined_source_feeds_its_hosts_session_and_ends_with_it(tmp_path: Path, bridge: Bridge) -> None:
    """The mechanics on the committed speech model (two sound files into one speech session stand in
    for the camera and the microphone): the shorter file's end is an `ended` event on the shared session,
    which goes on; the host's end closes it once and stops both; no input is refused."""
    watcher = _events(bridge)
    client = BridgeClient(request_port=bridge.sockets.request_port)
    host = SourceFeeder(
        open_source(SourceSpec("audio", str(_tone(tmp_path / "long.wav", 1.0)))),
        FeederOptions(pipeline="speech"),
        client,
        publish=bridge.sockets.publish_event,
    )
    guest = host.joined(
        open_source(SourceSpec("audio", str(_tone(tmp_path / "short.wav", 0.3)))), FeederOptions("speech")
    )
    host.start()
    guest.start()
    try:
        session = guest.wait_open()
        assert session == host.wait_open()
        wait_for(guest.finished.is_set, timeout_s=5)
        assert not host.finished.is_set()  # the voice ended, the session goes on
        wait_for(host.finished.is_set, timeout_s=5)
        watcher.recv_frames(200)
    finally:
        host.stop()
        watcher.close()
    ended = [e["source"] for e in watcher.events if e.get("event") == "source" and e["state"] == "ended"]
    assert ended == [guest.source.label, host.source.label]
    assert [e["session"] for e in watcher.events if e.get("event") == "closed"] == [session]
    assert guest.inputs_sent == 18 and host.inputs_sent == 60 and host.errors + guest.errors == 0


def test_a_joined_source_shares_its_hosts_refusal(tmp_path: Path, bridge: Bridge) -> None:
    client = BridgeClient(request_port=bridge.sockets.request_port)
    host = SourceFeeder(
        open_source(SourceSpec("audio", str(_tone(tmp_path / "a.wav", 0.2)))),
        FeederOptions(pipeline="no_such_pipeline"),
        client,
    )
    guest = host.joined(open_source(SourceSpec("audio", str(_tone(tmp_path / "b.wav", 0.2)))), host.options)
    host.start()
    guest.start()
    try:
        with pytest.raises(BridgeError):
            guest.wait_open()
        wait_for(lambda: host.finished.is_set() and guest.finished.is_set(), timeout_s=5)
    finally:
        host.stop()
    assert guest.inputs_sent == 0
