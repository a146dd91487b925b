"""Stable error codes carried in `error` replies (docs/protocol.md, "Errors")."""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    # 1xx: the message itself is wrong.
    MALFORMED = 100  # not msgpack, not a map, or bad multipart framing
    TOO_LARGE = 101  # over max_message_bytes
    UNSUPPORTED_VERSION = 102
    UNKNOWN_OP = 103
    MISSING_FIELD = 104
    BAD_TYPE = 105  # a field has the wrong msgpack type
    BAD_VALUE = 106  # right type, value not allowed (unknown format, non-positive size, unknown style)
    BAD_SIZE = 107  # a `data` blob does not match its declared shape
    BAD_IMAGE = 108  # an encoded image (JPEG) that is not one, or corrupt, truncated or of a kind not decoded
    # 2xx: the message is well formed but does not fit the bridge's state.
    UNKNOWN_SESSION = 200  # never opened, closed or reaped
    UNKNOWN_PIPELINE = 201
    UNKNOWN_MODEL = 202
    WRONG_INPUT_KIND = 203  # e.g. audio sent to a face session
    SESSION_LIMIT = 204
    OVERLOADED = 205  # the session's input queue is full; this input was dropped
    NOT_OWNER = 206  # the session was opened by another client (connection or CURVE key)
    CLIENT_SESSION_LIMIT = 207  # this client holds its quota of open sessions
    RATE_CHANGE_LIMIT = 208  # the session changed its audio sample rate too often; this input was dropped
    AT_CAPACITY = 209  # the model's measured load leaves no room for another session
    # 5xx: the bridge failed.
    INTERNAL = 500
