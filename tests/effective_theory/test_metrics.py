"""RQI, predicted accuracy and learning phases (effective_theory.metrics)."""
import numpy as np
import pytest

import effective_theory as et
from particles import addition
from particles.effective import simulate_effective


def test_unique_structure_reaches_rqi_and_degenerate_does_not():
    rng = np.random.default_rng(1)
    ds = addition(10)
    E0 = rng.uniform(-0.5, 0.5, (10, 2))
    full = simulate_effective(E0, ds, steps=2000, dt=0.5)
    assert et.rqi(full.final, ds) > 0.95
    # a training set with n0 > 2 leaves free modes: no unique linear structure
    train = ds.subset(np.arange(0, 55, 3))
    assert et.degeneracy(train) > 2
    part = simulate_effective(E0, train, steps=2000, dt=0.5)
    assert et.rqi(part.final, ds) < 0.95


def test_predicted_accuracy_and_rqi():
    ds = addition(10)
    E = np.c_[np.arange(10.0), np.zeros(10)]  # the perfect linear structure
    assert et.rqi(E, ds) == 1.0
    train, _ = ds.split(0.6, seed=0)
    acc = et.predicted_accuracy(E, train, ds)
    assert acc == et.predicted_accuracy(None, train, ds, ideal=True)
    assert len(train) / len(ds) < acc <= 1.0
    noise = np.random.default_rng(0).standard_normal((10, 2))
    assert et.rqi(noise, ds) < 0.2


@pytest.mark.parametrize("t_train, t_val, phase", [
    (100, 500, "comprehension"), (100, 5000, "grokking"), (100, None, "memorization"), (None, None, "confusion"),
    (100, 2e5, "memorization"), (None, 300, "comprehension"),
])
def test_classify_phase(t_train, t_val, phase):
    assert et.classify_phase(t_train, t_val) == phase


def test_classify_phase_validation_without_training():
    assert et.classify_phase(None, 300, val_without_train="confusion") == "confusion"
    assert et.classify_phase(100, 300, val_without_train="confusion") == "comprehension"
    with pytest.raises(ValueError, match="val_without_train"):
        et.classify_phase(None, 300, val_without_train="grokking")


def test_rqi_series_matches_rqi():
    rng = np.random.default_rng(2)
    stack = rng.standard_normal((4, 10, 2))
    stack[1] = np.c_[np.arange(10.0), np.zeros(10)]
    ds = addition(10)
    np.testing.assert_allclose(et.rqi_series(stack, ds), [et.rqi(E, ds) for E in stack])
