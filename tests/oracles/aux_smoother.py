"""One session's auxiliary-landmark smoother, one frame at a time: the oracle for
bridge.vision.body_geometry's rows (`AuxRows`, which the body tracker steps for a batch's sessions)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]


class AuxSmoother:
    """MediaPipe's smoothing of a body's two auxiliary landmarks (pose_landmark_filtering: a One-Euro
    filter, min cutoff 0.01 Hz, beta 10, derivative cutoff 1 Hz, on always, in video mode), which makes
    the next region steady: its own One-Euro, not the bridge's, for the same regions. Values are image
    pixels, speeds scaled by the points' size (the mean side of their bounding box); the rate comes from
    the frames' times (30 Hz before the second frame)."""

    MIN_CUTOFF, BETA, D_CUTOFF = 0.01, 10.0, 1.0

    def __init__(self) -> None:
        self.raw: F64 | None = None  # the last unfiltered points; None: starts afresh
        self.value = np.zeros((2, 3))
        self.speed = np.zeros((2, 3))
        self.t = 0.0
        self.rate = 30.0

    def reset(self) -> None:
        self.raw, self.t, self.rate = None, 0.0, 30.0

    @staticmethod
    def _alpha(cutoff: F64 | float, rate: float) -> F64:
        tau = 1.0 / (2.0 * math.pi * np.asarray(cutoff, np.float64))
        out: F64 = 1.0 / (1.0 + tau * rate)
        return out

    def __call__(self, points: F64, t: float) -> F64:
        """The points (2, 3) of the frame taken at `t` seconds, filtered."""
        if self.raw is not None and t <= self.t:
            return points
        if self.raw is not None and self.t > 0.0:
            self.rate = 1.0 / (t - self.t)
        self.t = t
        size = (np.ptp(points[:, 0]) + np.ptp(points[:, 1])) / 2.0
        if self.raw is None or size < 1e-6:
            self.raw, self.value, self.speed = points.copy(), points.copy(), np.zeros((2, 3))
            return points
        speed = (points - self.raw) / size * self.rate
        a = self._alpha(self.D_CUTOFF, self.rate)
        self.speed = a * speed + (1.0 - a) * self.speed
        a = self._alpha(self.MIN_CUTOFF + self.BETA * np.abs(self.speed), self.rate)
        self.value = a * points + (1.0 - a) * self.value
        self.raw = points.copy()
        return self.value.copy()
