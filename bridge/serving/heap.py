"""The collector and the start-up heap of a serving process.

CPython's full (generation 2) collection walks every object the collector tracks, and while it runs no
other thread of the process runs. A bridge process holds a few hundred thousand such objects once its
models are loaded (numpy, onnxruntime or torch, the pipelines): one full collection cost 25-56 ms in a
bridge serving 16 sessions on two cores (two in 8 s), 110 ms in a process that imports torch, which
makes every session of the process that many milliseconds late at once (a p99 spike). Those objects
live as long as the process, so `freeze_startup_heap` moves them out of the collector's reach once
start-up is done: later collections walk only what was allocated since (a full one then takes well
under a millisecond), and the objects are still freed by reference counting as usual.

How many froze is kept here for /metrics: gc.get_freeze_count() walks the whole frozen list each time
it is asked, 20 ms holding the GIL in a worker process on two cores, which was most of what a scrape
cost the sessions (a p99 spike in every second that had one). From the freeze on, every collection's
pause is timed into `GC_PAUSES` (one histogram per generation), so /metrics shows whether collections
still land in the tail.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from bridge.serving.stats import LATENCY_BUCKETS_S, Histogram

GC_PAUSES = tuple(Histogram(LATENCY_BUCKETS_S) for _ in range(3))  # by generation, seconds
_frozen = 0
_collection_began = 0.0


def freeze_startup_heap() -> int:
    """Collect what start-up left as garbage, then freeze the rest and time every later collection;
    returns how many objects froze. Call it once per serving process, just before it serves."""
    global _frozen
    gc.collect()
    gc.freeze()
    _frozen = gc.get_freeze_count()
    if time_collection not in gc.callbacks:
        gc.callbacks.append(time_collection)
    return _frozen


def time_collection(phase: str, info: dict[str, Any]) -> None:
    """gc.callbacks hook: the collector runs holding the GIL, so one start is open at a time."""
    global _collection_began
    if phase == "start":
        _collection_began = time.perf_counter()
    else:
        GC_PAUSES[info["generation"]].observe(time.perf_counter() - _collection_began)


def frozen_objects() -> int:
    """How many objects freeze_startup_heap froze in this process (0 before it ran)."""
    return _frozen
