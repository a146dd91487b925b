"""A UDP destination that never raises: bad hosts and closed ports are logged once, then retried.

The socket is *connected* so that an ICMP "port unreachable" from a closed port surfaces as
ConnectionRefusedError on a later send (an unconnected UDP socket never reports it), which lets the
log say what is wrong instead of sending into the void. Name resolution happens on first use, in
the output's worker thread, so a slow or failing DNS lookup never blocks the router or the bridge.
"""

from __future__ import annotations

import logging
import socket
import time

log = logging.getLogger(__name__)

RETRY_RESOLVE_S = 5.0  # how often an unresolvable host is looked up again
# A send "succeeds" locally even to a closed port (the refusal arrives on a later send), so the
# destination counts as healthy again only after this long without an error.
RECOVERED_AFTER_S = 5.0


def parse_host_port(text: str, default_port: int | None = None) -> tuple[str, int]:
    """`HOST:PORT`, `[IPv6]:PORT`, or with a default port also `HOST`, `[IPv6]`, bare IPv6 -> (host, port)."""
    port_text: str | None = None
    if text.startswith("["):
        host, closed, rest = text[1:].partition("]")
        if not closed or (rest and not rest.startswith(":")):
            raise ValueError(f"'{text}': expected [IPv6]:PORT")
        port_text = rest[1:] if rest else None
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:  # no colon, or several: a bare host name or IPv6 address
        host = text
    if not host:
        raise ValueError(f"'{text}': missing host")
    if port_text is None:
        if default_port is None:
            raise ValueError(f"'{text}': expected HOST:PORT")
        return host, default_port
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"'{text}': port '{port_text}' is not a number") from None
    if not 0 < port < 65536:
        raise ValueError(f"'{text}': port {port} out of range 1..65535")
    return host, port


class UdpDestination:
    def __init__(self, host: str, port: int, label: str) -> None:
        self.host = host
        self.port = port
        self.label = label  # e.g. "vmc://127.0.0.1:39539", used in every log line
        self._sock: socket.socket | None = None
        self._next_resolve = 0.0
        self._failing: str | None = None  # the error last logged; None while healthy
        self._last_failure = 0.0
        self.sent = 0
        self.failed = 0

    def send(self, datagrams: list[bytes]) -> None:
        sock = self._socket()
        if sock is None:
            self.failed += len(datagrams)
            return
        for datagram in datagrams:
            try:
                sock.send(datagram)
            except ConnectionRefusedError:
                self._fail(f"nothing listens on UDP port {self.port} of {self.host} (ICMP port unreachable)")
                self.failed += 1
            except OSError as exc:
                self._fail(f"send failed: {exc}")
                self.failed += 1
            else:
                self.sent += 1
                if self._failing is not None and time.monotonic() - self._last_failure > RECOVERED_AFTER_S:
                    log.info("%s: sending again", self.label)
                    self._failing = None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _socket(self) -> socket.socket | None:
        if self._sock is not None:
            return self._sock
        now = time.monotonic()
        if now < self._next_resolve:
            return None
        try:
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_DGRAM)
            family, kind, proto, _, address = infos[0]
            sock = socket.socket(family, kind, proto)
            sock.setblocking(False)  # a full send buffer drops the datagram instead of stalling
            sock.connect(address)
        except OSError as exc:
            self._next_resolve = now + RETRY_RESOLVE_S
            self._fail(
                f"cannot resolve or reach host '{self.host}' ({exc}); retrying every {RETRY_RESOLVE_S:.0f} s"
            )
            return None
        self._sock = sock
        return sock

    def _fail(self, message: str) -> None:
        # Log once per distinct problem: a closed port would otherwise log at the frame rate.
        self._last_failure = time.monotonic()
        if message != self._failing:
            log.warning("%s: %s", self.label, message)
            self._failing = message
