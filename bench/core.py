"""Core benchmark on the CPU default: motion sessions at 60 Hz through a real bridge process.

For 1, 4 and 16 concurrent motion sessions, fed precomputed music-feature rows and then raw audio
(features computed in the bridge), it measures end-to-end latency (input sent -> frame
received by this client), the engine time reported in each frame, and the bridge overhead (their
difference: decode, features, queueing, post-processing, encode, transport). At 16 sessions it also
reads the same load from the batch topic (`batch/motion`, one message per engine call, docs/protocol.md
5.3) instead of the per-session topics, so per-session and batch publishing are compared in the same
run (`publishing`: the overhead p99 of each and their ratio), and sends it multiplexed (one `inputs`
message per tick for all 16 sessions, docs/protocol.md 4.7) as a client driving many avatars does.
Also: msgpack frame encode/decode time, request decode time (bridge.protocol.decode_request, against
msgpack parsing alone), session open time, and the baseline the scheduler replaces — one engine call
per session instead of one batched call for all — measured in the same run, with the engine's cost
per call and per row (what bounds their ratio), and the same comparison for the pipeline's whole step
(engine, post-processing, frame columns).

The machine is shared: each scenario records the CPU that other processes used while it ran
(`other_cpu`, in cores, from /proc), so a figure taken beside someone else's job can be told apart.

    python bench/core.py [--seconds 10] [--out bench/results/core-cpu.json]
    python bench/core.py --decode-only   # the request decode table alone, nothing written
    python bench/core.py --serve-args "--max-queue-delay-us 0"   # the same against other serve flags
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

import msgpack
import numpy as np
import zmq

from bridge.audio.music_features import MusicFeatureStream
from bridge.backends import load_engine
from bridge.clients.harness.client import BridgeClient
from bridge.clients.harness.process import BridgeProcess
from bridge.clients.harness.run import cpu_model, percentile, run_harness
from bridge.media.music import synthesize_music
from bridge.pipelines.base import Step
from bridge.pipelines.motion import MotionPipeline
from bridge.protocol.batch_frames import ColumnFrames, batch_topic, motion_columns
from bridge.protocol.codec import pack
from bridge.protocol.frames import decode_frame
from bridge.protocol.motion_frames import encode_motion_frames
from bridge.protocol.requests import decode_request
from bridge.serving.publisher import GatedOutlet, publish_call
from bridge.serving.sessions import Session
from bridge.transport.zmq_sockets import BridgeSockets, TransportConfig

ROOT = Path(__file__).resolve().parents[1]
SESSION_COUNTS = (1, 4, 16)
BATCH_SESSIONS = 16  # the session count read from the batch topic too, and sent multiplexed
WIDE_BATCH = 64  # a second batch size for the engine's cost per row


def music_feature_rows(seconds: float) -> np.ndarray:
    pcm, _ = synthesize_music(seconds, sample_rate=48000)
    return MusicFeatureStream(48000, 60.0).push(pcm)


def cpu_s(pids: set[int]) -> tuple[float, float]:
    """CPU seconds the whole machine has been busy (/proc/stat, all cores) and those of `pids` (user +
    system); zeros where /proc is not there."""
    if not os.path.isdir("/proc"):
        return 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    total = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    busy = sum(total) - total[3] - total[4]  # all but idle and iowait
    own = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        own += int(fields[11]) + int(fields[12])
    return busy / tick, own / tick


def other_cpu(before: tuple[float, float], after: tuple[float, float], seconds: float) -> float:
    """Cores' worth of CPU that everything but the measured processes used between two readings
    (processes that started and ended meanwhile included)."""
    used = (after[0] - before[0]) - (after[1] - before[1])
    return used / seconds if seconds > 0 else float("nan")


def bench_sessions(
    bridge: BridgeProcess,
    sessions: int,
    seconds: float,
    rows: np.ndarray | None,
    *,
    batch_topic: bool = False,
    multiplex: bool = False,
) -> dict[str, object]:
    client = BridgeClient("127.0.0.1", bridge.request_port, timeout_s=10)
    mine = {os.getpid(), bridge.proc.pid}
    cpu0, t0 = cpu_s(mine), time.monotonic()
    try:
        report = run_harness(
            client,
            "motion",
            seconds=seconds,
            sessions=sessions,
            feature_rows=rows,
            batch_topic=batch_topic,
            multiplex=multiplex,
        )
    finally:
        client.close()
    busy = other_cpu(cpu0, cpu_s(mine), time.monotonic() - t0)
    latency_ms = np.array([x for t in report.tracks for x in t.latencies_ns]) / 1e6
    engine_ms = np.array([x for t in report.tracks for x in t.engine_us]) / 1e3
    overhead = latency_ms - engine_ms
    # Captured -> published, minus the model: what the bridge itself adds (transport in included).
    in_bridge = np.array([x for t in report.tracks for x in t.in_bridge_ns]) / 1e6 - engine_ms
    return {
        "input": "audio" if rows is None else "features",
        "sessions": sessions,
        "publishing": "batch" if batch_topic else "per-session",
        "inputs": "inputs" if multiplex else "input",
        "other_cpu": busy,
        "frames_received": report.frames_received,
        "frames_lost": report.frames_lost,
        "errors": len(report.errors),
        "fps_per_session": report.fps_per_session,
        "latency_ms_p50": percentile(latency_ms, 50),
        "latency_ms_p99": percentile(latency_ms, 99),
        "engine_ms_p50": percentile(engine_ms, 50),
        "engine_ms_p99": percentile(engine_ms, 99),
        "overhead_ms_p50": percentile(overhead, 50),
        "overhead_ms_p99": percentile(overhead, 99),
        "bridge_overhead_ms_p50": percentile(in_bridge, 50),
        "bridge_overhead_ms_p99": percentile(in_bridge, 99),
        "mean_batch": report.mean_batch,
    }


def bench_open(port: int, count: int = 200) -> dict[str, float]:
    client = BridgeClient("127.0.0.1", port)
    times = []
    try:
        for _ in range(count):
            t0 = time.perf_counter()
            sid = client.open("motion")["session"]
            times.append((time.perf_counter() - t0) * 1e3)
            client.close_session(sid)
    finally:
        client.close()
    return {"open_ms_p50": percentile(times, 50), "open_ms_p99": percentile(times, 99)}


def bench_codec(count: int = 20000) -> dict[str, float]:
    joints = np.tile(np.array([0, 0, 0, 1], np.float32), (24, 1))
    root = np.zeros(3, np.float32)
    t0 = time.perf_counter()
    for i in range(count):
        (payload,) = encode_motion_frames(
            ["0123456789abcdef"], [i], [i], [0], joints=joints[None], root=root[None], engine_us=0, batch=1
        )
    encode = (time.perf_counter() - t0) / count * 1e6
    t0 = time.perf_counter()
    for _ in range(count):
        decode_frame(payload)
    decode = (time.perf_counter() - t0) / count * 1e6
    return {"frame_bytes": len(payload), "encode_us": encode, "decode_us": decode}


def bench_publish(counts: tuple[int, ...] = (16, 256, 2048), repeats: int = 20) -> list[dict[str, float]]:
    """One call's publishing (bridge.serving.publisher) on a real frames socket with one subscriber,
    per-session topics (`frame/`) against the batch topic (`batch/`), in ms per call. One frames
    socket per topic serves every count."""
    medians: dict[tuple[int, bytes], float] = {}
    for prefix in (b"frame/", b"batch/"):
        sockets = BridgeSockets(TransportConfig(request_port=0, frames_port=0, frames_hwm=0))
        sub = sockets.context.socket(zmq.SUB)
        sub.setsockopt(zmq.RCVHWM, 0)
        sub.connect(sockets.frames_endpoint)
        sub.setsockopt(zmq.SUBSCRIBE, prefix)
        while not sockets.matching([b"frame/" + b"0" * 16, b"batch/motion"])[prefix == b"batch/"]:
            time.sleep(0.01)
        for n in counts:
            sessions = [Session(f"{i:016x}", cast(Any, None), None, ()) for i in range(n)]
            outlet = GatedOutlet(sockets, threading.Lock(), {s.topic for s in sessions})
            columns = motion_columns(
                [s.id for s in sessions],
                np.zeros(n, np.uint64),
                np.zeros(n, np.uint64),
                np.zeros(n, np.int64),
                joints=np.tile(np.array([0, 0, 0, 1], np.float32), (n, 24, 1)),
                root=np.zeros((n, 3), np.float32),
                engine_us=0.0,
                batch=n,
            )
            rows = [(s, ColumnFrames(columns, i, i + 1)) for i, s in enumerate(sessions)]
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                publish_call(outlet, "motion", batch_topic("motion"), rows)
                times.append((time.perf_counter() - t0) * 1e3)
            medians[n, prefix] = percentile(times, 50)
        sub.close(0)
        sockets.close()
    return [
        {
            "sessions": n,
            "per_session_ms": medians[n, b"frame/"],
            "batch_ms": medians[n, b"batch/"],
            "ratio": medians[n, b"frame/"] / medians[n, b"batch/"],
        }
        for n in counts
    ]


def bench_batching(sessions: int = 16, repeats: int = 300) -> dict[str, float]:
    """Baseline vs scheduler: `sessions` batch-1 engine calls vs one batch-`sessions` call per tick."""
    engine = load_engine(ROOT / "models" / "dance_lstm.manifest.json")
    rng = np.random.default_rng(0)

    def inputs(batch: int) -> dict[str, np.ndarray]:
        return {
            "features": rng.standard_normal((batch, 1, 35)).astype(np.float32),
            "pose.previous": np.zeros((batch, 75), np.float32),
            "style": np.zeros(batch, np.int64),
        }

    one, many, wide = inputs(1), inputs(sessions), inputs(WIDE_BATCH)
    state1, state_n, state_w = (engine.initial_state(b) for b in (1, sessions, WIDE_BATCH))
    t0 = time.perf_counter()
    for _ in range(repeats):
        for _ in range(sessions):
            engine.run(one, state1)
    per_session = (time.perf_counter() - t0) / repeats * 1e3
    t0 = time.perf_counter()
    for _ in range(repeats):
        engine.run(many, state_n)
    batched = (time.perf_counter() - t0) / repeats * 1e3
    t0 = time.perf_counter()
    for _ in range(repeats // 4):
        engine.run(wide, state_w)
    wide_ms = (time.perf_counter() - t0) / (repeats // 4) * 1e3
    engine.close()
    # One call = a fixed part + a part per row; the row part is the LSTM's arithmetic, so no batch
    # size can beat one batch-1 call per row by more than (batch-1 call) / (cost per row).
    per_row = (wide_ms - batched) / (WIDE_BATCH - sessions)
    return {
        "sessions": sessions,
        "baseline_ms_per_tick": per_session,
        "batched_ms_per_tick": batched,
        "speedup": per_session / batched,
        "call_ms_batch_1": per_session / sessions,
        f"call_ms_batch_{WIDE_BATCH}": wide_ms,
        "row_ms": per_row,
        "speedup_bound": per_session / sessions / per_row,
    }


def bench_step(sessions: int = 16, repeats: int = 200) -> dict[str, float]:
    """The same comparison for the pipeline's whole step as the scheduler runs it (engine with state
    rows, post-processing with the model's foot planting, frame columns): each of `sessions` stepped in
    a call of its own against one call for all, per tick. What one call per session would cost a
    bridge that does not batch, fixed post-processing cost included."""
    engine = load_engine(ROOT / "models" / "dance_lstm.manifest.json")
    pipeline = MotionPipeline(engine)
    states = [pipeline.open_session({}) for _ in range(sessions)]
    ids = [f"{i:016x}" for i in range(sessions)]
    rows = np.random.default_rng(0).standard_normal((repeats * 2, 1, 35)).astype(np.float32)

    def step(group: list[int], tick: int) -> None:
        picked = [states[i] for i in group]
        steps = [Step(rows[tick], tick, 0) for _ in group]
        result = pipeline.run_batch(picked, steps)
        pipeline.finish_batch(picked, [ids[i] for i in group], [tick] * len(group), steps, result)

    t0 = time.perf_counter()
    for tick in range(repeats):
        for i in range(sessions):
            step([i], tick)
    per_session = (time.perf_counter() - t0) / repeats * 1e3
    t0 = time.perf_counter()
    for tick in range(repeats, 2 * repeats):
        step(list(range(sessions)), tick)
    batched = (time.perf_counter() - t0) / repeats * 1e3
    engine.close()
    return {
        "sessions": sessions,
        "baseline_ms_per_tick": per_session,
        "batched_ms_per_tick": batched,
        "speedup": per_session / batched,
    }


def compare_publishing(scenarios: list[dict[str, object]]) -> list[dict[str, object]]:
    """Per input: overhead p99 with per-session topics and with the batch topic, and their ratio."""
    out = []
    for kind in ("features", "audio"):
        at = {
            s["publishing"]: s
            for s in scenarios
            if s["input"] == kind and s["sessions"] == BATCH_SESSIONS and s["inputs"] == "input"
        }
        row: dict[str, object] = {"input": kind, "sessions": BATCH_SESSIONS}
        for key in ("overhead_ms_p99", "bridge_overhead_ms_p99"):
            per_session, batch = float(at["per-session"][key]), float(at["batch"][key])  # type: ignore[arg-type]
            row |= {
                f"per_session_{key}": per_session,
                f"batch_{key}": batch,
                f"ratio_{key}": per_session / batch,
            }
        out.append(row)
    return out


COLUMNS = (
    ("input", "input", "{}"),
    ("sessions", "sessions", "{}"),
    ("publishing", "publishing", "{}"),
    ("inputs as", "inputs", "{}"),
    ("fps/session", "fps_per_session", "{:.1f}"),
    ("lost", "frames_lost", "{}"),
    ("e2e p50 ms", "latency_ms_p50", "{:.2f}"),
    ("e2e p99 ms", "latency_ms_p99", "{:.2f}"),
    ("engine p50 ms", "engine_ms_p50", "{:.2f}"),
    ("overhead p50 ms", "overhead_ms_p50", "{:.2f}"),
    ("overhead p99 ms", "overhead_ms_p99", "{:.2f}"),
    ("in-bridge p50 ms", "bridge_overhead_ms_p50", "{:.2f}"),
    ("in-bridge p99 ms", "bridge_overhead_ms_p99", "{:.2f}"),
    ("mean batch", "mean_batch", "{:.1f}"),
    ("others' CPU", "other_cpu", "{:.2f}"),
)


def markdown_table(scenarios: list[dict[str, object]]) -> str:
    lines = ["| " + " | ".join(h for h, _, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(f.format(s[k]) for _, k, f in COLUMNS) + " |" for s in scenarios]
    return "\n".join(lines)


def request_payloads() -> dict[str, bytes]:
    """One request of each common shape, as a client sends it."""
    base = {"op": "input", "session": "0123456789abcdef", "seq": 1, "t_capture_ns": time.time_ns()}
    return {
        "features 1x35": pack({**base, "kind": "features", "rows": 1, "cols": 35, "data": bytes(35 * 4)}),
        "audio 1/60 s 48 kHz": pack(
            {**base, "kind": "audio", "rate": 48000, "format": "s16le", "data": bytes(800 * 2)}
        ),
        "image 640x480": pack(
            {**base, "kind": "image", "width": 640, "height": 480, "data": bytes(640 * 480 * 3)}
        ),
        "ping": pack({"op": "ping", "id": 3, "session": "0123456789abcdef"}),
    }


def bench_request_decode(count: int = 20000) -> list[dict[str, object]]:
    """decode_request (typed msgspec schema + checks) per request, and msgpack.unpackb alone (parsing
    without any validation) on the same bytes, in microseconds."""
    rows: list[dict[str, object]] = []
    for name, payload in request_payloads().items():
        timings = {}
        for label, fn in (("decode_us", decode_request), ("msgpack_parse_us", msgpack.unpackb)):
            for _ in range(count // 10):
                fn(payload)
            t0 = time.perf_counter()
            for _ in range(count):
                fn(payload)
            timings[label] = (time.perf_counter() - t0) / count * 1e6
        rows.append({"request": name, "bytes": len(payload), **timings})
    return rows


def print_request_decode(rows: list[dict[str, object]]) -> None:
    print("| request | bytes | decode_request us | msgpack.unpackb alone us |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['request']} | {r['bytes']} | {r['decode_us']:.2f} | {r['msgpack_parse_us']:.2f} |")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "core-cpu.json")
    parser.add_argument("--decode-only", action="store_true", help="print the request decode table only")
    parser.add_argument(
        "--serve-args",
        default="",
        help='more `serve` flags for the bridge under test, e.g. "--max-queue-delay-us 0" (an A/B run)',
    )
    args = parser.parse_args()
    if args.decode_only:
        print_request_decode(bench_request_decode())
        return 0
    load_start = os.getloadavg()  # the machine is shared: how busy it was is part of the figure
    with BridgeProcess("--idle-timeout", "60", *args.serve_args.split()) as bridge:
        rows = music_feature_rows(args.seconds + 1)
        scenarios = []
        for r in (rows, None):
            scenarios += [bench_sessions(bridge, n, args.seconds, r) for n in SESSION_COUNTS]
            for multiplex in (False, True):
                scenarios.append(
                    bench_sessions(
                        bridge, BATCH_SESSIONS, args.seconds, r, batch_topic=True, multiplex=multiplex
                    )
                )
        opening = bench_open(bridge.request_port)
    codec = bench_codec()
    request_decode = bench_request_decode()
    batching = bench_batching()
    step = bench_step()
    publishing_call = bench_publish()
    result = {
        "device": f"CPU: {cpu_model()}, {os.cpu_count()} cores",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "backend": "onnxruntime (CPU)",
        "seconds_per_scenario": args.seconds,
        "serve_args": args.serve_args,
        "load_average_1_5_15_min": {"start": load_start, "end": os.getloadavg()},
        "motion": scenarios,
        "publishing": compare_publishing(scenarios),
        "publish_call": publishing_call,
        "session_open": opening,
        "codec": codec,
        "request_decode": request_decode,
        "batching": batching,
        "batching_step": step,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(markdown_table(scenarios))
    print(
        "\n| input | sessions | overhead p99 ms, per-session | batch | ratio "
        "| in-bridge p99 ms, per-session | batch | ratio |\n" + "|---" * 8 + "|"
    )
    for c in result["publishing"]:
        print(
            f"| {c['input']} | {c['sessions']} | {c['per_session_overhead_ms_p99']:.2f} | "
            f"{c['batch_overhead_ms_p99']:.2f} | {c['ratio_overhead_ms_p99']:.2f}x | "
            f"{c['per_session_bridge_overhead_ms_p99']:.2f} | {c['batch_bridge_overhead_ms_p99']:.2f} | "
            f"{c['ratio_bridge_overhead_ms_p99']:.2f}x |"
        )
    print(
        f"\nsession open (round trip): p50 {opening['open_ms_p50']:.2f} ms, "
        f"p99 {opening['open_ms_p99']:.2f} ms"
    )
    print(f"frame codec: {codec['frame_bytes']} bytes, encode {codec['encode_us']:.1f} us, ", end="")
    print(f"decode {codec['decode_us']:.1f} us")
    print_request_decode(request_decode)
    print(
        f"batching baseline: {batching['sessions']} sessions, one engine call each "
        f"{batching['baseline_ms_per_tick']:.2f} ms/tick vs one batched call "
        f"{batching['batched_ms_per_tick']:.2f} ms/tick = {batching['speedup']:.1f}x "
        f"(a batch-1 call {batching['call_ms_batch_1']:.3f} ms, each row of a batch "
        f"{batching['row_ms']:.4f} ms more: no batch beats {batching['speedup_bound']:.1f}x)"
    )
    print(
        "whole step (engine, post-processing, frame columns): one call each "
        f"{step['baseline_ms_per_tick']:.2f} ms/tick vs one batched call "
        f"{step['batched_ms_per_tick']:.2f} ms/tick = {step['speedup']:.1f}x"
    )
    print(
        "\n| sessions in the call | publish ms, per-session topics | batch topic | ratio |\n|---|---|---|---|"
    )
    for c in publishing_call:
        print(
            f"| {c['sessions']:.0f} | {c['per_session_ms']:.3f} | {c['batch_ms']:.3f} | {c['ratio']:.1f}x |"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
