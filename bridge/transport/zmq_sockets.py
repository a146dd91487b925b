"""The bridge's two ZeroMQ sockets (docs/protocol.md section 1) and the rules for using them.

ROUTER (requests, inputs, replies) is used only by the I/O thread. PUB (frames, events) is shared by
the scheduler threads and the I/O thread behind a lock, and never blocks: at its high-water mark
libzmq drops messages for the slow subscriber only, which is the "latest wins" rule of the protocol.

Security: loopback only, unless the operator passes `insecure_remote` or gives the bridge a CURVE
secret key; with a key both sockets are CURVE servers (authenticated, encrypted), and with a list of
client public keys only those clients are admitted.
"""

from __future__ import annotations

import ipaddress
import threading
from dataclasses import dataclass

import zmq
from zmq.utils.monitor import recv_monitor_message

from bridge.protocol.versions import DEFAULT_FRAMES_PORT, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_REQUEST_PORT
from bridge.transport.curve import start_authenticator

# The PUB socket receives only subscriptions (a topic prefix); anything longer is not a subscription.
MAX_SUBSCRIPTION_BYTES = 1024
# Failed CURVE handshakes by libzmq's reason: a client without the key, with the wrong server key
# (protocol), or with a key the allow-list refuses (auth). Counted so operators see who is knocking.
HANDSHAKE_FAILURES: dict[int, str] = {
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: "no_detail",
    zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "protocol",
    zmq.EVENT_HANDSHAKE_FAILED_AUTH: "auth",
}


@dataclass(frozen=True)
class TransportConfig:
    host: str = "127.0.0.1"
    request_port: int = DEFAULT_REQUEST_PORT  # 0 picks a free port
    frames_port: int = DEFAULT_FRAMES_PORT
    frames_hwm: int = 64  # per subscriber; older frames are dropped beyond this
    request_hwm: int = 1000
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    insecure_remote: bool = False
    curve_secret_key: bytes | None = None  # Z85; enables CURVE on both sockets
    curve_client_keys: frozenset[bytes] | None = None  # Z85 public keys admitted; None: any keyed client


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
        self.router = self.context.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.setsockopt(zmq.RCVHWM, config.request_hwm)
        self.router.setsockopt(zmq.SNDHWM, config.request_hwm)
        # libzmq refuses oversize messages before they reach Python; we still answer TOO_LARGE for
        # anything between our limit and this hard cap, so clients learn why.
        self.router.setsockopt(zmq.MAXMSGSIZE, 2 * config.max_message_bytes)
        # A reply to a vanished peer is dropped rather than raising.
        self.router.setsockopt(zmq.ROUTER_MANDATORY, 0)
        self.pub = self.context.socket(zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.setsockopt(zmq.SNDHWM, config.frames_hwm)
        self.pub.setsockopt(zmq.MAXMSGSIZE, MAX_SUBSCRIPTION_BYTES)
        if config.curve_secret_key is not None:
            for sock in (self.router, self.pub):
                sock.setsockopt(zmq.CURVE_SERVER, 1)
                sock.setsockopt(zmq.CURVE_SECRETKEY, config.curve_secret_key)
        self._pub_lock = threading.Lock()
        mask = sum(HANDSHAKE_FAILURES)
        self._monitors = (
            [sock.get_monitor_socket(mask) for sock in (self.router, self.pub)]
            if config.curve_secret_key is not None
            else []
        )
        self.request_port = _bind(self.router, config.host, config.request_port)
        self.frames_port = _bind(self.pub, config.host, config.frames_port)

    @property
    def frames_endpoint(self) -> str:
        host = "127.0.0.1" if self.config.host in ("0.0.0.0", "*") else self.config.host
        return f"tcp://{host}:{self.frames_port}"

    def publish(self, topic: bytes, payload: bytes) -> bool:
        """Send one [topic, payload] message; False if libzmq could not queue it (counted as dropped)."""
        with self._pub_lock:
            try:
                self.pub.send_multipart((topic, payload), flags=zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return False
        return True

    def handshake_failures(self) -> list[str]:
        """Reasons of the CURVE handshakes that failed since the last call (I/O thread only)."""
        reasons = []
        for monitor in self._monitors:
            while monitor.poll(0):
                event = recv_monitor_message(monitor)
                reasons.append(HANDSHAKE_FAILURES.get(int(event["event"]), "other"))
        return reasons

    def close(self) -> None:
        for monitor in self._monitors:
            monitor.close(0)
        self.router.close(0)
        with self._pub_lock:
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
