"""A well-behaved motion session measured while another client attacks the bridge (issue 11).

`Bystander` drives one motion session at 60 Hz from its own thread against a real running bridge
(in-process or a separate process: it needs only the ports), one `features` row per tick, so every
input it sends must come back as exactly one frame. `stop()` stops sending, waits for the frames
still in flight, closes the session and returns the report: frames sent, received and lost, seq
gaps, error replies, latency (input captured -> frame received) p50/p99.

    bystander = Bystander(bridge.sockets.request_port)
    bystander.start()
    ... attack ...
    report = bystander.stop()
    assert report.clean, report

API (kept stable; bench/pressure.py imports it): `Bystander(request_port, *, host, rate_hz, server_key,
client_keys, drain_s, settle_s)`, `start()`, `stop() -> BystanderReport`, `report() -> BystanderReport` (a
snapshot while running), `session` (its id once started). `streaming_beside(request_port)` wraps an
attack: a bystander streams through it (at least `min_s`) and must come out clean.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridge.clients.harness.client import BridgeClient

_ROW = np.random.default_rng(11).standard_normal((1, 35)).astype(np.float32)


@dataclass(frozen=True)
class BystanderReport:
    sent: int
    received: int
    lost: int  # inputs sent whose frame never arrived (counted after the drain on stop)
    gaps: int  # frame seq numbers skipped (the bridge numbers a session's frames 0, 1, 2, ...)
    errors: tuple[dict[str, Any], ...]  # error replies the bystander got
    invalid_frames: tuple[str, ...]  # frames that broke the contract
    latency_p50_ms: float
    latency_p99_ms: float
    latencies_ms: tuple[float, ...] = field(repr=False, default=())

    @property
    def clean(self) -> bool:
        """Nothing lost, no error, no invalid frame, and it actually streamed."""
        return (
            self.sent > 0
            and self.lost == 0
            and self.gaps == 0
            and not self.errors
            and not self.invalid_frames
        )


class Bystander:
    def __init__(
        self,
        request_port: int,
        *,
        host: str = "127.0.0.1",
        rate_hz: float = 60.0,
        server_key: bytes | None = None,
        client_keys: tuple[bytes, bytes] | None = None,
        drain_s: float = 5.0,
        settle_s: float = 0.05,
    ) -> None:
        self.request_port = request_port
        self.host = host
        self.rate_hz = rate_hz
        self.server_key = server_key
        self.client_keys = client_keys
        self.drain_s = drain_s
        # Between subscribing and the first input. With `serve --workers` a subscription travels the
        # forwarder and a worker's I/O loop: on a loaded 2-core box that took up to 0.4 s.
        self.settle_s = settle_s
        self.session: str | None = None
        self._lock = threading.Lock()
        self._sent = 0
        self._seqs: list[int] = []
        self._latencies_ms: list[float] = []
        self._errors: list[dict[str, Any]] = []
        self._invalid: list[str] = []
        self._sending = threading.Event()
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="bystander", daemon=True)

    # ------------------------------------------------------------------ API
    def start(self, timeout_s: float = 10.0) -> None:
        """Open the session (subscribed before its first input) and start streaming."""
        self._sending.set()
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise TimeoutError("bystander could not open its session")
        if self._failure is not None:
            raise RuntimeError("bystander failed to start") from self._failure

    def stop(self) -> BystanderReport:
        """Stop sending, wait up to `drain_s` for the frames in flight, close the session, report."""
        self._sending.clear()
        self._thread.join(timeout=self.drain_s + 10.0)
        if self._failure is not None:
            raise RuntimeError("bystander thread failed") from self._failure
        return self.report()

    def report(self) -> BystanderReport:
        with self._lock:
            seqs = sorted(set(self._seqs))
            latencies = tuple(self._latencies_ms)
            gaps = (seqs[-1] + 1 - len(seqs)) if seqs else 0
            p50, p99 = (
                (float(np.percentile(latencies, 50)), float(np.percentile(latencies, 99)))
                if latencies
                else (float("nan"), float("nan"))
            )
            return BystanderReport(
                sent=self._sent,
                received=len(self._seqs),
                lost=self._sent - len(seqs),
                gaps=gaps,
                errors=tuple(self._errors),
                invalid_frames=tuple(self._invalid),
                latency_p50_ms=p50,
                latency_p99_ms=p99,
                latencies_ms=latencies,
            )

    # ------------------------------------------------------------------ thread
    def _run(self) -> None:
        # ZeroMQ sockets belong to one thread: the client is made, used and closed here.
        try:
            client = BridgeClient(
                self.host,
                self.request_port,
                timeout_s=5.0,
                server_key=self.server_key,
                client_keys=self.client_keys,
            )
        except BaseException as exc:
            self._failure = exc
            self._ready.set()
            return
        try:
            client.hello("bystander")
            self.session = client.open("motion")["session"]
            client.subscribe(f"frame/{self.session}".encode())  # its own frames only
            time.sleep(self.settle_s)  # the subscription reaches the bridge before the first frame
            self._ready.set()
            self._stream(client, self.session)
            self._drain(client)
            client.close_session(self.session)
        except BaseException as exc:
            self._failure = exc
            self._ready.set()
        finally:
            self._collect(client)
            client.close()

    def _stream(self, client: BridgeClient, session: str) -> None:
        period = 1.0 / self.rate_hz
        next_t = time.perf_counter()
        seq = 0
        while self._sending.is_set():
            client.send_features(session, seq, _ROW)
            with self._lock:
                self._sent += 1
            seq += 1
            next_t += period
            while (remaining := next_t - time.perf_counter()) > 0:
                self._collect(client, wait_ms=max(1, int(remaining * 1000)))
            if time.perf_counter() - next_t > 0.25:  # fell far behind (machine busy): do not burst
                next_t = time.perf_counter()

    def _drain(self, client: BridgeClient) -> None:
        deadline = time.monotonic() + self.drain_s
        while time.monotonic() < deadline:
            self._collect(client, wait_ms=20)
            with self._lock:
                if len(set(self._seqs)) >= self._sent:
                    return

    def _collect(self, client: BridgeClient, wait_ms: int = 0) -> None:
        self._keep(client, client.recv_frames(wait_ms))

    def _keep(self, client: BridgeClient, frames: list[Any]) -> None:
        client.poll_replies()
        with self._lock:
            for r in frames:
                header = r.frame.header
                if header.session != self.session:
                    continue
                self._seqs.append(header.seq)
                self._latencies_ms.append((r.recv_ns - header.t_capture_ns) / 1e6)
            self._errors.extend(client.errors)
            client.errors.clear()
            self._invalid.extend(client.invalid_frames)
            client.invalid_frames.clear()


@contextmanager
def streaming_beside(request_port: int, *, settle_s: float = 0.05, min_s: float = 1.0) -> Iterator[Bystander]:
    """A bystander streams through the block (`min_s` at least); after it, it must have kept every frame."""
    bystander = Bystander(request_port, drain_s=5.0, settle_s=settle_s)
    bystander.start()
    t0 = time.monotonic()
    try:
        yield bystander
    finally:
        time.sleep(max(0.0, min_s - (time.monotonic() - t0)))
        report = bystander.stop()
    assert report.clean, report
    assert report.received >= 30, report
