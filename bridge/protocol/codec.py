"""msgpack encoding shared by requests, replies and frames."""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from bridge.protocol.errors import ErrorCode

F32LE = np.dtype("<f4")


class ProtocolError(Exception):
    """A message broke the contract; `code` is what the error reply carries."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def pack(message: dict[str, Any]) -> bytes:
    return msgpack.packb(message, use_bin_type=True)  # type: ignore[no-any-return]


def unpack_map(payload: bytes, max_bytes: int | None = None) -> dict[str, Any]:
    """Decode one msgpack map with string keys, or raise ProtocolError."""
    if max_bytes is not None and len(payload) > max_bytes:
        raise ProtocolError(ErrorCode.TOO_LARGE, f"message of {len(payload)} bytes exceeds {max_bytes}")
    try:
        # raw=False: str stays str, bin stays bytes. strict_map_key: only str/bytes keys.
        obj = msgpack.unpackb(payload, raw=False, strict_map_key=True)
    except Exception as exc:  # msgpack raises several unrelated types for garbage input
        raise ProtocolError(ErrorCode.MALFORMED, f"not a msgpack message: {type(exc).__name__}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorCode.MALFORMED, f"message must be a msgpack map, got {type(obj).__name__}")
    if not all(isinstance(k, str) for k in obj):
        raise ProtocolError(ErrorCode.MALFORMED, "map keys must be strings")
    return obj


def f32_bin(values: np.ndarray) -> bytes:
    """Little-endian float32 bytes of an array (the only array encoding on the wire)."""
    return np.ascontiguousarray(values, dtype=F32LE).tobytes()


def f32_view(blob: bytes, count: int, what: str) -> np.ndarray:
    """Zero-copy float32 view of a `bin` field, checked against the expected element count."""
    if len(blob) != count * 4:
        raise ProtocolError(ErrorCode.BAD_SIZE, f"{what}: expected {count * 4} bytes, got {len(blob)}")
    return np.frombuffer(blob, dtype=F32LE)


def require(message: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    """Fetch a required field of the given msgpack type or raise MISSING_FIELD / BAD_TYPE."""
    if key not in message:
        raise ProtocolError(ErrorCode.MISSING_FIELD, f"{what}: missing field '{key}'")
    value = message[key]
    # bool is an int subclass in Python; msgpack keeps them apart, so do we.
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        raise ProtocolError(
            ErrorCode.BAD_TYPE,
            f"{what}: field '{key}' must be {_type_names(kind)}, got {type(value).__name__}",
        )
    return value


def optional(
    message: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any, what: str
) -> Any:
    if key not in message or message[key] is None:
        return default
    return require(message, key, kind, what)


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


_NAMES = {str: "str", bytes: "bin", int: "int", float: "float", bool: "bool", dict: "map", list: "array"}


def _type_names(kind: type | tuple[type, ...]) -> str:
    return " or ".join(_NAMES.get(k, k.__name__) for k in _as_tuple(kind))
