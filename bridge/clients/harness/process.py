"""Run `avatar-bridge serve` as a child process on free ports: for tests, benchmarks and tools that
need a real bridge in its own process (so client and server do not share a GIL)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any


class BridgeProcess:
    """`with BridgeProcess("--idle-timeout", "60") as b: BridgeClient(port=b.request_port)`."""

    def __init__(self, *serve_args: str, start_timeout_s: float = 60.0, log_path: Path | None = None) -> None:
        """`serve_args` come after the free-port flags, so e.g. "--request-port", "5570" overrides them;
        the bridge's log goes to `log_path` (appended) or to this process's stderr."""
        self.serve_args = serve_args
        self.start_timeout_s = start_timeout_s
        self.log_path = log_path
        self.ports: dict[str, int] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: Path | None = None  # holds the ports file; removed on stop

    @property
    def request_port(self) -> int:
        return self.ports["request_port"]

    @property
    def frames_port(self) -> int:
        return self.ports["frames_port"]

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            raise RuntimeError("bridge process not started")
        return self._proc

    def start(self) -> BridgeProcess:
        self._tmp = Path(tempfile.mkdtemp(prefix="avatar-bridge-"))
        ports_file = self._tmp / "ports.json"
        args = [
            "--request-port",
            "0",
            "--frames-port",
            "0",
            "--ports-file",
            str(ports_file),
            *self.serve_args,
        ]
        log = self.log_path.open("ab") if self.log_path is not None else None
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "bridge", "serve", *args], stdout=subprocess.DEVNULL, stderr=log
        )
        deadline = time.monotonic() + self.start_timeout_s
        while not ports_file.exists():
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"avatar-bridge serve exited with {self._proc.returncode} before it was ready"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"avatar-bridge serve not ready after {self.start_timeout_s} s")
            time.sleep(0.05)
        self.ports = json.loads(ports_file.read_text())
        return self

    def stop(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        if self._proc is None:
            return
        terminate(self._proc)

    def __enter__(self) -> BridgeProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def terminate(proc: subprocess.Popen[Any], timeout_s: float = 10.0) -> None:
    """SIGTERM `proc` and wait for it; SIGKILL it if it is still there after `timeout_s`."""
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
