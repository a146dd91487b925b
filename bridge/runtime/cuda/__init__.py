"""The one small cuda-python module: device memory, pinned host buffers, streams, events, graphs.

Everything goes through `cuda.bindings.runtime` (what NVIDIA's TensorRT samples use since 10.14), imported
on first use so that `import bridge` never needs cuda-python. See `bridge.runtime.cuda.api`.
"""

from __future__ import annotations

from bridge.runtime.cuda.api import (
    CudaEnvironment,
    CudaError,
    DeviceBuffer,
    DeviceInfo,
    Event,
    GraphExec,
    PinnedBuffer,
    Stream,
    capture_graph,
    copy_device_to_host,
    copy_host_to_device,
    format_compute_capability,
    format_cuda_version,
    query_environment,
    set_device,
)

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
