"""Bridge -> client replies on the request socket (one per request; inputs only on error or ack)."""

from __future__ import annotations

from typing import Any

from bridge.protocol.codec import pack
from bridge.protocol.errors import ErrorCode
from bridge.protocol.versions import PROTOCOL_VERSION


def reply(op: str, request_id: int, **fields: Any) -> bytes:
    return pack({"op": op, "v": PROTOCOL_VERSION, "id": request_id, "ok": True, **fields})


def error_reply(
    code: ErrorCode, message: str, request_id: int = 0, session: str | None = None, item: int | None = None
) -> bytes:
    """`item`: the index of the failing item of an `inputs` message (docs/protocol.md section 4.7)."""
    body: dict[str, Any] = {
        "op": "error",
        "v": PROTOCOL_VERSION,
        "id": request_id,
        "ok": False,
        "code": int(code),
        "name": code.name,
        "message": message,
    }
    if session is not None:
        body["session"] = session
    if item is not None:
        body["item"] = item
    return pack(body)
