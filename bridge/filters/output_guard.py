"""Output guard: no NaN/Inf or out-of-range value ever leaves a pipeline (docs/operations.md, "Output guard").

Two tiers per output:
- a value outside its documented range is **clamped** into it and counted. This is routine: the
  per-component joint limits are a heuristic, and an untrained reference model clamps most frames;
- an output with any NaN/Inf, or a value **grossly** outside its range (beyond it by the channel's
  margin), or a root that jumps faster than a gross speed, is **bad**: it is replaced whole by the
  session's last good output (a network that loses one channel has usually lost the others).

After RESTART_AFTER consecutive bad outputs the session is **hot-restarted** by its pipeline: its
state (recurrent tensors, previous pose, tracker, filters, feature stream) is rebuilt from its open
options in place, with fresh rows, because a diverged recurrent state never recovers by itself. Other
sessions are untouched: each has its own rows, and the restart runs on the scheduler thread that owns
them. The face guard's state is rows of `FaceGuardRows` (the motion guard's, bridge.motion.post);
`GuardStats` counts a pipeline's outputs over all its sessions.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bridge.rig import flame
from bridge.rig.flame import FLAME_RANGES
from bridge.state.slots import grown

RESTART_AFTER = 30  # consecutive bad outputs (half a second at 60 fps) before a hot restart
# How far beyond its range a value may go and still be clamped rather than rejected.
EXPRESSION_MARGIN = 3.0  # FLAME expression units (ψ is roughly unit-variance; range ±3)
ANGLE_MARGIN_RAD = math.pi / 2  # jaw, head and joint angles
EYELID_MARGIN = 1.0
MAX_ROOT_SPEED_M_S = 5.0  # faster root motion is clamped to this speed (a dancer's sprint)
GROSS_ROOT_SPEED_M_S = 20.0  # faster is a bad output: no body moves its pelvis this fast

_FACE_MARGINS = np.empty(flame.FLAME_DIM, np.float32)
_FACE_MARGINS[flame.EXPRESSION] = EXPRESSION_MARGIN
_FACE_MARGINS[flame.JAW] = ANGLE_MARGIN_RAD
_FACE_MARGINS[flame.HEAD] = ANGLE_MARGIN_RAD
_FACE_MARGINS[flame.EYELIDS] = EYELID_MARGIN
_FACE_LO = np.ascontiguousarray(FLAME_RANGES[:, 0])
_FACE_HI = np.ascontiguousarray(FLAME_RANGES[:, 1])
# Beyond these a face output is bad (held), not clamped.
_FACE_GROSS_LO, _FACE_GROSS_HI = _FACE_LO - _FACE_MARGINS, _FACE_HI + _FACE_MARGINS


@dataclass
class GuardStats:
    """Guard counts of one pipeline (model), over all its sessions, kept across session restarts."""

    outputs: int = 0
    clamped: int = 0  # outputs with at least one value clamped into range
    held: int = 0  # bad outputs replaced by the last good one
    restarts: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, clamped: bool, held: bool) -> None:
        with self._lock:
            self.outputs += 1
            self.clamped += clamped
            self.held += held

    def count_restart(self) -> None:
        with self._lock:
            self.restarts += 1


class FaceGuardRows:
    """The face guard of every session, a row per slot (bridge.state): its last good output (FLAME
    layout, bridge.rig.flame) and how many bad outputs it has had in a row. Rows grow and start afresh
    in `prepare`, on the thread that applies them."""

    def __init__(self, stats: GuardStats) -> None:
        self.stats = stats
        self.last_good = np.zeros((0, flame.FLAME_DIM), np.float32)
        self.bad_run = np.zeros(0, np.int64)

    def prepare(self, size: int, fresh: npt.NDArray[np.int64]) -> None:
        """Grow to `size` rows and start the `fresh` rows (new or restarted sessions) afresh."""
        self.last_good, self.bad_run = grown(self.last_good, size), grown(self.bad_run, size)
        self.last_good[fresh], self.bad_run[fresh] = 0.0, 0

    def apply(self, slots: npt.NDArray[np.int64], params: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """One output per distinct slot, `params` (n, FLAME_DIM), checked in one pass against
        FLAME_RANGES: clamped into range, or held (the slot's last good output) when bad."""
        x = np.asarray(params, np.float32)
        bad: npt.NDArray[np.bool_] = np.asarray(
            ~np.isfinite(x).all(axis=1) | (x < _FACE_GROSS_LO).any(axis=1) | (x > _FACE_GROSS_HI).any(axis=1)
        )
        good = ~bad
        out = np.clip(x, _FACE_LO, _FACE_HI)
        clamped = np.asarray((out != x).any(axis=1))
        out[bad] = self.last_good[slots[bad]]
        self.last_good[slots[good]] = out[good]
        self.bad_run[slots[bad]] += 1
        self.bad_run[slots[good]] = 0
        with self.stats._lock:  # one update per batch
            self.stats.outputs += len(x)
            self.stats.clamped += int((clamped & good).sum())
            self.stats.held += int(bad.sum())
        return out

    def restart_due(self, slots: npt.NDArray[np.int64], after: int = RESTART_AFTER) -> npt.NDArray[np.bool_]:
        """Which rows have had `after` bad outputs in a row (their session needs a hot restart)."""
        due: npt.NDArray[np.bool_] = self.bad_run[slots] >= after
        return due
