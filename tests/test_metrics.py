"""The metrics endpoint, scraped after real sessions: every metric of issue 8 with sensible values."""

from __future__ import annotations

import gc
import json
import re
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bridge.clients.harness.client import BridgeClient
from bridge.media.face_video import FaceVideo
from bridge.protocol import FaceFrame, MotionFrame
from bridge.serving.cluster.workers import worker_config
from bridge.serving.heap import GC_PAUSES, frozen_objects, time_collection
from bridge.serving.metrics import GpuMemory, HeapCollector
from bridge.serving.server import Bridge, ServeConfig

from .conftest import start_bridge, stop_bridge

DASHBOARD = Path(__file__).resolve().parents[1] / "docs" / "grafana-dashboard.json"
STAGES = ("pre", "queue", "engine", "post", "publish")
MOTION_FRAMES = 40


@pytest.fixture(scope="module")
def metered() -> Iterator[Bridge]:
    server, thread = start_bridge(metrics_port=0)
    yield server
    stop_bridge(server, thread)


def get(bridge: Bridge, path: str) -> tuple[int, str]:
    assert bridge.metrics is not None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{bridge.metrics.port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def scrape(bridge: Bridge) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Samples by sample name (histograms give _bucket, _sum, _count; counters _total)."""
    status, text = get(bridge, "/metrics")
    assert status == 200
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, []).append((s.labels, s.value))
    return samples


def value(samples: dict[str, list[tuple[dict[str, str], float]]], metric: str, **labels: str) -> float:
    matches = [v for lab, v in samples[metric] if all(lab.get(k) == want for k, want in labels.items())]
    assert len(matches) == 1, (metric, labels, samples.get(metric))
    return matches[0]


def scrape_when_settled(
    bridge: Bridge, motion_model: str, face_model: str
) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Scrape once the schedulers have recorded their last batch and the I/O thread the malformed
    message sent last: a subscriber can hold a frame a moment before the thread that sent it updates
    its statistics, and a render is cached for up to 250 ms."""
    deadline = time.monotonic() + 10
    while True:
        m = scrape(bridge)
        counts = {
            model: sum(
                v for lab, v in m.get("avatar_bridge_end_to_end_seconds_count", []) if lab["model"] == model
            )
            for model in (motion_model, face_model)
        }
        malformed = sum(v for lab, v in m.get("avatar_bridge_errors_total", []) if lab["name"] == "MALFORMED")
        settled = counts[motion_model] >= MOTION_FRAMES and counts[face_model] >= 1 and malformed >= 1
        if settled or time.monotonic() > deadline:
            return m
        time.sleep(0.05)


def test_metrics_after_a_real_face_and_motion_session(metered: Bridge) -> None:
    client = BridgeClient("127.0.0.1", metered.sockets.request_port, timeout_s=10)
    try:
        client.hello()
        client.subscribe()
        time.sleep(0.05)
        motion = client.open("motion")
        face = client.open("face")
        video = FaceVideo()
        rows = np.random.default_rng(0).standard_normal((MOTION_FRAMES, 35)).astype(np.float32)
        for i in range(MOTION_FRAMES):
            client.send_features(motion["session"], i, rows[i : i + 1])
            if i % 8 == 0:
                client.send_image(face["session"], i, video.frame(i))
            time.sleep(0.005)
        client.dealer.send(b"\xc1 not msgpack")  # one counted error
        got: dict[str, int] = {motion["session"]: 0, face["session"]: 0}
        deadline = time.monotonic() + 30
        while got[motion["session"]] < MOTION_FRAMES or not got[face["session"]]:
            assert time.monotonic() < deadline, got
            for r in client.recv_frames(50):
                assert isinstance(r.frame, (FaceFrame, MotionFrame))
                got[r.frame.header.session] = got.get(r.frame.header.session, 0) + 1
        m = scrape_when_settled(metered, motion["model"], face["model"])
    finally:
        client.close()
    motion_model, face_model = motion["model"], face["model"]

    # Latency histograms per stage and end to end, per model; decode runs on the I/O thread.
    assert value(m, "avatar_bridge_stage_seconds_count", stage="decode", model="") >= MOTION_FRAMES
    for model, frames in ((motion_model, MOTION_FRAMES), (face_model, 1)):
        for stage in STAGES:
            assert value(m, "avatar_bridge_stage_seconds_count", stage=stage, model=model) >= frames, stage
            assert 0 < value(m, "avatar_bridge_stage_seconds_sum", stage=stage, model=model) < 60 * frames
        assert value(m, "avatar_bridge_end_to_end_seconds_count", model=model) >= frames
        inf = value(m, "avatar_bridge_end_to_end_seconds_bucket", model=model, le="+Inf")
        assert inf == value(m, "avatar_bridge_end_to_end_seconds_count", model=model)
        assert value(m, "avatar_bridge_batch_size_count", model=model) >= 1
        assert value(m, "avatar_bridge_batch_size_sum", model=model) >= value(
            m, "avatar_bridge_batch_size_count", model=model
        )
        assert value(m, "avatar_bridge_queue_depth", model=model) >= 0
        assert value(m, "avatar_bridge_engine_loads_total", model=model, result="ok") == 1
        assert 0 < value(m, "avatar_bridge_engine_load_seconds", model=model) < 120
    # Frames published and dropped, per session and per model.
    sid = motion["session"]
    assert value(m, "avatar_bridge_session_frames_published_total", session=sid) == MOTION_FRAMES
    assert value(m, "avatar_bridge_session_frames_dropped_total", session=sid) == 0
    assert value(m, "avatar_bridge_session_frames_published_total", session=face["session"]) >= 1
    assert value(m, "avatar_bridge_session_inputs_dropped_total", session=face["session"]) >= 0
    assert value(m, "avatar_bridge_frames_published_total", model=motion_model) >= MOTION_FRAMES
    for reason in ("session_closed", "failed", "publish_queue_full"):
        assert value(m, "avatar_bridge_frames_dropped_total", model=motion_model, reason=reason) == 0
    assert value(m, "avatar_bridge_subscriber_stalls_total", model=motion_model) == 0
    # The client subscribes to frame/: every motion frame encoded per session, no batch topic reader.
    assert value(m, "avatar_bridge_frames_encoded_total", model=motion_model) >= MOTION_FRAMES
    assert value(m, "avatar_bridge_batches_published_total", model=motion_model) == 0
    # Errors by code (every code present, zero or not), sessions, guard, readiness.
    assert value(m, "avatar_bridge_errors_total", name="MALFORMED", code="100") >= 1
    assert value(m, "avatar_bridge_errors_total", name="INTERNAL", code="500") == 0
    assert value(m, "avatar_bridge_sessions_open", pipeline="motion", model=motion_model) >= 1
    assert value(m, "avatar_bridge_sessions_open", pipeline="face", model=face_model) >= 1
    assert value(m, "avatar_bridge_sessions_opened_total") >= 2
    assert value(m, "avatar_bridge_guard_outputs_total", model=motion_model, verdict="held") == 0
    assert value(m, "avatar_bridge_session_restarts_total", model=motion_model) == 0
    assert value(m, "avatar_bridge_ready") == 1
    assert value(m, "process_resident_memory_bytes") > 10e6
    # GPU memory appears exactly where a GPU does.
    assert ("avatar_bridge_gpu_memory_used_bytes" in m) == (shutil.which("nvidia-smi") is not None)
    # The Grafana dashboard queries only metrics that exist.
    queried = set(re.findall(r"\b(?:avatar_bridge|process)_\w+", DASHBOARD.read_text()))
    missing = {q for q in queried - set(m) if "gpu" not in q or shutil.which("nvidia-smi")}
    assert queried and not missing, missing


def test_health_and_readiness(metered: Bridge) -> None:
    assert get(metered, "/healthz") == (200, "ok\n")
    status, body = get(metered, "/readyz")
    assert status == 200
    ready = json.loads(body)
    assert ready["ready"] is True and set(ready["engines"].values()) == {"loaded"}
    assert ready["backends"] and set(ready["backends"].values()) == {"ready"}
    assert get(metered, "/nope")[0] == 404


def test_metrics_bind_to_loopback_by_default(metered: Bridge) -> None:
    assert metered.config.metrics_host == "127.0.0.1"
    assert metered.metrics is not None and metered.metrics.port > 0


def test_gpu_memory_from_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The line format nvidia-smi prints on the H200 we measure on; "[N/A]" rows are skipped.
    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\necho "0, NVIDIA H200, 1024, 143771"\necho "1, Other, [N/A], [N/A]"\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    families = {f.name: f for f in GpuMemory().collect()}
    [used] = families["avatar_bridge_gpu_memory_used_bytes"].samples
    [total] = families["avatar_bridge_gpu_memory_total_bytes"].samples
    assert used.labels == {"gpu": "0", "name": "NVIDIA H200"} and used.value == 1024 * 2**20
    assert total.value == 143771 * 2**20
    # With --workers only the front end asks nvidia-smi: one query for the shared GPU, not one per worker.
    assert ServeConfig().gpu_metrics and not worker_config(ServeConfig(), metrics=True).gpu_metrics


def test_a_scrape_does_not_walk_the_frozen_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    # gc.get_freeze_count() walks every frozen object (20 ms in a worker on two cores): the figure is
    # the count freeze_startup_heap kept.
    def walk() -> int:
        raise AssertionError("a scrape walked the frozen heap")

    monkeypatch.setattr(gc, "get_freeze_count", walk)
    frozen, _ = HeapCollector().collect()
    assert frozen.name == "python_gc_frozen_objects" and frozen.samples[0].value == frozen_objects()


def test_collections_are_timed_by_generation() -> None:
    before = GC_PAUSES[2].count
    time_collection("start", {"generation": 2})
    time_collection("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
    assert GC_PAUSES[2].count == before + 1 and 0 <= GC_PAUSES[2].total < 60
    pauses = {f.name: f for f in HeapCollector().collect()}["python_gc_pause_seconds"]
    count = [s for s in pauses.samples if s.name.endswith("_count") and s.labels["generation"] == "2"]
    assert count[0].value == GC_PAUSES[2].count


def test_front_end_merges_worker_texts_by_family_with_a_worker_label() -> None:
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

    from bridge.serving.cluster.front_metrics import worker_text

    texts = []
    for index in range(2):
        registry = CollectorRegistry()
        Counter("avatar_bridge_frames", "frames", ["model"], registry=registry).labels("dance").inc(index + 1)
        Histogram("avatar_bridge_stage_seconds", "stage", registry=registry).observe(0.01 * (index + 1))
        Gauge("process_open_fds", "fds", registry=registry).set(10 + index)
        session = "avatar_bridge_session_frames"  # as session_text writes it: a counter, no suffix
        sessions = f'# HELP {session} frames\n# TYPE {session} counter\n{session}{{session="s{index}"}} 3.0\n'
        texts.append((index, generate_latest(registry).decode() + sessions))
    merged = worker_text(texts)
    families = {f.name: f for f in text_string_to_metric_families(merged)}
    types = [line.split()[2] for line in merged.splitlines() if line.startswith("# TYPE")]
    assert len(types) == len(set(types))  # each family once, all its samples in one block
    frames = {
        (s.labels["worker"], s.labels["model"]): s.value
        for s in families["avatar_bridge_frames"].samples
        if s.name.endswith("_total")
    }
    assert frames == {("0", "dance"): 1.0, ("1", "dance"): 2.0}
    sums = {
        s.labels["worker"]: s.value
        for s in families["avatar_bridge_stage_seconds"].samples
        if s.name.endswith("_sum")
    }
    assert sums == {"0": 0.01, "1": 0.02}
    fds = {s.labels["worker"]: s.value for s in families["avatar_bridge_worker_process_open_fds"].samples}
    assert fds == {"0": 10.0, "1": 11.0} and "process_open_fds" not in families  # not ours: renamed
    per_session = {(s.labels["worker"], s.labels["session"]) for s in families[session].samples}
    assert per_session == {("0", "s0"), ("1", "s1")}
