"""I/O in batches and the tick scheduler (issue 16): engine calls per tick for N motion sessions at 60 Hz.

A real `serve` process per scheduler clock (`adaptive`, `tick`), and the harness sending each tick's
inputs either as N `input` messages or as one multiplexed `inputs` message (docs/protocol.md 4.7).
Calls per tick are exact: a call of b rows puts `batch` = b in each of its b frames, so the sum of
1/batch over the frames received is the number of calls.

    python bench/io_batching.py [--sessions 16] [--seconds 5] [--out bench/results/io-batching-cpu.json]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from core import music_feature_rows  # noqa: E402

from bridge.clients.harness.client import BridgeClient  # noqa: E402
from bridge.clients.harness.process import BridgeProcess  # noqa: E402
from bridge.clients.harness.run import run_harness, write_bench_json  # noqa: E402


def scenario(port: int, sessions: int, seconds: float, multiplex: bool) -> dict[str, object]:
    client = BridgeClient("127.0.0.1", port, timeout_s=10)
    try:
        report = run_harness(
            client,
            "motion",
            seconds=seconds,
            sessions=sessions,
            feature_rows=music_feature_rows(seconds + 1),
            multiplex=multiplex,
        )
    finally:
        client.close()
    ticks = report.inputs_sent / sessions
    calls = sum(1.0 / b for t in report.tracks for b in t.batches if b)
    return {
        "sent_as": "inputs" if multiplex else "input",
        "sessions": sessions,
        "frames_received": report.frames_received,
        "frames_lost": report.frames_lost,
        "errors": len(report.errors),
        "calls_per_tick": calls / ticks if ticks else float("nan"),
        "mean_batch": report.mean_batch,
        "latency_ms_p50": report.latency_ms_p50,
        "latency_ms_p99": report.latency_ms_p99,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "io-batching-cpu.json")
    args = parser.parse_args()
    load_start = os.getloadavg()  # the machine is shared: how busy it was is part of the figure
    rows = []
    for clock in ("adaptive", "tick"):
        with BridgeProcess("--idle-timeout", "60", "--scheduler", clock) as bridge:
            for multiplex in (False, True):
                row = scenario(bridge.request_port, args.sessions, args.seconds, multiplex)
                rows.append({"scheduler": clock, **row})
    write_bench_json(
        args.out,
        {
            "backend": "onnxruntime (CPU)",
            "seconds_per_scenario": args.seconds,
            "load_average_1_5_15_min": {"start": load_start, "end": os.getloadavg()},
            "scenarios": rows,
        },
    )
    print(
        "| scheduler | inputs sent as | sessions | engine calls per tick | mean batch "
        "| e2e p50 ms | e2e p99 ms | lost |\n" + "|---" * 8 + "|"
    )
    for r in rows:
        sent = "one `inputs` per tick" if r["sent_as"] == "inputs" else f"{r['sessions']} `input` per tick"
        print(
            f"| {r['scheduler']} | {sent} | {r['sessions']} | {r['calls_per_tick']:.2f} "
            f"| {r['mean_batch']:.1f} | {r['latency_ms_p50']:.2f} | {r['latency_ms_p99']:.2f} "
            f"| {r['frames_lost']} |"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
