"""A motion frame packed key by key with msgpack: the plain encoding that the served fixed-layout encoder
(bridge.protocol.motion_frames) must decode the same as; also frames with any session id, for tests."""

from __future__ import annotations

import time

import numpy as np

from bridge.protocol.codec import f32_bin, pack
from bridge.protocol.versions import PROTOCOL_VERSION


def encode_motion_frame(
    session: str,
    seq: int,
    input_seq: int,
    t_capture_ns: int,
    *,
    joints: np.ndarray,
    root: np.ndarray,
    engine_us: float,
    batch: int,
) -> bytes:
    message = {
        "op": "frame",
        "v": PROTOCOL_VERSION,
        "session": session,
        "seq": seq,
        "input_seq": input_seq,
        "t_capture_ns": t_capture_ns,
        "t_publish_ns": time.time_ns(),
        "engine_us": float(engine_us),
        "batch": batch,
        "pipeline": "motion",
    }
    message["joints"] = f32_bin(joints)
    message["root"] = f32_bin(root)
    return pack(message)
