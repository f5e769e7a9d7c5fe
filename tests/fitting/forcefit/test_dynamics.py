"""The force fit's view of the dynamics (issue 53): strengths per window of
steps against plain NumPy least squares, the gauge's projections, the null
on relabelled tokens, the warning of a clipped sign, and bad input."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import particles as P
from fitting import FitQualityWarning, ForceLawFit
from fitting.forcefit.gauge import admitted_gauges, gauge_directions, project
from particles.testing import law_run

TRUE = P.ForceParams(k_a=2.0, sig_a=2.5, k_r=1.3, sig_r=0.8, lam=1.7, sig_t=0.3, eps=0.7, wd=0.2)


def _run(noise=0.05, seed=3, d=2):
    X, G, train = law_run(TRUE, p=13, d=d, seed=seed, steps=1200, every=30, noise=noise)
    return X, G, train, np.arange(len(X)) * 30


def _numpy_columns(X, train, terms):
    """The unit term forces by the NumPy reference: an independent design."""
    from particles.reference import forces_reference

    cols = []
    for term in terms:
        law = {"attraction": TRUE.replace(k_r=0.0, lam=0.0, wd=0.0, k_a=1.0),
               "repulsion": TRUE.replace(k_a=0.0, lam=0.0, wd=0.0, k_r=1.0)}[term]
        cols.append(np.stack([forces_reference(x, train.pairs, train.labels, law) for x in X]))
    return np.stack(cols, axis=-1)  # (T, p, d, K)


def test_windowed_strengths_equal_plain_least_squares():
    X, G, train, steps = _run()
    terms = ["attraction", "repulsion"]
    edges = [0, 300, 900, int(steps[-1]) + 1]
    fit = ForceLawFit(TRUE, terms=terms, ranges=(), n_bootstrap=0, windows=edges, gauge=None,
                      nonnegative=False).fit(X, G, train=train, steps=steps)
    cols = _numpy_columns(X, train, terms)
    assert [w["start"] for w in fit.windows_] == edges[:-1]
    for w in fit.windows_:
        keep = (steps >= w["start"]) & (steps < w["stop"])
        A = cols[keep].reshape(-1, len(terms))
        b = G[keep].ravel()
        coef = np.linalg.lstsq(A, b, rcond=None)[0]
        for k, term in enumerate(terms):
            assert abs(w["coef"][term] - coef[k]) <= 1e-6 * max(1.0, abs(coef[k])), (w["start"], term)
        o = G[keep].reshape(-1, 2)
        expected = 1 - np.sum((b - A @ coef) ** 2) / np.sum((o - o.mean(axis=0)) ** 2)
        assert abs(w["r2"] - expected) <= 1e-6
        assert 0.0 <= min(w["shares"].values()) and abs(sum(w["shares"].values()) - 1.0) < 1e-12
    assert abs(sum(w["force_share"] for w in fit.windows_) - 1.0) < 1e-12
    assert fit.whole_run_["label"].startswith("whole run")


@settings(deadline=None, max_examples=20)
@given(T=st.integers(1, 4), N=st.integers(2, 9), d=st.integers(1, 5), seed=st.integers(0, 2**31 - 1),
       gauge=st.sampled_from(["translation", "similarity"]))
def test_gauge_projection_removes_exactly_its_directions(T, N, d, seed, gauge):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, N, d))
    V = rng.normal(size=(T, N, d))
    W = project(V, X, gauge)
    basis = gauge_directions(X, gauge)
    # nothing of W is left along the gauge's directions, the rest of V is untouched, and it is a projection
    assert np.allclose(np.einsum("tmnd,tnd->tm", basis, W), 0.0, atol=1e-12)
    along = np.einsum("tmnd,tnd->tm", basis, V)
    assert np.allclose(V - W, np.einsum("tm,tmnd->tnd", along, basis), atol=1e-12)
    assert np.allclose(project(W, X, gauge), W, atol=1e-12)
    # columns (T, K, N, d) project one by one
    cols = np.stack([V, 2 * V], axis=1)
    assert np.allclose(project(cols, X, gauge)[:, 1], 2 * W)


def test_gauges_follow_the_fitted_terms_invariances():
    assert admitted_gauges(P.ForceParams, ["attraction", "repulsion"]) == (None, "translation")
    assert admitted_gauges(P.ForceParams, ["attraction", "wd"]) == (None,)
    assert admitted_gauges(P.EffectiveLoss, ["effective"]) == (None, "translation", "similarity")
    X, G, train, _ = _run()
    fit = ForceLawFit(TRUE, terms=["attraction", "repulsion"], ranges=(), n_bootstrap=0).fit(X, G, train=train)
    assert fit.gauge_ == "translation" and fit.fit_info_["gauge"] == "translation"
    # the law's own forces have no drift, so the translation gauge loses nothing of them
    exact = np.stack([P.forces(x, train, TRUE.replace(lam=0.0, wd=0.0)) for x in X])
    assert np.allclose(exact.sum(axis=1), 0.0, atol=1e-10)
    assert ForceLawFit(TRUE, n_bootstrap=0, ranges=()).fit(X, G, train=train).gauge_ is None  # decay moves the centroid


def test_the_null_sits_below_a_law_that_made_the_forces():
    X, G, train, steps = _run(noise=0.2)
    fit = ForceLawFit(TRUE, ranges=(), n_bootstrap=0, null=6, windows=2).fit(X, G, train=train, steps=steps)
    lo, hi = fit.null_r2_interval_
    assert lo <= fit.null_r2_ <= hi < fit.r2_
    first = fit.windows_[0]
    assert first["null_r2"] is not None and first["null_r2_interval"][1] < first["r2"]
    assert "against" in fit.summary() and "above chance" in fit.summary()
    again = ForceLawFit(TRUE, ranges=(), n_bootstrap=0, null=6, windows=2).fit(X, G, train=train, steps=steps)
    assert again.null_r2_ == fit.null_r2_  # seeded


def test_a_clipped_sign_warns_and_the_signed_fit_is_kept():
    X, G, train, _ = _run(noise=0.0)
    clustering = np.stack([P.forces(x, train, TRUE.replace(lam=0.0, wd=0.0)) for x in X])
    with pytest.warns(FitQualityWarning, match="wd is clipped at 0"):  # forces plus a growth, +0.5 x
        fit = ForceLawFit(TRUE, terms=["attraction", "repulsion", "wd"], ranges=(), n_bootstrap=0,
                          gauge=None).fit(X, clustering + 0.5 * X, train=train)
    k = fit.terms_.index("wd")
    assert fit.coef_[k] == 0.0 and abs(fit.coef_unconstrained_[k] + 0.5) < 1e-8
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitQualityWarning)
        ForceLawFit(TRUE, ranges=(), n_bootstrap=0).fit(X, G, train=train)  # the true law: no sign clipped


@pytest.mark.parametrize("options, message", [
    (dict(windows=[0, 100, 100]), "strictly increasing"),
    (dict(windows=[5000, 6000]), r"go past the run's end: the run's steps are 0\.\.1200"),
    (dict(windows=[0, 1, 2]), "each hold a snapshot"),
    (dict(windows=[0]), "at least two"),
    (dict(windows="5"), "windows must be an int"),
    (dict(null=-1), "null"),
    (dict(gauge="similarity"), "gauge"),
    (dict(gauge="rotation"), "gauge must be"),
    (dict(windows=[0, 100, 50]), "strictly increasing"),
])
def test_bad_input_names_the_parameter(options, message):
    X, G, train, steps = _run()
    with pytest.raises((ValueError, TypeError), match=message):
        ForceLawFit(TRUE, n_bootstrap=0, **options).fit(X, G, train=train, steps=steps)


def test_a_null_needs_a_law_that_takes_the_runs_pairs():
    X, G, train, _ = _run()
    with pytest.raises(ValueError, match="null relabels"):
        ForceLawFit(P.EffectiveLoss.from_pairs(train), null=2, n_bootstrap=0).fit(X, G, train=train)
    fit = ForceLawFit("effective", terms=["effective"], null=2, n_bootstrap=0, windows=1).fit(X, G, train=train)
    assert fit.gauge_ == "similarity" and fit.null_r2_ is not None


def test_displacement_target_equals_plain_least_squares():
    X, _, train, steps = _run()  # snapshots every 30 steps
    terms = ["attraction", "repulsion"]
    cols = _numpy_columns(X, train, terms)
    for horizon, lag in ((None, 1), (30, 1), (90, 3)):
        fit = ForceLawFit(TRUE, terms=terms, ranges=(), n_bootstrap=0, windows=1, gauge=None, nonnegative=False,
                          target="displacement", horizon=horizon).fit(X, train=train, steps=steps)
        D = (X[lag:] - X[:-lag]) / (30.0 * lag)  # per step, at the earlier snapshot
        A = cols[:-lag].reshape(-1, len(terms))
        coef = np.linalg.lstsq(A, D.ravel(), rcond=None)[0]
        assert fit.fit_info_["snapshots"] == len(X) - lag
        assert np.allclose(fit.coef_, coef, rtol=1e-6, atol=1e-9), horizon
        o = D.reshape(-1, 2)
        expected = 1 - np.sum((D.ravel() - A @ coef) ** 2) / np.sum((o - o.mean(axis=0)) ** 2)
        assert abs(fit.r2_ - expected) <= 1e-6
        assert "displacement per step" in fit.summary()


def test_displacement_of_the_laws_own_flow_is_explained():
    """Euler steps of the law itself: the displacement over a few steps is the law's force (R^2 near 1),
    and it needs no recorded gradient: a Trajectory of snapshots alone is fitted."""
    x0 = np.random.default_rng(4).normal(size=(13, 2))
    train = P.modular_addition(13).split(0.8, seed=1)[0]
    law = TRUE.replace(lam=0.0, wd=0.0)
    traj = P.simulate(x0, train, law, steps=400, dt=0.002, record_every=1, seed=0)
    assert traj.gradients is None
    options = dict(terms=["attraction", "repulsion"], ranges=(), n_bootstrap=0, windows=2, target="displacement")
    one = ForceLawFit(law, horizon=1, **options).fit(traj, train=train)  # an Euler step is dt x the force
    assert one.r2_ > 1 - 1e-9 and np.allclose(one.coef_, [0.002 * law.k_a, 0.002 * law.k_r], rtol=1e-7)
    four = ForceLawFit(law, horizon=4, **options).fit(traj, train=train)  # the force changes over 4 steps
    assert four.r2_ > 0.99 and four.fit_info_["horizon"] == 4


@pytest.mark.parametrize("options, message", [
    (dict(target="displacement", horizon=0), "horizon must be"),
    (dict(target="displacement", horizon=2.5), "horizon must be"),
    (dict(target="displacement", horizon=7), "no two snapshots"),
    (dict(target="displacement", horizon=10**6), "at most the run's span"),
    (dict(horizon=30), "horizon is the displacement target's"),
    (dict(target="speed"), "target"),
])
def test_bad_horizon_names_the_parameter(options, message):
    X, _, train, steps = _run()
    with pytest.raises((ValueError, TypeError), match=message):
        ForceLawFit(TRUE, n_bootstrap=0, **options).fit(X, None if "target" in options else X, train=train,
                                                         steps=steps)


def test_displacement_takes_no_forces():
    X, G, train, steps = _run()
    with pytest.raises(ValueError, match="G must be None with target='displacement'"):
        ForceLawFit(TRUE, n_bootstrap=0, target="displacement").fit(X, G, train=train, steps=steps)
    with pytest.raises(ValueError, match="increase strictly"):
        ForceLawFit(TRUE, n_bootstrap=0, target="displacement").fit(X, train=train, steps=steps[::-1])
