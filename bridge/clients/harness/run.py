"""The harness run: open sessions, stream inputs in real time, receive and validate every frame, report."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bridge.clients.harness.client import BridgeClient, ReceivedFrame
from bridge.clients.harness.sources import audio_chunks, face_frames
from bridge.protocol.batch_frames import BATCH_GROUP_OPTION
from bridge.protocol.batch_frames import batch_topic as topic_of_batch
from bridge.protocol.frames import FaceFrame, MotionFrame
from bridge.protocol.versions import FRAME_TOPIC_PREFIX

DRAIN_S = 2.0  # after the last input, wait this long at most for the remaining frames


def percentile(values: npt.ArrayLike, q: float) -> float:
    """The q-th percentile of `values` as a float; NaN when there are none."""
    array = np.asarray(values, dtype=np.float64)
    return float(np.percentile(array, q)) if array.size else float("nan")


def device_ms(fn: Callable[[], object], device_type: str, repeats: int) -> float:
    """Mean ms per call of `fn` after one untimed call, the GPU's queue drained before and after the
    timed calls on CUDA (torch imported only then): the benchmarks' timing of work on a device."""

    def sync() -> None:
        if device_type == "cuda":
            import torch

            torch.cuda.synchronize()

    fn()
    sync()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    sync()
    return (time.perf_counter() - start) / repeats * 1e3


def cpu_model() -> str:
    """The processor's model name (Linux's /proc/cpuinfo), else what `platform` knows: runs on
    machines of the same kind can differ in it, and their figures with it."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def write_bench_json(path: Path, fields: Mapping[str, object]) -> None:
    """A benchmark's JSON result: when and where it ran, then its own fields."""
    doc = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{cpu_model()}, {os.cpu_count()} cores",
        **fields,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")


@dataclass
class SessionTrack:
    """What one session received, checked frame by frame against the contract."""

    session: str
    pipeline: str
    opened: dict[str, Any]  # the open reply: rig, fps, model
    last_input_seq: int = -1
    next_seq: int = 0
    frames_received: int = 0
    gaps: int = 0
    violations: list[str] = field(default_factory=list)
    latencies_ns: list[int] = field(default_factory=list)  # input captured -> frame received here
    in_bridge_ns: list[int] = field(default_factory=list)  # input captured -> frame published by the bridge
    engine_us: list[float] = field(default_factory=list)
    batches: list[int] = field(default_factory=list)
    frames: list[ReceivedFrame] = field(default_factory=list)

    def add(self, r: ReceivedFrame, keep: bool) -> None:
        f, h = r.frame, r.frame.header
        expected_type = FaceFrame if self.pipeline == "face" else MotionFrame
        if not isinstance(f, expected_type):
            self.violations.append(f"seq {h.seq}: {type(f).__name__} on a {self.pipeline} session")
        if h.seq < self.next_seq:
            self.violations.append(f"seq {h.seq} after {self.next_seq - 1}: out of order or repeated")
        self.gaps += max(0, h.seq - self.next_seq)
        self.next_seq = max(self.next_seq, h.seq + 1)
        if h.input_seq > self.last_input_seq:
            self.violations.append(f"seq {h.seq}: input_seq {h.input_seq} was never sent")
        if h.t_publish_ns < h.t_capture_ns:
            self.violations.append(f"seq {h.seq}: published before captured")
        self.frames_received += 1
        self.latencies_ns.append(r.recv_ns - h.t_capture_ns)
        self.in_bridge_ns.append(h.t_publish_ns - h.t_capture_ns)
        self.engine_us.append(h.engine_us)
        self.batches.append(h.batch)
        if keep:
            self.frames.append(r)


@dataclass
class HarnessReport:
    pipeline: str
    sessions: int
    seconds: float
    fps: float
    inputs_sent: int
    frames_published: int
    frames_received: int
    frames_lost: int
    invalid_frames: int
    errors: list[str]
    latency_ms_p50: float
    latency_ms_p99: float
    latency_ms_max: float
    engine_ms_p50: float
    mean_batch: float
    fps_per_session: float
    tracks: list[SessionTrack] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return (
            self.frames_received > 0 and self.frames_lost == 0 and not self.invalid_frames and not self.errors
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("tracks")
        data["ok"] = self.ok
        return data


def run_harness(
    client: BridgeClient,
    pipeline: str,
    *,
    seconds: float,
    sessions: int = 1,
    fps: float = 60.0,
    input_path: Path | None = None,
    options: dict[str, Any] | None = None,
    keep_frames: bool = False,
    on_tick: Callable[[int, int], None] | None = None,
    feature_rows: np.ndarray | None = None,
    batch_topic: bool = False,
    batch_group: str = "",
    multiplex: bool = False,
) -> HarnessReport:
    """Stream `seconds` of input at `fps` into `sessions` new sessions and account for every frame.

    Motion sessions get generated music (or `input_path`'s WAV) as audio, or, when `feature_rows`
    (N x 35) is given, one precomputed feature row per tick. With `multiplex`, each tick's inputs of
    all sessions go out in `inputs` messages (docs/protocol.md section 4.7), not one `input` each.
    With `batch_topic`, frames are read from the pipeline's batch messages (`batch/<pipeline>`,
    docs/protocol.md 5.3), not from `frame/` topics; with `batch_group` too, the sessions are opened
    in that batch group and only its topic (`batch/<pipeline>/<group>/`) is read: no other client's rows.
    """
    if not client.hello_reply:
        client.hello()
    group = batch_group if batch_topic else ""
    client.subscribe(topic_of_batch(pipeline, group) if batch_topic else FRAME_TOPIC_PREFIX)
    time.sleep(0.05)  # let the subscription reach the bridge before the first frame is published
    open_options = {**(options or {}), **({BATCH_GROUP_OPTION: group} if group else {})}
    tracks: dict[str, SessionTrack] = {}
    for _ in range(sessions):
        opened = client.open(pipeline, **open_options)
        tracks[opened["session"]] = SessionTrack(opened["session"], pipeline, opened)
    item, total = _items(client, pipeline, seconds, fps, input_path, feature_rows)

    def receive(timeout_ms: int) -> int:
        got = client.recv_frames(timeout_ms)
        for r in got:
            track = tracks.get(r.frame.header.session)
            if track is not None:
                track.add(r, keep_frames)
        return len(got)

    period_ns = int(1e9 / fps)
    start = time.monotonic_ns()
    sent = 0
    for tick in range(total):
        deadline = start + tick * period_ns
        while (wait := deadline - time.monotonic_ns()) > 0:
            receive(max(1, wait // 1_000_000))
        items = [item(track.session, tick) for track in tracks.values()]
        if multiplex:
            client.send_inputs(items)
        else:
            for one in items:
                client.send_item(one)
        for track in tracks.values():
            track.last_input_seq = tick
            sent += 1
        receive(0)
        if on_tick is not None:
            on_tick(tick + 1, total)
    published = 0
    quiet_until = time.monotonic() + DRAIN_S
    while time.monotonic() < quiet_until:
        if receive(50):
            quiet_until = min(quiet_until, time.monotonic() + 0.3)
    for sid in tracks:
        published += client.close_session(sid)["frames_published"]
    receive(100)
    client.poll_replies()
    return _report(pipeline, sessions, seconds, fps, sent, published, client, list(tracks.values()))


def _items(
    client: BridgeClient,
    pipeline: str,
    seconds: float,
    fps: float,
    path: Path | None,
    rows: np.ndarray | None,
) -> tuple[Callable[[str, int], dict[str, Any]], int]:
    """The input item of (session, tick), and how many ticks there are."""
    if pipeline == "face":
        frames = list(face_frames(seconds, fps, path))
        return (lambda sid, i: client.image_item(sid, i, frames[i])), len(frames)
    if rows is not None:
        count = min(len(rows), int(seconds * fps))
        return (lambda sid, i: client.features_item(sid, i, rows[i : i + 1])), count
    rate, chunks = audio_chunks(seconds, fps, path)
    pcm: list[np.ndarray] = list(chunks)
    return (lambda sid, i: client.audio_item(sid, i, pcm[i], rate)), len(pcm)


def _report(
    pipeline: str,
    sessions: int,
    seconds: float,
    fps: float,
    sent: int,
    published: int,
    client: BridgeClient,
    tracks: list[SessionTrack],
) -> HarnessReport:
    received = sum(t.frames_received for t in tracks)
    latencies = np.array([x for t in tracks for x in t.latencies_ns], dtype=np.float64) / 1e6
    engine = np.array([x for t in tracks for x in t.engine_us], dtype=np.float64) / 1e3
    batches = np.array([x for t in tracks for x in t.batches], dtype=np.float64)

    return HarnessReport(
        pipeline=pipeline,
        sessions=sessions,
        seconds=seconds,
        fps=fps,
        inputs_sent=sent,
        frames_published=published,
        frames_received=received,
        frames_lost=max(0, published - received),
        invalid_frames=len(client.invalid_frames) + sum(len(t.violations) for t in tracks),
        errors=[f"{e.get('name')}: {e.get('message')}" for e in client.errors],
        latency_ms_p50=percentile(latencies, 50),
        latency_ms_p99=percentile(latencies, 99),
        latency_ms_max=float(latencies.max()) if latencies.size else float("nan"),
        engine_ms_p50=percentile(engine, 50),
        mean_batch=float(batches.mean()) if batches.size else 0.0,
        fps_per_session=received / sessions / seconds if seconds else 0.0,
        tracks=tracks,
    )
