"""Runs and sample times (fitting.ode.data)."""
import numpy as np
import pytest

from fitting import LinearODE, linear_solution

from .helpers import sparse_stable_system


def test_one_time_grid_serves_every_run_of_its_length():
    A, b = sparse_stable_system(K=3, n_off=2, seed=8)
    rng = np.random.default_rng(8)
    t = np.sort(rng.uniform(0, 4, 300))
    runs = [linear_solution(A, b, rng.normal(scale=2, size=3), t) for _ in range(3)]
    shared = LinearODE().fit(runs, t)
    np.testing.assert_array_equal(shared.coef_, LinearODE().fit(runs, [t] * 3).coef_)
    with pytest.raises(ValueError, match="shared time grid needs runs of its length"):
        LinearODE().fit(runs, t[:-1])
