"""Prometheus metrics, health and readiness over HTTP (`avatar-bridge serve --metrics-port N`).

    /metrics  Prometheus text format: the bridge's figures (docs/operations.md lists them) and the
              process's own (resident memory, CPU, open files).
    /healthz  200 while the I/O loop turns and every scheduler thread runs; 503 otherwise.
    /readyz   200 once engines are loaded, every scheduler runs and every backend can serve (a Triton
              backend asks its server); JSON with every engine's load result and backend state.

Figures are read from BridgeStats, the session table and the guards (a custom collector), so the hot
path never touches prometheus-client, which stays an optional extra. Binds to 127.0.0.1 unless told
otherwise.

Bounded, so that scrapers cannot hurt the bridge: one asyncio thread holds every connection (at most
MAX_CONNECTIONS; when full, a new one evicts the oldest that has not finished sending its request, so
slow clients cannot lock out quick ones), a request must arrive within READ_TIMEOUT_S and
MAX_REQUEST_BYTES (slowloris), and /metrics is rendered on one worker thread at most once per
RENDER_EVERY_S however many scrapers ask: the others get the cached text. Answers of any kind go out
at most MAX_ANSWERS_PER_S a second (the rest wait, asleep), so however many scrapers push, the
endpoint takes a bounded share of the bridge's GIL.
"""

from __future__ import annotations

import asyncio
import asyncio.base_events
import json
import logging
import shutil
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from bridge import __version__
from bridge.protocol.errors import ErrorCode
from bridge.serving.heap import GC_PAUSES, frozen_objects
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
    from prometheus_client.gc_collector import GCCollector
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
MAX_CONNECTIONS = 256  # open at once; a new one beyond closes the oldest that has not sent its request
MAX_REQUEST_BYTES = 8192  # request line and headers
READ_TIMEOUT_S = 2.0  # a client that sends its request (or reads the answer) slower than this is dropped
RENDER_EVERY_S = 0.25  # /metrics is rendered at most this often; scrapers in between get the cache
MAX_ANSWERS_PER_S = 20.0  # answers of every kind together; a request beyond waits its turn (asleep)


class _Renderer:
    """The /metrics text, rendered at most every RENDER_EVERY_S; concurrent scrapes share one render."""

    def __init__(self, render: Callable[[], bytes]) -> None:
        self._render = render
        self._lock = threading.Lock()
        self._text = b""
        self._at = -RENDER_EVERY_S
        self.renders = 0

    def text(self) -> bytes:
        with self._lock:  # a scraper arriving during a render waits for it and takes its result
            if time.monotonic() - self._at >= RENDER_EVERY_S:
                self._text = self._render()
                self._at = time.monotonic()
                self.renders += 1
            return self._text


class MetricsEndpoint(ABC):
    """The bounded HTTP endpoint: one asyncio thread holds every connection (a slow one costs a socket,
    not a thread); /metrics renders `collector` on one worker thread, through the cache. What /healthz
    and /readyz say comes from `health` and `readiness` (a bridge's, or a front end's over its workers)."""

    def __init__(self, collector: Collector, host: str, port: int) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.registry.register(HeapCollector())
        self.renderer = _Renderer(self.render)
        self.refused = 0  # connections closed unanswered: over the cap, too slow, or not a GET
        self._waiting: dict[asyncio.StreamWriter, float] = {}  # connections still sending their request
        self._open = 0
        self._render_pool = ThreadPoolExecutor(1, "metrics-render")
        self._next_answer = 0.0  # monotonic time of the next answer slot (MAX_ANSWERS_PER_S)
        self._loop = asyncio.new_event_loop()
        self._listening: asyncio.base_events.Server | None = None
        started = threading.Event()
        errors: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=(host, port, started, errors), name="metrics-http", daemon=True
        )
        self._thread.start()
        started.wait()
        if errors:
            raise errors[0]
        assert self._listening is not None
        self.port: int = self._listening.sockets[0].getsockname()[1]
        log.info("metrics on http://%s:%d/metrics (health /healthz, readiness /readyz)", host, self.port)

    def _run(self, host: str, port: int, started: threading.Event, errors: list[BaseException]) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._listening = self._loop.run_until_complete(
                asyncio.start_server(self._connection, host, port, limit=MAX_REQUEST_BYTES)
            )
        except OSError as exc:
            errors.append(exc)
            started.set()
            return
        started.set()
        self._loop.run_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= MAX_CONNECTIONS:  # full: make room by dropping the oldest still-unfinished request
            oldest = min(self._waiting, key=self._waiting.__getitem__, default=None)
            if oldest is None:
                self.refused += 1
                writer.close()
                return
            self._waiting.pop(oldest)
            self.refused += 1
            oldest.close()
        self._open += 1
        self._waiting[writer] = time.monotonic()
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
            self._waiting.pop(writer, None)
            await self._turn()
            status, body, content_type = await self._answer(head)
            writer.write(
                f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await asyncio.wait_for(writer.drain(), READ_TIMEOUT_S)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            self.refused += 1
        finally:
            self._waiting.pop(writer, None)
            self._open -= 1
            writer.close()

    async def _turn(self) -> None:
        """Wait for the next answer slot: however hard scrapers push, answering costs the bridge's
        GIL at most MAX_ANSWERS_PER_S times a second; waiting costs nothing."""
        now = time.monotonic()
        slot = max(now, self._next_answer)
        self._next_answer = slot + 1.0 / MAX_ANSWERS_PER_S
        if slot > now:
            await asyncio.sleep(slot - now)

    async def _answer(self, head: bytes) -> tuple[int, bytes, str]:
        method, _, rest = head.partition(b" ")
        if method != b"GET":
            return 405, b"GET only\n", "text/plain"
        path = rest.split(b" ", 1)[0].split(b"?", 1)[0].decode("latin-1")
        if path == "/metrics":
            text = await self._loop.run_in_executor(self._render_pool, self.renderer.text)
            return 200, text, CONTENT_TYPE_LATEST
        if path == "/healthz":
            ok, why = self.health()
            return (200 if ok else 503), why.encode() + b"\n", "text/plain"
        if path == "/readyz":
            # On the render thread: a remote backend's probe waits on the network.
            ready, body = await self._loop.run_in_executor(self._render_pool, self.readiness)
            return (200 if ready else 503), json.dumps(body).encode(), "application/json"
        return 404, b"not found: try /metrics, /healthz or /readyz\n", "text/plain"

    def close(self) -> None:
        async def shut() -> None:
            if self._listening is not None:
                self._listening.close()
            for writer in list(self._waiting):
                writer.close()

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._render_pool.shutdown(wait=False, cancel_futures=True)

    def render(self) -> bytes:
        """The /metrics text; runs on the render thread."""
        return bytes(generate_latest(self.registry))

    @abstractmethod
    def health(self) -> tuple[bool, str]:
        """(healthy, why) for /healthz."""

    @abstractmethod
    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """(ready, the JSON body) for /readyz; runs on the render thread (it may wait on the network)."""


class MetricsServer(MetricsEndpoint):
    """The endpoint of one bridge."""

    def __init__(self, bridge: Bridge, host: str, port: int) -> None:
        self.bridge = bridge
        super().__init__(BridgeCollector(bridge), host, port)

    def render(self) -> bytes:
        return super().render() + session_text(self.bridge).encode()

    def health(self) -> tuple[bool, str]:
        return health(self.bridge)

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        ok, why = health(self.bridge)
        backends = backend_readiness(self.bridge)
        ready = self.bridge.ready and ok and all(state == "ready" for state in backends.values())
        body = {
            "ready": ready,
            "health": why,
            "engines": {x.model: x.error or "loaded" for x in self.bridge.engine_loads},
            "backends": backends,
        }
        return ready, body


PER_SESSION = (  # (Session attribute, family name, help): counters, one series per open session
    ("frames_published", f"{PREFIX}_session_frames_published_total", "Frames published per open session"),
    ("frames_dropped", f"{PREFIX}_session_frames_dropped_total", "Frames dropped per open session"),
    ("inputs_dropped", f"{PREFIX}_session_inputs_dropped_total", "Inputs dropped per open session"),
)


def session_text(bridge: Bridge) -> str:
    """The per-session counters in the exposition format, written directly: they are most of a busy
    bridge's lines (three per session), and generate_latest spends microseconds on each (label checks
    and escapes) on the render thread, which takes its GIL turns from the scheduler while a scrape runs.
    Session ids are hex; a model name is escaped as the format asks."""
    sessions = [(s.id, _escaped(s.pipeline.model_name), s) for s in bridge.sessions.all()]
    out = []
    for attr, name, doc in PER_SESSION:
        out.append(f"# HELP {name} {doc}\n# TYPE {name} counter\n")
        out.extend(
            f'{name}{{model="{model}",session="{sid}"}} {float(getattr(s, attr))!r}\n'
            for sid, model, s in sessions
        )
    return "".join(out)


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def health(bridge: Bridge) -> tuple[bool, str]:
    """(healthy, why): the I/O loop turns and every scheduler thread runs and is not stuck."""
    if time.monotonic() - bridge.heartbeat > HEALTH_STALE_S:
        return False, "stalled: the I/O loop has not turned for 5 s"
    down = sorted(s.pipeline.model_name for s in bridge.schedulers.values() if not s.healthy)
    if down:
        return False, f"scheduler down or stuck: {', '.join(down)}"
    return True, "ok"


def backend_readiness(bridge: Bridge) -> dict[str, str]:
    """model -> "ready" or why its backend cannot serve now."""
    return {
        model: pipeline.engine.backend.unready_reason() or "ready"
        for models in bridge.pipelines.values()
        for model, pipeline in models.items()
    }


class HeapCollector(Collector):
    """How many objects the process froze out of the collector at start-up, and how long its garbage
    collections have paused it since (bridge.serving.heap)."""

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "python_gc_frozen_objects",
            "Objects frozen out of full collections at start-up",
            value=frozen_objects(),
        )
        pauses = HistogramMetricFamily(
            "python_gc_pause_seconds",
            "Garbage collections since the start-up heap froze, by generation: the process runs nothing else",
            labels=["generation"],
        )
        for generation, h in enumerate(GC_PAUSES):
            h = h.copy()  # a collection on another thread may record while this reads
            pauses.add_metric([str(generation)], h.cumulative(), h.total)
        yield pauses


class BridgeCollector(Collector):
    def __init__(self, bridge: Bridge) -> None:
        self.bridge = bridge
        self._gpu = GpuMemory() if bridge.config.gpu_metrics else None

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
        if self._gpu is not None:
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
            "Frames computed that no subscriber got, by reason (session_closed, failed, publish_queue_full)",
            labels=["model", "reason"],
        )
        stalls = CounterMetricFamily(
            f"{PREFIX}_subscriber_stalls",
            "A subscriber's queue was full: it missed frames from then until it read again (once per stall)",
            labels=["model"],
        )
        encoded = CounterMetricFamily(
            f"{PREFIX}_frames_encoded",
            "Per-session frame payloads encoded: only for sessions someone subscribes to",
            labels=["model"],
        )
        batches = CounterMetricFamily(
            f"{PREFIX}_batches_published", "batch/<pipeline> messages sent", labels=["model"]
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
            encoded.add_metric([s.model], s.frames_encoded)
            batches.add_metric([s.model], s.batches_published)
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
                g = pipeline.guard_stats
                guard.add_metric([model, "clamped"], g.clamped)
                guard.add_metric([model, "held"], g.held)
                restarts.add_metric([model], g.restarts)
        yield from (loads, seconds, published, dropped, stalls, encoded, batches, inputs, restarts_s)
        yield from (guard, restarts)

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
        for s in sessions:
            model = s.pipeline.model_name
            counts[(s.pipeline.name, model)] += 1
            depths[model] += len(s.inbox) + len(s.steps)
        for (name, model), n in sorted(counts.items()):
            open_.add_metric([name, model], n)
        for model, n in sorted(depths.items()):
            depth.add_metric([model], n)
        load = GaugeMetricFamily(
            f"{PREFIX}_scheduler_load",
            "Fraction of the last second each scheduler thread was busy (admission: serve --max-load)",
            labels=["model"],
        )
        busiest: dict[str, float] = {}  # a model with a voice variant has two schedulers
        for scheduler in b.schedulers.values():
            model = scheduler.pipeline.model_name
            busiest[model] = max(busiest.get(model, 0.0), scheduler.projected_load(0))
        for model, fraction in sorted(busiest.items()):
            load.add_metric([model], fraction)
        yield from (open_, depth, load)
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
            f"{PREFIX}_subscriptions_refused",
            "Frames-port subscriptions not stored: over the per-connection limit, or matching no topic",
            value=self.bridge.sockets.connections.refused,
        )
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
