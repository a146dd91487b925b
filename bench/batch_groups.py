"""Batch groups (docs/protocol.md 5.3) on a real frames socket: what one call's publishing costs the
bridge, and what reading it costs each subscriber, with and without groups.

    python bench/batch_groups.py [--repeats 100] [--out bench/results/batch-groups-cpu.json]

The shape of bench/gpu.py's 2048-session run: 12 workers, so ~171 rows per worker call, read by 8
load generators. Without groups each generator subscribes to `batch/motion`, so the call's one
message goes to all 8 and each decodes all rows to pick its own; with groups (a generator's sessions
in its own group) the call makes 8 messages, each to one generator, holding only its rows. Also: a
bridge where no session has a group (the path without groups), and 2048 rows in one call. Publish
times are medians of `publish_call` (bridge.serving.publisher) with the subscribers reading between
calls; read times are one subscriber's decode (`decode_batch`) and pick of its own rows per call.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path
from typing import Any, cast

import numpy as np
import zmq

from bridge.clients.harness.run import write_bench_json
from bridge.protocol.batch_frames import ColumnFrames, batch_topic, decode_batch, motion_columns
from bridge.serving.publisher import GatedOutlet, publish_call
from bridge.serving.sessions import Session
from bridge.transport.zmq_sockets import BridgeSockets, TransportConfig

ROOT = Path(__file__).resolve().parents[1]
GENERATORS = 8


def scenario(rows: int, grouped: bool, repeats: int) -> dict[str, Any]:
    sockets = BridgeSockets(TransportConfig(request_port=0, frames_port=0, frames_hwm=0))
    groups = [f"gen{g}" for g in range(GENERATORS)]
    prefixes = [batch_topic("motion", g) for g in groups] if grouped else [batch_topic("motion")] * GENERATORS
    subs = []
    for prefix in prefixes:
        sub = sockets.context.socket(zmq.SUB)
        sub.setsockopt(zmq.RCVHWM, 0)
        sub.connect(sockets.frames_endpoint)
        sub.setsockopt(zmq.SUBSCRIBE, prefix)
        subs.append(sub)
    sessions = [Session(f"{i:016x}", cast(Any, None), None, ()) for i in range(rows)]
    outlet = GatedOutlet(sockets, threading.Lock(), {s.topic for s in sessions})
    if grouped:
        outlet.groups.update({s.topic: groups[i % GENERATORS].encode() for i, s in enumerate(sessions)})
    while not all(sockets.matching(prefixes)):
        time.sleep(0.01)
    rng = np.random.default_rng(0)
    columns = motion_columns(
        [s.id for s in sessions],
        np.zeros(rows, np.uint64),
        np.arange(rows, dtype=np.uint64),
        np.zeros(rows, np.int64),
        joints=rng.standard_normal((rows, 24, 4)).astype(np.float32),
        root=np.zeros((rows, 3), np.float32),
        engine_us=0.0,
        batch=rows,
    )
    call = [(s, ColumnFrames(columns, i, i + 1)) for i, s in enumerate(sessions)]
    own = np.array([s.id.encode() for s in sessions[0::GENERATORS]])  # generator 0's sessions
    publish_ms, read_us, messages, received_bytes, own_rows = [], [], 0, 0, 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        publish_call(outlet, "motion", batch_topic("motion"), call)
        publish_ms.append((time.perf_counter() - t0) * 1e3)
        for k, sub in enumerate(subs):  # every subscriber reads what came; generator 0's read is timed
            spent = 0.0
            while sub.poll(1000 if k == 0 and not spent else 0):
                _, payload = sub.recv_multipart()
                t1 = time.perf_counter()
                batch = decode_batch(payload)
                # As bench/load_generator.py reads: a group's message holds only its rows.
                mine = batch.input_seq if grouped else batch.input_seq[np.isin(batch.session, own)]
                spent += time.perf_counter() - t1
                if k == 0:
                    messages += 1
                    received_bytes += len(payload)
                    own_rows += mine.size
            if k == 0:
                read_us.append(spent * 1e6)
    for sub in subs:
        sub.close(0)
    sockets.close()
    assert own_rows == repeats * len(own), "generator 0 missed some of its rows"
    return {
        "rows": rows,
        "groups": GENERATORS if grouped else 0,
        "publish_ms": round(statistics.median(publish_ms), 4),
        "subscriber_messages_per_call": round(messages / repeats, 2),
        "subscriber_bytes_per_call": round(received_bytes / repeats),
        "subscriber_read_us": round(statistics.median(read_us), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench/batch_groups.py", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "batch-groups-cpu.json")
    args = parser.parse_args()
    results = [scenario(rows, grouped, args.repeats) for rows in (171, 2048) for grouped in (False, True)]
    print(
        f"{'rows':>5} {'groups':>6} {'publish ms':>10} {'msgs/sub':>8} {'bytes/sub':>10} {'read us/sub':>11}"
    )
    for r in results:
        print(
            f"{r['rows']:>5} {r['groups']:>6} {r['publish_ms']:>10.3f} {r['subscriber_messages_per_call']:>8}"
            f" {r['subscriber_bytes_per_call']:>10} {r['subscriber_read_us']:>11.1f}"
        )
    write_bench_json(args.out, {"generators": GENERATORS, "repeats": args.repeats, "scenarios": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
