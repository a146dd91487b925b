"""Validation of the `options` map of an `open` request (docs/protocol.md section 4.3)."""

from __future__ import annotations

from typing import Any

from bridge.protocol.codec import ProtocolError
from bridge.protocol.errors import ErrorCode


def check_options(
    pipeline: str, options: dict[str, Any], allowed: dict[str, type | tuple[type, ...]]
) -> None:
    for key, value in options.items():
        kind = allowed.get(key)
        if kind is None:
            raise ProtocolError(
                ErrorCode.BAD_VALUE,
                f"{pipeline}: unknown option '{key}' (known: {', '.join(sorted(allowed))})",
            )
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise ProtocolError(ErrorCode.BAD_TYPE, f"{pipeline}: option '{key}' has the wrong type")
