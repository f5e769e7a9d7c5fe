"""ODE regression: recovery of known systems, solutions, scores, sklearn
conventions and input validation (SPEC section 4)."""

import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold, TimeSeriesSplit

from fitting.ode import FitQualityWarning  # noqa: E402
from fitting import (BlowUpError, Lasso, LinearODE, LotkaVolterra, SavitzkyGolay, differentiate, linear_solution,
                     survival_ode_analysis)


# ------------------------------------------------------------ systems
def sparse_stable_system(K=10, n_off=8, seed=0):
    rng = np.random.default_rng(seed)
    A = -np.diag(rng.uniform(0.5, 1.5, K))
    for _ in range(n_off):
        i, j = rng.choice(K, 2, replace=False)
        A[i, j] = rng.choice([-1, 1]) * rng.uniform(0.3, 0.8)
    assert np.linalg.eigvals(A).real.max() < 0
    return A, rng.normal(size=K)


def predator_prey(t, z, a=1.0, b=0.5, c=0.75, d=0.25):
    x, y = z
    return [x * (a - b * y), y * (-c + d * x)]


COMPETITION_R = np.array([1.0, 0.72, 1.53, 1.27])
COMPETITION_A = np.array([[1.0, 1.09, 1.52, 0.0],
                          [0.0, 1.0, 0.44, 1.36],
                          [2.33, 0.0, 1.0, 0.47],
                          [1.21, 0.51, 0.35, 1.0]])


def competition(t, x):
    """Four-species competitive LV: dx_i/dt = r_i x_i (1 - sum_j a_ij x_j)."""
    return COMPETITION_R * x * (1 - COMPETITION_A @ x)


def integrate(f, x0, t):
    sol = solve_ivp(f, (t[0], t[-1]), x0, t_eval=t, method="DOP853", rtol=1e-12, atol=1e-12)
    assert sol.success
    return sol.y.T


# ------------------------------------------------------------ derivatives
def test_derivative_estimators_on_a_polynomial():
    t = np.linspace(0, 2, 201)
    x = np.column_stack([t**3, np.sin(t)])
    exact = np.column_stack([3 * t**2, np.cos(t)])
    s, d = differentiate(x, t, "forward")
    np.testing.assert_array_equal(s, x[:-1])
    assert np.max(np.abs(d - exact[:-1])) < 0.07  # O(dt) error
    s, d = differentiate(x, 0.01, "central")
    np.testing.assert_array_equal(s, x[1:-1])
    assert np.max(np.abs(d - exact[1:-1])) < 2e-4  # O(dt^2)
    s, d = differentiate(x, 0.01, "savgol", window_length=11, polyorder=3)
    assert s.shape == x.shape
    assert np.max(np.abs(d[:, 0] - exact[:, 0])) < 1e-9  # exact for a cubic
    assert np.max(np.abs(d[:, 1] - exact[:, 1])) < 2e-5
    with pytest.raises(ValueError, match="uniformly"):
        differentiate(x, t**2 + t, "savgol")
    with pytest.raises(ValueError, match="window_length"):
        differentiate(x, 0.01, "savgol", window_length=10)
    with pytest.raises(ValueError, match="method"):
        differentiate(x, 0.01, "backward")


# ------------------------------------------------------------ recovery
def test_lasso_recovers_sparse_stable_linear_system():
    A, b = sparse_stable_system()
    rng = np.random.default_rng(1)
    t = np.arange(0, 1, 0.01)
    runs = [linear_solution(A, b, rng.normal(scale=3, size=10), t) for _ in range(40)]
    model = LinearODE("lasso", alpha=1e-3, derivative="central").fit(runs, 0.01)
    np.testing.assert_array_equal(model.A_ != 0, A != 0)  # support, both ways
    rel = np.abs(model.A_ - A)[A != 0] / np.abs(A[A != 0])
    assert rel.max() < 0.02
    np.testing.assert_allclose(model.b_, b, rtol=0.02, atol=0.02 * np.abs(b).max())
    assert model.is_stable_ and model.sparsity_ > 0.5
    ols = LinearODE("ols", derivative="central").fit(runs, 0.01)
    assert np.count_nonzero(ols.A_) > 90  # least squares is dense (no thresholding)
    np.testing.assert_allclose(ols.A_, A, atol=0.02 * np.abs(A).max())


def test_debias_removes_lasso_shrinkage():
    A, b = sparse_stable_system(K=6, n_off=4, seed=5)
    rng = np.random.default_rng(2)
    t = np.arange(0, 1, 0.01)
    runs = [linear_solution(A, b, rng.normal(scale=3, size=6), t) for _ in range(30)]
    biased = LinearODE("lasso", alpha=0.05, derivative="central").fit(runs, 0.01)
    fixed = LinearODE("lasso", alpha=0.05, derivative="central", debias=True).fit(runs, 0.01)
    err_b = np.abs(biased.A_ - A)[A != 0].max()
    err_f = np.abs(fixed.A_ - A)[A != 0].max()
    assert err_f < 1e-3 < err_b
    np.testing.assert_array_equal(fixed.A_ != 0, biased.A_ != 0)


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


def test_noisy_data_with_savgol_derivatives_keeps_trajectory_r2():
    rng = np.random.default_rng(7)
    t = np.arange(0, 30, 0.01)
    clean = integrate(predator_prey, [2.0, 1.0], t)
    noisy = clean * (1 + 0.01 * rng.normal(size=clean.shape))
    model = LotkaVolterra("classic", "ols", derivative=SavitzkyGolay(31, 3)).fit(noisy, 0.01)
    assert model.trajectory_score(noisy) > 0.95
    assert model.trajectory_score(clean) > 0.95
    A, b = sparse_stable_system()
    t = np.arange(0, 1, 0.01)
    runs = [linear_solution(A, b, rng.normal(scale=3, size=10), t) for _ in range(40)]
    noisy_runs = [r + 0.01 * np.std(r) * rng.normal(size=r.shape) for r in runs]
    lin = LinearODE("lasso", alpha=1e-3, derivative=SavitzkyGolay(21, 3)).fit(noisy_runs, 0.01)
    assert lin.trajectory_score(noisy_runs) > 0.95


# ------------------------------------------------------------ solutions
@pytest.mark.parametrize("singular", [False, True])
def test_analytic_solution_matches_solve_ivp(singular):
    rng = np.random.default_rng(11 + singular)
    K = 6
    M = rng.normal(size=(K, K))
    A = -(M @ M.T) / K - 0.1 * np.eye(K)  # stable
    if singular:
        U, s, Vt = np.linalg.svd(A)
        s[-1] = 0.0
        A = U @ np.diag(s) @ Vt
        assert np.linalg.matrix_rank(A) == K - 1
    b = rng.normal(size=K)
    x0 = rng.normal(size=K)
    t = np.linspace(0, 8, 81)
    exact = linear_solution(A, b, x0, t)
    sol = solve_ivp(lambda _t, x: A @ x + b, (0, 8), x0, t_eval=t, method="DOP853", rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(exact, sol.y.T, rtol=1e-8, atol=1e-8 * np.abs(sol.y).max())
    # a fitted model: its exact solution against its own solve_ivp integration
    model = LinearODE("ols", derivative="central").fit(exact, t)
    ivp = model.simulate(x0, t, method="ivp", rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(model.simulate(x0, t, method="exact"), ivp, rtol=1e-8, atol=1e-8 * np.abs(ivp).max())


def test_rollout_reproduces_a_forward_difference_fit_exactly():
    rng = np.random.default_rng(3)
    A = np.array([[0.98, 0.01], [-0.02, 0.97]])  # a discrete linear map x <- A x + b
    b = np.array([0.1, -0.05])
    x = [rng.normal(size=2)]
    for _ in range(200):
        x.append(A @ x[-1] + b)
    x = np.array(x)
    model = LinearODE("ols", derivative="forward").fit(x, 1.0)
    sim = model.simulate(x[0], np.arange(201.0), method="rollout")
    np.testing.assert_allclose(sim, x, rtol=1e-9, atol=1e-12)
    assert model.trajectory_score(x, method="rollout") > 1 - 1e-12


def test_blow_up_is_reported_not_returned():
    t = np.arange(0, 2, 0.01)
    x = np.exp(t)[:, None] * np.array([1.0, 2.0])
    model = LinearODE("ols", derivative="central").fit(x, 0.01)
    long = np.arange(0, 40, 0.01)
    for method in ("exact", "ivp", "rollout"):
        with pytest.raises(BlowUpError) as info:
            model.simulate(x[0], long, method=method)
        assert 8 < info.value.time < 40
        assert np.all(np.isfinite(info.value.partial))
    lv = LotkaVolterra("general", "ols", derivative="central").fit(x, 0.01)
    with pytest.raises(BlowUpError):
        lv.simulate(x[0], long)


# ------------------------------------------------------------ scores and windows
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


# ------------------------------------------------------------ sklearn conventions
def test_sklearn_clone_and_grid_search_on_runs():
    A, b = sparse_stable_system(K=4, n_off=2, seed=1)
    rng = np.random.default_rng(0)
    t = np.arange(0, 1, 0.01)
    runs = [linear_solution(A, b, rng.normal(scale=3, size=4), t) for _ in range(12)]
    model = LinearODE(derivative="central", alpha=0.5)
    twin = clone(model)
    assert twin.get_params() == model.get_params() and not hasattr(twin, "coef_")
    search = GridSearchCV(model, {"alpha": [1e-4, 1e-2, 1.0]}, cv=KFold(3)).fit(runs, t=0.01)
    assert search.best_params_["alpha"] == 1e-4  # noiseless: least shrinkage wins
    assert search.best_estimator_.dt_ == 0.01
    series = GridSearchCV(LinearODE(derivative="central"), {"regressor": ["ols", "lasso"]},
                          cv=TimeSeriesSplit(3)).fit(runs[0], t=0.01)
    assert set(series.cv_results_["param_regressor"]) == {"ols", "lasso"}


def test_lasso_cv_picks_per_equation_alphas():
    A, b = sparse_stable_system(K=5, n_off=3, seed=2)
    rng = np.random.default_rng(2)
    t = np.arange(0, 1, 0.01)
    runs = [linear_solution(A, b, rng.normal(scale=3, size=5), t) + 0.01 * rng.normal(size=(100, 5))
            for _ in range(10)]
    model = LinearODE("lasso_cv", derivative=SavitzkyGolay(15, 3)).fit(runs, 0.01)
    assert model.alphas_.shape == (5,) and np.all(model.alphas_ >= 0) and len(set(model.alphas_)) > 1
    assert model.score(runs) > 0.9


def test_same_data_same_fit():
    A, b = sparse_stable_system(K=4, n_off=2, seed=3)
    x = linear_solution(A, b, np.ones(4), np.arange(0, 2, 0.01))
    one = LinearODE("lasso_cv", derivative="central").fit(x, 0.01)
    two = LinearODE("lasso_cv", derivative="central").fit(x, 0.01)
    np.testing.assert_array_equal(one.coef_, two.coef_)


# ------------------------------------------------------------ bad inputs
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


# ------------------------------------------------------------ the reference analysis
def test_survival_ode_analysis_on_a_known_linear_system():
    A, b = sparse_stable_system(K=6, n_off=4, seed=4)
    A = A * 0.002  # slow dynamics in units of steps, signals of order 100 as in the survival MLP
    rng = np.random.default_rng(4)
    steps = np.arange(3000)
    x = linear_solution(A, b, rng.uniform(50, 150, size=6), steps.astype(float))
    report = survival_ode_analysis(x, steps, n_steps=1000, alpha=0.01)
    assert report.n_steps == 1000 and report.n_frequencies == 6
    assert report.ols_r2 > 0.999 and report.lasso_r2 > 0.9
    eig = np.linalg.eigvals(report.lasso.A_)
    assert report.max_real_eigenvalue == eig.real.max() and report.stable == bool(np.all(eig.real < 0))
    assert report.lasso_r2 == report.lasso.score(x, steps.astype(float), window=(0, 1000))
    assert report.heldout_window == (1000, 2000)
    assert report.trajectory_r2 > 0.999 and report.rollout_r2 > 0.999
    independent = LinearODE(Lasso(0.01, standardize=False), derivative="forward", window=(0, 1000)).fit(x, steps.astype(float))
    assert report.heldout_r2 == independent.trajectory_score(x, steps.astype(float), window=(1000, 2000))
    assert report.heldout_r2 > 0.9
    assert 0 < report.lasso_sparsity < 1
    text = report.summary()
    assert "reference" in text and "held out" in text
    assert set(report.as_dict()) >= {"lasso_r2", "ols_r2", "heldout_r2", "notes"}


@pytest.mark.parametrize("estimator", [LinearODE, LotkaVolterra])
def test_sklearn_estimator_checks_that_need_no_data(estimator):
    from sklearn.utils.estimator_checks import (check_get_params_invariance, check_no_attributes_set_in_init,
                                                check_parameters_default_constructible)

    check_parameters_default_constructible(estimator.__name__, estimator())
    check_get_params_invariance(estimator.__name__, estimator())
    check_no_attributes_set_in_init(estimator.__name__, estimator())


# ------------------------------------------------------------ defaults, parts, uncertainty (issue 10)
from hypothesis import given, settings, strategies as st  # noqa: E402

from fitting import (STLSQ, BootstrapEnsemble, CustomLibrary, FourierLibrary, ODEModel,  # noqa: E402
                     PolynomialLibrary, WeakForm)


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


def test_stlsq_recovers_the_support_of_a_sparse_system_from_noisy_data():
    A, b = sparse_stable_system(K=8, n_off=4, seed=21)
    rng = np.random.default_rng(21)
    t = np.arange(0, 6, 0.01)
    runs = [linear_solution(A, b, rng.normal(scale=3, size=8), t) for _ in range(5)]
    noisy = [r + 0.01 * np.sqrt(np.mean(r**2, axis=0)) * rng.normal(size=r.shape) for r in runs]
    model = LinearODE().fit(noisy, 0.01)  # defaults: weak form + STLSQ
    np.testing.assert_array_equal(model.A_ != 0, A != 0)
    assert np.abs(model.A_ - A).max() < 0.05 * np.abs(A).max()
    lasso = LinearODE("lasso").fit(noisy, 0.01)
    assert np.count_nonzero(lasso.A_) >= np.count_nonzero(model.A_)
    # the constant is an unpenalised intercept in the weak form too: data on an offset are not shrunk away
    offset = [r + 10.0 for r in noisy]
    shifted = LinearODE("lasso", alpha=0.01).fit(offset, 0.01)
    unshifted = LinearODE("lasso", alpha=0.01).fit(noisy, 0.01)
    np.testing.assert_allclose(shifted.A_, unshifted.A_, atol=1e-6 * np.abs(A).max())
    assert np.count_nonzero(shifted.A_) >= np.count_nonzero(A)


def test_weak_form_is_exact_on_clean_data_and_needs_enough_samples():
    t = np.arange(0, 30, 0.01)
    x = integrate(predator_prey, [2.0, 1.0], t)
    model = LotkaVolterra("classic", "ols").fit(x, 0.01)
    np.testing.assert_allclose(model.growth_rates_, [1.0, -0.75], rtol=1e-5)
    assert model.formulation_.window >= 11 and model.derivative is None  # the parameter is not mutated
    assert isinstance(model.formulation_, WeakForm)
    with pytest.raises(ValueError, match="weak form's windows"):
        LinearODE(derivative=WeakForm(window=101)).fit(x[:50], 0.01)
    with pytest.raises(ValueError, match="WeakForm window must be"):
        LinearODE(derivative=WeakForm(window=3)).fit(x, 0.01)
    with pytest.raises(ValueError, match="STLSQ threshold"):
        LinearODE(STLSQ(threshold=-1)).fit(x, 0.01)


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


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 6))
def test_stable_parametrisation_is_always_hurwitz(seed, K):
    rng = np.random.default_rng(seed)
    Theta = np.column_stack([np.ones(200), rng.normal(size=(200, K))])
    Y = Theta[:, 1:] @ (rng.normal(size=(K, K)) + 2 * np.eye(K)).T + 0.1 * rng.normal(size=(200, K))
    from fitting.ode.stable import stable_least_squares

    coef, _ = stable_least_squares(Theta, Y, np.arange(1, K + 1), 0)
    assert np.max(np.linalg.eigvals(coef[:, 1:]).real) < 0


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


def test_libraries_name_their_columns():
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    poly = PolynomialLibrary(3)
    assert poly.feature_names(["u", "v"])[:7] == ["1", "u", "v", "u^2", "u v", "v^2", "u^3"]
    np.testing.assert_allclose(poly.transform(X)[:, 4], [2.0, 12.0])
    lib = PolynomialLibrary(1) + FourierLibrary(1) + CustomLibrary([np.exp], names=["exp({})"])
    assert lib.feature_names(["u", "v"]) == ["1", "u", "v", "sin(u)", "cos(u)", "sin(v)", "cos(v)", "exp(u)", "exp(v)"]
    assert lib.transform(X).shape == (2, 9)
    t = np.arange(0, 20, 0.01)
    x = np.column_stack([np.sin(t), np.cos(t)])  # du/dt = v, dv/dt = -u
    model = ODEModel(library=lib).fit(x, 0.01)
    assert model.equations(["u", "v"], precision=3) == ["du/dt = 1 v", "dv/dt = - 1 u"]
    import io

    buf = io.StringIO()
    model.print(["u", "v"], file=buf)
    assert buf.getvalue().splitlines()[0].startswith("du/dt = ")
    with pytest.raises(ValueError, match="degree"):
        PolynomialLibrary(0)


def test_grid_search_with_sample_times_as_y():
    A, b = sparse_stable_system(K=4, n_off=2, seed=6)
    rng = np.random.default_rng(6)
    runs, times = [], []
    for _ in range(9):
        t = np.sort(rng.uniform(0, 3, 400))  # irregular sampling
        runs.append(linear_solution(A, b, rng.normal(scale=3, size=4), t) + 0.01 * rng.normal(size=(400, 4)))
        times.append(t)
    search = GridSearchCV(LinearODE(), {"alpha": [0.02, 0.1, 0.5]}, cv=KFold(3)).fit(runs, times)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and len(set(np.round(scores, 12))) > 1
    from sklearn.model_selection import cross_val_score

    assert np.all(np.isfinite(cross_val_score(LinearODE(), runs, times, cv=KFold(3))))


def test_one_time_grid_serves_every_run_of_its_length():
    A, b = sparse_stable_system(K=3, n_off=2, seed=8)
    rng = np.random.default_rng(8)
    t = np.sort(rng.uniform(0, 4, 300))
    runs = [linear_solution(A, b, rng.normal(scale=2, size=3), t) for _ in range(3)]
    shared = LinearODE().fit(runs, t)
    np.testing.assert_array_equal(shared.coef_, LinearODE().fit(runs, [t] * 3).coef_)
    with pytest.raises(ValueError, match="shared time grid needs runs of its length"):
        LinearODE().fit(runs, t[:-1])


def test_flow_map_recovers_a_linear_system_and_can_be_made_stable():
    from fitting import FlowMap

    A, b = sparse_stable_system(K=4, n_off=2, seed=12)
    rng = np.random.default_rng(12)
    t = np.arange(0, 8, 0.01)
    runs = [linear_solution(A, b, rng.normal(scale=3, size=4), t) for _ in range(3)]
    model = LinearODE("ols", derivative="flowmap").fit(runs, 0.01)
    assert model.formulation_.horizon >= 1 and model.derivative == "flowmap"
    np.testing.assert_allclose(model.A_, A, atol=1e-6 * np.abs(A).max())
    np.testing.assert_allclose(model.b_, b, atol=1e-6 * np.abs(b).max())
    assert model.score(runs) > 1 - 1e-10  # rows: the state one lag ahead
    # growing spiral: the unconstrained map is unstable, the stable one is not
    G = np.array([[0.1, 1.0], [-1.0, 0.05]])
    grow = [linear_solution(G, np.zeros(2), rng.normal(size=2), np.arange(0, 3, 0.01)) for _ in range(3)]
    assert not LinearODE(derivative=FlowMap(20)).fit(grow, 0.01).is_stable_
    stable = LinearODE(derivative=FlowMap(20), stable=True).fit(grow, 0.01)
    assert stable.is_stable_ and stable.fit_info_["projected"]
    with pytest.raises(ValueError, match="LinearODE only"):
        LotkaVolterra(derivative="flowmap").fit(grow, 0.01)
    with pytest.raises(ValueError, match="uniformly spaced"):
        LinearODE(derivative="flowmap").fit(grow[0], np.sort(rng.uniform(0, 3, 300)))
    with pytest.raises(ValueError, match="FlowMap horizon"):
        LinearODE(derivative=FlowMap(0)).fit(grow, 0.01)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), K=st.integers(2, 6), n_flip=st.integers(1, 2), tau=st.floats(0.01, 10))
def test_sign_flipping_modes_keep_their_decay_and_the_rest_state(seed, K, n_flip, tau):
    """A map eigenvalue lambda < 0 (no real flow flips a mode's sign) becomes
    log|lambda| / tau in A, the other modes are untouched and the rest state
    of the fitted map, x* = (I - M)^-1 c, is the fitted system's equilibrium."""
    from fitting.ode.flowmap import RADIUS, map_to_generator

    rng = np.random.default_rng(seed)
    lam = rng.uniform(0.2, 0.95, K)
    lam[:n_flip] *= -1
    V = rng.normal(size=(K, K)) + 2 * np.eye(K)
    M = V @ np.diag(lam) @ np.linalg.inv(V)
    c = rng.normal(size=K)
    coef, info = map_to_generator(np.column_stack([c, M]), tau, stable=False)
    b, A = coef[:, 0], coef[:, 1:]
    assert info["sign_flipping_modes"] == n_flip and not info["projected"]
    np.testing.assert_allclose(np.sort(np.linalg.eigvals(A).real), np.sort(np.log(np.abs(lam)) / tau),
                               rtol=1e-6, atol=1e-9 / tau)
    rest = np.linalg.solve(np.eye(K) - M, c)
    np.testing.assert_allclose(np.linalg.solve(A, -b), rest, rtol=1e-6, atol=1e-8 * np.abs(rest).max())
    assert info["logm_error"] < 1e-8 and info["eigen_rebuild_error"] < 1e-8
    # an unstable mode besides: with stable=True it is pulled onto the radius, and the
    # rest state kept is that of the projected map
    lam, kept = np.append(lam, 1.2), np.append(lam, RADIUS)
    V = rng.normal(size=(K + 1, K + 1)) + 2 * np.eye(K + 1)
    M, c = V @ np.diag(lam) @ np.linalg.inv(V), rng.normal(size=K + 1)
    coef, info = map_to_generator(np.column_stack([c, M]), tau, stable=True)
    b, A = coef[:, 0], coef[:, 1:]
    assert info["projected"] and info["sign_flipping_modes"] == n_flip
    assert np.linalg.eigvals(A).real.max() < 0
    rest = np.linalg.solve(np.eye(K + 1) - V @ np.diag(kept) @ np.linalg.inv(V), c)
    np.testing.assert_allclose(np.linalg.solve(A, -b), rest, rtol=1e-6, atol=1e-8 * np.abs(rest).max())


def test_a_defective_flow_map_with_a_sign_flip_warns():
    """Modes are changed through the eigenvectors; a Jordan block has too few,
    so the fit cannot follow the map and says so."""
    from fitting.ode.flowmap import map_to_generator

    M = np.array([[-0.5, 1.0, 0.0], [0.0, -0.5, 1.0], [0.0, 0.0, -0.5]])
    with pytest.warns(FitQualityWarning, match="nearly defective"):
        _, info = map_to_generator(np.column_stack([np.ones(3), M]), 1.0, stable=False)
    assert info["eigen_rebuild_error"] > 1e-8


# ------------------------------------------------------- covariance-weighted refit of the weak form
def test_noise_level_recovers_white_noise_on_a_smooth_signal():
    from fitting.ode.weighted import noise_level

    rng = np.random.default_rng(31)
    t = np.arange(0, 30, 0.01)
    x = integrate(predator_prey, [2.0, 1.0], t)
    sigma = np.array([0.02, 0.005])
    est = noise_level([x + sigma * rng.normal(size=x.shape)])
    np.testing.assert_allclose(est, sigma, rtol=0.1)
    assert np.all(noise_level([x]) < 1e-3 * sigma)  # the signal's own fourth differences are negligible


def test_weighted_refit_keeps_the_support_and_reports_what_it_did():
    t = np.arange(0, 30, 0.01)
    rng = np.random.default_rng(32)
    runs = [integrate(predator_prey, x0, t) for x0 in ([2.0, 1.0], [3.0, 2.0])]
    noisy = [r * (1 + 0.01 * rng.normal(size=r.shape)) for r in runs]
    weighted = LotkaVolterra().fit(noisy, 0.01)
    plain = LotkaVolterra(derivative=WeakForm(weighting="none")).fit(noisy, 0.01)
    info = weighted.fit_info_["weighting"]
    assert info["status"] == "converged" and 1 <= info["iterations"] <= 30 and len(info["noise_sd"]) == 2
    np.testing.assert_array_equal(weighted.coef_ != 0, plain.coef_ != 0)
    assert not hasattr(plain, "fit_info_") or "weighting" not in plain.fit_info_
    # penalised regressors and the stable linear fit are left as they are
    assert "weighting" not in getattr(LotkaVolterra(regressor="lasso", alpha=0.01).fit(noisy, 0.01), "fit_info_", {})
    clean = LotkaVolterra().fit(runs, 0.01)  # noise-free: nothing to weight by, the fit stays exact
    np.testing.assert_allclose(clean.coef_[clean.coef_ != 0], [1.0, -0.5, -0.75, 0.25], rtol=1e-4)
    # a model without the x y terms cannot explain the data: the whitened residual is not noise, nothing reweighted
    wrong = LinearODE("ols").fit(noisy, 0.01)
    assert wrong.fit_info_["weighting"]["status"] == "misfit" and wrong.fit_info_["weighting"]["chi2_per_dof"] > 2
    np.testing.assert_array_equal(wrong.coef_, LinearODE("ols", derivative=WeakForm(weighting="none")).fit(
        noisy, 0.01).coef_)
    assert 0.5 < info["chi2_per_dof"] < 2
    with pytest.raises(ValueError, match="WeakForm weighting must be one of"):
        LotkaVolterra(derivative=WeakForm(weighting="gls")).fit(noisy, 0.01)


def lorenz(t, z):
    x, y, w = z
    return [10.0 * (y - x), x * (28.0 - w) - y, x * y - 8.0 / 3.0 * w]


LORENZ_TERMS = {(0, 1): -10.0, (0, 2): 10.0, (1, 1): 28.0, (1, 2): -1.0, (1, 6): -1.0, (2, 3): -8.0 / 3.0,
                (2, 5): 1.0}  # (equation, column of PolynomialLibrary(2): 1 x y w x^2 xy xw y^2 yw w^2)


def noisy_lorenz(seed, noise=0.05):
    rng = np.random.default_rng(seed)
    t = np.arange(0, 5, 0.002)
    runs = [integrate(lorenz, rng.uniform([-15, -15, 10], [15, 15, 40]), t) for _ in range(5)]
    return [r + noise * np.sqrt(np.mean(r**2, axis=0)) * rng.normal(size=r.shape) for r in runs], t


@pytest.mark.parametrize("seed", [0, 1])
def test_a_misfit_readmits_the_pruned_true_term_and_nothing_else(seed):
    """Lorenz at 5 % noise with the small -y term of dy/dt pruned (what
    STLSQ did on one benchmark seed): the whitened residual says misfit, the
    search returns exactly that term, and the refit converges near the truth."""
    from fitting.ode.regression import standardised_scale
    from fitting.ode.weighted import covariance_refit

    runs, t = noisy_lorenz(700 + seed)
    library, weak = PolynomialLibrary(2), WeakForm().bind(runs, [t] * len(runs))
    rows = [weak.rows(r, t, library) for r in runs]
    Theta, Y = np.vstack([r[0] for r in rows]), np.vstack([r[1] for r in rows])
    truth = np.zeros((3, 10))
    for (i, f), value in LORENZ_TERMS.items():
        truth[i, f] = value
    pruned = truth.copy()
    pruned[1, 2] = 0.0
    start = pruned.copy()
    start[1, 1] = 25.0  # what least squares gives x when y is missing
    mask = np.ones((3, 10), dtype=bool)
    kept, info = covariance_refit(start, runs, [t] * 5, library, weak)
    assert info["status"] == "misfit" and info["chi2_per_dof"] > 2 and kept is start
    grown, info = covariance_refit(start, runs, [t] * 5, library, weak, mask=mask, threshold=0.1,
                                   term_scale=standardised_scale(Theta, Y))
    assert info["status"] == "converged" and info["readmitted"] == [(1, 2)]
    np.testing.assert_array_equal(grown != 0, truth != 0)
    np.testing.assert_allclose(grown[truth != 0], truth[truth != 0], rtol=0.02)
    # a share of the regressor's bar stays (READMIT_SHARE x threshold): above the term's standardised size,
    # nothing returns
    _, info = covariance_refit(start, runs, [t] * 5, library, weak, mask=mask, threshold=5.0,
                               term_scale=standardised_scale(Theta, Y))
    assert info["status"] == "misfit" and "reaches the threshold" in info["readmission"]
    # memory order does not matter, and a supported term the mask leaves out still counts as allowed
    fortran = covariance_refit(np.asfortranarray(start), runs, [t] * 5, library, weak, mask=np.asfortranarray(mask),
                               threshold=0.1, term_scale=np.asfortranarray(standardised_scale(Theta, Y)))
    np.testing.assert_array_equal(fortran[0], grown)
    partial = mask.copy()
    partial[2, 3] = False
    _, info = covariance_refit(start, runs, [t] * 5, library, weak, mask=partial, threshold=0.1,
                               term_scale=standardised_scale(Theta, Y))
    assert info["readmitted"] == [(1, 2)]
    # bad settings are refused by name before any work
    for bad, match in ((dict(threshold=-0.1), "threshold must be"), (dict(mask=mask[:2]), "mask must have shape"),
                       (dict(term_scale=-np.ones((3, 10))), "term_scale must be >= 0")):
        with pytest.raises(ValueError, match=match):
            covariance_refit(start, runs, [t] * 5, library, weak, **bad)
    # and too many allowed terms skip the search
    from fitting.ode import weighted
    monkey = weighted.READMIT_MAX_TERMS
    try:
        weighted.READMIT_MAX_TERMS = 29
        _, info = covariance_refit(start, runs, [t] * 5, library, weak, mask=mask, threshold=0.1)
        assert info["status"] == "misfit" and info["readmission"].startswith("skipped: 30 allowed terms")
    finally:
        weighted.READMIT_MAX_TERMS = monkey


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_noise_free_data_readmit_no_spurious_term(scale):
    """Without noise the noisy-data weak form's quadrature error is the whole
    residual (a misfit at next to no noise); terms it would readmit have
    coefficients of 1e-8 and stay out under the regressor's bar. (The default
    reads these data as noise-free and integrates exactly: no misfit.)"""
    t = np.arange(0, 30, 0.02)
    runs = [scale * integrate(predator_prey, x0, t) for x0 in ([2.0, 1.0], [3.0, 2.0], [1.5, 0.7])]
    assert LotkaVolterra().fit(runs, 0.02).fit_info_["weighting"]["status"] == "converged"
    model = LotkaVolterra(derivative=WeakForm(order=4, period_fraction=0.25)).fit(runs, 0.02)
    assert np.count_nonzero(model.coef_) == 4
    assert "readmitted" not in model.fit_info_.get("weighting", {})
    # even without the bar: the candidates are scored from the residual itself (no cancellation against
    # b' C^-1 b, which is 1e15 times larger here), and the best-of-many test is corrected for their number
    from fitting.ode.weighted import covariance_refit

    t_list = [t] * len(runs)
    coef, info = covariance_refit(model.coef_, runs, t_list, model.library_, model.formulation_,
                                  mask=np.ones_like(model.coef_, dtype=bool), threshold=0.0)
    assert info["status"] == "misfit" and "passes the test" in info["readmission"]
    assert np.count_nonzero(coef) == 4


@pytest.mark.slow
def test_weighted_refit_beats_ordinary_least_squares_on_noisy_predator_prey():
    """Over 8 seeds of 1 % noise the covariance-weighted coefficients are
    closer to the truth than the unweighted ones on at least 6, and on average."""
    t = np.arange(0, 30, 0.02)
    truth = np.array([1.0, -0.5, -0.75, 0.25])
    wins, ratios = 0, []
    for seed in range(8):
        rng = np.random.default_rng(400 + seed)
        runs = [integrate(predator_prey, rng.uniform([1, 0.5], [4, 3]), t) for _ in range(4)]
        noisy = [r + 0.01 * np.sqrt(np.mean(r**2, axis=0)) * rng.normal(size=r.shape) for r in runs]
        errs = []
        for weighting in ("covariance", "none"):
            model = LotkaVolterra("classic", derivative=WeakForm(weighting=weighting)).fit(noisy, 0.02)
            errs.append(np.linalg.norm(model.coef_[model.coef_ != 0] - truth) / np.linalg.norm(truth)
                        if np.count_nonzero(model.coef_) == 4 else np.inf)
        wins += errs[0] < errs[1]
        ratios.append(errs[0] / errs[1])
    assert wins >= 6 and np.mean(ratios) < 1


def test_default_weak_window_does_not_shrink_with_noise():
    """The noise's expected power is taken out of the spectrum before the
    dominant period is read, so white noise does not pull the window down."""
    t = np.arange(0, 40, 0.02)
    rng = np.random.default_rng(33)
    runs = [integrate(predator_prey, x0, t) for x0 in rng.uniform([1, 0.5], [4, 3], size=(3, 2))]
    weak = WeakForm(order=4, period_fraction=0.25)  # the noisy-data setting on every input (see test below)
    clean = weak.bind(runs, [t] * 3).window
    for level in (0.01, 0.05, 0.1):
        noisy = [r + level * np.sqrt(np.mean(r**2, axis=0)) * rng.normal(size=r.shape) for r in runs]
        assert abs(weak.bind(noisy, [t] * 3).window - clean) <= 0.2 * clean


def food_chain(t, z):
    x, y, w = z
    return [x - 0.5 * x * x - x * y, -0.5 * y + x * y - y * w, -0.3 * w + 0.6 * y * w]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("uneven", [False, True])
def test_default_weak_window_holds_at_high_noise_on_even_and_uneven_times(seed, uneven):
    """A 3-species food chain at 5 % and 10 % noise, on even times and on sorted
    uniform random times: the default window stays within 25 % of the clean
    one. (The previous rule failed 5 of these 6 cases, e.g. 11 samples
    instead of 83: the cumulative sum of noise-subtracted power wandered, and
    read by sample index, uneven spacing looked like high-frequency power.)"""
    rng = np.random.default_rng(100 + seed)
    n = 2001
    t = np.concatenate([[0.0], np.sort(rng.uniform(0, 40, n - 2)), [40.0]]) if uneven else np.linspace(0, 40, n)
    runs = [integrate(food_chain, x0, t) for x0 in rng.uniform([0.5, 0.3, 0.3], [1.5, 1.0, 1.0], size=(3, 3))]
    weak = WeakForm(order=4, period_fraction=0.25)  # by default clean data get the low-noise setting
    clean = weak.bind(runs, [t] * 3).window
    for level in (0.05, 0.1):
        noisy = [r + level * np.sqrt(np.mean(r**2, axis=0)) * rng.normal(size=r.shape) for r in runs]
        assert abs(weak.bind(noisy, [t] * 3).window - clean) <= 0.25 * clean


def test_noise_level_on_uneven_times():
    """Five samples at a time against the cubic through their own times: white
    noise is recovered on a random grid, and a smooth signal reads as (almost)
    no noise. (Fourth differences by index read 1 % of the RMS on clean data.)"""
    from fitting.ode.weighted import noise_level

    rng = np.random.default_rng(35)
    t = np.concatenate([[0.0], np.sort(rng.uniform(0, 30, 2998)), [30.0]])
    x = integrate(predator_prey, [2.0, 1.0], t)
    sigma = np.array([0.02, 0.005])
    np.testing.assert_allclose(noise_level([x + sigma * rng.normal(size=x.shape)], [t]), sigma, rtol=0.1)
    assert np.all(noise_level([x], [t]) < 0.05 * sigma)
    even = np.linspace(0, 30, 3000)
    xe = integrate(predator_prey, [2.0, 1.0], even)
    np.testing.assert_array_equal(noise_level([xe], [even]), noise_level([xe]))  # even grids: fourth differences


def test_default_linear_fit_keeps_light_damping():
    """x'' + 0.1 x' + 4 x = 0: the damping term moves dx2/dt by 5 % of its RMS.
    LinearODE's default threshold (0.02) keeps it, so the fit of this stable
    system is stable; STLSQ at 0.1 drops it and leaves an undamped rotation."""
    A = np.array([[0.0, 1.0], [-4.0, -0.1]])
    rng = np.random.default_rng(34)
    t = np.arange(0, 15, 0.01)
    runs = [linear_solution(A, np.zeros(2), rng.uniform(-2, 2, 2), t) for _ in range(3)]
    noisy = [r + 0.01 * np.sqrt(np.mean(r**2, axis=0)) * rng.normal(size=r.shape) for r in runs]
    for data in (runs, noisy):
        model = LinearODE().fit(data, 0.01)
        assert model.is_stable_
        np.testing.assert_array_equal(model.A_ != 0, A != 0)
        assert abs(model.A_[1, 1] + 0.1) < 0.02
    # STLSQ at 0.1 alone drops it (an undamped rotation); the misfit that leaves on these noise-free data
    # makes the readmission search return exactly that term
    assert not LinearODE(alpha=0.1, derivative=WeakForm(weighting="none")).fit(runs, 0.01).is_stable_
    readmitted = LinearODE(alpha=0.1).fit(runs, 0.01)
    assert readmitted.is_stable_ and readmitted.fit_info_["weighting"]["readmitted"] == [(1, 2)]


def test_weighting_survives_a_library_undefined_near_the_data_and_runs_of_other_lengths():
    from fitting import CustomLibrary

    def log_strict(x):
        if np.any(x <= 0):
            raise ValueError("log domain")
        return np.log(x)

    rng = np.random.default_rng(35)
    t = np.arange(400) * 0.02
    x = integrate(lambda _t, z: [-z[0] * np.log(z[0])], [1e-3], t)  # Gompertz growth from near 0
    x = np.abs(x + 1e-4 * rng.normal(size=x.shape)) + 1e-7
    x[0] = 1e-9  # a step of 1e-6 * max|x| away from this sample leaves the log's domain
    model = ODEModel(library=PolynomialLibrary(1) + CustomLibrary([log_strict], names=["log({})"])).fit(x, 0.02)
    assert "library" in model.fit_info_["weighting"]["status"]  # the unweighted fit is kept, no crash
    # explicit times for runs of different lengths
    A, b = sparse_stable_system(K=2, n_off=1, seed=9)
    t1, t2 = np.arange(0, 4, 0.01), np.arange(0, 3, 0.01)
    runs = [linear_solution(A, b, rng.normal(size=2), t1), linear_solution(A, b, rng.normal(size=2), t2)]
    np.testing.assert_allclose(LinearODE().fit(runs, [t1, t2]).A_, A, atol=1e-3 * np.abs(A).max())


def test_bootstrap_ensemble_is_one_unweighted_estimator():
    t = np.arange(0, 30, 0.02)
    rng = np.random.default_rng(36)
    runs = [integrate(predator_prey, x0, t) for x0 in ([2.0, 1.0], [3.0, 2.0], [1.5, 0.5])]
    noisy = [r * (1 + 0.05 * rng.normal(size=r.shape)) for r in runs]
    ens = BootstrapEnsemble(LotkaVolterra(), n_models=10, random_state=0).fit(noisy, 0.02)
    plain = LotkaVolterra(derivative=WeakForm(weighting="none")).fit(noisy, 0.02)
    np.testing.assert_array_equal(ens.estimator_.coef_, plain.coef_)


def sir(t, z, beta=1.5, gamma=0.3):
    s, i, r = z
    return [-beta * s * i, beta * s * i - gamma * i, gamma * i]


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_a_conserved_total_is_reported(noise):
    """S + I + R = 1 makes the quadratic library's columns dependent: the fit
    warns, names the relation and records it; a system without one does not."""
    from fitting.ode import LinearRelationWarning

    rng = np.random.default_rng(36)
    t = np.arange(0, 30, 0.05)
    runs = []
    for _ in range(3):
        i0, r0 = rng.uniform(0.005, 0.05), rng.uniform(0.0, 0.2)
        x = integrate(sir, [1 - i0 - r0, i0, r0], t)
        runs.append(x + noise * np.sqrt(np.mean(x**2, axis=0)) * rng.normal(size=x.shape))
    with pytest.warns(LinearRelationWarning, match="no more than the noise"):
        model = LotkaVolterra().fit(runs, 0.05)
    rel = model.fit_info_["linear_relation"]
    np.testing.assert_allclose(rel["combination"], np.ones(3), atol=0.03)  # S + I + R
    assert rel["value"] == pytest.approx(1.0, rel=0.01)
    pp = [integrate(predator_prey, x0, np.arange(0, 30, 0.01)) for x0 in ([2.0, 1.0], [3.0, 2.0])]
    noisy = [r + 0.05 * np.sqrt(np.mean(r**2, axis=0)) * rng.normal(size=r.shape) for r in pp]
    with warnings.catch_warnings():
        warnings.simplefilter("error", LinearRelationWarning)
        fitted = LotkaVolterra().fit(noisy, 0.01)
    assert "linear_relation" not in getattr(fitted, "fit_info_", {})


def test_relation_among_noisy_columns_is_found_next_to_a_quiet_one():
    """x2 = 1 - x1 with 2 % noise each, x3 small and nearly noise-free: the
    direction is chosen against the noise, so x1 + x2 = 1 is found (the least
    varying raw direction would be x3's)."""
    from fitting.ode.relations import linear_relation

    rng = np.random.default_rng(37)
    t = np.linspace(0, 20, 2000)
    x1 = 0.5 + 0.3 * np.sin(t)
    x = np.column_stack([x1, 1 - x1, 1e-3 * np.cos(1.3 * t)])
    x[:, :2] += 0.02 * rng.normal(size=(len(t), 2))
    x[:, 2] += 1e-6 * rng.normal(size=len(t))
    rel = linear_relation([(x, t)])
    assert rel is not None
    np.testing.assert_allclose(rel["combination"][:2], [1, 1], atol=0.05)
    # x3's share is undetermined within the noise: whatever it is, it moves c . x by < 5 % of the noise
    assert abs(rel["combination"][2]) * 1e-3 < 0.05 * rel["noise_sd"]
    assert rel["value"] == pytest.approx(1.0, abs=0.01)


def test_linear_terms_alone_are_not_degenerate_under_a_relation():
    """x1 + x2 = 1 makes a constant column (or products) dependent, not the
    two linear columns alone: only the library with a constant warns."""
    from fitting import ODEModel
    from fitting.ode import LinearRelationWarning

    t = np.linspace(0, 20, 2000)
    x1 = 0.5 + 0.3 * np.sin(t)
    x = np.column_stack([x1, 1 - x1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", LinearRelationWarning)
        ODEModel(library=PolynomialLibrary(1, include_bias=False), regressor="ols").fit(x, t)
    with pytest.warns(LinearRelationWarning):
        ODEModel(library=PolynomialLibrary(1), regressor="ols").fit(x, t)


def test_noise_level_on_a_graded_grid():
    """Each five-sample window is scaled by its own span: a noise-free cubic
    on a geometric grid over six decades reads as no noise."""
    from fitting.ode.weighted import noise_level

    t = np.geomspace(1e-3, 1e3, 300)
    x = (100 * (t / 1e3) ** 3 - 3 * t / 1e3)[:, None]
    assert noise_level([x], [t])[0] < 1e-10
