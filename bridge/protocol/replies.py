"""Bridge -> client replies on the request socket (one per request; inputs only on error or ack)."""

from __future__ import annotations

from typing import Any

from bridge.protocol.codec import pack
from bridge.protocol.errors import ErrorCode
from bridge.protocol.versions import PROTOCOL_VERSION


def reply(op: str, request_id: int, **fields: Any) -> bytes:
    return pack({"op": op, "v": PROTOCOL_VERSION, "id": request_id, "ok": True, **fields})


def error_reply(code: ErrorCode, message: str, request_id: int = 0, session: str | None = None) -> bytes:
    return pack(_error_body(code, message, request_id, session))


def item_failure(
    code: ErrorCode, message: str, item: int, item_id: int = 0, session: str | None = None
) -> dict[str, Any]:
    """One failed item of an `inputs` message, as its error reply lists it (docs/protocol.md 4.7)."""
    failure: dict[str, Any] = {"item": item, "id": item_id, "code": int(code), "name": code.name}
    failure["message"] = message
    if session is not None:
        failure["session"] = session
    return failure


def items_error_reply(request_id: int, items: int, failed: list[dict[str, Any]]) -> bytes:
    """The one error reply to an `inputs` message with failed items: the first failure's code, and
    every failure (`item_failure`, in item order) under `items`."""
    first = failed[0]
    message = f"{len(failed)} of {items} items failed; item {first['item']}: {first['message']}"
    body = _error_body(ErrorCode(first["code"]), message, request_id, None)
    body["items"] = failed
    return pack(body)


def _error_body(code: ErrorCode, message: str, request_id: int, session: str | None) -> dict[str, Any]:
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
    return body
