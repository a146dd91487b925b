"""The persistent timing cache, full TensorRT only (on tensorrt_rtx: a no-op that breaks GPU-less builds).

A cache from another TensorRT version or GPU is ignored rather than fatal (`ignore_mismatch=True`):
it only costs the build time it would have saved.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, cast

from bridge.backends.tensorrt.builder.flavour import Flavour

if TYPE_CHECKING:
    import tensorrt_rtx as trt

__all__ = ["attach_timing_cache", "save_timing_cache"]

log = logging.getLogger(__name__)


def attach_timing_cache(
    flavour: Flavour, config: trt.IBuilderConfig, path: Path | None
) -> trt.ITimingCache | None:
    """Load `path` (or start empty) and attach it; returns the cache, which must outlive the build."""
    if path is None:
        return None
    if not flavour.supports_timing_cache:
        log.warning("%s has no timing cache; ignoring %s", flavour.name, path)
        return None
    data = path.read_bytes() if path.is_file() else b""
    cache = config.create_timing_cache(data)
    config.set_timing_cache(cache, ignore_mismatch=True)
    return cache


def save_timing_cache(config: trt.IBuilderConfig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cast(bytes, config.get_timing_cache().serialize()))  # a buffer, untyped in the stubs
