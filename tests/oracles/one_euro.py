"""One session's One-Euro filter, in place, one frame at a time: the oracle for bridge.filters.one_euro's
rows (`one_euro_rows`, which `OneEuroRows` steps for the face pipelines' batches)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]


class OneEuroOracle:
    def __init__(
        self, n_channels: int, min_cutoff: npt.ArrayLike, beta: npt.ArrayLike, d_cutoff: float
    ) -> None:
        shape = (n_channels,)
        self._min_cutoff = np.broadcast_to(np.asarray(min_cutoff, np.float32), shape).copy()
        self._beta = np.broadcast_to(np.asarray(beta, np.float32), shape).copy()
        self._d_cutoff = np.broadcast_to(np.asarray(d_cutoff, np.float32), shape).copy()
        self._x = np.zeros(shape, np.float32)
        self._dx = np.zeros(shape, np.float32)
        self._tmp = np.zeros(shape, np.float32)
        self._alpha = np.zeros(shape, np.float32)
        self._den = np.zeros(shape, np.float32)
        self._t = 0.0
        self._started = False

    def reset(self) -> None:
        self._started = False
        self._dx.fill(0.0)

    def filter(self, x: npt.ArrayLike, t: float) -> F32:
        xa = np.asarray(x, dtype=np.float32)
        if not self._started:
            self._x[:] = xa
            self._t = t
            self._started = True
            return self._x.copy()
        dt = t - self._t
        if dt <= 0.0:
            return self._x.copy()
        self._t = t
        np.subtract(xa, self._x, out=self._tmp)
        self._tmp *= 1.0 / dt
        self._smoothing(self._d_cutoff, dt)
        self._tmp -= self._dx
        self._tmp *= self._alpha
        self._dx += self._tmp
        np.abs(self._dx, out=self._tmp)
        self._tmp *= self._beta
        self._tmp += self._min_cutoff
        self._smoothing(self._tmp, dt)
        np.subtract(xa, self._x, out=self._tmp)
        self._tmp *= self._alpha
        self._x += self._tmp
        return self._x.copy()

    def _smoothing(self, cutoff: F32, dt: float) -> None:
        np.multiply(cutoff, 2.0 * math.pi * dt, out=self._alpha)
        np.add(self._alpha, 1.0, out=self._den)
        self._alpha /= self._den
