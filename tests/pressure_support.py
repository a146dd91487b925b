"""What the attack tests of issues 11 and 40 share: an attacker's raw connection to a bridge, the attack
payloads, the memory a bridge process (and its workers) holds, and waiting for a condition."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import zmq

from bridge.clients.harness.client import BridgeClient
from bridge.protocol import ErrorCode, pack, unpack_map
from bridge.protocol.requests import MAX_INPUT_ITEMS

# Growth allowed over an attack: the attacks of issue 40 grew it by 100 MB to 3 GB.
RSS_GROWTH_MIB = 60


def rss_mib(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as f:
        line = next(x for x in f if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def tree_rss_mib(pid: int) -> float:
    """The resident memory of a process and all its descendants."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            total += rss_mib(p)
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended meanwhile
    return total


def until(check: Callable[[], bool], timeout_s: float) -> bool:
    """Whether `check` came true within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class Attacker:
    """A raw DEALER: sends any payload, reads replies as maps."""

    def __init__(self, port: int, *, rcvhwm: int = 1000) -> None:
        self.sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVHWM, rcvhwm)
        self.sock.connect(f"tcp://127.0.0.1:{port}")

    def send(self, message: dict[str, Any] | bytes) -> None:
        self.sock.send(message if isinstance(message, bytes) else pack(message))

    def replies(self, count: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout_s
        while len(out) < count and self.sock.poll(max(1, int((deadline - time.monotonic()) * 1000))):
            out.append(unpack_map(self.sock.recv()))
        return out

    def ask(self, message: dict[str, Any] | bytes) -> dict[str, Any]:
        self.send(message)
        (reply,) = self.replies(1)
        return reply

    def close(self) -> None:
        self.sock.close(0)


def raw_dealer(port: int, routing_id: bytes | None = None) -> zmq.Socket[bytes]:
    sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    if routing_id is not None:
        sock.setsockopt(zmq.ROUTING_ID, routing_id)
    sock.connect(f"tcp://127.0.0.1:{port}")
    return sock


def ask(sock: zmq.Socket[bytes], message: dict[str, Any], timeout_ms: int = 10_000) -> dict[str, Any]:
    sock.send(pack(message))
    assert sock.poll(timeout_ms), message
    return unpack_map(sock.recv())


def connect(request_port: int) -> BridgeClient:
    """A protocol client that has said hello, as an attacker."""
    client = BridgeClient("127.0.0.1", request_port, timeout_s=10.0)
    client.hello("attacker")
    return client


def deep(levels: int) -> bytes:
    """An array nested `levels` deep around a nil: one byte per level."""
    return b"\x91" * levels + b"\xc0"


def deep_messages(levels: int) -> dict[str, bytes]:
    """A deep structure in every position a request has."""
    nest = deep(levels)
    return {
        "unknown key": b"\x83\xa2op\xa4ping\xa2id\x01\xa5extra" + nest,
        "session": b"\x83\xa2op\xa4ping\xa2id\x01\xa7session" + nest,
        "id": b"\x82\xa2op\xa4ping\xa2id" + nest,
        "inputs item": b"\x83\xa2op\xa6inputs\xa2id\x01\xa5items\x92\x80" + nest,
        "open options": b"\x83\xa2op\xa4open\xa8pipeline\xa6motion\xa7options\x81\xa1x" + nest,
        "op": b"\x81\xa2op" + nest,
        "whole message": nest,
    }


def deep_message_replies(attacker: Attacker) -> Iterator[tuple[str, int, dict[str, Any], dict[str, Any]]]:
    """Each deep message (1000 and 100,000 levels, in every position) sent with a ping behind it: its
    position, its depth, the reply to it and the ping's."""
    for levels in (1000, 100_000):
        for position, message in deep_messages(levels).items():
            attacker.sock.send(message)
            attacker.sock.send(pack({"op": "ping", "id": 77}))
            reply, pong = attacker.replies(2)
            yield position, levels, reply, pong


def junk_inputs(items: int = MAX_INPUT_ITEMS) -> bytes:
    """A 4 KB `inputs` message of `items` junk items (empty maps), each one failing validation."""
    return b"\x83\xa2op\xa6inputs\xa2id\x05\xa5items\xdc" + items.to_bytes(2, "big") + b"\x80" * items


def bloated_session_messages() -> Iterator[bytes]:
    """Requests of four ops whose `session` is a 4M-element array: 20 messages of 4 MB, one at a time."""
    bloated = b"\xdd" + (4_000_000).to_bytes(4, "big") + b"\xc0" * 4_000_000
    for op in ("input", "ping", "close", "inputs") * 5:
        head = pack({"op": op, "id": 3})
        yield b"\x83" + head[1:] + b"\xa7session" + bloated


def refuse_bloated_sessions(attacker: Attacker) -> float:
    """Send bloated_session_messages one at a time, each refused as a wrong type or a missing field;
    the seconds they took (the caller bounds them: one process or through the front end)."""
    t0 = time.perf_counter()
    for message in bloated_session_messages():
        attacker.sock.send(message)
        (reply,) = attacker.replies(1)
        assert reply["code"] in (ErrorCode.BAD_TYPE, ErrorCode.MISSING_FIELD), reply
    return time.perf_counter() - t0
