"""Triton runner: the Backend lifecycle around a model hosted by NVIDIA Triton Inference Server (gRPC).

The bridge keeps sessions, recurrent state (sent as explicit tensors with every step), pre- and
post-processing and its outputs; Triton runs the engine. The model must be in Triton's repository under
the manifest's name (`avatar-bridge triton-repo` writes one).

Faults: an unreachable server, a model that is not ready, or a model built from other weights than
the bridge's manifest (the `onnx_sha256` parameter `avatar-bridge triton-repo` writes) fails `activate`
with the address in the message. A server lost mid-session fails the calls that reach it (the scheduler
answers their sessions with an error); after a failure the runner waits (0.25 s doubling to 4 s) before
trying Triton again, refusing calls at once in between, and serves again as soon as Triton answers.
Readiness follows Triton's: `unready_reason` asks Triton whether the model is ready, at most once a
second, on a client of its own (so a probe never waits behind a step).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from bridge.runtime.backend import Backend, BackendUnavailable
from bridge.runtime.manifest import ModelManifest

__all__ = ["TritonBackend", "TritonUnavailable"]

_BACKOFF_S = (0.25, 0.5, 1.0, 2.0, 4.0)
_PROBE_EVERY_S = 1.0
_PROBE_TIMEOUT_S = 0.5


class TritonUnavailable(BackendUnavailable):
    """Triton cannot be reached, or does not serve the model (the message says which and where)."""


class TritonBackend(Backend):
    name = "triton"

    def __init__(
        self, manifest: ModelManifest, *, url: str = "127.0.0.1:8001", timeout_s: float = 5.0
    ) -> None:
        super().__init__(manifest)
        self.url = url
        self.timeout_s = timeout_s
        self._client: grpcclient.InferenceServerClient | None = None
        self._outputs = list(
            dict.fromkeys([s.tensor for s in manifest.outputs] + [p.output for p in manifest.state])
        )
        self._lock = threading.Lock()
        self._failures = 0
        self._retry_at = 0.0
        self._probe_client: grpcclient.InferenceServerClient | None = None
        self._probed_at = -_PROBE_EVERY_S
        self._unready: str | None = None

    def activate_impl(self) -> None:
        client = grpcclient.InferenceServerClient(self.url)
        try:
            ready = client.is_server_live(client_timeout=self.timeout_s) and client.is_model_ready(
                self.manifest.name, client_timeout=self.timeout_s
            )
        except InferenceServerException as exc:
            client.close()
            raise TritonUnavailable(f"Triton at {self.url} unreachable: {exc.message()}") from None
        if not ready:
            client.close()
            raise TritonUnavailable(
                f"Triton at {self.url} does not serve model {self.manifest.name!r} "
                "(write a repository with `avatar-bridge triton-repo`)"
            )
        served = _parameter(client.get_model_config(self.manifest.name, as_json=True), "onnx_sha256")
        if served != self.manifest.onnx_sha256:
            client.close()
            raise TritonUnavailable(
                f"Triton at {self.url} serves model {self.manifest.name!r} built from ONNX sha256 "
                f"{(served or 'unknown')[:12]}, not this bridge's {self.manifest.onnx_sha256[:12]} "
                "(rewrite the repository with `avatar-bridge triton-repo` from the same engines)"
            )
        self._client = client

    def deactivate_impl(self) -> None:
        for client in (self._client, self._probe_client):
            if client is not None:
                client.close()
        self._client = self._probe_client = None

    def unready_reason(self) -> str | None:
        now = time.monotonic()
        if now - self._probed_at < _PROBE_EVERY_S:
            return self._unready
        self._probed_at = now
        if self._probe_client is None:
            self._probe_client = grpcclient.InferenceServerClient(self.url)
        try:
            ready = self._probe_client.is_model_ready(self.manifest.name, client_timeout=_PROBE_TIMEOUT_S)
            self._unready = None if ready else f"Triton at {self.url}: model {self.manifest.name!r} not ready"
        except InferenceServerException as exc:
            self._unready = f"Triton at {self.url} unreachable: {exc.message()}"
        return self._unready

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._client is None:
            raise RuntimeError(f"{self!r}: infer() before activate()")
        with self._lock:
            if self._failures and time.monotonic() < self._retry_at:
                raise TritonUnavailable(f"Triton at {self.url}: backing off after a failed call")
        inputs = []
        for name, array in feeds.items():
            if array.ndim == 1:  # a per-row scalar ([B]) is declared [1] and reshaped (repository.py)
                array = array.reshape(-1, 1)
            tensor = grpcclient.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
            tensor.set_data_from_numpy(np.ascontiguousarray(array))
            inputs.append(tensor)
        wanted = [grpcclient.InferRequestedOutput(name) for name in self._outputs]
        try:
            result = self._client.infer(
                self.manifest.name, inputs, outputs=wanted, client_timeout=self.timeout_s
            )
        except InferenceServerException as exc:
            with self._lock:
                self._retry_at = time.monotonic() + _BACKOFF_S[min(self._failures, len(_BACKOFF_S) - 1)]
                self._failures += 1
            raise TritonUnavailable(f"Triton at {self.url}: {exc.message()}") from None
        with self._lock:
            self._failures = 0
        return {name: result.as_numpy(name) for name in self._outputs}


def _parameter(config: Mapping[str, object], key: str) -> str | None:
    """A string parameter of a model config as Triton returns it in JSON (`parameters.KEY.string_value`)."""
    inner = config.get("config", config)  # gRPC's JSON wraps the config in {"config": ...}
    parameters = inner.get("parameters") if isinstance(inner, Mapping) else None
    entry = parameters.get(key) if isinstance(parameters, Mapping) else None
    value = entry.get("string_value") if isinstance(entry, Mapping) else None
    return value if isinstance(value, str) else None
