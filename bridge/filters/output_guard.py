"""Output guard: no NaN/Inf or out-of-range value ever leaves a pipeline (docs/operations.md, "Output guard").

Two tiers per output:
- a value outside its documented range is **clamped** into it and counted. This is routine: the
  per-component joint limits are a heuristic, and an untrained reference model clamps most frames;
- an output with any NaN/Inf, or a value **grossly** outside its range (beyond it by the channel's
  margin), or a root that jumps faster than a gross speed, is **bad**: it is replaced whole by the
  session's last good output (a network that loses one channel has usually lost the others).

After `restart_after` consecutive bad outputs the session is **hot-restarted**: its state (recurrent
tensors, previous pose, tracker, filters, feature stream) is rebuilt from its open options in place,
because a diverged recurrent state never recovers by itself. Other sessions are untouched: state is
per session, and the restart runs on the scheduler thread that owns it.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bridge.rig import flame
from bridge.rig.flame import FLAME_RANGES

log = logging.getLogger(__name__)

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


class OutputGuard:
    """Per-session guard state: last good output, consecutive bad count, how to reopen the session."""

    def __init__(
        self, stats: GuardStats, reopen: Callable[[], object], size: int, restart_after: int = RESTART_AFTER
    ) -> None:
        self.stats = stats
        self.restart_after = restart_after
        self.consecutive_bad = 0
        self._reopen = reopen
        self._last_good = np.zeros(size, np.float32)
        self._has_good = False

    def _accept(self, out: npt.NDArray[np.float32], clamped: bool) -> npt.NDArray[np.float32]:
        self.stats.record(clamped, held=False)
        self.consecutive_bad = 0
        self._last_good[:] = out
        self._has_good = True
        return out

    def _hold(self) -> npt.NDArray[np.float32]:
        self.stats.record(clamped=False, held=True)
        self.consecutive_bad += 1
        return self._last_good.copy()

    def restart_if_due(self, state: object) -> bool:
        """Rebuild `state` in place (the scheduler and server hold references to it) once it is due."""
        if self.consecutive_bad < self.restart_after:
            return False
        fresh = self._reopen()
        vars(state).update(vars(fresh))  # the fresh state brings a fresh guard: the count starts over
        self.stats.count_restart()
        log.warning("hot restart of a session after %d consecutive bad outputs", self.consecutive_bad)
        return True


class FaceOutputGuard(OutputGuard):
    """FLAME parameters (bridge.rig.flame layout) against FLAME_RANGES."""

    def __init__(
        self, stats: GuardStats, reopen: Callable[[], object], restart_after: int = RESTART_AFTER
    ) -> None:
        super().__init__(stats, reopen, flame.FLAME_DIM, restart_after)

    def apply(self, params: npt.ArrayLike) -> npt.NDArray[np.float32]:
        out: npt.NDArray[np.float32] = self.apply_rows([self], np.asarray(params, np.float32)[None])[0]
        return out

    @staticmethod
    def apply_rows(
        guards: Sequence[FaceOutputGuard], params: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """One output per guard, `params` (n, FLAME_DIM): the checks over all rows in one pass, then
        each guard's own accept-or-hold (a batch of face sessions)."""
        x = np.asarray(params, np.float32)
        bad: npt.NDArray[np.bool_] = np.asarray(
            ~np.isfinite(x).all(axis=1) | (x < _FACE_GROSS_LO).any(axis=1) | (x > _FACE_GROSS_HI).any(axis=1)
        )
        out = np.clip(x, _FACE_LO, _FACE_HI)
        clamped = np.asarray((out != x).any(axis=1))
        for i, guard in enumerate(guards):
            out[i] = guard._hold() if bad[i] else guard._accept(out[i], clamped=bool(clamped[i]))
        return out
