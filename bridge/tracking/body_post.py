"""Body tracking's post-processing for a batch: the solved humanoid rotations held, then eased to rest
while the body (or a hand) is lost, kept on the last output's hemisphere, filtered per joint group
with One-Euro on the quaternions (docs/body-tracking.md).

Every session's state is one row of `BodyPost` at its slot (bridge.state): a batch reads and writes
its sessions' rows by index, and steps the filters of all of them at once. Body sessions and the
voiced ones built on them run on different scheduler threads and share the rows, so a batch holds the
store's lock.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import numpy.typing as npt

from bridge.filters.one_euro import OneEuroRows
from bridge.rig import humanoid_solve as hs
from bridge.rig.rotations import axis_angle_to_quat, quat_to_axis_angle
from bridge.state.slots import SlotLease, SlotPool
from bridge.tracking.face_post import EASE_S, HOLD_S

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
Slots = npt.NDArray[np.int64]

# One-Euro (min_cutoff Hz, beta) per joint group, on quaternion components: the torso steadiest,
# fingers the quickest to follow.
SMOOTHING: dict[str, tuple[float, float]] = {
    "torso": (1.0, 0.5),
    "arms": (1.5, 1.0),
    "legs": (1.0, 0.5),
    "fingers": (2.0, 1.0),
}
_HAND_JOINTS = tuple(
    [
        i
        for i, n in enumerate(hs.NAMES)
        if n.startswith(side) and (n.endswith("Hand") or i in hs.GROUPS["fingers"])
    ]
    for side in ("Left", "Right")
)


def _channel_params() -> tuple[F32, F32]:
    cutoff = np.empty((hs.N_JOINTS, 4), np.float32)
    beta = np.empty((hs.N_JOINTS, 4), np.float32)
    for group, joints in hs.GROUPS.items():
        cutoff[list(joints)], beta[list(joints)] = SMOOTHING[group]
    return cutoff.ravel(), beta.ravel()


_CUTOFF, _BETA = _channel_params()
_REST = np.zeros((hs.N_JOINTS, 4))
_REST[:, 3] = 1.0


class BodyPost:
    """Every body session's state, a row per slot: its One-Euro filter, the last output rotations,
    when the body and each hand were lost (NaN while tracked) and their rotations then, and the
    capture time of its last image (NaN before the first)."""

    def __init__(self) -> None:
        self.pool = SlotPool()
        self.filter = OneEuroRows(hs.N_JOINTS * 4, _CUTOFF, _BETA)
        self.last = np.zeros((0, hs.N_JOINTS, 4))
        self.body_since = np.zeros(0)
        self.body_start = np.zeros((0, hs.N_JOINTS, 4))
        self.hand_since = np.zeros((0, 2))
        self.hand_start = np.zeros((0, 2, hs.N_JOINTS, 4))
        self.t_last = np.zeros(0)
        self._lock = threading.Lock()

    def open(self) -> SlotLease:
        """A new session's row (I/O thread); it starts afresh at the next batch that sees it."""
        return self.pool.acquire()

    def _prepare(self) -> None:
        """Grow to the pool's rows and start new sessions' rows afresh (under the lock)."""
        fresh = self.pool.grow(self, "last", "body_since", "body_start", "hand_since", "hand_start", "t_last")
        self.filter.prepare(self.pool.size, fresh)
        self.last[fresh] = self.body_start[fresh] = _REST
        self.hand_start[fresh] = _REST
        self.body_since[fresh] = self.t_last[fresh] = math.nan
        self.hand_since[fresh] = math.nan

    def camera(
        self,
        slots: Slots,
        t: F64,
        solved: list[F64 | None],
        hand_found: npt.NDArray[np.bool_],
        smooth: npt.NDArray[np.bool_],
    ) -> F64:
        """One image's rotations (n, joints, 4) for the distinct sessions at `slots`, taken at `t` (n,)
        seconds: `solved` each one's solved rotations, None where no body was found; `hand_found`
        (n, 2) left and right; filtered where `smooth`."""
        with self._lock:
            self._prepare()
            out = np.empty((len(slots), hs.N_JOINTS, 4))
            self.t_last[slots] = t
            for i, (k, q) in enumerate(zip(slots.tolist(), solved, strict=True)):
                if q is None:
                    out[i] = self._lost(k, float(t[i]))
                    continue
                self.body_since[k] = math.nan
                for side, joints in enumerate(_HAND_JOINTS):
                    if hand_found[i, side]:
                        self.hand_since[k, side] = math.nan
                        continue
                    if math.isnan(self.hand_since[k, side]):
                        self.hand_since[k, side], self.hand_start[k, side] = t[i], self.last[k]
                    q[joints] = _eased(
                        self.hand_start[k, side, joints], float(t[i] - self.hand_since[k, side])
                    )
                q *= np.where(
                    (q * self.last[k]).sum(1, keepdims=True) < 0, -1.0, 1.0
                )  # the last's hemisphere
                out[i] = q
            found = np.array([q is not None for q in solved], bool)
            filtered = found & smooth
            if filtered.any():
                rows = np.flatnonzero(filtered)
                x = out[rows].reshape(len(rows), -1).astype(np.float32)
                q = self.filter.step(slots[rows], x, t[rows]).reshape(-1, hs.N_JOINTS, 4).astype(np.float64)
                for r, row in zip(rows.tolist(), q, strict=True):
                    out[r] = row / np.linalg.norm(row, axis=1, keepdims=True)
            self.last[slots[found]] = out[found]
            return out

    def held(self, slots: Slots, lost_for_s: F64) -> F64:
        """The sessions' rotations (n, joints, 4) `lost_for_s` (n,) seconds after their last image:
        held, then eased to rest, as when the body is lost (no image yet: the last, the rest pose)."""
        with self._lock:
            self._prepare()
            out = np.empty((len(slots), hs.N_JOINTS, 4))
            for i, (k, age) in enumerate(zip(slots.tolist(), lost_for_s.tolist(), strict=True)):
                t = float(self.t_last[k])
                out[i] = self.last[k] if math.isnan(t) else self._lost(k, t + age, since=t)
            return out

    def _lost(self, k: int, t: float, since: float | None = None) -> F64:
        """Row `k`'s rotations at `t` (capture clock, s) with no body: the last held, then eased to rest;
        lost `since` then (default `t`) unless already lost."""
        if math.isnan(self.body_since[k]):
            self.body_since[k], self.body_start[k] = t if since is None else since, self.last[k]
            self.filter.reset(np.array([k], np.int64))
        self.last[k] = _eased(self.body_start[k], t - self.body_since[k])
        last: F64 = self.last[k]
        return last


def _eased(start: F64, lost_for_s: float) -> F64:
    """Rotations `lost_for_s` seconds after tracking stopped: held HOLD_S, then eased to rest over EASE_S."""
    k = min(max((lost_for_s - HOLD_S) / EASE_S, 0.0), 1.0)
    eased: F64 = axis_angle_to_quat(quat_to_axis_angle(start) * (1.0 - k)).astype(np.float64)
    return eased
