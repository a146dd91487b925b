"""One load-generator process of bench/gpu.py: many sessions of one client against a running `serve`.

    python bench/load_generator.py PORT PIPELINE SESSIONS WARMUP_S SECONDS [GROUP] [--cropped]
                                   [--fps 60] [--frame-size 320x240] [--image-format rgb8|jpeg]

Opens SESSIONS sessions (pipelined opens); for motion, in the batch group GROUP (default
`gen<pid>`, one per generator; `-` for none) and subscribed to that group's batch topic
`batch/motion/<GROUP>/` (one message per engine call and group, docs/protocol.md 5.3: what a crowd
client reads; per-session frames are then not even encoded, and no generator receives or decodes
another's rows; with `-`, the shared `batch/motion`, every client's rows), for the rest to each
session's frame topic; prints `ready`,
then reads the start time (epoch seconds) from stdin. From then on, each tick at 60 Hz it sends one
input per session, as one multiplexed `inputs` message when the bridge serves it (`max_input_items`
in its hello reply), else one `input` per session, reading frames in between (open loop: the next
tick goes on time whatever came back). After WARMUP_S unmeasured seconds it measures for SECONDS,
then drains, closes its sessions (their `frames_published`) and prints one JSON line: tick latencies
(a tick's inputs sent -> its last frame received here; ticks missing a frame are counted apart), a
histogram of every frame's own latency (its tick sent -> the message holding it received), frames
received, published and lost, error replies. Face sessions get camera frames of the demo's clip
(bridge.media.face_video, `--frame-size`, default 320x240), each session at its own phase of it, as
raw rgb8 or, with `--image-format jpeg`, JPEG bytes encoded once before the run (quality 90); or with
`--cropped` are opened with `cropped: true` and get 224x224 crops (each frame's centre square,
resized), so the bridge detects nothing. `--fps` sets the tick rate (face tracking: 30). The report
also holds this process's CPU seconds over the window and its worst send lag in each second.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from typing import Any

import cv2
import msgspec
import numpy as np
import numpy.typing as npt
import zmq

from bridge.media.face_video import FaceVideo
from bridge.pipelines.face_flame import CROP_SIZE
from bridge.protocol.batch_frames import BATCH_GROUP_OPTION, batch_topic, decode_batch
from bridge.protocol.codec import pack, unpack_map
from bridge.protocol.frames import frame_topic
from bridge.serving.heap import freeze_startup_heap

DRAIN_S = 1.0
CLIP_FRAMES = 60  # distinct camera frames per session (2 s at 30 FPS), looped
JPEG_QUALITY = 90
FRAME_BIN_MS = 0.1  # resolution of the per-frame latency histogram
FRAME_BINS = 20_000  # up to 2 s; slower frames land in the last bin


class _Header(msgspec.Struct):
    """The frame key the generator reads; the rest is skipped, not decoded."""

    input_seq: int


_decode_header = msgspec.msgpack.Decoder(_Header).decode


def _face_clip(size: tuple[int, int], fps: float, cropped: bool, image_format: str) -> list[dict[str, Any]]:
    """The clip's frames as what an `image` input carries (width, height, format, data)."""
    video = FaceVideo(*size, fps)
    frames = [video.frame(i) for i in range(CLIP_FRAMES)]
    if cropped:
        x0 = (size[0] - size[1]) // 2
        frames = [
            cv2.resize(f[:, x0 : x0 + size[1]], (CROP_SIZE, CROP_SIZE), interpolation=cv2.INTER_AREA)
            for f in frames
        ]
    h, w = frames[0].shape[:2]
    if image_format == "jpeg":
        quality = [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY]
        return [
            {
                "kind": "image",
                "format": "jpeg",
                "data": cv2.imencode(".jpg", f[:, :, ::-1], quality)[1].tobytes(),
            }
            for f in frames
        ]
    return [{"kind": "image", "width": w, "height": h, "data": f.tobytes()} for f in frames]


def _features(sessions: int) -> list[dict[str, Any]]:
    """Per session, the fixed music-feature row each tick sends."""
    rows = np.random.default_rng(1).standard_normal((sessions, 35)).astype("<f4")
    return [{"kind": "features", "rows": 1, "cols": 35, "data": rows[i].tobytes()} for i in range(sessions)]


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def main(
    port: int,
    pipeline: str,
    sessions: int,
    warmup_s: float,
    seconds: float,
    group: str = "",
    cropped: bool = False,
    fps: float = 60.0,
    frame_size: tuple[int, int] = (320, 240),
    image_format: str = "rgb8",
) -> dict[str, Any]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.setsockopt(zmq.SNDHWM, 0)
    dealer.connect(f"tcp://127.0.0.1:{port}")
    errors: Counter[str] = Counter()

    def requests(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send all, then collect one reply per message by id (errors elsewhere are counted)."""
        for i, m in enumerate(messages):
            dealer.send(pack({**m, "id": i + 1}))
        replies: dict[int, dict[str, Any]] = {}
        deadline = time.monotonic() + 60
        while len(replies) < len(messages) and dealer.poll(max(1, int((deadline - time.monotonic()) * 1e3))):
            r = unpack_map(dealer.recv())
            if r.get("op") == "error":
                errors[str(r.get("name"))] += 1
            if r.get("id") in range(1, len(messages) + 1):
                replies[int(r["id"])] = r
        return [replies.get(i + 1, {}) for i in range(len(messages))]

    hello = requests([{"op": "hello", "v": 1, "client": "bench load generator"}])[0]
    multiplexed = bool(hello.get("max_input_items"))
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.RCVHWM, 0)
    sub.connect(f"tcp://127.0.0.1:{hello['frames_port']}")
    batched = pipeline == "motion"
    group = group if batched else ""
    options: dict[str, Any] = {BATCH_GROUP_OPTION: group} if group else {}
    if pipeline == "face" and cropped:
        options["cropped"] = True
    opened = requests([{"op": "open", "pipeline": pipeline, "options": options} for _ in range(sessions)])
    ids = [str(r["session"]) for r in opened if r.get("ok")]
    if len(ids) < sessions:
        raise SystemExit(f"opened {len(ids)} of {sessions} sessions: {dict(errors)}")
    own = np.array([sid.encode() for sid in ids])  # without a group: this generator's rows of everyone's
    if batched:
        sub.setsockopt(zmq.SUBSCRIBE, batch_topic(pipeline, group))
    for sid in [] if batched else ids:
        sub.setsockopt(zmq.SUBSCRIBE, frame_topic(sid))
    if pipeline == "face":
        clip = _face_clip(frame_size, fps, cropped, image_format)
        # Each session at its own phase of the clip (a prime stride spreads them over it).
        phase = [(7 * k) % len(clip) for k in range(sessions)]

        def payload(k: int, tick: int) -> dict[str, Any]:
            return clip[(tick + phase[k]) % len(clip)]
    else:
        rows = _features(sessions)

        def payload(k: int, tick: int) -> dict[str, Any]:
            return rows[k]

    time.sleep(0.5)  # subscriptions reach the workers through the front end's forwarder
    freeze_startup_heap()  # as serve does: no full collection walks the start-up heap mid-run
    print("ready", flush=True)
    t_start = float(sys.stdin.readline())
    measure_from = t_start + warmup_s
    received = received_measured = late = 0
    n_ticks = int(np.ceil((warmup_s + seconds) * fps))
    cpu_window = [0.0, 0.0]  # this process's CPU seconds at the window's start and end
    sent_at = np.full(n_ticks, np.nan)  # when each tick's inputs were sent
    missing = np.zeros(n_ticks, np.int64)  # frames of each tick not yet received
    done_at = np.full(n_ticks, np.nan)  # when each tick's last frame came
    # Each measured frame's own latency (its tick sent -> the message holding it received), what one
    # avatar sees; a tick's latency is its slowest frame's, across every worker its sessions are on.
    frame_hist = np.zeros(FRAME_BINS, np.int64)
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    poller.register(dealer, zmq.POLLIN)

    def count(ticks: npt.NDArray[np.int64], now: float) -> None:
        """Frames of these ticks (one entry per frame) came at `now`."""
        nonlocal received, received_measured, late
        received += ticks.size
        known = ticks[(ticks >= 0) & (ticks < n_ticks)]
        late += ticks.size - known.size
        if known.size:
            index, n = np.unique(known, return_counts=True)
            missing[index] -= n
            done_at[index[missing[index] <= 0]] = now
            in_window = sent_at[index] >= measure_from
            received_measured += int(n[in_window].sum())
            bins = ((now - sent_at[index[in_window]]) * 1e3 / FRAME_BIN_MS).astype(np.int64)
            np.add.at(frame_hist, np.clip(bins, 0, FRAME_BINS - 1), n[in_window])

    def receive(until: float) -> None:
        """Read frames (and error replies) until `until`."""
        while (wait := until - time.time()) > 0:
            for sock, _ in poller.poll(max(1, int(wait * 1e3))):
                if sock is dealer:
                    while dealer.poll(0):
                        r = unpack_map(dealer.recv())
                        if r.get("op") == "error":
                            errors[str(r.get("name"))] += 1
                    continue
                while sub.poll(0):
                    _, payload = sub.recv_multipart()
                    now = time.time()
                    if batched:  # a group's messages hold only its rows: no pick needed
                        batch = decode_batch(payload)
                        mine = batch.input_seq if group else batch.input_seq[np.isin(batch.session, own)]
                        count(mine.astype(np.int64), now)
                    else:
                        count(np.array([_decode_header(payload).input_seq], np.int64), now)

    # Open loop: tick n's inputs go at t_start + n / 60 whatever came back (as a camera or a song
    # does), so a slow bridge shows as latency and loss, not as a generator that waits for it.
    for tick in range(n_ticks):
        receive(t_start + tick / fps)
        if tick == int(np.ceil(warmup_s * fps)):
            cpu_window[0] = _cpu_seconds()
        sent_at[tick] = time.time()
        missing[tick] = sessions
        t_ns = time.time_ns()
        if multiplexed:
            items = [
                {"session": sid, "seq": tick, "t_capture_ns": t_ns, **payload(i, tick)}
                for i, sid in enumerate(ids)
            ]
            dealer.send(msgspec.msgpack.encode({"op": "inputs", "v": 1, "items": items}))
        else:
            for i, sid in enumerate(ids):
                m = {"op": "input", "session": sid, "seq": tick, "t_capture_ns": t_ns, **payload(i, tick)}
                dealer.send(msgspec.msgpack.encode(m))
    cpu_window[1] = _cpu_seconds()
    receive(time.time() + DRAIN_S)  # the rest in flight
    closes = requests([{"op": "close", "session": sid} for sid in ids])
    published = sum(int(r.get("frames_published", 0)) for r in closes)
    receive(time.time() + 0.2)
    measured = sent_at >= measure_from
    complete = measured & ~np.isnan(done_at)
    latencies_ms = (done_at[complete] - sent_at[complete]) * 1e3
    lag_ms = (sent_at[measured] - (t_start + np.flatnonzero(measured) / fps)) * 1e3
    per_second = round(fps)
    lag_by_second = [float(lag_ms[k : k + per_second].max()) for k in range(0, lag_ms.size, per_second)]
    return {
        "sessions": sessions,
        "multiplexed": multiplexed,
        "batch_topic": batched,
        "batch_group": group,
        "ticks_measured": int(measured.sum()),
        "ticks_incomplete": int((measured & np.isnan(done_at)).sum()),
        # How late this generator sent its ticks (its own load: a saturated generator shows here).
        "send_lag_p99_ms": round(float(np.percentile(lag_ms, 99)) if lag_ms.size else 0.0, 3),
        "send_lag_max_ms_by_second": [round(x, 2) for x in lag_by_second],
        # This process's own CPU over the window (100 = one core): the load's cost, not the bridge's.
        "cpu_percent": round(100 * (cpu_window[1] - cpu_window[0]) / seconds, 1),
        "latencies_ms": [round(float(x), 3) for x in latencies_ms],
        # Each latency's tick, counted from the window's first: which second of the window it is in.
        "latency_ticks": [int(t) for t in np.flatnonzero(complete) - int(np.argmax(measured))],
        "frame_latency_bin_ms": FRAME_BIN_MS,
        "frame_latency_hist": {int(b): int(frame_hist[b]) for b in np.flatnonzero(frame_hist)},
        "seconds": seconds,
        "frames_received_measured": received_measured,
        "frames_received": received,
        "frames_published": published,
        "frames_late": late,
        "errors": dict(errors),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument("pipeline", choices=("motion", "face"))
    parser.add_argument("sessions", type=int)
    parser.add_argument("warmup_s", type=float)
    parser.add_argument("seconds", type=float)
    parser.add_argument(
        "group", nargs="?", default=f"gen{os.getpid()}", help="motion's batch group; - for none"
    )
    parser.add_argument("--cropped", action="store_true", help="face: send aligned 224x224 crops")
    parser.add_argument("--fps", type=float, default=60.0, help="ticks per second")
    parser.add_argument("--frame-size", default="320x240", help="face: camera frame WIDTHxHEIGHT")
    parser.add_argument(
        "--image-format", choices=("rgb8", "jpeg"), default="rgb8", help="face: frame encoding"
    )
    a = parser.parse_args()
    group = "" if a.group == "-" else a.group
    width, height = (int(x) for x in a.frame_size.split("x"))
    result = main(
        a.port,
        a.pipeline,
        a.sessions,
        a.warmup_s,
        a.seconds,
        group,
        a.cropped,
        a.fps,
        (width, height),
        a.image_format,
    )
    print(json.dumps(result), flush=True)
