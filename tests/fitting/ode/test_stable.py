"""Least squares over stable linear systems (fitting.ode.stable)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fitting import BootstrapEnsemble, LinearODE, linear_solution

from .helpers import sparse_stable_system


@pytest.mark.slow
def test_stable_fit_is_stable_where_least_squares_is_not():
    rng = np.random.default_rng(5)
    t = np.arange(0, 3, 0.01)
    # a slowly growing spiral: least squares finds the growth, the stable fit may not
    A = np.array([[0.1, 1.0], [-1.0, 0.05]])
    runs = [linear_solution(A, np.zeros(2), rng.normal(size=2), t) for _ in range(3)]
    plain = LinearODE("ols").fit(runs, 0.01)
    assert not plain.is_stable_
    stable = LinearODE(stable=True, derivative="weak").fit(runs, 0.01)  # the constrained least squares
    assert stable.is_stable_ and stable.fit_info_["constrained"]
    assert stable.fit_info_["loss_ratio"] >= 1.0
    ens = BootstrapEnsemble(LinearODE(stable=True, derivative="weak"), n_models=3, random_state=1).fit(runs, 0.01)
    assert ens.estimator_.fit_info_ == LinearODE(stable=True, derivative="weak").fit(runs, 0.01).fit_info_
    far = stable.simulate(runs[0][0], np.arange(0, 500, 0.5))  # cannot blow up
    assert np.all(np.isfinite(far)) and np.abs(far[-1]).max() < np.abs(runs[0]).max()
    # when least squares is already stable the constraint is inactive
    A2, b2 = sparse_stable_system(K=3, n_off=1, seed=2)
    data = [linear_solution(A2, b2, rng.normal(size=3), t) for _ in range(3)]
    same = LinearODE(stable=True, derivative="weak").fit(data, 0.01)
    assert not same.fit_info_["constrained"]
    np.testing.assert_allclose(same.coef_, LinearODE("ols").fit(data, 0.01).coef_, atol=1e-10)
    with pytest.raises(TypeError, match="stable must be True or False"):
        LinearODE(stable="yes").fit(data, 0.01)


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 6))
def test_stable_parametrisation_is_always_hurwitz(seed, K):
    rng = np.random.default_rng(seed)
    Theta = np.column_stack([np.ones(200), rng.normal(size=(200, K))])
    Y = Theta[:, 1:] @ (rng.normal(size=(K, K)) + 2 * np.eye(K)).T + 0.1 * rng.normal(size=(200, K))
    from fitting.ode.stable import stable_least_squares

    coef, _ = stable_least_squares(Theta, Y, np.arange(1, K + 1), 0)
    assert np.max(np.linalg.eigvals(coef[:, 1:]).real) < 0
