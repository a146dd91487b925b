"""Live-source benchmark on the CPU default: what a `--video` source adds over a client sending the same
frames.

One `serve` process with `--video CLIP` (a clip made from a real face photo) and a VMC output to a UDP
socket here. In the same run, a client sends the same clip's frames at the same rate to a session of
its own. For both sessions: capture -> frame latency (the input's `t_capture_ns`, stamped when the frame
is read and sent, to the frame's arrival on a SUB socket here) p50/p99, and the VMC packet rate. The
difference of the two medians is what a live source costs. Prints a table and writes JSON.

    python bench/sources.py [--seconds 10] [--out bench/results/sources-cpu.json]
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import threading
import time
from pathlib import Path

import cv2
import numpy as np

from bridge.clients.harness.client import BridgeClient
from bridge.clients.harness.process import BridgeProcess
from bridge.clients.harness.run import percentile, write_bench_json
from bridge.media.face_video import FaceVideo

ROOT = Path(__file__).resolve().parents[1]
FPS = 30.0


def write_clip(path: Path, seconds: float) -> list[np.ndarray]:
    video = FaceVideo(width=640, height=480, fps=FPS)
    frames = [video.frame(i) for i in range(int(seconds * FPS))]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), FPS, (640, 480))
    for frame in frames:
        writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    writer.release()
    return frames


def count_packets(sock: socket.socket, stop: threading.Event, counter: list[int]) -> None:
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            sock.recv(65536)
            counter[0] += 1
        except TimeoutError:
            continue


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/sources-cpu.json")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="avatar-bridge-bench-"))
    clip = workdir / "face.avi"
    frames = write_clip(clip, args.seconds)
    vmc = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    vmc.bind(("127.0.0.1", 0))
    stop, packets = threading.Event(), [0]
    threading.Thread(target=count_packets, args=(vmc, stop, packets), daemon=True).start()
    serve = BridgeProcess("--video", str(clip), "--loop", "--osc", f"vmc://127.0.0.1:{vmc.getsockname()[1]}")
    latencies: dict[str, list[float]] = {"source": [], "client": []}
    with serve:
        client = BridgeClient("127.0.0.1", serve.request_port, timeout_s=10)
        client.hello()
        client.subscribe(b"frame/")
        own = client.open("face")["session"]
        time.sleep(0.5)
        start = time.monotonic()
        for i, frame in enumerate(frames):
            if (wait := start + i / FPS - time.monotonic()) > 0:
                time.sleep(wait)
            client.send_image(own, i, frame)
            for received in client.recv_frames(0):
                header = received.frame.header
                kind = "client" if header.session == own else "source"
                latencies[kind].append((received.recv_ns - header.t_capture_ns) / 1e6)
        client.close()
    stop.set()
    rows: list[dict[str, float | int | str]] = []
    p50: dict[str, float] = {}
    for kind, values in latencies.items():
        ms = np.asarray(values[int(FPS) :])  # the first second warms up
        p50[kind] = percentile(ms, 50)
        rows.append(
            {
                "input": f"{kind} ({'--video' if kind == 'source' else 'client sends the same frames'})",
                "frames": len(ms),
                "capture_to_frame_ms_p50": p50[kind],
                "capture_to_frame_ms_p99": percentile(ms, 99),
            }
        )
    added = p50["source"] - p50["client"]
    print(f"{'input':<44} {'frames':>7} {'p50 ms':>8} {'p99 ms':>8}")
    for row in rows:
        print(
            f"{row['input']!s:<44} {row['frames']!s:>7} {float(row['capture_to_frame_ms_p50']):>8.2f} "
            f"{float(row['capture_to_frame_ms_p99']):>8.2f}"
        )
    print(f"a live source adds {added:+.2f} ms (p50) over a client; VMC packets received: {packets[0]}")
    result = {
        "seconds": args.seconds,
        "fps": FPS,
        "rows": rows,
        "source_added_ms_p50": added,
        "vmc_packets": packets[0],
    }
    write_bench_json(args.out, result)


if __name__ == "__main__":
    main()
