"""`avatar-bridge bench`: the GPU benchmark (bench/gpu.py); needs a source checkout.

The benchmarks live beside the package, not in it (they need torch and a CUDA GPU, and write their
results into the checkout's bench/results), so a wheel does not carry them: this command loads
bench/gpu.py from the checkout an editable install (`pip install -e .`) points at, and says so plainly
when there is none. Its options are defined here once; `python bench/gpu.py` parses the same ones.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import bridge

CHECKOUT = Path(bridge.__file__).resolve().parents[1]
GPU_BENCH = CHECKOUT / "bench" / "gpu.py"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per scenario")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each scenario")
    parser.add_argument("--quick", action="store_true", help="smoke run: a few session counts, 1 s each")
    parser.add_argument(
        "--only",
        choices=("motion", "face", "tracking"),
        help="run one model's scenarios (tracking: the face tracker, sessions at 30 FPS)",
    )
    parser.add_argument(
        "--workers",
        default="4",
        help="bridge worker processes (serve --workers); a list such as 1,4 also runs motion (with --only "
        "face, face) with the others",
    )
    parser.add_argument("--generators", type=int, default=4, help="load-generator processes (clients)")
    parser.add_argument(
        "--sessions", help="motion session counts instead of 256,1024,2048 (a list such as 2048)"
    )
    parser.add_argument(
        "--tracking-sessions", default="64,128,256", help="face-tracking session counts (a list)"
    )
    parser.add_argument(
        "--frame-size", default="320x240", help="face tracking: the camera frames' WIDTHxHEIGHT"
    )
    parser.add_argument(
        "--image-format",
        choices=("rgb8", "jpeg"),
        default="rgb8",
        help="face tracking: frames sent raw or as JPEG (quality 90, encoded before the run)",
    )
    parser.add_argument(
        "--pin",
        type=int,
        default=0,
        metavar="CORES",
        help="pin the load generators (and the benchmark) to the last CORES cores, the front end and the "
        "frames forwarder to one core each below them, each worker to its own share of the rest (0: off)",
    )
    parser.add_argument(
        "--prepare-workers",
        type=int,
        default=4,
        help="face pre-processing threads per worker (detection, crop)",
    )
    parser.add_argument(
        "--frames-hwm",
        type=int,
        help="serve --frames-hwm: messages queued per subscriber on the public frames port (serve's default)",
    )
    parser.add_argument(
        "--serve-args",
        default="",
        help='more `serve` flags for the bridge under test, e.g. "--scheduler tick" (an A/B run)',
    )
    parser.add_argument(
        "--scrape-lead",
        type=float,
        default=0.0,
        help="take the first /metrics scrape this many seconds before the window (in the warm-up)",
    )
    parser.add_argument(
        "--scrape-every",
        type=float,
        default=0.0,
        help="also scrape /metrics every this many seconds inside the window, as a Prometheus server "
        "would (0: only at its start and end)",
    )
    parser.add_argument(
        "--face-input",
        choices=("frame", "crop"),
        default="frame",
        help="face sessions get 320x240 camera frames (detection and crop in the workers) or aligned "
        "224x224 crops (option cropped: the engines alone)",
    )
    parser.add_argument("--mps", action="store_true", help="run the CUDA MPS daemon for the benchmark")
    parser.add_argument(
        "--device", choices=("auto", "cuda", "cpu"), default="auto", help="cpu: a smoke run without a GPU"
    )
    parser.add_argument("--out", type=Path, default=CHECKOUT / "bench" / "results" / "gpu.json")


def run(args: argparse.Namespace) -> int:
    spec = importlib.util.spec_from_file_location("avatar_bridge_gpu_bench", GPU_BENCH)
    if spec is None or spec.loader is None or not GPU_BENCH.is_file():
        print(
            "avatar-bridge bench needs a source checkout: the benchmarks (bench/) are not part of the "
            f"installed package (looked for {GPU_BENCH}). Clone the repository, `pip install -e .` "
            "there, and run `avatar-bridge bench` from that environment.",
            file=sys.stderr,
        )
        return 2
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    code: int = module.run(args)
    return code
