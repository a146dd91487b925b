"""Client -> bridge messages on the request socket, decoded and validated.

`decode_request` is the single entry point: it either returns a typed request or raises ProtocolError
with the code the error reply carries. Validation here is everything that can be checked without
knowing the bridge's state (sessions, pipelines); the server checks the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from bridge.protocol.codec import F32LE, ProtocolError, optional, require, unpack_map
from bridge.protocol.errors import ErrorCode
from bridge.protocol.versions import PROTOCOL_VERSION

MAX_IMAGE_SIDE = 4096
MIN_AUDIO_RATE = 8000
MAX_AUDIO_RATE = 192000
MAX_FEATURE_ROWS = 1024
UINT64_MAX = 2**64 - 1


@dataclass(frozen=True)
class Hello:
    id: int
    client: str


@dataclass(frozen=True)
class ListModels:
    id: int


@dataclass(frozen=True)
class OpenSession:
    id: int
    pipeline: str
    model: str | None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CloseSession:
    id: int
    session: str


@dataclass(frozen=True)
class Ping:
    id: int
    session: str | None  # a ping naming a session keeps it from being reaped


@dataclass(frozen=True)
class ImageInput:
    kind: ClassVar[str] = "image"
    id: int
    session: str
    seq: int
    t_capture_ns: int
    ack: bool
    pixels: np.ndarray  # (height, width, 3) uint8, read-only view of the message


@dataclass(frozen=True)
class AudioInput:
    kind: ClassVar[str] = "audio"
    id: int
    session: str
    seq: int
    t_capture_ns: int
    ack: bool
    rate: int
    samples: np.ndarray  # (n,) int16 or float32 mono, read-only view


@dataclass(frozen=True)
class FeaturesInput:
    kind: ClassVar[str] = "features"
    id: int
    session: str
    seq: int
    t_capture_ns: int
    ack: bool
    rows: np.ndarray  # (rows, cols) float32, read-only view


Input = ImageInput | AudioInput | FeaturesInput
Request = Hello | ListModels | OpenSession | CloseSession | Ping | Input
InputKind = Literal["image", "audio", "features"]


def decode_request(payload: bytes, max_bytes: int | None = None) -> Request:
    message = unpack_map(payload, max_bytes)
    request_id = request_id_of(message)
    version = message.get("v", PROTOCOL_VERSION)
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_VERSION,
            f"protocol version {version!r} not supported (bridge speaks {PROTOCOL_VERSION})",
        )
    op = require(message, "op", str, "request")
    decoder = _DECODERS.get(op)
    if decoder is None:
        raise ProtocolError(
            ErrorCode.UNKNOWN_OP, f"unknown op '{op}' (known: {', '.join(sorted(_DECODERS))})"
        )
    return decoder(message, request_id)


def request_id_of(message: dict[str, Any]) -> int:
    """The client's `id`, echoed in replies; 0 when absent or unusable (so errors can still be sent)."""
    value = message.get("id", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= UINT64_MAX else 0


def _hello(m: dict[str, Any], rid: int) -> Hello:
    return Hello(rid, optional(m, "client", str, "", "hello"))


def _list(m: dict[str, Any], rid: int) -> ListModels:
    return ListModels(rid)


def _open(m: dict[str, Any], rid: int) -> OpenSession:
    return OpenSession(
        rid,
        require(m, "pipeline", str, "open"),
        optional(m, "model", str, None, "open"),
        optional(m, "options", dict, {}, "open"),
    )


def _close(m: dict[str, Any], rid: int) -> CloseSession:
    return CloseSession(rid, require(m, "session", str, "close"))


def _ping(m: dict[str, Any], rid: int) -> Ping:
    return Ping(rid, optional(m, "session", str, None, "ping"))


def _input(m: dict[str, Any], rid: int) -> Input:
    session = require(m, "session", str, "input")
    seq = _uint(m, "seq", "input")
    t_capture_ns = _uint(m, "t_capture_ns", "input")
    ack = optional(m, "ack", bool, False, "input")
    kind = require(m, "kind", str, "input")
    data = require(m, "data", bytes, f"{kind} input")
    if kind == "image":
        width = _positive(m, "width", MAX_IMAGE_SIDE, "image input")
        height = _positive(m, "height", MAX_IMAGE_SIDE, "image input")
        fmt = optional(m, "format", str, "rgb8", "image input")
        if fmt != "rgb8":
            raise ProtocolError(
                ErrorCode.BAD_VALUE, f"image input: format '{fmt}' not supported (use 'rgb8')"
            )
        if len(data) != width * height * 3:
            raise ProtocolError(
                ErrorCode.BAD_SIZE,
                f"image input: {width}x{height} rgb8 needs {width * height * 3} bytes, got {len(data)}",
            )
        pixels = np.frombuffer(data, dtype=np.uint8).reshape(height, width, 3)
        return ImageInput(rid, session, seq, t_capture_ns, ack, pixels)
    if kind == "audio":
        rate = require(m, "rate", int, "audio input")
        if not MIN_AUDIO_RATE <= rate <= MAX_AUDIO_RATE:
            raise ProtocolError(
                ErrorCode.BAD_VALUE,
                f"audio input: rate {rate} outside [{MIN_AUDIO_RATE}, {MAX_AUDIO_RATE}] Hz",
            )
        fmt = require(m, "format", str, "audio input")
        dtype = _AUDIO_FORMATS.get(fmt)
        if dtype is None:
            raise ProtocolError(
                ErrorCode.BAD_VALUE, f"audio input: format '{fmt}' not supported (s16le or f32le)"
            )
        if len(data) % dtype.itemsize:
            raise ProtocolError(
                ErrorCode.BAD_SIZE, f"audio input: {len(data)} bytes is not a whole number of {fmt} samples"
            )
        samples = np.frombuffer(data, dtype=dtype)
        if dtype == F32LE and not np.isfinite(samples).all():
            raise ProtocolError(ErrorCode.BAD_VALUE, "audio input: samples must be finite")
        return AudioInput(rid, session, seq, t_capture_ns, ack, rate, samples)
    if kind == "features":
        rows = _positive(m, "rows", MAX_FEATURE_ROWS, "features input")
        cols = _positive(m, "cols", 4096, "features input")
        if len(data) != rows * cols * 4:
            raise ProtocolError(
                ErrorCode.BAD_SIZE,
                f"features input: {rows}x{cols} f32le needs {rows * cols * 4} bytes, got {len(data)}",
            )
        values = np.frombuffer(data, dtype=F32LE).reshape(rows, cols)
        if not np.isfinite(values).all():
            raise ProtocolError(ErrorCode.BAD_VALUE, "features input: values must be finite")
        return FeaturesInput(rid, session, seq, t_capture_ns, ack, values)
    raise ProtocolError(ErrorCode.BAD_VALUE, f"input: unknown kind '{kind}' (image, audio or features)")


def _uint(m: dict[str, Any], key: str, what: str) -> int:
    value: int = require(m, key, int, what)
    if not 0 <= value <= UINT64_MAX:
        raise ProtocolError(ErrorCode.BAD_VALUE, f"{what}: '{key}' must be an unsigned 64-bit integer")
    return value


def _positive(m: dict[str, Any], key: str, limit: int, what: str) -> int:
    value: int = require(m, key, int, what)
    if not 0 < value <= limit:
        raise ProtocolError(ErrorCode.BAD_VALUE, f"{what}: '{key}' must be in [1, {limit}], got {value}")
    return value


_AUDIO_FORMATS: dict[str, np.dtype[Any]] = {"s16le": np.dtype("<i2"), "f32le": F32LE}

_DECODERS: dict[str, Callable[[dict[str, Any], int], Request]] = {
    "hello": _hello,
    "list": _list,
    "open": _open,
    "close": _close,
    "ping": _ping,
    "input": _input,
}
