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
