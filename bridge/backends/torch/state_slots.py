"""State slots on the torch backend's device: one batch-first tensor per state input, in the compute
precision. Gather, run and scatter happen on the backend's compute stream (`TorchBackend.infer_slots`),
so between steps the state never leaves the device."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import torch

from bridge.runtime.engine import Engine
from bridge.runtime.state_rows import StateSlots

if TYPE_CHECKING:
    from bridge.backends.torch.runner import TorchBackend

__all__ = ["DeviceStateSlots"]


class DeviceStateSlots(StateSlots):
    def __init__(self, engine: Engine, backend: TorchBackend) -> None:
        super().__init__(engine)
        self._backend = backend
        self.rows: dict[str, torch.Tensor] = {
            p.input: torch.zeros(p.zeros_shape(0), dtype=backend.precision, device=backend.device)
            for p in self.pairs
        }
        self._inputs = [(s.role, s.tensor) for s in engine.manifest.inputs]

    def step(
        self, inputs: Mapping[str, np.ndarray], slots: np.ndarray, size: int, fresh: np.ndarray
    ) -> dict[str, np.ndarray]:
        feeds = {tensor: inputs[role] for role, tensor in self._inputs}
        results = self._backend.infer_slots(feeds, self, slots, size, fresh)
        return self.engine.outputs_by_role(results)

    def prepare(self, size: int, fresh: np.ndarray) -> None:
        """Grow to `size` rows and zero `fresh` ones (the backend calls this on its compute stream)."""
        if size > self.capacity:
            capacity = max(size, 2 * self.capacity, 16)
            for name, old in self.rows.items():
                rows = torch.zeros((capacity, *old.shape[1:]), dtype=old.dtype, device=old.device)
                rows[: self.capacity] = old
                self.rows[name] = rows
            self.capacity = capacity
        if len(fresh):
            index = torch.as_tensor(fresh, device=self._backend.device)
            for rows in self.rows.values():
                rows.index_fill_(0, index, 0)

    def read(self, slot: int) -> dict[str, np.ndarray]:
        return {name: rows[slot : slot + 1].float().cpu().numpy() for name, rows in self.rows.items()}
