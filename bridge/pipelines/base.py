"""What every pipeline provides: pre-process per session, one engine call per batch, post-process.

Pipelines know nothing of sockets: they turn decoded inputs into engine steps and engine outputs into
encoded frame payloads. A session's state is the object `open_session` returns; its per-frame state
(recurrent engine state, filters, holds) lives in rows of batched stores at the slot that object leases
(bridge.state.slots; docs/architecture.md, "How a session's state is laid out").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from bridge.filters.output_guard import GuardStats
from bridge.protocol.errors import ErrorCode
from bridge.protocol.events import Rig
from bridge.protocol.requests import ImageInput, Input, JpegInput
from bridge.runtime.engine import Engine

StateT = TypeVar("StateT")
StepT = TypeVar("StepT")
WORK_PIXELS = 640 * 480  # one unit of scheduler work for images (Pipeline.work)


@dataclass
class Step(Generic[StepT]):
    """One engine step of one session: what it needs, and the input it came from (for frame headers)."""

    payload: StepT
    input_seq: int
    t_capture_ns: int
    t_queued: float = 0.0  # perf_counter when the input was queued, for the queue-time metric
    # Frames the scheduler counted for it when queued, paid back as counted when it runs: `step_frames`
    # may change meanwhile (a superseded image makes none).
    charged: int = 0


class FailedRow(list[bytes]):
    """A row of `finish_batch` that failed: no frames, and why (`code`: INTERNAL unless the input was
    bad). Only its own session is told; the other rows of the batch keep their frames and state."""

    def __init__(self, error: str, code: ErrorCode = ErrorCode.INTERNAL) -> None:
        super().__init__()
        self.error = error
        self.code = code


@dataclass(frozen=True)
class BatchResult:
    """What one engine call produced, per row (a list, or an array with a row per session), plus its
    cost (copied into every frame); the time of the call's stages where the pipeline measures them
    (seconds by stage name, observed beside the scheduler's own stages); and rows whose input could
    not be used (a JPEG the device path could not decode): their frames are dropped and their
    sessions told."""

    rows: Any
    engine_us: float
    stages: Mapping[str, float] = field(default_factory=dict)
    failed: Mapping[int, FailedRow] = field(default_factory=dict)


class Pipeline(ABC, Generic[StateT, StepT]):
    name: ClassVar[str]
    accepts: ClassVar[tuple[str, ...]]
    # Inputs that may be dropped when a newer one of the same session is queued (latest wins).
    droppable: ClassVar[bool]
    # Whether the scheduler weighs clients against a fair share of its queued work: for inputs whose
    # cost is pre-processing (images). Where the work is the frames (feature rows, audio), each
    # session's own frame bound already caps a client at its sessions' bounds, the share's floor.
    fair_share: ClassVar[bool] = False
    # Whether `prepare` takes JPEG inputs as they came (JpegInput) and the pipeline decodes them itself
    # (the face tracker on CUDA: a batch through nvJPEG in `run_batch`); else the scheduler decodes
    # them before `prepare`.
    decodes_jpeg: bool = False

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # The output guard's counts over all sessions of this pipeline (the metrics endpoint reads them).
        self.guard_stats = GuardStats()

    @property
    def model_name(self) -> str:
        return self.engine.manifest.name

    @property
    def fps(self) -> float:
        return self.engine.manifest.fps

    @property
    def batch_tiers(self) -> tuple[int, ...]:
        """Batch sizes the engine runs at, ascending: the backend's own tiers where it has them (it pads
        a batch up to the next), else the manifest profiles' largest batches."""
        tiers = getattr(self.engine.backend, "batch_tiers", None)
        if tiers:
            return tuple(sorted(tiers))
        return tuple(sorted({p.max_batch for p in self.engine.manifest.profiles})) or (1,)

    @property
    def max_batch(self) -> int:
        return self.batch_tiers[-1]

    @property
    def variants(self) -> tuple[Pipeline[Any, Any], ...]:
        """Pipelines this one hands some sessions to, by their open options (face tracking with a voice
        attached); the server gives each its own scheduler."""
        return ()

    def variant(self, options: Mapping[str, Any]) -> Pipeline[Any, Any]:
        """The pipeline that serves a session of this model opened with `options`: this one, or one of
        `variants` (ProtocolError BAD_VALUE when the options ask for one that is not there)."""
        return self

    def steps_for(self, state: StateT, item: Input) -> int:
        """What `item` costs in the unit of the pending bound, output frames (I/O thread; an estimate)."""
        return 1

    def slices(self, state: StateT, item: Input) -> Sequence[Input]:
        """`item` as the pieces the scheduler queues, each pre-processed on its own (I/O thread): a
        long realtime input is cut so that no piece holds up a round (bridge.serving.scheduler)."""
        return (item,)

    def work(self, state: StateT, item: Input) -> int:
        """What `item` costs the scheduler, in the unit of the per-client fair share (I/O thread): its
        frames (`steps_for`); an image one unit per VGA-sized part of it, since detection and cropping
        grow with pixels."""
        if isinstance(item, ImageInput | JpegInput):  # a JPEG by its header: decoding grows with pixels
            return max(1, -(-item.width * item.height // WORK_PIXELS))
        return self.steps_for(state, item)

    def step_frames(self, step: Step[StepT]) -> int:
        """Output frames one prepared step makes (the same unit as `steps_for`)."""
        return 1

    def batch_key(self, state: StateT, step: Step[StepT]) -> Hashable:
        """Steps with equal keys can share an engine call (e.g. the same time length)."""
        return None

    @abstractmethod
    def open_session(self, options: dict[str, Any]) -> StateT:
        """Validate options (ProtocolError BAD_VALUE on a bad one) and allocate the session's state."""

    @abstractmethod
    def rig(self, state: StateT) -> Rig:
        """The rig described once in the open reply and the `opened` event."""

    def validate(self, state: StateT, item: Input) -> None:
        """Checks that need the session (I/O thread, before queueing); raise ProtocolError to refuse."""

    @abstractmethod
    def prepare(self, state: StateT, item: Input) -> list[Step[StepT]]:
        """Pre-process one input into zero or more engine steps (in order)."""

    @abstractmethod
    def run_batch(self, states: Sequence[StateT], steps: Sequence[Step[StepT]]) -> BatchResult:
        """One engine call over one step of each of several sessions; updates their recurrent state."""

    @abstractmethod
    def finish_batch(
        self,
        states: Sequence[StateT],
        sessions: Sequence[str],
        seqs: Sequence[int],
        steps: Sequence[Step[StepT]],
        result: BatchResult,
    ) -> Sequence[Sequence[bytes]]:
        """Post-process every row of a batch (guard, filters, mapping) and encode its frames: for each
        session, its frames in order, numbered from its next frame number `seqs[i]`; a `FailedRow`
        for a session whose row failed. Frames may be `ColumnFrames` (rows of shared columns,
        bridge.protocol.batch_frames): then they are encoded only where published, and also go out as
        one batch message."""
