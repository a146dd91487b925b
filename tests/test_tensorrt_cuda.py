"""bridge.runtime.cuda: GPU-less behaviour here; the real thing where cuda-python and a GPU exist (H200)."""

from __future__ import annotations

import numpy as np
import pytest

from bridge.runtime.cuda import (
    CudaError,
    DeviceBuffer,
    Event,
    PinnedBuffer,
    Stream,
    capture_graph,
    copy_device_to_host,
    copy_host_to_device,
    format_cuda_version,
    query_environment,
)

ENV = query_environment()
needs_gpu = pytest.mark.skipif(not ENV.has_gpu, reason=f"no GPU: {ENV.problem}")


def test_versions_format() -> None:
    assert format_cuda_version(13000) == "13.0" and format_cuda_version(12080) == "12.8"
    assert format_cuda_version(None) is None


@pytest.mark.skipif(ENV.has_gpu, reason="this machine has a GPU")
def test_no_gpu_is_an_answer_not_an_error() -> None:
    assert ENV.devices == () and ENV.problem
    with pytest.raises(CudaError):
        Stream()


@needs_gpu
def test_pinned_roundtrip_through_device_on_a_stream() -> None:
    n = 1 << 20
    with Stream() as s, PinnedBuffer(n) as a, PinnedBuffer(n) as b, DeviceBuffer(n) as d:
        src = a.view(np.float32, (n // 4,))
        src[:] = np.arange(n // 4, dtype=np.float32)
        copy_host_to_device(d, a, n, s)
        copy_device_to_host(b, d, n, s)
        s.synchronize()
        assert np.array_equal(b.view(np.float32, (n // 4,)), src)
        with pytest.raises(ValueError):
            a.view(np.float32, (n,))


@needs_gpu
def test_events_order_two_streams_and_time() -> None:
    n = 8 << 20
    with Stream() as s1, Stream() as s2, PinnedBuffer(n) as a, PinnedBuffer(n) as b, DeviceBuffer(n) as d:
        a.view(np.uint8, (n,))[:] = 9
        with Event() as start, Event() as copied:
            start.record(s1)
            copy_host_to_device(d, a, n, s1)
            copied.record(s1)
            s2.wait(copied)  # the D2H on s2 must see the H2D on s1
            copy_device_to_host(b, d, n, s2)
            s2.synchronize()
            assert (b.view(np.uint8, (n,)) == 9).all()
            assert start.elapsed_ms(copied) > 0


@needs_gpu
def test_graph_capture_replays_and_refusal_falls_back() -> None:
    n = 4096
    with Stream() as s, PinnedBuffer(n) as a, PinnedBuffer(n) as b, DeviceBuffer(n) as d:

        def enqueue() -> bool:
            copy_host_to_device(d, a, n, s)
            copy_device_to_host(b, d, n, s)
            return True

        exe = capture_graph(s, enqueue)
        assert exe is not None
        for value in (1, 2):
            a.view(np.uint8, (n,))[:] = value
            exe.launch(s)
            s.synchronize()
            assert (b.view(np.uint8, (n,)) == value).all()
        exe.close()
        assert capture_graph(s, lambda: False) is None
        enqueue()  # the stream still works after an abandoned capture
        s.synchronize()
