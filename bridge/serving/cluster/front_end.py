"""`serve --workers N`: one set of public ports in front of N bridge worker processes.

Clients see one bridge (docs/protocol.md unchanged): the front end binds the public ROUTER and the
frames port, and N worker processes (bridge.serving.cluster.workers, each an unmodified `Bridge`) serve the
sessions.

- **Requests.** The I/O thread reads the ROUTER and routes each message by the few keys it reads
  (`op`, `id`, `session`: a msgspec struct that skips the rest): `open` goes to the least-loaded
  ready worker (one in a named batch group to the group's worker while that one holds less than an
  even share of `max_sessions`), a message naming a known session to that session's worker,
  anything else (hello, list, an unknown session, a malformed message) to any ready worker, which
  answers it exactly as a single bridge would. Each client has its own DEALER to each worker, with a
  routing id that stands for the client (its connection, or its CURVE key when keys are checked), so a
  worker's ownership rule (NOT_OWNER) and quota see the original client. Replies come back on that
  DEALER and go to the client's connection.
- **Limits across workers.** The front end counts each client's open sessions and the total, from
  `open` replies and `closed` events, so `max_sessions` (SESSION_LIMIT) and
  `max_sessions_per_client` (CLIENT_SESSION_LIMIT) hold over all workers together. Likewise a named
  batch group belongs to the client whose session first opened in it (from `open` replies) until its
  last one closes: another client's `open` naming it is NOT_OWNER here, whichever worker it would go
  to (two first opens racing on two workers may both pass).
- **Frames.** Workers publish into the frames forwarder, a process of its own
  (bridge.serving.cluster.frames_forwarder) that binds the public frames port with the single bridge's bounds
  per subscriber, `max_subscriptions` per connection included, and passes subscriptions back up, so a
  worker only sends what someone subscribed to; stalls are not counted here. If it dies it is
  restarted on the same port (clients' SUB sockets reconnect and subscribe again).
- **Bounds.** A message is routed by a typed msgspec struct (scalars of bounded length; anything
  else, a message nested too deep included, is routed as malformed: a worker answers it). At most
  `max_client_links` clients hold links at once (each link is a DEALER per worker, and a ZeroMQ
  context holds at most 1023 sockets): a new client past it gets OVERLOADED, saying so, until an idle
  client's links are closed. A message over `max_message_bytes` is answered TOO_LARGE here, and a
  link holds at most LINK_MESSAGES messages and 2 x `max_message_bytes` of large ones (then
  OVERLOADED). A message whose routing fails in an unforeseen way is logged, counted (an INTERNAL
  error) and dropped; the loop goes on.
- **Faults.** A worker that exits is restarted (1 s apart at most, doubling to 30 s while it keeps
  failing); each of its sessions gets a `closed` event with reason `worker_lost` (frames_published 0:
  the count died with it), an `open` in flight there an INTERNAL error, and the other workers'
  sessions are not touched.

Internal endpoints are `ipc://` sockets in a private folder (mode 0700): nothing internal is reachable
over TCP, and only this user's processes can reach them.
"""

from __future__ import annotations

import errno
import itertools
import logging
import shutil
import tempfile
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import zmq
from zmq.utils.monitor import recv_monitor_message

from bridge.protocol.codec import pack, unpack_map
from bridge.protocol.errors import ErrorCode
from bridge.protocol.events import encode_closed_event, event_topic
from bridge.protocol.replies import error_reply
from bridge.protocol.requests import MAX_INPUT_ITEMS, MAX_NAME_CHARS
from bridge.protocol.versions import EVENT_TOPIC_PREFIX, SESSION_ID_LENGTH
from bridge.serving.cluster.frames_forwarder import FramesForwarder
from bridge.serving.cluster.workers import WorkerProcess, WorkerSpecFactory
from bridge.serving.group_owners import GroupOwners
from bridge.serving.server import ServeConfig, _user_id, write_ports_file
from bridge.transport.curve import start_authenticator
from bridge.transport.zmq_sockets import (
    HANDSHAKE_FAILURES,
    _bind,
    connection_of,
    is_loopback,
    request_router,
)

if TYPE_CHECKING:
    from bridge.serving.cluster.front_metrics import FrontEndMetrics

log = logging.getLogger(__name__)

POLL_MS = 20
SUPERVISE_INTERVAL_S = 0.25
DRAIN = 1000  # messages read from one socket per turn, so no socket starves the others
# libzmq's sockets per context (ZMQ_MAX_SOCKETS' default), less those the front end keeps for itself
# (its ROUTER, announcer, monitors, one event SUB per worker, the authenticator's): what client links
# (one DEALER per client and worker) may use.
CONTEXT_SOCKETS = 1023
RESERVED_SOCKETS = 64
# A link (one client's DEALER to one worker) holds at most LINK_MESSAGES messages and, of those of
# TRACKED_BYTES or more (tracked until libzmq lets go of them), 2 x max_message_bytes: so at most
# ~4 MiB of small messages and 16 MiB of large ones per link, where 10,000 messages of up to 16 MiB
# once grew the front end to 3 GB. A message count alone is no bound: 8 was too few for a 60 Hz
# client while a worker's loop stalled for a moment on a loaded box.
LINK_MESSAGES = 1000
TRACKED_BYTES = 4096
OPEN_TIMEOUT_S = 30.0  # an open whose reply never came stops counting against the limits
RESTART_BACKOFF_S = (1.0, 30.0)  # first and longest wait between restarts of a failing worker
CLOSED_REASON = "worker_lost"
MAX_REMEMBERED = 4096  # request ids remembered per keyed client for reply routing (oldest forgotten)


_Name = Annotated[str, msgspec.Meta(max_length=MAX_NAME_CHARS)]
_SessionId = Annotated[str, msgspec.Meta(max_length=SESSION_ID_LENGTH)]
_U64 = Annotated[int, msgspec.Meta(ge=0)]


class _OpenOptions(msgspec.Struct):
    """The one `open` option the front end reads."""

    batch_group: _Name | bool | None = None


class _Route(msgspec.Struct):
    """The keys the front end routes by, typed: a mistyped or overlong one stops the read at its
    header (a 4M-element `session` costs nothing), and the message goes to a worker as malformed,
    which answers it. Every other key is skipped, not decoded."""

    op: _Name | None = None
    id: _U64 | None = None
    session: _SessionId | None = None
    event: _Name | None = None
    item: _U64 | None = None  # a reply's index of the item of an `inputs` message it answers
    items: list[msgspec.Raw] | None = None  # an error reply's failed items (one `inputs` message)
    options: _OpenOptions | None = None  # an `open` request's
    batch_group: _Name | None = None  # an `open` reply's: the session's batch group


class _Inputs(msgspec.Struct):
    """A multiplexed `inputs` message, its items left encoded."""

    v: int | None = None
    id: _U64 | None = None
    items: Annotated[list[msgspec.Raw], msgspec.Meta(max_length=MAX_INPUT_ITEMS)] = []


class _Item(msgspec.Struct):
    session: _SessionId | None = None


_decode_route = msgspec.msgpack.Decoder(_Route).decode
_decode_inputs = msgspec.msgpack.Decoder(_Inputs).decode
_decode_item = msgspec.msgpack.Decoder(_Item).decode


def _route(payload: memoryview | bytes) -> _Route | None:
    try:
        return _decode_route(payload)
    except (msgspec.MsgspecError, RecursionError):  # not a map, mistyped, too deep: a worker answers
        return None


def _request_id(route: _Route | _Inputs | None) -> int:
    """The id an error reply echoes: the request's (a uint64), else 0 (docs/protocol.md 4)."""
    return route.id or 0 if route is not None else 0


@dataclass
class _Client:
    """One client as the workers know it: `link_id` is its DEALERs' routing id."""

    link_id: bytes
    routing_id: bytes  # the connection of its latest message
    # A client keyed by CURVE key may hold several connections (all one owner, one link per worker):
    # a reply goes to the connection that sent the request (by request id), or else to the last one
    # that named (or opened) its session, else to the latest.
    reply_to: dict[int, bytes] = field(default_factory=dict)
    session_to: dict[str, bytes] = field(default_factory=dict)
    dealers: dict[int, zmq.Socket[bytes]] = field(default_factory=dict)  # worker index -> DEALER
    sessions: int = 0
    pending: list[tuple[int, int, float]] = field(default_factory=list)  # opens: (worker, id, deadline)
    last_seen: float = field(default_factory=time.monotonic)


@dataclass
class FrontEndStats:
    """What the front end itself counts (its metrics; the workers count the rest)."""

    errors: Counter[str] = field(default_factory=Counter)  # error replies it sent itself, by name
    replies_dropped: Counter[str] = field(default_factory=Counter)  # peer_full, peer_gone
    worker_restarts: Counter[int] = field(default_factory=Counter)
    handshake_failures: Counter[str] = field(default_factory=Counter)  # CURVE, by libzmq's reason
    sessions_lost: int = 0  # closed because their worker exited


class FrontEnd:
    def __init__(
        self, config: ServeConfig, workers: int, worker_envs: list[dict[str, str]] | None = None
    ) -> None:
        if workers < 1:
            raise ValueError(f"--workers must be at least 1, not {workers}")
        t = config.transport
        if not is_loopback(t.host) and not t.insecure_remote and t.curve_secret_key is None:
            raise ValueError(
                f"refusing to bind to non-loopback host {t.host!r}: give the bridge a CURVE key "
                "(--curve-secret-key) or pass --insecure-remote to expose it unauthenticated"
            )
        self.config = config
        self.stats = FrontEndStats()
        self.ready = False
        self.heartbeat = time.monotonic()
        self.metrics: FrontEndMetrics | None = None
        self._keyed = t.curve_client_keys is not None
        self.context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()  # its own: one ZAP handler per context
        keys = t.curve_client_keys
        self._auth = start_authenticator(self.context, keys) if keys is not None else None
        self.folder = Path(tempfile.mkdtemp(prefix="avb-"))  # mode 0700; short: ipc paths are limited
        self.router = request_router(self.context, t)
        forward = f"ipc://{self.folder}/forward"
        self._announcer = self.context.socket(zmq.PUB)  # the front end's own events (worker_lost)
        self._announcer.setsockopt(zmq.LINGER, 0)
        self._announcer.setsockopt(zmq.SNDHWM, 0)
        self._announcer.connect(forward)
        mask = sum(HANDSHAKE_FAILURES)
        self._monitor = self.router.get_monitor_socket(mask) if t.curve_secret_key else None
        self.request_port = _bind(self.router, t.host, t.request_port)
        self.frames = FramesForwarder(t, forward)
        self._frames_retry = 0.0  # when a dead forwarder may be started again
        try:
            self.frames_port = self.frames.start()
        except BaseException:
            self.context.destroy(linger=0)
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        factory = WorkerSpecFactory(config, self.folder, forward, self.frames_port, worker_envs or [])
        self.workers = [WorkerProcess(i, factory) for i in range(workers)]
        self._next_start = [0.0] * workers
        self._backoff = [RESTART_BACKOFF_S[0]] * workers
        self._load = [0] * workers  # sessions open or opening per worker
        self._poller = zmq.Poller()
        self._poller.register(self.router, zmq.POLLIN)
        self._links: dict[zmq.Socket[bytes], tuple[_Client, int]] = {}  # DEALER -> (client, worker)
        # DEALER -> original index of each item of the latest split `inputs` part sent on it
        self._item_maps: dict[zmq.Socket[bytes], list[int]] = {}
        self._events: dict[zmq.Socket[bytes], int] = {}  # a worker's event SUB -> worker index
        self._sessions: dict[str, tuple[int, _Client]] = {}  # session -> (worker, owner)
        # Named batch groups' owners, and each grouped session's group.
        self._groups: GroupOwners[str, _Client] = GroupOwners()
        self._session_group: dict[str, str] = {}
        # Each named batch group's worker: its sessions open there while that worker has room, so one
        # worker runs and publishes the group's rows (one call and one message a tick, not one per worker).
        self._group_home: dict[str, int] = {}
        self._clients: dict[bytes, _Client] = {}  # owner key -> client
        self._link_ids = itertools.count()
        self._linked = 0  # clients holding links
        # Per link, its messages of TRACKED_BYTES or more that libzmq may still hold, and their bytes.
        self._queued: dict[zmq.Socket[bytes], deque[tuple[zmq.MessageTracker, int]]] = {}
        self._queued_bytes: dict[zmq.Socket[bytes], int] = {}
        self.link_bytes = 2 * config.transport.max_message_bytes
        self.max_client_links = (CONTEXT_SOCKETS - RESERVED_SOCKETS) // workers
        self._stop = threading.Event()

    @property
    def frames_endpoint(self) -> str:
        host = self.config.transport.host
        return f"tcp://{'127.0.0.1' if host in ('0.0.0.0', '*') else host}:{self.frames_port}"

    # ----------------------------------------------------------------- lifecycle
    def start(self, timeout_s: float = 300.0) -> None:
        """Start every worker (the frames forwarder runs already); return once all serve (or raise,
        stopping them)."""
        for worker in self.workers:
            worker.start()
        deadline = time.monotonic() + timeout_s
        try:
            while not all(w.poll_ready() for w in self.workers):
                for w in self.workers:
                    if not w.alive and not w.ready:
                        code = w.process.exitcode if w.process is not None else None
                        raise RuntimeError(f"worker {w.index} exited ({code}) before it was ready")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"workers not ready after {timeout_s:.0f} s")
                time.sleep(0.05)
            if self.config.metrics_port is not None:
                from bridge.serving.cluster.front_metrics import (
                    FrontEndMetrics,  # prometheus-client: optional
                )

                self.metrics = FrontEndMetrics(self, self.config.metrics_host, self.config.metrics_port)
        except BaseException:
            self.close()
            raise
        for worker in self.workers:
            self._serving(worker)
        self.ready = True
        if self.config.ports_file is not None:
            metrics = self.metrics.port if self.metrics is not None else None
            write_ports_file(self.config.ports_file, self.request_port, self.frames_port, metrics)

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self.ready = False
        if self.metrics is not None:
            self.metrics.close()
        for worker in self.workers:  # SIGTERM all first: they shut down in parallel
            if worker.process is not None and worker.process.is_alive():
                worker.process.terminate()
        for worker in self.workers:
            worker.stop()
        time.sleep(0.05)  # the workers' last `closed` events pass the forwarder
        self.frames.stop()
        if self._auth is not None:
            self._auth.stop()
        self.context.destroy(linger=0)
        shutil.rmtree(self.folder, ignore_errors=True)

    def serve_forever(self) -> None:
        """Route requests and replies until `stop()`; call `start()` first."""
        next_supervise = time.monotonic() + SUPERVISE_INTERVAL_S
        while not self._stop.is_set():
            self.heartbeat = time.monotonic()
            for sock, _ in self._poller.poll(POLL_MS):
                if sock is self.router:
                    self._drain_requests()
                elif sock in self._links:
                    self._drain_replies(sock)
                elif sock in self._events:
                    self._drain_events(sock)
            now = time.monotonic()
            # Once stopping, no restarts: a signal to the group stops the workers at the same moment.
            if now >= next_supervise and not self._stop.is_set():
                next_supervise = now + SUPERVISE_INTERVAL_S
                self._supervise(now)

    # ----------------------------------------------------------------- requests
    def _drain_requests(self) -> None:
        for _ in range(DRAIN):
            try:
                frames = self.router.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            try:
                self._on_request(frames)
            except Exception:  # one message's failure must not end serve_forever
                log.exception("routing a request failed; serving on")
                self.stats.errors[ErrorCode.INTERNAL.name] += 1

    def _on_request(self, frames: list[zmq.Frame]) -> None:
        routing_id = frames[0].bytes
        # A client is its CURVE key or its connection (not the routing id alone: bridge.serving.server).
        owner = (
            b"key:" + _user_id(frames[-1], routing_id)
            if self._keyed
            else b"id:%s/%d" % (routing_id, connection_of(frames[-1]))
        )
        client = self._client(owner, routing_id)
        body = frames[1:]
        if not client.dealers and self._linked >= self.max_client_links:
            self._error(
                client,
                ErrorCode.OVERLOADED,
                f"the bridge serves at most {self.max_client_links} clients at once; try again later",
                None,
            )
            return
        limit = self.config.transport.max_message_bytes
        if len(body[-1]) > limit:  # not forwarded: a worker would refuse it, and it would wait in a link
            self._error(
                client, ErrorCode.TOO_LARGE, f"message of {len(body[-1])} bytes exceeds {limit}", None
            )
            return
        # [payload] from a DEALER, [empty, payload] from a REQ-style client; any other framing goes to a
        # worker as it is, which answers MALFORMED.
        framed = len(body) == 1 or (len(body) == 2 and not len(body[0].buffer))
        route = _route(body[-1].buffer) if framed else None
        op = route.op if route is not None else None
        session = route.session if route is not None and type(route.session) is str else None
        home: int | None = None  # the one worker all items of an `inputs` message live on
        if op == "inputs" and framed:
            home, parts = self._split_inputs(body[-1].buffer)
            if parts:
                envelope = [b""] if len(body) == 2 else []  # a REQ-style client's delimiter
                for part_worker, (payload, indices) in parts.items():
                    self._send_inputs(client, part_worker, [*envelope, payload], indices, route)
                return
        if self._keyed and route is not None:
            self._remember_connection(client, route, op, session, routing_id)
        if op == "open":
            worker = self._place_open(client, route)
        elif home is not None:
            worker = home
        elif session is not None and session in self._sessions:
            worker = self._sessions[session][0]
        else:
            worker = self._any_worker()
        if worker is None:
            if op != "open":  # an open refused here has had its answer
                self._error(client, ErrorCode.INTERNAL, "no worker is serving (restarting)", route, session)
            return
        dealer = client.dealers.get(worker) or self._link(client, worker)
        if dealer is None:
            self._error(
                client, ErrorCode.OVERLOADED, "the bridge has no room for another link", route, session
            )
            return
        if not self._forward(dealer, body):
            busy = "the bridge worker is busy; message dropped"
            self._error(client, ErrorCode.OVERLOADED, busy, route, session)
            return
        if op == "inputs":
            self._item_maps.pop(dealer, None)  # sent whole: its replies' item indices are right
        if op == "open":
            client.pending.append((worker, _request_id(route), time.monotonic() + OPEN_TIMEOUT_S))
            self._load[worker] += 1

    @staticmethod
    def _remember_connection(
        client: _Client, route: _Route, op: Any, session: str | None, routing_id: bytes
    ) -> None:
        rid = _request_id(route)
        if rid and op not in ("input", "inputs"):  # requests with one reply, matched by their id
            client.reply_to.pop(rid, None)
            client.reply_to[rid] = routing_id
            if len(client.reply_to) > MAX_REMEMBERED:
                del client.reply_to[next(iter(client.reply_to))]
        if session is not None:
            client.session_to[session] = routing_id

    @staticmethod
    def _reply_target(client: _Client, route: _Route | None) -> bytes:
        if route is None or len(client.reply_to) + len(client.session_to) == 0:
            return client.routing_id
        rid = _request_id(route)
        if rid and route.item is None and rid in client.reply_to:
            return client.reply_to.pop(rid)
        if type(route.session) is str and route.session in client.session_to:
            return client.session_to[route.session]
        return client.routing_id

    def _split_inputs(
        self, payload: memoryview
    ) -> tuple[int | None, dict[int, tuple[bytes, list[int]]] | None]:
        """(home, parts) for an `inputs` message. Items on several workers: one `inputs` message per
        worker (items in their order) with each item's index in the client's message. Else it goes
        whole: to `home` when its known sessions all live there, else (malformed, or no known session)
        to any worker, which answers it as a single bridge does."""
        try:
            message = _decode_inputs(payload)
        except (msgspec.MsgspecError, RecursionError):
            return None, None
        if message.v not in (None, 1):
            return None, None
        if not 1 <= len(message.items) <= MAX_INPUT_ITEMS:
            return None, None
        groups: dict[int, list[int]] = {}
        for i, raw in enumerate(message.items):
            try:
                sid = _decode_item(raw).session
            except (msgspec.MsgspecError, RecursionError):
                sid = None
            entry = self._sessions.get(sid) if sid is not None else None
            # An item no worker knows joins the first part: that worker answers it (UNKNOWN_SESSION...).
            groups.setdefault(entry[0] if entry is not None else -1, []).append(i)
        unplaced = groups.pop(-1, [])
        if len(groups) <= 1:
            return next(iter(groups), None), None
        first = next(iter(groups))
        groups[first] = sorted(groups[first] + unplaced)
        head = {"op": "inputs", "id": _request_id(message)} | ({} if message.v is None else {"v": 1})
        return None, {
            w: (msgspec.msgpack.encode({**head, "items": [message.items[i] for i in indices]}), indices)
            for w, indices in groups.items()
        }

    def _send_inputs(
        self, client: _Client, worker: int, frames: list[bytes], indices: list[int], route: _Route | None
    ) -> None:
        dealer = client.dealers.get(worker) or self._link(client, worker)
        if dealer is None:
            self._error(client, ErrorCode.OVERLOADED, "the bridge has no room for another link", route)
            return
        if not self._forward(dealer, frames):
            self._error(client, ErrorCode.OVERLOADED, "the bridge worker is busy; message dropped", route)
            return
        self._item_maps[dealer] = indices

    def _forward(self, dealer: zmq.Socket[bytes], frames: list[zmq.Frame] | list[bytes]) -> bool:
        """Queue a message on a link, within its bounds (LINK_MESSAGES, LINK_BYTES); False: full."""
        size = sum(len(f) for f in frames)
        if size < TRACKED_BYTES:
            try:
                dealer.send_multipart(frames, zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return False
            return True
        queued = self._queued.setdefault(dealer, deque())
        while queued and queued[0][0].done:  # libzmq has handed these to the worker
            self._queued_bytes[dealer] -= queued.popleft()[1]
        held = self._queued_bytes.get(dealer, 0)
        if held and held + size > self.link_bytes:
            return False
        tracked = [zmq.Frame(f.buffer if isinstance(f, zmq.Frame) else f, track=True) for f in frames]
        try:
            tracker = dealer.send_multipart(tracked, zmq.NOBLOCK, copy=False, track=True)
        except zmq.Again:
            return False
        if tracker is not None:  # always, with track=True
            queued.append((tracker, size))
            self._queued_bytes[dealer] = held + size
        return True

    def _place_open(self, client: _Client, route: _Route | None) -> int | None:
        """The worker for a new session (its batch group's, else the least-loaded ready one), or None
        (after an error reply)."""
        limit = self.config.max_sessions
        if sum(self._load) >= limit:
            self._error(client, ErrorCode.SESSION_LIMIT, f"session limit of {limit} reached", route)
            return None
        quota = self.config.max_sessions_per_client
        if client.sessions + len(client.pending) >= quota:
            self._error(
                client,
                ErrorCode.CLIENT_SESSION_LIMIT,
                f"this client already has {quota} sessions open (its quota)",
                route,
            )
            return None
        group = route.options.batch_group if route is not None and route.options is not None else None
        holder = self._groups.owner(group) if isinstance(group, str) else None
        if holder is not None and holder is not client:
            message = (
                f"batch group '{group}' belongs to another client; open with batch_group: true for a new one"
            )
            self._error(client, ErrorCode.NOT_OWNER, message, route)
            return None
        worker = self._home_of(group) if isinstance(group, str) else None
        worker = self._any_worker() if worker is None else worker
        if worker is None:
            self._error(client, ErrorCode.INTERNAL, "no worker is serving (restarting)", route)
        elif isinstance(group, str):
            self._set_home(group, worker)
        return worker

    def _home_of(self, group: str) -> int | None:
        """The group's worker while it is ready and below an even share of the session limit."""
        home = self._group_home.get(group)
        share = -(-self.config.max_sessions // len(self.workers))
        if home is None or not self.workers[home].ready or self._load[home] >= share:
            return None
        return home

    def _set_home(self, group: str, worker: int) -> None:
        self._group_home[group] = worker
        if len(self._group_home) > self.config.max_sessions:  # homes of opens that all failed: let go
            self._group_home = {g: w for g, w in self._group_home.items() if g in self._groups}

    def _any_worker(self) -> int | None:
        ready = [w.index for w in self.workers if w.ready]
        return min(ready, key=self._load.__getitem__) if ready else None

    def _client(self, owner: bytes, routing_id: bytes) -> _Client:
        client = self._clients.get(owner)
        if client is None:
            client = _Client(link_id=b"c%d" % next(self._link_ids), routing_id=routing_id)
            self._clients[owner] = client
        client.routing_id = routing_id
        client.last_seen = time.monotonic()
        return client

    def _link(self, client: _Client, worker: int) -> zmq.Socket[bytes] | None:
        """The client's DEALER to a worker, made now; None where libzmq has no socket or descriptor
        left (counted, answered OVERLOADED)."""
        spec = self.workers[worker].spec
        assert spec is not None
        try:
            dealer = self.context.socket(zmq.DEALER)
        except zmq.ZMQError as exc:  # EMFILE: the context's sockets or the process's descriptors
            log.error("no link to worker %d for a client: %s", worker, exc)
            self.stats.errors[ErrorCode.OVERLOADED.name] += 1
            return None
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.setsockopt(zmq.ROUTING_ID, client.link_id)
        dealer.setsockopt(zmq.SNDHWM, LINK_MESSAGES)
        dealer.setsockopt(zmq.RCVHWM, 0)
        dealer.connect(spec.request_endpoint)
        if not client.dealers:
            self._linked += 1
        client.dealers[worker] = dealer
        self._links[dealer] = (client, worker)
        self._poller.register(dealer, zmq.POLLIN)
        return dealer

    # ----------------------------------------------------------------- replies and events
    def _drain_replies(self, dealer: zmq.Socket[bytes]) -> None:
        client, worker = self._links[dealer]
        for _ in range(DRAIN):
            try:
                frames = dealer.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            route = _route(frames[-1].buffer)
            if route is not None and route.op in ("open", "error"):
                self._settle_open(client, worker, route)
            if route is not None and dealer in self._item_maps and (route.item is not None or route.items):
                frames = [*frames[:-1], self._renumber(frames[-1].bytes, self._item_maps[dealer])]
            target = self._reply_target(client, route)
            if self._keyed and route is not None and route.op == "open" and type(route.session) is str:
                client.session_to[route.session] = target  # its opener gets its asynchronous errors
            self._reply(client, frames, target)

    @staticmethod
    def _renumber(payload: bytes, indices: list[int]) -> zmq.Frame:
        """A reply naming items of a split `inputs` message (an ack's `item`, an error's `items`)
        names them by their index in the client's message. The latest split sent on that link is the
        map: exact while a client keeps the layout of its messages (the same sessions in the same
        order), best effort when it changes in flight."""
        reply = unpack_map(payload)

        def original(item: object) -> object:
            return indices[item] if type(item) is int and 0 <= item < len(indices) else item

        if "item" in reply:
            reply["item"] = original(reply["item"])
        if isinstance(reply.get("items"), list):
            reply["items"] = [
                {**f, "item": original(f.get("item"))} if isinstance(f, dict) else f for f in reply["items"]
            ]
        return zmq.Frame(pack(reply))

    def _settle_open(self, client: _Client, worker: int, route: _Route) -> None:
        rid = _request_id(route)
        for i, (w, pending_id, _) in enumerate(client.pending):
            if w == worker and pending_id == rid:
                del client.pending[i]
                break
        else:
            return  # an error reply to something else
        if route.op == "open" and type(route.session) is str:
            self._sessions[route.session] = (worker, client)
            client.sessions += 1
            if route.batch_group:
                self._groups.add(route.batch_group, client)
                self._session_group[route.session] = route.batch_group
                self._group_home.setdefault(route.batch_group, worker)  # a group the bridge named
        else:
            self._load[worker] -= 1

    def _drain_events(self, sub: zmq.Socket[bytes]) -> None:
        worker = self._events[sub]
        for _ in range(DRAIN):
            try:
                _, payload = sub.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            route = _route(payload)
            if route is not None and route.event == "closed" and type(route.session) is str:
                self._forget(route.session, worker)

    def _forget(self, session: str, worker: int) -> None:
        entry = self._sessions.get(session)
        if entry is not None and entry[0] == worker:
            del self._sessions[session]
            entry[1].session_to.pop(session, None)
            group = self._session_group.pop(session, None)
            if group is not None:
                self._groups.remove(group)
                if group not in self._groups:
                    self._group_home.pop(group, None)
            entry[1].sessions -= 1
            self._load[worker] -= 1

    def _reply(
        self, client: _Client, frames: list[zmq.Frame] | list[bytes], target: bytes | None = None
    ) -> None:
        try:
            self.router.send_multipart([target or client.routing_id, *frames], zmq.NOBLOCK, copy=False)
        except zmq.Again:
            self.stats.replies_dropped["peer_full"] += 1
        except zmq.ZMQError as exc:
            if exc.errno != errno.EHOSTUNREACH:
                raise
            self.stats.replies_dropped["peer_gone"] += 1

    def _error(
        self, client: _Client, code: ErrorCode, message: str, route: _Route | None, session: str | None = None
    ) -> None:
        self.stats.errors[code.name] += 1
        self._reply(client, [error_reply(code, message, _request_id(route), session)])

    # ----------------------------------------------------------------- supervision
    def _supervise(self, now: float) -> None:
        while self._monitor is not None and self._monitor.poll(0):
            event = recv_monitor_message(self._monitor)
            self.stats.handshake_failures[HANDSHAKE_FAILURES.get(int(event["event"]), "other")] += 1
        if self.ready and not self.frames.alive and now >= self._frames_retry:
            log.error("the frames forwarder exited; starting it again on port %d", self.frames_port)
            self._frames_retry = now + 1.0
            try:
                self.frames.start(timeout_s=5.0)  # the I/O loop waits for it: not the first start's 30 s
            except RuntimeError as exc:
                log.error("%s; trying again in 1 s", exc)
        for worker in self.workers:
            if worker.ready and not worker.alive:
                self._lost(worker, now)
            elif not worker.ready and worker.alive and worker.poll_ready():
                log.info("worker %d serving again (restart %d)", worker.index, worker.restarts)
                self._backoff[worker.index] = RESTART_BACKOFF_S[0]
                self._serving(worker)
            elif not worker.ready and not worker.alive and now >= self._next_start[worker.index]:
                self._restart(worker, now)  # it died again before it was ready
        for client in self._clients.values():
            expired = [p for p in client.pending if p[2] < now]
            for p in expired:
                client.pending.remove(p)
                self._load[p[0]] -= 1
        idle_s = max(60.0, 2 * self.config.idle_timeout_s)
        for owner, client in list(self._clients.items()):
            if not client.sessions and not client.pending and now - client.last_seen > idle_s:
                for dealer in list(client.dealers.values()):
                    self._unlink(dealer)
                del self._clients[owner]

    def _serving(self, worker: WorkerProcess) -> None:
        """A worker is ready: read its session events (so closes and reaps free their places)."""
        assert worker.spec is not None
        sub = self.context.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.RCVHWM, 0)
        sub.setsockopt(zmq.SUBSCRIBE, EVENT_TOPIC_PREFIX)
        sub.connect(worker.spec.events_endpoint)
        self._events[sub] = worker.index
        self._poller.register(sub, zmq.POLLIN)

    def _lost(self, worker: WorkerProcess, now: float) -> None:
        index = worker.index
        code = worker.process.exitcode if worker.process is not None else None
        lost = [sid for sid, (w, _) in self._sessions.items() if w == index]
        log.error("worker %d exited (%s); closing its %d sessions and restarting it", index, code, len(lost))
        worker.ready = False
        for sid in lost:
            self._announcer.send_multipart(
                (event_topic(sid), encode_closed_event(sid, reason=CLOSED_REASON, frames_published=0))
            )
            self._forget(sid, index)
        self.stats.sessions_lost += len(lost)
        for client in self._clients.values():
            for p in [p for p in client.pending if p[0] == index]:
                client.pending.remove(p)
                self._load[index] -= 1
                message = error_reply(ErrorCode.INTERNAL, "the bridge worker exited while opening", p[1])
                self._reply(client, [message])
            if index in client.dealers:
                self._unlink(client.dealers[index])
        for sub in [s for s, w in self._events.items() if w == index]:
            self._poller.unregister(sub)
            del self._events[sub]
            sub.close(0)
        self._restart(worker, now)

    def _restart(self, worker: WorkerProcess, now: float) -> None:
        worker.restarts += 1
        self.stats.worker_restarts[worker.index] += 1
        wait = self._backoff[worker.index]
        self._next_start[worker.index] = now + wait
        self._backoff[worker.index] = min(RESTART_BACKOFF_S[1], 2 * wait)
        worker.start()

    def _unlink(self, dealer: zmq.Socket[bytes]) -> None:
        client, worker = self._links.pop(dealer)
        self._item_maps.pop(dealer, None)
        self._queued.pop(dealer, None)
        self._queued_bytes.pop(dealer, None)
        del client.dealers[worker]
        if not client.dealers:
            self._linked -= 1
        self._poller.unregister(dealer)
        dealer.close(0)
