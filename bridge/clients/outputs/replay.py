"""Replay a frame log at its original timing into outputs (through a router) and/or onto a PUB socket.

Timing follows the receive times in the log, scaled by `speed`, against a monotonic clock that is
never re-based, so the replay does not drift however long it runs. Payloads go out unchanged:
frames keep their original seq and timestamps.

The log is read once before anything is sent (`check_log`, time and memory bounded by its size): a
gap of more than MAX_GAP_S between two records (a damaged clock: a 2^63 ns gap would wait forever) or
a frame with a non-finite value (which no bridge publishes) refuses the whole log with LogError.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import numpy as np
import zmq

from bridge.clients.outputs.recorder import LogError, read_log
from bridge.clients.outputs.router import OutputRouter
from bridge.protocol import ProtocolError, decode_frame
from bridge.protocol.batch_frames import BATCH_TOPIC_PREFIX, decode_batch
from bridge.protocol.versions import FRAME_TOPIC_PREFIX

MAX_GAP_S = 600.0  # longest silence between two records of a log that is replayed


def check_log(path: str | Path) -> int:
    """Read the whole log; returns its record count, or raises LogError (see the module doc)."""
    previous: int | None = None
    count = 0
    for count, record in enumerate(read_log(path), 1):
        if previous is not None and record.t_recv_ns - previous > MAX_GAP_S * 1e9:
            gap = (record.t_recv_ns - previous) / 1e9
            raise LogError(
                f"{path}: record {count} comes {gap:.3g} s after the one before (at most {MAX_GAP_S:g})"
            )
        previous = record.t_recv_ns
        if _non_finite(record.topic, record.payload):
            raise LogError(f"{path}: record {count} ({record.topic.decode()!r:.40}) holds a non-finite value")
    return count


def _non_finite(topic: bytes, payload: bytes) -> bool:
    """Whether a frame or batch message decodes and holds NaN or infinity (one that does not decode
    goes out unchanged, as a newer bridge's may)."""
    try:
        if topic.startswith(FRAME_TOPIC_PREFIX):
            message: object = decode_frame(payload)
        elif topic.startswith(BATCH_TOPIC_PREFIX):
            message = decode_batch(payload)
        else:
            return False
    except ProtocolError:
        return False
    arrays = [getattr(message, f.name) for f in dataclasses.fields(message)]  # type: ignore[arg-type]
    return not all(
        np.isfinite(a).all() for a in arrays if isinstance(a, np.ndarray) and a.dtype.kind == "f"
    ) or not np.isfinite(getattr(message, "engine_us", 0.0))


def replay(
    path: str | Path,
    *,
    router: OutputRouter | None = None,
    pub: zmq.Socket[bytes] | None = None,
    speed: float = 1.0,
    stop: threading.Event | None = None,
) -> int:
    """Send every record of the log; returns how many were sent. speed 2 is twice as fast; 0: no waiting.
    LogError (nothing sent) for a log `check_log` refuses."""
    if speed < 0:
        raise ValueError("speed must be >= 0")
    check_log(path)
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
