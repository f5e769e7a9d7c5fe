"""The covariance-weighted refit of the weak form (fitting.ode.weighted):
noise levels, the refit and what it reports, readmission of pruned terms,
the two ways of building the rows' covariance."""
import os

import numpy as np
import pytest

from fitting import LinearODE, LotkaVolterra, ODEModel, PolynomialLibrary, WeakForm, linear_solution

from .helpers import CASES, data, integrate, predator_prey, sparse_stable_system


def test_noise_level_recovers_white_noise_on_a_smooth_signal():
    from fitting.ode.noise import noise_level

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


def moore_spiegel(t, z):
    x, y, w = z
    return [y, 10.0 * w, -4.0 * x + 9.0 * y - w - x * x * y]  # dysts' MooreSpiegel (T = 6, R = 20, scaled)


@pytest.mark.parametrize("seed", [0, 1])
def test_readmission_drops_the_terms_a_later_readmission_made_useless(seed):
    """Moore-Spiegel at 1 % noise (what the dysts benchmark showed): the
    regressor prunes -4 x1 and -x3 of dx3/dt, the forward search readmits a
    near-zero term before those two (ten on dysts' own trajectory), and the
    refit converges with it below the bar. It is dropped and the rest
    refitted (the search used to reject the whole grown support and keep the
    4-term misfit)."""
    t = np.arange(0, 20.6, 0.0129)
    x = integrate(moore_spiegel, [-3.47, 19.67, -3.83], t)
    rng = np.random.default_rng(40 + seed)
    model = ODEModel(library=3).fit(x + 0.01 * np.sqrt(np.mean(x**2, axis=0)) * rng.normal(size=x.shape), t)
    info = model.fit_info_["weighting"]
    names = PolynomialLibrary(3).feature_names(["x1", "x2", "x3"])
    truth = np.zeros_like(model.coef_)
    for (i, name), value in {(0, "x2"): 1.0, (1, "x3"): 10.0, (2, "x1"): -4.0, (2, "x2"): 9.0, (2, "x3"): -1.0,
                             (2, "x1^2 x2"): -1.0}.items():
        truth[i, names.index(name)] = value
    assert info["status"] == "converged" and sorted(info["readmitted"]) == [(2, names.index("x1")),
                                                                            (2, names.index("x3"))]
    np.testing.assert_array_equal(model.coef_ != 0, truth != 0)
    np.testing.assert_allclose(model.coef_[truth != 0], truth[truth != 0], rtol=0.02)


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


def test_noise_level_on_uneven_times():
    """Five samples at a time against the cubic through their own times: white
    noise is recovered on a random grid, and a smooth signal reads as (almost)
    no noise. (Fourth differences by index read 1 % of the RMS on clean data.)"""
    from fitting.ode.noise import noise_level

    rng = np.random.default_rng(35)
    t = np.concatenate([[0.0], np.sort(rng.uniform(0, 30, 2998)), [30.0]])
    x = integrate(predator_prey, [2.0, 1.0], t)
    sigma = np.array([0.02, 0.005])
    np.testing.assert_allclose(noise_level([x + sigma * rng.normal(size=x.shape)], [t]), sigma, rtol=0.1)
    assert np.all(noise_level([x], [t]) < 0.05 * sigma)
    even = np.linspace(0, 30, 3000)
    xe = integrate(predator_prey, [2.0, 1.0], even)
    np.testing.assert_array_equal(noise_level([xe], [even]), noise_level([xe]))  # even grids: fourth differences


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


def test_noise_level_on_a_graded_grid():
    """Each five-sample window is scaled by its own span: a noise-free cubic
    on a geometric grid over six decades reads as no noise."""
    from fitting.ode.noise import noise_level

    t = np.geomspace(1e-3, 1e3, 300)
    x = (100 * (t / 1e3) ** 3 - 3 * t / 1e3)[:, None]
    assert noise_level([x], [t])[0] < 1e-10


@pytest.mark.slow
def test_the_two_ways_of_building_the_rows_covariance_agree(monkeypatch):
    """Evenly spaced samples with few columns take the all-offsets product; the
    chunked general path must give the same refit."""
    from fitting.ode import weighted

    coef, degree, x0s, t = CASES["spiral"]
    runs = data(coef, degree, x0s, t, 0.02, 5)
    model = ODEModel(library=degree, derivative=WeakForm(order=4, period_fraction=0.25)).fit(runs, t)
    lib, weak = model.library_, model.formulation_
    fast, info_fast = weighted.covariance_refit(model.coef_, runs, [t] * 3, lib, weak)
    monkeypatch.setattr(weighted, "UNIFORM_MAX_K", 0)
    general, info_general = weighted.covariance_refit(model.coef_, runs, [t] * 3, lib, weak)
    assert info_fast["status"] == info_general["status"] == "converged"
    np.testing.assert_allclose(fast, general, rtol=1e-9, atol=0)


FAULTS_CHILD = """
import json, resource, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from fitting import ODEModel
t = np.arange(0, 20, 0.002)  # 10 000 samples: a few MB of windows per covariance band
x = np.column_stack([np.sin(t), np.cos(t), np.sin(2 * t)]) + 0.01 * np.random.default_rng(0).normal(size=(len(t), 3))
ODEModel(library=2).fit(x, t)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    ODEModel(library=2).fit(x, t)
print(json.dumps((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 3))
"""


@pytest.mark.slow
@pytest.mark.skipif(not (hasattr(os, "confstr") and (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")),
                    reason="glibc's malloc only")
def test_repeated_fits_fault_in_few_pages_with_glibcs_own_malloc_settings():
    """With glibc's default thresholds a fresh copy of the windows at every
    iteration was handed back to the system and faulted in again: 48 700
    page faults per fit of 10 000 samples (twice the fit's time). The run's
    buffer leaves under 2 000; the library sets nothing in the allocator."""
    import json
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", FAULTS_CHILD, root], env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) < 10_000


# ----------------------------------------------------------- whitening and the scaled inverse
from hypothesis import given, settings, strategies as st  # noqa: E402
from scipy.linalg import solveh_banded  # noqa: E402

from fitting.ode.gls import scaled_inverse, whiten  # noqa: E402


@settings(deadline=None, max_examples=40)
@given(n=st.integers(2, 60), u=st.integers(0, 6), m=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_whitened_rows_give_the_generalised_least_squares_products(n, u, m, seed):
    """(W D)'(W D) = D' C^-1 D and (W D)'(W b) = D' C^-1 b for a random positive
    definite band matrix C, against solveh_banded (the two solves it replaced)."""
    rng = np.random.default_rng(seed)
    u = min(u, n - 1)
    B = np.triu(np.tril(rng.normal(size=(n, n)), u), -u)
    C = B @ B.T + n * np.eye(n)  # band of half-width 2u, positive definite
    w = min(2 * u, n - 1)
    band = np.zeros((w + 1, n))
    for d in range(w + 1):  # upper storage: band[w - d, j] = C[j - d, j]
        band[w - d, d:] = np.diagonal(C, d)
    rhs = rng.normal(size=(n, m + 1))
    WD, Wb = whiten(band, rhs)
    solved = solveh_banded(band, rhs)
    D = rhs[:, :-1]
    np.testing.assert_allclose(WD.T @ WD, D.T @ solved[:, :-1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(WD.T @ Wb, D.T @ solved[:, -1], rtol=1e-9, atol=1e-12)


def test_whiten_refuses_a_matrix_that_is_not_positive_definite():
    from scipy.linalg import LinAlgError

    band = np.array([[0.0, 2.0], [1.0, 1.0]])  # [[1, 2], [2, 1]]: eigenvalues 3 and -1
    with pytest.raises(LinAlgError, match="not positive definite"):
        whiten(band, np.ones((2, 2)))


@settings(deadline=None, max_examples=40)
@given(n=st.integers(1, 12), rank=st.integers(0, 12), seed=st.integers(0, 2**32 - 1),
       spread=st.floats(-6, 6))
def test_scaled_inverse_matches_the_pseudo_inverse(n, rank, seed, spread):
    """Cholesky where the normal matrix is positive definite, the pseudo-inverse where
    columns are collinear: both agree with pinv of the column-scaled matrix."""
    rng = np.random.default_rng(seed)
    rank = min(rank, n)
    A = rng.normal(size=(40, n)) * 10.0 ** (spread * rng.uniform(size=n))
    if rank < n:
        A[:, rank:] = A[:, :rank] @ rng.normal(size=(rank, n - rank)) if rank else 0.0
    M = A.T @ A
    scale = np.sqrt(np.abs(np.diag(M)))
    scale[scale == 0] = 1.0
    reference = np.linalg.pinv(M / np.outer(scale, scale)) / np.outer(scale, scale)
    out = scaled_inverse(M)
    if rank == n:
        np.testing.assert_allclose(out * np.outer(scale, scale), reference * np.outer(scale, scale),
                                   rtol=1e-6, atol=1e-6)
    else:  # collinear columns: the pseudo-inverse itself, which solves the consistent normal equations
        np.testing.assert_array_equal(out, reference)
        y = rng.normal(size=n)
        v = M @ y
        np.testing.assert_allclose(M @ (out @ v), v, rtol=1e-5, atol=1e-6 * max(np.abs(v).max(), 1e-300))


def test_a_new_regressor_gets_the_weighted_refit_by_declaring_it():
    """What a regressor supports is declared (``unpenalised``), not checked by
    type: a user's least-squares regressor, not a subclass of OLS or STLSQ,
    gets the covariance-weighted refit when it says it is unpenalised, and the
    same numbers as OLS."""
    from fitting.ode.regression import Regressor

    class PlainLS(Regressor):
        def solve_one(self, X, y, intercept):
            return np.linalg.lstsq(X, y, rcond=None)[0], 0.0

    class DeclaredLS(PlainLS):
        unpenalised = True

    t = np.arange(0, 30, 0.01)
    rng = np.random.default_rng(32)
    runs = [integrate(predator_prey, x0, t) for x0 in ([2.0, 1.0], [3.0, 2.0])]
    noisy = [r * (1 + 0.01 * rng.normal(size=r.shape)) for r in runs]
    assert "weighting" not in getattr(LotkaVolterra(regressor=PlainLS()).fit(noisy, 0.01), "fit_info_", {})
    declared = LotkaVolterra(regressor=DeclaredLS()).fit(noisy, 0.01)
    ols = LotkaVolterra(regressor="ols").fit(noisy, 0.01)
    assert declared.fit_info_["weighting"]["status"] == ols.fit_info_["weighting"]["status"]
    np.testing.assert_allclose(declared.coef_, ols.coef_, rtol=1e-6, atol=1e-9)
