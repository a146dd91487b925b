"""In-process counters and histograms of what the bridge did (exported by bridge.serving.metrics).

Plain Python on purpose: the hot path records into these whether or not prometheus-client is
installed, and the metrics endpoint reads them at scrape time. The I/O thread owns the root
`BridgeStats`; each scheduler gets a `child(model)` of it, so per-engine figures carry their model.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field

# Upper bounds of the latency buckets (seconds): 50 µs .. 1 s covers a decode and a slow engine call.
LATENCY_BUCKETS_S = (
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.0075,
    0.01, 0.016, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
)  # fmt: skip
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
# Why a frame computed for a session went to no subscriber: its session ended while the step ran
# (`session_closed`), its row failed after the engine call (`failed`, the session got INTERNAL), or
# the publisher thread was that far behind (`publish_queue_full`, bridge.serving.publisher).
FRAME_DROP_REASONS = ("session_closed", "failed", "publish_queue_full")
# Why a reply was not sent: the client does not read (`peer_full`), it disconnected (`peer_gone`), or
# scheduler error replies outran the I/O thread's bounded queue (`error_queue_full`).
REPLY_DROP_REASONS = ("peer_full", "peer_gone", "error_queue_full")


@dataclass
class Histogram:
    """Counts per bucket (`bounds[i-1] < v <= bounds[i]`, last bucket unbounded), sum and count."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, int]]:
        """(le, cumulative count) pairs in Prometheus order, ending with +Inf."""
        out, running = [], 0
        for bound, n in zip((*(str(b) for b in self.bounds), "+Inf"), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out

    def copy(self) -> Histogram:
        h = Histogram(self.bounds)
        h.counts, h.total = list(self.counts), self.total
        return h


@dataclass
class BridgeStats:
    model: str = ""  # "" for the I/O thread's root; the engine's model name for a scheduler's child
    frames_published: int = 0
    frames_dropped: int = 0  # frames no subscriber got (FRAME_DROP_REASONS), the sum of `frame_drops`
    frame_drops: Counter[str] = field(default_factory=Counter)
    # Frames a subscriber with a full queue missed; counted once per stall (libzmq skips it silently
    # after the first, until it reads again: bridge.transport.zmq_sockets).
    subscriber_stalls: int = 0
    frames_encoded: int = 0  # per-session frame payloads encoded (only those someone subscribes to)
    batches_published: int = 0  # batch/<pipeline> messages sent (docs/protocol.md 5.3)
    inputs_dropped: int = 0
    sessions_opened: int = 0
    sessions_reaped: int = 0
    replies_dropped: int = 0  # the sum of `reply_drops`
    reply_drops: Counter[str] = field(default_factory=Counter)  # by REPLY_DROP_REASONS
    scheduler_restarts: int = 0
    errors: Counter[str] = field(default_factory=Counter)  # by ErrorCode name
    handshake_failures: Counter[str] = field(default_factory=Counter)  # failed CURVE handshakes by reason
    # By stage: decode, pre, queue, engine, post, publish, end_to_end.
    stages: dict[str, Histogram] = field(default_factory=dict)
    batch_sizes: Histogram = field(default_factory=lambda: Histogram(BATCH_BUCKETS))
    children: list[BridgeStats] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def child(self, model: str) -> BridgeStats:
        """Stats of one engine's scheduler, included in this one's snapshot."""
        c = BridgeStats(model)
        self.children.append(c)
        return c

    def count_error(self, name: str) -> None:
        with self._lock:
            self.errors[name] += 1

    def observe(self, stage: str, seconds: float) -> None:
        with self._lock:
            hist = self.stages.get(stage)
            if hist is None:
                hist = self.stages[stage] = Histogram(LATENCY_BUCKETS_S)
            hist.observe(seconds)

    def count_batch(self, rows: int) -> None:
        with self._lock:
            self.batch_sizes.observe(rows)

    def count_frames(
        self,
        published: int,
        dropped: Counter[str] | None = None,
        stalls: int = 0,
        *,
        encoded: int = 0,
        batches: int = 0,
    ) -> None:
        with self._lock:
            self.frames_published += published
            self.subscriber_stalls += stalls
            self.frames_encoded += encoded
            self.batches_published += batches
            if dropped:
                self.frame_drops.update(dropped)
                self.frames_dropped += sum(dropped.values())

    def drop_reply(self, reason: str) -> None:
        with self._lock:
            self.replies_dropped += 1
            self.reply_drops[reason] += 1

    def drop_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Frame drops and reply drops by reason (for scrapes)."""
        with self._lock:
            return dict(self.frame_drops), dict(self.reply_drops)

    def error_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self.errors)

    def histograms(self) -> tuple[dict[str, Histogram], Histogram]:
        """Consistent copies of the stage histograms and the batch-size histogram (for scrapes)."""
        with self._lock:
            return {k: h.copy() for k, h in self.stages.items()}, self.batch_sizes.copy()

    def snapshot(self) -> dict[str, object]:
        """Totals over this and its children (a summary for logs and tests)."""
        every = [self, *self.children]
        stage_sum: dict[str, float] = {}
        stage_n: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        batches, rows = 0, 0.0
        for s in every:
            stages, batch = s.histograms()
            for name, h in stages.items():
                stage_sum[name] = stage_sum.get(name, 0.0) + h.total
                stage_n[name] += h.count
            batches += batch.count
            rows += batch.total
            errors.update(s.error_counts())
        return {
            "frames_published": sum(s.frames_published for s in every),
            "frames_dropped": sum(s.frames_dropped for s in every),
            "subscriber_stalls": sum(s.subscriber_stalls for s in every),
            "frames_encoded": sum(s.frames_encoded for s in every),
            "batches_published": sum(s.batches_published for s in every),
            "scheduler_restarts": sum(s.scheduler_restarts for s in every),
            "inputs_dropped": sum(s.inputs_dropped for s in every),
            "sessions_opened": self.sessions_opened,
            "sessions_reaped": self.sessions_reaped,
            "replies_dropped": self.replies_dropped,
            "batches": batches,
            "mean_batch": rows / batches if batches else 0.0,
            "errors": dict(errors),
            "stage_mean_ms": {k: 1e3 * v / stage_n[k] for k, v in stage_sum.items() if stage_n[k]},
        }
