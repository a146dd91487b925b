"""The engine's recurrent state as rows of batched stores: one row per session (its SlotLease from
bridge.state), numpy arrays for host backends, device tensors where the backend keeps them
(the torch backend). A batched step gathers the rows of the sessions in the batch by slot index, runs
the engine and scatters the new state back, so a session's state never round-trips through Python
objects (or, on a GPU, through the host) between steps. Growing and zeroing rows happen in
`StateSlots.step` on the scheduler thread, so no thread touches storage while another computes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import numpy as np

from bridge.runtime.engine import Engine
from bridge.runtime.manifest import StatePair

__all__ = ["HostStateSlots", "StateSlots", "create_state_slots"]


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
