"""Train the served DanceLSTM on the choreographer: `python -m training.dance.train --out DIR --seed 0`.

Data: `--songs` synthetic songs (training.songs.synthetic) of `--seconds` each, tempi uniform in 70-180 BPM,
meters, swing and timbres from each song's seed, styles cycled; and `--midi-songs` songs on real
instrument samples (training.songs.midi: MIDI we compose, genres cycled, tempi uniform in 70-180
BPM, song seeds MIDI_SEED+, rendered by fluidsynth with the GM sound font). Features from the
bridge's own streaming extractor exactly as served (bridge.audio.music_features at 48 kHz); the
target is the choreographer's motion on those features (dancer seed 0, the bench's teacher). The
MIDI songs' features can be made where fluidsynth is installed and trained on elsewhere
(`--midi-cache`: written when missing, read when present; the targets are computed where it trains).
`--recordings` adds real recordings that ship in Debian game-music packages (training.songs.recordings:
none of the benchmark's packages), whole tracks cut into pieces of `--seconds`, drawn
`--recordings-weight` times as often as a generated song; their features can be made where the
packages are installed (`--recordings-cache`, as for the MIDI songs). They need no beat labels: the
target is the choreographer's dance on them, as on every song.

Targets: the teacher's 72 joint angles and its root height; its horizontal root translation (which
wanders over the floor as the planted feet carry it, and no model can know from the music) is not a
target (zero): the served post-processing plants the student's feet the same way (the manifest's
`post_processing: ["foot_plant"]`, bridge.motion.foot_plant), so the student only has to say how the
body moves. Loss: pose MSE plus velocity and acceleration MSE (each over the target's variance), so
the timing of the motion, which the Beat Align Score reads, is learnt and not only its average pose;
`--feet` adds the velocity MSE of the ankles and toes relative to the pelvis (forward kinematics of
the leg chains), which is what makes planted feet slide.

Two ways to give the student `pose.previous` (`--pose-input`):
- `blind`: the pose projection is zero and frozen (the served input is still there, multiplied by
  zero); the student dances from the music and its own h/c state, so the realtime loop that feeds
  each output back runs exactly what was trained and a whole window trains in one cuDNN call.
- `fed`: teacher forcing on the previous target pose with input noise (`--pose-noise`, a fraction of
  each value's spread) and scheduled sampling: `--passes` passes over each window, each later pass
  feeding, with probability rising linearly to `--sampling` over the first half of training, the
  previous pass's own prediction of the previous frame instead of the target (a pass is one cuDNN
  call: the previous pose enters every step's input; for T=1 that is the served graph). The
  student can then read its beat phase and its move from its own last pose, as the served loop
  feeds it back. (The graph conditions a T>1 call on the pose before the call, so the exported
  manifest says `steps_on_previous_pose` and the motion pipeline steps offline chunks of such a
  model frame by frame, as `avatar-bridge dance` does.)

The 35 raw features (MFCC 0 is about -400 ± 140) are standardised with the training set's mean and
spread, and that standardisation is folded into the first LSTM layer's input weights at the end, so
the exported graph is the untrained model's graph. Validation: BAS of the free-running student
(T=1 steps, each output fed back, feet planted as served) on songs with seeds the data and the bench
never use (and, with MIDI songs, MIDI_VALIDATION rendered songs of seeds MIDI_VALIDATION_SEED+,
also never in the bench; with recordings, six excerpts of a package training does not use, scored
on the served tracker's beats); every validation song weighs the same; the best checkpoint is
kept. Writes DIR/dance_lstm.pt ({"state_dict", "training"}: what `python -m
training.dance.export --weights` exports) and DIR/training.json (the same record with the loss
log, each block's validation BAS too). Deterministic for a seed on the CPU; a GPU run reproduces
within float tolerance, not bit for bit. `--cache` saves the generated data for reruns with other settings.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from bridge.audio.music_features import BEAT_COLUMN, MusicFeatureStream
from bridge.models.motion import AIST_STYLES, N_FEATURES, DanceLSTM, load_dance_lstm
from bridge.motion.choreographer import choreograph
from bridge.rig.smpl import PARENTS, REST_OFFSETS
from training.dance.metrics import beat_align_score, joints_of, planted
from training.songs.recordings import TRAINING, VALIDATION, Recording, missing, read_mono
from training.songs.synthetic import synthesize_song

__all__ = [
    "MIDI_SEED",
    "MIDI_VALIDATION_SEED",
    "VALIDATION_SEED",
    "blind_to_pose",
    "fold_standardisation",
    "make_clip",
    "make_midi_rows",
    "recording_pieces",
    "served_rows",
    "train",
    "unfold_standardisation",
]

F32 = npt.NDArray[np.float32]
VALIDATION_SEED = 7000  # song seeds 7000+ validate; the bench holds out 9000+
MIDI_SEED, MIDI_VALIDATION_SEED, MIDI_VALIDATION = 5000, 7200, 6  # MIDI songs; the bench's are 9101+
MIDI_DATA = (
    "songs on real instrument samples from training.songs.midi (MIDI we compose: GM drum kit, bass, "
    "chords or lead; the six genres cycled, tempo uniform 70-180 BPM, song seeds 5000+i), rendered by "
    "fluidsynth with fluid-soundfont-gm (FluidR3_GM) at 48 kHz; features and targets as for the synthetic "
    "songs"
)
RECORDINGS_DATA = (
    "pieces of real recordings from Debian game-music packages (training.songs.recordings.TRAINING: "
    "extremetuxracer-data, xmoto-data, lincity-ng-data, powermanga-data, freedroid-data; none of the "
    "benchmark's packages), whole tracks cut into pieces of the song length; features as served, targets "
    "the choreographer's dance on them (no beat labels needed); validation on six Neverball tracks "
    "(neverball-data) scored on the served tracker's beats"
)
WARMUP = 240  # frames the beat tracker needs before the scores count (4 s)
BURN_IN = 60  # frames of each training window that only warm the state up
DATA = (
    "synthetic songs from training.songs.synthetic (tempo uniform 70-180 BPM, 4/4 and 3/4, swing, 4 timbres, "
    "8-bar sections; song seeds 0..songs-1), features from bridge.audio.music_features at 48 kHz as "
    "served, targets from bridge.choreography.choreograph (dancer seed 0, styles cycled): its 72 joint "
    "angles and root height, no horizontal root translation (the served post plants the feet)"
)


def make_clip(args: tuple[int, float, int]) -> tuple[F32, F32, int, npt.NDArray[np.int64]]:
    """(song index, seconds, data seed) → features (T, 35), target poses (T, 75), style index, beat
    frames."""
    i, seconds, seed = args
    rng = np.random.default_rng([seed, i])
    bpm = float(rng.uniform(70.0, 180.0))
    song = synthesize_song(seconds, bpm, seed=seed * 100003 + i)
    rows = MusicFeatureStream(song.sample_rate, 60.0).push(song.pcm)
    style = i % len(AIST_STYLES)
    beats = np.round(song.beats * 60).astype(np.int64)
    return rows, choreograph(rows, AIST_STYLES[style], seed=0), style, beats


def make_midi_rows(args: tuple[int, float, int]) -> tuple[F32, int, npt.NDArray[np.int64]]:
    """(song index, seconds, first song seed) → the served features (T, 35) of a MIDI song rendered
    by fluidsynth (genres cycled, tempo uniform 70-180 BPM), its style index and beat frames."""
    from training.songs.midi import GENRES, midi_song

    i, seconds, first = args
    bpm = float(np.random.default_rng([first, i]).uniform(70.0, 180.0))
    song, pcm = midi_song(sorted(GENRES)[i % len(GENRES)], bpm, seconds, first + i)
    rows = MusicFeatureStream(48000, 60.0).push(pcm)
    return rows, i % len(AIST_STYLES), np.round(song.beats * 60).astype(np.int64)


def _teacher(args: tuple[F32, int]) -> F32:
    return choreograph(args[0], AIST_STYLES[args[1]], seed=0)


Clip = tuple[F32, F32, int, npt.NDArray[np.int64]]  # features, teacher poses, style, beat frames
Rows = tuple[F32, int, npt.NDArray[np.int64]]  # features, style, beat frames
_PARTS = ("train_", "val_")


def _load_rows(cache: Path) -> list[list[Rows]]:
    d = np.load(cache)
    return [
        [
            (f, int(s), b[b >= 0])
            for f, s, b in zip(d[k + "features"], d[k + "styles"], d[k + "beats"], strict=True)
        ]
        for k in _PARTS
    ]


def _save_rows(cache: Path, made: list[list[Rows]]) -> None:
    arrays: dict[str, npt.NDArray[Any]] = {}
    for k, clips in zip(_PARTS, made, strict=True):
        beats = np.full((len(clips), max(len(c[2]) for c in clips)), -1, np.int64)
        for n, c in enumerate(clips):
            beats[n, : len(c[2])] = c[2]
        arrays[k + "features"] = np.stack([c[0] for c in clips])
        arrays[k + "styles"] = np.array([c[1] for c in clips])
        arrays[k + "beats"] = beats
    np.savez_compressed(cache, allow_pickle=False, **arrays)


def _with_teacher(made: list[list[Rows]], workers: int) -> tuple[list[Clip], list[Clip]]:
    """Training and validation rows with the teacher's poses, computed here."""
    with ProcessPoolExecutor(max(workers, 1)) as pool:
        train, val = (
            [
                (f, p, s, b)
                for (f, s, b), p in zip(m, pool.map(_teacher, [(f, s) for f, s, _ in m]), strict=True)
            ]
            for m in made
        )
    return train, val


def _midi_data(songs: int, seconds: float, cache: Path | None, workers: int) -> tuple[list[Clip], list[Clip]]:
    """The MIDI training and validation songs as clips: features from `cache` when it exists
    (written otherwise), the teacher's poses computed here."""
    if cache is not None and cache.exists():
        made = _load_rows(cache)
    else:
        jobs = [
            [(i, seconds, MIDI_SEED) for i in range(songs)],
            [(i, 30.0, MIDI_VALIDATION_SEED) for i in range(MIDI_VALIDATION)],
        ]
        with ProcessPoolExecutor(max(workers, 1)) as pool:
            made = [list(pool.map(make_midi_rows, j)) for j in jobs]
        made = [[(f[: min(len(c[0]) for c in m)], st, b) for f, st, b in m] for m in made]  # one length
        if cache is not None:
            _save_rows(cache, made)
    return _with_teacher(made, workers)


def recording_pieces(recording: Recording, seconds: float, style: int) -> list[Rows]:
    """The served features of a whole recording cut into pieces of `seconds`, back to back, the last
    one ending where the recording ends (overlapping the one before); none if it is shorter. Beats:
    the served tracker's (column 34), which the teacher dances to."""
    rows = served_rows(recording)
    n = int(seconds * 60)
    starts = list(range(0, len(rows) - n + 1, n))
    if starts and starts[-1] + n < len(rows):
        starts.append(len(rows) - n)
    return [(rows[s : s + n], style, np.flatnonzero(rows[s : s + n, BEAT_COLUMN])) for s in starts]


def served_rows(recording: Recording, seconds: float | None = None) -> F32:
    """The served features of a recording (or of `seconds` of it)."""
    pcm, rate = read_mono(recording, seconds)
    return MusicFeatureStream(rate, 60.0).push(pcm)


def _recording_job(args: tuple[Recording, float, int]) -> list[Rows]:
    return recording_pieces(*args)


def _recording_data(seconds: float, cache: Path | None, workers: int) -> tuple[list[Clip], list[Clip]]:
    """Pieces of the packaged training recordings and the validation excerpts (training.songs.recordings)
    as clips: features from `cache` when it exists (written otherwise), the teacher's poses computed here."""
    if cache is not None and cache.exists():
        made = _load_rows(cache)
    else:
        if packages := missing(TRAINING + VALIDATION):
            raise SystemExit(f"recordings missing: apt-get install {' '.join(packages)}")
        jobs = [(r, seconds, i % len(AIST_STYLES)) for i, r in enumerate(TRAINING)]
        with ProcessPoolExecutor(max(workers, 1)) as pool:
            pieces = [p for ps in pool.map(_recording_job, jobs) for p in ps]
        excerpts = [served_rows(r, 30.0) for r in VALIDATION]
        n = min(len(rows) for rows in excerpts)  # one length
        val = [
            (rows[:n], i % len(AIST_STYLES), np.flatnonzero(rows[:n, BEAT_COLUMN]))
            for i, rows in enumerate(excerpts)
        ]
        made = [pieces, val]
        if cache is not None:
            _save_rows(cache, made)
    return _with_teacher(made, workers)


def _clips(
    first: int, count: int, seconds: float, seed: int, workers: int
) -> list[tuple[F32, F32, int, npt.NDArray[np.int64]]]:
    jobs = [(i, seconds, seed) for i in range(first, first + count)]
    if workers <= 1:
        return [make_clip(j) for j in jobs]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(make_clip, jobs))


def blind_to_pose(model: DanceLSTM) -> None:
    """Zero and freeze the pose projection: the previous pose no longer reaches the LSTM."""
    with torch.no_grad():
        model.pose_projection.weight.zero_()
        model.pose_projection.bias.zero_()
    model.pose_projection.requires_grad_(False)


def unfold_standardisation(model: DanceLSTM, mean: torch.Tensor, std: torch.Tensor) -> None:
    """The inverse of `fold_standardisation`: a model that takes x becomes one that takes (x - mean) / std."""
    with torch.no_grad():
        w, b = model.lstm.weight_ih_l0, model.lstm.bias_ih_l0
        assert isinstance(w, torch.Tensor) and isinstance(b, torch.Tensor)
        b += w[:, :N_FEATURES] @ mean
        w[:, :N_FEATURES] *= std


def fold_standardisation(model: DanceLSTM, mean: torch.Tensor, std: torch.Tensor) -> None:
    """A model trained on (x - mean) / std becomes one that takes x: W' = W / std, b' = b - W' mean."""
    with torch.no_grad():
        w, b = model.lstm.weight_ih_l0, model.lstm.bias_ih_l0
        assert isinstance(w, torch.Tensor) and isinstance(b, torch.Tensor)
        w[:, :N_FEATURES] /= std
        b -= w[:, :N_FEATURES] @ mean


_LEGS = (0, 1, 2, 4, 5, 7, 8, 10, 11)  # pelvis, hips, knees, ankles, toes (bridge.rig.smpl order)
_FEET = (5, 6, 7, 8)  # ankles and toes among _LEGS


def _rotations(v: torch.Tensor) -> torch.Tensor:
    """Axis-angle (..., 3) → rotation matrices (..., 3, 3) (Rodrigues, stable at zero)."""
    theta = torch.sqrt((v * v).sum(-1) + 1e-12)[..., None, None]  # no NaN gradient at zero
    x, y, z = v.unbind(-1)
    o = torch.zeros_like(x)
    k = torch.stack([o, -z, y, z, o, -x, -y, x, o], dim=-1).reshape(*v.shape[:-1], 3, 3)
    a = torch.sinc(theta / torch.pi)  # sin θ / θ
    b = 0.5 * torch.sinc(theta / (2 * torch.pi)) ** 2  # (1 - cos θ) / θ²
    return torch.eye(3, device=v.device) + a * k + b * (k @ k)


def _feet(pose: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Ankle and toe positions (..., 4, 3) relative to the pelvis, from poses (..., 75)."""
    r = _rotations(pose[..., :72].reshape(*pose.shape[:-1], 24, 3)[..., list(_LEGS), :])
    world_r, world_p = [r[..., 0, :, :]], [torch.zeros_like(pose[..., :3])]
    for i, j in enumerate(_LEGS[1:], start=1):
        parent = _LEGS.index(PARENTS[j])
        world_p.append(world_p[parent] + (world_r[parent] @ offsets[i, :, None])[..., 0])
        world_r.append(world_r[parent] @ r[..., i, :, :])
    return torch.stack([world_p[i] for i in _FEET], dim=-2)


def _fed_forward(
    model: DanceLSTM, f: torch.Tensor, prev: torch.Tensor, style: torch.Tensor, h0: torch.Tensor
) -> torch.Tensor:
    """DanceLSTM's forward with a previous pose per step (B, T, 75) instead of one per call: for
    T=1 this is the served graph."""
    emb = model.style_embedding(style)[:, None].expand(-1, f.shape[1], -1)
    cond = torch.cat([emb, torch.tanh(model.pose_projection(prev))], dim=-1)
    state = (h0.transpose(0, 1).contiguous(), h0.transpose(0, 1).contiguous())
    y, _ = model.lstm(torch.cat([f, cond], dim=-1), state)
    return model.pose_limit * torch.tanh(model.head(y))


def _scores(
    model: DanceLSTM,
    clips: list[tuple[F32, F32, int, npt.NDArray[np.int64]]],
    norm: tuple[torch.Tensor, torch.Tensor],
) -> float:
    """Mean BAS of the free-running student on whole clips, as served: T=1 steps with each output
    fed back as the previous pose, feet planted by the served post-processing."""
    device = next(model.parameters()).device
    model.eval()
    with torch.no_grad():
        f = (torch.tensor(np.stack([c[0] for c in clips]), device=device) - norm[0]) / norm[1]
        style = torch.tensor([c[2] for c in clips], device=device)
        h, c = (s.to(device) for s in model.zero_state(len(clips)))
        prev, poses = torch.zeros(len(clips), 75, device=device), []
        for t in range(f.shape[1]):
            out, h, c = model(f[:, t : t + 1], prev, style, h, c)
            prev = out[:, 0]
            poses.append(prev)
        served = planted(torch.stack(poses, dim=1).cpu().numpy())
    model.train()
    out = []
    for pose, (rows, _, _, beats) in zip(served, clips, strict=True):
        b = beats[(beats > WARMUP) & (beats < len(rows) - 10)] - WARMUP
        out.append(beat_align_score(joints_of(pose)[WARMUP:], b))
    return float(np.mean(out))


def train(
    out: Path,
    seed: int,
    songs: int,
    seconds: float,
    steps: int,
    workers: int,
    window: int = 600,
    batch: int = 64,
    lr: float = 2e-3,
    velocity: float = 1.0,
    acceleration: float = 0.5,
    cache: Path | None = None,
    hidden: int = 256,
    pose_input: str = "blind",
    pose_noise: float = 0.2,
    passes: int = 2,
    sampling: float = 0.5,
    feet: float = 0.0,
    midi_songs: int = 0,
    midi_cache: Path | None = None,
    init: Path | None = None,
    recordings: bool = False,
    recordings_cache: Path | None = None,
    recordings_weight: float = 1.0,
) -> Path:
    torch.manual_seed(seed)
    t0 = time.time()
    if cache is not None and cache.exists():
        data = np.load(cache)
        feats_np, poses_np, styles_np = data["features"], data["poses"], data["styles"]
        val = _clips(VALIDATION_SEED, 8, 30.0, seed, workers)
    else:
        clips = _clips(0, songs, seconds, seed, workers)
        val = _clips(VALIDATION_SEED, 8, 30.0, seed, workers)
        feats_np = np.stack([c[0] for c in clips])
        poses_np = np.stack([c[1] for c in clips])
        styles_np = np.array([c[2] for c in clips])
        if cache is not None:
            np.savez(cache, features=feats_np, poses=poses_np, styles=styles_np)
    midi_val: list[Clip] = []
    if midi_songs:
        midi, midi_val = _midi_data(midi_songs, seconds, midi_cache, workers)
        n = min(feats_np.shape[1], len(midi[0][0]))
        feats_np = np.concatenate([feats_np[:, :n], np.stack([c[0][:n] for c in midi])])
        poses_np = np.concatenate([poses_np[:, :n], np.stack([c[1][:n] for c in midi])])
        styles_np = np.concatenate([styles_np, np.array([c[2] for c in midi])])
    recorded_val: list[Clip] = []
    n_recorded = 0
    if recordings:
        recorded, recorded_val = _recording_data(seconds, recordings_cache, workers)
        n_recorded, n = len(recorded), min(feats_np.shape[1], len(recorded[0][0]))
        feats_np = np.concatenate([feats_np[:, :n], np.stack([c[0][:n] for c in recorded])])
        poses_np = np.concatenate([poses_np[:, :n], np.stack([c[1][:n] for c in recorded])])
        styles_np = np.concatenate([styles_np, np.array([c[2] for c in recorded])])
    hours = feats_np.shape[0] * feats_np.shape[1] / 60.0 / 3600.0
    print(f"data: {feats_np.shape[0]} songs, {hours:.2f} h, in {time.time() - t0:.0f} s", flush=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    feats = torch.tensor(feats_np, device=device)
    poses = torch.tensor(poses_np, device=device)
    poses[..., [72, 74]] = 0.0  # no horizontal root target: the served post plants the feet
    styles = torch.tensor(styles_np, device=device)
    mean = feats.reshape(-1, N_FEATURES).mean(0)
    std = feats.reshape(-1, N_FEATURES).std(0) + 1e-3
    feats = (feats - mean) / std
    pos_var = poses.var(dim=(0, 1)).mean()
    vel_var = poses.diff(dim=1).var(dim=(0, 1)).mean()
    acc_var = poses.diff(n=2, dim=1).var(dim=(0, 1)).mean()
    if init is not None:  # fine-tune a trained student (its pose limit kept): it takes raw features
        model = load_dance_lstm(init).train()
        unfold_standardisation(model, mean.cpu(), std.cpu())
    else:
        model = DanceLSTM(hidden=hidden)
        with torch.no_grad():
            model.pose_limit.copy_(poses.abs().amax(dim=(0, 1)).cpu() * 1.1 + 0.02)
    fed = pose_input == "fed"
    if not fed:
        blind_to_pose(model)
    model.to(device)
    pose_std = poses.reshape(-1, 75).std(0)
    offsets = torch.tensor(REST_OFFSETS[list(_LEGS)], dtype=torch.float32, device=device)
    feet_var = _feet(poses[:8], offsets).diff(dim=1).var(dim=(0, 1)).mean()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=max(steps, 1), pct_start=0.05)
    gen = torch.Generator(device=device).manual_seed(seed)
    n_songs, n_frames = feats.shape[:2]
    # Each recording piece is drawn `recordings_weight` times as often as a generated song.
    weights = torch.ones(n_songs, device=device)
    weights[n_songs - n_recorded :] = recordings_weight
    zero_pose = torch.zeros(batch, 75, device=device)
    h0 = torch.zeros(batch, model.layers, model.hidden, device=device)
    path, best = out / "dance_lstm.pt", -1.0
    log: list[dict[str, float]] = []
    info: dict[str, Any] = {
        "model": "our own DanceLSTM distilled from our rule-based choreographer (no mocap or dance data)",
        "command": "python -m training.dance.train " + " ".join(sys.argv[1:]),
        "data": DATA
        + (f"; and {midi_songs} {MIDI_DATA}" if midi_songs else "")
        + (f"; and {n_recorded} {RECORDINGS_DATA}" if recordings else ""),
        "songs": int(feats_np.shape[0]),
        **({"midi_songs": midi_songs, "midi_validation_songs": len(midi_val)} if midi_songs else {}),
        **(
            {
                "recording_pieces": n_recorded,
                "recording_validation_clips": len(recorded_val),
                "recordings_weight": recordings_weight,
            }
            if recordings
            else {}
        ),
        "hours": round(hours, 2),
        "seed": seed,
        "steps": steps,
        "hidden": model.hidden,
        "pose_input": pose_input,
        **({"pose_noise": pose_noise, "passes": passes, "sampling": sampling} if fed else {}),
        **({"feet": feet} if feet else {}),
        **({"init": str(init)} if init is not None else {}),
        "validation_bas": best,
        "log": log,
        "device": str(device),
    }
    validation = {"synthetic": val, "midi": midi_val, "recordings": recorded_val}
    t_step = time.time()
    for step in range(steps):
        if recordings_weight == 1.0:
            idx = torch.randint(0, n_songs, (batch,), generator=gen, device=device)
        else:
            idx = torch.multinomial(weights, batch, replacement=True, generator=gen)
        start = torch.randint(0, n_frames - window, (batch,), generator=gen, device=device)
        # A quarter of the windows start at the song's start, from the zero state, as a session does.
        start = torch.where(torch.rand(batch, generator=gen, device=device) < 0.25, 0, start)
        rows = start[:, None] + torch.arange(window, device=device)[None]
        f, y = feats[idx[:, None], rows], poses[idx[:, None], rows]
        if fed:
            # The previous target pose (zeros before a song's first frame, as a session starts), noisy.
            prev = torch.where((rows > 0)[..., None], poses[idx[:, None], (rows - 1).clamp_min(0)], 0.0)
            prev = prev + pose_noise * pose_std * torch.randn(prev.shape, generator=gen, device=device)
            p_own = min(1.0, 2.0 * step / max(steps, 1)) * sampling
            for _ in range(passes - 1):
                with torch.no_grad():
                    own = _fed_forward(model, f, prev, styles[idx], h0)
                own = torch.cat([prev[:, :1], own[:, :-1]], dim=1)  # its prediction of the frame before
                take = torch.rand(prev.shape[:2], generator=gen, device=device)[..., None] < p_own
                prev = torch.where(take, own, prev)
            pred = _fed_forward(model, f, prev, styles[idx], h0)[:, BURN_IN:]
        else:
            pred = model(f, zero_pose, styles[idx], h0, h0)[0][:, BURN_IN:]
        y = y[:, BURN_IN:]
        lp = ((pred - y) ** 2).mean() / pos_var
        lv = ((pred.diff(dim=1) - y.diff(dim=1)) ** 2).mean() / vel_var
        la = ((pred.diff(n=2, dim=1) - y.diff(n=2, dim=1)) ** 2).mean() / acc_var
        loss = lp + velocity * lv + acceleration * la
        if feet:  # the feet's motion relative to the pelvis: what the planted root cannot hide
            lf = ((_feet(pred, offsets).diff(dim=1) - _feet(y, offsets).diff(dim=1)) ** 2).mean() / feet_var
            loss = loss + feet * lf
        opt.zero_grad()
        torch.autograd.backward(loss)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if (step + 1) % max(steps // 8, 1) == 0 or step == steps - 1:
            blocks = {k: (_scores(model, v, (mean, std)), len(v)) for k, v in validation.items() if v}
            bas = sum(b * n for b, n in blocks.values()) / sum(
                n for _, n in blocks.values()
            )  # songs weigh the same
            log.append(
                {
                    "step": step + 1,
                    "pose": lp.item(),
                    "velocity": lv.item(),
                    "acceleration": la.item(),
                    "val_bas": bas,
                    **{f"val_{k}": b for k, (b, _) in blocks.items()},
                }
            )
            print(
                f"step {step + 1:5d} pose {lp.item():.4f} vel {lv.item():.4f} acc {la.item():.4f} "
                f"val BAS {bas:.3f} ("
                + ", ".join(f"{k} {b:.3f}" for k, (b, _) in blocks.items())
                + f") ({time.time() - t0:.0f} s)",
                flush=True,
            )
            if bas > best:
                best = bas
                info["validation_bas"], info["best_step"] = best, step + 1
                _save(model, mean, std, path, info)
            info["seconds"] = round(time.time() - t0, 1)
            (out / "training.json").write_text(json.dumps(info, indent=2))
        elif step == 19:
            print(f"step time {(time.time() - t_step) / 20 * 1000:.0f} ms", flush=True)
    if best < 0:
        _save(model, mean, std, path, info)
    return path


def _save(model: DanceLSTM, mean: torch.Tensor, std: torch.Tensor, path: Path, info: dict[str, Any]) -> None:
    """A CPU copy of `model` with the standardisation folded in, and how it was made (what
    training.dance.export puts in the manifest)."""
    copy = DanceLSTM(hidden=model.hidden)
    copy.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    fold_standardisation(copy, mean.cpu(), std.cpu())
    training = {k: v for k, v in info.items() if k != "log"}
    torch.save({"state_dict": copy.state_dict(), "training": training}, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--songs", type=int, default=240)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--window", type=int, default=600)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--velocity", type=float, default=1.0, help="weight of the velocity loss")
    ap.add_argument("--acceleration", type=float, default=0.5, help="weight of the acceleration loss")
    ap.add_argument(
        "--cache", type=Path, default=None, help="reuse (or write) the generated data here (.npz)"
    )
    ap.add_argument("--hidden", type=int, default=256, help="LSTM hidden size (the h/c state width)")
    ap.add_argument("--pose-input", choices=("blind", "fed"), default="blind", help="see above")
    ap.add_argument("--pose-noise", type=float, default=0.2, help="fed: noise on the previous pose")
    ap.add_argument("--passes", type=int, default=2, help="fed: scheduled-sampling passes per window")
    ap.add_argument("--sampling", type=float, default=0.5, help="fed: final share of own predictions")
    ap.add_argument("--feet", type=float, default=0.0, help="weight of the feet's velocity loss")
    ap.add_argument("--init", type=Path, default=None, help="fine-tune this checkpoint (its hidden size)")
    ap.add_argument("--midi-songs", type=int, default=0, help="MIDI songs (fluidsynth) beside --songs")
    ap.add_argument(
        "--midi-cache", type=Path, default=None, help="the MIDI songs' features: reused, or written here"
    )
    ap.add_argument(
        "--recordings", action="store_true", help="packaged real recordings (training.songs.recordings) too"
    )
    ap.add_argument(
        "--recordings-cache", type=Path, default=None, help="their features: reused, or written here"
    )
    ap.add_argument(
        "--recordings-weight", type=float, default=1.0, help="how often a piece is drawn against a song"
    )
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    print(
        train(
            a.out,
            a.seed,
            a.songs,
            a.seconds,
            a.steps,
            a.workers,
            a.window,
            a.batch,
            a.lr,
            a.velocity,
            a.acceleration,
            a.cache,
            a.hidden,
            a.pose_input,
            a.pose_noise,
            a.passes,
            a.sampling,
            a.feet,
            a.midi_songs,
            a.midi_cache,
            a.init,
            a.recordings,
            a.recordings_cache,
            a.recordings_weight,
        )
    )


if __name__ == "__main__":
    main()
