"""Train the served DanceLSTM on the choreographer: `python -m bridge.choreography.train --out DIR --seed 0`.

Data: `--songs` synthetic songs (bridge.media.songs) of `--seconds` each, tempi uniform in 70-180 BPM,
meters, swing and timbres from each song's seed, styles cycled; features from the bridge's own
streaming extractor exactly as served (bridge.pipelines.music_features at 48 kHz); the target is the
choreographer's motion on those features. Training: teacher forcing with the previous target pose,
plus Gaussian noise (σ 0.05) and whole-window dropout (30 %) on it so the model leans on the music and
its state rather than copying its input; MSE on the 75 values. Deterministic for a seed on the CPU
(a GPU run reproduces within float tolerance, not bit for bit). Writes DIR/dance_lstm_trained.pt.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch

from bridge.choreography.choreographer import choreograph
from bridge.media.songs import synthesize_song
from bridge.models.motion import AIST_STYLES, DanceLSTM

__all__ = ["make_clip", "train"]


def make_clip(args: tuple[int, float, int]) -> tuple[np.ndarray, np.ndarray, int]:
    """(song index, seconds, data seed) → features (T, 35), target poses (T, 75), style index."""
    from bridge.pipelines.music_features import MusicFeatureStream

    i, seconds, seed = args
    rng = np.random.default_rng([seed, i])
    bpm = float(rng.uniform(70.0, 180.0))
    song = synthesize_song(seconds, bpm, seed=seed * 100003 + i)
    rows = MusicFeatureStream(song.sample_rate, 60.0).push(song.pcm)
    style = i % len(AIST_STYLES)
    return rows, choreograph(rows, AIST_STYLES[style], seed=i), style


def train(out: Path, seed: int, songs: int, seconds: float, steps: int, workers: int) -> Path:
    torch.manual_seed(seed)
    np.random.seed(seed)
    t0 = time.time()
    with ProcessPoolExecutor(workers) as pool:
        clips = list(pool.map(make_clip, [(i, seconds, seed) for i in range(songs)]))
    print(
        f"data: {songs} songs x {seconds:.0f} s = {songs * seconds / 3600:.2f} h in {time.time() - t0:.0f} s"
    )
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    feats = torch.tensor(np.stack([c[0] for c in clips]), dtype=torch.float32)
    poses = torch.tensor(np.stack([c[1] for c in clips]), dtype=torch.float32)
    styles = torch.tensor([c[2] for c in clips], dtype=torch.int64)
    model = DanceLSTM()
    with torch.no_grad():
        model.pose_limit.copy_(poses.abs().amax(dim=(0, 1)) * 1.1 + 0.02)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    gen = torch.Generator().manual_seed(seed)
    window, batch = 240, 64
    for step in range(steps):
        idx = torch.randint(0, songs, (batch,), generator=gen)
        start = torch.randint(0, feats.shape[1] - window - 1, (batch,), generator=gen)
        rows = torch.stack([torch.arange(s, s + window + 1) for s in start.tolist()])
        f = feats[idx[:, None], rows[:, 1:]].to(device)
        y = poses[idx[:, None], rows[:, 1:]].to(device)
        prev = poses[idx[:, None], rows[:, :-1]].to(device)
        prev = prev + 0.05 * torch.randn(prev.shape, generator=gen).to(device)
        keep = (torch.rand(batch, 1, 1, generator=gen) > 0.3).float().to(device)
        prev = prev * keep
        st = styles[idx].to(device)
        # The realtime step's input, built for every step at once (teacher forcing).
        cond = torch.cat(
            [
                model.style_embedding(st)[:, None].expand(-1, window, -1),
                torch.tanh(model.pose_projection(prev)),
            ],
            dim=-1,
        )
        h = torch.zeros(model.layers, batch, model.hidden, device=device)
        hidden, _ = model.lstm(torch.cat([f, cond], dim=-1), (h, h.clone()))
        pred = model.pose_limit * torch.tanh(model.head(hidden))
        loss = torch.nn.functional.mse_loss(pred[:, 30:], y[:, 30:])
        opt.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 200 == 0 or step == steps - 1:
            print(f"step {step:5d} loss {loss.item():.5f} ({time.time() - t0:.0f} s)", flush=True)
    path = out / "dance_lstm_trained.pt"
    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--songs", type=int, default=240)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    print(train(a.out, a.seed, a.songs, a.seconds, a.steps, a.workers))


if __name__ == "__main__":
    main()
