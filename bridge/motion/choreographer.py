"""The beat-locked choreographer: music feature rows in, SMPL poses out, causally, one frame at a time.

It reads the 35 served music features (bridge.audio.music_features), not audio, so it dances to
exactly what a trained model sees:
- beat grid: the beat one-hot (column 34) gives beats; the period is a running average of the beat
  intervals; between beats the beat position advances at that period and waits (holds) at the next
  integer if the beat is late. So motion anticipates the beat instead of reacting to it.
- meter, downbeat, bar and phrase: bridge.audio.music_features.MeterTracker over beat accents.
- amplitude: the onset envelope (column 0) smoothed over ~0.4 s, relative to its running maximum.
- move changes: on a downbeat once the style's phrase (4 or 8 bars) is over, or after 2 bars when the
  timbre (MFCC 1..20) has jumped (a novelty peak); the new move is picked by (seed, change count) and
  blended in over one beat by per-joint slerp (smoothstep weight: no velocity step at either end).
- planted feet: poses are built with the root at the origin, then the root translation is chosen so
  the foot carrying weight stays where it was put down and the lowest contact point is on the floor.
- joint limits: each component clamped to bridge.rig.smpl's limits.

All state is a flat float vector (`STATE_SIZE` values), so a session's state can live in any state
row (the serving backend keeps it in the dance manifest's h/c tensors).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridge.audio.music_features import BEAT_COLUMN, MeterTracker
from bridge.motion.foot_plant import feet, plant_root
from bridge.motion.moves import MOVES, knee_bend
from bridge.motion.styles import STYLES
from bridge.rig.rotations import axis_angle_to_quat, quat_to_axis_angle
from bridge.rig.smpl import JOINT_LIMIT_ROWS, NUM_JOINTS

__all__ = ["STATE_SIZE", "Choreographer", "choreograph"]

F64 = npt.NDArray[np.float64]
_MOVE_NAMES = tuple(MOVES)
_ENV, _MFCC = 0, slice(1, 21)


def _layout(*fields: tuple[str, int]) -> tuple[dict[str, slice], int]:
    out, at = {}, 0
    for name, size in fields:
        out[name] = slice(at, at + size)
        at += size
    return out, at


_F, STATE_SIZE = _layout(
    ("started", 1), ("t", 1), ("last_beat", 1), ("period", 1), ("beats", 1), ("bpos", 1),
    ("acc3", 3), ("acc4", 4), ("m_beats", 1), ("bpb", 1), ("bib", 1), ("bar", 1),
    ("env", 1), ("env_max", 1), ("mf_fast", 20), ("mf_slow", 20), ("nov", 1), ("novel", 1),
    ("move", 1), ("prev_move", 1), ("blend_at", 1), ("changes", 1), ("change_bar", 1),
    ("stance", 1), ("plant", 6), ("root", 3),
)  # fmt: skip


def _slerp(a: F64, b: F64, w: F64) -> F64:
    """Per-joint slerp between axis-angle poses a and b (T, J, 3) by weights w (T,)."""
    qa, qb = axis_angle_to_quat(a), axis_angle_to_quat(b)
    dot = np.sum(qa * qb, axis=-1, keepdims=True)
    qb = np.where(dot < 0, -qb, qb)
    dot = np.clip(np.abs(dot), -1.0, 1.0)
    theta = np.arccos(dot)
    s = np.sin(theta)
    ww = w[:, None, None]
    small = s < 1e-6
    ka = np.where(small, 1 - ww, np.sin((1 - ww) * theta) / np.where(small, 1, s))
    kb = np.where(small, ww, np.sin(ww * theta) / np.where(small, 1, s))
    return np.asarray(quat_to_axis_angle(ka * qa + kb * qb), np.float64)


class Choreographer:
    """One dancer. `step(rows)` → poses (T, 75): 72 axis-angle + 3 root translation, per feature row."""

    def __init__(self, style: str = "house", seed: int = 0, energy: float = 1.0) -> None:
        if style not in STYLES:
            raise ValueError(f"unknown style {style!r} (known: {', '.join(STYLES)})")
        self.style = STYLES[style]
        self.seed = int(seed)
        self.energy = float(energy)
        self.state = np.zeros(STATE_SIZE)
        self._moves = tuple(_MOVE_NAMES.index(m) for m in self.style.moves)

    @property
    def move_field(self) -> slice:
        """Where the current move's index sits in `state` (index into bridge.motion.moves.MOVES)."""
        return _F["move"]

    def _pick(self, changes: int, current: int) -> int:
        """The move after `changes` changes: a hash of (seed, changes), never the current move again."""
        h = (self.seed * 2654435761 + changes * 40503 + 12345) % 2**32
        options = [m for m in self._moves if m != current] or list(self._moves)
        return options[(h >> 7) % len(options)]

    def _start(self, s: F64) -> None:
        s[_F["started"]] = 1
        s[_F["last_beat"]] = -1e6
        s[_F["period"]] = 30.0  # 120 BPM at 60 FPS until beats arrive
        s[_F["bpb"]] = 4
        s[_F["env_max"]] = 1e-3
        s[_F["move"]] = s[_F["prev_move"]] = self._moves[0]
        s[_F["blend_at"]] = -10.0
        s[_F["change_bar"]] = 0

    def _control(self, rows: F64) -> tuple[F64, F64, F64, F64, F64]:
        """Per-frame scalars from the rows, advancing the state: beat position, amplitude, blend
        weight, move index and previous move index."""
        s = self.state
        if not s[_F["started"]][0]:
            self._start(s)
        n = rows.shape[0]
        out = np.zeros((5, n))
        meter = MeterTracker()
        for i in range(n):
            row = rows[i]
            t = s[_F["t"]][0]
            env = float(row[_ENV])
            # Timbre novelty: fast vs slow running means of the MFCCs, relative to their usual gap.
            s[_F["mf_fast"]] += 0.2 * (row[_MFCC] - s[_F["mf_fast"]])
            s[_F["mf_slow"]] += 0.01 * (row[_MFCC] - s[_F["mf_slow"]])
            gap = float(np.linalg.norm(s[_F["mf_fast"]] - s[_F["mf_slow"]]))
            if t > 240 and gap > 2.5 * s[_F["nov"]][0] + 1e-6:
                s[_F["novel"]] = 1
            s[_F["nov"]] += 0.005 * (gap - s[_F["nov"]])
            s[_F["env"]] += 0.004 * (env - s[_F["env"]])  # ~4 s: no wobble within a beat
            s[_F["env_max"]] = max(float(s[_F["env_max"]][0]) * 0.9995, float(s[_F["env"]][0]))
            if row[BEAT_COLUMN] > 0.5:
                interval = t - s[_F["last_beat"]][0]
                period = s[_F["period"]][0]
                if 0.4 * period < interval < 2.5 * period:
                    s[_F["period"]] = 0.7 * period + 0.3 * interval
                s[_F["last_beat"]] = t
                s[_F["beats"]] += 1
                meter.acc[3][:], meter.acc[4][:] = s[_F["acc3"]], s[_F["acc4"]]
                meter.beats, meter.beats_per_bar = int(s[_F["m_beats"]][0]), int(s[_F["bpb"]][0])
                meter.beat_in_bar, meter.bar = int(s[_F["bib"]][0]), int(s[_F["bar"]][0])
                meter.beat(env)
                s[_F["acc3"]], s[_F["acc4"]] = meter.acc[3], meter.acc[4]
                s[_F["m_beats"]], s[_F["bpb"]] = meter.beats, meter.beats_per_bar
                s[_F["bib"]], s[_F["bar"]] = meter.beat_in_bar, meter.bar
                bars_since = meter.bar - s[_F["change_bar"]][0]
                due = bars_since >= self.style.phrase_bars or (s[_F["novel"]][0] and bars_since >= 2)
                if meter.beat_in_bar == 0 and due and s[_F["beats"]][0] > 4:
                    s[_F["changes"]] += 1
                    s[_F["prev_move"]] = s[_F["move"]]
                    s[_F["move"]] = self._pick(int(s[_F["changes"]][0]), int(s[_F["move"]][0]))
                    s[_F["blend_at"]] = s[_F["beats"]]
                    s[_F["change_bar"]] = meter.bar
                    s[_F["novel"]] = 0
            beats = s[_F["beats"]][0]
            if beats > 0:
                frac = min(1.0, (t - s[_F["last_beat"]][0]) / s[_F["period"]][0])
                s[_F["bpos"]] = beats + frac  # the latest beat is at the integer `beats`
            bpos = s[_F["bpos"]][0]
            confidence = min(1.0, beats / 4.0)
            level = float(np.clip(s[_F["env"]][0] / s[_F["env_max"]][0], 0.0, 1.0))
            amp = self.style.energy * self.energy * (0.45 + 0.75 * level) * confidence
            x = float(np.clip(bpos - s[_F["blend_at"]][0], 0.0, 1.0))
            out[:, i] = (bpos, amp, x * x * (3 - 2 * x), s[_F["move"]][0], s[_F["prev_move"]][0])
            s[_F["t"]] += 1
        return out[0], out[1], out[2], out[3], out[4]

    def _poses(self, b: F64, amp: F64, w: F64, move: F64, prev: F64) -> tuple[F64, F64]:
        """Local axis-angle (T, 24, 3) and swing leg (T,) for the control scalars."""
        n = b.size
        new, old = np.zeros((n, NUM_JOINTS, 3)), np.zeros((n, NUM_JOINTS, 3))
        swing_new, swing_old = np.full(n, -1), np.full(n, -1)
        for target, swing, index in ((new, swing_new, move), (old, swing_old, prev)):
            for m in np.unique(index).astype(int):
                sel = index == m
                pose, legs = MOVES[_MOVE_NAMES[m]](b[sel], amp[sel])
                target[sel], swing[sel] = pose, legs
        pose = _slerp(old, new, w)
        bounce = self.style.bounce * 5.0 * amp * 0.5 * (1 + np.cos(2 * np.pi * b))
        knee_bend(pose, bounce)
        flat = pose.reshape(n, -1)
        np.clip(flat, JOINT_LIMIT_ROWS[:, 0], JOINT_LIMIT_ROWS[:, 1], out=flat)
        return flat.reshape(n, NUM_JOINTS, 3), np.where(w >= 0.5, swing_new, swing_old).astype(np.float64)

    def _plant(self, pose: F64, swing: F64) -> F64:
        """Root translation per frame that keeps the weight-bearing foot (the leg that does not swing)
        where it was put down (bridge.motion.foot_plant, shared with the served post-processing)."""
        s = self.state
        toes, contact_y = feet(axis_angle_to_quat(pose))
        root = np.zeros((pose.shape[0], 3))
        plant = s[_F["plant"]].reshape(1, 2, 3)
        first = s[_F["t"]][0] - pose.shape[0]  # the frame index of pose[0]; 0: the dance starts now
        for i in range(pose.shape[0]):
            stance = int(s[_F["stance"]][0]) if swing[i] < 0 else 1 - int(swing[i])
            replant = np.zeros((1, 2), bool)
            if first + i == 0:
                replant[:] = True
            elif stance != int(s[_F["stance"]][0]):
                replant[0, stance] = True
            r = plant_root(
                toes[i : i + 1], contact_y[i : i + 1], np.array([stance]), replant, plant, s[None, _F["root"]]
            )[0]
            root[i] = r
            s[_F["root"]] = r
            s[_F["stance"]] = stance
        s[_F["plant"]] = plant.ravel()
        return root

    def step(self, rows: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """Feature rows (T, 35) → poses (T, 75), continuing from the state."""
        r = np.asarray(rows, np.float64)
        b, amp, w, move, prev = self._control(r)
        pose, swing = self._poses(b, amp, w, move, prev)
        root = self._plant(pose, swing)
        return np.concatenate([pose.reshape(len(r), -1), root], axis=1).astype(np.float32)


def choreograph(
    rows: npt.ArrayLike, style: str = "house", seed: int = 0, energy: float = 1.0
) -> npt.NDArray[np.float32]:
    """A whole song's feature rows (T, 35) → poses (T, 75), from a fresh dancer."""
    return Choreographer(style, seed, energy).step(rows)
