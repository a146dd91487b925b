"""Session rows: every session's state is one row of batched stores, and a SlotPool says which row.

Rows are handed out lowest-free-first so live rows stay dense, and are freed when the session's
`SlotLease` is released or garbage-collected (closing, reaping and shutdown all drop the session).
Acquire and release only touch integers under a lock (the I/O thread); the stores themselves (the
engine's recurrent state in bridge.runtime.state_rows, the music analysis's in bridge.audio) grow and
zero rows on the thread that computes with them.
"""

from __future__ import annotations

import heapq
import threading
import weakref

import numpy as np

__all__ = ["SlotLease", "SlotPool", "grown"]


class SlotLease:
    """One session's row. `release()` (or garbage collection of the lease) frees it, once."""

    def __init__(self, pool: SlotPool, index: int) -> None:
        self.index = index
        self._finalizer = weakref.finalize(self, pool._release, index)

    def release(self) -> None:
        self._finalizer()

    @property
    def alive(self) -> bool:
        return self._finalizer.alive


class SlotPool:
    """Row allocator shared by a pipeline's state storages (engine state, post-processing filters)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[int] = []  # min-heap of released rows
        self._size = 0  # rows ever handed out: storage must hold at least this many
        self._fresh: set[int] = set()  # rows handed to a new session since the last `take_fresh`

    @property
    def size(self) -> int:
        return self._size

    @property
    def in_use(self) -> int:
        with self._lock:
            return self._size - len(self._free)

    def acquire(self) -> SlotLease:
        with self._lock:
            if self._free:
                index = heapq.heappop(self._free)
            else:
                index = self._size
                self._size += 1
            self._fresh.add(index)
        return SlotLease(self, index)

    def reset(self, lease: SlotLease) -> None:
        """Zero a live session's rows before its next step (a hot restart of its state)."""
        with self._lock:
            self._fresh.add(lease.index)

    def take_fresh(self) -> np.ndarray:
        """Rows to zero before the next step (new sessions, resets); each is returned once."""
        with self._lock:
            fresh = np.fromiter(self._fresh, np.int64, len(self._fresh))
            self._fresh.clear()
        return fresh

    def grow(self, store: object, *names: str) -> np.ndarray:
        """Grow the row arrays `names` of `store` to this pool's rows (`grown`) and return the rows to
        start afresh (`take_fresh`, taken first: every fresh row is below the size)."""
        fresh = self.take_fresh()
        for name in names:
            setattr(store, name, grown(getattr(store, name), self.size))
        return fresh

    def _release(self, index: int) -> None:
        with self._lock:
            heapq.heappush(self._free, index)
            self._fresh.discard(index)


def grown(rows: np.ndarray, size: int) -> np.ndarray:
    """A row store (rows first) with room for `size` rows: `rows` itself when it has them, else a copy
    at least twice as large (16 rows at least) whose new rows are zero."""
    capacity = len(rows)
    if size <= capacity:
        return rows
    bigger = np.zeros((max(size, 2 * capacity, 16), *rows.shape[1:]), rows.dtype)
    bigger[:capacity] = rows
    return bigger
