"""In-process counters of what the bridge did (exported as Prometheus metrics where enabled)."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class BridgeStats:
    frames_published: int = 0
    frames_dropped: int = 0
    inputs_dropped: int = 0
    sessions_opened: int = 0
    sessions_reaped: int = 0
    batches: int = 0
    batch_rows: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    # Per-stage time totals (seconds) and counts: decode, pre, queue, engine, post, publish.
    stage_seconds: Counter[str] = field(default_factory=Counter)
    stage_count: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count_error(self, name: str) -> None:
        with self._lock:
            self.errors[name] += 1

    def observe(self, stage: str, seconds: float) -> None:
        with self._lock:
            self.stage_seconds[stage] += seconds
            self.stage_count[stage] += 1

    def count_batch(self, rows: int) -> None:
        with self._lock:
            self.batches += 1
            self.batch_rows += rows

    def count_frame(self, published: bool) -> None:
        with self._lock:
            if published:
                self.frames_published += 1
            else:
                self.frames_dropped += 1

    def snapshot(self) -> dict[str, object]:
        with self._lock:
            return {
                "frames_published": self.frames_published,
                "frames_dropped": self.frames_dropped,
                "inputs_dropped": self.inputs_dropped,
                "sessions_opened": self.sessions_opened,
                "sessions_reaped": self.sessions_reaped,
                "batches": self.batches,
                "mean_batch": self.batch_rows / self.batches if self.batches else 0.0,
                "errors": dict(self.errors),
                "stage_mean_ms": {k: 1e3 * v / self.stage_count[k] for k, v in self.stage_seconds.items()},
            }
