"""Dance quality: `python bench/dance_quality.py [--student W.pt] [--seconds S] [--json OUT]`.

Rows: the choreographer (teacher), the committed student (engines/dance_lstm.onnx through ONNX Runtime,
realtime exactly as served: one T=1 step per frame, each output fed back as pose.previous, h/c state
carried), optionally torch weights (--student), and the controls in the same run: smooth random
motion, the student and the teacher on mismatched music, and the untrained reference LSTM. Metrics:
Bailando's Beat Align Score against the songs' beats (after a 4 s warm-up), foot skating (m/s), jerk
(m/s³), PFC, and diversity across songs.

Music: four held-out synthetic songs (seeds ≥ 9000, which training never draws; known beats), then a
real recording: `music_game.wav` from Debian's `chromium-bsu-data` (Brian Redfern, Expat licence, see
/usr/share/doc/chromium-bsu-data/copyright), a 6.5 s game-music loop played 5 times as the game
loops it. Its beats are not known: they are estimated offline from the whole clip (onset-envelope
autocorrelation for the period, comb sum for the phase), independently of the dancer's causal
tracker. Without the package (`apt-get install chromium-bsu-data`) that row is skipped, saying so.

`--video DIR` writes pictures of the committed student (realtime, ONNX) dancing to a held-out song
(seed 9201, 112 BPM, 20 s): DIR/dance.bvh (for Blender), DIR/dance.mp4 (the skeleton from a front
camera at 30 FPS, the song muxed in; needs ffmpeg and matplotlib) and DIR/dance.png (six frames).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
from scipy.ndimage import gaussian_filter1d

from bridge.choreography.choreographer import choreograph
from bridge.choreography.metrics import beat_align_score, diversity, foot_skating, jerk, joints_of, pfc
from bridge.media.songs import synthesize_song
from bridge.models.motion import AIST_STYLES, DanceLSTM, build_dance_lstm
from bridge.outputs.bvh import CM_PER_M, bvh_text
from bridge.outputs.session import DEFAULT_BODY_RIG
from bridge.pipelines.music_features import MusicFeatureStream
from bridge.rig.rotations import axis_angle_to_quat
from bridge.rig.smpl import PARENTS
from bridge.runtime.engine import Engine

WARMUP = 240
SONGS = ((97.0, 9001, 5), (143.0, 9002, 2), (78.0, 9003, 8), (172.0, 9004, 0))
REAL = Path("/usr/share/games/chromium-bsu/wav/music_game.wav")
REAL_STYLE = 3  # middle_hiphop
ENGINES = Path(__file__).resolve().parents[1] / "engines"
F32 = npt.NDArray[np.float32]
Dancer = Callable[[F32, int], npt.NDArray[np.float64]]


def _song_rows(bpm: float, seed: int, seconds: float) -> tuple[F32, npt.NDArray[np.int64]]:
    song = synthesize_song(seconds, bpm, seed)
    rows = MusicFeatureStream(song.sample_rate, 60.0).push(song.pcm)
    beats = np.round(song.beats * 60).astype(np.int64)
    return rows, beats[(beats > WARMUP) & (beats < len(rows) - 10)] - WARMUP


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


def _real_rows() -> tuple[F32, npt.NDArray[np.int64]] | None:
    if not REAL.exists():
        return None
    with wave.open(str(REAL)) as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768.0
        rate = w.getframerate()
    rows = MusicFeatureStream(rate, 60.0).push(np.tile(pcm, 5))
    beats = offline_beats(rows[:, 0].astype(np.float64))
    return rows, beats[(beats > WARMUP) & (beats < len(rows) - 10)] - WARMUP


def torch_dancer(model: DanceLSTM) -> Dancer:
    def run(rows: F32, style: int) -> npt.NDArray[np.float64]:
        h, c = model.zero_state(1)
        prev, out = torch.zeros(1, 75), []
        with torch.no_grad():
            for r in rows:
                p, h, c = model(torch.tensor(r[None, None]), prev, torch.tensor([style]), h, c)
                prev = p[:, 0]
                out.append(prev[0].numpy())
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
    rows: F32, other: F32, style: int, seed: int, dancers: dict[str, Dancer]
) -> dict[str, npt.NDArray[np.float64]]:
    rng = np.random.default_rng(seed)
    rand = gaussian_filter1d(rng.standard_normal((len(rows), 75)), 15, axis=0) * 3.0
    rand[:, 72:] = 0.0
    poses: dict[str, npt.NDArray[np.float64]] = {
        "teacher": choreograph(rows, AIST_STYLES[style], seed=0).astype(np.float64),
        "random (smooth)": rand,
    }
    for name, dance in dancers.items():
        poses[name] = dance(rows, style)
        if name != "untrained LSTM":
            poses[f"{name}, mismatched music"] = dance(other[: len(rows)], style)
    poses["teacher, mismatched music"] = choreograph(other[: len(rows)], AIST_STYLES[style], seed=0).astype(
        np.float64
    )
    return poses


def _print(title: str, table: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}\n{'motion':<30} {'BAS':>6} {'skate m/s':>9} {'jerk':>8} {'PFC':>7} {'divers.':>7}")
    for name, m in table.items():
        div = f"{m['diversity']:>7.2f}" if "diversity" in m else f"{'-':>7}"  # one clip: no diversity
        cells = f"{m['bas']:>6.3f} {m['skating']:>9.3f} {m['jerk']:>8.1f} {m['pfc']:>7.4f} {div}"
        print(f"{name:<30} {cells}")


def write_pictures(out: Path, dance: Dancer) -> list[Path]:
    """BVH, MP4 (with the song) and a contact sheet of `dance` on a held-out song."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    out.mkdir(parents=True, exist_ok=True)
    song = synthesize_song(20.0, 112.0, 9201)
    rows = MusicFeatureStream(song.sample_rate, 60.0).push(song.pcm)
    poses = dance(rows, 5)
    quats = np.asarray(axis_angle_to_quat(poses[:, :72].reshape(-1, 24, 3)), np.float64)
    bvh = out / "dance.bvh"
    bvh.write_text(bvh_text(DEFAULT_BODY_RIG, quats, poses[:, 72:], 1 / 60, CM_PER_M))
    joints = joints_of(poses)
    beat = np.zeros(len(rows), bool)
    beat[np.round(song.beats * 60).astype(int)[song.beats * 60 < len(rows) - 0.5]] = True
    fig = plt.figure(figsize=(4.8, 4.8), dpi=100)

    def draw(ax: Axes, i: int) -> None:
        j = joints[i]
        ax.clear()
        for k, p in enumerate(PARENTS):
            if p >= 0:
                ax.plot([j[p, 0], j[k, 0]], [j[p, 1], j[k, 1]], "-", color="tab:blue", lw=3)
        ax.plot([-1, 1], [j[:, 1].min() - 0.01] * 2, color="gray", lw=1)
        ax.set_xlim(-1.0, 1.0)
        ax.set_ylim(-1.3, 0.7)
        ax.set_aspect("equal")
        ax.axis("off")
        near = beat[max(0, i - 2) : i + 3].any()
        ax.set_title(f"{i / 60:5.2f} s" + ("  BEAT" if near else ""), color="red" if near else "black")

    mp4 = out / "dance.mp4"
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "song.wav"
        with wave.open(str(wav), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(song.sample_rate)
            w.writeframes((np.clip(song.pcm, -1, 1) * 32767).astype(np.int16).tobytes())
        cmd = ["ffmpeg", "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgba", "-s", "480x480"]
        cmd += ["-r", "30", "-i", "-", "-i", str(wav), "-c:v", "libx264", "-pix_fmt", "yuv420p"]
        cmd += ["-c:a", "aac", "-shortest", str(mp4)]
        with subprocess.Popen(cmd, stdin=subprocess.PIPE) as ff:
            assert ff.stdin is not None
            ax = fig.add_subplot()
            for i in range(0, len(rows), 2):
                draw(ax, i)
                fig.canvas.draw()
                ff.stdin.write(bytes(fig.canvas.buffer_rgba()))  # type: ignore[attr-defined]
            ff.stdin.close()
    plt.close(fig)
    sheet = plt.figure(figsize=(9, 3), dpi=80)
    start = int(song.beats[np.searchsorted(song.beats, 10.0)] * 60)  # a beat 10 s in, then half beats
    step = round(3600 / 112 / 2)
    for n in range(6):
        draw(sheet.add_subplot(1, 6, n + 1), start + n * step)
    png = out / "dance.png"
    sheet.savefig(png)
    plt.close(sheet)
    return [bvh, mp4, png]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--student", type=Path, default=None, help="also a torch DanceLSTM checkpoint (.pt)")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--video", type=Path, default=None, help="write dance.bvh/.mp4/.png here and stop")
    a = ap.parse_args()
    engine = Engine.load(ENGINES / "dance_lstm.manifest.json", warmup=False)
    if a.video is not None:
        for path in write_pictures(a.video, served_dancer(engine)):
            print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")
        return
    dancers: dict[str, Dancer] = {"student": served_dancer(engine)}
    if a.student is not None:
        from bridge.choreography.export import load_trained

        dancers["student (torch)"] = torch_dancer(load_trained(a.student)[0])
    dancers["untrained LSTM"] = torch_dancer(build_dance_lstm())
    results: dict[str, list[dict[str, float]]] = {}
    clips: dict[str, list[npt.NDArray[np.float64]]] = {}
    for bpm, seed, style in SONGS:
        rows, beats = _song_rows(bpm, seed, a.seconds)
        other, _ = _song_rows(120.0 if abs(bpm - 120.0) > 10 else 90.0, seed + 50, a.seconds)
        poses = _clip_poses(rows, other, style, seed, dancers)
        for name, m in score(poses, beats).items():
            results.setdefault(name, []).append(m)
            clips.setdefault(name, []).append(joints_of(poses[name]))
    table = {
        name: {k: float(np.mean([r[k] for r in rs])) for k in rs[0]} | {"diversity": diversity(clips[name])}
        for name, rs in results.items()
    }
    _print(f"{len(SONGS)} held-out synthetic songs, {a.seconds:.0f} s each", table)
    report: dict[str, object] = {"synthetic": table}
    real = _real_rows()
    if real is None:
        print(f"\nreal recording: {REAL} is missing (apt-get install chromium-bsu-data); row skipped")
    else:
        rows, beats = real
        other, _ = _song_rows(120.0, 9050, len(rows) / 60.0)
        real_table = score(_clip_poses(rows, other, REAL_STYLE, 9050, dancers), beats)
        _print(f"real recording: chromium-bsu-data music_game.wav x5 ({len(rows) / 60:.1f} s)", real_table)
        report["real_recording"] = real_table
    if a.json:
        a.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
