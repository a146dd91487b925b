"""JPEG webcam frames on the CPU default (issue 45): what a JPEG costs the bridge, and one webcam
session's end-to-end latency from capture to the VMC packet.

1. Codec cost per 640x480 frame: the demo's face clip (bridge.media.face_video, a real face photo that
   moves and turns) encoded at qualities 70, 85 and 95 as a client would (libjpeg-turbo, 4:2:0), then
   decoded as the bridge does (bridge.protocol.jpeg's header walk, bridge.vision.jpeg's libjpeg-turbo
   decode, one thread).
   OpenCV's `imdecode` (its own libjpeg-turbo) in the same loop for reference.
2. End to end: `serve --video CLIP --loop --osc vmc://127.0.0.1:PORT` (the live-source path a webcam
   takes; the camera is a file here, read at 30 FPS), once with `--jpeg-quality Q` and once raw rgb8.
   A UDP listener here takes the VMC packets; a SUB client here takes the session's frames (their
   `t_capture_ns`, stamped by the feeder when it read the frame, before encoding; `engine_us`, the
   tracker's engine calls). Each VMC packet is paired with the newest frame published before it arrived
   (the outputs send the newest frame per session: `shown`): latency = packet arrival - that frame's
   capture. p50/p99 after a warm-up, beside the tracker's engine time and capture -> publish. Four runs,
   JPEG, rgb8, rgb8, JPEG (each also pooled per input). The load average is recorded: this 2-core box is
   shared.

    python bench/jpeg_cpu.py [--seconds 30] [--quality 85] [--out bench/results/jpeg-cpu.json]
"""

from __future__ import annotations

import argparse
import bisect
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bridge.clients.harness.client import BridgeClient
from bridge.clients.harness.process import BridgeProcess
from bridge.clients.harness.run import percentile, write_bench_json
from bridge.media.face_video import FaceVideo
from bridge.protocol.jpeg import read_header
from bridge.vision import jpeg

ROOT = Path(__file__).resolve().parents[1]
FPS = 30.0
WIDTH, HEIGHT = 640, 480
CLIP_FRAMES = 90  # 3 s, looped
WARMUP_S = 5.0


def clip_frames() -> list[np.ndarray]:
    video = FaceVideo(width=WIDTH, height=HEIGHT, fps=FPS)
    return [video.frame(i) for i in range(CLIP_FRAMES)]


def timed_ms(fn: Any, items: list[Any], rounds: int) -> np.ndarray:
    out = []
    for _ in range(rounds):
        for item in items:
            t0 = time.perf_counter()
            fn(item)
            out.append((time.perf_counter() - t0) * 1e3)
    return np.asarray(out)


def codec_rows(frames: list[np.ndarray], rounds: int) -> list[dict[str, Any]]:
    rows = []
    for quality in (70, 85, 95):
        encoded = [jpeg.encode(f, quality) for f in frames]
        enc = timed_ms(lambda f, q=quality: jpeg.encode(f, q), frames, 1)
        dec = timed_ms(lambda b: jpeg.decode(b, read_header(b)), encoded, rounds)
        header = timed_ms(read_header, encoded, rounds)
        arrays = [np.frombuffer(b, np.uint8) for b in encoded]
        ocv = timed_ms(lambda a: cv2.imdecode(a, cv2.IMREAD_COLOR), arrays, rounds)
        rows.append(
            {
                "quality": quality,
                "bytes_mean": int(np.mean([len(b) for b in encoded])),
                "encode_ms_p50": percentile(enc, 50),
                "header_us_p50": percentile(header, 50) * 1e3,
                "decode_ms_p50": percentile(dec, 50),
                "decode_ms_p99": percentile(dec, 99),
                "decode_ms_mean": float(dec.mean()),
                "opencv_imdecode_ms_p50": percentile(ocv, 50),
            }
        )
    return rows


def write_clip(path: Path, frames: list[np.ndarray]) -> None:
    # Lossless (FFV1) so that the frames the feeder reads are exactly the clip's.
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"FFV1"), FPS, (WIDTH, HEIGHT))
    for frame in frames:
        writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    writer.release()


def listen(sock: socket.socket, stop: threading.Event, arrivals: list[int]) -> None:
    """The arrival time of each frame's first VMC datagram (a frame's messages are split into bundles
    below 1500 bytes; the first holds /VMC/Ext/OK)."""
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            datagram = sock.recv(65536)
        except TimeoutError:
            continue
        if b"/VMC/Ext/OK" in datagram:
            arrivals.append(time.time_ns())


def shown(arrivals: list[int], frames: dict[int, tuple[int, float, int]]) -> list[tuple[int, int]]:
    """(arrival, frame seq) per VMC packet: the frame it carries is taken as the newest one published
    before it arrived. The outputs keep only the newest frame per session (clients/outputs/router.py, latest
    wins), so packets are not one per frame; a router running late would send an older frame than this
    pairing assumes, so the figure is a lower bound by at most the router's lag."""
    by_publish = sorted((f[2], seq) for seq, f in frames.items())
    times = [t for t, _ in by_publish]
    out = []
    for arrival in arrivals:
        k = bisect.bisect_right(times, arrival) - 1
        if k >= 0:
            out.append((arrival, by_publish[k][1]))
    return out


Samples = tuple[
    np.ndarray, np.ndarray, np.ndarray
]  # per measured packet: latency, engine, capture -> publish


def summary(lat: np.ndarray, eng: np.ndarray, pub: np.ndarray) -> dict[str, Any]:
    return {
        "frames_measured": int(lat.size),
        "capture_to_vmc_ms_p50": percentile(lat, 50),
        "capture_to_vmc_ms_p99": percentile(lat, 99),
        "capture_to_vmc_ms_max": float(lat.max()) if lat.size else float("nan"),
        "capture_to_publish_ms_p50": percentile(pub, 50),  # the rest is the outputs process and UDP
        "capture_to_publish_ms_p99": percentile(pub, 99),
        "engine_ms_p50": percentile(eng, 50),
        "engine_ms_p99": percentile(eng, 99),
    }


def end_to_end(clip: Path, seconds: float, quality: int | None) -> tuple[dict[str, Any], Samples]:
    vmc = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    vmc.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    vmc.bind(("127.0.0.1", 0))
    stop, arrivals = threading.Event(), list[int]()
    listener = threading.Thread(target=listen, args=(vmc, stop, arrivals), daemon=True)
    listener.start()
    extra = [] if quality is None else ["--jpeg-quality", str(quality)]
    serve = BridgeProcess(
        "--video", str(clip), "--loop", "--osc", f"vmc://127.0.0.1:{vmc.getsockname()[1]}", *extra
    )
    frames: dict[int, tuple[int, float, int]] = {}  # seq -> (t_capture_ns, engine_us, t_publish_ns)
    load = os.getloadavg()[0]
    with serve:
        client = BridgeClient("127.0.0.1", serve.request_port, timeout_s=10)
        client.hello()
        client.subscribe(b"frame/")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for received in client.recv_frames(100):
                h = received.frame.header
                frames[h.seq] = (h.t_capture_ns, h.engine_us, h.t_publish_ns)
        client.close()
    stop.set()
    listener.join()
    vmc.close()
    latency, engine, published = [], [], []
    start = min(f[0] for f in frames.values()) if frames else 0
    for arrival, seq in shown(arrivals, frames):
        t_capture, engine_us, t_publish = frames[seq]
        if (t_capture - start) / 1e9 < WARMUP_S:
            continue
        latency.append((arrival - t_capture) / 1e6)
        engine.append(engine_us / 1e3)
        published.append((t_publish - t_capture) / 1e6)
    lat, eng, pub = np.asarray(latency), np.asarray(engine), np.asarray(published)
    row = {
        "input": "rgb8" if quality is None else f"jpeg q{quality}",
        "vmc_packets": len(arrivals),
        "frames_published_seen": len(frames),
        **summary(lat, eng, pub),
        "load_average_1m_at_start": load,
    }
    return row, (lat, eng, pub)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=30.0, help="each end-to-end run")
    parser.add_argument("--quality", type=int, default=85, help="the JPEG run's quality")
    parser.add_argument("--rounds", type=int, default=5, help="decode passes over the clip")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/jpeg-cpu.json")
    args = parser.parse_args()

    frames = clip_frames()
    codec = codec_rows(frames, args.rounds)
    print("quality     KB  enc ms  hdr us  dec p50  dec p99  cv2 p50")
    for r in codec:
        print(
            f"{r['quality']:>7} {r['bytes_mean'] / 1e3:>6.1f} {r['encode_ms_p50']:>7.2f} "
            f"{r['header_us_p50']:>7.1f} {r['decode_ms_p50']:>8.2f} {r['decode_ms_p99']:>8.2f} "
            f"{r['opencv_imdecode_ms_p50']:>8.2f}"
        )
    clip = Path(tempfile.mkdtemp(prefix="avatar-bridge-jpeg-")) / "face.mkv"
    write_clip(clip, frames)
    # ABBA: each input's two runs straddle the other's, so a drift in the machine's load weighs on both alike.
    runs, samples = [], dict[str, list[Samples]]()
    for quality in (args.quality, None, None, args.quality):
        row, got = end_to_end(clip, args.seconds, quality)
        runs.append(row)
        samples.setdefault(row["input"], []).append(got)
    pooled = {
        name: summary(*(np.concatenate([run[k] for run in got]) for k in range(3)))
        for name, got in samples.items()
    }
    print("input      frames  p50 ms  p99 ms engine p50 engine p99  load")
    for r in runs:
        print(
            f"{r['input']:<10} {r['frames_measured']:>6} {r['capture_to_vmc_ms_p50']:>7.1f} "
            f"{r['capture_to_vmc_ms_p99']:>7.1f} {r['engine_ms_p50']:>10.1f} {r['engine_ms_p99']:>10.1f} "
            f"{r['load_average_1m_at_start']:>5.1f}"
        )
    write_bench_json(
        args.out,
        {
            "frame": f"{WIDTH}x{HEIGHT}",
            "fps": FPS,
            "seconds_per_run": args.seconds,
            "warmup_s": WARMUP_S,
            "target_p99_ms": 33.0,
            "codec": codec,
            "end_to_end": runs,
            "end_to_end_pooled": pooled,
        },
    )


if __name__ == "__main__":
    main()
