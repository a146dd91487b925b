"""One session's joint-rotation and translation low-pass, frame by frame: the oracle for the batched rows
in bridge.motion.post (same factors from bridge.filters.low_pass, same sign continuity)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridge.filters.low_pass import smoothing_factor, time_constant

F32 = npt.NDArray[np.float32]


class VectorLowPass:
    """Low-pass over a fixed-shape array (e.g. root translation, (3,)).

    ``order=1`` is a first-order exponential filter; ``order=2`` is critically damped: two
    identical first-order stages, ζ = 1, which settles without overshoot and rolls off at 12 dB/oct.
    """

    def __init__(self, shape: tuple[int, ...], cutoff_hz: float, order: int = 2) -> None:
        if cutoff_hz <= 0.0:
            raise ValueError("cutoff_hz must be > 0")
        if order not in (1, 2):
            raise ValueError("order must be 1 or 2")
        self.cutoff_hz = cutoff_hz
        self.order = order
        self._tau = time_constant(cutoff_hz, order)
        self._stages = np.zeros((order, *shape), np.float32)
        self._last: F32 = self._stages[-1]
        self._started = False

    def reset(self) -> None:
        self._started = False

    def filter(self, x: npt.ArrayLike, dt: float) -> F32:
        """Filter one sample; ``dt`` is the time since the previous one (s). Returns a reused buffer."""
        xa = np.asarray(x, dtype=np.float32)
        if not self._started:
            self._stages[:] = xa
            self._started = True
            return self._last
        a = smoothing_factor(self._tau, dt)
        self._stages[0] += a * (xa - self._stages[0])
        if self.order == 2:
            self._stages[1] += a * (self._stages[0] - self._stages[1])
        return self._last


class QuatLowPass:
    """Low-pass for ``(n_joints, 4)`` xyzw quaternions with sign continuity (see module docstring)."""

    def __init__(self, n_joints: int, cutoff_hz: float, order: int = 2) -> None:
        self.n_joints = n_joints
        self._lp = VectorLowPass((n_joints, 4), cutoff_hz, order)
        self._aligned = np.zeros((n_joints, 4), np.float32)
        self._sign = np.zeros((n_joints, 1), np.float32)
        self._out = np.zeros((n_joints, 4), np.float32)
        self._started = False

    def reset(self) -> None:
        self._lp.reset()
        self._started = False

    def filter(self, quats: npt.ArrayLike, dt: float) -> F32:
        """Filter one frame of quaternions; returns unit quaternions in a reused buffer."""
        q = np.asarray(quats, dtype=np.float32)
        if self._started:
            # Flip each sample onto the previous output's hemisphere: q·prev < 0 → use -q.
            np.einsum("jk,jk->j", q, self._out, out=self._sign[:, 0])
            np.sign(self._sign, out=self._sign)
            self._sign[self._sign == 0.0] = 1.0
            np.multiply(q, self._sign, out=self._aligned)
        else:
            self._aligned[:] = q
            self._started = True
        y = self._lp.filter(self._aligned, dt)
        norm = np.linalg.norm(y, axis=-1, keepdims=True)
        np.divide(y, np.maximum(norm, 1e-12), out=self._out)
        return self._out
