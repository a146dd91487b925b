"""Exercise `bridge.runtime.cuda` on a real GPU and print what it measured (JSON).

    python -m training.probes.cuda_probe [--out FILE]

Checks data integrity of every path it times. Measures: pinned H2D / D2H bandwidth; both directions at
once on two streams; a copy overlapped with a torch bf16 matmul on another stream (the pattern the
TensorRT slots use: one slot's copies under another's compute); and a CUDA graph of a face-crop-sized
H2D + D2H round trip against the same copies enqueued one by one. Times are CUDA-event medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bridge.runtime.cuda.api import (
    DeviceBuffer,
    Event,
    PinnedBuffer,
    Stream,
    capture_graph,
    copy_device_to_host,
    copy_host_to_device,
    format_compute_capability,
    format_cuda_version,
    query_environment,
)

MIB = 1 << 20


def _median_ms(stream: Stream, enqueue: Callable[[], None], repeats: int = 10, warmup: int = 2) -> float:
    times = []
    with Event() as start, Event() as end:
        for i in range(warmup + repeats):
            start.record(stream)
            enqueue()
            end.record(stream)
            end.synchronize()
            if i >= warmup:
                times.append(start.elapsed_ms(end))
    return statistics.median(times)


def _roundtrip_ok(src: PinnedBuffer, dev: DeviceBuffer, dst: PinnedBuffer, n: int, stream: Stream) -> bool:
    rng = np.random.default_rng(0)
    a = src.view(np.uint8, (n,))
    a[:] = rng.integers(0, 256, n, dtype=np.uint8)
    dst.view(np.uint8, (n,))[:] = 0
    copy_host_to_device(dev, src, n, stream)
    copy_device_to_host(dst, dev, n, stream)
    stream.synchronize()
    return bool(np.array_equal(a, dst.view(np.uint8, (n,))))


def bandwidth(n: int) -> dict[str, Any]:
    with (
        Stream() as s,
        Stream() as s2,
        PinnedBuffer(n) as h1,
        PinnedBuffer(n) as h2,
        DeviceBuffer(n) as d1,
        DeviceBuffer(n) as d2,
    ):
        ok = _roundtrip_ok(h1, d1, h2, n, s)
        h2d = _median_ms(s, lambda: copy_host_to_device(d1, h1, n, s))
        d2h = _median_ms(s, lambda: copy_device_to_host(h2, d1, n, s))

        def both() -> None:
            # d2 -> h2 on the second stream while h1 -> d1 runs on the first: two copy engines.
            with Event(timing=False) as go, Event(timing=False) as done:
                go.record(s)
                s2.wait(go)
                copy_host_to_device(d1, h1, n, s)
                copy_device_to_host(h2, d2, n, s2)
                done.record(s2)
                s.wait(done)

        bidir = _median_ms(s, both)
    gbs = n / 1e6
    return {
        "bytes": n,
        "roundtrip_identical": ok,
        "h2d_ms": round(h2d, 3),
        "h2d_GBps": round(gbs / h2d, 1),
        "d2h_ms": round(d2h, 3),
        "d2h_GBps": round(gbs / d2h, 1),
        "both_directions_two_streams_ms": round(bidir, 3),
        "both_directions_GBps": round(2 * gbs / bidir, 1),
    }


def overlap(n: int, size: int, matmuls: int) -> dict[str, Any]:
    import torch

    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()  # a and b come from torch's stream, which ours do not wait on
    with Stream() as cs, Stream() as ms, PinnedBuffer(n) as h, DeviceBuffer(n) as d:
        torch_stream = torch.cuda.ExternalStream(ms.handle)  # type: ignore[no-untyped-call]
        h.view(np.uint8, (n,))[:] = 7

        def copies() -> None:
            copy_host_to_device(d, h, n, cs)
            copy_device_to_host(h, d, n, cs)

        def mm() -> None:
            with torch.cuda.stream(torch_stream):
                for _ in range(matmuls):
                    torch.matmul(a, b)

        copy_ms = _median_ms(cs, copies)
        mm_ms = _median_ms(ms, mm)

        def both() -> None:
            with Event(timing=False) as go, Event(timing=False) as done:
                go.record(cs)
                ms.wait(go)
                mm()
                copies()
                done.record(ms)
                cs.wait(done)

        both_ms = _median_ms(cs, both)
        ok = bool((h.view(np.uint8, (n,)) == 7).all())
    flops = 2 * size**3 * matmuls
    hidden = (copy_ms + mm_ms - both_ms) / min(copy_ms, mm_ms)
    return {
        "copy_bytes_each_way": n,
        "matmul": f"{matmuls} x bf16 {size}x{size}x{size} (torch, ExternalStream on a bridge Stream)",
        "copies_alone_ms": round(copy_ms, 3),
        "matmuls_alone_ms": round(mm_ms, 3),
        "matmul_TFLOPs": round(flops / mm_ms / 1e9, 1),
        "together_ms": round(both_ms, 3),
        "serial_sum_ms": round(copy_ms + mm_ms, 3),
        "fraction_of_shorter_hidden": round(hidden, 3),
        "data_intact": ok,
    }


def graph(n: int, replays: int) -> dict[str, Any]:
    with Stream() as s, PinnedBuffer(n) as src, PinnedBuffer(n) as dst, DeviceBuffer(n) as d:

        def enqueue() -> bool:
            copy_host_to_device(d, src, n, s)
            copy_device_to_host(dst, d, n, s)
            return True

        exe = capture_graph(s, enqueue)
        assert exe is not None
        with exe:
            src.view(np.float32, (n // 4,))[:] = (
                3.5  # written after capture: the graph reads the same address
            )
            exe.launch(s)
            s.synchronize()
            ok = bool((dst.view(np.float32, (n // 4,)) == 3.5).all())

            def timed(fn: Callable[[], object]) -> float:
                fn()
                s.synchronize()
                t = time.perf_counter()
                for _ in range(replays):
                    fn()
                s.synchronize()
                return (time.perf_counter() - t) / replays * 1e6

            graph_us = timed(lambda: exe.launch(s))
            plain_us = timed(enqueue)
        refused = capture_graph(s, lambda: False) is None  # the TensorRT "cannot capture" fallback
    return {
        "bytes": n,
        "replay_correct": ok,
        "graph_launch_us_per_roundtrip": round(graph_us, 2),
        "two_async_copies_us_per_roundtrip": round(plain_us, 2),
        "replays": replays,
        "failed_capture_returns_none": refused,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path)
    ns = parser.parse_args()
    env = query_environment()
    result: dict[str, Any] = {
        "driver_release": env.driver_release,
        "driver_cuda": format_cuda_version(env.driver_cuda),
        "runtime_cuda": format_cuda_version(env.runtime_cuda),
        "devices": [
            {
                "name": d.name,
                "cc": format_compute_capability(d.compute_capability),
                "GiB": d.total_memory >> 30,
            }
            for d in env.devices
        ],
        "problem": env.problem,
    }
    if env.has_gpu:
        sections: dict[str, Callable[[], dict[str, Any]]] = {
            "bandwidth_256MiB": lambda: bandwidth(256 * MIB),
            "bandwidth_face_crop_batch8": lambda: bandwidth(8 * 3 * 224 * 224 * 4),
            "overlap": lambda: overlap(256 * MIB, 8192, 8),
            "graph_face_crop": lambda: graph(3 * 224 * 224 * 4, 2000),
        }
        for name, section in sections.items():
            try:  # one failing section must not cost the others' numbers (device time is scarce)
                result[name] = section()
            except Exception as e:
                result[name] = {"error": f"{type(e).__name__}: {e}"}
    text = json.dumps(result, indent=2)
    print(text)
    if ns.out:
        ns.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
