"""Shared by the tests/test_outputs_*.py files (no tests here): a stand-in bridge PUB socket that
publishes real encoded frames and events, and a python-osc server that captures VMC traffic."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import zmq
from pythonosc.dispatcher import Dispatcher
from pythonosc.osc_server import BlockingOSCUDPServer

from bridge.protocol import encode_face_frame, pack
from bridge.rig import arkit, smpl
from tests.oracles.frames import encode_motion_frame

SESSION = "0123456789abcdef"
FACE_SESSION = "fedcba9876543210"


def motion_rig() -> dict[str, Any]:
    return {
        "kind": "body",
        "coordinates": {"handedness": "right", "up": "+y", "forward": "+z", "units": "m"},
        "quaternion_order": "xyzw",
        "joints": list(smpl.JOINT_NAMES),
        "parents": list(smpl.PARENTS),
        "rest_offsets": smpl.REST_OFFSETS.astype("<f4").tobytes(),
        "humanoid": [name or "" for name in smpl.UNITY_BONE_NAMES],
    }


def face_rig(blendshapes: list[str] | None = None) -> dict[str, Any]:
    return {
        "kind": "face",
        "coordinates": {"handedness": "right", "up": "+y", "forward": "+z", "units": "m"},
        "quaternion_order": "xyzw",
        "expression": [f"Exp{i:02d}" for i in range(50)],
        "eyelids": ["EyelidLeft", "EyelidRight"],
        "rotations": ["head", "jaw"],
        "blendshapes": list(arkit.ARKIT_NAMES) if blendshapes is None else blendshapes,
    }


def opened_event(session: str, pipeline: str, rig: dict[str, Any], fps: float = 60.0) -> bytes:
    return pack(
        {
            "op": "event",
            "v": 1,
            "session": session,
            "event": "opened",
            "pipeline": pipeline,
            "model": "m",
            "fps": fps,
            "rig": rig,
        }
    )


def closed_event(session: str, frames: int) -> bytes:
    message = {"op": "event", "v": 1, "session": session, "event": "closed", "reason": "client"}
    return pack({**message, "frames_published": frames})


def identity_joints() -> np.ndarray:
    joints = np.zeros((24, 4), dtype=np.float32)
    joints[:, 3] = 1.0
    return joints


def motion_frame(
    seq: int, joints: np.ndarray | None = None, root: np.ndarray | None = None, session: str = SESSION
) -> bytes:
    return encode_motion_frame(
        session,
        seq,
        seq,
        time.time_ns(),
        joints=identity_joints() if joints is None else joints,
        root=np.zeros(3, np.float32) if root is None else root,
        engine_us=100.0,
        batch=1,
    )


def face_frame(
    seq: int,
    blendshapes: np.ndarray | None,
    head: np.ndarray | None = None,
    session: str = FACE_SESSION,
    t_capture_ns: int | None = None,
) -> bytes:
    return encode_face_frame(
        session,
        seq,
        seq,
        time.time_ns() if t_capture_ns is None else t_capture_ns,
        face_found=True,
        expression=np.linspace(-1, 1, 50, dtype=np.float32),
        eyelids=np.array([0.25, 0.75], np.float32),
        jaw=np.array([0.1, 0, 0, np.sqrt(0.99)], np.float32),
        head=np.array([0, 0, 0, 1], np.float32) if head is None else head,
        blendshapes=blendshapes,
        engine_us=100.0,
        batch=1,
    )


class Publisher:
    """The bridge's side of the frame socket. XPUB, so a test can wait for the router's subscriptions."""

    def __init__(self) -> None:
        self.context = zmq.Context()
        self.sock = self.context.socket(zmq.XPUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = f"tcp://127.0.0.1:{port}"

    def wait_subscribed(self, count: int = 2, timeout_s: float = 5.0) -> None:
        for _ in range(count):
            assert self.sock.poll(int(timeout_s * 1000)), "router never subscribed"
            assert self.sock.recv()[0] == 1

    def send(self, topic: str, payload: bytes) -> None:
        self.sock.send_multipart([topic.encode(), payload])

    def close(self) -> None:
        self.sock.close(linger=0)
        self.context.term()


def wait_for(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


class OscCapture:
    """A python-osc UDP server on 127.0.0.1 recording every message and every raw datagram."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, list[Any]]] = []
        self.datagrams: list[bytes] = []
        dispatcher = Dispatcher()
        dispatcher.set_default_handler(lambda address, *args: self.messages.append((address, list(args))))
        datagrams = self.datagrams

        class Server(BlockingOSCUDPServer):
            def verify_request(self, request: Any, client_address: Any) -> bool:
                datagrams.append(request[0])
                return bool(super().verify_request(request, client_address))

        self.server = Server(("127.0.0.1", 0), dispatcher)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _osc_string(data: bytes, offset: int) -> tuple[str, int]:
    end = data.index(b"\0", offset)
    return data[offset:end].decode(), (end + 4) & ~3


def osc_elements(dgram: bytes) -> list[tuple[str, str]]:
    """(address, type tags) of every message in a datagram, read from the OSC 1.0 layout directly."""
    if dgram.startswith(b"#bundle\0"):
        out, offset = [], 16
        while offset < len(dgram):
            (size,) = struct.unpack_from(">i", dgram, offset)
            out += osc_elements(dgram[offset + 4 : offset + 4 + size])
            offset += 4 + size
        return out
    address, offset = _osc_string(dgram, 0)
    tags, _ = _osc_string(dgram, offset)
    return [(address, tags)]


def udp_listener(timeout_s: float) -> socket.socket:
    """A UDP socket bound to a free port on 127.0.0.1, reads timing out after `timeout_s`: where an
    output under test sends."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(timeout_s)
    return sock


def closed_udp_port() -> int:
    """A UDP port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
