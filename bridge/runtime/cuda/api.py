"""CUDA runtime through cuda-python (`cuda.bindings.runtime`), in one place.

Every binding returns `(err, *values)`; `_call` turns a non-success `err` into `CudaError` naming the call
and the CUDA error, and unwraps the values. Objects own one CUDA resource each and free it in `close()`
(also on `with`-exit); nothing is freed in `__del__`, because interpreter shutdown order makes that unsafe.

Exercised for real on an NVIDIA H200 (see docs/tensorrt.md); on machines without cuda-python or a GPU,
only `query_environment` and `format_cuda_version` run, and they report the absence instead of raising.
"""

from __future__ import annotations

import ctypes
import platform
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "CudaEnvironment",
    "CudaError",
    "DeviceBuffer",
    "DeviceInfo",
    "Event",
    "GraphExec",
    "PinnedBuffer",
    "Stream",
    "capture_graph",
    "copy_device_to_host",
    "copy_host_to_device",
    "format_compute_capability",
    "format_cuda_version",
    "query_environment",
    "set_device",
]


class CudaError(RuntimeError):
    """A CUDA runtime call failed, or cuda-python is not installed."""


def _runtime() -> Any:
    try:
        from cuda.bindings import runtime
    except ImportError as e:
        raise CudaError(f"cuda-python is not installed ({e}); `pip install avatar-bridge[tensorrt]`") from e
    return runtime  # untested in CI (no cuda-python); run on the H200


def _call(name: str, *args: Any) -> Any:
    """Run `cudart.<name>(*args)`; raise on error; return None, the single value, or the tuple."""
    rt = _runtime()
    result = getattr(rt, name)(*args)
    err, values = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    if err != rt.cudaError_t.cudaSuccess:
        _, err_name = rt.cudaGetErrorName(err)
        raise CudaError(f"{name} failed: {err_name.decode()} ({int(err)})")
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _handle(obj: Any) -> int:
    """The integer address behind a cuda-python handle object (what TensorRT's bindings take)."""
    try:
        from cuda.bindings.utils import get_cuda_native_handle
    except ImportError:  # cuda-python 12.x: int() is the documented way there
        return int(obj)
    return int(get_cuda_native_handle(obj))  # untested in CI (no cuda-python); run on the H200


def format_cuda_version(v: int | None) -> str | None:
    """CUDA's 1000*major + 10*minor encoding -> "13.0"."""
    return None if v is None else f"{v // 1000}.{(v % 1000) // 10}"


def format_compute_capability(cc: tuple[int, int]) -> str:
    """(8, 6) -> "8.6": how plan manifests, flags and reports write a compute capability."""
    return f"{cc[0]}.{cc[1]}"


# ---------------------------------------------------------------------------------------------------
# What is here: driver, runtime, devices


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    compute_capability: tuple[int, int]
    total_memory: int


@dataclass(frozen=True)
class CudaEnvironment:
    """What CUDA this process can see. `problem` says in words why nothing is usable, when nothing is."""

    driver_cuda: int | None = None  # highest CUDA the driver supports, e.g. 13000
    runtime_cuda: int | None = None  # the cudart cuda-python loaded
    driver_release: str | None = None  # e.g. "580.65.06", from the kernel module
    devices: tuple[DeviceInfo, ...] = field(default_factory=tuple)
    problem: str | None = None

    @property
    def has_gpu(self) -> bool:
        return bool(self.devices)


def _driver_release() -> str | None:
    # The kernel module's own version line; cudaDriverGetVersion only gives the CUDA level it supports.
    proc = Path("/proc/driver/nvidia/version")
    if platform.system() != "Linux" or not proc.is_file():
        return None
    # Untested in CI (no NVIDIA driver), to the end of this function; run on the H200.
    for word in proc.read_text(errors="replace").split():
        if word[:1].isdigit() and word.count(".") >= 1:
            return word
    return None


def query_environment() -> CudaEnvironment:
    """Driver/runtime versions and devices; never raises (a GPU-less machine is a normal answer)."""
    release = _driver_release()
    try:
        rt = _runtime()
    except CudaError as e:
        return CudaEnvironment(driver_release=release, problem=str(e))
    err, driver = rt.cudaDriverGetVersion()
    driver_cuda = int(driver) if err == rt.cudaError_t.cudaSuccess and driver else None
    err, runtime = rt.cudaRuntimeGetVersion()
    runtime_cuda = int(runtime) if err == rt.cudaError_t.cudaSuccess else None
    if driver_cuda is None:
        return CudaEnvironment(None, runtime_cuda, release, (), "no NVIDIA driver is loaded on this machine")
    try:
        count = int(_call("cudaGetDeviceCount"))
        devices = []
        for i in range(count):
            p = _call("cudaGetDeviceProperties", i)
            name = p.name.decode(errors="replace") if isinstance(p.name, bytes) else str(p.name)
            devices.append(
                DeviceInfo(i, name.rstrip("\x00"), (int(p.major), int(p.minor)), int(p.totalGlobalMem))
            )
    except CudaError as e:
        return CudaEnvironment(driver_cuda, runtime_cuda, release, (), f"no usable CUDA device: {e}")
    problem = None if devices else "the NVIDIA driver reports no CUDA device"
    return CudaEnvironment(driver_cuda, runtime_cuda, release, tuple(devices), problem)


def set_device(index: int) -> None:
    """Make `index` the calling thread's current device (TensorRT allocates on the current device)."""
    _call("cudaSetDevice", index)


# ---------------------------------------------------------------------------------------------------
# Resources


_O = TypeVar("_O", bound="_Owned")


class _Owned(ABC):
    """One CUDA resource released once by `close()`; usable as a context manager."""

    _closed = False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._release()

    @abstractmethod
    def _release(self) -> None: ...

    def __enter__(self: _O) -> _O:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Stream(_Owned):
    """A non-blocking stream: TensorRT adds device-wide syncs on the legacy default stream."""

    def __init__(self) -> None:
        rt = _runtime()
        self.raw = _call("cudaStreamCreateWithFlags", rt.cudaStreamNonBlocking)
        self.handle = _handle(self.raw)

    def synchronize(self) -> None:
        _call("cudaStreamSynchronize", self.raw)

    def wait(self, event: Event) -> None:
        """Make later work on this stream wait for `event` (cross-stream ordering without a host sync)."""
        _call("cudaStreamWaitEvent", self.raw, event.raw, 0)

    def _release(self) -> None:
        _call("cudaStreamDestroy", self.raw)


class Event(_Owned):
    def __init__(self, *, timing: bool = True) -> None:
        rt = _runtime()
        flags = rt.cudaEventDefault if timing else rt.cudaEventDisableTiming
        self.raw = _call("cudaEventCreateWithFlags", flags)

    def record(self, stream: Stream) -> None:
        _call("cudaEventRecord", self.raw, stream.raw)

    def synchronize(self) -> None:
        _call("cudaEventSynchronize", self.raw)

    def elapsed_ms(self, later: Event) -> float:
        """Milliseconds from this event to `later` (both recorded, `later` complete)."""
        return float(_call("cudaEventElapsedTime", self.raw, later.raw))

    def _release(self) -> None:
        _call("cudaEventDestroy", self.raw)


class DeviceBuffer(_Owned):
    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.ptr = int(_call("cudaMalloc", max(nbytes, 1)))

    def _release(self) -> None:
        _call("cudaFree", self.ptr)


class PinnedBuffer(_Owned):
    """Page-locked host memory (needed for truly asynchronous copies), seen from numpy via `view`."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.ptr = int(_call("cudaMallocHost", max(nbytes, 1)))
        self._bytes = np.ctypeslib.as_array((ctypes.c_uint8 * max(nbytes, 1)).from_address(self.ptr))

    def view(self, dtype: np.dtype[Any] | type[Any], shape: tuple[int, ...]) -> np.ndarray:
        """A numpy array over the first bytes of the buffer (no copy)."""
        dt = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        if n > self.nbytes:
            raise ValueError(f"view of {n} bytes does not fit a pinned buffer of {self.nbytes}")
        return self._bytes[:n].view(dt).reshape(shape)

    def _release(self) -> None:
        _call("cudaFreeHost", self.ptr)


def copy_host_to_device(dst: DeviceBuffer, src: PinnedBuffer, nbytes: int, stream: Stream) -> None:
    rt = _runtime()
    _call("cudaMemcpyAsync", dst.ptr, src.ptr, nbytes, rt.cudaMemcpyKind.cudaMemcpyHostToDevice, stream.raw)


def copy_device_to_host(dst: PinnedBuffer, src: DeviceBuffer, nbytes: int, stream: Stream) -> None:
    rt = _runtime()
    _call("cudaMemcpyAsync", dst.ptr, src.ptr, nbytes, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream.raw)


# ---------------------------------------------------------------------------------------------------
# CUDA graphs


class GraphExec(_Owned):
    """An instantiated graph; `launch` replays the captured work on a stream."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def launch(self, stream: Stream) -> None:
        _call("cudaGraphLaunch", self.raw, stream.raw)

    def _release(self) -> None:
        _call("cudaGraphExecDestroy", self.raw)


def capture_graph(stream: Stream, enqueue: Callable[[], bool]) -> GraphExec | None:
    """Capture what `enqueue` puts on `stream` into a graph; None if `enqueue` says it could not.

    Thread-local capture mode, so other threads' CUDA calls (other sessions) do not break the capture.
    When `enqueue` returns False (TensorRT's sign of an uncapturable engine), the capture is ended, the
    partial graph dropped and the sticky error cleared, so the caller falls back to plain enqueues.
    """
    rt = _runtime()
    _call("cudaStreamBeginCapture", stream.raw, rt.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal)
    try:
        ok = enqueue()
    finally:
        err, graph = rt.cudaStreamEndCapture(stream.raw)
    if not ok or err != rt.cudaError_t.cudaSuccess:
        if err == rt.cudaError_t.cudaSuccess:
            _call("cudaGraphDestroy", graph)
        rt.cudaGetLastError()
        return None
    try:
        return GraphExec(_call("cudaGraphInstantiate", graph, 0))
    finally:
        _call("cudaGraphDestroy", graph)
