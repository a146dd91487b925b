"""A TensorRT ILogger that forwards to Python logging (one per process, as TensorRT recommends)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from bridge.backends.tensorrt.builder.flavour import Flavour

if TYPE_CHECKING:
    import tensorrt_rtx as trt

__all__ = ["recent_errors", "trt_logger"]

log = logging.getLogger("bridge.tensorrt")
_LOGGERS: dict[str, Any] = {}
_ERRORS: list[str] = []  # TensorRT's error lines since the last recent_errors(), for exception messages


def recent_errors() -> list[str]:
    """TensorRT's error messages logged since the previous call (and forget them)."""
    out = list(_ERRORS)
    _ERRORS.clear()
    return out


def trt_logger(flavour: Flavour) -> trt.ILogger:
    """The process-wide logger for `flavour`; TensorRT's own errors become `bridge.tensorrt` records."""
    if flavour.name in _LOGGERS:
        return cast("trt.ILogger", _LOGGERS[flavour.name])
    t = flavour.trt
    levels = {
        t.ILogger.INTERNAL_ERROR: logging.CRITICAL,
        t.ILogger.ERROR: logging.ERROR,
        t.ILogger.WARNING: logging.WARNING,
        t.ILogger.INFO: logging.DEBUG,  # TensorRT's INFO is build chatter
        t.ILogger.VERBOSE: logging.DEBUG - 1,
    }

    class _Forward(t.ILogger):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            t.ILogger.__init__(self)

        def log(self, severity: Any, msg: str) -> None:
            level = levels.get(severity, logging.WARNING)
            if level >= logging.ERROR:
                del _ERRORS[:-20]  # bounded: only the last few matter for a message
                _ERRORS.append(msg)
            log.log(level, "%s", msg)

    logger = _Forward()
    _LOGGERS[flavour.name] = logger
    return cast("trt.ILogger", logger)
