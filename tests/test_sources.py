"""Live sources: `serve --video/--audio` end to end to VMC and Live Link Face with no client code, and every
source fault's answer. Cameras and microphones do not exist here: the camera adapter is driven through a
fake capture object, the microphone adapter is not run (bridge/clients/sources/audio.py says so)."""

from __future__ import annotations

import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import soundfile

from bridge.clients.harness.client import BridgeClient
from bridge.clients.harness.process import BridgeProcess
from bridge.clients.sources.base import SourceError
from bridge.clients.sources.feeder import FeederOptions, SourceFeeder
from bridge.clients.sources.specs import SourceSpec, open_source, parse_size
from bridge.clients.sources.video import CameraSource
from bridge.media.face_video import FaceVideo
from bridge.media.music import synthesize_music
from bridge.serving.server import Bridge

from .test_outputs_helpers import OscCapture, udp_listener, wait_for


def _face_clip(path: Path, frames: int = 30, fps: float = 30.0) -> Path:
    """A clip made from a real face photo that moves and turns (bridge.media.face_video)."""
    video = FaceVideo(width=320, height=240, fps=fps)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), fps, (320, 240))
    for i in range(frames):
        writer.write(cv2.cvtColor(video.frame(i), cv2.COLOR_RGB2BGR))
    writer.release()
    return path


def _music(path: Path, seconds: float = 1.0) -> Path:
    rate = 22050
    pcm, _ = synthesize_music(seconds, sample_rate=rate)
    soundfile.write(str(path), pcm, rate)
    return path


def _llf_packet(packet: bytes) -> tuple[str, list[float]]:
    """Live Link Face v6, decoded from the published layout alone (big-endian)."""
    assert packet[0] == 6
    offset = 1
    names = []
    for _ in range(2):  # device id, subject name
        (length,) = struct.unpack_from(">i", packet, offset)
        names.append(packet[offset + 4 : offset + 4 + length].decode())
        offset += 4 + length
    offset += 16  # frame number, sub-frame, rate numerator and denominator
    count = packet[offset]
    values = list(struct.unpack_from(f">{count}f", packet, offset + 1))
    return names[1], values


@pytest.fixture
def osc() -> Iterator[OscCapture]:
    capture = OscCapture()
    yield capture
    capture.close()


def test_video_file_drives_vmc_and_live_link_face(tmp_path: Path, osc: OscCapture) -> None:
    clip = _face_clip(tmp_path / "face.avi")
    llf = udp_listener(10)
    outputs = ["--osc", f"vmc://127.0.0.1:{osc.port}", "--livelink-face", f"127.0.0.1:{llf.getsockname()[1]}"]
    preview = tmp_path / "preview"
    bridge = BridgeProcess("--video", str(clip), "--loop", "--preview", str(preview), *outputs).start()
    try:
        subject, values = _llf_packet(llf.recv(2048))
        wait_for(lambda: any(a == "/VMC/Ext/Blend/Apply" for a, _ in osc.messages), timeout_s=10)
        wait_for(lambda: any(preview.glob("*.png")), timeout_s=10)
    finally:
        bridge.stop()
        llf.close()
    assert subject and len(values) == 61 and all(np.isfinite(values))
    assert any(address == "/VMC/Ext/Blend/Val" for address, _ in osc.messages)


def test_audio_file_drives_a_dance_over_vmc(tmp_path: Path, osc: OscCapture) -> None:
    song = _music(tmp_path / "song.flac")
    bridge = BridgeProcess("--audio", str(song), "--osc", f"vmc://127.0.0.1:{osc.port}").start()
    try:
        wait_for(lambda: sum(a == "/VMC/Ext/Bone/Pos" for a, _ in osc.messages) >= 22 * 10, timeout_s=15)
    finally:
        bridge.stop()
    bones = [args for address, args in osc.messages if address == "/VMC/Ext/Bone/Pos"]
    quats = np.array([b[4:8] for b in bones], np.float64)
    assert np.allclose(np.linalg.norm(quats, axis=1), 1.0, atol=1e-4)


@pytest.mark.parametrize("flag", ["--video", "--audio"])
def test_a_file_that_is_not_media_fails_at_start_naming_it(tmp_path: Path, flag: str) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("not media at all\n")
    result = subprocess.run(
        [sys.executable, "-m", "bridge", "serve", "--request-port", "0", "--frames-port", "0", flag,
         str(bogus)],
        capture_output=True,
        timeout=120,
        text=True,
    )  # fmt: skip
    assert result.returncode == 2
    assert "notes.txt" in result.stderr


def test_a_video_on_untrained_weights_is_refused_with_the_fix(tmp_path: Path, osc: OscCapture) -> None:
    """Without the face tracker (--no-face-tracking stands in for a missing model) a video would drive the
    bundled FLAME encoder's untrained weights: refused at start, naming the command that fixes it;
    --allow-untrained runs it anyway."""
    clip = _face_clip(tmp_path / "face.avi", frames=10)
    serve = [sys.executable, "-m", "bridge", "serve", "--request-port", "0", "--frames-port", "0",
             "--no-face-tracking", "--video", str(clip)]  # fmt: skip
    result = subprocess.run(serve, capture_output=True, timeout=120, text=True)
    assert result.returncode == 2, result.stderr
    assert "untrained" in result.stderr and "`avatar-bridge models install face`" in result.stderr
    allowed = ("--no-face-tracking", "--allow-untrained", "--video", str(clip), "--loop")
    bridge = BridgeProcess(*allowed, "--osc", f"vmc://127.0.0.1:{osc.port}").start()
    try:
        wait_for(lambda: any(a == "/VMC/Ext/Blend/Apply" for a, _ in osc.messages), timeout_s=15)
    finally:
        bridge.stop()


def test_missing_files_and_bad_options_are_named(tmp_path: Path) -> None:
    for kind in ("video", "audio"):
        with pytest.raises(SourceError, match="no such file"):
            open_source(SourceSpec(kind, str(tmp_path / "gone.file")))  # type: ignore[arg-type]
    with pytest.raises(SourceError, match="four characters"):
        open_source(SourceSpec("camera", "0", fourcc="MJPEG"))
    with pytest.raises(ValueError, match="WIDTHxHEIGHT"):
        parse_size("640-480")
    assert parse_size("1280x720") == (1280, 720)


class FakeCapture:
    """A cv2.VideoCapture stand-in: delivers `frames` images, then nothing until `replug()`."""

    def __init__(self, frames: int) -> None:
        self.left = frames
        self.props: dict[int, float] = {}
        self.image = cv2.cvtColor(FaceVideo(width=160, height=120).frame(0), cv2.COLOR_RGB2BGR)

    def isOpened(self) -> bool:  # OpenCV's name
        return True

    def set(self, prop: int, value: float) -> bool:
        self.props[prop] = value
        return True

    def get(self, prop: int) -> float:
        return self.props.get(prop, 0.0)

    def read(self) -> tuple[bool, Any]:
        if self.left <= 0:
            return False, None
        self.left -= 1
        time.sleep(1 / 60)  # a camera paces itself
        return True, self.image

    def release(self) -> None:
        pass


def _feeder(bridge: Bridge, source: Any, **options: Any) -> SourceFeeder:
    client = BridgeClient(request_port=bridge.sockets.request_port)
    return SourceFeeder(
        source,
        FeederOptions(pipeline="face", **options),
        client,
        publish=bridge.sockets.publish_event,
        sleep=lambda s: time.sleep(min(s, 0.02)),  # backoff in fast-forward
    )


def _events(bridge: Bridge) -> BridgeClient:
    watcher = BridgeClient(request_port=bridge.sockets.request_port)
    watcher.hello()
    watcher.subscribe(b"event/")
    watcher.subscribe(b"frame/")
    time.sleep(0.2)  # the subscription reaches the PUB socket
    return watcher


def test_unplugged_camera_is_reported_retried_and_resumes(bridge: Bridge) -> None:
    capture = FakeCapture(frames=5)
    camera = CameraSource("0", size=(160, 120), fps=30, fourcc="MJPG", capture=capture)
    assert camera.describe() == "camera 0: 160x120 at 30 fps, MJPG"  # what the "driver" granted
    reopened = threading.Event()

    def replug() -> None:  # the device comes back on the second reopen attempt
        attempts["n"] += 1
        if attempts["n"] < 2:
            raise SourceError("camera 0: cannot open (unknown or busy)")
        capture.left = 5
        reopened.set()

    attempts = {"n": 0}
    camera.reopen = replug  # type: ignore[method-assign]
    watcher = _events(bridge)
    feeder = _feeder(bridge, camera)
    feeder.start()
    session = feeder.wait_open()
    try:
        wait_for(reopened.is_set, timeout_s=10)
        deadline = time.monotonic() + 10
        states: list[str] = []
        frames = 0
        while time.monotonic() < deadline and not ("resumed" in states and frames >= 8):
            frames += sum(r.frame.header.session == session for r in watcher.recv_frames(100))
            states = [e["state"] for e in watcher.events if e.get("event") == "source"]
    finally:
        feeder.stop()
        watcher.close()
    assert states[:2] == ["lost", "resumed"]
    assert frames >= 8  # frames before the unplug and after the replug
    assert feeder.errors == 0


def test_file_end_closes_the_session_or_loops(tmp_path: Path, bridge: Bridge) -> None:
    clip = _face_clip(tmp_path / "short.avi", frames=6, fps=60.0)
    watcher = _events(bridge)
    once = _feeder(bridge, open_source(SourceSpec("video", str(clip))))
    looped = _feeder(bridge, open_source(SourceSpec("video", str(clip), loop=True)), loop=True)
    once.start()
    looped.start()
    once_id, looped_id = once.wait_open(), looped.wait_open()
    try:
        wait_for(once.finished.is_set, timeout_s=10)
        wait_for(lambda: looped.inputs_sent > 18, timeout_s=10)  # three times round the 6-frame clip
        watcher.recv_frames(200)
    finally:
        looped.stop()
        watcher.close()
    assert once.inputs_sent == 6
    closed = [e for e in watcher.events if e.get("event") == "closed"]
    assert [e["session"] for e in closed] == [once_id]
    assert not looped.finished.is_set() or looped_id not in {e["session"] for e in closed}
