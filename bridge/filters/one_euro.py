"""One-Euro filter (Casiez, Roussel, Vogel, CHI 2012), vectorised over N channels.

An adaptive low-pass: the cutoff rises with the (smoothed) speed of each channel, so a still face
is steady (cutoff ≈ ``min_cutoff``) and a fast one has little lag (cutoff grows by ``beta`` per unit
of speed). One instance holds one session's state; every parameter may be a scalar or one value
per channel. ``filter`` allocates nothing after the first call.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from bridge.rig import flame

F32 = npt.NDArray[np.float32]

# Starting points for FLAME parameters at 60 FPS, per channel group: (min_cutoff Hz, beta).
# MediaPipe's face values (0.05 / 80) are for landmarks normalised by face size, so they do not
# transfer; these follow Casiez's recipe instead (min_cutoff ~1 Hz for steadiness, then beta until
# fast motion lags little) for channels whose fast motion is a few units per second: ψ in σ
# units, jaw/head in radians. Blinks last ~100-150 ms, so eyelids start at a higher cutoff.
# They are defaults to tune, not fitted on data.
FLAME_DEFAULTS: dict[str, tuple[float, float]] = {
    "expression": (1.0, 1.5),
    "jaw": (1.5, 5.0),
    "head": (1.0, 3.0),
    "eyelids": (4.0, 20.0),
}
D_CUTOFF_DEFAULT = 1.0


class OneEuroFilter:
    """``OneEuroFilter(n_channels, min_cutoff, beta, d_cutoff)``; ``filter(x, t)`` with ``t`` in seconds."""

    def __init__(
        self,
        n_channels: int,
        min_cutoff: float | npt.ArrayLike = 1.0,
        beta: float | npt.ArrayLike = 0.0,
        d_cutoff: float | npt.ArrayLike = D_CUTOFF_DEFAULT,
    ) -> None:
        shape = (n_channels,)
        self.n_channels = n_channels
        self._min_cutoff = np.broadcast_to(np.asarray(min_cutoff, np.float32), shape).copy()
        self._beta = np.broadcast_to(np.asarray(beta, np.float32), shape).copy()
        self._d_cutoff = np.broadcast_to(np.asarray(d_cutoff, np.float32), shape).copy()
        if np.any(self._min_cutoff <= 0) or np.any(self._d_cutoff <= 0) or np.any(self._beta < 0):
            raise ValueError("cutoffs must be > 0 and beta >= 0")
        self._x = np.zeros(shape, np.float32)
        self._dx = np.zeros(shape, np.float32)
        self._out = np.zeros(shape, np.float32)
        self._tmp = np.zeros(shape, np.float32)
        self._alpha = np.zeros(shape, np.float32)
        self._den = np.zeros(shape, np.float32)
        self._t = 0.0
        self._started = False

    def reset(self) -> None:
        """Forget the history; the next sample passes through unchanged."""
        self._started = False
        self._dx.fill(0.0)

    def filter(self, x: npt.ArrayLike, t: float) -> F32:
        """Filter one sample ``(n_channels,)`` taken at time ``t``; returns the internal output buffer.

        The returned array is reused by the next call: copy it if you keep it. A timestamp that
        does not advance (duplicate frame) returns the previous output unchanged.
        """
        xa = np.asarray(x, dtype=np.float32)
        if not self._started:
            self._x[:] = xa
            self._out[:] = xa
            self._t = t
            self._started = True
            return self._out
        dt = t - self._t
        if dt <= 0.0:
            return self._out
        self._t = t
        # Derivative, smoothed at d_cutoff: alpha = 1 / (1 + 1/(2π fc dt)).
        np.subtract(xa, self._x, out=self._tmp)
        self._tmp *= 1.0 / dt
        self._smoothing(self._d_cutoff, dt)
        self._tmp -= self._dx
        self._tmp *= self._alpha
        self._dx += self._tmp
        # Speed-adaptive cutoff, then the value itself.
        np.abs(self._dx, out=self._tmp)
        self._tmp *= self._beta
        self._tmp += self._min_cutoff
        self._smoothing(self._tmp, dt)
        np.subtract(xa, self._x, out=self._tmp)
        self._tmp *= self._alpha
        self._x += self._tmp
        self._out[:] = self._x
        return self._out

    def _smoothing(self, cutoff: F32, dt: float) -> None:
        # alpha = 2π fc dt / (1 + 2π fc dt), written into self._alpha without temporaries.
        np.multiply(cutoff, 2.0 * math.pi * dt, out=self._alpha)
        np.add(self._alpha, 1.0, out=self._den)
        self._alpha /= self._den


def flame_one_euro(d_cutoff: float = D_CUTOFF_DEFAULT) -> OneEuroFilter:
    """A One-Euro filter over a whole FLAME frame (``bridge.rig.flame`` layout) with FLAME_DEFAULTS."""
    min_cutoff = np.empty(flame.FLAME_DIM, np.float32)
    beta = np.empty(flame.FLAME_DIM, np.float32)
    for group, sl in (
        ("expression", flame.EXPRESSION),
        ("jaw", flame.JAW),
        ("head", flame.HEAD),
        ("eyelids", flame.EYELIDS),
    ):
        min_cutoff[sl], beta[sl] = FLAME_DEFAULTS[group]
    return OneEuroFilter(flame.FLAME_DIM, min_cutoff, beta, d_cutoff)
