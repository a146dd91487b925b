"""Sanity guard for FLAME frames: replace non-finite frames by the last good one, clamp ranges.

A frame with any NaN/Inf is replaced WHOLE by the last good frame (neutral zeros before the
first): a network that emits a NaN in one channel has usually lost the others too. Finite
frames are clamped per channel to ``FLAME_RANGES``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridge.rig import flame

# (lo, hi) per FLAME channel, shape (FLAME_DIM, 2). Expression: ψ is roughly unit-variance, ±3 σ.
# Jaw (rad): opening x in [-0.05, 0.6] (SMIRK's jaw-open is ReLU'd ≥ 0; 0.6 rad ≈ 34° is past a
# wide yawn), lateral y/z ±0.2 (SMIRK clamps them there). Head (rad, axis-angle components):
# pitch x ±1.0, yaw y ±1.5, roll z ±0.8 — beyond this a frontal face crop no longer tracks.
# Eyelids: closure in [0, 1].
FLAME_RANGES: npt.NDArray[np.float32] = np.empty((flame.FLAME_DIM, 2), np.float32)
FLAME_RANGES[flame.EXPRESSION] = (-3.0, 3.0)
FLAME_RANGES[flame.JAW] = ((-0.05, 0.6), (-0.2, 0.2), (-0.2, 0.2))
FLAME_RANGES[flame.HEAD] = ((-1.0, 1.0), (-1.5, 1.5), (-0.8, 0.8))
FLAME_RANGES[flame.EYELIDS] = (0.0, 1.0)


class RangeGuard:
    """Per-session guard. ``apply(frame)`` → ``(cleaned frame, was_bad)``; the frame is reused."""

    def __init__(self, ranges: npt.ArrayLike = FLAME_RANGES) -> None:
        r = np.asarray(ranges, dtype=np.float32)
        if r.ndim != 2 or r.shape[1] != 2 or np.any(r[:, 0] > r[:, 1]):
            raise ValueError("ranges must be (n_channels, 2) with lo <= hi")
        self._lo = np.ascontiguousarray(r[:, 0])
        self._hi = np.ascontiguousarray(r[:, 1])
        # Neutral (zero) clamped into range is the "last good" value before any good frame.
        self._neutral = np.clip(np.zeros_like(self._lo), self._lo, self._hi)
        self._last_good = self._neutral.copy()
        self._out = np.empty_like(self._lo)
        self.n_channels = r.shape[0]
        self.bad_frames = 0
        self.clamped_channels = 0

    def reset(self) -> None:
        self._last_good[:] = self._neutral

    def apply(self, frame: npt.ArrayLike) -> tuple[npt.NDArray[np.float32], bool]:
        """Guard one ``(n_channels,)`` frame. ``clamped_channels`` holds how many were clamped."""
        x = np.asarray(frame, dtype=np.float32)
        if x.shape != (self.n_channels,):
            raise ValueError(f"expected ({self.n_channels},) frame, got {x.shape}")
        if not np.isfinite(x).all():
            self.bad_frames += 1
            self.clamped_channels = 0
            self._out[:] = self._last_good
            return self._out, True
        np.clip(x, self._lo, self._hi, out=self._out)
        self.clamped_channels = int(np.count_nonzero(self._out != x))
        self._last_good[:] = self._out
        return self._out, False
