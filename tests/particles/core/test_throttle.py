"""particles.core.throttle: a live frame's metrics measured again only when due."""

import pytest
from hypothesis import given, strategies as st

from particles.core.throttle import Throttled


class Counter:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.calls


def test_a_new_step_waits_for_its_time_and_a_new_state_does_not(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("particles.core.throttle.time.perf_counter", lambda: clock[0])
    t, compute = Throttled(0.2), Counter()
    assert t.get(0, 0, compute) == (1, 0)
    assert t.get(0, 5, compute) == (1, 0)  # too soon: the value of step 0, said so
    clock[0] += 0.25
    assert t.get(0, 5, compute) == (2, 5)
    clock[0] += 1.0
    assert t.get(0, 5, compute) == (2, 5)  # the same step (paused): nothing to measure again
    assert t.get(1, 0, compute) == (3, 0)  # another state (restart, reset, hand-over): at once


@given(steps=st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_with_no_wait_every_new_step_is_measured(steps):
    t, compute = Throttled(0), Counter()
    last, calls = None, 0
    for step in steps:
        value, measured = t.get("run", step, compute)
        calls += step != last
        last = step
        assert measured == step and value == calls == compute.calls


@pytest.mark.parametrize("bad", [-1, float("nan"), "1", True])
def test_bad_seconds_are_refused_by_name(bad):
    with pytest.raises(ValueError, match="seconds must be a number >= 0"):
        Throttled(bad)
