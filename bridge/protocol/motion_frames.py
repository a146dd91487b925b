"""The motion frame encoder: every frame of a batch in one numpy pass (docs/protocol.md section 5).

Every motion frame has the same msgpack layout: the same keys in the same order, a 16-character
session id, and fixed-size arrays. Writing every integer in its 8-byte form (msgpack allows any
width; decoders return the same int) makes every field sit at a fixed offset, so a batch of frames is
one structured numpy array filled column by column and cut into `bytes` once per session.
`bridge.protocol.frames.decode_frame` is its decoder (tests check the two agree, and agree with a
plain msgpack encoding of the same message).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from bridge.protocol.frames import SMPL_JOINTS
from bridge.protocol.versions import PROTOCOL_VERSION, SESSION_ID_LENGTH

__all__ = ["encode_motion_frames"]


def _key(name: str) -> bytes:
    return bytes([0xA0 | len(name)]) + name.encode()


def _layout() -> tuple[np.dtype[np.void], dict[str, bytes]]:
    joints_bytes = SMPL_JOINTS * 4 * 4
    constants = {
        "c_head": bytes([0x8C]) + _key("op") + _key("frame") + _key("v") + bytes([PROTOCOL_VERSION])
        + _key("session") + bytes([0xA0 | SESSION_ID_LENGTH]),
        "c_seq": _key("seq") + b"\xcf",
        "c_input_seq": _key("input_seq") + b"\xcf",
        "c_capture": _key("t_capture_ns") + b"\xd3",
        "c_publish": _key("t_publish_ns") + b"\xd3",
        "c_engine": _key("engine_us") + b"\xcb",
        "c_batch": _key("batch") + b"\xcf",
        "c_joints": _key("pipeline") + _key("motion") + _key("joints")
        + b"\xc5" + joints_bytes.to_bytes(2, "big"),
        "c_root": _key("root") + b"\xc4\x0c",
    }  # fmt: skip
    fields: list[tuple[str, str] | tuple[str, str, tuple[int, ...]]] = [
        ("c_head", f"V{len(constants['c_head'])}"),
        ("session", f"S{SESSION_ID_LENGTH}"),
        ("c_seq", f"V{len(constants['c_seq'])}"),
        ("seq", ">u8"),
        ("c_input_seq", f"V{len(constants['c_input_seq'])}"),
        ("input_seq", ">u8"),
        ("c_capture", f"V{len(constants['c_capture'])}"),
        ("t_capture_ns", ">i8"),
        ("c_publish", f"V{len(constants['c_publish'])}"),
        ("t_publish_ns", ">i8"),
        ("c_engine", f"V{len(constants['c_engine'])}"),
        ("engine_us", ">f8"),
        ("c_batch", f"V{len(constants['c_batch'])}"),
        ("batch", ">u8"),
        ("c_joints", f"V{len(constants['c_joints'])}"),
        ("joints", "<f4", (SMPL_JOINTS, 4)),
        ("c_root", f"V{len(constants['c_root'])}"),
        ("root", "<f4", (3,)),
    ]
    return np.dtype(fields), constants


_DTYPE, _CONSTANTS = _layout()
_TEMPLATE = np.zeros(1, _DTYPE)
for _name, _value in _CONSTANTS.items():
    _TEMPLATE[_name] = np.frombuffer(_value, dtype=_DTYPE[_name])[0]


def encode_motion_frames(
    sessions: Sequence[str] | np.ndarray,
    seqs: npt.ArrayLike,
    input_seqs: npt.ArrayLike,
    t_capture_ns: npt.ArrayLike,
    *,
    joints: np.ndarray,
    root: np.ndarray,
    engine_us: float,
    batch: int,
) -> list[bytes]:
    """One frame payload per row: `joints` (N, 24, 4) xyzw, `root` (N, 3), the rest per row or scalar;
    `sessions` as str ids or an array of them as bytes (dtype S16, bridge.protocol.batch_frames)."""
    n = len(sessions)
    if isinstance(sessions, np.ndarray) and sessions.dtype == _DTYPE["session"]:
        ids = sessions
    else:
        blob = "".join(sessions).encode()
        if len(blob) != n * SESSION_ID_LENGTH:
            raise ValueError(f"session ids must be {SESSION_ID_LENGTH} characters")
        ids = np.frombuffer(blob, dtype=f"S{SESSION_ID_LENGTH}")
    frames = np.repeat(_TEMPLATE, n)
    frames["session"] = ids
    frames["seq"] = seqs
    frames["input_seq"] = input_seqs
    frames["t_capture_ns"] = t_capture_ns
    frames["t_publish_ns"] = time.time_ns()
    frames["engine_us"] = engine_us
    frames["batch"] = batch
    frames["joints"] = joints
    frames["root"] = root
    blob = frames.tobytes()
    size = _DTYPE.itemsize
    return [blob[i : i + size] for i in range(0, n * size, size)]
