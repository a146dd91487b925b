"""`avatar-bridge dance SONG [SONG ...] --out DIR`: whole songs, many at once, with the served dance model.

Offline, no server: each file is decoded as `serve --audio` decodes it (bridge.clients.sources.audio),
and the motion pipeline's offline mode (`MotionPipeline.dance`) dances all of them at once: the served
features, one batched engine call per frame step over every song still playing, and the served
post-processing (guard, joint limits, the `--text` energy, low-pass, and the planted feet the model's
manifest asks for). Writes DIR/<song>.bvh per song and DIR/summary.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bridge.backends import load_engine
from bridge.clients.outputs.bvh import CM_PER_M, bvh_text
from bridge.clients.outputs.session import DEFAULT_BODY_RIG
from bridge.clients.sources.audio import AudioFileSource
from bridge.clients.sources.base import SourceError
from bridge.motion.styles import style_for_text
from bridge.paths import default_models_dir
from bridge.pipelines.motion import DEFAULT_SMOOTHING, DEFAULT_STYLE, DancedSong, MotionPipeline
from bridge.protocol.codec import ProtocolError
from bridge.protocol.requests import MAX_AUDIO_RATE, MIN_AUDIO_RATE
from bridge.runtime.engine import Engine

__all__ = ["add_arguments", "dance_songs", "read_song", "run"]

F32 = npt.NDArray[np.float32]
MANIFEST = "dance_lstm.manifest.json"


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


def _printed_progress() -> Callable[[int, int], None]:
    """Progress on stderr, once per tenth of the frames."""
    shown = [0]

    def progress(done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenth > shown[0]:
            shown[0] = tenth
            print(f"dance: {tenth * 10}% ({done}/{total} frames)", file=sys.stderr, flush=True)

    return progress


def dance_songs(
    engine: Engine,
    songs: Sequence[tuple[F32, int]],
    style: str = DEFAULT_STYLE,
    smoothing: float = DEFAULT_SMOOTHING,
    progress: bool = False,
    energy: float = 1.0,
) -> list[DancedSong]:
    """Dance every (pcm, rate) song with `engine` through the motion pipeline's offline mode."""
    options = {"style": style, "smoothing": smoothing, "energy": energy}
    return MotionPipeline(engine).dance(songs, options, _printed_progress() if progress else None)


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
        type=Path,
        default=None,
        help="models folder (default: the bundled models)",
    )
    parser.add_argument("--engines", dest="models", type=Path, help=argparse.SUPPRESS)  # the name before 0.2


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
