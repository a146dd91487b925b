"""Music-feature cost per session-frame, batched across sessions against one session at a time.

N live sessions each send 1/60 s of 48 kHz music per tick (800 samples, as the motion pipeline gets
it); per tick the features of every session are computed, in three ways, all in this run:

- ``batched``: one `MusicFeatureBatch`, every session fed, then one `run()` per tick (what the
  motion pipeline does), tempo re-estimated every TEMPO_EVERY frames;
- ``one_by_one``: the same code stepped one session at a time (each stream its own batch of one,
  ``push`` per session), tempo re-estimated every frame: the computation as it was organised before;
- ``previous``: the implementation this replaced (bridge/audio/music_features.py at
  PREVIOUS_REV, read from git: hand-written resampler, per-session state, tempo every frame), when
  the checkout has the git history.

Every session first runs 2.5 s untimed (the beat tracker only starts after 2 s), then TICKS ticks
are timed in blocks of 10; the figures are the median block's CPU time (this process; nothing here
runs on other threads) and wall time per session-frame. The table shows CPU time, which a shared
machine disturbs far less than wall time. Ratio = one-by-one (or previous) cost / batched cost.

    python bench/music_features.py [--sessions 1 16 256] [--ticks 60]
                                   [--out bench/results/music-features-cpu.json]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bridge.audio.music_features import TEMPO_EVERY, MusicFeatureBatch, MusicFeatureStream
from bridge.clients.harness.run import write_bench_json
from bridge.media.music import synthesize_music

ROOT = Path(__file__).resolve().parents[1]
PREVIOUS_REV = "ea2d5f4"  # the last commit with the one-session-at-a-time implementation
RATE = 48000
CHUNK = RATE // 60
WARM_TICKS = 150
BLOCK = 10
SONGS = 4

Tick = Callable[[list[np.ndarray]], int]  # feeds one chunk per session, returns the rows made


def previous_module(rev: str) -> types.ModuleType | None:
    """The music-feature module at `rev`, from git; None without the history."""
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:bridge/audio/music_features.py"],
            capture_output=True,
            check=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("music_features_previous")
    sys.modules[module.__name__] = module  # its dataclasses look their module up
    exec(compile(source, f"{rev}:bridge/audio/music_features.py", "exec"), module.__dict__)
    return module


def session_audio(sessions: int, ticks: int) -> list[np.ndarray]:
    """Each session's music (a few songs, each session starting somewhere else in one)."""
    seconds = ticks / 60 + 1.0
    songs = [synthesize_music(seconds, bpm=96.0 + 12 * k, sample_rate=RATE, seed=k)[0] for k in range(SONGS)]
    out = []
    for i in range(sessions):
        song = songs[i % SONGS]
        offset = (i * 997) % (song.size - ticks * CHUNK)
        out.append(song[offset : offset + ticks * CHUNK])
    return out


def batched(sessions: int) -> Tick:
    batch = MusicFeatureBatch(60.0)
    streams = [batch.open(RATE) for _ in range(sessions)]

    def tick(chunks: list[np.ndarray]) -> int:
        made = sum(int(s.feed(c).shape[0]) for s, c in zip(streams, chunks, strict=True))
        batch.run()
        return made

    return tick


def one_by_one(sessions: int) -> Tick:
    streams = [MusicFeatureStream(RATE, 60.0, tempo_every=1) for _ in range(sessions)]

    def tick(chunks: list[np.ndarray]) -> int:
        return sum(int(s.push(c).shape[0]) for s, c in zip(streams, chunks, strict=True))

    return tick


def previous(module: types.ModuleType) -> Callable[[int], Tick]:
    def make(sessions: int) -> Tick:
        streams = [module.MusicFeatureStream(RATE, 60.0) for _ in range(sessions)]

        def tick(chunks: list[np.ndarray]) -> int:
            return sum(int(s.push(c).shape[0]) for s, c in zip(streams, chunks, strict=True))

        return tick

    return make


def measure(make: Callable[[int], Tick], audio: list[np.ndarray], ticks: int) -> dict[str, float]:
    tick = make(len(audio))

    def chunks(t: int) -> list[np.ndarray]:
        return [a[t * CHUNK : (t + 1) * CHUNK] for a in audio]

    for t in range(WARM_TICKS):
        tick(chunks(t))
    cpu, wall, frames = [], [], 0
    for start in range(WARM_TICKS, WARM_TICKS + ticks, BLOCK):
        c0, w0, made = time.process_time(), time.perf_counter(), 0
        for t in range(start, start + BLOCK):
            made += tick(chunks(t))
        cpu.append((time.process_time() - c0) / max(made, 1))
        wall.append((time.perf_counter() - w0) / max(made, 1))
        frames += made
    return {"cpu_us": float(np.median(cpu)) * 1e6, "wall_us": float(np.median(wall)) * 1e6, "frames": frames}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 16, 256])
    parser.add_argument("--ticks", type=int, default=60, help="timed ticks per measurement")
    parser.add_argument("--previous-rev", default=PREVIOUS_REV)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "music-features-cpu.json")
    args = parser.parse_args(argv)
    ticks = max(BLOCK, args.ticks // BLOCK * BLOCK)
    module = previous_module(args.previous_rev)
    modes: dict[str, Callable[[int], Tick]] = {"batched": batched, "one_by_one": one_by_one}
    if module is not None:
        modes["previous"] = previous(module)
    rows: list[dict[str, Any]] = []
    warm = WARM_TICKS / 60
    print(f"48 kHz in 1/60 s chunks, {ticks} timed ticks after {warm:.1f} s; CPU µs per session-frame")
    print("| sessions | batched | one by one | ratio | previous | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for sessions in args.sessions:
        audio = session_audio(sessions, WARM_TICKS + ticks)
        cost = {name: measure(make, audio, ticks) for name, make in modes.items()}
        after = cost["batched"]["cpu_us"]
        row: dict[str, Any] = {"sessions": sessions}
        for name, c in cost.items():
            row |= {
                f"{name}_cpu_us": c["cpu_us"],
                f"{name}_wall_us": c["wall_us"],
                f"{name}_frames": c["frames"],
            }
        row["one_by_one_ratio"] = cost["one_by_one"]["cpu_us"] / after
        if "previous" in cost:
            row["previous_ratio"] = cost["previous"]["cpu_us"] / after
        rows.append(row)
        prev = (
            f"{row['previous_cpu_us']:.0f} | {row['previous_ratio']:.1f}x" if "previous" in cost else "- | -"
        )
        one = f"{row['one_by_one_cpu_us']:.0f} | {row['one_by_one_ratio']:.1f}x"
        print(f"| {sessions} | {after:.0f} | {one} | {prev} |", flush=True)
    write_bench_json(
        args.out,
        {
            "benchmark": "music_features",
            "command": "python bench/music_features.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "input": f"{RATE} Hz, {CHUNK}-sample chunks, one per session per tick",
            "tempo_every": TEMPO_EVERY,
            "timed_ticks": ticks,
            "previous_rev": args.previous_rev if module is not None else None,
            "rows": rows,
        },
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
