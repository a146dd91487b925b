"""Tests send traffic to loopback only: a guard that refuses every other destination, for real.

While the test session runs, Python sockets (connect, connect_ex, sendto, sendmsg), name lookups
(getaddrinfo, gethostbyname: a lookup of any other name is traffic to a DNS server; names under
.invalid fail at once, as RFC 6761 says they should, without a lookup) and ZeroMQ
connects are checked. A refused call raises PermissionError where it was made (often a worker thread
that swallows it), and is recorded, so the test it happened in fails at teardown whoever caught it.
Subprocesses (the bridge process, the C++ and C# suites) are not covered here: test_loopback_only.py
scans the test sources for the addresses they use.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import zmq

# Names that resolve to this host without asking anyone (the hosts file).
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})
# zmq endpoint: transport://[source;]host:port (tcp, udp, ws...); ipc:// and inproc:// never leave the host.
_ZMQ_ENDPOINT = re.compile(r"^(?P<transport>[a-z0-9+]+)://(?:[^;]*;)?(?P<host>\[[^\]]*\]|[^:/]*)")

violations: list[str] = []
_lock = threading.Lock()


@functools.lru_cache(maxsize=256)
def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 (and IPv4-mapped loopback), or a loopback name."""
    host = host.strip("[]").split("%", 1)[0].lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True


def _refuse(what: str, target: object) -> None:
    message = f"tests send traffic to loopback only: refused {what} to {target!r}"
    with _lock:
        violations.append(message)
    raise PermissionError(message)


def _check_address(what: str, address: object) -> None:
    # AF_INET/AF_INET6 addresses are tuples; AF_UNIX paths (str/bytes) stay on this host.
    if isinstance(address, tuple) and address and not is_loopback(str(address[0])):
        _refuse(what, address)


def _check_lookup(host: object) -> None:
    # A literal needs no lookup (connect checks where it goes); None/"" is this host (bind addresses).
    if isinstance(host, bytes):
        host = host.decode()
    if not isinstance(host, str) or not host or is_loopback(host) or _is_literal(host):
        return
    if host.lower().rstrip(".").endswith(".invalid"):
        # RFC 6761: names under .invalid never resolve, and resolvers should say so without asking
        # anyone; glibc asks the DNS server, so answer here (tests use them as "unresolvable host").
        raise socket.gaierror(socket.EAI_NONAME, f"{host}: .invalid never resolves (RFC 6761), not looked up")
    _refuse("name lookup", host)


def check_zmq_endpoint(endpoint: str) -> None:
    match = _ZMQ_ENDPOINT.match(endpoint)
    if match is None or match["transport"] in ("ipc", "inproc"):
        return
    if not is_loopback(match["host"]):
        _refuse("ZeroMQ connect", endpoint)


def _wrap(original: Callable[..., Any], check: Callable[[tuple[Any, ...]], None]) -> Callable[..., Any]:
    @functools.wraps(original)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        check(args)
        return original(*args, **kwargs)

    return guarded


@pytest.fixture(scope="session", autouse=True)
def loopback_only() -> Iterator[None]:
    patch = pytest.MonkeyPatch()
    s = socket.socket
    patch.setattr(s, "connect", _wrap(s.connect, lambda a: _check_address("connect", a[1])))
    patch.setattr(s, "connect_ex", _wrap(s.connect_ex, lambda a: _check_address("connect", a[1])))
    # sendto(data, address) or sendto(data, flags, address); sendmsg(buffers, ancdata, flags, address).
    patch.setattr(s, "sendto", _wrap(s.sendto, lambda a: _check_address("sendto", a[-1])))
    patch.setattr(
        s, "sendmsg", _wrap(s.sendmsg, lambda a: _check_address("sendmsg", a[4]) if len(a) > 4 else None)
    )
    patch.setattr(socket, "getaddrinfo", _wrap(socket.getaddrinfo, lambda a: _check_lookup(a[0])))
    patch.setattr(socket, "gethostbyname", _wrap(socket.gethostbyname, lambda a: _check_lookup(a[0])))
    patch.setattr(zmq.Socket, "connect", _wrap(zmq.Socket.connect, lambda a: check_zmq_endpoint(str(a[1]))))
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def no_traffic_left_loopback() -> Iterator[None]:
    yield
    with _lock:
        found, violations[:] = list(violations), []
    assert not found, "\n".join(found)
