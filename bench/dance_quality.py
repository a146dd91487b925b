"""Dance quality: `python bench/dance_quality.py [--student W.pt] [--seconds S] [--json OUT]`.

Rows: the choreographer (teacher), the committed student (models/dance_lstm.onnx through ONNX Runtime,
realtime exactly as served: one T=1 step per frame, each output fed back as pose.previous, h/c state
carried), optionally torch weights (--student), and the controls in the same run: smooth random
motion, the student and the teacher on mismatched music, and the untrained reference LSTM. Metrics:
Bailando's Beat Align Score against the songs' beats (after a 4 s warm-up), foot skating (m/s), jerk
(m/s³), PFC, and diversity across songs.

Music, three held-out blocks, each with its own table:
- four synthetic songs (`training.songs.synthetic`, seeds ≥ 9000, which training never draws; known beats);
- real instruments: five songs we compose as MIDI (`training.songs.midi`: GM drum kit, bass,
  chords or lead; hip hop, waltz in 3/4, house, triplet swing, punk; 76-176 BPM) played by Debian's
  `fluidsynth` with `fluid-soundfont-gm`; the beats are the MIDI grid, known exactly. Skipped,
  saying so, without fluidsynth or the sound font;
- real recordings that ship in Debian packages, about 32.5 s each: `music_game.wav` from
  `chromium-bsu-data` (Brian Redfern, Expat licence), a 6.5 s game-music loop played 5 times as the
  game loops it; and two excerpts of Michael Kievernagel's songs in `asc-music` (GPL-2+):
  `time_to_strike.mp3` from 20 s and `frontiers.mp3` from 200 s. Their beats are not known: they
  are estimated offline from the whole clip (onset-envelope autocorrelation for the period, comb sum
  for the phase), independently of the dancer's causal tracker; the excerpts are where librosa's
  beat tracker agrees with that estimate (tempo, and ≥ 97 % of beats within 3 frames). A song whose
  package is missing is skipped, saying so.
In the MIDI and real blocks the mismatched control needs no second dance: each song's motion is
scored against the beats of every other song of the block (the mean over them; every song has a
different tempo). The synthetic block's control dances to a synthetic song at 120 (or 90) BPM.

`--video DIR` writes pictures of the committed student (realtime, ONNX) dancing to a held-out song
(seed 9201, 112 BPM, 20 s): DIR/dance.bvh (for Blender), DIR/dance.mp4 (the skeleton from a front
camera at 30 FPS, the song muxed in; needs ffmpeg and matplotlib) and DIR/dance.png (six frames).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
from scipy.ndimage import gaussian_filter1d

from bridge.audio.music_features import MusicFeatureStream
from bridge.backends import load_engine
from bridge.clients.outputs.bvh import CM_PER_M, bvh_text
from bridge.clients.outputs.session import DEFAULT_BODY_RIG
from bridge.clients.outputs.video import write_contact_sheet, write_dance_video
from bridge.models.motion import AIST_STYLES, DanceLSTM, build_dance_lstm
from bridge.motion.choreographer import choreograph
from bridge.rig.rotations import axis_angle_to_quat
from bridge.runtime.engine import Engine
from bridge.runtime.manifest import FOOT_PLANT
from training.dance.metrics import (
    beat_align_score,
    diversity,
    foot_skating,
    jerk,
    joints_of,
    pfc,
    planted,
)
from training.dance.train import served_rows
from training.songs.midi import fluidsynth_available, midi_song
from training.songs.recordings import BENCH as BENCH_RECORDINGS
from training.songs.recordings import Recording
from training.songs.synthetic import synthesize_song

WARMUP = 240
SONGS = ((97.0, 9001, 5), (143.0, 9002, 2), (78.0, 9003, 8), (172.0, 9004, 0))
# (genre, BPM, seed, style id): seeds ≥ 9000 as for the synthetic songs; a style that suits the genre.
MIDI_SONGS = (
    ("hiphop", 76.0, 9101, 3),  # middle_hiphop
    ("waltz", 100.0, 9102, 9),  # ballet_jazz
    ("house", 124.0, 9103, 5),  # house
    ("swing", 140.0, 9104, 8),  # street_jazz
    ("punk", 176.0, 9105, 0),  # break
)
REAL_SECONDS = 32.5
BLOCKS = ("synthetic", "midi", "real")


MODELS = Path(__file__).resolve().parents[1] / "models"
F32 = npt.NDArray[np.float32]
Dancer = Callable[[F32, int], npt.NDArray[np.float64]]
Beats = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Clip:
    name: str
    rows: F32  # the served features, one row per 60 Hz frame
    beats: Beats  # music beat frames after the warm-up, counted from its end
    style: int
    seed: int  # of the random-motion control


def _scored(beat_frames: npt.NDArray[np.int64], frames: int) -> Beats:
    """The beats BAS is scored on: after the warm-up (frames counted from its end), not the last 10."""
    return beat_frames[(beat_frames > WARMUP) & (beat_frames < frames - 10)] - WARMUP


def _song_rows(bpm: float, seed: int, seconds: float) -> tuple[F32, Beats]:
    song = synthesize_song(seconds, bpm, seed)
    rows = MusicFeatureStream(song.sample_rate, 60.0).push(song.pcm)
    return rows, _scored(np.round(song.beats * 60).astype(np.int64), len(rows))


def _midi_clips(seconds: float) -> list[Clip]:
    clips = []
    for genre, bpm, seed, style in MIDI_SONGS:
        song, pcm = midi_song(genre, bpm, seconds, seed)
        rows = MusicFeatureStream(48000, 60.0).push(pcm)
        beats = _scored(np.round(song.beats * 60).astype(np.int64), len(rows))
        clips.append(Clip(f"{genre} {bpm:.0f} BPM {song.beats_per_bar}/4", rows, beats, style, seed))
    return clips


def offline_beats(envelope: npt.NDArray[np.float64], fps: float = 60.0) -> npt.NDArray[np.int64]:
    """Beat frames of a whole clip from its onset envelope: the autocorrelation peak in 70-180 BPM
    gives the period (halved when the half lag has a peak ≥ 0.4 × the winner's), the comb (every
    period frames) with the largest envelope sum gives the phase."""
    e = envelope - envelope.mean()
    ac = np.correlate(e, e, "full")[e.size - 1 :]
    lags = np.arange(int(fps * 60 / 180), int(fps * 60 / 70) + 1)
    lag = int(lags[np.argmax(ac[lags])])
    a, b, c = ac[lag - 1 : lag + 2]
    period = lag + 0.5 * (a - c) / (a - 2 * b + c)  # parabolic peak: a whole clip drifts on whole frames
    half = lag // 2
    if half >= fps * 60 / 190 and ac[half - 1 : half + 2].max() >= 0.4 * ac[lag]:
        period /= 2  # the faster metrical level, as the streaming tracker prefers (no half-tempo lock)
    grid = np.arange(0.0, e.size, period)
    phase = max(
        range(int(period)), key=lambda p: float(envelope[(grid[grid + p < e.size] + p).astype(int)].sum())
    )
    return np.round(grid + phase).astype(np.int64)[: int((e.size - phase) / period)]


def _real_clip(song: Recording, seed: int) -> Clip:
    """A loop is played whole, `loops` times (cutting it would break its beat grid at each seam);
    a song gives REAL_SECONDS from its start time."""
    rows = served_rows(song, REAL_SECONDS)
    beats = _scored(offline_beats(rows[:, 0].astype(np.float64)), len(rows))
    where = f" from {song.start_s:.0f} s" if song.start_s else f" x{song.loops}" if song.loops > 1 else ""
    return Clip(f"{song.path.name}{where}", rows, beats, song.style, seed)


def torch_dancer(model: DanceLSTM, plant: bool = False) -> Dancer:
    """The realtime loop in torch (T=1 steps, each output fed back); `plant`: the feet planted by
    the served post-processing, as for a model whose manifest asks for it."""

    def run(rows: F32, style: int) -> npt.NDArray[np.float64]:
        h, c = model.zero_state(1)
        prev, out = torch.zeros(1, 75), []
        with torch.no_grad():
            for r in rows:
                p, h, c = model(torch.tensor(r[None, None]), prev, torch.tensor([style]), h, c)
                prev = p[:, 0]
                out.append(prev[0].numpy())
        if plant:
            return np.asarray(planted(np.array(out)[None])[0], np.float64)
        return np.array(out, np.float64)

    return run


def served_dancer(engine: Engine) -> Dancer:
    """The served realtime loop: T=1 calls through the engine, each output fed back."""

    def run(rows: F32, style: int) -> npt.NDArray[np.float64]:
        state = engine.initial_state(1)
        prev, out = np.zeros((1, 75), np.float32), []
        for i in range(len(rows)):
            inputs = {"features": rows[None, i : i + 1], "pose.previous": prev, "style": np.array([style])}
            o, state = engine.run(inputs, state)
            prev = np.concatenate([o["pose.axis_angle"][:, 0], o["pose.root_translation"][:, 0]], axis=1)
            out.append(prev[0])
        if FOOT_PLANT in engine.manifest.post_processing:  # as served: the post plants the feet
            return np.asarray(planted(np.array(out)[None])[0], np.float64)
        return np.array(out, np.float64)

    return run


def score(
    poses: dict[str, npt.NDArray[np.float64]], beats: npt.NDArray[np.int64]
) -> dict[str, dict[str, float]]:
    out = {}
    for name, p in poses.items():
        j = joints_of(p)
        out[name] = {
            "bas": beat_align_score(j[WARMUP:], beats),
            "skating": foot_skating(j),
            "jerk": jerk(j),
            "pfc": pfc(j),
        }
    return out


def _clip_poses(
    rows: F32, other: F32 | None, style: int, seed: int, dancers: dict[str, Dancer]
) -> dict[str, npt.NDArray[np.float64]]:
    """Every motion on `rows`; with `other`, the dancers and the teacher also dance to that music."""
    rng = np.random.default_rng(seed)
    rand = gaussian_filter1d(rng.standard_normal((len(rows), 75)), 15, axis=0) * 3.0
    rand[:, 72:] = 0.0
    poses: dict[str, npt.NDArray[np.float64]] = {
        "teacher": choreograph(rows, AIST_STYLES[style], seed=0).astype(np.float64),
        "random (smooth)": rand,
    }
    for name, dance in dancers.items():
        poses[name] = dance(rows, style)
        if name != "untrained LSTM" and other is not None:
            poses[f"{name}, mismatched music"] = dance(other[: len(rows)], style)
    if other is not None:
        teacher = choreograph(other[: len(rows)], AIST_STYLES[style], seed=0)
        poses["teacher, mismatched music"] = teacher.astype(np.float64)
    return poses


def _cross_scored(
    name: str, n: int, poses: Sequence[dict[str, npt.NDArray[np.float64]]], beats: Beats
) -> dict[str, float]:
    """The mismatched control without dancing again: the motion `name` made for every other song of
    the block, scored against song n's beats (the metrics averaged over those songs)."""
    runs = []
    for m, other in enumerate(poses):
        if m != n:
            motion = other[name]
            runs.append(score({name: motion}, beats[beats < len(motion) - WARMUP - 10])[name])
    return {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}


def _block(
    title: str, clips: Sequence[tuple[Clip, F32 | None]], dancers: dict[str, Dancer]
) -> dict[str, object]:
    """Every motion on every clip, and the mismatched controls: the motion made for the clip's other
    music when it has one, else (None) every other clip's motion cross-scored on this clip's beats.
    Prints and returns the mean metrics, diversity across clips and each clip's BAS per motion."""
    poses = [_clip_poses(c.rows, other, c.style, c.seed, dancers) for c, other in clips]
    results: dict[str, list[dict[str, float]]] = {}
    joints: dict[str, list[npt.NDArray[np.float64]]] = {}
    for n, ((clip, other), p) in enumerate(zip(clips, poses, strict=True)):
        scored = score(p, clip.beats)
        motions = {name: p[name] for name in p}
        if other is None:
            for name in ("teacher", *(d for d in dancers if d != "untrained LSTM")):
                scored[f"{name}, mismatched music"] = _cross_scored(name, n, poses, clip.beats)
                motions[f"{name}, mismatched music"] = p[name]  # the same motions: the same diversity
        for name in sorted(scored, key=_row_order):
            results.setdefault(name, []).append(scored[name])
            joints.setdefault(name, []).append(joints_of(motions[name]))
    table = {
        name: {k: float(np.mean([r[k] for r in rs])) for k in rs[0]} | {"diversity": diversity(joints[name])}
        for name, rs in results.items()
    }
    _print(title, table)
    per_clip = {
        clip.name: {name: rs[n]["bas"] for name, rs in results.items()} for n, (clip, _) in enumerate(clips)
    }
    for name, bas in per_clip.items():
        student, mismatched, teacher = bas["student"], bas["student, mismatched music"], bas["teacher"]
        print(f"  {name:<32} BAS student {student:.3f}, mismatched {mismatched:.3f}, teacher {teacher:.3f}")
    return {"mean": table, "bas_per_clip": per_clip}


def _row_order(name: str) -> tuple[bool, bool, str]:
    """Teacher and students first, then their mismatched controls, then random and untrained."""
    control = name.startswith(("random", "untrained"))
    return control, "mismatched" in name, name


def _print(title: str, table: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}\n{'motion':<30} {'BAS':>6} {'skate m/s':>9} {'jerk':>8} {'PFC':>7} {'divers.':>7}")
    for name, m in table.items():
        div = f"{m['diversity']:>7.2f}" if "diversity" in m else f"{'-':>7}"  # one clip: no diversity
        cells = f"{m['bas']:>6.3f} {m['skating']:>9.3f} {m['jerk']:>8.1f} {m['pfc']:>7.4f} {div}"
        print(f"{name:<30} {cells}")


def write_pictures(out: Path, dance: Dancer) -> list[Path]:
    """BVH, MP4 (with the song) and a contact sheet of `dance` on a held-out song."""
    out.mkdir(parents=True, exist_ok=True)
    song = synthesize_song(20.0, 112.0, 9201)
    rows = MusicFeatureStream(song.sample_rate, 60.0).push(song.pcm)
    poses = dance(rows, 5)
    quats = np.asarray(axis_angle_to_quat(poses[:, :72].reshape(-1, 24, 3)), np.float64)
    bvh = out / "dance.bvh"
    bvh.write_text(bvh_text(DEFAULT_BODY_RIG, quats, poses[:, 72:], 1 / 60, CM_PER_M))
    joints = joints_of(poses)
    mp4 = write_dance_video(out / "dance.mp4", joints, 60.0, song.pcm, song.sample_rate, song.beats)
    start = int(song.beats[np.searchsorted(song.beats, 10.0)] * 60)  # a beat 10 s in, then half beats
    frames = [start + n * round(3600 / 112 / 2) for n in range(6)]
    png = write_contact_sheet(out / "dance.png", joints, 60.0, frames, song.beats)
    return [bvh, mp4, png]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--student", type=Path, default=None, help="also a torch DanceLSTM checkpoint (.pt), feet planted"
    )
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--video", type=Path, default=None, help="write dance.bvh/.mp4/.png here and stop")
    ap.add_argument(
        "--blocks",
        nargs="+",
        choices=BLOCKS,
        default=list(BLOCKS),
        help="which music blocks to run (default all)",
    )
    a = ap.parse_args()
    engine = load_engine(MODELS / "dance_lstm.manifest.json", warmup=False)
    if a.video is not None:
        for path in write_pictures(a.video, served_dancer(engine)):
            print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")
        return
    dancers: dict[str, Dancer] = {"student": served_dancer(engine)}
    if a.student is not None:
        from training.dance.export import load_trained

        dancers["student (torch)"] = torch_dancer(load_trained(a.student)[0], plant=True)  # as served
    dancers["untrained LSTM"] = torch_dancer(build_dance_lstm())
    report: dict[str, object] = {}
    if "synthetic" in a.blocks:
        synthetic = []
        for bpm, seed, style in SONGS:
            rows, beats = _song_rows(bpm, seed, a.seconds)
            other, _ = _song_rows(120.0 if abs(bpm - 120.0) > 10 else 90.0, seed + 50, a.seconds)
            synthetic.append((Clip(f"synthetic {bpm:.0f} BPM", rows, beats, style, seed), other))
        title = f"{len(SONGS)} held-out synthetic songs, {a.seconds:.0f} s each"
        report["synthetic"] = _block(title, synthetic, dancers)
    if "midi" in a.blocks:
        missing = fluidsynth_available()
        if missing is not None:
            print(f"\nreal instruments: {missing}; block skipped")
        else:
            midi = _midi_clips(a.seconds)
            title = f"real instruments (fluidsynth GM): {len(midi)} MIDI songs, {a.seconds:.0f} s each"
            report["real_instruments"] = _block(title, [(clip, None) for clip in midi], dancers)
    if "real" in a.blocks:
        for song in BENCH_RECORDINGS:
            if not song.path.exists():
                print(f"\nreal recording {song.path} is missing (apt-get install {song.package}); skipped")
        real = [_real_clip(song, 9050 + n) for n, song in enumerate(BENCH_RECORDINGS) if song.path.exists()]
        if len(real) > 1:
            title = f"real recordings: {len(real)} songs from Debian packages, about {REAL_SECONDS} s each"
            report["real_recordings"] = _block(title, [(clip, None) for clip in real], dancers)
        elif real:
            print("\nreal recordings: only one is installed; the mismatched control needs two; skipped")
    if a.json:
        a.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
