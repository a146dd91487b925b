"""GPU benchmark: many real bridge sessions on one GPU, against PyTorch eager one-call-per-session.

    avatar-bridge bench [--quick] [--seconds 5] [--only motion|face] [--out bench/results/gpu.json]

Scenarios (issue 4): motion (DanceLSTM) at 1..4096 sessions and face (EMOCA-size: two ResNet-50 at
224x224) at 1..128 sessions, each session sending one input per tick at 60 Hz. Sessions are real
bridge sessions: inputs are queued with `Scheduler.submit_many` (the I/O thread's `submit`, a tick at a time),
then pre-processing (motion: feature rows; face: face tracking and DECA crop of a 320x240 camera
frame), one batched engine call per tick on the torch backend (CUDA graphs, FP16, state slots on the
device), batched post-processing and frame encoding, and publishing on a real ZeroMQ PUB socket to a
subscriber process that counts what arrives. Request decoding on the I/O thread is not included
(the driver builds the decoded inputs once).

Per scenario: step latency (all of a tick's inputs queued -> the tick's last frame published),
p50/p99, FPS per session actually achieved, GPU memory, and the baseline measured in the same run:
the same module in eager FP32 on the same GPU, one call per session per frame (inputs from the host,
outputs back to the host, no pre- or post-processing). `baseline_ratio` is the baseline's time per
session-step over the bridge's (step time / sessions): how many times more session-steps per second
the bridge serves.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bridge.cli.bench import add_arguments
from bridge.harness.run import percentile
from bridge.media.face_video import FaceVideo
from bridge.models.export import export_emoca_size
from bridge.pipelines.base import Pipeline
from bridge.pipelines.face import FacePipeline
from bridge.pipelines.motion import FEATURE_COLS, MotionPipeline
from bridge.protocol.errors import ErrorCode
from bridge.protocol.requests import FeaturesInput, ImageInput, Input
from bridge.runtime.engine import Engine
from bridge.runtime.manifest import ModelManifest, load_manifest
from bridge.runtime.torch.modules import reference_module
from bridge.serving.scheduler import Publish, Scheduler
from bridge.serving.sessions import Session
from bridge.serving.stats import BridgeStats
from bridge.transport.zmq_sockets import BridgeSockets, Delivery, TransportConfig

ROOT = Path(__file__).resolve().parents[1]
FPS = 60.0
FRAME_MS = 1000.0 / FPS
MOTION_SESSIONS = (1, 8, 64, 256, 1024, 2048, 4096)
FACE_SESSIONS = (1, 4, 16, 32, 64, 128)
QUEUE_DELAY_US = 2000

# A subscriber in its own process: frames really cross a TCP socket, and its count shows none is lost.
_SUBSCRIBER = """
import sys, zmq
sub = zmq.Context.instance().socket(zmq.SUB)
sub.setsockopt(zmq.RCVHWM, 0)
sub.setsockopt(zmq.SUBSCRIBE, b"frame/")
sub.connect(sys.argv[1])
print("ready", flush=True)
sub.recv_multipart()  # the first frame may follow a long warm-up (graph capture, autotuning)
sub.setsockopt(zmq.RCVTIMEO, 1500)
n = 1
try:
    while True:
        sub.recv_multipart()
        n += 1
except zmq.Again:
    pass
print(n, flush=True)
"""


@dataclass
class Counter:
    """Publish wrapper: the real PUB socket, plus a count and the time of the last frame."""

    publish: Publish
    frames: int = 0
    target: int = 0  # frame count at which the current tick is complete
    t_first: float = 0.0  # first frame of the tick: its frames are computed and encoded
    t_last: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)

    def __call__(self, topic: bytes, payload: bytes, *, hold: bool = False) -> Delivery:
        now = time.perf_counter()
        if not self.t_first:
            self.t_first = now
        ok = self.publish(topic, payload, hold=hold)
        self.frames += 1
        if self.frames >= self.target:
            self.t_last = time.perf_counter()
            self.done.set()
        return ok


@dataclass
class Measured:
    steps_ms: list[float] = field(default_factory=list)
    compute_ms: list[float] = field(default_factory=list)
    frames: int = 0
    seconds: float = 0.0
    received: int = 0
    published_total: int = 0  # warm-up included, to compare with what the subscriber received


def run_sessions(
    pipeline: Pipeline[Any, Any],
    make_inputs: Callable[[str, int], list[Input]],
    sessions: int,
    seconds: float,
    warmup_s: float,
    prepare_workers: int,
) -> tuple[Measured, BridgeStats]:
    """Drive `sessions` bridge sessions at 60 Hz (closed loop: a late tick delays the next)."""
    sockets = BridgeSockets(TransportConfig(request_port=0, frames_port=0, frames_hwm=0))
    sub = subprocess.Popen(
        [sys.executable, "-c", _SUBSCRIBER, sockets.frames_endpoint], stdout=subprocess.PIPE, text=True
    )
    assert sub.stdout is not None
    sub.stdout.readline()
    time.sleep(0.3)  # let the subscription reach the publisher
    stats = BridgeStats(pipeline.model_name)
    counter = Counter(sockets.publish)
    errors: list[str] = []

    def report(s: Session, code: ErrorCode, message: str) -> None:
        errors.append(f"{code.name}: {message}")

    scheduler = Scheduler(
        pipeline,
        counter,
        report,
        stats,
        max_pending=8,
        max_queue_delay_us=QUEUE_DELAY_US,
        prepare_workers=prepare_workers,
    )
    table = []
    for _ in range(sessions):
        sid = secrets.token_hex(8)
        table.append(Session(sid, pipeline, pipeline.open_session({}), ()))
    inputs = [make_inputs(s.id, i) for i, s in enumerate(table)]
    scheduler.start()
    measured = Measured()
    try:
        for phase_s, record in ((warmup_s, False), (seconds, True)):
            t_begin = time.perf_counter()
            frames_begin = counter.frames
            tick = 0
            while time.perf_counter() - t_begin < phase_s:
                due = t_begin + tick / FPS
                delay = due - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                batch = [(s, inputs[i][tick % len(inputs[i])]) for i, s in enumerate(table)]
                counter.target = counter.frames + sessions
                counter.t_first = 0.0
                counter.done.clear()
                scheduler.submit_many(batch)
                t_queued = time.perf_counter()
                # Blocked, not polling, so the scheduler thread keeps the GIL. A tick that takes longer
                # than the wait counts with the time waited (a lower bound) and the next one starts.
                if not counter.done.wait(5.0):
                    counter.t_last = time.perf_counter()
                    counter.t_first = counter.t_first or counter.t_last
                if record:
                    measured.steps_ms.append((counter.t_last - t_queued) * 1e3)
                    measured.compute_ms.append((counter.t_first - t_queued) * 1e3)
                tick += 1
            if record:
                measured.seconds = time.perf_counter() - t_begin
                measured.frames = counter.frames - frames_begin
    finally:
        scheduler.stop()
        for s in table:
            s.closed = True
        sockets.close()
        out, _ = sub.communicate(timeout=30)
        measured.received = int(out.split()[-1])
        measured.published_total = counter.frames
    if errors:
        raise RuntimeError(f"{len(errors)} errors, first: {errors[0]}")
    return measured, stats


def stage_mean_ms(stats: BridgeStats, stage: str) -> float:
    h = stats.stages.get(stage)
    return 1e3 * h.total / h.count if h is not None and h.count else 0.0


def record(
    model: str, sessions: int, m: Measured, stats: BridgeStats, baseline_ms: float, mem: dict[str, float]
) -> dict[str, Any]:
    steps = np.asarray(m.steps_ms)
    p50, p99 = percentile(steps, 50), percentile(steps, 99)
    mean = float(steps.mean())
    compute = np.asarray(m.compute_ms)
    per_session_step = mean / sessions
    return {
        "model": model,
        "sessions": sessions,
        "p50_ms": round(p50, 3),
        "p99_ms": round(p99, 3),
        "mean_ms": round(mean, 3),
        "max_ms": round(float(steps.max()), 3),
        "compute_p50_ms": round(percentile(compute, 50), 3),
        "compute_p99_ms": round(percentile(compute, 99), 3),
        "fps_per_session": round(m.frames / sessions / m.seconds, 2),
        "within_frame": p99 <= FRAME_MS,
        "ticks": len(steps),
        "frames_published": m.frames,
        "frames_published_with_warmup": m.published_total,
        "frames_received_by_subscriber": m.received,
        "engine_ms_mean": round(stage_mean_ms(stats, "engine"), 3),
        "post_ms_mean": round(stage_mean_ms(stats, "post"), 3),
        "publish_ms_mean": round(stage_mean_ms(stats, "publish"), 3),
        "pre_ms_mean_per_session": round(stage_mean_ms(stats, "pre"), 3),
        "bridge_us_per_session_step": round(1e3 * per_session_step, 3),
        "baseline_us_per_session_step": round(1e3 * baseline_ms, 3),
        "baseline_ratio": round(baseline_ms / per_session_step, 2),
        **mem,
    }


# ------------------------------------------------------------------------------------------ baselines
def _sync_time(fn: Callable[[], None], repeats: int) -> float:
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / repeats * 1e3


def baseline_motion_ms(calls: int) -> float:
    """Eager FP32, one call per session per frame, state per session on the GPU: ms per call."""
    net = reference_module("dance_lstm").eval().cuda()
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((calls, 1, 1, FEATURE_COLS)).astype(np.float32)
    state = [(torch.zeros(1, 2, 256).cuda(), torch.zeros(1, 2, 256).cuda()) for _ in range(calls)]
    prev = [np.zeros((1, 75), np.float32) for _ in range(calls)]
    style = torch.zeros(1, dtype=torch.int64)

    def tick() -> None:
        with torch.no_grad():
            for i in range(calls):
                h, c = state[i]
                pose, h, c = net(
                    torch.from_numpy(feats[i]).cuda(), torch.from_numpy(prev[i]).cuda(), style.cuda(), h, c
                )
                state[i] = (h, c)
                prev[i] = pose[:, 0].cpu().numpy()

    return _sync_time(tick, 3) / calls


def baseline_face_ms(manifest: ModelManifest, calls: int) -> float:
    net = reference_module(manifest.name).eval().cuda()
    images = np.random.default_rng(0).random((calls, 1, 3, 224, 224), dtype=np.float32)

    def tick() -> None:
        with torch.no_grad():
            for i in range(calls):
                net(torch.from_numpy(images[i]).cuda()).cpu()

    return _sync_time(tick, 3) / calls


# ------------------------------------------------------------------------------------------ scenarios
def memory(before: int, sessions: int) -> dict[str, float]:
    peak = torch.cuda.max_memory_allocated()
    return {
        "gpu_mem_peak_mb": round(peak / 2**20, 1),
        "gpu_mem_per_session_kb": round((peak - before) / sessions / 1024, 1),
    }


def bench_motion(
    counts: Sequence[int], seconds: float, warmup_s: float, device_post: bool
) -> list[dict[str, Any]]:
    manifest = load_manifest(ROOT / "engines" / "dance_lstm.manifest.json")
    tiers = [1 << i for i in range(max(counts).bit_length())]
    engine = Engine(manifest, _backend(manifest, tiers, device_post))
    pipeline = MotionPipeline(engine)
    weights = torch.cuda.memory_allocated()
    rows = np.random.default_rng(1).standard_normal((int(FPS), 1, FEATURE_COLS)).astype(np.float32)

    def inputs(sid: str, index: int) -> list[Input]:
        return [FeaturesInput(0, sid, k, 0, False, rows[(index + k) % len(rows)]) for k in range(4)]

    baseline = baseline_motion_ms(min(max(counts), 256))
    out = []
    for n in counts:
        torch.cuda.reset_peak_memory_stats()
        m, stats = run_sessions(pipeline, inputs, n, seconds, warmup_s, prepare_workers=1)
        out.append(record(manifest.name, n, m, stats, baseline, memory(weights, n)))
        print(_row(out[-1]), flush=True)
    engine.close()
    return out


def bench_face(counts: Sequence[int], seconds: float, warmup_s: float, workers: int) -> list[dict[str, Any]]:
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / "avatar-bridge-bench"
    tmp.mkdir(parents=True, exist_ok=True)
    # The manifest only (its ONNX is a tiny stand-in with the same I/O): torch runs the full module.
    manifest = export_emoca_size(tmp, layers=(1, 1, 1, 1), base_width=8)
    tiers = [1 << i for i in range(max(counts).bit_length())]
    engine = Engine(manifest, _backend(manifest, tiers))
    pipeline = FacePipeline(engine)
    weights = torch.cuda.memory_allocated()
    video = FaceVideo(320, 240, FPS)
    frames = [video.frame(i) for i in range(int(FPS))]

    def inputs(sid: str, index: int) -> list[Input]:
        return [
            ImageInput(0, sid, k, 0, False, frames[(index * 7 + k) % len(frames)]) for k in range(len(frames))
        ]

    baseline = baseline_face_ms(manifest, min(max(counts), 32))
    out = []
    for n in counts:
        torch.cuda.reset_peak_memory_stats()
        m, stats = run_sessions(pipeline, inputs, n, seconds, warmup_s, prepare_workers=workers)
        out.append(record(manifest.name, n, m, stats, baseline, memory(weights, n)))
        print(_row(out[-1]), flush=True)
    engine.close()
    return out


def _backend(manifest: ModelManifest, tiers: Sequence[int], device_post: bool = False) -> Any:
    from bridge.runtime.torch.runner import TorchBackend

    backend = TorchBackend(
        manifest, device="cuda", precision="float16", batch_tiers=tiers, device_post=device_post
    )
    backend.activate()
    return backend


# ------------------------------------------------------------------------------------------ output
def _row(r: dict[str, Any]) -> str:
    return (
        f"{r['model']:<12} {r['sessions']:>5} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} "
        f"{r['compute_p99_ms']:>8.2f} "
        f"{r['fps_per_session']:>7.1f} "
        f"{r['engine_ms_mean']:>7.2f} {r['post_ms_mean']:>7.2f} {r['publish_ms_mean']:>7.2f} "
        f"{r['gpu_mem_per_session_kb']:>9.1f} {r['baseline_ratio']:>7.1f}"
    )


HEADER = (
    f"{'model':<12} {'sess':>5} {'p50 ms':>8} {'p99 ms':>8} {'cmp p99':>8} {'fps/s':>7} "
    f"{'engine':>7} {'post':>7} "
    f"{'publish':>7} {'KiB/sess':>9} {'vs base':>7}"
)


def largest_within_frame(records: list[dict[str, Any]], model: str) -> int:
    ok = [
        r["sessions"]
        for r in records
        if r["model"] == model and r["within_frame"] and r["fps_per_session"] > 57
    ]
    return max(ok, default=0)


def plot(records: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for model in dict.fromkeys(r["model"] for r in records):
        rs = [r for r in records if r["model"] == model]
        x = [r["sessions"] for r in rs]
        ax.plot(x, [r["p99_ms"] for r in rs], "o-", label=f"{model} p99")
        ax.plot(x, [r["p50_ms"] for r in rs], "s--", alpha=0.6, label=f"{model} p50")
    ax.axhline(FRAME_MS, color="grey", lw=0.8, ls=":", label="one frame at 60 FPS (16.7 ms)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("concurrent sessions (60 FPS each)")
    ax.set_ylabel("step latency, ms (inputs queued -> last frame published)")
    ax.set_title(f"avatar-bridge on {torch.cuda.get_device_name()} (torch backend, FP16, CUDA graphs)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def run(args: argparse.Namespace) -> int:
    if not torch.cuda.is_available():
        print("avatar-bridge bench needs a CUDA GPU (torch sees none)", file=sys.stderr)
        return 2
    motion_counts: Sequence[int] = MOTION_SESSIONS
    face_counts: Sequence[int] = FACE_SESSIONS
    if args.quick:
        motion_counts, face_counts = (1, 64, 1024), (1, 16)
        args.seconds, args.warmup = 1.0, 0.5
    print(HEADER, flush=True)
    records = []
    if args.only != "face":
        records += bench_motion(motion_counts, args.seconds, args.warmup, args.device_post)
    if args.only != "motion":
        records += bench_face(face_counts, args.seconds, args.warmup, args.prepare_workers)
    models = list(dict.fromkeys(r["model"] for r in records))
    result = {
        "device": torch.cuda.get_device_name(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "backend": "torch, float16, CUDA graphs per batch tier, device state slots",
        "baseline": "PyTorch eager float32, one call per session per frame, same GPU",
        "fps_per_session_target": FPS,
        "max_queue_delay_us": QUEUE_DELAY_US,
        "motion_post": "device (torch, eager)" if args.device_post else "host (numpy, 4 threads)",
        "seconds_per_scenario": args.seconds,
        "largest_sessions_within_frame": {m: largest_within_frame(records, m) for m in models},
        "records": records,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    plot(records, args.out.with_suffix(".png"))
    print(
        f"largest session count within one frame (p99 <= {FRAME_MS:.1f} ms at 60 FPS): "
        f"{result['largest_sessions_within_frame']}"
    )
    print(f"wrote {args.out} and {args.out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="bench/gpu.py", description=__doc__.splitlines()[0])
    add_arguments(parser)
    raise SystemExit(run(parser.parse_args()))
