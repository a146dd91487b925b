"""`avatar-bridge doctor`: an OK or MISSING line for what each use needs, the fix beside each MISSING,
exit 0 while the main job (serve on the CPU) can run and 1 when it cannot.

Run in-process on this machine; a missing piece is simulated at its seam: a PATH without ffmpeg, an
`import sounddevice` that fails, a face model path that does not exist, an empty user cache, a port
another socket listens on.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.cli.main import main
from bridge.models.mediapipe.locate import INSTALL_COMMAND, FaceModelError, locate
from bridge.system_packages import FFMPEG, PORTAUDIO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def config(tmp_path: Path) -> Iterator[tuple[Path, int, int]]:
    """A serve config on two free ports (5570/5571 may be taken by another bridge on this machine)."""
    request, frames = free_port(), free_port()
    path = tmp_path / "serve.toml"
    path.write_text(f"[serve]\nrequest_port = {request}\nframes_port = {frames}\n")
    yield path, request, frames


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["doctor", *args])
    return code, capsys.readouterr().out


def test_doctor_says_the_main_job_runs_here(
    config: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    path, request, frames = config
    code, out = doctor(capsys, "--config", str(path))
    assert code == 0, out
    assert "OK       ONNX Runtime:" in out and "CPUExecutionProvider" in out
    assert "OK       models: dance_lstm" in out and "each ONNX matches its manifest" in out
    assert f"OK       port 127.0.0.1:{request} (request port): free" in out
    assert f"OK       port 127.0.0.1:{frames} (frames port): free" in out
    assert "OK       motion kernels:" in out
    for use in (
        "face tracking (--camera, --video)",
        "sound (--microphone, --play)",
        "demo --video",
        "GPU serving",
    ):
        assert f"\n{use}" in out, out
    for what in ("face model", "video decoding", "cameras", "PortAudio", "ffmpeg", "NVIDIA GPU", "TensorRT"):
        assert f" {what}: " in out, out
    # every MISSING line is followed by its fix
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("  MISSING"):
            assert lines[i + 1].strip().startswith("fix: "), line
    assert out.rstrip().splitlines()[-1].startswith("serve on the CPU: can run")


def test_missing_optional_pieces_print_their_fixes_and_exit_0(
    config: tuple[Path, int, int],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no ffmpeg
    monkeypatch.setitem(sys.modules, "sounddevice", None)  # `import sounddevice` fails: no PortAudio
    code, out = doctor(capsys, "--config", str(config[0]), "--face-landmarker", str(tmp_path / "none.task"))
    assert code == 0, out
    assert "MISSING  ffmpeg: not on PATH" in out
    assert "MISSING  on PATH: " in out and "activate" in out  # the quickstart's venv, not activated
    assert FFMPEG.debian in out and FFMPEG.macos in out and FFMPEG.windows in out
    assert "MISSING  PortAudio: does not load" in out
    assert PORTAUDIO.debian in out and PORTAUDIO.windows in out
    assert "MISSING  face model: face model not found at" in out and f"fix: {INSTALL_COMMAND}" in out


def test_a_face_model_not_converted_yet_is_found_and_left_to_the_first_serve(
    config: tuple[Path, int, int],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    try:
        bundle = locate()
    except FaceModelError:
        pytest.skip("no face model here (avatar-bridge models install face)")
    monkeypatch.setenv("AVATAR_BRIDGE_CACHE", str(tmp_path / "cache"))  # no conversion there
    code, out = doctor(capsys, "--config", str(config[0]), "--face-landmarker", str(bundle.path))
    assert code == 0, out
    assert f"OK       face model: {bundle.path} (user path)" in out
    assert "OK       face model converted: not yet: the first serve converts it" in out


def test_a_busy_port_is_missing_and_the_main_job_cannot_run(
    config: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    path, request, _ = config
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", request))
        holder.listen(1)
        code, out = doctor(capsys, "--config", str(path))
    assert code == 1, out
    assert f"MISSING  port 127.0.0.1:{request} (request port): in use" in out
    assert "--request-port N" in out and f"sport = :{request}" in out
    assert "serve on the CPU: CANNOT run" in out


def test_doctor_json(config: tuple[Path, int, int], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = doctor(capsys, "--config", str(config[0]), "--json")
    report = json.loads(out)
    assert code == 0 and report["main_job_runs"] is True
    by_what = {c["what"]: c for c in report["checks"]}
    assert by_what["ONNX Runtime"]["ok"] is True and by_what["ONNX Runtime"]["use"] == "serve on the CPU"
    assert report["gpu"]["backends"]["onnxruntime"] == "yes (CPU)"
