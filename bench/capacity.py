"""Motion capacity and admission (issue 40): how many realtime 48 kHz streams one bridge carries, and
what happens past it.

A real `serve` process; a bystander (tests/bystander.py, a 60 Hz motion session) streams throughout;
a load process opens motion sessions `--step` at a time and streams each one 1/60 s of 48 kHz audio
per tick (one `inputs` message per tick for all of them), until an `open` is refused `AT_CAPACITY`
or `--max-sessions` are open. After each step it waits `--settle` seconds and records the scheduler's
load (`avatar_bridge_scheduler_load` from /metrics), the frames the load's sessions got, and the
bystander's p99 over the step.

    python bench/capacity.py [--step 16] [--settle 3] [--max-sessions 256] [--max-load 0.85]
                             [--out bench/results/capacity-cpu.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
import urllib.request
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridge.clients.harness.client import BridgeClient, BridgeError
from bridge.clients.harness.process import BridgeProcess
from tests.bystander import Bystander

RATE = 48_000
CHUNK = (np.random.default_rng(40).standard_normal(RATE // 60) * 3000).astype("<i2").tobytes()


def scheduler_load(metrics_port: int, model: str = "dance_lstm") -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
    prefix = f'avatar_bridge_scheduler_load{{model="{model}"}} '
    return float(next(line for line in text.splitlines() if line.startswith(prefix)).split()[-1])


def load_process(port: int, pipe: Connection, step: int, limit: int) -> None:
    """Open `step` sessions when told, stream all of them at 60 Hz; report opens and frames."""
    client = BridgeClient("127.0.0.1", port, timeout_s=10.0)
    client.hello("capacity")
    client.subscribe(b"batch/motion")
    sessions: list[str] = []
    frames = 0
    seq, next_t = 0, time.perf_counter()
    while True:
        if pipe.poll():
            command = pipe.recv()
            if command == "stop":
                break
            if command == "frames":  # those the load's sessions got since the last ask
                pipe.send(frames)
                frames = 0
                continue
            refused = None
            for _ in range(step):
                if len(sessions) >= limit:
                    break
                try:
                    sessions.append(client.open("motion")["session"])
                except BridgeError as exc:
                    refused = exc.reply.get("name")
                    break
            pipe.send({"sessions": len(sessions), "refused": refused})
        if sessions:
            items = [
                {"session": s, "seq": seq, "t_capture_ns": time.time_ns(), "kind": "audio", "rate": RATE}
                | {"format": "s16le", "data": CHUNK}
                for s in sessions
            ]
            client.send_inputs(items)
        seq, next_t = seq + 1, next_t + 1 / 60
        while (left := next_t - time.perf_counter()) > 0:
            frames += len(client.recv_frames(max(1, int(left * 1000))))
        if time.perf_counter() - next_t > 0.25:
            next_t = time.perf_counter()  # far behind: do not burst
        client.poll_replies()
        client.errors.clear()
    pipe.send(len(sessions))
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--step", type=int, default=16)
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--max-sessions", type=int, default=256)
    parser.add_argument("--max-load", type=float, default=0.85)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    serve = [
        "--no-face-tracking",
        "--metrics-port",
        "0",
        "--idle-timeout",
        "30",
        "--max-load",
        str(args.max_load),
    ]
    serve += [
        "--max-sessions-per-client",
        str(args.max_sessions),
        "--max-sessions",
        str(args.max_sessions + 1),
    ]
    steps: list[dict[str, Any]] = []
    with BridgeProcess(*serve) as bridge:
        bystander = Bystander(bridge.request_port)
        bystander.start()
        ours, theirs = multiprocessing.Pipe()
        loader = multiprocessing.Process(
            target=load_process, args=(bridge.request_port, theirs, args.step, args.max_sessions)
        )
        loader.start()
        while True:
            seen = len(bystander.report().latencies_ms)
            ours.send("open")
            opened = ours.recv()
            ours.send("frames")
            ours.recv()  # from here: the step's frames
            time.sleep(args.settle)
            ours.send("frames")
            frames = ours.recv()
            report = bystander.report()
            window = report.latencies_ms[seen:]
            step = {
                "sessions": opened["sessions"],
                "refused": opened["refused"],
                "scheduler_load": round(scheduler_load(bridge.ports["metrics_port"]), 3),
                "bystander_p99_ms": round(float(np.percentile(window, 99)), 1) if window else None,
                "load_frames_per_s": round(frames / args.settle),
                "load_frames_expected_per_s": 60 * opened["sessions"],
                "bystander_errors": len(report.errors),
            }
            steps.append(step)
            print(json.dumps(step), flush=True)
            if opened["refused"] or opened["sessions"] >= args.max_sessions:
                break
        ours.send("stop")
        ours.recv()
        loader.join()
        final = bystander.stop()
    result = {
        "cpu_count": os.cpu_count(),
        "audio": "48 kHz s16le, 1/60 s per input, one inputs message per tick",
        "max_load": args.max_load,
        "steps": steps,
        "bystander": {
            "sent": final.sent,
            "lost": final.lost,
            "errors": len(final.errors),
            "clean": final.clean,
        },
    }
    print(json.dumps(result["bystander"]))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
