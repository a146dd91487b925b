"""A local Triton Inference Server for tests, benchmarks and trying `--backend triton` on one machine: the
tritonserver binary inside the nvidia-pytriton wheel, installed in its own venv by
scripts/install_triton.sh (it needs numpy < 2), bound to loopback, serving a repository written by
`bridge.backends.triton.repository` with the Python backend (the only backend that wheel carries).
A production deployment runs NVIDIA's Triton image instead (docs/deployment.md)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from bridge.clients.harness.process import terminate

__all__ = ["LocalTriton", "triton_venv"]


def triton_venv() -> Path:
    """The venv holding the wheel: $AVATAR_BRIDGE_TRITON_VENV, else .venv-triton in the working folder."""
    venv = Path(os.environ.get("AVATAR_BRIDGE_TRITON_VENV", ".venv-triton")).resolve()
    if not (venv / "bin" / "python").exists():
        raise FileNotFoundError(f"no Triton venv at {venv}: run scripts/install_triton.sh in a checkout")
    return venv


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalTriton:
    def __init__(self, repository: Path, workdir: Path, models: list[str]) -> None:
        venv = triton_venv()
        site = next((venv / "lib").glob("python3*/site-packages"))
        self._server = site / "pytriton" / "tritonserver"
        self._libs = site / "nvidia_pytriton.libs"
        self._venv = venv
        # The Python backend looks for its stub beside it; the wheel keeps one stub per Python version.
        self._backends = workdir / "backends"
        python = self._backends / "python"
        python.mkdir(parents=True, exist_ok=True)
        for item in (self._server / "backends" / "python").iterdir():
            if item.is_file():
                shutil.copy(item, python / item.name)
        version = site.parent.name.removeprefix("python")  # "3.11"
        shutil.copy(self._server / "python_backend_stubs" / version / "triton_python_backend_stub", python)
        self.repository = repository
        self.models = models
        self.log = workdir / "triton.log"
        self.port = _free_port()
        self.url = f"127.0.0.1:{self.port}"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> LocalTriton:
        env = {
            **os.environ,
            "PATH": f"{self._venv / 'bin'}:{os.environ.get('PATH', '')}",
            "LD_LIBRARY_PATH": str(self._libs),
        }
        loads = [arg for model in self.models for arg in ("--load-model", model)]
        with self.log.open("ab") as log:
            self._proc = subprocess.Popen(
                [str(self._server / "bin" / "tritonserver"), "--model-repository", str(self.repository),
                 "--backend-directory", str(self._backends), "--model-control-mode", "explicit", *loads,
                 "--grpc-address", "127.0.0.1", "--grpc-port", str(self.port), "--allow-http", "false",
                 "--allow-metrics", "false", "--exit-timeout-secs", "2"],
                stdout=log, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
        client = grpcclient.InferenceServerClient(self.url)
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    raise RuntimeError(f"tritonserver exited: {self.log.read_text()[-2000:]}")
                try:
                    if all(client.is_model_ready(m) for m in self.models):
                        return self
                except InferenceServerException:
                    pass
                time.sleep(0.2)
        finally:
            client.close()
        raise TimeoutError(f"Triton not ready in {timeout_s} s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            terminate(self._proc)
        self._proc = None
