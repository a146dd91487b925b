"""Motion pipeline: music (PCM or features) -> autoregressive dance step -> guard, limits, low-pass -> frame.

Realtime sessions produce one frame per engine step (time length 1). Offline sessions (option
`mode: "offline"`) send whole sequences: each input is cut into chunks of up to OFFLINE_MAX_STEPS
rows, and one engine call runs a chunk of every ready offline session at once (time length up to
128), one frame per row; for a model whose manifest says `steps_on_previous_pose` (it reads each
frame's previous pose) a chunk is stepped frame by frame instead, its outputs fed back.

Offline without a server, `MotionPipeline.dance` runs whole songs through the same features, engine
and post-processing (`avatar-bridge dance`): one engine call per frame step over every song still
playing, the arrays of the poses back instead of frames.

A session's recurrent state (h, c) is one row of the engine's batched state store and its guard
and filter state one row of `MotionPost`, both at the session's slot index: a batch gathers and
scatters rows by index (bridge.state.slots), and post-processing and frame encoding run once per
batch over all of its sessions (bridge.motion.post, bridge.protocol.motion_frames).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from bridge.audio.music_features import MusicFeatureBatch, MusicFeatureStream
from bridge.filters.low_pass import smoothing_factor, time_constant
from bridge.filters.output_guard import RESTART_AFTER
from bridge.motion.post import ENERGY_RANGE, create_motion_post
from bridge.pipelines.base import BatchResult, FailedRow, Pipeline, Step
from bridge.pipelines.options import check_options
from bridge.protocol.batch_frames import ColumnFrames, motion_columns
from bridge.protocol.codec import ProtocolError
from bridge.protocol.errors import ErrorCode
from bridge.protocol.events import BodyRig
from bridge.protocol.requests import AudioInput, FeaturesInput, Input
from bridge.rig import smpl
from bridge.runtime.engine import Engine
from bridge.runtime.state_rows import create_state_slots
from bridge.state.slots import SlotLease, SlotPool

log = logging.getLogger(__name__)

FEATURE_COLS = 35
DEFAULT_STYLE = "house"
DEFAULT_SMOOTHING = 0.5
MODES = ("realtime", "offline")
OFFLINE_MAX_STEPS = 128  # time length of one offline engine call
SLICE_FRAMES = 4  # frames of realtime audio pre-processed as one piece (`slices`)
POST_WORKERS = 4
SONG_TAIL_S = 0.05  # silence after a whole song (`dance`), more than soxr's stream delay
_RIG = BodyRig(
    smpl.JOINT_NAMES, smpl.PARENTS, smpl.REST_OFFSETS, tuple(name or "" for name in smpl.UNITY_BONE_NAMES)
)


@dataclass
class MotionState:
    style: int
    slot: SlotLease  # row of this session's recurrent state and post-processing state
    alpha: float  # low-pass factor per frame; 0 disables smoothing
    offline: bool
    options: dict[str, Any]  # what it was opened with, to rebuild it on a hot restart
    features: MusicFeatureStream | None = None
    energy: float = 1.0  # amplitude around the neutral stance (bridge.motion.post)


@dataclass(frozen=True)
class DancedSong:
    """One whole song danced offline (`MotionPipeline.dance`)."""

    joints: npt.NDArray[np.float32]  # (frames, 24, 4) xyzw, post-processed as served
    root: npt.NDArray[np.float32]  # (frames, 3) metres
    tempo: float  # the streaming beat tracker's tempo at the song's end, BPM
    held: int  # frames the output guard replaced by the last good pose


def smoothing_cutoff_hz(smoothing: float, fps: float) -> float:
    """Map the user's 0..1 smoothing strength to a low-pass cutoff: 0.5 -> ~6 Hz at 60 fps."""
    return (fps / 2) * (1.0 - smoothing) ** 2 * 0.8


class MotionPipeline(Pipeline[MotionState, np.ndarray]):
    name: ClassVar[str] = "motion"
    accepts: ClassVar[tuple[str, ...]] = ("audio", "features")
    droppable: ClassVar[bool] = False  # autoregressive: every step counts

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.slot_pool = SlotPool()
        self.state_slots = create_state_slots(engine)
        self.post = create_motion_post(engine, self.guard_stats, 1.0 / self.fps)
        self._post_workers = ThreadPoolExecutor(POST_WORKERS, f"post-{engine.manifest.name}")
        # Every session's music-feature state, stepped for all sessions with audio at once.
        self.music = MusicFeatureBatch(self.fps)

    def open_session(self, options: dict[str, Any]) -> MotionState:
        check_options(
            self.name, options, {"style": str, "smoothing": (float, int), "mode": str, "energy": (float, int)}
        )
        styles = self.engine.manifest.styles
        style = options.get("style", DEFAULT_STYLE if DEFAULT_STYLE in styles else styles[0])
        if style not in styles:
            raise ProtocolError(
                ErrorCode.BAD_VALUE, f"motion: unknown style '{style}' (known: {', '.join(styles)})"
            )
        smoothing = float(options.get("smoothing", DEFAULT_SMOOTHING))
        if not 0.0 <= smoothing < 1.0:
            raise ProtocolError(ErrorCode.BAD_VALUE, f"motion: smoothing must be in [0, 1), got {smoothing}")
        mode = options.get("mode", "realtime")
        if mode not in MODES:
            raise ProtocolError(
                ErrorCode.BAD_VALUE, f"motion: mode must be one of {', '.join(MODES)}, got '{mode}'"
            )
        energy = float(options.get("energy", 1.0))
        if not ENERGY_RANGE[0] <= energy <= ENERGY_RANGE[1]:
            raise ProtocolError(
                ErrorCode.BAD_VALUE,
                f"motion: energy must be in [{ENERGY_RANGE[0]}, {ENERGY_RANGE[1]}], got {energy}",
            )
        cutoff = smoothing_cutoff_hz(smoothing, self.fps)
        return MotionState(
            style=styles.index(style),
            slot=self.slot_pool.acquire(),
            alpha=smoothing_factor(time_constant(cutoff), 1.0 / self.fps) if smoothing > 0 else 0.0,
            offline=mode == "offline",
            options=options,
            energy=energy,
        )

    def rig(self, state: MotionState) -> BodyRig:
        return _RIG

    def validate(self, state: MotionState, item: Input) -> None:
        if isinstance(item, FeaturesInput) and item.rows.shape[1] != FEATURE_COLS:
            raise ProtocolError(
                ErrorCode.BAD_VALUE, f"motion: features need {FEATURE_COLS} columns, got {item.rows.shape[1]}"
            )

    def prepare(self, state: MotionState, item: Input) -> list[Step[np.ndarray]]:
        if isinstance(item, AudioInput):
            if state.features is None or state.features.sample_rate != item.rate:
                # A new rate restarts feature extraction; the dance itself (recurrent state) goes on.
                state.features = self.music.open(item.rate)
            # Rows filled by the next `run_batch` (self.music.run), for every session's audio at once;
            # the steps hold views of them.
            rows = state.features.feed(item.samples)
        else:
            assert isinstance(item, FeaturesInput)
            rows = np.asarray(item.rows, dtype=np.float32)
        chunk = OFFLINE_MAX_STEPS if state.offline else 1
        return [Step(rows[i : i + chunk], item.seq, item.t_capture_ns) for i in range(0, len(rows), chunk)]

    def steps_for(self, state: MotionState, item: Input) -> int:
        """Frames, the unit of the pending bound in both modes: feature rows, or the audio's length
        in frames rounded up (a 1/60 s chunk at any rate counts one)."""
        if isinstance(item, FeaturesInput):
            return int(item.rows.shape[0])
        assert isinstance(item, AudioInput)
        return math.ceil(len(item.samples) * self.fps / item.rate)

    def slices(self, state: MotionState, item: Input) -> Sequence[Input]:
        """Realtime audio in pieces of at most SLICE_FRAMES frames: a 1 s chunk at 192 kHz costs ~6 ms
        to pre-process whole, a piece a tenth of it. Offline audio stays whole (bulk work)."""
        if state.offline or not isinstance(item, AudioInput):
            return (item,)
        size = max(1, item.rate * SLICE_FRAMES // round(self.fps))
        if len(item.samples) <= size:
            return (item,)
        return [replace(item, samples=item.samples[i : i + size]) for i in range(0, len(item.samples), size)]

    def step_frames(self, step: Step[np.ndarray]) -> int:
        return len(step.payload)  # realtime 1, offline up to OFFLINE_MAX_STEPS

    def batch_key(self, state: MotionState, step: Step[np.ndarray]) -> Hashable:
        return len(step.payload)  # one engine call runs one time length

    def run_batch(self, states: Sequence[MotionState], steps: Sequence[Step[np.ndarray]]) -> BatchResult:
        self.music.run()  # the features of all audio prepared since the last call (once per tick)
        slots = _slots(states)
        fresh = self.slot_pool.take_fresh()  # rows of new or restarted sessions start from zeros
        size = self.slot_pool.size
        self.post.prepare(size, fresh)
        inputs = {
            "features": np.stack([s.payload for s in steps]),
            "pose.previous": self.post.previous(slots),
            "style": np.fromiter((s.style for s in states), np.int64, len(states)),
        }
        t0 = time.perf_counter()
        length = inputs["features"].shape[1]
        if length > 1 and self.engine.manifest.steps_on_previous_pose:
            # An offline chunk of a model that reads each frame's previous pose: stepped frame by
            # frame, each output fed back within the joint limits as the guard keeps it in realtime
            # (a held or speed-clamped output is the guard's alone), so offline motion is realtime's.
            feats, poses = inputs["features"], []
            for t in range(length):
                inputs["features"] = feats[:, t : t + 1]
                out = self.state_slots.step(inputs, slots, size, fresh if t == 0 else fresh[:0])
                poses.append(np.concatenate((out["pose.axis_angle"], out["pose.root_translation"]), axis=2))
                inputs["pose.previous"] = poses[-1][:, 0].copy()
                np.clip(
                    inputs["pose.previous"][:, :72],
                    smpl.JOINT_LIMIT_ROWS[:, 0],
                    smpl.JOINT_LIMIT_ROWS[:, 1],
                    out=inputs["pose.previous"][:, :72],
                )
            return BatchResult(np.concatenate(poses, axis=1), (time.perf_counter() - t0) * 1e6)
        outputs = self.state_slots.step(inputs, slots, size, fresh)
        engine_us = (time.perf_counter() - t0) * 1e6
        pose = np.concatenate((outputs["pose.axis_angle"], outputs["pose.root_translation"]), axis=2)
        return BatchResult(pose, engine_us)  # rows: (sessions, time, 75)

    def finish_batch(
        self,
        states: Sequence[MotionState],
        sessions: Sequence[str],
        seqs: Sequence[int],
        steps: Sequence[Step[np.ndarray]],
        result: BatchResult,
    ) -> list[Sequence[bytes]]:
        """Each session's frames as rows of the call's columns, encoded only where published
        (bridge.serving.publisher)."""
        pose: np.ndarray = result.rows
        n, length = pose.shape[:2]
        slots = _slots(states)
        alpha = np.fromiter((s.alpha for s in states), np.float32, n)
        energy = np.fromiter((s.energy for s in states), np.float32, n)
        # The wire's ranges (docs/protocol.md): seq is any uint64, t_capture_ns is at most 2^63 - 1.
        input_seqs = np.fromiter((s.input_seq for s in steps), np.uint64, n)
        capture_ns = np.fromiter((s.t_capture_ns for s in steps), np.int64, n)

        def finish_rows(rows: slice) -> list[Sequence[bytes]]:
            m = len(range(*rows.indices(n)))
            joints = np.empty((m, length, smpl.NUM_JOINTS, 4), np.float32)
            root = np.empty((m, length, 3), np.float32)
            for t in range(length):
                joints[:, t], root[:, t], _ = self.post.step(
                    slots[rows], pose[rows, t], alpha[rows], energy[rows]
                )
            ids, first = sessions[rows], np.asarray(seqs[rows], np.uint64)

            def encode(i: slice) -> list[Sequence[bytes]]:
                k = len(ids[i])
                columns = motion_columns(
                    [sid for sid in ids[i] for _ in range(length)],
                    (first[i, None] + np.arange(length, dtype=np.uint64)).ravel(),
                    np.repeat(input_seqs[rows][i], length),
                    np.repeat(capture_ns[rows][i], length),
                    joints=joints[i].reshape(k * length, smpl.NUM_JOINTS, 4),
                    root=root[i].reshape(k * length, 3),
                    engine_us=result.engine_us,
                    batch=n,
                )
                return [ColumnFrames(columns, r * length, (r + 1) * length) for r in range(k)]

            try:
                return encode(slice(0, m))
            except Exception:  # one row that cannot be encoded costs only its own session
                log.exception("motion frame encoding failed; encoding row by row")
                return [_isolated(encode, slice(i, i + 1)) for i in range(m)]

        def finish_chunk(rows: slice) -> list[Sequence[bytes]]:
            try:
                return finish_rows(rows)
            except Exception as exc:  # a chunk that fails costs only its own rows' frames
                log.exception("motion post-processing failed for %d sessions", len(range(*rows.indices(n))))
                return [FailedRow(f"post-processing failed: {exc}") for _ in range(*rows.indices(n))]

        # Large batches in chunks on worker threads (each chunk is disjoint slot rows).
        chunks = [slice(i, min(i + self.post.chunk, n)) for i in range(0, n, self.post.chunk)]
        parts = self._post_workers.map(finish_chunk, chunks) if len(chunks) > 1 else [finish_chunk(chunks[0])]
        frames = [row for part in parts for row in part]
        for i in np.flatnonzero(self.post.restart_due(slots, RESTART_AFTER)):
            self._restart(states[int(i)])
        return frames

    def dance(
        self,
        songs: Sequence[tuple[npt.NDArray[np.float32], int]],
        options: Mapping[str, Any] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[DancedSong]:
        """The offline mode: whole songs, (mono float32 PCM, rate) each, danced without a server, as
        sessions opened with `options` (style, smoothing, energy; ProtocolError BAD_VALUE as `open`)
        would dance them as they stream: the served features of all songs in one batch (each song's
        end flushed with silence, so a song of S seconds gives ceil(fps·S) frames), then one engine
        call per frame step over every song still playing (a song that has ended leaves the call), in
        groups of the engine's largest batch, and the served post-processing. `progress(done, total)`
        after each step, in frames."""
        streams = [self.music.open(rate) for _, rate in songs]
        rows = [_song_rows(stream, pcm, self.fps) for stream, (pcm, _) in zip(streams, songs, strict=True)]
        self.music.run()  # the features of all songs in one batch
        total, done = sum(len(r) for r in rows), 0
        results: list[DancedSong] = []
        for start in range(0, len(songs), self.max_batch):
            group = range(start, min(start + self.max_batch, len(songs)))
            states = [self.open_session(dict(options or {})) for _ in group]
            lengths = np.array([len(rows[i]) for i in group])
            frames = int(lengths.max(initial=0))
            # Padded to the longest song of the group; each song's rows past its end are never filled.
            joints = np.zeros((len(group), frames, smpl.NUM_JOINTS, 4), np.float32)
            root = np.zeros((len(group), frames, 3), np.float32)
            held = np.zeros(len(group), np.int64)
            alpha = np.array([s.alpha for s in states], np.float32)
            energies = np.array([s.energy for s in states], np.float32)
            for t in range(frames):
                live = np.flatnonzero(lengths > t)  # songs that have ended are masked out of the call
                steps = [Step(rows[group[k]][t : t + 1], t, 0) for k in live]
                result = self.run_batch([states[k] for k in live], steps)
                joints[live, t], root[live, t], bad = self.post.step(
                    _slots([states[k] for k in live]), result.rows[:, 0], alpha[live], energies[live]
                )
                held[live] += bad
                done += len(live)
                if progress is not None:
                    progress(done, total)
            for row, (i, n) in enumerate(zip(group, lengths, strict=True)):
                tempo = streams[i].meter.tempo_bpm
                results.append(DancedSong(joints[row, :n], root[row, :n], tempo, int(held[row])))
        return results

    def _restart(self, state: MotionState) -> None:
        """Hot restart: a diverged recurrent state never recovers, so rebuild it (a new, zeroed slot)
        in place from the open options; the old slot is freed when its lease goes."""
        vars(state).update(vars(self.open_session(state.options)))
        self.post.stats.count_restart()
        log.warning("hot restart of a motion session after %d consecutive bad outputs", RESTART_AFTER)


def _isolated(encode: Callable[[slice], list[Sequence[bytes]]], row: slice) -> Sequence[bytes]:
    try:
        return encode(row)[0]
    except Exception as exc:
        return FailedRow(f"frame encoding failed: {exc}")


def _song_rows(stream: MusicFeatureStream, pcm: npt.NDArray[np.float32], fps: float) -> np.ndarray:
    """A row per frame of a whole song (frame j at j / fps, up to its end): the streaming extractor's
    latency (half a window, the resampler's delay) is flushed with silence after the song."""
    tail = np.zeros(math.ceil(stream.sample_rate * (stream.latency_ms / 1000 + SONG_TAIL_S)), np.float32)
    rows: np.ndarray = stream.feed(np.concatenate([pcm, tail]))[
        : math.ceil(len(pcm) * fps / stream.sample_rate)
    ]
    return rows


def _slots(states: Sequence[MotionState]) -> np.ndarray:
    return np.fromiter((s.slot.index for s in states), np.int64, len(states))
