"""One load-generator process of bench/gpu.py: many sessions of one client against a running `serve`.

    python bench/load_generator.py PORT PIPELINE SESSIONS WARMUP_S SECONDS

Opens SESSIONS sessions (pipelined opens), subscribes to the batched topic `batch/motion` for motion
(one message per engine call, docs/protocol.md 5.3: what a crowd client reads; per-session frames are
then not even encoded) and to each session's frame topic for the rest, prints `ready`,
then reads the start time (epoch seconds) from stdin. From then on, each tick at 60 Hz it sends one
input per session, as one multiplexed `inputs` message when the bridge serves it (`max_input_items`
in its hello reply), else one `input` per session, and waits for the tick's frames (closed loop: a
late tick delays the next). After WARMUP_S unmeasured seconds it measures for SECONDS, then drains,
closes its sessions (their `frames_published`) and prints one JSON line: tick latencies (first input
of a tick sent -> its last frame received here), frames received, published and lost, error replies.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from typing import Any

import msgspec
import numpy as np
import zmq

from bridge.media.face_video import FaceVideo
from bridge.protocol.batch_frames import batch_topic, decode_batch
from bridge.protocol.codec import pack, unpack_map
from bridge.protocol.frames import frame_topic

FPS = 60.0
TICK_TIMEOUT_S = 1.0  # a tick whose frames have not all come by then counts as done (what came)
DRAIN_S = 1.0


class _Header(msgspec.Struct):
    """The frame key the generator reads; the rest is skipped, not decoded."""

    input_seq: int


_decode_header = msgspec.msgpack.Decoder(_Header).decode


def _inputs(pipeline: str, sessions: int) -> list[dict[str, Any]]:
    """Per session, what one tick sends besides session, seq and time (fixed payloads)."""
    if pipeline == "face":
        video = FaceVideo(320, 240, FPS)
        frames = [video.frame(i).tobytes() for i in range(16)]
        return [
            {"kind": "image", "width": 320, "height": 240, "data": frames[i % len(frames)]}
            for i in range(sessions)
        ]
    rows = np.random.default_rng(1).standard_normal((sessions, 35)).astype("<f4")
    return [{"kind": "features", "rows": 1, "cols": 35, "data": rows[i].tobytes()} for i in range(sessions)]


def main(port: int, pipeline: str, sessions: int, warmup_s: float, seconds: float) -> dict[str, Any]:
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
    opened = requests([{"op": "open", "pipeline": pipeline} for _ in range(sessions)])
    ids = [str(r["session"]) for r in opened if r.get("ok")]
    if len(ids) < sessions:
        raise SystemExit(f"opened {len(ids)} of {sessions} sessions: {dict(errors)}")
    batched = pipeline == "motion"
    own = np.array([sid.encode() for sid in ids])  # this generator's rows of the batches (all clients')
    if batched:
        sub.setsockopt(zmq.SUBSCRIBE, batch_topic(pipeline))
    for sid in [] if batched else ids:
        sub.setsockopt(zmq.SUBSCRIBE, frame_topic(sid))
    payloads = _inputs(pipeline, sessions)
    time.sleep(0.5)  # subscriptions reach the workers through the front end's forwarder
    print("ready", flush=True)
    t_start = float(sys.stdin.readline())
    measure_from, measure_to = t_start + warmup_s, t_start + warmup_s + seconds
    latencies_ms: list[float] = []
    received = received_measured = late = 0
    tick = 0
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    poller.register(dealer, zmq.POLLIN)

    def receive(until: float, tick: int, need: int) -> tuple[int, float]:
        """Read frames (and error replies) until `need` frames of `tick` came or `until` passed."""
        nonlocal received, late
        have, t_last = 0, 0.0
        while have < need:
            wait = until - time.time()
            if wait <= 0:
                break
            for sock, _ in poller.poll(max(1, int(wait * 1e3))):
                if sock is dealer:
                    while dealer.poll(0):
                        r = unpack_map(dealer.recv())
                        if r.get("op") == "error":
                            errors[str(r.get("name"))] += 1
                    continue
                while sub.poll(0):
                    _, payload = sub.recv_multipart()
                    if batched:
                        batch = decode_batch(payload)
                        mine = np.isin(batch.session, own)
                        got = int(mine.sum())
                        now_tick = int((batch.input_seq[mine] == tick).sum())
                    else:
                        got, now_tick = 1, int(_decode_header(payload).input_seq == tick)
                    received += got
                    late += got - now_tick
                    if now_tick:
                        have += now_tick
                        t_last = time.time()
        return have, t_last

    while True:
        due = t_start + tick / FPS
        now = time.time()
        if max(due, now) >= measure_to:
            break
        if due > now:
            time.sleep(due - now)
        t_send = time.time()
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
        have, t_last = receive(t_send + TICK_TIMEOUT_S, tick, sessions)
        if t_send >= measure_from:
            received_measured += have
            latencies_ms.append(((t_last if have == sessions else time.time()) - t_send) * 1e3)
        tick += 1
    receive(time.time() + DRAIN_S, -2, 1 << 62)  # the rest in flight
    closes = requests([{"op": "close", "session": sid} for sid in ids])
    published = sum(int(r.get("frames_published", 0)) for r in closes)
    receive(time.time() + 0.2, -2, 1 << 62)
    return {
        "sessions": sessions,
        "multiplexed": multiplexed,
        "batch_topic": batched,
        "ticks_measured": len(latencies_ms),
        "latencies_ms": [round(x, 3) for x in latencies_ms],
        "seconds": seconds,
        "frames_received_measured": received_measured,
        "frames_received": received,
        "frames_published": published,
        "frames_late": late,
        "errors": dict(errors),
    }


if __name__ == "__main__":
    port, pipeline, sessions, warmup_s, seconds = sys.argv[1:6]
    result = main(int(port), pipeline, int(sessions), float(warmup_s), float(seconds))
    print(json.dumps(result), flush=True)
