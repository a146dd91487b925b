"""The bridge's two ZeroMQ sockets (docs/protocol.md section 1) and the rules for using them.

ROUTER (requests, inputs, replies) is used only by the I/O thread. PUB (frames, events) is shared by
the scheduler threads and the I/O thread behind a lock, and never blocks.

What libzmq does, and what we add (docs/architecture.md, "Frame delivery"):
- A PUB pipe per subscriber holds at most `frames_hwm` messages; past that libzmq drops the *newest*
  message for that subscriber only, and a PUB send never reports it. We send with XPUB_NODROP, which
  makes libzmq refuse (Again) a message some matching subscriber has no room for; the message is then
  sent again lossy, so every other subscriber still gets it, and the stall is counted. libzmq skips a
  stalled subscriber silently until it reads again, so a stall counts once, not once per frame.
- The kernel's send buffer is left to Linux's autotuning (`frames_sndbuf` 0): a buffer smaller than
  a message collapses TCP throughput (measured on loopback: 256 KiB batch messages through a 32 KiB
  buffer, 3 MB/s instead of 185 MB/s; a 2048-session `batch/motion` call is ~1 MiB), which is what
  capped the batch topic at scale. So what a paused subscriber reads on resume before current frames
  is `frames_hwm` messages plus what the kernel buffered (up to net.ipv4.tcp_wmem's max, 4 MiB by
  default); clients bound their own staleness ("resume at newest", docs/protocol.md section 1). A
  fixed `frames_sndbuf` tightens it for a deployment whose messages all fit in it.
- `hold=True` (offline frames) does not resend: the caller keeps the frame and retries, so a
  subscriber that keeps up gets every one.
- Subscriptions: libzmq keeps every stored topic in a trie (about 40-60 bytes per topic byte); the
  frames socket takes messages of at most MAX_SUBSCRIPTION_BYTES (longer ones close that connection)
  and reads at most `subscription_hwm` of them per connection at a time. The frames socket is an XPUB
  in manual mode: libzmq hands us every subscription and stores only those we apply, so
  `ConnectionSubscriptions` stores a prefix only if it can match a topic we publish, and at most
  `max_subscriptions` per connection and `max_total_subscriptions` over all connections together
  (the rest are refused, counted, and that connection simply gets no frames for them: libzmq's trie
  costs ~2 KB per stored prefix, so 200 connections x 256 prefixes were +101 MB). The I/O thread
  applies them (`pump_subscriptions`) so publishing threads rarely meet them, SUBSCRIPTION_SLICE
  messages per hold of the publishing lock: a backlog of 51,200 subscriptions delays a frame by one
  slice, not by all of them.
- `Subscriptions` counts, per prefix, the connections holding it (the subscriptions and
  unsubscriptions that took effect, and the unsubscriptions libzmq writes for a connection that
  ended), so publishing can skip per-session frames nobody subscribes to (`matching`).
- ROUTER_MANDATORY: a reply to a full or vanished peer fails loudly, so it is counted by reason.

Security: loopback only, unless the operator passes `insecure_remote` or gives the bridge a CURVE
secret key; with a key both sockets are CURVE servers (authenticated, encrypted), and with a list of
client public keys only those clients are admitted.
"""

from __future__ import annotations

import enum
import errno
import ipaddress
import os
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import zmq
from zmq.utils.monitor import recv_monitor_message

from bridge.protocol.batch_frames import BATCH_TOPIC_PREFIX, MAX_BATCH_TOPIC_BYTES
from bridge.protocol.versions import (
    DEFAULT_FRAMES_PORT,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_REQUEST_PORT,
    EVENT_TOPIC_PREFIX,
    FRAME_TOPIC_PREFIX,
)
from bridge.transport.curve import start_authenticator

# The PUB socket receives only subscriptions: 1 byte + a topic prefix (the longest topic is 30 bytes,
# a batch group's `batch/motion/<16 characters>/`), or a ZMTP 3.1 SUBSCRIBE command (10 bytes + prefix).
MAX_SUBSCRIPTION_BYTES = 64
# libzmq applies the same limit to the CURVE handshake's commands (HELLO is 200 bytes, INITIATE about
# 300 with its metadata), so a CURVE frames socket allows this much instead.
MAX_SUBSCRIPTION_BYTES_CURVE = 512
# Failed CURVE handshakes by libzmq's reason: a client without the key, with the wrong server key
# (protocol), or with a key the allow-list refuses (auth). Counted so operators see who is knocking.
HANDSHAKE_FAILURES: dict[int, str] = {
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: "no_detail",
    zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "protocol",
    zmq.EVENT_HANDSHAKE_FAILED_AUTH: "auth",
}


class Delivery(enum.Enum):
    SENT = "sent"  # queued for every matching subscriber
    STALLED = "stalled"  # queued for the others; a matching subscriber's queue was full
    HELD = "held"  # (hold=True) sent to nobody, a matching subscriber is full: retry later
    CLOSED = "closed"  # its session had ended: sent to nobody (the bridge's frame gate, not libzmq)


@dataclass(frozen=True)
class TransportConfig:
    host: str = "127.0.0.1"
    request_port: int = DEFAULT_REQUEST_PORT  # 0 picks a free port
    frames_port: int = DEFAULT_FRAMES_PORT
    frames_hwm: int = 64  # messages queued per subscriber; beyond it that subscriber misses frames
    frames_sndbuf: int = 0  # kernel send buffer per subscriber, bytes; 0: autotuning (keep it > any message)
    subscription_hwm: int = 64  # subscription messages read per connection at a time
    max_subscriptions: int = 256  # prefixes one frames-port connection may hold; 0: no limit
    max_total_subscriptions: int = 4096  # prefixes all frames-port connections may hold together; 0: none
    request_hwm: int = 1000  # replies queued per client before libzmq drops them
    # Requests buffered per client connection before libzmq stops reading it (TCP pushes back): with
    # the message size cap below, at most inbound_hwm x 2 x max_message_bytes bytes per connection.
    inbound_hwm: int = 8
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    insecure_remote: bool = False
    curve_secret_key: bytes | None = None  # Z85; enables CURVE on both sockets
    curve_client_keys: frozenset[bytes] | None = None  # Z85 public keys admitted; None: any keyed client


# Topics whose subscriptions publishing asks about; longer prefixes can match none of them.
PUBLISHED_PREFIXES = (FRAME_TOPIC_PREFIX, BATCH_TOPIC_PREFIX)
# The longest topic asked about: a batch group's batch/motion/<16 characters>/ (frame/<id> is 22).
MAX_TOPIC_BYTES = max(len(FRAME_TOPIC_PREFIX) + 16, MAX_BATCH_TOPIC_BYTES)
# Every topic family the frames socket carries, and a length no topic reaches (the longest is 30
# bytes): a prefix outside these can match nothing, so it is never stored.
TOPIC_FAMILIES = (FRAME_TOPIC_PREFIX, EVENT_TOPIC_PREFIX, BATCH_TOPIC_PREFIX)
MAX_STORED_PREFIX_BYTES = 32
# Subscription messages read per hold of the publishing lock, and per I/O turn (~3 us each): a turn
# applies a whole backlog of 200 connections x 64 (what libzmq reads per connection at a time), since a
# subscription applied a turn late loses its subscriber the frames published meanwhile.
SUBSCRIPTION_SLICE = 64
SUBSCRIPTIONS_PER_TURN = 16384


def can_match(prefix: bytes) -> bool:
    """Whether some topic the bridge publishes starts with prefix."""
    return len(prefix) <= MAX_STORED_PREFIX_BYTES and any(
        prefix.startswith(f) or f.startswith(prefix) for f in TOPIC_FAMILIES
    )


class ConnectionSubscriptions:
    """The prefixes each frames-port connection holds, so that one connection cannot fill libzmq's
    subscription trie. Connections are told apart by the descriptor libzmq read the subscription on
    (ZMQ_SRCFD) and that descriptor's socket inode, so a new connection that reuses a closed one's
    descriptor starts afresh. Records of closed descriptors are dropped whenever libzmq reports that
    a connection ended (its unsubscribes without a descriptor). A socket monitor would name the
    ended descriptor, but a monitor on the XPUB made a later XPUB in the same process miss
    subscriptions (seen with libzmq 4.3.5 through pyzmq), so the bridge does not use one there."""

    def __init__(self, limit: int, total_limit: int = 0) -> None:
        self.limit = limit  # per connection; 0: no limit
        self.total_limit = total_limit  # over all connections; 0: no limit
        self.refused = 0  # subscriptions not stored: over a limit, or matching nothing we publish
        self.total = 0  # prefixes stored, over all connections
        self._held: dict[int, tuple[int, set[bytes]]] = {}  # descriptor: (inode, prefixes)
        self._ended = False  # a connection ended since the last `settle`

    def admit(self, socket: zmq.Socket[bytes], frame: zmq.Frame) -> bytes | None:
        """Decide one message read from `socket`, an XPUB in manual mode, and apply it there; call it
        before the next operation on that socket (libzmq applies an option set now to the
        connection the message came from). Returns the message that took effect (b"\x01" or
        b"\x00" + prefix; so each prefix has one subscribe per connection holding it, and one
        unsubscribe when it lets go or ends), or None: refused, a repeat, or no subscription."""
        message = frame.bytes
        if not message or message[0] > 1:
            return None
        prefix = message[1:]
        try:
            fd = frame.get(zmq.SRCFD)
        except zmq.ZMQError:  # libzmq's unsubscribe for a connection that ended: it left the trie
            self._ended = True
            return None if message[0] else message
        held = self._prefixes(fd)
        if message[0]:
            if prefix in held:
                return None
            full = (self.limit and len(held) >= self.limit) or (
                self.total_limit and self.total >= self.total_limit
            )
            if full or not can_match(prefix):
                self.refused += 1
                return None
            held.add(prefix)
            self.total += 1
            socket.setsockopt(zmq.SUBSCRIBE, prefix)
            return message
        if prefix not in held:
            return None
        held.discard(prefix)
        self.total -= 1
        socket.setsockopt(zmq.UNSUBSCRIBE, prefix)
        return message

    def settle(self) -> None:
        """After a read: if a connection ended, drop the records of descriptors that closed or now
        belong to another connection."""
        if self._ended:
            self._ended = False
            for fd, (inode, prefixes) in list(self._held.items()):
                if _inode(fd) != inode:
                    self.total -= len(prefixes)
                    del self._held[fd]

    def _prefixes(self, fd: int) -> set[bytes]:
        inode = _inode(fd)
        record = self._held.get(fd)
        if record is None or record[0] != inode:
            if record is not None:  # the descriptor's previous connection ended
                self.total -= len(record[1])
            record = self._held[fd] = (inode, set())
        return record[1]


def _inode(fd: int) -> int:
    """The socket behind a descriptor (-1: closed): tells a reused descriptor from its old owner."""
    try:
        return os.fstat(fd).st_ino
    except OSError:
        return -1


def connection_of(frame: zmq.Frame) -> int:
    """The connection a received message came on, as its socket's inode (-1: unknown): a new
    connection differs from an old one even where it reuses the routing id and the descriptor."""
    try:
        return _inode(frame.get(zmq.SRCFD))
    except zmq.ZMQError:
        return -1


class Subscriptions:
    """Subscribed prefixes of the frames socket, with the connections holding each (fed the
    messages that took effect: `ConnectionSubscriptions.admit`)."""

    def __init__(self) -> None:
        self.prefixes: Counter[bytes] = Counter()
        self._lengths: Counter[int] = Counter()  # prefixes held per prefix length

    def apply(self, message: bytes) -> None:
        """One XPUB message: b"\x01" + prefix (subscribe) or b"\x00" + prefix (unsubscribe)."""
        if not message or message[0] > 1:
            return
        prefix = message[1:]
        if len(prefix) > MAX_TOPIC_BYTES or not any(
            prefix.startswith(p) or p.startswith(prefix) for p in PUBLISHED_PREFIXES
        ):
            return  # matches no topic we ask about
        if message[0]:
            if not self.prefixes[prefix]:
                self._lengths[len(prefix)] += 1
            self.prefixes[prefix] += 1
        elif self.prefixes.get(prefix, 0) > 0:
            self.prefixes[prefix] -= 1
            if not self.prefixes[prefix]:
                del self.prefixes[prefix]
                self._lengths[len(prefix)] -= 1
                if not self._lengths[len(prefix)]:
                    del self._lengths[len(prefix)]

    def matching(self, topics: Sequence[bytes]) -> list[bool]:
        """For each topic: does any subscribed prefix match it? One set lookup per topic and prefix
        length in use (usually one or two)."""
        subs = self.prefixes
        if not subs or not topics:
            return [False] * len(topics)
        lo, hi = min(topics), max(topics)  # every topic shares the first `shared` bytes
        shared = next((i for i, (a, b) in enumerate(zip(lo, hi, strict=False)) if a != b), len(lo))
        lengths = []
        for k in self._lengths:
            if k <= shared and topics[0][:k] in subs:
                return [True] * len(topics)  # a prefix every topic has (`frame/`, `f`, the empty one)
            if k > shared:
                lengths.append(k)
        if not lengths:
            return [False] * len(topics)
        if len(lengths) == 1:
            (k,) = lengths
            return [t[:k] in subs for t in topics]
        return [any(t[:k] in subs for k in lengths) for t in topics]


def request_router(context: zmq.Context[zmq.Socket[bytes]], config: TransportConfig) -> zmq.Socket[bytes]:
    """The request port's socket with its bounds per client (see the module doc)."""
    router = context.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.setsockopt(zmq.RCVHWM, config.inbound_hwm)
    router.setsockopt(zmq.SNDHWM, config.request_hwm)
    # libzmq refuses oversize messages before they reach Python; we still answer TOO_LARGE for
    # anything between our limit and this hard cap, so clients learn why.
    router.setsockopt(zmq.MAXMSGSIZE, 2 * config.max_message_bytes)
    # A reply to a full or vanished peer raises (Again, EHOSTUNREACH), so it can be counted.
    router.setsockopt(zmq.ROUTER_MANDATORY, 1)
    if config.curve_secret_key is not None:
        router.setsockopt(zmq.CURVE_SERVER, 1)
        router.setsockopt(zmq.CURVE_SECRETKEY, config.curve_secret_key)
    return router


def frames_xpub(context: zmq.Context[zmq.Socket[bytes]], config: TransportConfig) -> zmq.Socket[bytes]:
    """The frames port's socket with the bounds per subscriber (see the module doc): an XPUB in
    manual mode, whose subscriptions its owner admits (`ConnectionSubscriptions.admit`)."""
    xpub = context.socket(zmq.XPUB)
    xpub.setsockopt(zmq.LINGER, 0)
    xpub.setsockopt(zmq.SNDHWM, config.frames_hwm)
    if config.frames_sndbuf:
        xpub.setsockopt(zmq.SNDBUF, config.frames_sndbuf)
    xpub.setsockopt(zmq.RCVHWM, config.subscription_hwm)
    curve = config.curve_secret_key is not None
    xpub.setsockopt(zmq.MAXMSGSIZE, MAX_SUBSCRIPTION_BYTES_CURVE if curve else MAX_SUBSCRIPTION_BYTES)
    xpub.setsockopt(zmq.XPUB_MANUAL, 1)
    if config.curve_secret_key is not None:
        xpub.setsockopt(zmq.CURVE_SERVER, 1)
        xpub.setsockopt(zmq.CURVE_SECRETKEY, config.curve_secret_key)
    return xpub


def is_loopback(host: str) -> bool:
    if host in ("localhost", "lo"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BridgeSockets:
    def __init__(
        self, config: TransportConfig, context: zmq.Context[zmq.Socket[bytes]] | None = None
    ) -> None:
        if not is_loopback(config.host) and not config.insecure_remote and config.curve_secret_key is None:
            raise ValueError(
                f"refusing to bind to non-loopback host {config.host!r}: give the bridge a CURVE key "
                "(--curve-secret-key, see `avatar-bridge keys`) or pass --insecure-remote to expose it "
                "unauthenticated"
            )
        if config.curve_client_keys is not None and config.curve_secret_key is None:
            raise ValueError("client keys need a CURVE secret key for the bridge")
        self.config = config
        # libzmq runs one ZAP handler per context, so a bridge that checks client keys gets its own.
        self._own_context = context is None and config.curve_client_keys is not None
        self.context = zmq.Context() if self._own_context else (context or zmq.Context.instance())
        self._auth = (
            start_authenticator(self.context, config.curve_client_keys)
            if config.curve_client_keys is not None
            else None
        )
        self.router = request_router(self.context, config)
        self.pub = frames_xpub(self.context, config)
        self.pub.setsockopt(zmq.XPUB_NODROP, 1)
        self._pub_lock = threading.Lock()
        self.subscriptions = Subscriptions()
        self.connections = ConnectionSubscriptions(config.max_subscriptions, config.max_total_subscriptions)
        curve = config.curve_secret_key is not None
        handshakes = sum(HANDSHAKE_FAILURES) if curve else 0
        self._router_monitor = self.router.get_monitor_socket(handshakes) if curve else None
        # Read under the PUB lock with the subscriptions: CURVE failures on the frames port.
        self._pub_monitor = self.pub.get_monitor_socket(handshakes) if curve else None
        self._pub_handshake_failures: list[str] = []
        # Readable when the frames socket has news (a subscription): the I/O loop polls it, then pumps.
        self.subscription_fd = int(self.pub.getsockopt(zmq.FD))
        self.request_port = _bind(self.router, config.host, config.request_port)
        self.frames_port = _bind(self.pub, config.host, config.frames_port)

    @property
    def frames_endpoint(self) -> str:
        host = "127.0.0.1" if self.config.host in ("0.0.0.0", "*") else self.config.host
        return f"tcp://{host}:{self.frames_port}"

    def publish(self, topic: bytes, payload: bytes, *, hold: bool = False) -> Delivery:
        """Send one [topic, payload] message to every subscriber with room for it (see the module doc)."""
        with self._pub_lock:
            try:
                self.pub.send_multipart((topic, payload), flags=zmq.NOBLOCK, copy=False)
                return Delivery.SENT
            except zmq.Again:
                if hold:
                    return Delivery.HELD
            # Lossy for this one message: the subscribers with room get it, the full one misses it.
            self.pub.setsockopt(zmq.XPUB_NODROP, 0)
            try:
                self.pub.send_multipart((topic, payload), flags=zmq.NOBLOCK, copy=False)
            finally:
                self.pub.setsockopt(zmq.XPUB_NODROP, 1)
        return Delivery.STALLED

    def publish_event(self, topic: bytes, payload: bytes) -> Delivery:
        """Publish a session event, subscriptions read first: in manual mode a subscription counts
        only once read, and a client subscribes to `event/` just before it opens a session."""
        with self._pub_lock:
            self._read_subscriptions()
        return self.publish(topic, payload)

    def pump_subscriptions(self) -> None:
        """Apply the subscriptions that arrived (the I/O thread each turn, publishing before a call):
        at most SUBSCRIPTIONS_PER_TURN, a slice per hold of the publishing lock."""
        for _ in range(SUBSCRIPTIONS_PER_TURN // SUBSCRIPTION_SLICE):
            with self._pub_lock:
                if self._read_subscriptions() < SUBSCRIPTION_SLICE:
                    return

    def matching(self, topics: Sequence[bytes]) -> list[bool]:
        """For each topic, whether a subscriber would receive it now (subscriptions read first, one
        slice: the I/O thread applies the rest)."""
        with self._pub_lock:
            self._read_subscriptions()
            return self.subscriptions.matching(topics)

    def _read_subscriptions(self) -> int:
        """Apply at most SUBSCRIPTION_SLICE subscription messages (libzmq fair-queues them across
        connections, so a new client's are among the first); how many were read."""
        read = 0
        # A non-blocking recv processes libzmq's pending commands (new subscribers' pipes) first.
        while read < SUBSCRIPTION_SLICE:
            try:
                frame = self.pub.recv(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            read += 1
            effect = self.connections.admit(self.pub, frame)
            if effect is not None:
                self.subscriptions.apply(effect)
        self.connections.settle()
        while self._pub_monitor is not None and self._pub_monitor.poll(0):
            event = recv_monitor_message(self._pub_monitor)
            self._pub_handshake_failures.append(HANDSHAKE_FAILURES.get(int(event["event"]), "other"))
        return read

    def reply(self, envelope: tuple[bytes, ...], payload: bytes) -> str | None:
        """Send a reply (I/O thread); None once queued, else why it was dropped: `peer_full` (the
        client does not read its replies) or `peer_gone` (it disconnected)."""
        try:
            self.router.send_multipart((*envelope, payload), flags=zmq.NOBLOCK)
        except zmq.Again:
            return "peer_full"
        except zmq.ZMQError as exc:
            if exc.errno == errno.EHOSTUNREACH:
                return "peer_gone"
            raise
        return None

    def handshake_failures(self) -> list[str]:
        """Reasons of the CURVE handshakes that failed since the last call (I/O thread only)."""
        reasons = []
        while self._router_monitor is not None and self._router_monitor.poll(0):
            event = recv_monitor_message(self._router_monitor)
            reasons.append(HANDSHAKE_FAILURES.get(int(event["event"]), "other"))
        with self._pub_lock:  # the frames socket's come in as its subscriptions are read (each loop turn)
            reasons += self._pub_handshake_failures
            self._pub_handshake_failures = []
        return reasons

    def close(self) -> None:
        if self._router_monitor is not None:
            self._router_monitor.close(0)
        self.router.close(0)
        with self._pub_lock:
            if self._pub_monitor is not None:
                self._pub_monitor.close(0)
            self.pub.close(0)
        if self._auth is not None:
            self._auth.stop()
        if self._own_context:
            self.context.term()


def _bind(socket: zmq.Socket[bytes], host: str, port: int) -> int:
    if port == 0:
        return socket.bind_to_random_port(f"tcp://{host}")
    socket.bind(f"tcp://{host}:{port}")
    return port
