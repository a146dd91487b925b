"""One-Euro filter (Casiez, Roussel, Vogel, CHI 2012), vectorised over N channels.

An adaptive low-pass: the cutoff rises with the (smoothed) speed of each channel, so a still face
is steady (cutoff ≈ ``min_cutoff``) and a fast one has little lag (cutoff grows by ``beta`` per unit
of speed). `one_euro_rows` steps many filters at once, one row per session, the arithmetic one numpy
pass over the rows; `OneEuroRows` keeps those rows for the sessions of a pipeline, indexed by their
slot (bridge.state), and steps a batch's rows by index (the face pipelines' filters).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from bridge.rig import flame
from bridge.state.slots import grown

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]

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


def one_euro_rows(
    x: F32,
    t: F64,
    value: F32,
    derivative: F32,
    last_t: F64,
    started: npt.NDArray[np.bool_],
    min_cutoff: F32,
    beta: F32,
    d_cutoff: F32,
) -> tuple[F32, F32, F64]:
    """One sample per row: `x` (n, C) float32 taken at `t` (n,) seconds, each row's filter state
    `value`, `derivative` (n, C) and `last_t` (n,); parameters broadcast to (n, C), float32. Returns
    the new (value, derivative, last_t): the filtered samples are `value`. A row not `started` passes
    its sample through (derivative 0); a row whose time does not advance (duplicate frame) keeps its
    state. Float32 throughout (tests/oracles/one_euro.py: the per-session filter it replaced)."""
    dt = t - last_t
    step = started & (dt > 0.0)
    every = bool(step.all())  # the steady state: no row starts or repeats a time
    dts = dt if every else np.where(step, dt, 1.0)
    inv_dt = (1.0 / dts).astype(np.float32)[:, None]
    w = (2.0 * math.pi * dts).astype(np.float32)[:, None]
    new_value, new_derivative = _one_euro(x, value, derivative, inv_dt, w, min_cutoff, beta, d_cutoff)
    if every:
        return new_value, new_derivative, t
    moved, fresh = step[:, None], ~started[:, None]
    out_value = np.where(moved, new_value, np.where(fresh, x, value)).astype(np.float32, copy=False)
    out_derivative = np.where(moved, new_derivative, np.where(fresh, np.float32(0.0), derivative))
    return out_value, out_derivative.astype(np.float32, copy=False), np.where(step | ~started, t, last_t)


def _one_euro(
    x: F32,
    value: F32,
    derivative: F32,
    inv_dt: F32 | np.float32,
    w: F32 | np.float32,
    min_cutoff: F32,
    beta: F32,
    d_cutoff: F32,
) -> tuple[F32, F32]:
    """One step's arithmetic, float32: `inv_dt` = 1/dt and `w` = 2π dt (a scalar, or a column per row);
    alpha = 2π fc dt / (1 + 2π fc dt). Derivative smoothed at d_cutoff, then the speed-adaptive cutoff
    and the value itself."""
    a = d_cutoff * w
    a = a / (a + 1.0)
    derivative = derivative + ((x - value) * inv_dt - derivative) * a
    a = (np.abs(derivative) * beta + min_cutoff) * w
    a = a / (a + 1.0)
    return value + (x - value) * a, derivative


class OneEuroRows:
    """The One-Euro filters of many sessions as rows of one store: row i is slot i's (bridge.state)
    value, derivative, last sample time and whether it has a sample. The channels' parameters are the
    store's; `step` may take per-row min cutoffs instead (face tracking's are session options).

    Rows grow and start afresh in `prepare`, on the thread that steps them (as the motion
    post-processing's rows)."""

    def __init__(
        self,
        n_channels: int,
        min_cutoff: float | npt.ArrayLike = 1.0,
        beta: float | npt.ArrayLike = 0.0,
        d_cutoff: float | npt.ArrayLike = D_CUTOFF_DEFAULT,
    ) -> None:
        shape = (n_channels,)
        self.n_channels = n_channels
        self.min_cutoff = np.broadcast_to(np.asarray(min_cutoff, np.float32), shape).copy()
        self.beta = np.broadcast_to(np.asarray(beta, np.float32), shape).copy()
        self.d_cutoff = np.broadcast_to(np.asarray(d_cutoff, np.float32), shape).copy()
        if np.any(self.min_cutoff <= 0) or np.any(self.d_cutoff <= 0) or np.any(self.beta < 0):
            raise ValueError("cutoffs must be > 0 and beta >= 0")
        self.value = np.zeros((0, n_channels), np.float32)
        self.derivative = np.zeros((0, n_channels), np.float32)
        self.last_t = np.zeros(0, np.float64)
        self.started = np.zeros(0, bool)

    def prepare(self, size: int, fresh: npt.NDArray[np.int64]) -> None:
        """Grow to `size` rows and start the `fresh` rows (new sessions) afresh."""
        for name in ("value", "derivative", "last_t", "started"):
            setattr(self, name, grown(getattr(self, name), size))
        self.reset(fresh)

    def reset(self, slots: npt.NDArray[np.int64]) -> None:
        """Forget these rows' history: each one's next sample passes through unchanged."""
        self.started[slots] = False
        self.derivative[slots] = 0.0

    def step(
        self, slots: npt.NDArray[np.int64], x: npt.ArrayLike, t: npt.ArrayLike, min_cutoff: F32 | None = None
    ) -> F32:
        """One sample per row: `x` (n, C) taken at `t` (n,) seconds for the distinct `slots` (n,);
        returns the filtered samples and keeps the rows' new state. `min_cutoff` (n, C): per-row
        cutoffs instead of the store's. A row whose time does not advance (duplicate frame) returns
        its previous output unchanged."""
        value, derivative, last_t = one_euro_rows(
            np.asarray(x, np.float32),
            np.asarray(t, np.float64),
            self.value[slots],
            self.derivative[slots],
            self.last_t[slots],
            self.started[slots],
            self.min_cutoff if min_cutoff is None else min_cutoff,
            self.beta,
            self.d_cutoff,
        )
        self.value[slots], self.derivative[slots], self.last_t[slots] = value, derivative, last_t
        self.started[slots] = True
        return value


def flame_one_euro_rows(d_cutoff: float = D_CUTOFF_DEFAULT) -> OneEuroRows:
    """One-Euro rows over whole FLAME frames (``bridge.rig.flame`` layout) with FLAME_DEFAULTS."""
    min_cutoff = np.empty(flame.FLAME_DIM, np.float32)
    beta = np.empty(flame.FLAME_DIM, np.float32)
    for group, sl in (
        ("expression", flame.EXPRESSION),
        ("jaw", flame.JAW),
        ("head", flame.HEAD),
        ("eyelids", flame.EYELIDS),
    ):
        min_cutoff[sl], beta[sl] = FLAME_DEFAULTS[group]
    return OneEuroRows(flame.FLAME_DIM, min_cutoff, beta, d_cutoff)
