"""State slots: every session's recurrent state is one row of a batched state tensor.

A pipeline keeps one `SlotPool` (which row belongs to which session) and one `StateSlots` (the rows
themselves, where the backend computes: numpy arrays for ONNX Runtime on the CPU, device tensors for
the torch backend). A batched step gathers the rows of the sessions in the batch by slot index, runs
the engine and scatters the new state back, so a session's state never round-trips through Python
objects (or, on a GPU, through the host) between steps.

Rows are handed out lowest-free-first so live rows stay dense, and are freed when the session's
`SlotLease` is released or garbage-collected (closing, reaping and shutdown all drop the session).
Acquire and release only touch integers under a lock (I/O thread); growing the storage and zeroing
rows handed to new sessions happen in `StateSlots.step` on the scheduler thread, so no thread touches
state storage while another computes with it.
"""

from __future__ import annotations

import heapq
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import numpy as np

from bridge.runtime.engine import Engine
from bridge.runtime.manifest import StatePair

__all__ = ["HostStateSlots", "SlotLease", "SlotPool", "StateSlots", "create_state_slots"]


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

    def _release(self, index: int) -> None:
        with self._lock:
            heapq.heappush(self._free, index)
            self._fresh.discard(index)


class StateSlots(ABC):
    """Batched recurrent state of one engine, one row per slot, batch axis first."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.pairs: tuple[StatePair, ...] = engine.manifest.state
        self.capacity = 0

    @abstractmethod
    def step(
        self, inputs: Mapping[str, np.ndarray], slots: np.ndarray, size: int, fresh: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Zero `fresh` rows, grow to `size` rows, run one batch (row i = slot `slots[i]`) and
        store the new state; returns the outputs by role, as `Engine.run` does."""

    @abstractmethod
    def read(self, slot: int) -> dict[str, np.ndarray]:
        """One slot's state by state input name, as float32 host arrays with a batch of one."""


class HostStateSlots(StateSlots):
    """Numpy rows for backends that take host arrays (ONNX Runtime)."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._rows: dict[str, np.ndarray] = {p.input: np.zeros(p.zeros_shape(0), p.dtype) for p in self.pairs}

    def _grow(self, size: int) -> None:
        capacity = max(size, 2 * self.capacity, 16)
        for p in self.pairs:
            old = self._rows[p.input]
            rows = np.zeros((capacity, *np.moveaxis(old, p.batch_axis, 0).shape[1:]), p.dtype)
            rows[: self.capacity] = np.moveaxis(old, p.batch_axis, 0)
            self._rows[p.input] = np.moveaxis(rows, 0, p.batch_axis)
        self.capacity = capacity

    def step(
        self, inputs: Mapping[str, np.ndarray], slots: np.ndarray, size: int, fresh: np.ndarray
    ) -> dict[str, np.ndarray]:
        if size > self.capacity:
            self._grow(size)
        for p in self.pairs:
            np.moveaxis(self._rows[p.input], p.batch_axis, 0)[fresh] = 0
        state = {p.input: np.take(self._rows[p.input], slots, axis=p.batch_axis) for p in self.pairs}
        outputs, new_state = self.engine.run(inputs, state)
        for p in self.pairs:
            np.moveaxis(self._rows[p.input], p.batch_axis, 0)[slots] = np.moveaxis(
                new_state[p.input], p.batch_axis, 0
            )
        return outputs

    def read(self, slot: int) -> dict[str, np.ndarray]:
        return {
            p.input: np.take(self._rows[p.input], [slot], axis=p.batch_axis).astype(np.float32)
            for p in self.pairs
        }


@runtime_checkable
class SlotBackend(Protocol):
    """A backend that keeps state rows where it computes (the torch backend: on the device)."""

    def create_state_slots(self, engine: Engine) -> StateSlots: ...


def create_state_slots(engine: Engine) -> StateSlots:
    backend = engine.backend
    return backend.create_state_slots(engine) if isinstance(backend, SlotBackend) else HostStateSlots(engine)
