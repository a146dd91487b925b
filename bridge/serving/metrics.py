"""Prometheus metrics, health and readiness over HTTP (`avatar-bridge serve --metrics-port N`).

    /metrics  Prometheus text format: the bridge's figures (docs/operations.md lists them) and the
              process's own (resident memory, CPU, open files).
    /healthz  200 while the I/O loop turns and every scheduler thread runs; 503 otherwise.
    /readyz   200 once engines are loaded and every scheduler runs; JSON with every engine's load result.

Figures are read from BridgeStats, the session table and the guards (a custom collector), so the hot
path never touches prometheus-client, which stays an optional extra. Binds to 127.0.0.1 unless told
otherwise.

Bounded, so that scrapers cannot hurt the bridge: a fixed pool of MAX_WORKERS threads serves at most
MAX_CONNECTIONS connections at once (more are closed on accept), each socket read times out after
READ_TIMEOUT_S (slowloris), and /metrics is rendered at most once per RENDER_EVERY_S however many
scrapers ask: the others get the cached text.
"""

from __future__ import annotations

import json
import logging
import shutil
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import TYPE_CHECKING, Any

from bridge import __version__
from bridge.pipelines.output_guard import stats_for
from bridge.protocol.errors import ErrorCode
from bridge.serving.stats import FRAME_DROP_REASONS, REPLY_DROP_REASONS
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
MAX_CONNECTIONS = 32  # open at once; more are closed as they are accepted
MAX_WORKERS = 4  # threads serving them
READ_TIMEOUT_S = 2.0  # a client that sends its request slower than this is dropped
RENDER_EVERY_S = 0.25  # /metrics is rendered at most this often; scrapers in between get the cache


class _BoundedHTTPServer(HTTPServer):
    """HTTPServer with a fixed worker pool and a cap on open connections (no thread per connection)."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._pool = ThreadPoolExecutor(MAX_WORKERS, "metrics-http")
        self.refused = 0  # connections closed on accept because MAX_CONNECTIONS were open

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            self.shutdown_request(request)
            return
        request.settimeout(READ_TIMEOUT_S)
        self._pool.submit(self._serve, request, client_address)

    def _serve(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("metrics http: connection from %s failed", client_address, exc_info=True)

    def server_close(self) -> None:
        super().server_close()
        self._pool.shutdown(wait=False, cancel_futures=True)


class _Renderer:
    """The /metrics text, rendered at most every RENDER_EVERY_S; concurrent scrapes share one render."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry
        self._lock = threading.Lock()
        self._text = b""
        self._at = -RENDER_EVERY_S
        self.renders = 0

    def text(self) -> bytes:
        with self._lock:  # a scraper arriving during a render waits for it and takes its result
            if time.monotonic() - self._at >= RENDER_EVERY_S:
                self._text = generate_latest(self._registry)
                self._at = time.monotonic()
                self.renders += 1
            return self._text


class MetricsServer:
    """The HTTP endpoint: one accept thread and a bounded pool (see the module doc)."""

    def __init__(self, bridge: Bridge, host: str, port: int) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BridgeCollector(bridge))
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.renderer = _Renderer(self.registry)
        handler = type("Handler", (_Handler,), {"bridge": bridge, "renderer": self.renderer})
        self._http = _BoundedHTTPServer((host, port), handler)
        self.port: int = self._http.server_address[1]
        self._thread = threading.Thread(target=self._http.serve_forever, name="metrics-accept", daemon=True)
        self._thread.start()
        log.info("metrics on http://%s:%d/metrics (health /healthz, readiness /readyz)", host, self.port)

    @property
    def refused(self) -> int:
        return self._http.refused

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)


def health(bridge: Bridge) -> tuple[bool, str]:
    """(healthy, why): the I/O loop turns and every scheduler thread runs and is not stuck."""
    if time.monotonic() - bridge.heartbeat > HEALTH_STALE_S:
        return False, "stalled: the I/O loop has not turned for 5 s"
    down = sorted(s.pipeline.model_name for s in bridge.schedulers.values() if not s.healthy)
    if down:
        return False, f"scheduler down or stuck: {', '.join(down)}"
    return True, "ok"


class _Handler(BaseHTTPRequestHandler):
    bridge: Bridge
    renderer: _Renderer
    timeout = READ_TIMEOUT_S

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._answer(200, self.renderer.text(), CONTENT_TYPE_LATEST)
        elif path == "/healthz":
            ok, why = health(self.bridge)
            self._answer(200 if ok else 503, why.encode() + b"\n", "text/plain")
        elif path == "/readyz":
            ok, why = health(self.bridge)
            ready = self.bridge.ready and ok
            body = {
                "ready": ready,
                "health": why,
                "engines": {x.model: x.error or "loaded" for x in self.bridge.engine_loads},
            }
            self._answer(200 if ready else 503, json.dumps(body).encode(), "application/json")
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
            f"{PREFIX}_frames_dropped",
            "Frames computed that no subscriber got, by reason (session_closed, failed)",
            labels=["model", "reason"],
        )
        stalls = CounterMetricFamily(
            f"{PREFIX}_subscriber_stalls",
            "A subscriber's queue was full: it missed frames from then until it read again (once per stall)",
            labels=["model"],
        )
        inputs = CounterMetricFamily(
            f"{PREFIX}_inputs_dropped", "Face images superseded by newer ones (latest wins)", labels=["model"]
        )
        restarts_s = CounterMetricFamily(
            f"{PREFIX}_scheduler_restarts", "Scheduler threads restarted after dying", labels=["model"]
        )
        for s in b.stats.children:
            published.add_metric([s.model], s.frames_published)
            frame_drops, _ = s.drop_counts()
            for reason in FRAME_DROP_REASONS:
                dropped.add_metric([s.model, reason], frame_drops.get(reason, 0))
            stalls.add_metric([s.model], s.subscriber_stalls)
            inputs.add_metric([s.model], s.inputs_dropped)
            restarts_s.add_metric([s.model], s.scheduler_restarts)
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
        yield from (loads, seconds, published, dropped, stalls, inputs, restarts_s, guard, restarts)

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
        replies = CounterMetricFamily(
            f"{PREFIX}_replies_dropped",
            "Replies not sent, by reason: peer_full (client not reading), peer_gone, error_queue_full",
            labels=["reason"],
        )
        _, reply_drops = self.bridge.stats.drop_counts()
        for reason in REPLY_DROP_REASONS:
            replies.add_metric([reason], reply_drops.get(reason, 0))
        yield replies


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
