"""First-order and critically damped low-pass filters for joint rotations and translations.

Rotations are filtered as quaternions, not axis-angle: axis-angle components jump where the angle
crosses π (the axis flips) and blending them is not a rotation blend. A quaternion and its
negation are the same rotation, so each new sample is first flipped onto the hemisphere of the
previous output (sign continuity); then the four components are low-passed and renormalised. For
the small per-frame steps of 60 FPS motion this equals slerp towards the target to first order,
and it is one vectorised pass over all joints.

The exponential smoothing factor ``1 - exp(-dt/τ)`` is exact for any frame interval ``dt``, so a
dropped or late frame does not change the filter's time constant.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]

# The -3 dB point of two cascaded first-order poles is sqrt(√2 - 1)/τ, so τ is scaled by this to
# make ``cutoff_hz`` mean the same -3 dB frequency for both orders.
_CASCADE_3DB = math.sqrt(math.sqrt(2.0) - 1.0)


def time_constant(cutoff_hz: float, order: int = 2) -> float:
    """τ of each first-order stage so that the whole filter is -3 dB at ``cutoff_hz``."""
    return (_CASCADE_3DB if order == 2 else 1.0) / (2.0 * math.pi * cutoff_hz)


def smoothing_factor(tau: float, dt: float) -> float:
    """Per-sample factor ``1 - exp(-dt/τ)`` of one first-order stage."""
    return 1.0 - math.exp(-max(dt, 0.0) / tau)


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
