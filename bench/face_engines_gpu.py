"""The face tracker's GPU work per batch size: what one tick of N face-tracking sessions costs on the device.

Per batch size, ms per call (and µs per row) on the torch backend (float16, CUDA graphs per tier): FaceMesh
V2 (as the backend runs it, with graph_fusion's rewrites; as converted, the baseline; and with
`--compile` through torch.compile), the blendshape network, BlazeFace, and
torchvision's nvJPEG batch decode of the demo clip's 640x480 frames at quality 85. With `--profile`, the
mesh's own GPU time by op at the largest batch (torch.profiler), to say where a pass goes. Engine calls
only: no crops, geometry, filters or serving (bench/gpu.py's tracking scenario measures those through
`serve`).

    python bench/face_engines_gpu.py [--batches 1,8,32,64,128,256] [--compile] [--profile]
        [--out bench/results/face-engines-gpu.json]

The face model comes from the user cache, converted there from MediaPipe's face_landmarker.task
(`avatar-bridge models install face`). On a machine without CUDA it runs on the CPU (a smoke run: no
graphs, no nvJPEG; the figures mean nothing there).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch

from bridge.backends import load_engine
from bridge.backends.torch.onnx_module import OnnxModule
from bridge.clients.harness.run import device_ms, write_bench_json
from bridge.media.face_video import FaceVideo
from bridge.models.mediapipe.convert import PARTS, SERVED_NAME, ensure_converted
from bridge.models.mediapipe.locate import locate
from bridge.protocol.jpeg import read_header
from bridge.protocol.requests import JpegInput
from bridge.vision.jpeg import decode_batch, encode

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = {"mesh": f"{SERVED_NAME}.onnx", "blendshapes": f"{PARTS}/face_blendshapes.onnx"}
NETWORKS["detector"] = f"{PARTS}/face_detector.onnx"


def engine_ms(backend: Any, tensor: str, shape: list[int], device: torch.device, calls: int) -> float:
    """ms per engine call of random inputs of `shape`, already on the device."""
    x = torch.rand(shape, device=device)
    return device_ms(lambda: backend.infer_device({tensor: x}), device.type, calls)


def decode_ms(items: list[JpegInput], batch: int, device: torch.device, calls: int) -> float:
    """ms per batch decode of `batch` frames (the clip's, round robin)."""
    frames = [items[i % len(items)] for i in range(batch)]
    return device_ms(lambda: decode_batch(frames, device), device.type, calls)


def report(ms_by_batch: dict[int, float]) -> dict[str, dict[str, float]]:
    """Each batch's ms per call and µs per row, printed as they are kept."""
    out = {}
    for b, t in ms_by_batch.items():
        out[str(b)] = {"ms": round(t, 3), "us_per_row": round(t * 1e3 / b, 1)}
        print(f"    batch {b:>4}: {t:8.3f} ms  {t * 1e3 / b:8.1f} us a row", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,8,32,64,128,256")
    parser.add_argument("--calls", type=int, default=20, help="timed calls per batch size")
    parser.add_argument("--compile", action="store_true", help="also the mesh through torch.compile")
    parser.add_argument("--profile", action="store_true", help="the mesh's GPU time by op, largest batch")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "face-engines-gpu.json")
    args = parser.parse_args()
    batches = sorted(int(b) for b in args.batches.split(","))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    folder = ensure_converted(locate())
    results: dict[str, Any] = {}
    # (label, network, backend options): the mesh as the torch backend runs it (graph_fusion's
    # rewrites), then as converted (the baseline the rewrites are measured against), then compiled.
    variants: list[tuple[str, str, dict[str, Any]]] = [(name, name, {}) for name in NETWORKS]
    unfused = OnnxModule(folder / NETWORKS["mesh"], fuse=False)
    variants.insert(1, ("mesh (graph as converted)", "mesh", {"module": unfused}))
    if args.compile:
        variants.append(("mesh (torch.compile)", "mesh", {"compile": True}))
    for label, name, options in variants:
        print(f"  {label}", flush=True)
        engine = load_engine(
            folder / NETWORKS[name], backend="torch", device=device.type, batch_tiers=batches, **options
        )
        backend: Any = engine.backend  # bridge.backends.torch.runner.TorchBackend
        spec = engine.manifest.inputs[0]
        row_shape = [int(d) for d in spec.shape[1:]]

        results[label] = report(
            {b: engine_ms(backend, spec.tensor, [b, *row_shape], device, args.calls) for b in batches}
        )
        if label == "mesh" and args.profile:
            results["mesh_profile"] = profile(backend, row_shape, batches[-1], device)
        engine.close()
    video = FaceVideo(640, 480, fps=30.0)
    blobs = [encode(video.frame(i), 85) for i in range(64)]
    items = [JpegInput(0, "s", i, 0, False, read_header(b), memoryview(b)) for i, b in enumerate(blobs)]
    print("  JPEG decode, 640x480 q85", flush=True)
    results["jpeg_decode_640x480_q85"] = report({b: decode_ms(items, b, device, args.calls) for b in batches})
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    write_bench_json(
        args.out,
        {
            "device": device_name,
            "precision": "float16" if device.type == "cuda" else "float32",
            "networks": results,
        },
    )
    print(f"({args.out})")
    return 0


def profile(backend: Any, row_shape: list[int], batch: int, device: torch.device) -> dict[str, float]:
    """The eager mesh's GPU (or CPU) ms per pass by op, largest first (the top 12)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    net = backend._eager  # the module itself, outside the CUDA graphs, so its kernels show by op
    x = torch.rand((batch, *row_shape), device=device).to(backend.precision)
    if device.type == "cuda":
        x = x.to(memory_format=torch.channels_last)
    passes = 5
    # CPU activity too on CUDA: the kernels' GPU time is attributed to the aten ops that launch them.
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with torch.no_grad():
        net(x)
        with torch_profile(activities=activities) as prof:
            for _ in range(passes):
                net(x)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
    attr = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    by_op = {
        e.key: getattr(e, attr) / 1e3 / passes for e in prof.key_averages() if e.key.startswith("aten::")
    }
    top = sorted(by_op.items(), key=lambda kv: -kv[1])[:12]
    return {k: round(v, 3) for k, v in top if v > 0}


if __name__ == "__main__":
    raise SystemExit(main())
