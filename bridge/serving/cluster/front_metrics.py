"""/metrics, /healthz and /readyz of a front end over worker processes (`serve --workers N --metrics-port P`).

Each worker serves its own endpoint on a free loopback port (bridge.serving.metrics); the front end's
endpoint, on the public metrics port, is the same bounded server (MetricsEndpoint) answering for all:

    /metrics  every worker's figures with a `worker` label (its process figures renamed
              avatar_bridge_worker_*), and the front end's own: workers ready, restarts, sessions
              lost with a worker, error replies it sent itself, replies it could not deliver, CURVE
              handshakes refused, and GPU memory (once: the workers share the GPU and leave it out).
    /healthz  200 while the front end's loop turns and every worker is serving; 503 while one restarts.
    /readyz   200 once every worker answers its own /readyz with 200; JSON with each worker's answer
              and process id.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bridge.protocol.errors import ErrorCode
from bridge.serving.metrics import HEALTH_STALE_S, PREFIX, GpuMemory, MetricsEndpoint
from bridge.transport.zmq_sockets import HANDSHAKE_FAILURES

if TYPE_CHECKING:
    from bridge.serving.cluster.front_end import FrontEnd

FETCH_TIMEOUT_S = 2.0


def _get(port: int, path: str) -> tuple[int, bytes]:
    """GET a worker's endpoint on loopback: (status, body); (0, reason) when it does not answer.
    Plain http.client, not urllib: on Python 3.12 and later urllib's first request builds an opener
    whose HTTPS handler loads the system's CA certificates (ssl.create_default_context: 34 ms with
    OpenSSL 3.0 on two cores), CPU the front end's routing would lose at the first scrape."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=FETCH_TIMEOUT_S)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:
        return 0, str(exc).encode()
    finally:
        connection.close()


class FrontEndMetrics(MetricsEndpoint):
    def __init__(self, front: FrontEnd, host: str, port: int) -> None:
        self.front = front
        super().__init__(FrontEndCollector(front), host, port)

    def render(self) -> bytes:
        """Every worker's /metrics merged (worker_text), then the front end's own."""
        texts = []
        for w in self.front.workers:
            if w.metrics_port is None or not w.ready:
                continue
            status, text = _get(w.metrics_port, "/metrics")
            if status == 200:
                texts.append((w.index, text.decode()))
        return worker_text(texts).encode() + super().render()

    def health(self) -> tuple[bool, str]:
        if time.monotonic() - self.front.heartbeat > HEALTH_STALE_S:
            return False, "stalled: the front end's loop has not turned for 5 s"
        down = [str(w.index) for w in self.front.workers if not (w.ready and w.alive)]
        if down:
            return False, f"worker {', '.join(down)} restarting"
        if not self.front.frames.serving:
            return False, "the frames forwarder is restarting"
        return True, "ok"

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        ok, why = self.health()
        workers: dict[str, Any] = {}
        for w in self.front.workers:
            if w.metrics_port is None or not w.ready:
                workers[str(w.index)] = {"ready": False, "health": "starting"}
                continue
            status, body = _get(w.metrics_port, "/readyz")
            try:
                answer = json.loads(body) if status else {"ready": False, "health": body.decode()}
            except ValueError:
                answer = {"ready": False, "health": f"HTTP {status}"}
            workers[str(w.index)] = {**answer, "pid": w.process.pid if w.process is not None else None}
        ready = self.front.ready and ok and all(x.get("ready") is True for x in workers.values())
        frames = self.front.frames
        forwarder = {"alive": frames.alive, "pid": frames.pid}
        return ready, {"ready": ready, "health": why, "workers": workers, "frames_forwarder": forwarder}


# The sample names a family of each type writes, after its own name (exposition format 0.0.4, where
# prometheus_client writes info and state sets as gauges and gauge histograms as histograms;
# bridge.serving.metrics.session_text writes counters without a suffix). Other types: the name alone.
_SUFFIXES = {
    "counter": ("", "_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created", "_gcount", "_gsum"),
    "summary": ("", "_count", "_sum", "_created"),
    "info": ("_info",),
}


def worker_text(texts: list[tuple[int, str]]) -> str:
    """Workers' /metrics texts (worker index, text) as one exposition: each family once, its samples
    from every worker labelled `worker`, process and Python families (not ours: the front end has its
    own) renamed avatar_bridge_worker_*. The front end does this holding its GIL while every input it
    routes waits, so it works on whole family blocks with str.replace, a few scans per family, rather
    than on each line (12 workers of 171 sessions: 7.8 ms line by line on two cores; prometheus_client's
    parser took tens of milliseconds, which showed as a p99 spike at 2048 sessions). A family block is
    its HELP line, its TYPE line, then its samples, each starting with the family's name and a suffix
    of its type (generate_latest and bridge.serving.metrics.session_text both write them so)."""
    families: dict[str, tuple[str, list[str]]] = {}  # name -> (HELP and TYPE lines, sample blocks)
    for index, text in texts:
        for block in ("\n" + text).split("\n# HELP ")[1:]:
            help_rest, _, rest = block.partition("\n")
            type_line, _, samples = rest.partition("\n")
            name = help_rest.split(" ", 1)[0]
            kind = type_line.rsplit(" ", 1)[-1]
            samples = "\n" + samples.rstrip("\n")
            if not name.startswith(PREFIX):
                samples = samples.replace(f"\n{name}", f"\n{PREFIX}_worker_{name}")
                name, help_rest = f"{PREFIX}_worker_{name}", f"{PREFIX}_worker_{help_rest}"
                type_line = f"{type_line[:7]}{PREFIX}_worker_{type_line[7:]}"
            for suffix in _SUFFIXES.get(kind, ("",)):
                sample = f"\n{name}{suffix}"
                samples = samples.replace(sample + "{", f'{sample}{{worker="{index}",')
                samples = samples.replace(sample + " ", f'{sample}{{worker="{index}"}} ')
            parts = families.setdefault(name, (f"# HELP {help_rest}\n{type_line}\n", []))[1]
            if len(samples) > 1:
                parts.append(samples[1:] + "\n")
    return "".join(header + "".join(parts) for header, parts in families.values())


class FrontEndCollector(Collector):
    def __init__(self, front: FrontEnd) -> None:
        self.front = front
        self._gpu = GpuMemory() if front.config.gpu_metrics else None

    def collect(self) -> Iterator[Metric]:
        yield from self._own()
        if self._gpu is not None:
            yield from self._gpu.collect()  # once for the shared GPU; the workers leave it out

    def _own(self) -> Iterator[Metric]:
        front, stats = self.front, self.front.stats
        ready = GaugeMetricFamily(f"{PREFIX}_worker_ready", "1 while the worker serves", labels=["worker"])
        restarts = CounterMetricFamily(
            f"{PREFIX}_worker_restarts", "Worker processes restarted after exiting", labels=["worker"]
        )
        for w in front.workers:
            ready.add_metric([str(w.index)], float(w.ready and w.alive))
            restarts.add_metric([str(w.index)], stats.worker_restarts[w.index])
        yield from (ready, restarts)
        yield CounterMetricFamily(
            f"{PREFIX}_sessions_lost_with_worker",
            "Sessions closed because their worker exited",
            value=stats.sessions_lost,
        )
        errors = CounterMetricFamily(
            f"{PREFIX}_front_end_errors",
            "Error replies the front end sent itself (limits over all workers, no worker, busy link)",
            labels=["code", "name"],
        )
        for code in ErrorCode:
            errors.add_metric([str(code.value), code.name], stats.errors[code.name])
        yield errors
        replies = CounterMetricFamily(
            f"{PREFIX}_front_end_replies_dropped",
            "Replies the front end could not pass on: peer_full (client not reading), peer_gone",
            labels=["reason"],
        )
        for reason in ("peer_full", "peer_gone"):
            replies.add_metric([reason], stats.replies_dropped[reason])
        yield replies
        handshakes = CounterMetricFamily(
            f"{PREFIX}_front_end_handshake_failures",
            "CURVE handshakes the public sockets refused, by reason",
            labels=["reason"],
        )
        failures = stats.handshake_failures + front.frames.handshake_failures()  # requests + frames
        for reason in sorted({*HANDSHAKE_FAILURES.values(), *failures}):
            handshakes.add_metric([reason], failures[reason])
        yield handshakes
        yield CounterMetricFamily(
            f"{PREFIX}_front_end_subscriptions_refused",
            "Frames-port subscriptions not stored: over the per-connection or total limit, or matching "
            "no topic",
            value=front.frames.refused,
        )
        yield CounterMetricFamily(
            f"{PREFIX}_front_end_subscriber_stalls",
            "Frames-port messages a subscriber with a full queue missed (once per stall, as the single "
            "bridge's subscriber_stalls)",
            value=front.frames.stalls,
        )
        yield CounterMetricFamily(
            f"{PREFIX}_frames_forwarder_restarts",
            "Frames forwarder processes restarted after exiting",
            value=front.frames.restarts,
        )
