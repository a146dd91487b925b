"""Replay a frame log at its original timing into outputs (through a router) and/or onto a PUB socket.

Timing follows the receive times in the log, scaled by `speed`, against a monotonic clock that is
never re-based, so the replay does not drift however long it runs. Payloads go out unchanged:
frames keep their original seq and timestamps.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import zmq

from bridge.outputs.recorder import read_log
from bridge.outputs.router import OutputRouter


def replay(
    path: str | Path,
    *,
    router: OutputRouter | None = None,
    pub: zmq.Socket[bytes] | None = None,
    speed: float = 1.0,
    stop: threading.Event | None = None,
) -> int:
    """Send every record of the log; returns how many were sent. speed 2 is twice as fast; 0: no waiting."""
    if speed < 0:
        raise ValueError("speed must be >= 0")
    stop = stop or threading.Event()
    start = time.monotonic()
    first_ns: int | None = None
    sent = 0
    for record in read_log(path):
        if first_ns is None:
            first_ns = record.t_recv_ns
        if speed > 0:
            delay = start + (record.t_recv_ns - first_ns) / 1e9 / speed - time.monotonic()
            if delay > 0 and stop.wait(delay):
                break
        if stop.is_set():
            break
        if pub is not None:
            pub.send_multipart([record.topic, record.payload])
        if router is not None:
            router.feed(record.topic, record.payload)
        sent += 1
    return sent
