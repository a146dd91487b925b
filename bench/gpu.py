"""GPU benchmark: a real `avatar-bridge serve --workers N` on one GPU, driven from other processes.

    python bench/gpu.py [--quick] [--seconds 5] [--warmup 1] [--only motion|face] [--workers 4]
                        [--generators 4] [--mps] [--out bench/results/gpu.json]

What runs is what `serve` runs: the bridge is its own process tree (bridge.clients.harness.process: the
front end, bridge.serving.cluster.front_end, and N workers on the torch backend, FP16, CUDA graphs per
batch tier, device state slots), fed over loopback ZeroMQ by load-generator processes
(bench/load_generator.py), so request decoding, the front end's routing, each worker's I/O thread,
scheduling, pre- and post-processing, publishing and the frames forwarder are all inside the
measurement. Each generator is one client holding its share of the sessions; each tick (60 Hz) it
sends one input per session, as one multiplexed `inputs` message when the bridge serves it, and waits
for the tick's frames (closed loop: a tick that runs late delays the next, so FPS per session drops
below 60 when the bridge cannot keep up).

Scenarios: motion (DanceLSTM, feature rows) at 256, 1024 and 2048 sessions; face (EMOCA-size: two
ResNet-50 at 224x224, Haar tracking and the DECA crop of a 320x240 camera frame in the workers) at 16
and 64 sessions; with `--face-input crop` the generators send the aligned 224x224 crops instead (open
option `cropped`), so the workers run the engines and no detection. Per scenario: tick latency (a
generator's first input of the tick sent -> its last frame of the tick received) p50/p99, FPS per
session, frames lost (published per the close replies - received), error replies, and per-worker
throughput (frames per second from /metrics, with the worker label) and stage means. The baseline,
measured in the same run in this process: the same module in eager FP32 on the same GPU, one call
per session per frame; `baseline_ratio` = the baseline's time per session-step over the bridge's
(mean tick latency / sessions).

Per-worker figures come from two /metrics scrapes, at the window's start and end; `--scrape-lead S`
takes the first S seconds earlier, in the warm-up, so the window shows the latency without that
scrape, and `--scrape-every S` adds scrapes inside the window, as a Prometheus server would make
them, to show what each costs (docs/scheduling.md section 6). Scrapes are parsed after the window.

`--mps` starts the CUDA MPS control daemon for the run (and stops it after), so the workers share the
GPU's SMs instead of time-slicing (docs/deployment.md); the JSON records whether it came up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bridge.backends import load_engine
from bridge.backends.torch.modules import module_for
from bridge.clients.harness.process import BridgeProcess
from bridge.clients.harness.run import cpu_model, device_ms, percentile, write_bench_json
from bridge.media.face_video import FaceVideo
from bridge.models.mediapipe.convert import SERVED_NAME, ensure_converted
from bridge.models.mediapipe.locate import locate
from bridge.models.motion import build_dance_lstm
from bridge.pipelines.face_tracking import FaceTrackingPipeline
from bridge.pipelines.face_tracking_device import STAGES as DEVICE_STAGES
from bridge.pipelines.motion import FEATURE_COLS
from bridge.protocol.requests import ImageInput
from bridge.runtime.manifest import ModelManifest, Profile, load_manifest
from training.export import export_emoca_size
from training.probes.host_cpu import (
    CpuSampler,
    available_cpus,
    bridge_roles,
    cpu_layout,
    cpu_use,
    pin,
    thread_times,
)

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = Path(__file__).with_name("load_generator.py")
FPS = 60.0
FRAME_MS = 1000.0 / FPS
MOTION_SESSIONS = (256, 1024, 2048)
FACE_SESSIONS = (16, 64)
TRACKING_FPS = 30.0
TRACKING_PATH_CUDA = (
    "serve --backend torch on cuda: the face tracker's device path (bridge.pipelines.face_tracking_device): "
    "JPEGs decoded in batches by nvJPEG (torchvision.io.decode_jpeg), letterbox + BlazeFace, the rotated "
    "crops (grid_sample), mesh and blendshape engines on device tensors, the head-pose fit, all batched "
    "on the GPU; per-stage means face_decode, face_detect, face_crop, face_engine, face_pose"
)
QUEUE_DELAY_US = 2000
PIPELINES = {"dance_lstm": "motion", "emoca_size": "face", SERVED_NAME: "face"}
# The scheduler's stages, then the face tracker's device path's own (bridge.pipelines.face_tracking_device,
# only on the torch backend: decode, detect, crop, engine, pose of each call).
STAGES = ("decode", "jpeg", "pre", "queue", "engine", "post", "publish", "end_to_end", *DEVICE_STAGES)


# ------------------------------------------------------------------------------------------ models
def _widened(manifest: ModelManifest, folder: Path, max_batch: int) -> Path:
    """`manifest` copied into `folder` with one more shape profile up to `max_batch`, so the torch
    backend's batch tiers (powers of two up to the largest profile) cover every session of a worker."""
    folder.mkdir(parents=True, exist_ok=True)
    onnx = folder / manifest.onnx_path.name
    if manifest.onnx_path.resolve() != onnx.resolve():
        shutil.copyfile(manifest.onnx_path, onnx)
    widest = max(manifest.profiles, key=lambda p: p.max_batch)
    shapes = {t: (mn, opt, (max_batch, *mx[1:])) for t, (mn, opt, mx) in widest.shapes.items()}
    replace(manifest, onnx_path=onnx, profiles=(*manifest.profiles, Profile("bench", shapes))).write()
    return folder


def model_folder(tmp: Path, model: str, max_batch: int) -> tuple[Path, ModelManifest]:
    if model == "motion":
        manifest = load_manifest(ROOT / "models" / "dance_lstm.manifest.json")
        return _widened(manifest, tmp / "motion", max_batch), manifest
    # The manifest only (its ONNX is a tiny stand-in with the same I/O): torch runs the full module.
    (tmp / "face-export").mkdir(parents=True, exist_ok=True)
    manifest = export_emoca_size(tmp / "face-export", layers=(1, 1, 1, 1), base_width=8)
    return _widened(manifest, tmp / "face", max_batch), manifest


# ------------------------------------------------------------------------------------------ baselines
def baseline_motion_ms(calls: int, device: torch.device) -> float:
    """Eager FP32, one call per session per frame, state per session on the device: ms per call."""
    net = build_dance_lstm(0).eval().to(device)
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((calls, 1, 1, FEATURE_COLS)).astype(np.float32)
    state = [
        (torch.zeros(1, 2, 256, device=device), torch.zeros(1, 2, 256, device=device)) for _ in range(calls)
    ]
    prev = [np.zeros((1, 75), np.float32) for _ in range(calls)]
    style = torch.zeros(1, dtype=torch.int64)

    def tick() -> None:
        with torch.no_grad():
            for i in range(calls):
                h, c = state[i]
                pose, h, c = net(
                    torch.from_numpy(feats[i]).to(device),
                    torch.from_numpy(prev[i]).to(device),
                    style.to(device),
                    h,
                    c,
                )
                state[i] = (h, c)
                prev[i] = pose[:, 0].cpu().numpy()

    return device_ms(tick, device.type, 3) / calls


def baseline_face_ms(manifest: ModelManifest, calls: int, device: torch.device) -> float:
    net = module_for(manifest).eval().to(device)
    images = np.random.default_rng(0).random((calls, 1, 3, 224, 224), dtype=np.float32)

    def tick() -> None:
        with torch.no_grad():
            for i in range(calls):
                net(torch.from_numpy(images[i]).to(device)).cpu()

    return device_ms(tick, device.type, 3) / calls


def baseline_tracking(
    device: torch.device, frame_size: str, sessions: int = 16, ticks: int = 40
) -> dict[str, float]:
    """MediaPipe-style, one session at a time on the same device: each session's frame detected (when
    not tracked) and cropped, then the mesh and blendshape networks at batch 1, then its frame made,
    before the next session's. The same clip and phases as the load generators, decoded frames (no
    JPEG decode). ms per session-frame, after 10 warm-up ticks. On CUDA the torch backend, so the
    tracker's device path at batch 1 (detection and crop on the GPU too, as MediaPipe's GPU graph). A
    CPU smoke run (--device cpu) runs ONNX Runtime: the torch backend's converted graphs take seconds a
    frame on a CPU."""
    onnx = ensure_converted(locate()) / f"{SERVED_NAME}.onnx"
    engine = load_engine(onnx, backend="torch") if device.type == "cuda" else load_engine(onnx)
    pipeline = FaceTrackingPipeline(engine)
    states = [pipeline.open_session({}) for _ in range(sessions)]
    width, height = (int(x) for x in frame_size.split("x"))
    video = FaceVideo(width, height, TRACKING_FPS)
    clip = [video.frame(i) for i in range(60)]
    ids = [f"{k:016d}" for k in range(sessions)]
    times: list[float] = []
    for tick in range(10 + ticks):
        t_ns = int(tick * 1e9 / TRACKING_FPS)
        for k in range(sessions):
            t0 = time.perf_counter()
            item = ImageInput(tick, ids[k], tick, t_ns, False, clip[(tick + 7 * k) % len(clip)])
            steps = pipeline.prepare(states[k], item)
            result = pipeline.run_batch([states[k]], steps)
            pipeline.finish_batch([states[k]], [ids[k]], [tick], steps, result)
            if tick >= 10:
                times.append((time.perf_counter() - t0) * 1e3)
    return {
        "mean_ms": round(float(np.mean(times)), 3),
        "p50_ms": round(percentile(times, 50), 3),
        "p99_ms": round(percentile(times, 99), 3),
        "session_frames": len(times),
    }


# ------------------------------------------------------------------------------------------ metrics
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> str:
    """The front end's /metrics text."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return str(r.read().decode())


def samples(text: str) -> Samples:
    """Every sample of a /metrics text: (name, sorted labels) -> value. Parsed after the window: at
    2048 sessions a parse takes this process's CPU for a good part of a second."""
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


GENERATIONS = ("0", "1", "2")


def per_worker(before: Samples, after: Samples, seconds: float, model: str) -> list[dict[str, Any]]:
    """Frames per second and stage means of each worker over the measured window."""

    def delta(name: str, **labels: str) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for (n, lab), v in after.items():
            d = dict(lab)
            if n == name and all(d.get(k) == x for k, x in labels.items()):
                out[d["worker"]] += v - before.get((n, lab), 0.0)
        return out

    def histogram(stage: str, part: str, **labels: str) -> dict[str, float]:
        """A stage histogram's _sum, _count or _bucket (end_to_end is a family of its own)."""
        if stage == "end_to_end":
            return delta(f"avatar_bridge_end_to_end_seconds_{part}", model=model, **labels)
        return delta(f"avatar_bridge_stage_seconds_{part}", stage=stage, model=model, **labels)

    frames = delta("avatar_bridge_frames_published_total", model=model)
    stages = {stage: (histogram(stage, "sum"), histogram(stage, "count")) for stage in STAGES}
    # Calls slower than a frame and than three, per stage, from the histogram buckets (LATENCY_BUCKETS_S
    # has 0.016 and 0.05): where a tick's tail comes from inside a worker, if it does.
    within = {(stage, le): histogram(stage, "bucket", le=le) for stage in stages for le in ("0.016", "0.05")}
    # The workers' garbage collections in the window (bridge.serving.heap times them by generation).
    gc = "avatar_bridge_worker_python_gc_pause_seconds"
    gc_pauses = {(g, "count"): delta(f"{gc}_count", generation=g) for g in GENERATIONS}
    gc_pauses |= {(g, "sum"): delta(f"{gc}_sum", generation=g) for g in GENERATIONS}
    gc_pauses |= {(g, "0.005"): delta(f"{gc}_bucket", generation=g, le="0.005") for g in GENERATIONS}
    rows = []
    for worker in sorted(frames, key=int):
        row: dict[str, Any] = {"worker": int(worker), "frames_per_s": round(frames[worker] / seconds, 1)}
        for stage, (total, count) in stages.items():
            n = count.get(worker, 0.0)
            row[f"{stage}_ms_mean"] = round(1e3 * total.get(worker, 0.0) / n, 3) if n else 0.0
            for le, name in (("0.016", "16ms"), ("0.05", "50ms")):
                row[f"{stage}_calls_over_{name}"] = int(n - within[stage, le].get(worker, 0.0))
        row["calls"] = int(stages["engine"][1].get(worker, 0.0))
        collections = sum(gc_pauses[g, "count"].get(worker, 0.0) for g in GENERATIONS)
        row["gc_collections"] = int(collections)
        row["gc_pauses_over_5ms"] = int(
            collections - sum(gc_pauses[g, "0.005"].get(worker, 0.0) for g in GENERATIONS)
        )
        row["gc_ms_total"] = round(1e3 * sum(gc_pauses[g, "sum"].get(worker, 0.0) for g in GENERATIONS), 1)
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------ scenarios
@dataclass(frozen=True)
class Load:
    """What the load generators send: per tick (`fps` a second) one input per session."""

    pipeline: str  # motion or face
    fps: float = FPS
    cropped: bool = False  # face: aligned 224x224 crops (option cropped)
    frame_size: str = "320x240"  # face: camera frames WIDTHxHEIGHT
    image_format: str = "rgb8"  # face: rgb8 or jpeg

    def flags(self) -> list[str]:
        return [
            "--fps", str(self.fps), "--frame-size", self.frame_size, "--image-format", self.image_format,
            *(["--cropped"] if self.cropped else []),
        ]  # fmt: skip


@dataclass
class Window:
    """What was read on the host over one scenario's measured window."""

    cpu: list[dict[str, Any]]  # per process over the whole window (cpu_use)
    cpu_by_second: dict[str, Any]  # CpuSampler's readings
    scrapes_at: list[float]  # when each /metrics scrape began, seconds from the window's start


def run_scenario(
    bridge: BridgeProcess,
    model: str,
    sessions: int,
    load: Load,
    args: argparse.Namespace,
    layout: dict[str, list[int]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Window]:
    """Drive `sessions` sessions from `args.generators` processes; (their reports, per-worker figures,
    what the host's CPU did). The first /metrics scrape (and CPU reading) is `args.scrape_lead` seconds
    before the window, so that one scrape's cost can be told from the window's; with
    `args.scrape_every`, more scrapes run inside the window. With a `layout` (cpu_layout), the
    generators run on their own cores and each of the bridge's processes on its own."""
    warmup_s, seconds = args.warmup, args.seconds
    count = min(args.generators, sessions)
    shares = [sessions // count + (1 if i < sessions % count else 0) for i in range(count)]
    generator_cores = layout.get("load generators")
    procs = [
        subprocess.Popen(
            [
                sys.executable, str(GENERATOR), str(bridge.request_port), load.pipeline, str(n),
                str(warmup_s), str(seconds), *load.flags(),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            # Born on the generators' cores, before any thread of theirs starts.
            preexec_fn=(lambda: os.sched_setaffinity(0, generator_cores)) if generator_cores else None,
        )
        for n in shares
    ]  # fmt: skip
    for p in procs:
        assert p.stdout is not None
        line = p.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"load generator failed to start: {line!r}")
    roles = bridge_roles(bridge.proc.pid) | {p.pid: f"load generator {k}" for k, p in enumerate(procs)}
    for pid, role in roles.items():
        if role in layout:
            pin(pid, layout[role])
    t_start = time.time() + 0.5
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(f"{t_start}\n")
        p.stdin.flush()
    port = bridge.ports["metrics_port"]
    pids = list(roles)
    window = t_start + warmup_s
    time.sleep(max(0.0, window - args.scrape_lead - time.time()))
    scrapes_at = [time.time() - window]
    before, cpu_before, t0 = scrape(port), thread_times(pids), time.time()
    time.sleep(max(0.0, window - time.time()))
    sampler = CpuSampler(roles)
    sampler.start()
    while args.scrape_every > 0 and scrapes_at[-1] + args.scrape_every < seconds - 0.5:
        time.sleep(max(0.0, window + scrapes_at[-1] + args.scrape_every - time.time()))
        scrapes_at.append(time.time() - window)
        scrape(port)
    time.sleep(max(0.0, window + seconds - time.time()))
    by_second = sampler.stop()
    after, cpu_after, t1 = scrape(port), thread_times(pids), time.time()
    cpu = cpu_use(cpu_before, cpu_after, t1 - t0, roles)
    reports = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        if p.returncode:
            raise RuntimeError(f"load generator exited with {p.returncode}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    per_w = per_worker(samples(before), samples(after), t1 - t0, model)
    return reports, per_w, Window(cpu, by_second, scrapes_at)


def record(
    model: str,
    sessions: int,
    workers: int,
    reports: list[dict[str, Any]],
    per_w: list[dict[str, Any]],
    baseline_ms: float,
    fps_target: float = FPS,
) -> dict[str, Any]:
    steps = np.asarray([x for r in reports for x in r["latencies_ms"]])
    p50, p99 = percentile(steps, 50), percentile(steps, 99)
    mean = float(steps.mean()) if steps.size else float("nan")
    seconds = reports[0]["seconds"]
    published = sum(r["frames_published"] for r in reports)
    received = sum(r["frames_received"] for r in reports)
    errors: dict[str, int] = defaultdict(int)
    for r in reports:
        for name, n in r["errors"].items():
            errors[name] += n
    per_session_step = mean / sessions
    # p99 of each second of the window (by each complete tick's own index): a transient shows apart
    # from the steady state.
    second_of = [np.asarray(r["latency_ticks"]) // int(fps_target) for r in reports]
    by_second = [
        percentile(
            np.concatenate(
                [np.asarray(r["latencies_ms"])[s == k] for r, s in zip(reports, second_of, strict=True)]
            ),
            99,
        )
        for k in range(int(seconds))
    ]
    fps = sum(r["frames_received_measured"] for r in reports) / sessions / seconds
    frame_ms = 1e3 / fps_target
    frame_p50, frame_p99 = frame_latency_percentiles(reports, (50, 99))
    return {
        "model": model,
        "sessions": sessions,
        "workers": workers,
        "generators": len(reports),
        "input": "inputs (multiplexed)" if reports[0]["multiplexed"] else "input (one per session)",
        # Motion: each generator's sessions in its own batch group, read from that group's topic only.
        "batch_groups": all(r.get("batch_group") for r in reports),
        "p50_ms": round(p50, 3),
        "p99_ms": round(p99, 3),
        "mean_ms": round(mean, 3),
        "max_ms": round(float(steps.max()), 3) if steps.size else float("nan"),
        "p99_ms_by_second": [round(x, 2) for x in by_second],
        # Every frame's own latency (what one avatar sees), beside the tick's (its slowest frame's).
        "frame_p50_ms": frame_p50,
        "frame_p99_ms": frame_p99,
        "fps_per_session": round(fps, 2),
        "fps_target": fps_target,
        "within_frame": p99 <= frame_ms and fps > 0.95 * fps_target,
        "seconds_within_frame": sum(x <= frame_ms for x in by_second),
        "ticks": int(steps.size),
        "ticks_incomplete": sum(r["ticks_incomplete"] for r in reports),
        "generator_send_lag_p99_ms": max(r["send_lag_p99_ms"] for r in reports),
        "generator_send_lag_max_ms_by_second": [
            max(r["send_lag_max_ms_by_second"][k] for r in reports if k < len(r["send_lag_max_ms_by_second"]))
            for k in range(max(len(r["send_lag_max_ms_by_second"]) for r in reports))
        ],
        "generators_cpu_percent": [r["cpu_percent"] for r in reports],
        "frames_published": published,
        "frames_received": received,
        "frames_lost": max(0, published - received),
        # Inputs that made no frame in the window (a newer image replaced them, or refused): the FPS short.
        "frames_short_of_target": max(
            0, round(fps_target * seconds * sessions - sum(r["frames_received_measured"] for r in reports))
        ),
        "errors": dict(errors),
        "total_frames_per_s": round(sum(w["frames_per_s"] for w in per_w), 1),
        "per_worker": per_w,
        "bridge_us_per_session_step": round(1e3 * per_session_step, 3),
        "baseline_us_per_session_step": round(1e3 * baseline_ms, 3),
        "baseline_ratio": round(baseline_ms / per_session_step, 2),
    }


def frame_latency_percentiles(reports: list[dict[str, Any]], qs: Sequence[float]) -> list[float]:
    """Percentiles (ms, to the bin's middle) of the generators' merged per-frame latency histograms."""
    counts: dict[int, int] = defaultdict(int)
    for r in reports:
        for b, n in r["frame_latency_hist"].items():
            counts[int(b)] += n
    if not counts:
        return [float("nan")] * len(qs)
    bins = np.asarray(sorted(counts))
    cumulative = np.cumsum([counts[b] for b in bins])
    width = reports[0]["frame_latency_bin_ms"]
    at = [bins[np.searchsorted(cumulative, q / 100 * cumulative[-1])] for q in qs]
    return [round((float(b) + 0.5) * width, 2) for b in at]


def _load(model: str, args: argparse.Namespace) -> Load:
    if model == "motion":
        return Load("motion")
    if model == "face":
        return Load("face", cropped=args.face_input == "crop")
    return Load("face", TRACKING_FPS, frame_size=args.frame_size, image_format=args.image_format)


def bench_model(
    model: str, counts: Sequence[int], workers: int, args: argparse.Namespace, device: torch.device, tmp: Path
) -> list[dict[str, Any]]:
    """`model` (motion, face or tracking) at each of `counts` sessions through one `serve --workers`."""
    per_worker_max = 1 << (-(-max(counts) // workers) - 1).bit_length()
    folder, manifest = model_folder(tmp, "face" if model == "face" else "motion", max(per_worker_max, 8))
    name = SERVED_NAME if model == "tracking" else manifest.name
    tracking_baseline: dict[str, float] = {}
    if model == "motion":
        baseline = baseline_motion_ms(min(max(counts), 256), device)
    elif model == "face":
        baseline = baseline_face_ms(manifest, min(max(counts), 32), device)
    else:
        tracking_baseline = baseline_tracking(device, args.frame_size, *((2, 3) if args.quick else ()))
        baseline = tracking_baseline["mean_ms"]
    if device.type == "cuda":
        torch.cuda.empty_cache()
    # Face tracking on a CPU smoke run: ONNX Runtime (see baseline_tracking).
    backend = "onnxruntime" if model == "tracking" and device.type != "cuda" else "torch"
    tracking_on_torch = model == "tracking" and backend == "torch"
    serve_args = [
        "--models", str(folder), "--backend", backend, "--workers", str(workers),
        *([] if model == "tracking" else ["--no-face-tracking"]),
        # The tracker's manifest tops out at 32 (a CPU warm-up's size): a worker's share in one call.
        *(["--torch-max-batch", str(max(per_worker_max, 32))] if tracking_on_torch else []),
        "--metrics-port", "0", "--idle-timeout", "120",
        "--max-sessions", str(2 * max(counts)), "--max-sessions-per-client", str(2 * max(counts)),
        "--max-queue-delay-us", str(QUEUE_DELAY_US),
        "--prepare-workers", str(args.prepare_workers if model != "motion" else 1),
        *(["--frames-hwm", str(args.frames_hwm)] if args.frames_hwm else []),
        *args.serve_args.split(),
    ]  # fmt: skip
    load = _load(model, args)
    layout = cpu_layout(available_cpus(), workers, args.pin) if args.pin else {}
    if args.pin and not layout:
        print(f"    --pin {args.pin}: too few cores ({len(available_cpus())}) to pin; not pinned", flush=True)
    if layout:
        pin(os.getpid(), layout["load generators"])  # this process's own readings stay off the bridge's cores
    out = []
    log = args.out.with_suffix(f".{model}-{workers}.log")
    log.unlink(missing_ok=True)
    with BridgeProcess(*serve_args, start_timeout_s=600, log_path=log) as bridge:
        for n in counts:
            reports, per_w, host = run_scenario(bridge, name, n, load, args, layout)
            rec = record(name, n, workers, reports, per_w, baseline, load.fps)
            rec |= {
                "load": {"fps": load.fps, "frame_size": load.frame_size, "image_format": load.image_format}
                if model == "tracking"
                else {"fps": load.fps},
                "cpu_layout": layout,
                "cpu": host.cpu,
                "cpu_by_second": host.cpu_by_second,
                "scrapes_at_s": [round(t, 2) for t in host.scrapes_at],
            }
            if tracking_baseline:
                rec["baseline"] = tracking_baseline
                # Sessions one GPU serves at 30 FPS one call at a time, against the bridge's.
                rec["baseline_sessions_at_fps"] = int(1e3 / TRACKING_FPS // tracking_baseline["mean_ms"])
            out.append(rec)
            _print_record(rec, per_w, host)
    return out


def _print_record(rec: dict[str, Any], per_w: list[dict[str, Any]], host: Window) -> None:
    print(_row(rec), flush=True)
    print(f"    {_slow_calls(per_w)}", flush=True)
    # The device path's stages only where they ran (face tracking on the torch backend).
    ran = [st for st in STAGES if st not in DEVICE_STAGES or any(w[f"{st}_ms_mean"] for w in per_w)]
    means = " ".join(f"{st} {np.mean([w[f'{st}_ms_mean'] for w in per_w]):.2f}" for st in ran if per_w)
    print(f"    stage means over workers, ms: {means}", flush=True)
    print(
        f"    each frame's own latency: p50 {rec['frame_p50_ms']} / p99 {rec['frame_p99_ms']} ms; "
        f"seconds within a frame: {rec['seconds_within_frame']}/{len(rec['p99_ms_by_second'])}; "
        f"generators' CPU %: {' '.join(f'{c:.0f}' for c in rec['generators_cpu_percent'])}",
        flush=True,
    )
    if host.scrapes_at:
        print(f"    scrapes at s: {' '.join(f'{t:.1f}' for t in host.scrapes_at)}", flush=True)
    by = host.cpu_by_second
    print(
        "    second  p99 ms  send lag ms  busy cores  stolen  runnable  front %  fwd %  workers max/sum %"
        "  gens %  faults/s  cpu stall ms/s  mem stall ms/s"
    )
    forwarder = by["per_process_percent"].get("frames forwarder", [])
    front = by["per_process_percent"].get("front end", [])
    lag = rec["generator_send_lag_max_ms_by_second"]
    faults = by.get("host_page_faults_per_s", [])
    cpu_stall, mem_stall = by.get("host_cpu_stall_us_per_s", []), by.get("host_memory_stall_us_per_s", [])

    def at(values: list[float], k: int, scale: float = 1.0) -> float:
        return values[k] * scale if k < len(values) else float("nan")

    for k, p99 in enumerate(rec["p99_ms_by_second"]):
        if k >= len(by["host_busy_cores"]):
            break
        print(
            f"    {k:>6} {p99:>7.1f} {lag[k] if k < len(lag) else float('nan'):>12.1f} "
            f"{by['host_busy_cores'][k]:>11.1f} {by['host_stolen_cores'][k]:>7.2f} "
            f"{by['host_runnable_threads'][k]:>9} "
            f"{front[k] if k < len(front) else 0:>8.0f} {forwarder[k] if k < len(forwarder) else 0:>6.0f} "
            f"{by['workers_max_percent'][k]:>8.0f}/{by['workers_sum_percent'][k]:<8.0f} "
            f"{by['load_generators_sum_percent'][k]:>7.0f} {at(faults, k):>9.0f} "
            f"{at(cpu_stall, k, 1e-3):>14.0f} {at(mem_stall, k, 1e-3):>15.0f}",
            flush=True,
        )
    for c in sorted(host.cpu, key=lambda c: -c["cpu_percent"]):
        threads = ", ".join(f"{name} {u:.0f}" for name, u in c["busiest_threads"])
        print(f"    cpu {c['role']:<18} {c['cpu_percent']:>6.0f} %  busiest threads: {threads}", flush=True)


# ------------------------------------------------------------------------------------------ MPS
def start_mps(folder: Path) -> str:
    """Start the CUDA MPS control daemon with private pipe and log folders; '' when it serves, else why
    not (then it is stopped again and the run goes on without it)."""
    control = shutil.which("nvidia-cuda-mps-control")
    if control is None:
        return "nvidia-cuda-mps-control not found"
    for name, sub in (("CUDA_MPS_PIPE_DIRECTORY", "pipe"), ("CUDA_MPS_LOG_DIRECTORY", "log")):
        (folder / sub).mkdir(parents=True, exist_ok=True)
        os.environ[name] = str(folder / sub)
    started = subprocess.run([control, "-d"], capture_output=True, text=True, timeout=30)
    if started.returncode:
        stop_mps()
        return f"nvidia-cuda-mps-control -d failed: {started.stderr.strip() or started.returncode}"
    probe = "import torch; torch.zeros(1, device='cuda').sum().item()"
    try:
        subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, timeout=60)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        stop_mps()
        return f"a CUDA client under MPS failed: {exc}"
    return ""


def stop_mps() -> None:
    control = shutil.which("nvidia-cuda-mps-control")
    if control is not None and "CUDA_MPS_PIPE_DIRECTORY" in os.environ:
        try:
            subprocess.run([control], input="quit\n", text=True, capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:  # the figures are saved already; a daemon left running is all
            print("MPS control daemon did not answer 'quit' within 30 s; left running", flush=True)
    for name in ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"):
        os.environ.pop(name, None)


# ------------------------------------------------------------------------------------------ output
def _slow_calls(per_w: list[dict[str, Any]]) -> str:
    calls = sum(w["calls"] for w in per_w)

    def over(stage: str, limit: str) -> int:
        return sum(w[f"{stage}_calls_over_{limit}"] for w in per_w)

    stages = ("queue", "engine", "post", "publish", "end_to_end")
    slow = ", ".join(f"{stage} {over(stage, '16ms')}/{over(stage, '50ms')}" for stage in stages)
    collections = sum(w["gc_collections"] for w in per_w)
    gc = f"{collections} collections, {sum(w['gc_pauses_over_5ms'] for w in per_w)} over 5 ms"
    return f"calls over 16/50 ms of {calls} in the workers: {slow}; gc: {gc}"


def _row(r: dict[str, Any]) -> str:
    workers = " ".join(f"{w['frames_per_s']:.0f}" for w in r["per_worker"])
    return (
        f"{r['model']:<12} {r['sessions']:>5} {r['workers']:>3} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} "
        f"{r['fps_per_session']:>7.1f} {r['frames_lost']:>6} {r['total_frames_per_s']:>9.0f}  "
        f"{r['baseline_ratio']:>7.1f}  [{workers}]"
    )


HEADER = (
    f"{'model':<12} {'sess':>5} {'wrk':>3} {'p50 ms':>8} {'p99 ms':>8} {'fps/s':>7} {'lost':>6} "
    f"{'frames/s':>9}  {'vs base':>7}  [frames/s per worker]"
)


def largest_within_frame(records: list[dict[str, Any]], model: str, workers: int) -> int:
    ok = [
        r["sessions"]
        for r in records
        if r["model"] == model and r["workers"] == workers and r["within_frame"]
    ]
    return max(ok, default=0)


def plot(records: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in records))
    fig, axes = plt.subplots(1, 1 + len(models), figsize=(6 + 4 * len(models), 4.5), squeeze=False)
    lat = axes[0][0]
    plotted = False
    for model, workers in dict.fromkeys((r["model"], r["workers"]) for r in records):
        # A scenario with no complete tick has no latency (nan); the throughput plot still shows it.
        rs = [
            r
            for r in records
            if r["model"] == model and r["workers"] == workers and r["p99_ms"] == r["p99_ms"]
        ]
        x = [r["sessions"] for r in rs]
        plotted = plotted or bool(rs)
        lat.plot(x, [r["p99_ms"] for r in rs], "o-", label=f"{model}, {workers} workers, p99")
        lat.plot(x, [r["p50_ms"] for r in rs], "s--", alpha=0.6, label=f"{model}, {workers} workers, p50")
    lat.axhline(FRAME_MS, color="grey", lw=0.8, ls=":", label="one frame at 60 FPS (16.7 ms)")
    if plotted:  # log axes with no latency at all (no scenario completed a tick) cannot be drawn
        lat.set_xscale("log", base=2)
        lat.set_yscale("log")
    lat.set_xlabel("concurrent sessions (60 FPS each)")
    lat.set_ylabel("tick latency, ms (first input sent -> last frame received)")
    lat.grid(True, which="both", alpha=0.3)
    lat.legend(fontsize=8)
    for thr, model in zip(axes[0][1:], models, strict=True):  # throughput, stacked by worker
        rs = [r for r in records if r["model"] == model]
        labels = [f"{r['sessions']}\n{r['workers']}w" for r in rs]
        bottom = np.zeros(len(rs))
        for w in range(max(len(r["per_worker"]) for r in rs)):
            values = np.array(
                [r["per_worker"][w]["frames_per_s"] if w < len(r["per_worker"]) else 0 for r in rs]
            )
            thr.bar(labels, values, bottom=bottom, label=f"worker {w}")
            bottom += values
        thr.plot(
            labels, [FPS * r["sessions"] for r in rs], "k_", ms=30, mew=2, label="offered (60 FPS x sessions)"
        )
        thr.set_title(model, fontsize=9)
        thr.set_xlabel("sessions, workers")
        thr.set_ylabel("frames published per second")
        thr.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def run(args: argparse.Namespace) -> int:
    device = torch.device(
        args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "")
    )
    if not device.type:
        print(
            "python bench/gpu.py needs a CUDA GPU (torch sees none; --device cpu for a smoke run)",
            file=sys.stderr,
        )
        return 2
    motion_counts: Sequence[int] = (
        [int(n) for n in str(args.sessions).split(",")] if args.sessions else MOTION_SESSIONS
    )
    face_counts: Sequence[int] = FACE_SESSIONS
    tracking_counts: Sequence[int] = [int(n) for n in str(args.tracking_sessions).split(",")]
    if args.quick:  # few sessions, 1 s each; --sessions still picks the motion counts
        motion_counts = motion_counts if args.sessions else (8, 64)
        face_counts = tracking_counts = (2,)
        args.seconds, args.warmup = 1.0, 1.0
    counts = {"motion": motion_counts, "face": face_counts, "tracking": tracking_counts}
    counts_of_workers = [int(w) for w in str(args.workers).split(",")]
    args.out.parent.mkdir(parents=True, exist_ok=True)  # the bridge's log goes beside the JSON
    tmp = Path(tempfile.mkdtemp(prefix="avatar-bridge-bench-"))
    mps = start_mps(tmp / "mps") if args.mps else "not asked for (--mps)"
    print(f"MPS: {mps or 'on'}", flush=True)
    print(HEADER, flush=True)
    records: list[dict[str, Any]] = []
    failures: list[str] = []
    name = torch.cuda.get_device_name() if device.type == "cuda" else f"CPU ({cpu_model()})"
    try:
        for workers in counts_of_workers:  # the last is the main run; earlier ones compare
            main = workers == counts_of_workers[-1]
            for model in ("motion", "face", "tracking"):
                # Face and tracking compare worker counts only when they run alone (--only): they are slow.
                if args.only not in (None, model) or (model != "motion" and not main and args.only != model):
                    continue
                if model == "tracking" and args.only is None and not _tracker_installed():
                    print("face tracking: model not installed (avatar-bridge models install face); skipped")
                    continue
                try:
                    records += bench_model(model, counts[model], workers, args, device, tmp)
                except Exception as exc:  # one run that fails must not cost the others' figures
                    failures.append(f"{model}, {workers} workers: {type(exc).__name__}: {exc}")
                    print(f"FAILED {failures[-1]}", flush=True)
                # After each run, so a run cut off keeps what was measured.
                save(args, records, failures, name, mps, counts_of_workers)
    finally:
        if args.mps and not mps:
            stop_mps()
        shutil.rmtree(tmp, ignore_errors=True)
    fields = save(args, records, failures, name, mps, counts_of_workers)
    print(
        "largest session count within one frame (p99 within a frame at the scenario's FPS, >95 % of it): "
        f"{fields['largest_sessions_within_frame']}"
    )
    print(f"wrote {args.out} and {args.out.with_suffix('.png')}")
    return 1 if failures else 0


def _tracker_installed() -> bool:
    from bridge.models.mediapipe.locate import FaceModelError

    try:
        locate()
    except FaceModelError:
        return False
    return True


def save(
    args: argparse.Namespace,
    records: list[dict[str, Any]],
    failures: list[str],
    name: str,
    mps: str,
    counts_of_workers: list[int],
) -> dict[str, Any]:
    """Write the JSON and the plot of what has run so far."""
    runs = list(dict.fromkeys((r["model"], r["workers"]) for r in records))
    fields = {
        "device": name,
        "host": f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "command": "python bench/gpu.py " + " ".join(sys.argv[1:]),
        "what_runs": "avatar-bridge serve --workers N (front end + worker processes), torch backend, "
        "float16, CUDA graphs per batch tier, device state slots; load generators in other processes",
        "mps": mps or "on",
        "workers": counts_of_workers[-1],
        "also_compared_workers": counts_of_workers[:-1],
        "baseline": "PyTorch eager float32, one call per session per frame, same device, same run",
        "fps_per_session_target": FPS,
        "max_queue_delay_us": QUEUE_DELAY_US,
        "serve_args": args.serve_args,
        "face_prepare_workers_per_worker": args.prepare_workers,
        "seconds_per_scenario": args.seconds,
        "first_scrape_before_window_s": args.scrape_lead,
        "scrape_every_s": args.scrape_every,
        "pin_generator_cores": args.pin,
        "tracking_frames": f"{args.frame_size} {args.image_format}, {TRACKING_FPS:.0f} FPS",
        "tracking_path": TRACKING_PATH_CUDA
        if torch.cuda.is_available() and args.device != "cpu"
        else "CPU smoke run: serve on ONNX Runtime, each session prepared on the CPU (OpenCV, libjpeg-turbo)",
        "face_input": "aligned 224x224 crops (option cropped)"
        if args.face_input == "crop"
        else "320x240 frames",
        "warmup_s": args.warmup,
        "largest_sessions_within_frame": {
            f"{m} (workers {w})": largest_within_frame(records, m, w) for m, w in runs
        },
        "failures": failures,
        "records": records,
    }
    write_bench_json(args.out, fields)
    if records:
        title = f"avatar-bridge serve --workers {counts_of_workers[-1]} on {name} (MPS: {mps or 'on'})"
        plot(records, args.out.with_suffix(".png"), title)
    return fields


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
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "gpu.json")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="bench/gpu.py", description=__doc__.splitlines()[0])
    add_arguments(parser)
    raise SystemExit(run(parser.parse_args()))
