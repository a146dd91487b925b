"""`serve` stops cleanly on a signal to its whole process group (systemd's stop, `kill -- -PGID`, Ctrl-C).

Each test starts a real `avatar-bridge serve` in a session of its own (its own process group), waits
until a session streams to its outputs, sends SIGTERM or SIGINT to the group and asserts: every process
of the group ends (the outputs' process, the workers, the frames forwarder, multiprocessing's resource
tracker), serve exits 0, and nothing prints a traceback. The target is 2 s; the assertion allows
STOP_LIMIT_S for a loaded two-core box and the time measured is printed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
import soundfile

from bridge.clients.harness.client import BridgeClient

from .test_outputs_helpers import udp_listener

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads the group from /proc")

STOP_LIMIT_S = 5.0  # the target is 2 s (measured ~0.4 s on an idle two-core box)
START_TIMEOUT_S = 60.0
SIGNALS = (signal.SIGTERM, signal.SIGINT)


def group_members(pgid: int) -> list[int]:
    """Processes of the group still running (a zombie has ended: it waits only for its reaper)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone while we looked
            continue
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            alive.append(int(entry.name))
    return alive


@pytest.fixture
def udp_receiver() -> Iterator[socket.socket]:
    """Where the outputs send (VMC and Live Link Face both land here)."""
    with udp_listener(0.2) as sock:
        yield sock


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A short sound file and a short video (grey frames: the session runs, no face needed)."""
    folder = tmp_path_factory.mktemp("signals")
    song = folder / "tone.wav"
    t = np.arange(16000 * 4) / 16000
    soundfile.write(song, (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000)
    clip = folder / "clip.avi"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter.fourcc(*"MJPG"), 30.0, (160, 120))
    for i in range(60):
        writer.write(np.full((120, 160, 3), 64 + i, np.uint8))
    writer.release()
    return song, clip


class Serve:
    """`avatar-bridge serve` as a real process, the leader of its own process group."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.ports_file = tmp_path / "ports.json"
        self.stderr_path = tmp_path / "stderr.txt"
        with self.stderr_path.open("wb") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "bridge", "serve", "--request-port", "0",
                 "--frames-port", "0", "--ports-file", str(self.ports_file), "--no-face-tracking", *args],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )  # fmt: skip
        self.pgid = self.proc.pid  # start_new_session: serve leads its own group

    def wait_ready(self) -> dict[str, int]:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.ports_file.exists():
            assert self.proc.poll() is None, f"serve exited ({self.proc.returncode}): {self.stderr()}"
            assert time.monotonic() < deadline, "serve not ready"
            time.sleep(0.05)
        ports: dict[str, int] = json.loads(self.ports_file.read_text())
        return ports

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop_group(self, sig: signal.Signals) -> float:
        """Send `sig` to the group; seconds until its last process ended (or the limit passed)."""
        sent = time.monotonic()
        os.killpg(self.pgid, sig)
        while group_members(self.pgid) and time.monotonic() - sent < STOP_LIMIT_S:
            time.sleep(0.02)
        return time.monotonic() - sent

    def kill_group(self) -> None:
        if group_members(self.pgid):
            os.killpg(self.pgid, signal.SIGKILL)
        self.proc.wait(10)


def wait_for_datagrams(sock: socket.socket, serve: Serve) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if sock.recv(65536):
                return
        except TimeoutError:
            assert serve.proc.poll() is None, f"serve exited: {serve.stderr()}"
    raise AssertionError(f"no output datagram: {serve.stderr()}")


def assert_clean_stop(serve: Serve, sig: signal.Signals) -> None:
    try:
        took = serve.stop_group(sig)
        left = group_members(serve.pgid)
        print(f"{sig.name}: the group ended in {took:.2f} s")
        assert not left, f"still running {took:.1f} s after {sig.name}: {left}"
        assert serve.proc.wait(5) == 0
        assert "Traceback" not in serve.stderr(), serve.stderr()
    finally:
        serve.kill_group()


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_outputs_and_live_sources_stop_on_a_group_signal(
    sig: signal.Signals, tmp_path: Path, udp_receiver: socket.socket, media: tuple[Path, Path]
) -> None:
    """The outputs' process and two live sources, looping: a sound file feeding a motion session and a
    video feeding a face session (its untrained model allowed: stopping is what is tested)."""
    port = udp_receiver.getsockname()[1]
    song, clip = media
    serve = Serve(
        tmp_path, "--audio", str(song), "--video", str(clip), "--loop", "--allow-untrained",
        "--osc", f"vmc://127.0.0.1:{port}", "--livelink-face", f"127.0.0.1:{port}",
    )  # fmt: skip
    try:
        serve.wait_ready()
        wait_for_datagrams(udp_receiver, serve)
    except BaseException:
        serve.kill_group()
        raise
    assert_clean_stop(serve, sig)


def _stream(port: int, stop: threading.Event) -> None:
    """A client's motion session, fed 60 rows a second until `stop` (the bridge may be gone by then)."""
    client = BridgeClient(request_port=port)
    try:
        client.hello()
        session = client.open("motion")["session"]
        rows = np.random.default_rng(0).standard_normal((1, 35)).astype(np.float32)
        seq = 0
        while not stop.wait(1 / 60):
            client.send_features(session, seq, rows)
            seq += 1
    finally:
        client.close()


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_workers_stop_on_a_group_signal(
    sig: signal.Signals, tmp_path: Path, udp_receiver: socket.socket
) -> None:
    """`--workers 2` (front end, two workers, the frames forwarder) with outputs, while a session streams."""
    port = udp_receiver.getsockname()[1]
    serve = Serve(tmp_path, "--workers", "2", "--osc", f"vmc://127.0.0.1:{port}")
    stop = threading.Event()
    streamer: threading.Thread | None = None
    try:
        ports = serve.wait_ready()
        streamer = threading.Thread(target=_stream, args=(ports["request_port"], stop), daemon=True)
        streamer.start()
        wait_for_datagrams(udp_receiver, serve)
        assert_clean_stop(serve, sig)
    finally:
        stop.set()
        serve.kill_group()
        if streamer is not None:
            streamer.join(10)


def test_a_parent_that_exits_without_stopping_its_outputs_still_exits() -> None:
    """An error path that never calls stop(): multiprocessing's exit handler joins the outputs' child,
    which ignores SIGTERM; the parent's end of the pipe closes first, so the child goes and so does the
    parent (this hung before the atexit close)."""
    script = (
        "from bridge.clients.outputs.process import OutputSpec, RouterProcess\n"
        "RouterProcess([OutputSpec('vmc', '127.0.0.1', 9, None)], 'tcp://127.0.0.1:9').start()\n"
        "raise SystemExit(3)\n"
    )
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    print(f"exited {time.monotonic() - started:.1f} s after its start")
