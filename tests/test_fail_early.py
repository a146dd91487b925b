"""A missing system piece stops `serve` and `demo` at start (exit 2), before any model loads, with the
command that installs it on Debian/Ubuntu, macOS and Windows.

Each missing piece is simulated at its narrowest seam, in a real subprocess: PortAudio as an
`import sounddevice` that raises OSError (what sounddevice raises when the library is absent), OpenCV's
FFmpeg backend switched off through OpenCV's own OPENCV_VIDEOIO_PRIORITY_FFMPEG=0, ffmpeg as a PATH
without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import soundfile

from bridge.system_packages import FFMPEG, OPENCV_FFMPEG, PORTAUDIO

TIMEOUT_S = 60.0


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, **(env or {})},
    )


def serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("serve", "--request-port", "0", "--frames-port", "0", "--no-face-tracking", *args, env=env)


def assert_refused_with(result: subprocess.CompletedProcess[str], *fixes: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output, output
    assert "loaded" not in output, f"models loaded before the check: {output}"  # the bridge never started
    for fix in fixes:
        assert fix in output, output


@pytest.fixture
def no_portaudio(tmp_path: Path) -> dict[str, str]:
    """An environment whose `import sounddevice` fails as it does without the PortAudio library."""
    fake = tmp_path / "no_portaudio"
    fake.mkdir()
    (fake / "sounddevice.py").write_text('raise OSError("PortAudio library not found")\n')
    path = os.pathsep.join(p for p in (str(fake), os.environ.get("PYTHONPATH")) if p)
    return {"PYTHONPATH": path}


@pytest.fixture
def song(tmp_path: Path) -> Path:
    path = tmp_path / "tone.wav"
    soundfile.write(path, np.zeros(16000, np.float32), 16000)
    return path


PORTAUDIO_FIXES = (PORTAUDIO.debian, PORTAUDIO.macos, PORTAUDIO.windows)


def test_play_without_portaudio_exits_2_naming_the_install(song: Path, no_portaudio: dict[str, str]) -> None:
    assert_refused_with(serve("--audio", str(song), "--play", env=no_portaudio), *PORTAUDIO_FIXES)


def test_microphone_without_portaudio_exits_2_naming_the_install(no_portaudio: dict[str, str]) -> None:
    assert_refused_with(serve("--microphone", env=no_portaudio), *PORTAUDIO_FIXES)


def test_a_file_source_runs_without_portaudio(song: Path, no_portaudio: dict[str, str]) -> None:
    """Only what needs PortAudio is refused: a sound file alone passes the check and the bridge starts
    loading (it stops later, on purpose, at a host it refuses to bind, so no bridge is left running)."""
    result = serve("--audio", str(song), "--host", "256.0.0.1", env=no_portaudio)
    assert "PortAudio" not in result.stderr and "refusing to bind" in result.stderr, result.stderr


def test_a_video_opencv_cannot_decode_exits_2_naming_the_fix(tmp_path: Path) -> None:
    clip = tmp_path / "clip.mp4"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter.fourcc(*"mp4v"), 30.0, (64, 48))
    for i in range(10):
        writer.write(np.full((48, 64, 3), 20 * i, np.uint8))
    writer.release()
    # This OpenCV without its FFmpeg backend: the wheel's reinstall is the fix.
    no_ffmpeg = {"OPENCV_VIDEOIO_PRIORITY_FFMPEG": "0"}
    assert_refused_with(
        serve("--video", str(clip), env=no_ffmpeg), "no FFmpeg video backend", OPENCV_FFMPEG.debian
    )
    # With FFmpeg, a file it cannot decode: an H.264 copy is the fix.
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, np.uint8).tobytes())
    assert_refused_with(
        serve("--video", str(junk)), "-c:v libx264", FFMPEG.debian, FFMPEG.macos, FFMPEG.windows
    )


def test_demo_video_without_ffmpeg_exits_2_naming_the_install(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    result = run_cli("demo", "--out", str(tmp_path / "out"), "--video", str(tmp_path / "dance.mp4"),
                     env={"PATH": str(empty)})  # fmt: skip
    assert_refused_with(result, FFMPEG.debian, FFMPEG.macos, FFMPEG.windows)
    assert not (tmp_path / "out").exists()  # refused before any work


def test_numba_kernels_without_a_cache_are_announced_before_they_compile(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first run compiles the motion kernels for 15-40 s: `uncached` sees an empty numba cache (a
    subprocess with NUMBA_CACHE_DIR pointing at an empty folder), and MotionPost logs before the
    compile starts."""
    probe = (
        "import sys; from bridge.motion.compiled import uncached; "
        "import bridge.motion.post as m, bridge.motion.foot_plant as f; print(uncached(m, f))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)},
    )
    assert result.stdout.strip() == "True", result.stderr

    from bridge.filters.output_guard import GuardStats
    from bridge.motion import post as motion_post

    logged_at_compile: list[int] = []  # how many records were logged when the first call ran
    monkeypatch.setattr(motion_post, "uncached", lambda *_: True)
    monkeypatch.setattr(
        motion_post.MotionPost, "step", lambda *_: logged_at_compile.append(len(caplog.records))
    )
    with caplog.at_level("INFO", logger=motion_post.__name__):
        motion_post.MotionPost(GuardStats(), 1 / 60)
    assert logged_at_compile == [1]
    assert caplog.records[0].getMessage().startswith("compiling the motion post-processing kernels")
