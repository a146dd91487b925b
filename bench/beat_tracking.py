"""Beat-tracker accuracy on a grid of synthetic songs with known beats (issue 14: tempo within ±2 %
of the true tempo from 70 to 180 BPM).

Grid: every `--bpm-step` BPM from 70 to 180, 4/4 and 3/4, straight and triplet swing, every timbre of
training.songs.synthetic, hi-hats on each beat or on every eighth (each point its own seed, so kick pitch,
snare colour, key and progression vary too). Each song (`--seconds`, 24 s) is rendered at the analysis
rate (fps·512 = 30720 Hz, so no resampler) and streamed through MusicFeatureBatch one frame of audio
per tick with one `run()` per tick, as the motion pipeline does; the tracker's `meter` is read after
every tick. Per song, after the warm-up (`--warm-up`, 8 s: the tracker sees 6 s of envelope):

- tempo held: the fraction of ticks whose tempo is within ±2 % of the song's; the final tempo;
- meter: the fraction of ticks with the song's beats per bar (3 or 4);
- beats on time: the fraction of detected beats within ±2 frames of a true beat (the phase), and of
  true beats with a detected beat within ±2 frames (none missed);
- downbeat: over the detected beats within ±2 frames of a true beat, the fraction whose beat in bar
  is the true one (so it needs the meter and the downbeat right).

A song counts as "held" when every tick after the warm-up is within ±2 %.

    python bench/beat_tracking.py [--bpm-step 5] [--seconds 24] [--out bench/results/beat-tracking.json]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bridge.audio.music_features import HOP, MusicFeatureBatch
from bridge.clients.harness.run import write_bench_json
from training.songs.synthetic import Song, synthesize_song

ROOT = Path(__file__).resolve().parents[1]
FPS = 60.0
RATE = round(FPS * HOP)
TIMBRES = ("sine", "saw", "square", "fm")
SWINGS = {"straight": 0.0, "swing": 1.0 / 3.0}
TOLERANCE = 0.02


def seeds_by_kind(count: int, meter: int, swing: float) -> dict[tuple[str, int], list[int]]:
    """`count` seeds for each (timbre, hats per beat): both are drawn from the seed alone (not the
    tempo), so a tiny song at a high tempo tells them cheaply."""
    found: dict[tuple[str, int], list[int]] = {(t, h): [] for t in TIMBRES for h in (1, 2)}
    seed = 1000 * meter + round(100 * swing)
    while any(len(v) < count for v in found.values()):
        probe = synthesize_song(0.01, 600.0, seed, RATE, beats_per_bar=meter, swing=swing)
        kind = found[(probe.timbre, probe.hats_per_beat)]
        if len(kind) < count:
            kind.append(seed)
        seed += 1
    return found


def track(songs: list[Song], warm_up_s: float) -> list[dict[str, Any]]:
    """Stream the songs side by side through one batch; per song, what the tracker got right."""
    batch = MusicFeatureBatch(FPS)
    streams = [batch.open(song.sample_rate) for song in songs]
    chunks = [round(song.sample_rate / FPS) for song in songs]
    ticks = max(s.pcm.size // c for s, c in zip(songs, chunks, strict=True))
    tempo = np.zeros((len(songs), ticks))
    meter = np.zeros((len(songs), ticks), np.int64)
    beats: list[list[tuple[int, int]]] = [[] for _ in songs]  # (frame, beat in bar) per detected beat
    seen = np.zeros(len(songs), np.int64)  # rows made per stream
    for t in range(ticks):
        made = [
            s.feed(song.pcm[t * c : (t + 1) * c]) for s, song, c in zip(streams, songs, chunks, strict=True)
        ]
        batch.run()
        for i, (s, rows) in enumerate(zip(streams, made, strict=True)):
            m = s.meter
            tempo[i, t], meter[i, t] = m.tempo_bpm, m.beats_per_bar
            seen[i] += rows.shape[0]
            if rows.shape[0] and rows[:, 34].max() > 0.5:  # one row per tick: the meter is the beat's
                beats[i].append((int(seen[i]) - 1, m.beat_in_bar))
    warm = round(warm_up_s * FPS)
    out = []
    for i, song in enumerate(songs):
        err = tempo[i, warm:] / song.bpm - 1.0
        truth = np.round(song.beats * FPS).astype(np.int64)
        hits = [
            (int(np.argmin(np.abs(truth - f))), pos)
            for f, pos in beats[i]
            if f >= warm and np.abs(truth - f).min() <= 2
        ]
        detected = np.array([f for f, _ in beats[i] if f >= warm], np.int64)
        judged = truth[(truth >= warm) & (truth < seen[i] - 2)]
        found = [np.abs(detected - b).min() <= 2 for b in judged] if detected.size else [False]
        out.append(
            {
                "bpm": song.bpm,
                "meter": song.beats_per_bar,
                "swing": song.swing,
                "timbre": song.timbre,
                "hats_per_beat": song.hats_per_beat,
                "final_bpm": float(tempo[i, -1]),
                "final_error": float(tempo[i, -1] / song.bpm - 1.0),
                "worst_error": float(err[np.argmax(np.abs(err))]),
                "tempo_held": float(np.mean(np.abs(err) <= TOLERANCE)),
                "meter_correct": float(np.mean(meter[i, warm:] == song.beats_per_bar)),
                "final_meter": int(meter[i, -1]),
                "downbeat_correct": float(np.mean([song.beat_in_bar[b] == p for b, p in hits]))
                if hits
                else 0.0,
                "beats_matched": len(hits),
                "beats_on_time": len(hits) / max(detected.size, 1),
                "true_beats_found": float(np.mean(found)),
            }
        )
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bpm-min", type=float, default=70.0)
    parser.add_argument("--bpm-max", type=float, default=180.0)
    parser.add_argument("--bpm-step", type=float, default=5.0)
    parser.add_argument("--seconds", type=float, default=24.0)
    parser.add_argument("--warm-up", type=float, default=8.0, help="seconds before the tracker is judged")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "beat-tracking.json")
    args = parser.parse_args(argv)
    tempi = np.arange(args.bpm_min, args.bpm_max + 1e-9, args.bpm_step)
    rows: list[dict[str, Any]] = []
    start = time.process_time()
    for meter in (4, 3):
        for swing_name, swing in SWINGS.items():
            seeds = seeds_by_kind(tempi.size, meter, swing)
            for hats in (1, 2):
                songs = [
                    synthesize_song(args.seconds, float(bpm), seeds[(timbre, hats)][k], RATE, meter, swing)
                    for k, bpm in enumerate(tempi)
                    for timbre in TIMBRES
                ]
                group = track(songs, args.warm_up)
                order = [seeds[(t, hats)][k] for k in range(tempi.size) for t in TIMBRES]
                for r, song_seed in zip(group, order, strict=True):
                    r["seed"], r["swing_name"] = song_seed, swing_name
                rows.extend(group)
                print(f"{meter}/4 {swing_name} hats×{hats}: {len(group)} songs", file=sys.stderr, flush=True)
    cpu_s = time.process_time() - start
    held = [r for r in rows if r["tempo_held"] == 1.0]
    final_ok = [r for r in rows if abs(r["final_error"]) <= TOLERANCE]
    worst = max(rows, key=lambda r: abs(r["worst_error"]))
    summary = {
        "songs": len(rows),
        "tempo_held": len(held),
        "tempo_final_within": len(final_ok),
        "mean_tempo_held_fraction": float(np.mean([r["tempo_held"] for r in rows])),
        "worst_error": worst["worst_error"],
        "worst_final_error": max((r["final_error"] for r in rows), key=abs),
        "worst_song": {
            k: worst[k] for k in ("bpm", "meter", "swing_name", "timbre", "hats_per_beat", "seed")
        },
        "meter_correct": float(np.mean([r["meter_correct"] for r in rows])),
        "final_meter_correct": len([r for r in rows if r["final_meter"] == r["meter"]]),
        "downbeat_correct": float(np.mean([r["downbeat_correct"] for r in rows])),
        "beats_on_time": float(np.mean([r["beats_on_time"] for r in rows])),
        "true_beats_found": float(np.mean([r["true_beats_found"] for r in rows])),
    }
    print(
        f"{len(rows)} songs, {args.seconds:.0f} s each, judged after {args.warm_up:.0f} s ({cpu_s:.0f} s CPU)"
    )
    print(
        "| BPM | songs | tempo held ±2 % | final ±2 % | worst error | meter ok | downbeat ok "
        "| on time | found |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for bpm in tempi:
        at = [r for r in rows if r["bpm"] == float(bpm)]
        bad = max(at, key=lambda r: abs(r["worst_error"]))
        print(
            f"| {bpm:.0f} | {len(at)} | {sum(r['tempo_held'] == 1.0 for r in at)} "
            f"| {sum(abs(r['final_error']) <= TOLERANCE for r in at)} | {100 * bad['worst_error']:+.1f} % "
            f"| {100 * np.mean([r['meter_correct'] for r in at]):.0f} % "
            f"| {100 * np.mean([r['downbeat_correct'] for r in at]):.0f} % "
            f"| {100 * np.mean([r['beats_on_time'] for r in at]):.0f} % "
            f"| {100 * np.mean([r['true_beats_found'] for r in at]):.0f} % |"
        )
    misses = [r for r in rows if r["tempo_held"] < 1.0]
    if misses:
        print("\nnot held (tempo outside ±2 % after the warm-up at some tick):")
        print("| BPM | meter | swing | timbre | hats | seed | held | worst error | final BPM |")
        print("|---:|---:|---|---|---:|---:|---:|---:|---:|")
        for r in misses:
            print(
                f"| {r['bpm']:.0f} | {r['meter']} | {r['swing_name']} | {r['timbre']} | {r['hats_per_beat']} "
                f"| {r['seed']} | {100 * r['tempo_held']:.0f} % | {100 * r['worst_error']:+.1f} % "
                f"| {r['final_bpm']:.1f} |"
            )
    print(
        f"\nheld {summary['tempo_held']}/{len(rows)}, "
        f"final within ±2 % {summary['tempo_final_within']}/{len(rows)}, "
        f"worst error {100 * summary['worst_error']:+.1f} %, meter {100 * summary['meter_correct']:.1f} %, "
        f"downbeat {100 * summary['downbeat_correct']:.1f} %, beats on time "
        f"{100 * summary['beats_on_time']:.1f} %, true beats found {100 * summary['true_beats_found']:.1f} %"
    )
    write_bench_json(
        args.out,
        {
            "benchmark": "beat_tracking",
            "command": "python bench/beat_tracking.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "input": f"training.songs.synthetic at {RATE} Hz, {args.seconds} s, one frame of audio per tick",
            "warm_up_s": args.warm_up,
            "tolerance": TOLERANCE,
            "cpu_s": cpu_s,
            "summary": summary,
            "rows": rows,
        },
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
