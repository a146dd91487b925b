"""The bridge server: loads engines, owns the sockets, dispatches requests, reaps idle sessions.

Threads: one I/O thread (this module's `serve_forever`) owns the ROUTER socket, decodes and validates
every message and answers requests; one scheduler thread per pipeline runs the engines and publishes
frames; optionally an HTTP thread serves metrics, health and readiness (bridge.serving.metrics). A bad
message costs one error reply and never reaches a scheduler.

I/O in batches: each turn reads the ROUTER socket into a per-client backlog (at most DRAIN_MESSAGES
messages or DRAIN_BYTES held), handles it round-robin across clients by cost (a message costs one unit
per `inputs` item, or one, plus one per COST_BYTES: a client whose message cost k units sits out the
next k - 1 rounds, so a flooding client's backlog waits behind one message of each other client and
a 4096-item message behind 4096 cheap ones), at most DRAIN_COST units a turn (the rest waits for the
next turn), and hands each scheduler the turn's inputs as one batch (`submit_many`, one lock round); a
reply to a client with inputs in the batch hands it over first, so replies keep each connection's
request order. An `inputs` message carries many sessions' inputs; each item is handled exactly as its
own `input` would be, except that its items' errors come back as one reply listing them
(docs/protocol.md section 4.7). A message whose handling fails in an unforeseen way is logged and
counted (an INTERNAL error) and the loop goes on: no message ends `serve_forever`.

An engine that fails to load (truncated or corrupt file, mismatched manifest) is refused with an
error naming it and the bridge starts with the others; with none left it does not start.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import zmq

from bridge import __version__
from bridge.backends import load_engine
from bridge.pipelines.base import Pipeline
from bridge.pipelines.motion import FEATURE_COLS
from bridge.pipelines.registry import PIPELINES, attach_bodies, attach_voices
from bridge.protocol.batch_frames import NEW_BATCH_GROUP
from bridge.protocol.codec import ProtocolError
from bridge.protocol.errors import ErrorCode
from bridge.protocol.events import encode_closed_event, encode_opened_event, encode_rig, event_topic
from bridge.protocol.replies import error_reply, item_failure, items_error_reply, reply
from bridge.protocol.requests import (
    IMAGE_FORMATS,
    MAX_INPUT_ITEMS,
    MAX_ITEM_FAILURES,
    AudioInput,
    Calibrate,
    CloseSession,
    FeaturesInput,
    Hello,
    ImageInput,
    Input,
    Inputs,
    ItemError,
    JpegInput,
    ListModels,
    OpenSession,
    Ping,
    Request,
    RequestError,
    decode_item,
    decode_request,
)
from bridge.runtime.backend import BackendUnavailable, ModelRefused
from bridge.runtime.manifest import ManifestError, find_manifests
from bridge.serving.calibrations import Calibrations
from bridge.serving.group_owners import GroupOwners
from bridge.serving.publisher import GatedOutlet
from bridge.serving.scheduler import Scheduler
from bridge.serving.sessions import Session, SessionTable
from bridge.serving.stats import BridgeStats
from bridge.transport.zmq_sockets import BridgeSockets, Delivery, TransportConfig, connection_of

if TYPE_CHECKING:
    from bridge.serving.metrics import MetricsServer

log = logging.getLogger(__name__)

REAP_INTERVAL_S = 0.25
POLL_MS = 20
# One drain of the request socket: at most this many messages or bytes, so the reaper and queued error
# replies still run between drains and a drain of max-size messages holds a bounded amount of memory.
DRAIN_MESSAGES = 1000
DRAIN_BYTES = 64 * 1024 * 1024
# Work handled per turn, in cost units (one per message or `inputs` item, one per COST_BYTES): ~30 ms
# of junk items on a 2-core box, so no client delays the others' next turn by more.
DRAIN_COST = 4096
COST_BYTES = 64 * 1024
# Frames this large are read as views of libzmq's buffer: copying a 6 MB image costs ~1 ms of GIL.
ZERO_COPY_BYTES = 64 * 1024
# Sample-rate changes of one session's audio per second: each restarts its analysis (a new resampler
# and stream), so a client alternating rates costs a restart per input.
MAX_RATE_CHANGES_PER_S = 2
# A session opened this recently without a frame yet is not in its model's measured load: admission
# counts it as coming.
FRESH_SESSION_S = 2.0
# Error replies the scheduler threads may queue for the I/O thread; beyond it the oldest go (counted).
MAX_PENDING_ERRORS = 1024


@dataclass(frozen=True)
class ServeConfig:
    transport: TransportConfig = field(default_factory=TransportConfig)
    models_dir: Path = Path("models")
    backend: str = "onnxruntime"
    backend_options: dict[str, Any] = field(default_factory=dict)
    # Per model: its backend where that is not `backend` (serve --backend-for MODEL=BACKEND), and the
    # constructor options of each such backend (those of `backend` are `backend_options`).
    model_backends: dict[str, str] = field(default_factory=dict)
    other_backend_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)  # pipeline -> default model name
    idle_timeout_s: float = 10.0
    # A model's scheduler busy this fraction of the time (measured, projected with one more session)
    # refuses new sessions: AT_CAPACITY (docs/operations.md, "Capacity").
    max_load: float = 0.85
    max_sessions: int = 256
    max_sessions_per_client: int = 64  # sessions one client (connection, or CURVE key) may hold open
    max_pending: int = 64
    # Longest wait before a call for the sessions due within it (docs/scheduling.md): 16 sessions whose
    # inputs straddle two drains make one call, not two.
    max_queue_delay_us: int = 1000
    prepare_workers: int = 1  # pre-processing threads per model (face detection and crop release the GIL)
    # Scheduler clock (docs/scheduling.md): "adaptive" starts a round on arrival; "tick" on a fixed
    # clock at `tick_hz` (0: each model's fps), waiting at most `gather_window_us` at each tick.
    scheduler: str = "adaptive"
    tick_hz: float = 0.0
    gather_window_us: int = 1000
    client_fair_work: int = 0  # work units clients share in a scheduler (0: its largest batch, >= 64)
    ports_file: Path | None = None
    metrics_port: int | None = None  # HTTP /metrics, /healthz, /readyz; 0 picks a free port
    metrics_host: str = "127.0.0.1"
    # GPU memory (nvidia-smi) in /metrics. A worker leaves it to its front end: the GPU is shared, so
    # one query per scrape does where there were one per worker. `serve --no-gpu-metrics` turns it off.
    gpu_metrics: bool = True
    extra_model_dirs: tuple[Path, ...] = ()  # more model folders (the converted face tracker)

    def backend_for(self, model: str) -> tuple[str, dict[str, Any]]:
        """The backend kind that serves `model`, and its options."""
        backend = self.model_backends.get(model, self.backend)
        if backend == self.backend:
            return backend, self.backend_options
        return backend, self.other_backend_options.get(backend, {})


@dataclass
class _ItemFailures:
    """The failed items of one `inputs` message, answered in one error reply once none of its items
    waits in the drain's batch (docs/protocol.md section 4.7)."""

    request_id: int
    items: int  # the message's item count
    failed: list[dict[str, Any]] = field(default_factory=list)
    waiting: int = 0  # its items queued in the drain's batch, not yet handed to their scheduler


# An input of the drain in progress, validated and waiting for its scheduler's batch: (reply envelope,
# session, input, index in its `inputs` message and that message's failures, or None for an `input`).
_Queued = tuple[tuple[bytes, ...], Session, Input, tuple[int, _ItemFailures] | None]


@dataclass(frozen=True)
class EngineLoad:
    """One engine load attempt at start, for the log, readiness and the engine_loads metric."""

    model: str
    path: Path
    seconds: float
    error: str | None = None


class Bridge:
    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.stats = BridgeStats()
        self.sessions = SessionTable(config.max_sessions)
        self.pipelines: dict[str, dict[str, Pipeline[Any, Any]]] = {}  # pipeline name -> model -> pipeline
        self.defaults: dict[str, str] = {}
        self.engine_loads: list[EngineLoad] = []
        self.ready = False  # engines loaded and schedulers running
        self.heartbeat = time.monotonic()  # last turn of the I/O loop, for /healthz
        self.metrics: MetricsServer | None = None
        self._load_engines()
        self.sockets = BridgeSockets(config.transport)
        # Ending a session and publishing a frame exclude each other, so no frame of a session follows
        # its `closed` event; `_live` holds the frame topics of open sessions, `_groups` those opened
        # with a batch group (docs/protocol.md 5.3), with their group.
        self._end_lock = threading.Lock()
        self._live: set[bytes] = set()
        self._groups: dict[bytes, bytes] = {}
        self._outlet = GatedOutlet(self.sockets, self._end_lock, self._live, self._groups)
        # With a ZAP handler (CURVE with an allow-list) a client is its public key, read per message.
        self._keyed = config.transport.curve_client_keys is not None
        self.schedulers: dict[Pipeline[Any, Any], Scheduler] = {
            p: Scheduler(
                p,
                self._publish_frame,
                self._report_error,
                self.stats.child(p.model_name),
                outlet=self._outlet,
                max_pending=config.max_pending,
                max_queue_delay_us=config.max_queue_delay_us,
                prepare_workers=config.prepare_workers,
                tick_hz=(config.tick_hz or p.fps) if config.scheduler == "tick" else 0.0,
                gather_window_us=config.gather_window_us,
                fair_work=config.client_fair_work,
            )
            for models in self.pipelines.values()
            for served in models.values()
            for p in (served, *served.variants)  # a face tracker with a voice has its own
        }
        self._pending_errors: deque[tuple[tuple[bytes, ...], bytes]] = deque(maxlen=MAX_PENDING_ERRORS)
        self._batch: dict[Scheduler, list[_Queued]] = {}  # the drain's inputs, per scheduler
        self._batched: set[tuple[bytes, ...]] = set()  # envelopes of clients with inputs in it
        # Requests read and not yet handled, per client in arrival order, with their total size, and
        # each backlogged client's rounds to sit out (the cost of its last message, less one).
        self._backlog: dict[bytes, deque[list[bytes | memoryview]]] = {}
        self._backlog_messages = 0
        self._backlog_bytes = 0
        self._debt: dict[bytes, int] = {}
        self._group_owners: GroupOwners[bytes, bytes] = GroupOwners()  # batch group -> its client
        self.calibrations = Calibrations()  # voice calibrations, off this thread
        self._stop = threading.Event()

    # ----------------------------------------------------------------- lifecycle
    def _load_engines(self) -> None:
        folders = (self.config.models_dir, *self.config.extra_model_dirs)
        manifests = [m for folder in folders for m in find_manifests(folder)]
        if not manifests:
            raise FileNotFoundError(f"no model manifests (*.manifest.json) in {self.config.models_dir}")
        unknown = sorted(set(self.config.model_backends) - {m.name for m in manifests})
        if unknown:  # a backend asked for by model name: a typo must not pass unnoticed
            raise ValueError(f"backend chosen for unknown model(s) {', '.join(unknown)}")
        for manifest in manifests:
            factory = PIPELINES.get(manifest.task)
            if factory is None:
                log.warning("skipping %s: no pipeline for task %r", manifest.name, manifest.task)
                continue
            t0 = time.perf_counter()
            try:
                backend, options = self.config.backend_for(manifest.name)
                engine = load_engine(manifest, backend=backend, **options)
            except Exception as exc:  # a corrupt file raises whatever its parser raises
                load = EngineLoad(
                    manifest.name, manifest.onnx_path, time.perf_counter() - t0, _load_error(exc)
                )
                self.engine_loads.append(load)
                log.error(
                    "refusing engine %s (%s): %s; the bridge starts without it",
                    manifest.name,
                    manifest.onnx_path,
                    load.error,
                )
                continue
            self.engine_loads.append(EngineLoad(manifest.name, manifest.onnx_path, time.perf_counter() - t0))
            log.info(
                "loaded %s (%s) in %.0f ms",
                manifest.name,
                backend,
                (time.perf_counter() - t0) * 1e3,
            )
            self.pipelines.setdefault(factory.name, {})[manifest.name] = factory(engine)
        if not self.pipelines:
            failed = "; ".join(f"{x.model}: {x.error}" for x in self.engine_loads if x.error)
            raise ValueError(
                f"no engine could be loaded from {self.config.models_dir} ({failed or 'no pipelines'})"
            )
        for name, wanted in self.config.models.items():
            if wanted not in self.pipelines.get(name, {}):  # asked for by name: refused or absent is fatal
                raise ValueError(
                    f"default model {wanted!r} for {name} not loaded from {self.config.models_dir}"
                )
        for name, models in self.pipelines.items():
            # A pipeline class may ask to be the default (face tracking over the FLAME encoder).
            first = min(models, key=lambda m: (not getattr(models[m], "preferred", False), m))
            self.defaults[name] = self.config.models.get(name) or first
        attach_voices(self.pipelines, self.defaults)
        attach_bodies(self.pipelines)

    def start(self) -> None:
        if self.config.metrics_port is not None:  # first: a missing extra or a taken port stops the start
            from bridge.serving.metrics import MetricsServer  # prometheus-client is an optional extra

            self.metrics = MetricsServer(self, self.config.metrics_host, self.config.metrics_port)
        for scheduler in self.schedulers.values():
            scheduler.start()
        self.ready = True
        if self.config.ports_file is not None:
            metrics = self.metrics.port if self.metrics is not None else None
            write_ports_file(
                self.config.ports_file, self.sockets.request_port, self.sockets.frames_port, metrics
            )

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self.ready = False
        if self.metrics is not None:
            self.metrics.close()
        for session in self.sessions.all():
            self._end_session(session, "shutdown")
        self.calibrations.close()
        for scheduler in self.schedulers.values():
            scheduler.stop()
        for models in self.pipelines.values():
            for pipeline in models.values():
                pipeline.engine.close()
        self.sockets.close()

    def serve_forever(self) -> None:
        """Run the I/O loop until `stop()`; call `start()` first."""
        poller = zmq.Poller()
        poller.register(self.sockets.router, zmq.POLLIN)
        # Subscriptions wake the loop too (the frames socket's own descriptor, safe to poll from here):
        # the bridge applies them itself (manual mode), so one made just before an `open` must be in
        # place before that open's `opened` event goes out.
        poller.register(self.sockets.subscription_fd, zmq.POLLIN)
        next_reap = time.monotonic() + REAP_INTERVAL_S
        while not self._stop.is_set():
            self.heartbeat = time.monotonic()
            ready = poller.poll(0 if self._backlog else POLL_MS)
            self.sockets.pump_subscriptions()  # here, before the requests, and not on a scheduler's publish
            if ready or self._backlog:
                self._drain()
            self.stats.handshake_failures.update(self.sockets.handshake_failures())
            while self._pending_errors:
                envelope, payload = self._pending_errors.popleft()
                self._send(envelope, payload)
            for envelope, payload in self.calibrations.finished():
                self._send(envelope, payload)
            now = time.monotonic()
            if now >= next_reap:
                next_reap = now + REAP_INTERVAL_S
                for scheduler in self.schedulers.values():
                    scheduler.supervise(now)  # restarts a dead scheduler thread (bridge.serving.scheduler)
                for session in self.sessions.idle(now, self.config.idle_timeout_s):
                    log.info("reaping idle session %s", session.id)
                    self.stats.sessions_reaped += 1
                    self._end_session(session, "idle_timeout")

    # ----------------------------------------------------------------- dispatch
    def _drain(self) -> None:
        """Read what is queued (bounded), handle up to DRAIN_COST of it round-robin across clients by
        cost, then submit the inputs to each scheduler as one batch."""
        self._read_requests()
        budget = DRAIN_COST
        backlog, debt = self._backlog, self._debt
        while backlog and budget > 0:
            owners = list(backlog)
            floor = min(debt.get(o, 0) for o in owners)  # a round where nobody may go lifts everyone
            for owner in owners:
                owed = debt.get(owner, 0) - floor
                if owed > 0:
                    debt[owner] = owed - 1
                    continue
                queue = backlog[owner]
                parts = queue.popleft()
                self._backlog_messages -= 1
                self._backlog_bytes -= sum(len(p) for p in parts)
                cost = self._handle_message(parts, owner)
                budget -= cost
                debt[owner] = cost - 1
                if not queue:
                    del backlog[owner]
                    del debt[owner]
                if budget <= 0:
                    break
        self._submit_batch()

    def _read_requests(self) -> None:
        """Move queued requests into the backlog while it holds less than DRAIN_MESSAGES and
        DRAIN_BYTES; past that they wait in libzmq (per client at most `inbound_hwm`, then TCP)."""
        while self._backlog_messages < DRAIN_MESSAGES and self._backlog_bytes < DRAIN_BYTES:
            try:
                frames = self.sockets.router.recv_multipart(flags=zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            parts = [f.bytes if len(f) < ZERO_COPY_BYTES else f.buffer for f in frames]
            identity = frames[0].bytes
            # A client is its CURVE key, or its connection: the routing id alone would let a new
            # connection that reuses it (ZMQ_ROUTING_ID) inherit the sessions of one that ended.
            owner = (
                b"key:" + _user_id(frames[-1], identity)
                if self._keyed
                else b"id:%s/%d" % (identity, connection_of(frames[-1]))
            )
            self._backlog.setdefault(owner, deque()).append(parts)
            self._backlog_messages += 1
            self._backlog_bytes += sum(len(p) for p in parts)

    def _handle_message(self, parts: list[bytes | memoryview], owner: bytes) -> int:
        """Handle one message; its cost. A failure nobody foresaw costs this message only."""
        try:
            items = self._on_message(parts, owner)
        except Exception:
            log.exception("handling a message failed; serving on")
            self.stats.count_error(ErrorCode.INTERNAL.name)
            items = 1
        return max(1, items) + len(parts[-1]) // COST_BYTES

    def _submit_batch(self) -> None:
        """Hand each scheduler its queued inputs in one call, then answer them: OVERLOADED for the
        refused, `ack` for the accepted that asked for one (an `inputs` message's failed items in its
        one error reply, once none of its items waits)."""
        batch, self._batch = self._batch, {}
        self._batched.clear()
        for scheduler, queued in batch.items():
            try:
                accepted = scheduler.submit_many([(session, item) for _, session, item, _ in queued])
            except Exception as exc:  # a bug here must cost these inputs, not the I/O thread
                log.exception("queueing %d inputs failed", len(queued))
                for envelope, session, item, of in queued:
                    self._refuse(envelope, ErrorCode.INTERNAL, f"internal error: {exc}", item, session, of)
                    self._settle(envelope, of)
                continue
            for (envelope, session, item, of), ok in zip(queued, accepted, strict=True):
                if not ok:
                    self.stats.inputs_dropped += 1
                    message = (
                        f"session {session.id} is over its pending bound (its own, {scheduler.max_pending} "
                        "frames, or its client's fair share of the model's queue); input dropped"
                    )
                    self._refuse(envelope, ErrorCode.OVERLOADED, message, item, session, of)
                elif item.ack:
                    extra = {} if of is None else {"item": of[0]}
                    self._send(envelope, reply("ack", item.id, session=session.id, seq=item.seq, **extra))
                self._settle(envelope, of)

    def _settle(self, envelope: tuple[bytes, ...], of: tuple[int, _ItemFailures] | None) -> None:
        """An item of an `inputs` message is answered: the message's error reply once none waits."""
        if of is not None:
            of[1].waiting -= 1
            self._answer_items(envelope, of[1])

    def _refuse(
        self,
        envelope: tuple[bytes, ...],
        code: ErrorCode,
        message: str,
        item: Input,
        session: Session,
        of: tuple[int, _ItemFailures] | None,
    ) -> None:
        """An input the scheduler did not take: its own error reply, or an entry of its message's."""
        if of is None:
            self._error(envelope, code, message, item.id, session.id)
        else:
            self._fail_item(of[1], of[0], code, message, item.id, session.id)

    def _fail_item(
        self,
        failures: _ItemFailures,
        index: int,
        code: ErrorCode,
        message: str,
        item_id: int,
        session: str | None,
    ) -> None:
        self.stats.count_error(code.name)
        failures.failed.append(item_failure(code, message, index, item_id, session))

    def _answer_items(self, envelope: tuple[bytes, ...], failures: _ItemFailures) -> None:
        """The message's one error reply listing its failed items, once none of them waits."""
        if failures.waiting or not failures.failed:
            return
        failures.failed.sort(key=lambda f: int(f["item"]))
        self._send(envelope, items_error_reply(failures.request_id, failures.items, failures.failed))
        failures.failed = []

    def _on_message(self, parts: list[bytes | memoryview], owner: bytes) -> int:
        """Handle one request; how many inputs it carried (an `inputs` message's items; else 1)."""
        # ROUTER prepends the peer identity; a REQ-style client adds an empty delimiter.
        # [identity, payload] from a DEALER, [identity, b"", payload] from a REQ-style client.
        delimited = len(parts) > 2 and parts[1] == b""
        identity = bytes(parts[0])  # small: already bytes
        envelope = (identity, b"") if delimited else (identity,)
        body = parts[2:] if delimited else parts[1:]
        if len(body) != 1 or not body[0]:
            self._error(envelope, ErrorCode.MALFORMED, "expected exactly one non-empty frame per message")
            return 1
        payload = body[0]
        t0 = time.perf_counter()
        try:
            request = decode_request(payload, self.config.transport.max_message_bytes)
        except RequestError as exc:
            self._error(envelope, exc.code, exc.message, exc.request_id, exc.session)
            return 1
        self.stats.observe("decode", time.perf_counter() - t0)
        try:
            self._handle(envelope, owner, request)
        except ProtocolError as exc:
            self._error(envelope, exc.code, exc.message, request.id, getattr(request, "session", None))
        except Exception as exc:
            log.exception("internal error handling %s", type(request).__name__)
            self._error(envelope, ErrorCode.INTERNAL, f"internal error: {exc}", request.id)
        return len(request.items) if isinstance(request, Inputs) else 1

    def _handle(self, envelope: tuple[bytes, ...], owner: bytes, request: Request) -> None:
        if isinstance(request, (ImageInput, JpegInput, AudioInput, FeaturesInput)):
            self._on_input(envelope, owner, request)
            return
        if isinstance(request, Inputs):
            self._on_inputs(envelope, owner, request)
            return
        if isinstance(request, (CloseSession, Calibrate)) and envelope in self._batched:
            self._submit_batch()  # this client's inputs before a close or a calibration go first
        if isinstance(request, Hello):
            self._send(
                envelope,
                reply(
                    "hello",
                    request.id,
                    server=f"avatar-bridge {__version__}",
                    frames_port=self.sockets.frames_port,
                    max_message_bytes=self.config.transport.max_message_bytes,
                    pipelines=sorted(self.pipelines),
                    idle_timeout_s=self.config.idle_timeout_s,
                    max_sessions_per_client=self.config.max_sessions_per_client,
                    max_input_items=MAX_INPUT_ITEMS,  # `inputs` is served (protocol 1.1)
                    image_formats=list(IMAGE_FORMATS),  # JPEG images are decoded (protocol 1.3)
                ),
            )
        elif isinstance(request, ListModels):
            self._send(envelope, reply("list", request.id, models=self._model_list()))
        elif isinstance(request, OpenSession):
            self._on_open(envelope, owner, request)
        elif isinstance(request, CloseSession):
            session = self._session(request.session, owner)
            self._end_session(session, "client")
            self._send(
                envelope,
                reply("close", request.id, session=session.id, frames_published=session.frames_published),
            )
        elif isinstance(request, Calibrate):
            session = self._session(request.session, owner)
            # Without audio: the neutral face (face tracking, a flag set here); with it: the voice's five
            # vowels (speech, measured on the calibration thread; bounded by MAX_CALIBRATION_S).
            voice = request.samples is not None
            calibrate = getattr(session.pipeline, "calibrate_voice" if voice else "calibrate", None)
            if calibrate is None:
                kind = "voice" if voice else "neutral"
                raise ProtocolError(
                    ErrorCode.BAD_VALUE, f"model {session.pipeline.model_name} has no {kind} calibration"
                )
            session.last_seen = time.monotonic()  # a calibration is activity: it keeps the session
            if voice:
                self._calibrate_voice(envelope, owner, session, request, calibrate)
                return
            calibrate(session.state)
            self._send(envelope, reply("calibrate", request.id, session=session.id))
        elif isinstance(request, Ping):
            if request.session is not None:
                self._session(request.session, owner).last_seen = time.monotonic()
            self._send(envelope, reply("pong", request.id, t_ns=time.time_ns()))

    def _calibrate_voice(
        self,
        envelope: tuple[bytes, ...],
        owner: bytes,
        session: Session,
        request: Calibrate,
        calibrate_voice: Callable[..., dict[str, Any] | None],
    ) -> None:
        """Measure the voice on the calibration thread; its reply goes out from this thread when done."""
        rate, samples = request.rate, request.samples

        def job() -> bytes:
            try:
                measured = calibrate_voice(session.state, rate, samples) or {}
            except ProtocolError as exc:
                self.stats.count_error(exc.code.name)
                return error_reply(exc.code, exc.message, request.id, session.id)
            except Exception as exc:
                log.exception("voice calibration failed for session %s", session.id)
                self.stats.count_error(ErrorCode.INTERNAL.name)
                return error_reply(ErrorCode.INTERNAL, f"internal error: {exc}", request.id, session.id)
            finally:
                session.last_seen = time.monotonic()
            return reply("calibrate", request.id, session=session.id, **measured)

        refused = self.calibrations.submit(owner, envelope, job)
        if refused is not None:
            raise ProtocolError(ErrorCode.OVERLOADED, f"calibration refused: {refused}")

    def _on_open(self, envelope: tuple[bytes, ...], owner: bytes, request: OpenSession) -> None:
        models = self.pipelines.get(request.pipeline)
        if models is None:
            raise ProtocolError(
                ErrorCode.UNKNOWN_PIPELINE,
                f"unknown pipeline '{request.pipeline}' "
                f"(this bridge serves: {', '.join(sorted(self.pipelines))})",
            )
        model = request.model or self.defaults[request.pipeline]
        pipeline = models.get(model)
        if pipeline is None:
            raise ProtocolError(
                ErrorCode.UNKNOWN_MODEL,
                f"no {request.pipeline} model '{model}' (have: {', '.join(sorted(models))})",
            )
        if len(self.sessions) >= self.sessions.max_sessions:
            raise ProtocolError(
                ErrorCode.SESSION_LIMIT, f"session limit of {self.sessions.max_sessions} reached"
            )
        quota = self.config.max_sessions_per_client
        if self.sessions.owned_by(owner) >= quota:
            raise ProtocolError(
                ErrorCode.CLIENT_SESSION_LIMIT, f"this client already has {quota} sessions open (its quota)"
            )
        group = self._group_for(owner, request.batch_group)
        pipeline = pipeline.variant(request.options)  # e.g. face tracking with `speech: true`
        self._admit(pipeline)
        state = pipeline.open_session(request.options)
        session = Session(self.sessions.new_id(), pipeline, state, envelope, owner)
        with self._end_lock:
            self.sessions.add(session)
            self._live.add(session.topic)
            if group:
                self._groups[session.topic] = group
                self._group_owners.add(group, owner)
        self.stats.sessions_opened += 1
        description: dict[str, Any] = {
            "pipeline": pipeline.name,
            "model": model,
            "fps": pipeline.fps,
            "rig": encode_rig(pipeline.rig(state)),
        }
        self.sockets.publish_event(event_topic(session.id), encode_opened_event(session.id, **description))
        extra: dict[str, Any] = {"feature_cols": FEATURE_COLS} if "features" in pipeline.accepts else {}
        if group:
            extra["batch_group"] = group.decode()
        self._send(
            envelope,
            reply(
                "open",
                request.id,
                session=session.id,
                topic=session.topic.decode(),
                accepts=list(pipeline.accepts),
                **description,
                **extra,
            ),
        )

    def _group_for(self, owner: bytes, asked: str) -> bytes:
        """The batch group of a session `owner` opens: none, a new unguessable one (`batch_group: true`),
        or the one named, if no other client holds it (NOT_OWNER)."""
        if not asked:
            return b""
        if asked == NEW_BATCH_GROUP:
            while (group := secrets.token_urlsafe(12).encode()) in self._group_owners:  # 96 bits
                pass
            return group
        group = asked.encode()
        holder = self._group_owners.owner(group)
        if holder is not None and holder != owner:
            raise ProtocolError(
                ErrorCode.NOT_OWNER,
                f"batch group '{asked}' belongs to another client; open with batch_group: true for a new one",
            )
        return group

    def _admit(self, pipeline: Pipeline[Any, Any]) -> None:
        """Refuse a new session (AT_CAPACITY) when its model's measured load leaves no room for it."""
        scheduler = self.schedulers[pipeline]
        # Those opened lately that made no frame yet are not in the measure: count them as coming.
        since = time.monotonic() - FRESH_SESSION_S
        coming = sum(
            1
            for s in self.sessions.all()
            if s.pipeline is pipeline and s.frames_published == 0 and s.opened_at > since
        )
        projected = scheduler.projected_load(coming + 1)
        if projected > self.config.max_load:
            raise ProtocolError(
                ErrorCode.AT_CAPACITY,
                f"model {pipeline.model_name} is at capacity: its scheduler would be busy "
                f"{projected:.0%} of the time with one more session (limit {self.config.max_load:.0%}); "
                "the open sessions keep their frames: try later or another bridge",
            )

    def _on_inputs(self, envelope: tuple[bytes, ...], owner: bytes, request: Inputs) -> None:
        """Each item as its own `input`: a bad one fails only itself, and the failed ones are answered
        together in one error reply; the good ones join the drain's batch."""
        failures = _ItemFailures(request.id, len(request.items))
        for index, raw in enumerate(request.items):
            if len(failures.failed) == MAX_ITEM_FAILURES:  # the rest unexamined: one entry for them all
                last = len(request.items) - 1
                message = (
                    f"items {index} to {last} not examined: over {MAX_ITEM_FAILURES} items of this "
                    "message failed; they were dropped"
                )
                self._fail_item(failures, index, ErrorCode.BAD_VALUE, message, 0, None)
                failures.failed[-1]["through"] = last
                break
            item = decode_item(raw)
            if isinstance(item, ItemError):
                self._fail_item(failures, index, item.error.code, item.error.message, item.id, item.session)
                continue
            try:
                self._on_input(envelope, owner, item, (index, failures))
            except ProtocolError as exc:
                self._fail_item(failures, index, exc.code, exc.message, item.id, item.session)
            except Exception as exc:
                log.exception("internal error handling an input item")
                message = f"internal error: {exc}"
                self._fail_item(failures, index, ErrorCode.INTERNAL, message, item.id, item.session)
        self._answer_items(envelope, failures)

    def _on_input(
        self,
        envelope: tuple[bytes, ...],
        owner: bytes,
        item: Input,
        of: tuple[int, _ItemFailures] | None = None,
    ) -> None:
        """Validate an input against its session and queue it for the drain's batch."""
        session = self._session(item.session, owner)
        session.last_seen = time.monotonic()
        kind = item.kind
        if kind not in session.pipeline.accepts:
            raise ProtocolError(
                ErrorCode.WRONG_INPUT_KIND,
                f"{session.pipeline.name} sessions accept {', '.join(session.pipeline.accepts)}, not {kind}",
            )
        session.pipeline.validate(session.state, item)
        if isinstance(item, AudioInput) and not session.note_rate(
            item.rate, time.monotonic(), MAX_RATE_CHANGES_PER_S
        ):
            raise ProtocolError(
                ErrorCode.RATE_CHANGE_LIMIT,
                f"session {session.id} changed its audio sample rate more than {MAX_RATE_CHANGES_PER_S} "
                f"times within a second (now {item.rate} Hz, was {session.audio_rate} Hz); input dropped: "
                "keep one rate per stream",
            )
        self._batch.setdefault(self.schedulers[session.pipeline], []).append((envelope, session, item, of))
        self._batched.add(envelope)
        if of is not None:
            of[1].waiting += 1

    # ----------------------------------------------------------------- helpers
    def _session(self, sid: str, owner: bytes) -> Session:
        """The open session `sid`, if this client (`owner`) opened it."""
        session = self.sessions.get(sid)
        if session is None:
            raise ProtocolError(
                ErrorCode.UNKNOWN_SESSION, f"no open session '{sid}' (never opened, closed, or reaped)"
            )
        if session.owner != owner:
            raise ProtocolError(
                ErrorCode.NOT_OWNER, f"session '{sid}' belongs to another client; only its opener may use it"
            )
        return session

    def _end_session(self, session: Session, reason: str) -> None:
        with self._end_lock:
            if self.sessions.remove(session.id) is None:
                return
            self._live.discard(session.topic)
            group = self._groups.pop(session.topic, None)
            if group is not None:
                self._group_owners.remove(group)
            closed = encode_closed_event(session.id, reason=reason, frames_published=session.frames_published)
            self.sockets.publish_event(event_topic(session.id), closed)

    def _publish_frame(self, topic: bytes, payload: bytes, *, hold: bool = False) -> Delivery:
        """The schedulers' publish: a frame of a session that has ended goes nowhere (its `closed`
        event was the last message of its id): CLOSED, counted by the scheduler."""
        return self._outlet.publish(topic, payload, hold=hold)

    def _model_list(self) -> list[dict[str, Any]]:
        return [
            {
                "name": model,
                "pipeline": name,
                "fps": p.fps,
                "trained": p.engine.manifest.trained,
                "backend": p.engine.backend.name,
                "default": self.defaults[name] == model,
                "styles": list(p.engine.manifest.styles),
            }
            for name, models in sorted(self.pipelines.items())
            for model, p in sorted(models.items())
        ]

    def _send(self, envelope: tuple[bytes, ...], payload: bytes) -> None:
        if envelope in self._batched:  # its earlier inputs' acks and OVERLOADED go first: replies in order
            self._submit_batch()
        dropped = self.sockets.reply(envelope, payload)  # None, or why: the client does not read, or is gone
        if dropped is not None:
            self.stats.drop_reply(dropped)

    def _error(
        self,
        envelope: tuple[bytes, ...],
        code: ErrorCode,
        message: str,
        request_id: int = 0,
        session: str | None = None,
    ) -> None:
        self.stats.count_error(code.name)
        self._send(envelope, error_reply(code, message, request_id, session))

    def _report_error(self, session: Session, code: ErrorCode, message: str) -> None:
        """Called from scheduler threads: queue the reply for the I/O thread, which owns the ROUTER."""
        self.stats.count_error(code.name)
        if len(self._pending_errors) == MAX_PENDING_ERRORS:  # the bounded deque drops the oldest
            self.stats.drop_reply("error_queue_full")
        self._pending_errors.append((session.envelope, error_reply(code, message, 0, session.id)))


def write_ports_file(path: Path, request_port: int, frames_port: int, metrics_port: int | None) -> None:
    """The bound ports as JSON (`--ports-file`), written atomically: readers never see a partial file."""
    ports = {"request_port": request_port, "frames_port": frames_port}
    if metrics_port is not None:
        ports["metrics_port"] = metrics_port
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(ports))
    tmp.replace(path)


def _load_error(exc: Exception) -> str:
    """What went wrong loading an engine, in words an operator can act on."""
    if isinstance(exc, (ManifestError, FileNotFoundError, BackendUnavailable, ModelRefused)):
        return str(exc)
    return f"cannot read the model file, it may be truncated or corrupt ({type(exc).__name__}: {exc})"


def _user_id(frame: zmq.Frame, routing_id: bytes) -> bytes:
    """The client's CURVE public key as the ZAP handler recorded it; its routing id if it has none."""
    try:
        return str(frame.get("User-Id")).encode()
    except zmq.ZMQError:
        return b"id:" + routing_id
