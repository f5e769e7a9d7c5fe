"""Fitness measures and the survival classifier (fitting.survival; SPEC section 3)."""

import numpy as np
import pytest

from fitting import (fitness_correlation, initial_gradient, initial_signal, survival_classifier, survival_rate,
                     survival_table)


def test_fitness_measures_on_constructed_runs():
    # frequency j grows at rate g_j: S_j(t) = S_j(0) * exp(g_j t)
    s0 = np.array([1.0, 2.0, 3.0, 4.0])
    g = np.array([-0.1, 0.0, 0.05, 0.1])
    t = np.arange(10)[:, None]
    run = s0 * np.exp(g * t)
    np.testing.assert_allclose(initial_signal(run), s0)
    expected = (np.exp(g * 5) - np.exp(g * 4))
    np.testing.assert_allclose(initial_gradient(run, step=4), expected)
    both = initial_gradient([run, 2 * run], step=4)
    assert both.shape == (2, 4)
    np.testing.assert_allclose(both[1], expected)
    with pytest.raises(ValueError, match="step"):
        initial_gradient(run, step=9)
    survived = np.array([[True, False, True], [True, False, False], [True, True, False], [False, False, False]])
    np.testing.assert_allclose(survival_rate(survived), [0.75, 0.25, 0.25])
    with pytest.raises(TypeError, match="survived must be a boolean"):
        survival_rate(survived.astype(int))


def test_fitness_correlation_and_table(rng):
    rate = np.linspace(0, 1, 20)
    r, pval = fitness_correlation(rate, 3 * rate + 1)
    assert r == pytest.approx(1.0) and pval < 1e-10
    r, _ = fitness_correlation(rate, -rate)
    assert r == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="vary"):
        fitness_correlation(rate, np.ones(20))
    runs = [rng.uniform(0.5, 1.5, size=(8, 6)) for _ in range(3)]
    for run in runs:
        run[-1, 2] = 50.0  # frequency 3 dominates at the end of every run
    table = survival_table(runs, dcs=[0.0, 0.0, 0.0])
    assert table["survived"].shape == (3, 6)
    np.testing.assert_array_equal(table["survival_rate"], [0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(table["n_survivors"], [1, 1, 1])
    with pytest.raises(ValueError, match="one entry per run"):
        survival_table(runs, dcs=[0.0])


def test_survival_classifier_separates_a_separable_population():
    rng = np.random.default_rng(3)
    n = 400
    signal = rng.uniform(0, 1, n)
    gradient = rng.normal(0, 0.1, n)
    survived = signal + 2 * gradient > 0.6
    res = survival_classifier(np.column_stack([signal, gradient]), survived, rng=0)
    assert res.test_accuracy > 0.95
    assert res.n_train + res.n_test == n
    # labels unrelated to the features: no better than the majority baseline (+ noise)
    noise = rng.uniform(size=n) < 0.5
    res = survival_classifier(np.column_stack([signal, gradient]), noise, rng=0)
    assert res.test_accuracy < 0.7
    # same seed, same split and result
    again = survival_classifier(np.column_stack([signal, gradient]), noise, rng=0)
    assert again.test_accuracy == res.test_accuracy
    with pytest.raises(ValueError, match="at least 2 survivors"):
        survival_classifier(np.column_stack([signal, gradient]), np.zeros(n, dtype=bool))
    with pytest.raises(ValueError, match="test_size"):
        survival_classifier(np.column_stack([signal, gradient]), survived, test_size=1.5)
