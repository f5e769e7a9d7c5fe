"""The probability of a unique structure, the critical training fraction and
grokking-rate curves by Monte Carlo (effective_theory.montecarlo)."""
import numpy as np
import pytest

import effective_theory as et
from particles import addition


def test_probability_curve_p10():
    r = et.unique_structure_probability(10, samples=2000, seed=0, bootstrap=50)
    assert r.sizes.shape == (55,) and r.probability[0] == 0 and r.probability[-1] == 1
    assert np.all(np.diff(r.probability) >= 0)  # prefixes: adding pairs never raises n0
    assert np.all(r.low <= r.probability) and np.all(r.probability <= r.high)
    assert 0.35 < r.critical_fraction < 0.45
    lo, hi = r.critical_fraction_interval
    assert lo <= r.critical_fraction <= hi


def test_probability_matches_direct_degeneracy():
    rng = np.random.default_rng(3)
    ds = addition(7)
    size = 12
    direct = np.mean([et.degeneracy(ds.subset(rng.choice(len(ds), size, replace=False))) == 2
                      for _ in range(600)])
    mc = et.unique_structure_probability(7, sizes=[size], samples=4000, seed=4, bootstrap=0).probability[0]
    assert abs(direct - mc) < 0.08


@pytest.mark.parametrize("successes, n, confidence, err", [
    (3, -1, 0.95, ValueError), (3, 0, 0.95, ValueError), (3, 2.5, 0.95, TypeError), (3, 10, 1.5, ValueError),
    (11, 10, 0.95, ValueError), (-1, 10, 0.95, ValueError), (float("nan"), 10, 0.95, ValueError),
    (np.array([1 + 1j]), 10, 0.95, TypeError)])
def test_wilson_interval_checked(successes, n, confidence, err):
    from effective_theory.montecarlo import wilson_interval
    with pytest.raises(err, match="successes|n must|confidence"):
        wilson_interval(successes, n, confidence)


def test_progress_callbacks_do_not_change_results():
    calls = []
    a = et.unique_structure_probability(6, samples=120, seed=3, bootstrap=20)
    b = et.unique_structure_probability(6, samples=120, seed=3, bootstrap=20, callback=lambda d, t: calls.append(d))
    assert np.array_equal(a.probability, b.probability) and a.critical_fraction == b.critical_fraction
    assert calls[-1] == 120 and calls == sorted(calls)
    fr = np.array([0.5, 1.0])
    c = et.grokking_rate_curve(6, fr, samples=5, seed=1)
    d = et.grokking_rate_curve(6, fr, samples=5, seed=1, callback=lambda d, t: calls.append((d, t)))
    assert np.array_equal(c.rates, d.rates) and calls[-1] == (10, 10)
    with pytest.raises(TypeError, match="callback must be callable"):
        et.grokking_rate_curve(6, fr, samples=5, callback=3)
