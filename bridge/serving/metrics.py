"""Prometheus metrics, health and readiness over HTTP (`avatar-bridge serve --metrics-port N`).

    /metrics  Prometheus text format: the bridge's figures (docs/operations.md lists them) and the
              process's own (resident memory, CPU, open files).
    /healthz  200 while the I/O loop turns; 503 when it has stalled.
    /readyz   200 once engines are loaded and the schedulers run; JSON with every engine's load result.

Figures are read from BridgeStats, the session table and the guards at scrape time (a custom
collector), so the hot path never touches prometheus-client, which stays an optional extra. Binds to
127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from bridge import __version__
from bridge.pipelines.output_guard import stats_for
from bridge.protocol.errors import ErrorCode
from bridge.transport.zmq_sockets import HANDSHAKE_FAILURES

try:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
        InfoMetricFamily,
        Metric,
    )
    from prometheus_client.platform_collector import PlatformCollector
    from prometheus_client.process_collector import ProcessCollector
    from prometheus_client.registry import Collector, CollectorRegistry
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the metrics endpoint needs prometheus-client: pip install 'avatar-bridge[metrics]'"
    ) from exc

if TYPE_CHECKING:
    from bridge.serving.server import Bridge

log = logging.getLogger(__name__)

PREFIX = "avatar_bridge"
HEALTH_STALE_S = 5.0  # the I/O loop turns every 20 ms; this long without a turn means it is stuck
GPU_QUERY_EVERY_S = 5.0


class MetricsServer:
    """The HTTP endpoint, on its own daemon thread."""

    def __init__(self, bridge: Bridge, host: str, port: int) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BridgeCollector(bridge))
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        handler = type("Handler", (_Handler,), {"bridge": bridge, "registry": self.registry})
        self._http = ThreadingHTTPServer((host, port), handler)
        self._http.daemon_threads = True
        self.port: int = self._http.server_address[1]
        self._thread = threading.Thread(target=self._http.serve_forever, name="metrics-http", daemon=True)
        self._thread.start()
        log.info("metrics on http://%s:%d/metrics (health /healthz, readiness /readyz)", host, self.port)

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    bridge: Bridge
    registry: CollectorRegistry

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._answer(200, generate_latest(self.registry), CONTENT_TYPE_LATEST)
        elif path == "/healthz":
            stalled = time.monotonic() - self.bridge.heartbeat > HEALTH_STALE_S
            self._answer(503 if stalled else 200, b"stalled\n" if stalled else b"ok\n", "text/plain")
        elif path == "/readyz":
            body = {
                "ready": self.bridge.ready,
                "engines": {x.model: x.error or "loaded" for x in self.bridge.engine_loads},
            }
            self._answer(200 if self.bridge.ready else 503, json.dumps(body).encode(), "application/json")
        else:
            self._answer(404, b"not found: try /metrics, /healthz or /readyz\n", "text/plain")

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("metrics http: " + format, *args)


class BridgeCollector(Collector):
    def __init__(self, bridge: Bridge) -> None:
        self.bridge = bridge
        self._gpu = GpuMemory()

    def collect(self) -> Iterator[Metric]:
        b = self.bridge
        yield InfoMetricFamily(
            f"{PREFIX}_build",
            "Bridge version and backend",
            {"version": __version__, "backend": b.config.backend},
        )
        yield GaugeMetricFamily(
            f"{PREFIX}_ready", "1 once engines are loaded and serving", value=float(b.ready)
        )
        yield from self._latency()
        yield from self._engines()
        yield from self._sessions()
        yield from self._errors()
        yield from self._gpu.collect()

    def _latency(self) -> Iterator[Metric]:
        stage = HistogramMetricFamily(
            f"{PREFIX}_stage_seconds",
            "Time per stage: decode, pre (pre-process), queue, engine, post (post-process), publish",
            labels=["stage", "model"],
        )
        e2e = HistogramMetricFamily(
            f"{PREFIX}_end_to_end_seconds",
            "Input queued in the bridge to its frame published",
            labels=["model"],
        )
        batch = HistogramMetricFamily(f"{PREFIX}_batch_size", "Sessions per engine call", labels=["model"])
        for s in (self.bridge.stats, *self.bridge.stats.children):
            stages, batches = s.histograms()
            for name, h in sorted(stages.items()):
                if name == "end_to_end":
                    e2e.add_metric([s.model], h.cumulative(), h.total)
                else:
                    stage.add_metric([name, s.model], h.cumulative(), h.total)
            if s.model:
                batch.add_metric([s.model], batches.cumulative(), batches.total)
        yield from (stage, e2e, batch)

    def _engines(self) -> Iterator[Metric]:
        b = self.bridge
        loads = CounterMetricFamily(
            f"{PREFIX}_engine_loads", "Engine loads at start", labels=["model", "result"]
        )
        seconds = GaugeMetricFamily(
            f"{PREFIX}_engine_load_seconds", "Time to load each engine", labels=["model"]
        )
        for x in b.engine_loads:
            loads.add_metric([x.model, "failed" if x.error else "ok"], 1)
            seconds.add_metric([x.model], x.seconds)
        published = CounterMetricFamily(f"{PREFIX}_frames_published", "Frames published", labels=["model"])
        dropped = CounterMetricFamily(
            f"{PREFIX}_frames_dropped", "Frames libzmq could not queue", labels=["model"]
        )
        inputs = CounterMetricFamily(
            f"{PREFIX}_inputs_dropped", "Face images superseded by newer ones (latest wins)", labels=["model"]
        )
        for s in b.stats.children:
            published.add_metric([s.model], s.frames_published)
            dropped.add_metric([s.model], s.frames_dropped)
            inputs.add_metric([s.model], s.inputs_dropped)
        guard = CounterMetricFamily(
            f"{PREFIX}_guard_outputs", "Outputs clamped into range or held (bad)", labels=["model", "verdict"]
        )
        restarts = CounterMetricFamily(
            f"{PREFIX}_session_restarts",
            "Hot restarts of sessions after consecutive bad outputs",
            labels=["model"],
        )
        for models in b.pipelines.values():
            for model, pipeline in models.items():
                g = stats_for(pipeline)
                guard.add_metric([model, "clamped"], g.clamped)
                guard.add_metric([model, "held"], g.held)
                restarts.add_metric([model], g.restarts)
        yield from (loads, seconds, published, dropped, inputs, guard, restarts)

    def _sessions(self) -> Iterator[Metric]:
        b = self.bridge
        sessions = b.sessions.all()
        open_ = GaugeMetricFamily(f"{PREFIX}_sessions_open", "Open sessions", labels=["pipeline", "model"])
        depth = GaugeMetricFamily(
            f"{PREFIX}_queue_depth", "Inputs and engine steps waiting, over all sessions", labels=["model"]
        )
        counts: Counter[tuple[str, str]] = Counter()
        depths: Counter[str] = Counter()
        for name, models in b.pipelines.items():
            for model in models:
                counts[(name, model)] = 0
                depths[model] = 0
        per_session = {
            "frames_published": CounterMetricFamily(
                f"{PREFIX}_session_frames_published",
                "Frames published per open session",
                labels=["session", "model"],
            ),
            "frames_dropped": CounterMetricFamily(
                f"{PREFIX}_session_frames_dropped",
                "Frames dropped per open session",
                labels=["session", "model"],
            ),
            "inputs_dropped": CounterMetricFamily(
                f"{PREFIX}_session_inputs_dropped",
                "Inputs dropped per open session",
                labels=["session", "model"],
            ),
        }
        for s in sessions:
            model = s.pipeline.model_name
            counts[(s.pipeline.name, model)] += 1
            depths[model] += len(s.inbox) + len(s.steps)
            for attr, family in per_session.items():
                family.add_metric([s.id, model], getattr(s, attr))
        for (name, model), n in sorted(counts.items()):
            open_.add_metric([name, model], n)
        for model, n in sorted(depths.items()):
            depth.add_metric([model], n)
        yield from (open_, depth, *per_session.values())
        yield CounterMetricFamily(
            f"{PREFIX}_sessions_opened", "Sessions opened", value=b.stats.sessions_opened
        )
        yield CounterMetricFamily(
            f"{PREFIX}_sessions_reaped", "Sessions reaped idle", value=b.stats.sessions_reaped
        )

    def _errors(self) -> Iterator[Metric]:
        errors = CounterMetricFamily(f"{PREFIX}_errors", "Error replies by code", labels=["code", "name"])
        counted = self.bridge.stats.error_counts()
        for code in ErrorCode:
            errors.add_metric([str(code.value), code.name], counted.get(code.name, 0))
        yield errors
        handshakes = CounterMetricFamily(
            f"{PREFIX}_handshake_failures", "CURVE handshakes refused, by reason", labels=["reason"]
        )
        failures = self.bridge.stats.handshake_failures
        for reason in (
            *HANDSHAKE_FAILURES.values(),
            *sorted(set(failures) - set(HANDSHAKE_FAILURES.values())),
        ):
            handshakes.add_metric([reason], failures[reason])
        yield handshakes
        yield CounterMetricFamily(
            f"{PREFIX}_replies_dropped",
            "Replies to clients that stopped reading",
            value=self.bridge.stats.replies_dropped,
        )


class GpuMemory:
    """GPU memory per device from nvidia-smi (no CUDA context in this process), where a GPU is present."""

    def __init__(self) -> None:
        self._smi = shutil.which("nvidia-smi")
        self._at = -GPU_QUERY_EVERY_S
        self._rows: list[tuple[str, str, float, float]] = []

    def collect(self) -> Iterator[Metric]:
        if self._smi is None:
            return
        if time.monotonic() - self._at >= GPU_QUERY_EVERY_S:  # cached: a scrape must stay cheap
            self._at = time.monotonic()
            self._rows = self._query(self._smi)
        used = GaugeMetricFamily(
            f"{PREFIX}_gpu_memory_used_bytes", "GPU memory in use", labels=["gpu", "name"]
        )
        total = GaugeMetricFamily(f"{PREFIX}_gpu_memory_total_bytes", "GPU memory", labels=["gpu", "name"])
        for index, name, used_mib, total_mib in self._rows:
            used.add_metric([index, name], used_mib * 2**20)
            total.add_metric([index, name], total_mib * 2**20)
        yield from (used, total)

    @staticmethod
    def _query(smi: str) -> list[tuple[str, str, float, float]]:
        try:
            out = subprocess.run(
                [smi, "--query-gpu=index,name,memory.used,memory.total", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=5,
                check=True,
            ).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            log.debug("nvidia-smi failed: %s", exc)
            return []
        rows = []
        for line in out.strip().splitlines():
            index, name, used, total = (x.strip() for x in line.split(","))
            try:
                rows.append((index, name, float(used), float(total)))
            except ValueError:  # "[N/A]" on some devices
                continue
        return rows
