"""One load-generator process of bench/gpu.py: many sessions of one client against a running `serve`.

    python bench/load_generator.py PORT PIPELINE SESSIONS WARMUP_S SECONDS [GROUP] [--cropped]

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
received, published and lost, error replies. Face sessions get 320x240 camera frames, or with
`--cropped` are opened with `cropped: true` and get 224x224 crops (each frame's centre square,
resized), so the bridge detects nothing.
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
from bridge.pipelines.face import CROP_SIZE
from bridge.protocol.batch_frames import BATCH_GROUP_OPTION, batch_topic, decode_batch
from bridge.protocol.codec import pack, unpack_map
from bridge.protocol.frames import frame_topic
from bridge.serving.heap import freeze_startup_heap

FPS = 60.0
DRAIN_S = 1.0
FRAME_BIN_MS = 0.1  # resolution of the per-frame latency histogram
FRAME_BINS = 20_000  # up to 2 s; slower frames land in the last bin


class _Header(msgspec.Struct):
    """The frame key the generator reads; the rest is skipped, not decoded."""

    input_seq: int


_decode_header = msgspec.msgpack.Decoder(_Header).decode


def _inputs(pipeline: str, sessions: int, cropped: bool) -> list[dict[str, Any]]:
    """Per session, what one tick sends besides session, seq and time (fixed payloads)."""
    if pipeline == "face":
        video = FaceVideo(320, 240, FPS)
        frames = [video.frame(i) for i in range(16)]
        if cropped:
            frames = [
                cv2.resize(f[:, 40:280], (CROP_SIZE, CROP_SIZE), interpolation=cv2.INTER_AREA) for f in frames
            ]
        h, w = frames[0].shape[:2]
        return [
            {"kind": "image", "width": w, "height": h, "data": frames[i % len(frames)].tobytes()}
            for i in range(sessions)
        ]
    rows = np.random.default_rng(1).standard_normal((sessions, 35)).astype("<f4")
    return [{"kind": "features", "rows": 1, "cols": 35, "data": rows[i].tobytes()} for i in range(sessions)]


def main(
    port: int,
    pipeline: str,
    sessions: int,
    warmup_s: float,
    seconds: float,
    group: str = "",
    cropped: bool = False,
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
    payloads = _inputs(pipeline, sessions, cropped)
    time.sleep(0.5)  # subscriptions reach the workers through the front end's forwarder
    freeze_startup_heap()  # as serve does: no full collection walks the start-up heap mid-run
    print("ready", flush=True)
    t_start = float(sys.stdin.readline())
    measure_from = t_start + warmup_s
    received = received_measured = late = 0
    n_ticks = int(np.ceil((warmup_s + seconds) * FPS))
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
        receive(t_start + tick / FPS)
        sent_at[tick] = time.time()
        missing[tick] = sessions
        t_ns = time.time_ns()
        if multiplexed:
            items = [
                {"session": sid, "seq": tick, "t_capture_ns": t_ns, **payloads[i]}
                for i, sid in enumerate(ids)
            ]
            dealer.send(msgspec.msgpack.encode({"op": "inputs", "v": 1, "items": items}))
        else:
            for i, sid in enumerate(ids):
                m = {"op": "input", "session": sid, "seq": tick, "t_capture_ns": t_ns, **payloads[i]}
                dealer.send(msgspec.msgpack.encode(m))
    receive(time.time() + DRAIN_S)  # the rest in flight
    closes = requests([{"op": "close", "session": sid} for sid in ids])
    published = sum(int(r.get("frames_published", 0)) for r in closes)
    receive(time.time() + 0.2)
    measured = sent_at >= measure_from
    complete = measured & ~np.isnan(done_at)
    latencies_ms = (done_at[complete] - sent_at[complete]) * 1e3
    lag_ms = (sent_at[measured] - (t_start + np.flatnonzero(measured) / FPS)) * 1e3
    return {
        "sessions": sessions,
        "multiplexed": multiplexed,
        "batch_topic": batched,
        "batch_group": group,
        "ticks_measured": int(measured.sum()),
        "ticks_incomplete": int((measured & np.isnan(done_at)).sum()),
        # How late this generator sent its ticks (its own load: a saturated generator shows here).
        "send_lag_p99_ms": round(float(np.percentile(lag_ms, 99)) if lag_ms.size else 0.0, 3),
        "latencies_ms": [round(float(x), 3) for x in latencies_ms],
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
    a = parser.parse_args()
    group = "" if a.group == "-" else a.group
    result = main(a.port, a.pipeline, a.sessions, a.warmup_s, a.seconds, group, a.cropped)
    print(json.dumps(result), flush=True)
