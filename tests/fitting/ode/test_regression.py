"""The regressors (fitting.ode.regression): Lasso and its debiasing,
per-equation LassoCV, STLSQ's support on noisy data and its default threshold."""
import numpy as np

from fitting import LinearODE, SavitzkyGolay, WeakForm, linear_solution

from .helpers import sparse_stable_system


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
