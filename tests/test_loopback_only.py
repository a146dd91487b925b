"""No test sends traffic anywhere but loopback.

Two checks. At run time, tests/loopback_guard.py (autouse, via conftest) refuses and records every
Python socket connect/send, name lookup and ZeroMQ connect to anything but loopback; the tests below
prove it does. Statically, every test source — Python here, the Unity package's C# tests, the Unreal
core's C++ tests, whose traffic the guard cannot see — is scanned for IP literals: allowed are
127.0.0.0/8 and ::1 (loopback), 0.0.0.0 and :: (bind addresses), and, in Python tests only, the
documentation ranges 192.0.2.0/24 and 2001:db8::/32 for config tables that are never dialled (the
guard would refuse the dial). Host names in Python tests are the guard's job (a lookup is refused);
in C#/C++ tests an endpoint URL must name a loopback host.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from pathlib import Path

import pytest
import zmq

from tests import loopback_guard

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {
    "tests": ("*.py", "*.toml", "*.json"),
    "unity_package/Tests": ("*.cs",),
    "unreal_plugin": ("*.cpp", "*.hpp", "*.h", "*.cc"),
}
BIND_ANY = (ipaddress.ip_address("0.0.0.0"), ipaddress.ip_address("::"))
DOCUMENTATION = (ipaddress.ip_network("192.0.2.0/24"), ipaddress.ip_network("2001:db8::/32"))

_IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w.])")
_IPV6 = re.compile(r"(?<![\w:.])((?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4})(?![\w:.])")
# A dotted quad is an address (not a version such as TensorRT's 10.13.3.9) beside a port, after a scheme
# or on a line with an address-ish word.
_ADDRESS_WORDS = re.compile(
    r"\b(host|hosts|connect|endpoint|addr|address|ip|bind|dial|sendto|livelink\w*|osc|vmc|udp|tcp|socket|"
    r"IPAddress|Connect\w*|Socket\w*)\b",
    re.IGNORECASE,
)
# ... unless it follows a product name or "version" ("tensorrt": "10.13.3.9").
_VERSION_BEFORE = re.compile(r"(version|tensorrt|rtx|trt|cuda|driver|onnx|torch)\W{0,4}$", re.IGNORECASE)
# An endpoint that could be dialled: scheme://host:port with a valid port (parse tests' bad ones are not).
_ENDPOINT = re.compile(r"\b[a-z][a-z0-9+-]*://(\[[^\]]*\]|[A-Za-z0-9_.-]+):(\d{1,5})(?!\w)")


def _test_sources() -> list[Path]:
    files: list[Path] = []
    for folder, patterns in SOURCES.items():
        for pattern in patterns:
            for path in (ROOT / folder).rglob(pattern):
                # The Unreal plugin's tests only: its sources dial what a user configures.
                if folder == "unreal_plugin" and "tests" not in path.relative_to(ROOT / folder).parts:
                    continue
                # This file's own examples of forbidden addresses are data for the scan's self-test.
                if "build" not in path.parts and path != Path(__file__).resolve():
                    files.append(path)
    return sorted(files)


def _allowed(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, python: bool) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback or ip in BIND_ANY:
        return True
    return python and any(ip in net for net in DOCUMENTATION)


def _problems(path: Path) -> list[str]:
    python = path.suffix in (".py", ".toml", ".json")
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found: list[str] = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        where = f"{name}:{number}"
        for m in _IPV4.finditer(line):
            before, after = line[: m.start()], line[m.end() :]
            addressish = after.startswith(":") or before.endswith(("://", "@")) or _ADDRESS_WORDS.search(line)
            if not addressish or _VERSION_BEFORE.search(before):
                continue  # a version number
            try:
                ip = ipaddress.ip_address(m[1])
            except ValueError:
                continue
            if not _allowed(ip, python):
                found.append(f"{where}: {m[1]}")
        for m in _IPV6.finditer(line):
            try:
                ip6 = ipaddress.ip_address(m[1])
            except ValueError:
                continue
            if not _allowed(ip6, python):
                found.append(f"{where}: {m[1]}")
        if not python:
            for m in _ENDPOINT.finditer(line):
                host = m[1].strip("[]")
                if not 0 < int(m[2]) < 65536:
                    continue
                literal = loopback_guard._is_literal(host)
                if not loopback_guard.is_loopback(host) and not (
                    literal and ipaddress.ip_address(host) in BIND_ANY
                ):
                    found.append(f"{where}: endpoint {m[0]}")
    return found


def test_test_sources_name_only_loopback_addresses() -> None:
    files = _test_sources()
    assert any(p.suffix == ".cs" for p in files) and any(p.suffix == ".py" for p in files)
    problems = [problem for path in files for problem in _problems(path)]
    assert not problems, "tests may only target loopback:\n" + "\n".join(problems)


def test_the_scan_tells_addresses_from_versions(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    cases = {
        'full("10.13.3.9")': False,
        'gpu_host((8, 9), flavours={"tensorrt": "10.13.3.9"})': False,
        'rewrite(built, tensorrt_version="1.5.0.0")': False,
        '"livelink_face": "10.0.0.5"': True,
        'sock.connect(("172.16.0.1", 9))': True,
        'url = "tcp://10.255.255.1:5555"': True,
        '("fe80::1", 11111)': True,
        '"livelink_face": "192.0.2.5"': False,
        'endpoint = "tcp://127.0.0.1:5570"': False,
        'bind("0.0.0.0", 0)': False,
    }
    for text, flagged in cases.items():
        probe.write_text(text + "\n")
        assert bool(_problems(probe)) == flagged, text
    (tmp_path / "Probe.cs").write_text('var url = "tcp://studio-pc:5570";\n')
    assert _problems(tmp_path / "Probe.cs")
    (tmp_path / "Probe.cpp").write_text('for (auto bad : {"tcp://h:0", "tcp://h:5x"}) {}\n')
    assert not _problems(tmp_path / "Probe.cpp")


def _refused(call: object) -> None:
    with pytest.raises(PermissionError, match="loopback only"):
        call()  # type: ignore[operator]
    assert loopback_guard.violations, "the refusal was not recorded"
    loopback_guard.violations.clear()  # expected here: keep this test's teardown check green


def test_guard_refuses_python_sockets_off_loopback() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        _refused(lambda: udp.connect(("192.0.2.1", 9)))
        _refused(lambda: udp.sendto(b"x", ("192.0.2.1", 9)))
        _refused(lambda: udp.sendto(b"x", 0, ("192.0.2.1", 9)))
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as udp6:
        _refused(lambda: udp6.connect(("2001:db8::1", 9)))
    _refused(lambda: socket.getaddrinfo("studio-pc.example", 80))
    with pytest.raises(socket.gaierror, match="RFC 6761"):  # unresolvable by definition: no lookup sent
        socket.getaddrinfo("no-such-host.invalid", 80)
    assert not loopback_guard.violations
    _refused(lambda: socket.create_connection(("192.0.2.1", 9), timeout=0.1))


def test_guard_refuses_zmq_connects_off_loopback() -> None:
    context = zmq.Context.instance()
    sock = context.socket(zmq.DEALER)
    try:
        _refused(lambda: sock.connect("tcp://192.0.2.1:5570"))
        _refused(lambda: sock.connect("tcp://studio-pc:5570"))
        _refused(lambda: sock.connect("tcp://127.0.0.1;192.0.2.1:5570"))
    finally:
        sock.close(linger=0)


def test_guard_lets_loopback_through() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
            client.sendto(b"ping", server.getsockname())
        assert server.recv(16) == b"ping"
    assert socket.getaddrinfo("localhost", 80)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    try:
        sock.connect("tcp://127.0.0.1:1")
        sock.connect("tcp://localhost:1")
        sock.connect("inproc://loopback-guard-test")
    finally:
        sock.close(linger=0)
    assert not loopback_guard.violations
