"""The README's user-facing commands, run as a user runs them: as processes."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

from bridge.clients.harness.client import BridgeClient
from bridge.clients.harness.process import BridgeProcess

REPORT_KEYS = {"frames_received", "frames_lost", "latency_ms_p50", "latency_ms_p99"}


def avatar_bridge(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge", *args], capture_output=True, text=True, timeout=timeout
    )


def _streams(mp4: Path) -> dict[str, dict[str, str]]:
    """ffprobe's view of a media file: codec and duration per stream type (it must decode the file)."""
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,codec_name,duration", "-of", "json",
         str(mp4)], capture_output=True, text=True, check=True,
    )  # fmt: skip
    return {s["codec_type"]: s for s in json.loads(probe.stdout)["streams"]}


def test_demo_writes_a_bvh_a_png_a_video_and_a_summary(tmp_path: Path) -> None:
    video = tmp_path / "dance.mp4"
    done = avatar_bridge("demo", "--out", str(tmp_path), "--seconds", "2", "--video", str(video))
    assert done.returncode == 0, done.stdout + done.stderr
    # The dance video: H.264 frames and the music muxed in as AAC, both about the clip's 2 s.
    streams = _streams(video)
    assert streams["video"]["codec_name"] == "h264" and streams["audio"]["codec_name"] == "aac"
    assert all(1.5 < float(streams[k]["duration"]) < 2.5 for k in ("video", "audio"))
    bvh = (tmp_path / "dance.bvh").read_text()
    assert bvh.startswith("HIERARCHY") and "MOTION" in bvh
    assert (tmp_path / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary) == {"face", "motion", "speech"}
    assert all(
        summary[p]["frames_lost"] == 0 and summary[p]["frames_received"] > 0 for p in ("face", "motion")
    )
    # Which model each session ran: the face tracker (installed by the test command), the trained dancer.
    assert summary["face"]["model"]["name"] == "mediapipe_face" and summary["face"]["model"]["trained"]
    assert summary["motion"]["model"] == {**summary["motion"]["model"], "name": "dance_lstm", "trained": True}
    # The talking voice moved the mouth, and its plot was written (issue 20).
    assert summary["speech"]["frames"] > 50 and summary["speech"]["jaw_open_max"] > 0.3
    assert (tmp_path / "speech.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_harness_against_serve_writes_its_report(tmp_path: Path) -> None:
    with BridgeProcess("--metrics-port", "0") as bridge:
        client = BridgeClient("127.0.0.1", bridge.request_port)
        try:  # plain `serve` finds the face-tracking model (installed by the test command) by default
            assert client.open("face")["model"] == "mediapipe_face"
        finally:
            client.close()
        for pipeline in ("motion", "face"):
            out = tmp_path / f"{pipeline}.json"
            port = str(bridge.request_port)
            done = avatar_bridge("harness", "--request-port", port, "--pipeline", pipeline, "--seconds", "2",
                                 "--json", str(out))  # fmt: skip
            assert done.returncode == 0, done.stdout + done.stderr
            report = json.loads(out.read_text())
            assert set(report) >= REPORT_KEYS
            assert report["frames_lost"] == 0 and report["frames_received"] > 60
        # serve froze its start-up heap out of the collector's full collections (bridge.serving.heap)
        url = f"http://127.0.0.1:{bridge.ports['metrics_port']}/metrics"
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        frozen = [line for line in text.splitlines() if line.startswith("python_gc_frozen_objects ")]
        assert len(frozen) == 1 and float(frozen[0].split()[-1]) > 10_000, frozen


def test_harness_without_a_bridge_fails_with_a_message() -> None:
    done = avatar_bridge("harness", "--request-port", "1", "--seconds", "1")
    assert done.returncode == 2 and "no reply" in done.stderr


def test_serve_refuses_a_folder_without_models(tmp_path: Path) -> None:
    done = avatar_bridge(
        "serve", "--engines", str(tmp_path), "--no-face-tracking", "--request-port", "0", "--frames-port", "0"
    )
    assert done.returncode == 2 and "manifest" in done.stderr


def test_the_demo_counts_answered_overload_as_a_note_not_a_failure() -> None:
    from bridge.cli.demo import _worked
    from bridge.clients.harness.run import HarnessReport

    def report(errors: list[str], lost: int = 0) -> HarnessReport:
        return HarnessReport("motion", 1, 8.0, 60.0, 480, 474, 474, lost, 0, errors, 1, 2, 3, 0.5, 1, 59)

    busy = "OVERLOADED: session 1 is over its pending bound; input dropped"
    assert _worked(report([busy, busy])) and not _worked(report([busy], lost=1))
    assert not _worked(report(["BAD_VALUE: audio: wrong rate"]))
