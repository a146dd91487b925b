"""Cost of the served foot planting: `python bench/foot_plant.py [--sessions 16 1024] [--json OUT]`.

Times `MotionPost.step` (guard, joint limits, quaternions, no low-pass) with and without the
`foot_plant` stage (bridge.motion.foot_plant.FootPlanter) over one batch of sessions dancing four moves
(step-touch, kick, shuffle, bounce) at random phases, and prints the difference per call and per
row: the best of 5 runs of 120 frames (40 at 1000+ sessions). A timing benchmark: run it under
`flock /tmp/bench.lock nice`; docs/benchmarks.md's figures: `--json bench/results/dance_foot_plant.json`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bridge.filters.output_guard import GuardStats
from bridge.motion.moves import MOVES
from bridge.motion.post import MotionPost


def poses(sessions: int, frames: int) -> npt.NDArray[np.float32]:
    """(frames, sessions, 75) raw poses, root translation zero."""
    rng = np.random.default_rng(0)
    out = np.zeros((frames, sessions, 75), np.float32)
    for i, move in enumerate(("step_touch", "kick", "shuffle", "bounce")):
        rows = np.arange(sessions)[i::4]
        beat = np.arange(frames)[:, None] / 30.0 + rng.random(len(rows))[None]
        pose, _ = MOVES[move](beat.ravel(), np.ones(beat.size))
        out[:, rows, :72] = pose.reshape(frames, len(rows), 72)
    return out


def seconds_per_call(raw: npt.NDArray[np.float32], foot_plant: bool) -> float:
    sessions = raw.shape[1]
    best = []
    for _ in range(5):
        post = MotionPost(GuardStats(), 1 / 60, foot_plant=foot_plant)
        slots = np.arange(sessions)
        post.prepare(sessions, slots)
        alpha = np.zeros(sessions, np.float32)
        t0 = time.perf_counter()
        for frame in raw:
            post.step(slots, frame, alpha)
        best.append((time.perf_counter() - t0) / len(raw))
    return min(best)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, nargs="+", default=[16, 1024])
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    print(f"{'sessions':>8} {'post ms':>8} {'+ feet ms':>9} {'stage ms':>8} {'µs/row':>7}")
    report = []
    for n in a.sessions:
        raw = poses(n, 40 if n >= 1000 else 120)
        off, on = seconds_per_call(raw, False), seconds_per_call(raw, True)
        report.append({"sessions": n, "post_ms": off * 1e3, "with_feet_ms": on * 1e3})
        stage = on - off
        print(f"{n:>8} {off * 1e3:>8.3f} {on * 1e3:>9.3f} {stage * 1e3:>8.3f} {stage / n * 1e6:>7.2f}")
    if a.json:
        a.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
