"""fitting.ForceLawFit: recovery of known laws from particle trajectories,
intervals, scores, the law it returns, bad input."""
import warnings

import numpy as np
import pytest

import particles as P
from fitting import FitQualityWarning, ForceLawFit
from particles.testing import Well, example_custom_law, law_run

TRUE = P.ForceParams(k_a=2.0, sig_a=2.5, k_r=1.3, sig_r=0.8, lam=1.7, sig_t=0.3, eps=0.7, wd=0.2)
TRUE_VALUES = {"attraction": 2.0, "repulsion": 1.3, "alignment_same": 1.7, "alignment_other": 1.7, "wd": 0.2,
               "sig_a": 2.5, "sig_r": 0.8, "sig_t": 0.3, "eps": 0.7}


def particle_run(law, p=13, d=2, seed=0, steps=1500, every=30, noise=0.0):
    return law_run(law, p=p, d=d, seed=seed, steps=steps, every=every, noise=noise)


def _check_recovery(fit, truth):
    for name, c in zip(fit.terms_, fit.coef_):
        assert abs(c - truth[name]) <= 1e-6 * abs(truth[name]), (name, c)
    for name, v in fit.ranges_.items():
        assert abs(v - truth[name]) <= 0.01 * truth[name], (name, v)


@pytest.mark.parametrize("d", [2, 3])
def test_noise_free_builtin_law_is_recovered(d):
    X, G, train = particle_run(TRUE, d=d, seed=d)
    fit = ForceLawFit(P.ForceParams(lam=1.0), n_bootstrap=20).fit(X, G, train=train)
    _check_recovery(fit, TRUE_VALUES)
    assert fit.r2_ > 1 - 1e-12
    law = fit.to_law()
    assert isinstance(law, P.ForceParams)
    assert np.allclose(P.forces(X[3], train, law), G[3], rtol=0, atol=1e-8 * np.abs(G[3]).max())


@pytest.mark.slow  # compiles a custom law's kernels (~15-25 s)
def test_noise_free_custom_law_is_recovered():
    CUSTOM = example_custom_law()
    X, G, train = particle_run(CUSTOM, d=3, seed=5)
    start = CUSTOM.replace(distance=CUSTOM.distance.with_params(Well(1.0, 1.2)),
                           cosine=CUSTOM.cosine.with_params((1.0, 0.3)), eps=1.0)
    fit = ForceLawFit(start, ranges=("distance.width", "cosine.1", "eps"), n_bootstrap=20).fit(X, G, train=train)
    # the start law has depth 1 where the true one has 2: the fitted factor is 2
    truth = {"attraction": 2.0, "repulsion": 2.0, "alignment_same": 1.0, "alignment_other": 1.0, "wd": 0.1,
             "distance.width": 1.7, "cosine.1": 0.4, "eps": 0.8}
    _check_recovery(fit, truth)
    assert np.allclose(fit.predict(X[:3]), G[:3], rtol=0, atol=1e-8 * np.abs(G).max())


def test_noisy_fit_has_intervals_around_the_estimates():
    X, G, train = particle_run(TRUE, seed=11, noise=0.05)
    fit = ForceLawFit(P.ForceParams(lam=1.0), n_bootstrap=100).fit(X, G, train=train)
    for name, (lo, hi) in fit.intervals_.items():
        value = fit.ranges_[name] if name in fit.ranges_ else fit.coef_[fit.terms_.index(name)]
        assert lo <= value <= hi, name
        assert hi - lo < 0.5 * max(abs(value), 0.1), name  # 5 % noise: informative intervals
    assert 0.9 < fit.r2_ < 1.0
    assert abs(sum(fit.shares_.values()) - 1.0) < 1e-12
    assert len(fit.windows_) == 5 and all(w["r2"] is not None for w in fit.windows_)


def test_nested_terms_and_tied_alignment():
    X, G, train = particle_run(TRUE, seed=2)
    small = ForceLawFit(P.ForceParams(lam=1.0), terms=("attraction", "repulsion"), n_bootstrap=0).fit(X, G, train=train)
    assert small.terms_ == ("attraction", "repulsion")
    assert set(small.ranges_) == {"sig_a", "sig_r"}
    assert small.r2_ < 0.999
    tied = ForceLawFit(P.ForceParams(lam=1.0), tie_alignment=True, n_bootstrap=0).fit(X, G, train=train)
    assert tied.terms_ == ("attraction", "repulsion", "alignment", "wd")
    assert abs(tied.coef_[2] - 1.7) < 1e-6
    law = tied.to_law()
    assert isinstance(law, P.ForceParams) and abs(law.lam - 1.7) < 1e-6


def test_predict_score_and_simulate():
    X, G, train = particle_run(TRUE, seed=3)
    fit = ForceLawFit(P.ForceParams(lam=1.0), n_bootstrap=0).fit(X, G, train=train)
    assert np.allclose(fit.predict(X), G, rtol=0, atol=1e-8 * np.abs(G).max())
    assert fit.score(X, G, train=train) > 1 - 1e-12
    run = fit.simulate(X[0], 50, dt=0.01)
    ref = P.simulate(X[0], train, TRUE, steps=50, dt=0.01)
    assert np.allclose(run.final, ref.final, atol=1e-8)


def test_score_on_held_out_snapshots_with_rms_normalisation():
    X, G, train = particle_run(TRUE, seed=8, steps=600, every=10)  # still moving: the forces are not all ~0
    fit = ForceLawFit(P.ForceParams(lam=1.0), n_bootstrap=0, normalize="rms").fit(X[::2], G[::2], train=train)
    assert fit.score(X[1::2], G[1::2]) > 1 - 1e-10  # predictions are in the units of G
    assert np.allclose(fit.predict(X[1::2]), G[1::2], rtol=0, atol=1e-8 * np.abs(G).max())


def test_a_term_fitted_to_zero_keeps_intervals_around_the_estimates():
    law = TRUE.replace(k_r=0.0)
    X, G, train = particle_run(law, seed=9, noise=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitQualityWarning)
        fit = ForceLawFit(P.ForceParams(lam=1.0), n_bootstrap=100).fit(X, G, train=train)
    for name, (lo, hi) in fit.intervals_.items():
        value = fit.ranges_[name] if name in fit.ranges_ else fit.coef_[fit.terms_.index(name)]
        if lo is None:  # a range whose terms all have strength 0
            assert fit.coef_[fit.terms_.index("repulsion")] == 0.0 and name == "sig_r"
            continue
        assert np.isfinite(lo) and np.isfinite(hi) and lo <= value <= hi, (name, lo, value, hi)


def test_normalize_rms_divides_the_forces():
    X, G, train = particle_run(TRUE, seed=4)
    plain = ForceLawFit(P.ForceParams(lam=1.0), ranges=(), n_bootstrap=0).fit(X, G, train=train)
    scaled = ForceLawFit(P.ForceParams(lam=1.0), ranges=(), n_bootstrap=0, normalize="rms").fit(X, 7.0 * G,
                                                                                               train=train)
    assert np.allclose(scaled.coef_ * scaled.scales_[0] / 7.0, plain.coef_)


def test_several_runs_bootstrap_over_runs():
    runs = [particle_run(TRUE, seed=s, noise=0.05) for s in range(3)]
    trajs = []
    for X, G, train in runs:
        trajs.append(P.Trajectory(X, np.arange(len(X)), gradients=-G))
    with pytest.warns(FitQualityWarning, match="3 bootstrap units"):  # 3 runs for 9 parameters
        fit = ForceLawFit(P.ForceParams(lam=1.0), n_bootstrap=50).fit(trajs, train=[r[2] for r in runs])
    assert fit.fit_info_["runs"] == 3 and fit.n_runs_ == 3
    assert fit.bootstrap_.shape == (50, 9)


def test_effective_law():
    rng = np.random.default_rng(0)
    train = P.modular_addition(9).split(0.8, seed=rng)[0]
    X = rng.normal(size=(6, 9, 2))
    G = np.stack([-3.0 * P.effective_loss_gradient(x, train)[1] - 0.1 * x for x in X])
    fit = ForceLawFit("effective", n_bootstrap=10).fit(X, G, train=train)
    assert np.allclose(fit.coef_, [3.0, 0.1])
    with pytest.raises(ValueError, match="simulate_effective"):
        fit.simulate(X[0], 10)


def test_a_range_at_its_bound_warns():
    X, G, train = particle_run(TRUE, seed=6)
    with pytest.warns(FitQualityWarning, match="sig_a"):
        ForceLawFit(P.ForceParams(lam=1.0), bounds={"sig_a": (0.5, 1.0)}, n_bootstrap=0).fit(X, G, train=train)


def test_a_window_fits_its_snapshots():
    X, G, train = particle_run(TRUE, seed=7)
    steps = np.arange(len(X)) * 30
    fit = ForceLawFit(P.ForceParams(lam=1.0), ranges=(), n_bootstrap=0).fit(X, G, train=train, steps=steps,
                                                                           window=(300, 900))
    assert fit.fit_info_["snapshots"] == 20


def test_bad_input_names_the_parameter():
    X, G, train = particle_run(TRUE, steps=60, every=30)
    fit = ForceLawFit(P.ForceParams(lam=1.0), n_bootstrap=0)
    with pytest.raises(ValueError, match="G must have the shape of X"):
        fit.fit(X, G[:, :-1], train=train)
    with pytest.raises(ValueError, match="gradients=True"):
        fit.fit(P.Trajectory(X, np.arange(len(X))), train=train)
    with pytest.raises(ValueError, match="G"):
        fit.fit(X, np.where(G > 0, np.nan, G), train=train)
    with pytest.raises(ValueError, match="bounds"):
        ForceLawFit(P.ForceParams(lam=1.0), bounds={"sig_a": (0.0, 1.0)}).fit(X, G, train=train)
    with pytest.raises(ValueError, match="ranges must start > 0|bounds"):
        ForceLawFit(P.ForceParams(lam=1.0), bounds={"sig_r": (2.0, 1.0)}).fit(X, G, train=train)
    with pytest.raises(ValueError, match="terms"):
        ForceLawFit(P.ForceParams(lam=1.0), terms=()).fit(X, G, train=train)
    with pytest.raises(ValueError, match="window"):
        fit.fit(X, G, train=train, window=(1000, 2000))
    with pytest.raises(TypeError, match="train"):
        fit.fit(X, G)
    with pytest.raises(ValueError, match="law"):
        ForceLawFit("gravity").fit(X, G, train=train)
    with pytest.raises(ValueError, match="target"):
        ForceLawFit(target="velocity").fit(X, G, train=train)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        ForceLawFit().predict(X)


@pytest.mark.slow
@pytest.mark.parametrize("d", [2, 3])
def test_interval_coverage_with_five_percent_noise(d):
    """95 % intervals hold the true values in at least 90 % of 60 runs
    (random laws, 5 % noise on the forces), for every parameter."""
    hits = {}
    for s in range(60):
        rng = np.random.default_rng(1000 + s)
        law = P.ForceParams(k_a=rng.uniform(1, 3), sig_a=rng.uniform(1.5, 3), k_r=rng.uniform(0.5, 2),
                            sig_r=rng.uniform(0.5, 1.2), lam=rng.uniform(0.5, 2), sig_t=rng.uniform(0.2, 0.5),
                            eps=rng.uniform(0.5, 1.5), wd=rng.uniform(0.05, 0.3))
        X, G, train = particle_run(law, d=d, seed=2000 + s, noise=0.05)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitQualityWarning)
            fit = ForceLawFit(P.ForceParams(lam=1.0), seed=s).fit(X, G, train=train)
        truth = {"attraction": law.k_a, "repulsion": law.k_r, "alignment_same": law.lam,
                 "alignment_other": law.lam, "wd": law.wd, "sig_a": law.sig_a, "sig_r": law.sig_r,
                 "sig_t": law.sig_t, "eps": law.eps}
        for name, value in truth.items():
            lo, hi = fit.intervals_[name]
            hits.setdefault(name, []).append(lo <= value <= hi)
    rates = {k: float(np.mean(v)) for k, v in hits.items()}
    assert min(rates.values()) >= 0.9, rates


def test_a_strength_on_a_vanishing_term_warns():
    # at sig_t = 0.03 the alignment terms' unit forces are ~1e-9 of the data's: NNLS gives one of them a
    # strength ~1e8 that measures nothing (on a real run the same happened at 4.6e+253, silently)
    X, G, train = particle_run(TRUE, seed=6, noise=0.2)
    with pytest.warns(FitQualityWarning, match=r"alignment_other = .* is not measured.*rms_forces_"):
        fit = ForceLawFit(TRUE.replace(sig_t=0.03), ranges=(), n_bootstrap=0).fit(X, G, train=train)
    assert fit.coef_[fit.terms_.index("alignment_other")] > 1e6
    # the same data at the true range: every strength is measured, no such warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitQualityWarning)
        ForceLawFit(TRUE, ranges=(), n_bootstrap=0).fit(X, G, train=train)


def test_column_rms_survives_underflow():
    from fitting.forcefit.solve import column_rms

    rng = np.random.default_rng(0)
    A = rng.normal(size=(50, 3))
    np.testing.assert_allclose(column_rms(A), np.sqrt(np.mean(A ** 2, axis=0)), rtol=1e-12)
    tiny = A * np.array([1.0, 1e-250, 0.0])  # plain squares of the middle column underflow to 0
    assert np.sqrt(np.mean(tiny[:, 1] ** 2)) == 0.0
    np.testing.assert_allclose(column_rms(tiny), np.sqrt(np.mean(A ** 2, axis=0)) * [1.0, 1e-250, 0.0], rtol=1e-12)


@pytest.mark.slow
def test_the_gram_path_gives_the_direct_fit_and_reports_progress():
    """At d = 8 the fit runs on the Gram path by default: the same fit as on
    the direct path to rounding, its progress reported in snapshots up to
    done == total, and the evaluations counted in fit_info_."""
    truth = P.ForceParams(k_a=1.5, sig_a=2.0, k_r=0.9, sig_r=1.1, lam=1.2, sig_t=0.5, eps=0.8, wd=0.1)
    X, G, train = particle_run(truth, d=8, steps=600, every=60, noise=0.02)
    calls = []
    fast = ForceLawFit(P.ForceParams(lam=1.0), n_bootstrap=20).fit(X, G, train=train,
                                                                  callback=lambda done, total: calls.append((done, total)))
    slow = ForceLawFit(P.ForceParams(lam=1.0), n_bootstrap=20, path="direct").fit(X, G, train=train)
    assert fast.fit_info_["path"] == "gram" and slow.fit_info_["path"] == "direct"  # the path taken
    assert np.allclose(fast.coef_, slow.coef_, rtol=1e-6, atol=1e-9)
    assert abs(fast.r2_ - slow.r2_) < 1e-9
    done = [c[0] for c in calls]
    assert done == sorted(done) and all(d <= t for d, t in calls) and calls[-1][0] == calls[-1][1]
    assert calls[-1][0] == fast.fit_info_["snapshot_evaluations"] >= len(X)
    assert fast.fit_info_["term_evaluations"] >= 1


def test_path_and_callback_are_checked():
    X, G, train = particle_run(P.ForceParams(lam=1.0), steps=60, every=30)
    with pytest.raises(ValueError, match="path must be one of"):
        ForceLawFit(path="fast").fit(X, G, train=train)
    with pytest.raises(ValueError, match="path='gram' runs the pair kernels"):
        ForceLawFit("effective", path="gram").fit(X, G, train=train)
    with pytest.raises(TypeError, match="callback must be callable"):
        ForceLawFit().fit(X, G, train=train, callback=3)


def test_snapshots_are_checked_before_their_steps():
    X, G, train = particle_run(P.ForceParams(lam=1.0), steps=60, every=30)
    # X without snapshots and steps of the original length: the message used to name steps only
    with pytest.raises(ValueError, match=r"X must hold at least one snapshot: shape \(T, p, d\) with T >= 1, got "
                                         r"\(0, "):
        ForceLawFit().fit(X[:0], G[:0], train=train, steps=np.arange(len(X)))
    with pytest.raises(ValueError, match=rf"steps must have shape \({len(X)},\) to match the snapshots of X, got "
                                         rf"\({len(X) + 1},\)"):
        ForceLawFit().fit(X, G, train=train, steps=np.arange(len(X) + 1))
