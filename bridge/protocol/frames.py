"""Bridge -> client animation frames on the PUB socket.

Encoding is on the hot path (one call per session per tick), so the encoders build the msgpack map
directly from arrays; decoding is for clients and the harness and checks every field.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bridge.protocol.codec import ProtocolError, f32_bin, f32_view, optional, pack, require, unpack_map
from bridge.protocol.errors import ErrorCode
from bridge.protocol.versions import FRAME_TOPIC_PREFIX, PROTOCOL_VERSION

FLAME_EXPRESSION = 50
FLAME_EYELIDS = 2
ARKIT_BLENDSHAPES = 52
SMPL_JOINTS = 24
SPEECH_VISEMES = 15  # Oculus visemes, sil first (docs/protocol.md 6.2)
SPEECH_VOWELS = 5  # VRM A, I, U, E, O


def frame_topic(session: str) -> bytes:
    return FRAME_TOPIC_PREFIX + session.encode()


@dataclass(frozen=True)
class FrameHeader:
    session: str
    seq: int  # per-session output frame number: 0, 1, 2, ... (a gap means frames were lost)
    input_seq: int  # `seq` of the input that produced this frame
    t_capture_ns: int  # copied from that input
    t_publish_ns: int  # bridge wall clock when the frame was encoded for publishing
    engine_us: float  # time the engine call that produced this frame took
    batch: int  # how many sessions shared that engine call


@dataclass(frozen=True)
class FaceFrame:
    header: FrameHeader
    face_found: bool
    expression: np.ndarray  # (50,) FLAME expression
    eyelids: np.ndarray  # (2,) left, right in [0, 1]
    jaw: np.ndarray  # (4,) quaternion x, y, z, w
    head: np.ndarray  # (4,) quaternion x, y, z, w
    blendshapes: np.ndarray  # (52,) ARKit weights in [0, 1], or (0,) when the session did not ask for them
    # Face tracking (docs/protocol.md 6.1): empty when the model does not provide them.
    head_position: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # (3,) metres
    gaze: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # (4,) radians
    warnings: tuple[str, ...] = ()  # e.g. "too_dark"
    # Speech (docs/protocol.md 6.2): empty / None when the session has no voice.
    visemes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # (15,) Oculus visemes
    vowels: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))  # (5,) VRM A I U E O
    voice: bool | None = None  # voice activity
    # Body tracking (docs/protocol.md 5.1.2): empty / None when the session has no body.
    body: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.float32))  # (J, 4) local quats
    body_found: bool | None = None
    hands_found: tuple[bool, ...] = ()  # the subject's left, right


@dataclass(frozen=True)
class MotionFrame:
    header: FrameHeader
    joints: np.ndarray  # (24, 4) local joint rotations, quaternion x, y, z, w
    root: np.ndarray  # (3,) root translation in metres


Frame = FaceFrame | MotionFrame


def _header(
    session: str, seq: int, input_seq: int, t_capture_ns: int, engine_us: float, batch: int
) -> dict[str, Any]:
    return {
        "op": "frame",
        "v": PROTOCOL_VERSION,
        "session": session,
        "seq": seq,
        "input_seq": input_seq,
        "t_capture_ns": t_capture_ns,
        "t_publish_ns": time.time_ns(),
        "engine_us": float(engine_us),
        "batch": batch,
    }


def encode_face_frame(
    session: str,
    seq: int,
    input_seq: int,
    t_capture_ns: int,
    *,
    face_found: bool,
    expression: np.ndarray,
    eyelids: np.ndarray,
    jaw: np.ndarray,
    head: np.ndarray,
    blendshapes: np.ndarray | None,
    engine_us: float,
    batch: int,
    head_position: np.ndarray | None = None,
    gaze: np.ndarray | None = None,
    warnings: tuple[str, ...] = (),
    visemes: np.ndarray | None = None,
    vowels: np.ndarray | None = None,
    voice: bool | None = None,
    body: np.ndarray | None = None,
    body_found: bool | None = None,
    hands_found: tuple[bool, bool] | None = None,
) -> bytes:
    """`expression` may be empty: a model without FLAME codes (face tracking) sends none."""
    message = _header(session, seq, input_seq, t_capture_ns, engine_us, batch)
    message["pipeline"] = "face"
    message["face_found"] = face_found
    message["expression"] = f32_bin(expression)
    message["eyelids"] = f32_bin(eyelids)
    message["jaw"] = f32_bin(jaw)
    message["head"] = f32_bin(head)
    message["blendshapes"] = b"" if blendshapes is None else f32_bin(blendshapes)
    if head_position is not None:
        message["head_position"] = f32_bin(head_position)
    if gaze is not None:
        message["gaze"] = f32_bin(gaze)
    if warnings:
        message["warnings"] = list(warnings)
    if visemes is not None:
        message["visemes"] = f32_bin(visemes)
    if vowels is not None:
        message["vowels"] = f32_bin(vowels)
    if voice is not None:
        message["voice"] = voice
    if body is not None:
        message["body"] = f32_bin(body)
        message["body_found"] = bool(body_found)
        message["hands_found"] = list(hands_found or (False, False))
    return pack(message)


def decode_frame(payload: bytes) -> Frame:
    """Decode and fully validate one frame payload (the second part of a PUB message)."""
    m = unpack_map(payload)
    what = "frame"
    if require(m, "op", str, what) != "frame":
        raise ProtocolError(ErrorCode.BAD_VALUE, "frame: op must be 'frame'")
    if require(m, "v", int, what) != PROTOCOL_VERSION:
        raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION, f"frame: version {m['v']} not supported")
    header = FrameHeader(
        session=require(m, "session", str, what),
        seq=require(m, "seq", int, what),
        input_seq=require(m, "input_seq", int, what),
        t_capture_ns=require(m, "t_capture_ns", int, what),
        t_publish_ns=require(m, "t_publish_ns", int, what),
        engine_us=float(require(m, "engine_us", (float, int), what)),
        batch=require(m, "batch", int, what),
    )
    pipeline = require(m, "pipeline", str, what)
    if pipeline == "face":
        blend = require(m, "blendshapes", bytes, what)
        expression = require(m, "expression", bytes, what)
        position = optional(m, "head_position", bytes, b"", what)
        gaze = optional(m, "gaze", bytes, b"", what)
        warnings = optional(m, "warnings", list, [], what)
        visemes = optional(m, "visemes", bytes, b"", what)
        vowels = optional(m, "vowels", bytes, b"", what)
        if not all(isinstance(w, str) for w in warnings):
            raise ProtocolError(ErrorCode.BAD_TYPE, "frame: 'warnings' must be an array of str")
        body = optional(m, "body", bytes, b"", what)
        hands = optional(m, "hands_found", list, [], what)
        if not all(isinstance(h, bool) for h in hands):
            raise ProtocolError(ErrorCode.BAD_TYPE, "frame: 'hands_found' must be an array of bool")
        if len(body) % 16:
            raise ProtocolError(ErrorCode.BAD_SIZE, "frame: 'body' must hold whole quaternions")
        frame: Frame = FaceFrame(
            header,
            face_found=require(m, "face_found", bool, what),
            expression=f32_view(expression, FLAME_EXPRESSION if expression else 0, "expression"),
            eyelids=f32_view(require(m, "eyelids", bytes, what), FLAME_EYELIDS, "eyelids"),
            jaw=f32_view(require(m, "jaw", bytes, what), 4, "jaw"),
            head=f32_view(require(m, "head", bytes, what), 4, "head"),
            blendshapes=f32_view(blend, ARKIT_BLENDSHAPES if blend else 0, "blendshapes"),
            head_position=f32_view(position, 3 if position else 0, "head_position"),
            gaze=f32_view(gaze, 4 if gaze else 0, "gaze"),
            warnings=tuple(warnings),
            visemes=f32_view(visemes, SPEECH_VISEMES if visemes else 0, "visemes"),
            vowels=f32_view(vowels, SPEECH_VOWELS if vowels else 0, "vowels"),
            voice=optional(m, "voice", bool, None, what),
            body=f32_view(body, len(body) // 4, "body").reshape(-1, 4),
            body_found=optional(m, "body_found", bool, None, what),
            hands_found=tuple(hands),
        )
    elif pipeline == "motion":
        frame = MotionFrame(
            header,
            joints=f32_view(require(m, "joints", bytes, what), SMPL_JOINTS * 4, "joints").reshape(
                SMPL_JOINTS, 4
            ),
            root=f32_view(require(m, "root", bytes, what), 3, "root"),
        )
    else:
        raise ProtocolError(ErrorCode.BAD_VALUE, f"frame: unknown pipeline '{pipeline}'")
    return frame
