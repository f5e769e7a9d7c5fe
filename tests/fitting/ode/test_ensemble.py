"""Bootstrap ensembles (fitting.ode.ensemble): intervals, inclusion
probabilities, one unweighted estimator."""
import numpy as np
import pytest

from fitting import BootstrapEnsemble, LinearODE, LotkaVolterra, WeakForm, linear_solution

from .helpers import integrate, predator_prey, sparse_stable_system


def test_bootstrap_ensemble_intervals_cover_the_truth():
    A, b = sparse_stable_system(K=3, n_off=1, seed=8)
    rng = np.random.default_rng(8)
    t = np.arange(0, 4, 0.01)
    runs = [linear_solution(A, b, rng.normal(scale=3, size=3), t) for _ in range(8)]
    noisy = [r + 0.02 * np.std(r) * rng.normal(size=r.shape) for r in runs]
    ens = BootstrapEnsemble(LinearODE(), n_models=30, random_state=0).fit(noisy, 0.01)
    assert ens.resample_ == "rows" and ens.coef_samples_.shape == (30, 3, 4)
    true = np.column_stack([b, A])
    lo, hi = ens.coef_interval_
    inside = (lo - 1e-9 <= true) & (true <= hi + 1e-9)
    assert inside[true != 0].mean() >= 0.8
    assert np.all(ens.inclusion_probability_[true != 0] > 0.9)
    band = ens.simulate(noisy[0][0], t[:100])
    assert band.median.shape == (100, 3) and np.all(band.low <= band.high)
    same = BootstrapEnsemble(LinearODE(), n_models=30, random_state=0).fit(noisy, 0.01)
    np.testing.assert_array_equal(same.coef_samples_, ens.coef_samples_)
    with pytest.raises(ValueError, match="n_models"):
        BootstrapEnsemble(n_models=1).fit(noisy, 0.01)


def test_bootstrap_ensemble_is_one_unweighted_estimator():
    t = np.arange(0, 30, 0.02)
    rng = np.random.default_rng(36)
    runs = [integrate(predator_prey, x0, t) for x0 in ([2.0, 1.0], [3.0, 2.0], [1.5, 0.5])]
    noisy = [r * (1 + 0.05 * rng.normal(size=r.shape)) for r in runs]
    ens = BootstrapEnsemble(LotkaVolterra(), n_models=10, random_state=0).fit(noisy, 0.02)
    plain = LotkaVolterra(derivative=WeakForm(weighting="none")).fit(noisy, 0.02)
    np.testing.assert_array_equal(ens.estimator_.coef_, plain.coef_)
