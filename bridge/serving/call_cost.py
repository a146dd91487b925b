"""What one more row adds to a realtime call: the scheduler's fair share of a round is counted in it.

A call costs a fixed part (kernel launches, the host work around them: most of a face-tracking call of
a few rows) plus a part per row. The mean cost per row of small calls is mostly the fixed part, and a
round budget counted in it cuts rounds into smaller calls, which raises the mean again: on the H100 of
2026-12-07 the face tracker settled at 8 rows a call and ~88 calls a second per worker, 10 ms each,
with the queue growing (docs/benchmarks.md, "Face tracking on the GPU"). So the cost per row is the
slope of call time over rows (least squares over recent calls, older calls forgotten geometrically),
and the mean per row only while recent calls have not varied enough in size to tell a slope.
"""

from __future__ import annotations

__all__ = ["RowCost"]

FORGET = 0.95  # weight kept by the older calls at each new one (about the last 20 calls count)
MIN_SPREAD_ROWS = 1.0  # the calls' size spread (standard deviation, rows) needed to trust a slope


class RowCost:
    """Recent calls' (rows, seconds): `per_row()` is the learnt seconds one more row adds (0: nothing
    to count: no call seen yet, or rows that add no measurable time)."""

    def __init__(self) -> None:
        self._w = self._x = self._xx = self._y = self._xy = 0.0

    def observe(self, rows: int, seconds: float) -> None:
        k = FORGET
        self._w = k * self._w + 1.0
        self._x = k * self._x + rows
        self._xx = k * self._xx + rows * rows
        self._y = k * self._y + seconds
        self._xy = k * self._xy + rows * seconds

    def per_row(self) -> float:
        if not self._w:
            return 0.0
        mean_x, mean_y = self._x / self._w, self._y / self._w
        mean_per_row = mean_y / mean_x if mean_x else 0.0
        variance = self._xx / self._w - mean_x * mean_x
        if variance < MIN_SPREAD_ROWS**2:
            return mean_per_row
        slope = (self._xy / self._w - mean_x * mean_y) / variance
        # Bigger calls no slower (slope <= 0): rows cost nothing measurable, so nothing to share out.
        # A slope above the mean would mean a fixed part below 0: noise; the mean bounds it.
        return max(0.0, min(slope, mean_per_row))
