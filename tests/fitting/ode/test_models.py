"""ODEModel, LinearODE and LotkaVolterra (fitting.ode.base, linear, lotka_volterra): recovery of
known systems, the defaults at any amplitude, scores and windows, readable
equations, fits of Trajectory files, input validation (SPEC section 4)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.exceptions import NotFittedError

from fitting import FitQualityWarning, LinearODE, LotkaVolterra, ODEModel, linear_solution

from .helpers import CASES, data, integrate, predator_prey, sparse_stable_system


COMPETITION_R = np.array([1.0, 0.72, 1.53, 1.27])
COMPETITION_A = np.array([[1.0, 1.09, 1.52, 0.0],
                          [0.0, 1.0, 0.44, 1.36],
                          [2.33, 0.0, 1.0, 0.47],
                          [1.21, 0.51, 0.35, 1.0]])


def competition(t, x):
    """Four-species competitive LV: dx_i/dt = r_i x_i (1 - sum_j a_ij x_j)."""
    return COMPETITION_R * x * (1 - COMPETITION_A @ x)


def test_classic_lotka_volterra_recovers_predator_prey():
    t = np.arange(0, 30, 0.01)
    x = integrate(predator_prey, [2.0, 1.0], t)
    model = LotkaVolterra("classic", "ols", derivative="central").fit(x, 0.01)
    np.testing.assert_allclose(model.growth_rates_, [1.0, -0.75], rtol=0.02)
    expected = np.array([[0.0, -0.5], [0.25, 0.0]])
    A = model.interactions_
    np.testing.assert_allclose(A[[0, 1], [1, 0]], expected[[0, 1], [1, 0]], rtol=0.02)
    assert np.all(np.abs(np.diag(A)) < 0.02 * 0.25)
    # only x_i and x_i x_j terms may appear in equation i
    names = model.feature_names(["x", "y"])
    assert set(model.named_coefficients(["x", "y"])["x"]) <= {"x", "x^2", "x y"}
    assert names[0] == "1" and model.coef_[:, 0].tolist() == [0.0, 0.0]
    assert model.trajectory_score(x) > 0.999


def test_general_lotka_volterra_recovers_predator_prey():
    t = np.arange(0, 30, 0.01)
    x = integrate(predator_prey, [2.0, 1.0], t)
    model = LotkaVolterra("general", "ols", derivative="central").fit(x, 0.01)
    coef = model.named_coefficients(["x", "y"])
    assert coef["x"]["x"] == pytest.approx(1.0, rel=0.02)
    assert coef["x"]["x y"] == pytest.approx(-0.5, rel=0.02)
    assert coef["y"]["y"] == pytest.approx(-0.75, rel=0.02)
    assert coef["y"]["x y"] == pytest.approx(0.25, rel=0.02)
    assert model.coef_.shape == (2, 1 + 2 + 3)
    np.testing.assert_allclose(model.quadratic_[0, 0, 1], coef["x"]["x y"])


def test_classic_lotka_volterra_recovers_four_species_competition():
    rng = np.random.default_rng(4)
    t = np.arange(0, 10, 0.01)
    runs = [integrate(competition, rng.uniform(0.05, 0.6, 4), t) for _ in range(6)]
    model = LotkaVolterra("classic", "ols", derivative="central").fit(runs, 0.01)
    np.testing.assert_allclose(model.growth_rates_, COMPETITION_R, rtol=0.02)
    interactions = -COMPETITION_R[:, None] * COMPETITION_A
    nz = interactions != 0
    np.testing.assert_allclose(model.interactions_[nz], interactions[nz], rtol=0.02)
    assert np.all(np.abs(model.interactions_[~nz]) < 0.02 * np.abs(interactions).max())


def test_logistic_lotka_volterra_recovers_independent_logistic_growth_and_decay():
    """form="logistic": dx_i/dt = x_i (r_i + a_ii x_i), each variable on its
    own. Three logistic curves (two rising to their plateaus -r/a, one
    decaying) from clean samples with the default weak form: the rates come
    back to 1e-6 and no coupling term is fitted."""
    r = np.array([0.8, 1.5, -0.4])
    a = np.array([-0.4, -0.5, -0.1])

    def logistic(t, x):
        return x * (r + a * x)

    rng = np.random.default_rng(12)
    t = np.linspace(0, 12, 1500)
    runs = [integrate(logistic, rng.uniform([0.05, 0.1, 1.0], [0.5, 1.0, 3.0]), t) for _ in range(3)]
    model = LotkaVolterra("logistic", "ols").fit(runs, t)
    assert model.form_ == "logistic"
    np.testing.assert_allclose(model.growth_rates_, r, rtol=1e-6)
    np.testing.assert_allclose(np.diag(model.interactions_), a, rtol=1e-6)
    off = ~np.eye(3, dtype=bool)
    assert np.all(model.interactions_[off] == 0) and np.all(model.linear_[off] == 0)
    assert (model.coef_ != 0).sum(axis=1).tolist() == [2, 2, 2]
    assert set(model.named_coefficients(["x", "y", "z"])["y"]) == {"y", "y^2"}
    # it levels off where the fitted rates say: -r / a
    sim = model.simulate(runs[0][0], np.linspace(0, 60, 200))
    np.testing.assert_allclose(sim[-1, :2], -r[:2] / a[:2], rtol=1e-4)
    with pytest.raises(ValueError, match="form must be one of"):
        LotkaVolterra("diagonal").fit(runs, t)


def test_window_and_held_out_scores():
    A, b = sparse_stable_system(K=4, n_off=2, seed=9)
    rng = np.random.default_rng(9)
    t = np.arange(0, 20, 0.01)
    x = linear_solution(A, b, rng.normal(scale=3, size=4), t)
    model = LinearODE("ols", derivative="central", window=(0, 5)).fit(x, 0.01)
    assert model.n_samples_fit_ == 498  # 500 samples in [0, 5), minus the two ends
    assert model.score(x, window=(0, 5)) > 0.9999
    assert model.trajectory_score(x, window=(5, 20)) > 0.999  # held-out end of the run
    other = linear_solution(A, b, rng.normal(scale=3, size=4), t)
    assert model.trajectory_score([other]) > 0.999  # held-out run
    with pytest.raises(ValueError, match="no samples"):
        model.score(x, window=(100, 200))


def test_equations_are_readable():
    A = np.array([[-1.0, 0.5], [0.0, -2.0]])
    b = np.array([0.25, 0.0])
    t = np.arange(0, 3, 0.01)
    x = linear_solution(A, b, np.array([1.0, 2.0]), t)
    model = LinearODE("lasso", alpha=1e-4, derivative="central", debias=True).fit(
        [x, linear_solution(A, b, np.array([-2.0, 1.0]), t)], 0.01)
    eq = model.equations(["u", "v"], precision=2, threshold=1e-9)
    assert eq == ["du/dt = 0.25 - 1 u + 0.5 v", "dv/dt = - 2 v"]
    assert model.equations(["u", "v"])[1].startswith("dv/dt = ")


def test_bad_inputs_fail_before_work():
    x = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match="same number of columns"):
        LinearODE().fit([x, x[:, :2]])
    with pytest.warns(FitQualityWarning, match=r"the classic form \(\d+ terms per equation\) was fitted instead"):
        assert LotkaVolterra("general", "ols", derivative="central").fit(x[:6]).form_ == "classic"
    with pytest.raises(ValueError, match="fewer regression rows"):
        LotkaVolterra("classic", "ols", derivative="central").fit(x[:3])
    with pytest.raises(ValueError, match="run 0 has 6 samples .* fewer than the 11 that the weak form's windows need"):
        LotkaVolterra().fit(x[:6])
    bad = x.copy()
    bad[10, 1] = np.nan
    with pytest.raises(ValueError, match=r"non-finite value \(NaN or inf\) at \(sample, column\) = \(10, 1\)"):
        LinearODE().fit(bad)
    with pytest.raises(ValueError, match="alpha must be None or a finite number >= 0"):
        LinearODE(alpha=-0.1).fit(x)
    with pytest.raises(ValueError, match="regressor"):
        LinearODE(regressor="ridge").fit(x)
    with pytest.raises(ValueError, match="derivative"):
        LinearODE(derivative="backward").fit(x)
    with pytest.raises(ValueError, match="form"):
        LotkaVolterra(form="cubic").fit(x)
    with pytest.raises(ValueError, match="window"):
        LinearODE(window=(5, 1)).fit(x)
    with pytest.raises(ValueError, match="t must be"):
        LinearODE().fit(x, np.arange(10))
    with pytest.raises(NotFittedError):
        LinearODE().predict(x)
    model = LinearODE("ols").fit(x)
    with pytest.raises(ValueError, match="fitted on 3"):
        model.predict(x[:, :2])
    with pytest.raises(ValueError, match="x0 must have shape"):
        model.simulate(np.ones(2), np.arange(5.0))
    with pytest.raises(ValueError, match="exact"):
        LotkaVolterra("general", "ols").fit(x).simulate(x[0], np.arange(3.0), method="exact")


def competitive_runs(scale=1.0, noise=0.0, seed=0, n_runs=5):
    rng = np.random.default_rng(seed)
    t = np.arange(0, 10, 0.01)
    runs = []
    for _ in range(n_runs):
        x = integrate(competition, rng.uniform(0.1, 0.6, 4), t)
        runs.append(scale * (x + noise * np.sqrt(np.mean(x**2, axis=0)) * rng.normal(size=x.shape)))
    return runs, t


def relative_derivative_error(model, states, scale=1.0):
    truth = np.array([scale * competition(0, s / scale) for s in states])
    return np.linalg.norm(model.predict(states) - truth) / np.linalg.norm(truth)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_default_lotka_volterra_works_at_any_amplitude(scale):
    runs, t = competitive_runs(scale, noise=0.01, seed=3)
    held, _ = competitive_runs(scale, seed=99, n_runs=1)
    model = LotkaVolterra().fit(runs, 0.01)
    assert relative_derivative_error(model, held[0][::4], scale) < 0.1
    assert model.trajectory_score(held) > 0.95


@settings(max_examples=15, deadline=None)
@given(st.floats(-6, 6), st.integers(0, 1000))
def test_default_fit_is_scale_equivariant(log10_scale, seed):
    """Data x c: same support, derivatives x c (standardised library and targets)."""
    A, b = sparse_stable_system(K=4, n_off=3, seed=seed % 50)
    rng = np.random.default_rng(seed)
    t = np.arange(0, 3, 0.01)
    runs = [linear_solution(A, b, rng.normal(scale=3, size=4), t) + 0.01 * rng.normal(size=(300, 4))
            for _ in range(3)]
    c = 10.0**log10_scale
    one = LinearODE().fit(runs, 0.01)
    big = LinearODE().fit([c * r for r in runs], 0.01)
    np.testing.assert_array_equal(one.coef_ != 0, big.coef_ != 0)
    np.testing.assert_allclose(big.predict(c * runs[0]), c * one.predict(runs[0]), rtol=1e-6,
                               atol=1e-9 * c * np.abs(one.predict(runs[0])).max())


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_small_true_constant_is_kept_at_one_percent_noise(seed):
    coef, degree, x0s, t = CASES["spiral"]
    runs = data(coef, degree, x0s, t, 0.01, 100 + seed)
    model = ODEModel(library=degree).fit(runs, t)
    assert model.coef_[2, 0] == pytest.approx(0.3, rel=0.25)  # dz/dt's constant
    np.testing.assert_array_equal(model.coef_ != 0, coef != 0)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_a_cubic_library_sparsifies_at_one_percent_noise(seed):
    coef, degree, x0s, t = CASES["cubic"]
    runs = data(coef, degree, x0s, t, 0.01, 200 + seed)
    model = ODEModel(library=degree).fit(runs, t)
    found, true = model.coef_ != 0, coef != 0
    tp = int(np.sum(found & true))
    f1 = 2 * tp / (found.sum() + true.sum())
    assert f1 == 1.0, (found.sum(), true.sum())


def test_lotka_volterra_with_more_terms_than_rows_falls_back_to_the_classic_form():
    from fitting import example_trajectory, trajectory_signals

    steps, signals = trajectory_signals(example_trajectory())  # all 29 frequencies (a Trajectory fits its survivors)
    with pytest.warns(FitQualityWarning, match=r"so the classic form \(30 terms per equation\) was fitted"):
        model = LotkaVolterra(window=(0, 1000)).fit(signals, steps.astype(float))
    assert model.form_ == "classic" and LotkaVolterra().get_params()["form"] == "general"
    assert np.all(model.coef_[~model.term_mask_] == 0)


def test_a_trajectory_is_fitted_on_its_signals_named_by_frequency():
    from fitting import example_trajectory, select_frequencies, trajectory_signals

    traj = example_trajectory()
    steps, signals = trajectory_signals(traj)
    chosen = select_frequencies(traj)  # the one default selection (issue 50): here the survival paper's survivors
    assert chosen.rule == "survivors" and chosen.frequencies == [2, 3, 8, 11, 22]
    columns = np.array(chosen.frequencies) - 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = LinearODE(stable=True, window=(0, 1000)).fit(traj)
        by_hand = LinearODE(stable=True, window=(0, 1000)).fit(signals[:, columns], steps.astype(float),
                                                               names=[f"S{k}" for k in chosen.frequencies])
        with pytest.raises(ValueError, match="t must be None when x is a Trajectory"):
            LinearODE().fit(traj, 1.0)
    np.testing.assert_array_equal(direct.coef_, by_hand.coef_)
    assert direct.variables_ == ["S2", "S3", "S8", "S11", "S22"] and direct.frequencies_ == chosen.frequencies
    assert direct.equations()[1].startswith("dS3/dt = ")
    assert direct.score(traj, window=(0, 1000)) == pytest.approx(by_hand.score(signals[:, columns],
                                                                              steps.astype(float), window=(0, 1000)))
    assert direct.forecast(traj, horizon=500).error == by_hand.forecast(signals[:, columns], steps.astype(float),
                                                                        horizon=500).error
