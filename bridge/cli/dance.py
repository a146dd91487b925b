"""`avatar-bridge dance SONG [SONG ...] --out DIR`: whole songs, many at once, with the served dance model.

Offline, no server: each file is decoded as `serve --audio` decodes it (bridge.clients.sources.audio), the
features of all songs come from one `MusicFeatureBatch` (the served extractor), and every frame step
is one batched engine call over all songs still playing, through the motion pipeline's own
`run_batch` (state slots, `pose.previous` from the guard) and its post-processing (`post.step`:
guard, joint limits, the `--text` energy, low-pass, and the planted feet the model's manifest asks
for). A song that has ended leaves the batch (its rows are masked out, not
padded into the call). More songs than the engine's largest batch run in groups of that size.
Writes DIR/<song>.bvh per song and DIR/summary.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bridge.audio.music_features import MusicFeatureStream
from bridge.backends import load_engine
from bridge.clients.outputs.bvh import CM_PER_M, bvh_text
from bridge.clients.outputs.session import DEFAULT_BODY_RIG
from bridge.clients.sources.audio import AudioFileSource
from bridge.clients.sources.base import SourceError
from bridge.motion.styles import style_for_text
from bridge.paths import default_models_dir
from bridge.pipelines.base import Step
from bridge.pipelines.motion import DEFAULT_SMOOTHING, DEFAULT_STYLE, MotionPipeline
from bridge.protocol.codec import ProtocolError
from bridge.protocol.requests import MAX_AUDIO_RATE, MIN_AUDIO_RATE
from bridge.runtime.engine import Engine

__all__ = ["Danced", "add_arguments", "dance_songs", "read_song", "run"]

F32 = npt.NDArray[np.float32]
MANIFEST = "dance_lstm.manifest.json"
TAIL_S = 0.05  # more than soxr's stream delay


@dataclass
class Danced:
    joints: F32  # (frames, 24, 4) xyzw, post-processed as served
    root: F32  # (frames, 3) metres
    tempo: float  # the streaming beat tracker's tempo at the song's end, BPM
    held: int  # frames the output guard replaced by the last good pose


def read_song(path: Path) -> tuple[F32, int]:
    """Mono float32 PCM and its rate, decoded as `serve --audio` decodes a file."""
    source = AudioFileSource(path)
    if not MIN_AUDIO_RATE <= source.rate <= MAX_AUDIO_RATE:  # 7 Hz would resample to gigabytes
        raise SourceError(
            f"audio {path}: sample rate {source.rate:g} Hz; the bridge dances to "
            f"{MIN_AUDIO_RATE}-{MAX_AUDIO_RATE} Hz audio"
        )
    chunks = []
    while (chunk := source.read()) is not None:
        chunks.append(chunk)
    if not chunks:
        raise SourceError(f"audio {path}: no samples")
    return np.concatenate(chunks), int(source.rate)


def _song_rows(stream: MusicFeatureStream, pcm: F32, fps: float) -> F32:
    """A row per frame of the whole song (frame j at j / fps, up to its end): the streaming
    extractor's latency (half a window, the resampler's delay) is flushed with silence after the song."""
    tail = np.zeros(math.ceil(stream.sample_rate * (stream.latency_ms / 1000 + TAIL_S)), np.float32)
    return stream.feed(np.concatenate([pcm, tail]))[: math.ceil(len(pcm) * fps / stream.sample_rate)]


def _progress(done: int, total: int, shown: list[int]) -> None:
    tenth = done * 10 // max(total, 1)
    if tenth > shown[0]:
        shown[0] = tenth
        print(f"dance: {tenth * 10}% ({done}/{total} frames)", file=sys.stderr, flush=True)


def dance_songs(
    engine: Engine,
    songs: Sequence[tuple[F32, int]],
    style: str = DEFAULT_STYLE,
    smoothing: float = DEFAULT_SMOOTHING,
    progress: bool = False,
    energy: float = 1.0,
) -> list[Danced]:
    """Dance every (pcm, rate) song with `engine`; one engine call per frame step per group of songs."""
    pipeline = MotionPipeline(engine)
    streams = [pipeline.music.open(rate) for _, rate in songs]
    rows = [_song_rows(stream, pcm, pipeline.fps) for stream, (pcm, _) in zip(streams, songs, strict=True)]
    pipeline.music.run()  # the features of all songs in one batch
    total, done, shown = sum(len(r) for r in rows), 0, [0]
    results: list[Danced] = []
    for start in range(0, len(songs), pipeline.max_batch):
        group = range(start, min(start + pipeline.max_batch, len(songs)))
        options = {"style": style, "smoothing": smoothing, "energy": energy}
        states = [pipeline.open_session(options) for _ in group]
        lengths = np.array([len(rows[i]) for i in group])
        frames = int(lengths.max(initial=0))
        # Padded to the longest song of the group; each song's rows past its end are never filled.
        joints = np.zeros((len(group), frames, 24, 4), np.float32)
        root = np.zeros((len(group), frames, 3), np.float32)
        held = np.zeros(len(group), np.int64)
        alpha = np.array([s.alpha for s in states], np.float32)
        energies = np.array([s.energy for s in states], np.float32)
        for t in range(frames):
            live = np.flatnonzero(lengths > t)  # songs that have ended are masked out of the call
            steps = [Step(rows[group[k]][t : t + 1], t, 0) for k in live]
            result = pipeline.run_batch([states[k] for k in live], steps)
            slots = np.array([states[k].slot.index for k in live], np.int64)
            joints[live, t], root[live, t], bad = pipeline.post.step(
                slots, result.rows[:, 0], alpha[live], energies[live]
            )
            held[live] += bad
            done += len(live)
            if progress:
                _progress(done, total, shown)
        for row, (i, n) in enumerate(zip(group, lengths, strict=True)):
            tempo = streams[i].meter.tempo_bpm
            results.append(Danced(joints[row, :n], root[row, :n], tempo, int(held[row])))
    return results


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "songs", nargs="+", type=Path, metavar="SONG", help="sound files (wav, flac, ogg, mp3)"
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for SONG.bvh and summary.json")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--style", default=None, help=f"dance style id (default {DEFAULT_STYLE})")
    how.add_argument(
        "--text", default=None, help='an instruction mapped to a style, e.g. "energetic hip hop"'
    )
    parser.add_argument("--smoothing", type=float, default=DEFAULT_SMOOTHING, help="low-pass strength, 0..1")
    parser.add_argument(
        "--models",
        "--engines",
        dest="models",
        type=Path,
        default=None,
        help="models folder (default: bundled engines/)",
    )


def run(args: argparse.Namespace) -> int:
    style, energy = args.style or DEFAULT_STYLE, 1.0
    if args.text is not None:
        # The model takes the style; the instruction's energy word scales the motion's amplitude
        # in the post-processing (the session option `energy`).
        style, energy = style_for_text(args.text)
    t0 = time.perf_counter()
    try:
        songs = [read_song(path) for path in args.songs]
    except SourceError as exc:
        print(f"dance: {exc}", file=sys.stderr)
        return 2
    t_read = time.perf_counter()
    engine = load_engine(
        (args.models or default_models_dir()) / MANIFEST, backend="onnxruntime", warmup=False
    )
    try:
        danced = dance_songs(engine, songs, style, args.smoothing, progress=True, energy=energy)
    except ProtocolError as exc:  # an unknown style or a smoothing out of range
        print(f"dance: {exc}", file=sys.stderr)
        return 2
    wall = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    fps = engine.manifest.fps
    written: list[dict[str, object]] = []
    names: set[str] = set()
    for path, (pcm, rate), d in zip(args.songs, songs, danced, strict=True):
        name = path.stem if path.stem not in names else f"{path.stem}-{len(names)}"
        names.add(name)
        bvh = args.out / f"{name}.bvh"
        joints, root = d.joints.astype(np.float64), d.root.astype(np.float64)
        bvh.write_text(bvh_text(DEFAULT_BODY_RIG, joints, root, 1 / fps, CM_PER_M))
        written.append(
            {
                "song": str(path),
                "bvh": str(bvh),
                "frames": len(d.joints),
                "seconds": len(pcm) / rate,
                "tempo_bpm": round(d.tempo, 2),
                "held_frames": d.held,
            }
        )
        print(f"{bvh}: {len(d.joints)} frames, {len(pcm) / rate:.1f} s, {d.tempo:.1f} BPM")
    summary = {"style": style, "energy": energy, "model": engine.manifest.name, "songs": written}
    summary |= {"decode_s": t_read - t0, "wall_s": wall}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"{len(danced)} songs in {wall:.1f} s; summary in {args.out / 'summary.json'}")
    return 0
