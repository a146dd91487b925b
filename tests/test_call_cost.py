"""The cost one more row adds to a realtime call (bridge.serving.call_cost), from which the scheduler
counts a round's fair share."""

from __future__ import annotations

import itertools

import pytest

from bridge.serving.call_cost import RowCost

FIXED_S, ROW_S = 0.009, 0.0002  # a face-tracking call on the GPU: mostly its fixed part


def test_nothing_seen_costs_nothing() -> None:
    assert RowCost().per_row() == 0.0


def test_calls_of_varied_sizes_give_the_slope_not_the_mean() -> None:
    cost = RowCost()
    for rows in itertools.islice(itertools.cycle([8, 3, 12, 8, 1, 20]), 60):
        cost.observe(rows, FIXED_S + ROW_S * rows)
    assert cost.per_row() == pytest.approx(ROW_S, rel=1e-6)  # the mean would be ~1.2 ms a row


def test_calls_all_of_one_size_give_the_mean() -> None:
    cost = RowCost()
    for _ in range(30):
        cost.observe(8, FIXED_S + ROW_S * 8)
    assert cost.per_row() == pytest.approx((FIXED_S + ROW_S * 8) / 8)


def test_bigger_calls_no_slower_cost_nothing_a_row() -> None:
    cost = RowCost()
    for rows, seconds in itertools.islice(itertools.cycle([(2, 0.010), (10, 0.009)]), 40):
        cost.observe(rows, seconds)  # the fixed part is all there is (and some noise)
    assert cost.per_row() == 0.0


def test_the_newest_calls_count_most() -> None:
    cost = RowCost()
    for rows in itertools.islice(itertools.cycle([4, 16]), 200):
        cost.observe(rows, FIXED_S + 0.001 * rows)  # before: 1 ms a row
    for rows in itertools.islice(itertools.cycle([4, 16]), 200):
        cost.observe(rows, FIXED_S + ROW_S * rows)  # now: 0.2 ms
    assert cost.per_row() == pytest.approx(ROW_S, rel=0.01)
