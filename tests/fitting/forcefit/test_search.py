"""The range search's stop on a flat profile (fitting.forcefit.search.FlatStop)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import optimize

from fitting.forcefit.search import FLAT_ITERATIONS, FLAT_TOL, FlatStop


class Step:
    def __init__(self, cost):
        self.cost = cost


def feed(costs):
    """The iteration at which FlatStop stops on ``costs`` (None: never)."""
    stop = FlatStop()
    for i, c in enumerate(costs):
        try:
            stop(Step(c))
        except StopIteration:
            return i
    return None


def test_a_crawl_stops_after_the_window_and_a_descent_does_not():
    crawl = 100.0 * (1.0 - 1e-9 * np.arange(50))  # 1e-9 per iteration: 1e-8 over ten
    assert feed(crawl) == FLAT_ITERATIONS
    descent = 100.0 * 0.9 ** np.arange(50)
    assert feed(descent) is None


@settings(deadline=None, max_examples=50)
@given(rate=st.floats(1e-12, 1e-3), cost=st.floats(1e-3, 1e6))
def test_the_stop_follows_the_total_change_over_the_window(rate, cost):
    costs = cost * (1.0 - rate) ** np.arange(3 * FLAT_ITERATIONS)
    total = 1.0 - (1.0 - rate) ** FLAT_ITERATIONS  # relative fall over the window
    stopped = feed(costs)
    if total * 1.01 < FLAT_TOL / (1.0 + FLAT_TOL):  # a steady crawl: its last step gains about the average
        assert stopped == FLAT_ITERATIONS
    elif total > 1.01 * FLAT_TOL:
        assert stopped is None


@settings(deadline=None, max_examples=50)
@given(growth=st.floats(1.05, 3.0), first=st.floats(1e-12, 1e-9))
def test_gains_that_grow_do_not_stop(growth, first):
    # a trust region gathering pace doubles its gain per step; 1.05 is far slower, yet not flat
    gains = first * growth ** np.arange(3 * FLAT_ITERATIONS)
    costs = 1.0 + gains.sum() - np.cumsum(gains)
    stopped = feed(costs)
    assert stopped is None


def test_a_start_gathering_pace_is_not_a_flat_profile():
    # each step gains twice the one before (a trust region growing from a tiny step): not stopped,
    # though the first ten move the cost by less than FLAT_TOL
    gains = 1e-12 * 2.0 ** np.arange(40)
    costs = 1.0 + gains.sum() - np.cumsum(gains)
    assert costs[0] - costs[FLAT_ITERATIONS] < FLAT_TOL * costs[FLAT_ITERATIONS]
    assert feed(costs) is None


def test_least_squares_from_a_bound_reaches_its_optimum_with_the_callback():
    # started on a bound, trf's first steps are tiny and each gains more than the last: the callback
    # must not take that for a flat profile
    def fun(x):
        return np.array([1.0 + 1e-5 / (1.0 + x[0]), 10.0 * (x[1] - 0.5)])

    options = dict(bounds=([0.0, -5.0], [1e6, 5.0]), xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=300)
    free = optimize.least_squares(fun, [0.0, 0.0], **options)
    stop = FlatStop()
    watched = optimize.least_squares(fun, [0.0, 0.0], callback=stop, **options)
    assert watched.cost <= free.cost * (1.0 + 10 * FLAT_TOL)
    assert watched.x[1] == pytest.approx(0.5, abs=1e-6)
