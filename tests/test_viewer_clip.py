"""The demo's pictures of the real avatar: viewer.png and viewer.mp4 from headless Chromium (Debian's
chromium through Playwright) and the ffmpeg command, for two dance sessions of a test bridge."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from bridge.clients.harness.client import BridgeClient
from bridge.clients.viewer.clip import resample
from bridge.clients.viewer.demo import SIZE, can_screenshot, start_demo_viewer

from .conftest import start_bridge, stop_bridge
from .viewer_support import features_feeder, page_built

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "viewer"


def test_resample_repeats_the_newest_frame_at_each_output_time() -> None:
    # frames at 0, 0.1, 0.35 s; 10 output frames a second from 0 to 0.35 s
    assert resample([0.0, 0.1, 0.35], 10) == [0, 1, 1, 1]
    assert resample([5.0], 25) == [0]
    assert resample([], 25) == []


@pytest.mark.skipif(
    not (can_screenshot() and page_built() and shutil.which("ffmpeg") and shutil.which("ffprobe")),
    reason="needs Debian's chromium, playwright, the built page and ffmpeg (scripts/install.sh --dev)",
)
def test_demo_writes_a_clip_of_the_avatars(tmp_path: Path) -> None:
    bridge, thread = start_bridge(idle_timeout_s=5.0)
    client = BridgeClient(request_port=bridge.sockets.request_port)
    feeders = []
    try:
        demo = start_demo_viewer(None, bridge.sockets.frames_endpoint, tmp_path, seconds=8.0)
        assert demo is not None
        client.hello()
        for _ in range(2):  # the demo's pictures wait for two moving avatars
            feeders.append(features_feeder(client, client.open("motion")["session"], rate_hz=30.0).start())
        deadline = time.monotonic() + 60
        while len(demo.written) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        written = demo.finish()
    finally:
        for feeder in feeders:
            feeder.stop()
        client.close()
        stop_bridge(bridge, thread)
    assert [p.name for p in written] == ["viewer.png", "viewer.mp4"]
    clip = tmp_path / "viewer.mp4"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(clip, ARTIFACTS / "demo-viewer.mp4")
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", str(clip)],
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(probe.stdout)
    (video,) = info["streams"]
    assert video["codec_name"] == "h264" and video["pix_fmt"] == "yuv420p"
    assert (video["width"], video["height"]) == SIZE
    assert float(info["format"]["duration"]) >= 3.0  # CLIP_S is 4 s; the sessions outlast it
    # A frame from the middle shows the avatars: the default avatar's blue shirt.
    frame = subprocess.run(
        ["ffmpeg", "-v", "error", "-ss", "1.5", "-i", str(clip), "-frames:v", "1", "-f", "rawvideo",
         "-pix_fmt", "rgb24", "-"],
        capture_output=True,
        check=True,
    ).stdout  # fmt: skip
    pixels = np.frombuffer(frame, np.uint8).reshape(SIZE[1], SIZE[0], 3).astype(np.int32)
    shirt = (pixels[..., 2] > pixels[..., 0] + 60) & (pixels[..., 2] > 120)
    assert shirt.sum() > 500, shirt.sum()
