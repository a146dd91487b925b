"""Issue 40's fair-share attacks at full size beside a 60 Hz bystander, against a `serve` process run
from a source tree (`--root`: this one by default, or e.g. an older commit's `git archive`, for a
before/after). Prints one JSON line: the bystander's frames sent and lost, errors, p50/p99.

- heavy: 64 motion sessions kept topped up with 1 s chunks at 192 kHz (one `inputs` message of 64
  items every 0.5 s) for `--seconds`;
- calibrate: three connections calibrating a speech session in a loop with 8 s clips at 192 kHz;
- churn: `inputs` messages of 256 one-sample items, each at a new sample rate.

    python bench/fair_share.py heavy [--root DIR] [--seconds 6]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import zmq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bridge.clients.harness.client import BridgeClient  # noqa: E402
from bridge.protocol import pack, unpack_map  # noqa: E402
from tests.bystander import Bystander  # noqa: E402

RATE = 192_000
PCM = (np.random.default_rng(40).standard_normal(RATE * 8) * 3000).astype("<i2")


def serve(root: Path, ports: Path) -> subprocess.Popen[bytes]:
    args = ["--request-port", "0", "--frames-port", "0", "--ports-file", str(ports), "--no-face-tracking"]
    return subprocess.Popen(
        [sys.executable, "-m", "bridge", "serve", *args, "--idle-timeout", "10"],
        cwd=root,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(root)},
    )


def dealer(port: int) -> zmq.Socket[bytes]:
    sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"tcp://127.0.0.1:{port}")
    return sock


def opened(sock: zmq.Socket[bytes], pipeline: str) -> str:
    sock.send(pack({"op": "open", "id": 1, "pipeline": pipeline}))
    sock.poll(20_000)
    return str(unpack_map(sock.recv())["session"])


def heavy(port: int, stop: threading.Event) -> int:
    client = BridgeClient("127.0.0.1", port, timeout_s=10.0)
    client.hello("heavy")
    sessions = [client.open("motion")["session"] for _ in range(64)]
    chunk = PCM[:RATE].tobytes()
    seq = 0
    while not stop.is_set():
        items = [
            {"session": s, "seq": seq, "t_capture_ns": time.time_ns(), "kind": "audio", "rate": RATE}
            | {"format": "s16le", "data": chunk}
            for s in sessions
        ]
        client.send_inputs(items)
        seq += 1
        stop.wait(0.5)
        client.poll_replies()
    client.close()
    return seq


def calibrate(port: int, stop: threading.Event) -> int:
    sock = dealer(port)
    sid = opened(sock, "speech")
    message = pack(
        {"op": "calibrate", "id": 2, "session": sid, "rate": RATE, "format": "s16le", "data": PCM.tobytes()}
    )
    done = 0
    while not stop.is_set():
        sock.send(message)
        if sock.poll(20_000):
            sock.recv()
            done += 1
    sock.close(0)
    return done


def churn(port: int, stop: threading.Event) -> int:
    sock = dealer(port)
    sid = opened(sock, "motion")
    sent = 0
    while not stop.is_set():
        items = [
            {
                "session": sid,
                "seq": sent + i,
                "t_capture_ns": 0,
                "kind": "audio",
                "rate": 8000 + (sent + i) % 150_000,
            }
            | {"format": "s16le", "data": b"\0\0"}
            for i in range(256)
        ]
        sock.send(pack({"op": "inputs", "id": 3, "items": items}))
        sent += 256
        while sock.poll(1):
            sock.recv()
        time.sleep(0.002)
    sock.close(0)
    return sent // 256


ATTACKS = {"heavy": (heavy, 1), "calibrate": (calibrate, 3), "churn": (churn, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("attack", choices=sorted(ATTACKS))
    parser.add_argument("--root", type=Path, default=ROOT, help="source tree whose bridge is attacked")
    parser.add_argument("--seconds", type=float, default=6.0)
    args = parser.parse_args()
    ports = Path(tempfile.mkdtemp()) / "ports.json"
    proc = serve(args.root, ports)
    try:
        while not ports.exists():
            time.sleep(0.05)
        port = int(json.loads(ports.read_text())["request_port"])
        bystander = Bystander(port)
        bystander.start()
        time.sleep(1.0)
        attack, connections = ATTACKS[args.attack]
        stop = threading.Event()
        counts: list[int] = []
        threads = [
            threading.Thread(target=lambda: counts.append(attack(port, stop))) for _ in range(connections)
        ]
        for t in threads:
            t.start()
        time.sleep(args.seconds)
        stop.set()
        for t in threads:
            t.join()
        r = bystander.stop()
    finally:
        proc.terminate()
        proc.wait()
    print(
        json.dumps(
            {
                "attack": args.attack,
                "root": str(args.root),
                "bystander": {"sent": r.sent, "lost": r.lost, "errors": len(r.errors)},
                "p50_ms": round(r.latency_p50_ms, 1),
                "p99_ms": round(r.latency_p99_ms, 1),
                "attacker_messages": counts,
            }
        )
    )


if __name__ == "__main__":
    main()
