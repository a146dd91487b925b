"""What the speech and music feature batches share: streams queue the frames they were fed, under
the batch's lock, and `run()` computes every queued frame of every stream at once."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

import numpy as np

# A queued item: (its stream, then the output arrays the run fills), e.g. (stream, rows).
Item = TypeVar("Item", bound="tuple[Any, ...]")


class QueuedRuns(ABC, Generic[Item]):
    """The queue and the run; a subclass's `_run(pending)` computes the frames. Feeding holds `_lock`
    too, so a run never sees a half-fed chunk."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[Item] = []

    def run(self) -> None:
        """Fill every frame queued since the last run (all streams at once)."""
        with self._lock:
            pending, self._pending = self._pending, []
            if not pending:
                return
            try:
                self._run(pending)
            except BaseException:
                # Frames that could not be computed read as NaN (the guards' bad output), and every
                # stream skips to its fed audio, so the next frames stay in step with it.
                for stream, *outputs in pending:
                    for out in outputs:
                        out.fill(np.nan)
                    stream._skip_to_fed()
                raise

    @abstractmethod
    def _run(self, pending: list[Item]) -> None:
        """Compute the frames of `pending` into their output arrays (the lock is held)."""
