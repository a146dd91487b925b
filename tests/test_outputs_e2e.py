"""End to end through `avatar-bridge serve` in its own process: a DEALER opens sessions and feeds
inputs (protocol section 4.5); VMC and Live Link Face packets arrive over UDP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zmq

from bridge.clients.harness.process import BridgeProcess
from bridge.clients.outputs.router import OutputRouter
from bridge.clients.outputs.vmc import VmcOutput
from bridge.protocol import pack, unpack_map

from .test_outputs_helpers import OscCapture, udp_listener, wait_for

REPO = Path(__file__).resolve().parents[1]
FEATURES = np.random.default_rng(0).standard_normal((1, 35)).astype("<f4")


class Dealer:
    def __init__(self, port: int) -> None:
        self.context = zmq.Context()
        self.sock = self.context.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(f"tcp://127.0.0.1:{port}")

    def request(self, **message: Any) -> dict[str, Any]:
        self.sock.send(pack(message))
        assert self.sock.poll(5000), f"no reply to {message['op']}"
        reply = unpack_map(self.sock.recv())
        assert reply["ok"], reply
        return reply

    def features(self, session: str, seq: int) -> None:
        data = FEATURES.tobytes()
        self.sock.send(
            pack(
                {
                    "op": "input",
                    "session": session,
                    "kind": "features",
                    "seq": seq,
                    "t_capture_ns": time.time_ns(),
                    "rows": 1,
                    "cols": 35,
                    "data": data,
                }
            )
        )

    def image(self, session: str, seq: int, rgb: np.ndarray) -> None:
        h, w = rgb.shape[:2]
        message = {
            "op": "input",
            "session": session,
            "kind": "image",
            "seq": seq,
            "t_capture_ns": time.time_ns(),
        }
        self.sock.send(pack({**message, "width": w, "height": h, "data": rgb.tobytes()}))

    def close(self) -> None:
        self.sock.close(linger=0)
        self.context.term()


@pytest.fixture
def osc() -> Iterator[OscCapture]:
    capture = OscCapture()
    yield capture
    capture.close()


def bone_messages(osc: OscCapture) -> list[list[Any]]:
    return [args for address, args in osc.messages if address == "/VMC/Ext/Bone/Pos"]


def test_router_on_a_served_bridge_sends_vmc(osc: OscCapture) -> None:
    bridge = BridgeProcess().start()
    dealer = Dealer(bridge.request_port)
    router = OutputRouter([VmcOutput("127.0.0.1", osc.port)], f"tcp://127.0.0.1:{bridge.frames_port}")
    try:
        router.start()
        time.sleep(0.2)  # let the subscription reach the bridge before the session opens
        session = dealer.request(op="open", id=1, pipeline="motion")["session"]
        for seq in range(10):
            dealer.features(session, seq)
            time.sleep(0.02)  # about real time; a burst would collapse to the newest frame (latest wins)
        wait_for(lambda: router.received == 11, timeout_s=10)  # the opened event and 10 frames
        wait_for(lambda: len(bone_messages(osc)) >= 22 * 5, timeout_s=10)
        dealer.request(op="close", id=2, session=session)
    finally:
        router.stop()
        dealer.close()
        bridge.stop()
    bones = bone_messages(osc)
    assert {b[0] for b in bones} >= {"Hips", "Spine", "Head", "LeftUpperArm", "RightLowerLeg"}
    quats = np.array([b[4:8] for b in bones], dtype=np.float64)
    assert np.allclose(np.linalg.norm(quats, axis=1), 1.0, atol=1e-4)
    assert [a for a, _ in osc.messages].count("/VMC/Ext/Root/Pos") >= 5


def test_serve_feeds_vmc_and_live_link_face_at_once(osc: OscCapture) -> None:
    from bridge.media.face_video import FaceVideo

    llf = udp_listener(10)
    extra = ["--osc", f"vmc://127.0.0.1:{osc.port}", "--livelink-face", f"127.0.0.1:{llf.getsockname()[1]}"]
    bridge = BridgeProcess(*extra).start()
    dealer = Dealer(bridge.request_port)
    try:
        time.sleep(0.5)  # the serve process's router subscribes to its own frames socket
        motion = dealer.request(op="open", id=1, pipeline="motion")["session"]
        face = dealer.request(op="open", id=2, pipeline="face")["session"]
        video = FaceVideo()
        for seq in range(5):
            dealer.features(motion, seq)
            dealer.image(face, seq, video.frame(seq))
            time.sleep(0.02)
        packet = llf.recv(2048)
        wait_for(lambda: len(bone_messages(osc)) >= 22, timeout_s=10)
        wait_for(lambda: any(a == "/VMC/Ext/Blend/Apply" for a, _ in osc.messages), timeout_s=10)
    finally:
        dealer.close()
        bridge.stop()
        llf.close()
    assert packet[0] == 6 and len(packet) > 250
