"""Issue 68, a verdict a user can act on: the fit does not depend on the
target's units, "above chance" needs an effect, ranges at a bound are not
identified, one definition of a share, one set of defaults, windows inside
the run, and the fit's stages on the progress callback."""
import math
import warnings
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import particles as P
from fitting import FitQualityWarning, ForceLawFit
from fitting.forcefit.estimator import DEFAULT_NULL
from fitting.forcefit.solve import shares
from fitting.forcefit.verdict import MARGIN_ABSOLUTE, MARGIN_RELATIVE, chance_margin, verdict
from particles.testing import law_run

TRUE = P.ForceParams(k_a=2.0, sig_a=2.5, k_r=1.3, sig_r=0.8, lam=1.7, sig_t=0.3, eps=0.7, wd=0.2)
START = P.ForceParams(lam=1.0)


def _fit(X, G, train, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitQualityWarning)
        return ForceLawFit(START, **{"n_bootstrap": 0, "null": 3, **options}).fit(X, G, train=train)


def _same_fit(a, b, factor):
    """Two fits agree on everything without units; b's strengths are a's times ``factor``."""
    assert math.isclose(a.r2_, b.r2_, rel_tol=1e-6), (a.r2_, b.r2_)
    for name, v in a.ranges_.items():
        assert math.isclose(v, b.ranges_[name], rel_tol=1e-6), (name, v, b.ranges_[name])
    assert a.range_status_ == b.range_status_
    assert math.isclose(a.null_r2_, b.null_r2_, rel_tol=1e-6)
    np.testing.assert_allclose(a.null_r2_interval_, b.null_r2_interval_, rtol=1e-6)
    assert a.verdict_ == b.verdict_
    np.testing.assert_allclose(np.array(list(a.shares_.values())), np.array(list(b.shares_.values())),
                               rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(a.coef_ * factor, b.coef_, rtol=1e-6, atol=1e-12 * np.abs(b.coef_).max())
    for wa, wb in zip(a.windows_, b.windows_):
        assert wa["verdict"] == wb["verdict"]
        if wa["r2"] is not None:
            assert math.isclose(wa["r2"], wb["r2"], rel_tol=1e-6, abs_tol=1e-12)


# ------------------------------------------------------------------ 1. units

@settings(deadline=None, max_examples=6)
@given(seed=st.integers(0, 10_000), log_scale=st.floats(-8.0, 4.0), noise=st.sampled_from([0.5, 3.0]))
def test_normalize_changes_the_strengths_units_only(seed, log_scale, noise):
    """One run, G in any units: normalize=None and "rms" give the same R^2,
    ranges, null, verdict and shares; the strengths differ by the RMS. At a
    scale of 1e-5 the range search used to stop at once on SciPy's absolute
    gradient tolerance (a different fit from the same data)."""
    X, G, train = law_run(TRUE, p=11, d=2, seed=seed, steps=600, every=30, noise=noise)
    G = G * 10.0 ** log_scale
    plain, rms = _fit(X, G, train), _fit(X, G, train, normalize="rms")
    _same_fit(rms, plain, np.sqrt(np.mean(G ** 2)))
    assert plain.scales_ == [1.0] and math.isclose(rms.scales_[0], np.sqrt(np.mean(G ** 2)), rel_tol=1e-12)


def test_units_do_not_move_a_fit_whose_ranges_lie_inside_the_box():
    """The law explains about a tenth of a noisy force, its best ranges
    inside their bounds: the same fit at G x 1, x 1e-5 and x 1e3."""
    X, G, train = law_run(TRUE, p=13, d=2, seed=11, noise=3.0)
    ref = _fit(X, G, train)
    assert set(ref.range_status_.values()) == {"identified"}  # every range inside the box
    assert 0.05 < ref.r2_ < 0.2
    for factor in (1e-5, 1e3):
        _same_fit(ref, _fit(X, factor * G, train), factor)
        _same_fit(ref, _fit(X, factor * G, train, normalize="rms"), 1.0 / np.sqrt(np.mean(G ** 2)))


def test_intervals_and_rms_forces_rescale_with_the_strengths():
    X, G, train = law_run(TRUE, p=13, d=2, seed=5, noise=0.5)
    a = _fit(X, G, train, n_bootstrap=20)
    b = _fit(X, 1e-4 * G, train, n_bootstrap=20)
    for name in a.terms_:
        np.testing.assert_allclose(np.array(a.intervals_[name]) * 1e-4, b.intervals_[name], rtol=1e-6, atol=1e-18)
        assert math.isclose(a.rms_forces_[name] * 1e-4, b.rms_forces_[name], rel_tol=1e-6, abs_tol=1e-18)
    for name in a.range_names_:
        np.testing.assert_allclose(a.intervals_[name], b.intervals_[name], rtol=1e-6)


def test_several_runs_uniform_rescaling_and_rms_per_run_rescaling():
    """Several runs: rescaling all of them by one factor changes only the
    strengths (normalize=None); with "rms", rescaling each run by its own
    factor changes nothing but scales_ (each run is divided by its RMS).
    With runs of different RMS forces None and "rms" weigh the runs
    differently, which is allowed to change the fit."""
    runs = [law_run(TRUE, p=11, d=2, seed=s, steps=600, every=30, noise=1.0) for s in (1, 2)]
    trajs = [P.Trajectory(X, np.arange(len(X)), gradients=-G) for X, G, _ in runs]
    trains = [train for _, _, train in runs]

    def fit(factors, **options):
        scaled = [P.Trajectory(t.embeddings, t.snapshot_steps, gradients=f * t.gradients)
                  for t, f in zip(trajs, factors)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitQualityWarning)
            return ForceLawFit(START, n_bootstrap=0, null=3, **options).fit(scaled, train=trains)

    ref = fit([1.0, 1.0])
    _same_fit(ref, fit([3e-6, 3e-6]), 3e-6)
    rms = fit([1.0, 1.0], normalize="rms")
    _same_fit(rms, fit([1e-6, 5e2], normalize="rms"), 1.0)


def test_a_force_that_is_zero_everywhere_is_refused_in_either_units():
    X, G, train = law_run(TRUE, p=11, d=2, seed=0, steps=300, every=30)
    for normalize in (None, "rms"):
        with pytest.raises(ValueError, match="G is zero everywhere"):
            ForceLawFit(START, normalize=normalize).fit(X, 0.0 * G, train=train)


# ------------------------------------------------------------------ 2. the verdict

@settings(deadline=None, max_examples=300)
@given(samples=st.lists(st.floats(-0.5, 1.0), min_size=2, max_size=20), u=st.floats(0.0, 1.0))
def test_above_chance_needs_the_margin(samples, u):
    """Never "above chance" for an R^2 inside the null's interval widened by
    the margin; always "above" beyond it, "below" below it by the margin."""
    values = np.array(samples)
    null, (lo, hi) = float(values.mean()), np.percentile(values, [2.5, 97.5])
    m = chance_margin(null)
    assert m >= MARGIN_ABSOLUTE and m >= MARGIN_RELATIVE * abs(null)
    inside = min(max((lo - m) + u * ((hi + m) - (lo - m)), lo - m), hi + m)  # the closed band, rounding aside
    assert verdict(inside, null, (lo, hi)) == "at chance"
    assert verdict(hi + m + 1e-9 + u, null, (lo, hi)) == "above chance"
    assert verdict(lo - m - 1e-9 - u, null, (lo, hi)) == "below chance"


def test_the_reported_case_is_at_chance():
    # issue 68: "R^2 0.001 against 0.001 [0.001, 0.001] (above chance)", a difference of 0.0001
    assert verdict(0.0011, 0.0010, (0.00095, 0.00105)) == "at chance"
    assert verdict(0.063, 0.058, (0.050, 0.066)) == "at chance"
    assert verdict(0.30, 0.058, (0.050, 0.066)) == "above chance"
    assert verdict(0.74, 0.70, (0.69, 0.72)) == "at chance"  # 0.02 above a null of 0.7: within 5 % of it
    assert verdict(None, 0.1, (0.0, 0.2)) is None and verdict(0.5, None, None) is None
    assert verdict(float("nan"), 0.1, (0.0, 0.2)) is None


def test_summary_windows_and_sentence_use_the_one_verdict():
    X, G, train = law_run(TRUE, p=13, d=2, seed=3, noise=0.3)
    fit = _fit(X, G, train, null=5, windows=3)
    assert fit.verdict_ == verdict(fit.r2_, fit.null_r2_, fit.null_r2_interval_) == fit.whole_run_["verdict"]
    assert fit.verdict_ == "above chance"  # the law itself with 30 % noise
    sentence = fit.verdict_sentence()
    assert sentence.startswith("The built-in law explains R^2") and sentence.endswith(": above chance.")
    assert sentence in fit.summary()
    for w in fit.windows_:
        assert w["verdict"] == verdict(w["r2"], w["null_r2"], w["null_r2_interval"])
        assert f"relabelled tokens: {w['verdict']}" in fit.summary()
    plain = _fit(X, G, train, null=0)
    assert plain.verdict_ is None and "no verdict without a null" in plain.verdict_sentence()


def test_a_law_on_noise_is_not_above_chance():
    """Forces with no relation to the task: whatever R^2 the law reaches, the
    relabelled tokens reach it too, and the verdict says so."""
    X, G, train = law_run(TRUE, p=13, d=2, seed=8)
    G = np.random.default_rng(0).normal(size=G.shape)
    fit = _fit(X, G, train, null=10)
    assert fit.verdict_ != "above chance", (fit.r2_, fit.null_r2_interval_)


# ------------------------------------------------------------------ 3. ranges at a bound

def test_a_range_at_its_bound_is_not_identified():
    X, G, train = law_run(TRUE, p=13, d=2, seed=6)
    with pytest.warns(FitQualityWarning, match="sig_a = 1 lies at its upper bound 1, so it is not identified"):
        fit = ForceLawFit(START, bounds={"sig_a": (0.5, 1.0)}, n_bootstrap=10, null=0).fit(X, G, train=train)
    assert fit.range_status_["sig_a"] == "at its upper bound 1"
    assert fit.range_status_["sig_t"] == "identified"
    assert fit.identified_ranges()["sig_a"] is None and fit.identified_ranges()["sig_t"] == fit.ranges_["sig_t"]
    rows = {r["name"]: r for r in fit.table()}
    assert rows["sig_a"]["value"] is None and rows["sig_a"]["interval"] == [None, None]
    assert not rows["sig_a"]["identified"] and rows["sig_a"]["note"] == "not identified: at its upper bound 1"
    assert rows["sig_a"]["fitted"] == fit.ranges_["sig_a"]  # what the law uses
    assert rows["sig_t"]["value"] == fit.ranges_["sig_t"] and rows["sig_t"]["identified"]
    assert "not identified: sig_a (at its upper bound 1)" in fit.summary()
    assert "sig_a 1" not in fit.summary().replace("sig_a (", "")


def test_a_range_whose_terms_have_strength_zero_is_not_identified():
    """The data push the same-class alignment the wrong way: its strength is
    clipped at 0, and eps, which only it uses here, moves nothing."""
    X, _, train = law_run(TRUE, p=13, d=2, seed=2)
    clustering = np.stack([P.forces(x, train, TRUE.replace(lam=0.0, wd=0.0)) for x in X])
    against = np.stack([P.force_terms(TRUE, x, train)["alignment_same"] for x in X])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitQualityWarning)
        fit = ForceLawFit(TRUE, terms=["attraction", "repulsion", "alignment_same"], n_bootstrap=0, null=0,
                          ranges=("sig_a", "eps")).fit(X, clustering - 0.5 * against, train=train)
    assert fit.coef_[fit.terms_.index("alignment_same")] == 0.0
    assert fit.range_status_ == {"sig_a": "identified", "eps": "its terms have strength 0"}
    assert "not identified: eps (its terms have strength 0)" in fit.summary()


# ------------------------------------------------------------------ 5. one share

def test_one_definition_of_a_share():
    X, G, train = law_run(TRUE, p=13, d=2, seed=4, noise=0.2)
    fit = _fit(X, G, train)
    rms = np.array([fit.rms_forces_[t] for t in fit.terms_])
    expected = rms ** 2 / np.sum(rms ** 2)  # each term's squared RMS force over the terms' total
    np.testing.assert_allclose([fit.shares_[t] for t in fit.terms_], expected, rtol=1e-10)
    assert fit.whole_run_["shares"] == fit.shares_
    assert [r["share"] for r in fit.table() if r["kind"] == "strength"] == [fit.shares_[t] for t in fit.terms_]
    assert min(fit.shares_.values()) >= 0.0 and abs(sum(fit.shares_.values()) - 1.0) < 1e-12
    A = np.random.default_rng(0).normal(size=(50, 3))
    assert shares(A, np.zeros(3)) == [0.0, 0.0, 0.0]


# ------------------------------------------------------------------ 4. one set of defaults

def test_the_library_and_the_command_line_share_their_defaults():
    from particles.core.cli import build_parser
    from fitting.forcefit import cli

    args = build_parser().parse_args(["force-fit", "run.npz"])
    fit = ForceLawFit()
    assert cli.DEFAULT_NULL == DEFAULT_NULL == fit.null == args.null == 10
    assert fit.normalize is None and args.normalize == "none"
    assert (fit.n_bootstrap, fit.windows, fit.seed, fit.path, fit.gauge, fit.target, fit.law) == (
        args.bootstrap, int(args.windows), args.seed, args.path, args.gauge, args.target, args.law)


# ------------------------------------------------------------------ 8. windows inside the run

RUN_STEPS = r"the run's steps are 0\.\.600 \(21 snapshots with a force\), so give edges 0 <= e0 < e1 < \.\.\. <= 601"


@pytest.mark.parametrize("windows, message", [
    ([0, 100, 99999], r"windows \[0, 100, 99999\] go past the run's end: " + RUN_STEPS),
    ([0, 700], r"go past the run's end: " + RUN_STEPS),
    ([-30, 300], r"begin before the run's start: " + RUN_STEPS),
    ([300, 100], r"must be strictly increasing step edges \(a window may not be reversed.*" + RUN_STEPS),
    ([0, 100, 100], "strictly increasing"),
    ([0, 10, 20], r"must each hold a snapshot; \[10, 20\) holds none: " + RUN_STEPS),
])
def test_windows_outside_the_run_are_refused_before_any_work(windows, message):
    X, G, train = law_run(TRUE, p=11, d=2, seed=0, steps=600, every=30)
    steps = np.arange(len(X)) * 30  # 0 .. 600
    calls = []
    with pytest.raises(ValueError, match=message):
        ForceLawFit(START, windows=windows).fit(X, G, train=train, steps=steps, callback=lambda d, t: calls.append(d))
    assert calls == []  # refused before the first evaluation


@pytest.mark.filterwarnings("ignore::fitting.FitQualityWarning")  # the start law's ranges clip strengths
def test_windows_may_reach_the_recorded_runs_last_step():
    """A recorded run's last snapshot has no gradient: windows may still run
    to its last step + 1, and no further."""
    X, G, train = law_run(TRUE, p=11, d=2, seed=0, steps=600, every=30)
    traj = P.Trajectory(X, np.arange(len(X)) * 30, gradients=-G[:-1])  # steps 0 .. 600, gradients to 570
    fit = ForceLawFit(START, ranges=(), n_bootstrap=0, null=0, windows=[0, 300, 601]).fit(traj, train=train)
    assert [w["stop"] for w in fit.windows_] == [300, 601]
    steps = r"the run's steps are 0\.\.600 \(20 snapshots with a force\)"
    with pytest.raises(ValueError, match=r"windows \[0, 300, 602\] go past the run's end: " + steps):
        ForceLawFit(START, ranges=(), windows=[0, 300, 602]).fit(traj, train=train)
    for window, words in (((100, 99999), "goes past the run's end"), ((300, 100), r"is reversed \(start > stop\)"),
                          ((300, 300), r"is empty \(start = stop\)")):
        with pytest.raises(ValueError, match=rf"window \({window[0]}, {window[1]}\) {words}: {steps}, so give "
                                             r"0 <= start < stop <= 601"):
            ForceLawFit(START, ranges=()).fit(traj, train=train, window=window)
    fit = ForceLawFit(START, ranges=(), n_bootstrap=0, null=0, windows=1).fit(traj, train=train, window=(300, 601))
    assert fit.fit_info_["snapshots"] == 10


def test_named_windows_are_reported_by_name():
    """A partition of the run's steps into named windows (an object with
    edges and window_names, as a stage detector gives) is taken as is."""
    Partition = namedtuple("Partition", "edges window_names")
    X, G, train = law_run(TRUE, p=11, d=2, seed=1, steps=600, every=30, noise=0.2)
    steps = np.arange(len(X)) * 30
    stages = Partition([0, 150, 601], ["formation", "after"])
    fit = ForceLawFit(START, ranges=(), n_bootstrap=0, null=3, windows=stages).fit(X, G, train=train, steps=steps)
    assert [w["name"] for w in fit.windows_] == ["formation", "after"]
    assert "Steps [0, 150) formation" in fit.summary() and all(w["verdict"] for w in fit.windows_)
    for bad, error, words in ((Partition([0, 150, 601], ["one"]), ValueError, "name each of the 2 windows"),
                              (Partition([0, 150, 601], [1, 2]), TypeError, "window_names must be a list of str")):
        with pytest.raises(error, match=words):
            ForceLawFit(START, windows=bad).fit(X, G, train=train, steps=steps)
    edges = np.array([0, 300, 601])  # an integer array of edges is a list of edges
    fit = ForceLawFit(START, ranges=(), n_bootstrap=0, null=0, windows=edges).fit(X, G, train=train, steps=steps)
    assert [w["start"] for w in fit.windows_] == [0, 300] and fit.windows_[0]["name"] is None


def test_a_one_snapshot_window_says_what_its_r2_means():
    """A window that holds one snapshot still gets its R^2 (p d rows), with
    a note that it fits one moment's field; windows of more snapshots none."""
    from fitting.forcefit.windows import ONE_SNAPSHOT_NOTE

    X, G, train = law_run(TRUE, p=11, d=2, seed=1, steps=600, every=30, noise=0.2)
    steps = np.arange(len(X)) * 30
    fit = ForceLawFit(START, ranges=(), n_bootstrap=0, null=3, windows=[0, 30, 601]).fit(X, G, train=train, steps=steps)
    one, rest = fit.windows_
    assert one["snapshots"] == 1 and one["defined"] and one["note"] == ONE_SNAPSHOT_NOTE
    assert rest["snapshots"] == len(X) - 1 and rest["note"] is None
    assert "Note: one snapshot" in fit.summary().splitlines()[-2] and fit.summary().count("Note:") == 1


# ------------------------------------------------------------------ 7. progress, before the compilation too

def test_the_callback_hears_the_start_before_the_compilation_and_the_end():
    X, G, train = law_run(TRUE, p=11, d=2, seed=0, steps=600, every=30, noise=0.1)
    events = []
    import fitting.forcefit.estimator as estimator

    real = estimator.compile_kernels

    def compile_kernels(*args, **kwargs):  # what the callback has heard when the compilation starts
        events.append("compile")
        return real(*args, **kwargs)

    estimator.compile_kernels = compile_kernels
    try:
        ForceLawFit(START, n_bootstrap=5, null=2).fit(X, G, train=train, callback=lambda d, t: events.append((d, t)))
    finally:
        estimator.compile_kernels = real
    assert events[0][0] == 0 and events[1] == "compile"  # (0, total) before the compilation
    calls = [e for e in events if e != "compile"]
    assert all(b[0] >= a[0] for a, b in zip(calls, calls[1:]))  # done never goes back
    assert calls[-1][0] == calls[-1][1]  # the last call: done == total


# ------------------------------------------------------------------ 8. windows="stages"

def _staged_run():
    """A law run (p = 11, snapshots every 30 steps to 600) with per-step signals in which frequencies 2 and 4
    take over around step 200 and the others decay around step 420, and a validation accuracy that rises around
    step 300: its stages end inside the run."""
    X, G, train = law_run(TRUE, p=11, d=2, seed=3, steps=600, every=30, noise=0.1)
    t = np.arange(601.0)
    rise, fall = 1 / (1 + np.exp(-(t - 200) / 15)), 1 / (1 + np.exp(-(t - 420) / 15))
    S = np.ones((601, 5))
    S[:, [1, 3]] *= (1 + 6 * rise)[:, None]
    S[:, [0, 2, 4]] *= (1 - 0.9 * fall)[:, None]
    c = np.arange(0, 601, 10)
    curves = {"train_acc": (c, 0.05 + 0.95 / (1 + np.exp(-(c - 20) / 4.0))),
              "val_acc": (c, 0.05 + 0.95 / (1 + np.exp(-(c - 300) / 10.0)))}
    traj = P.Trajectory(X, np.arange(len(X)) * 30, steps=t.astype(int), signals=S, gradients=-G[:-1],
                        curves=curves, meta={"task": "modular_addition"}).with_train(train)
    return traj


@pytest.mark.filterwarnings("ignore::fitting.FitQualityWarning")
def test_windows_stages_fits_each_stage_with_its_verdict_in_python_and_on_the_command_line(tmp_path, capsys):
    import json

    from fitting import stages
    from particles.cli import main

    traj = _staged_run()
    run = stages(traj)
    fit = ForceLawFit(START, ranges=(), n_bootstrap=0, null=3, windows="stages").fit(traj)
    assert [w["start"] for w in fit.windows_] + [fit.windows_[-1]["stop"]] == run.edges
    assert [w["name"] for w in fit.windows_] == run.window_names
    assert len(run.window_names) >= 3 and all(w["verdict"] for w in fit.windows_)
    path = traj.save(tmp_path / "run.npz")
    code = main(["force-fit", str(path), "--law", "builtin", "--windows", "stages", "--bootstrap", "0", "--null",
                 "3", "--out", str(tmp_path / "ff"), "--quiet"])
    assert code == 0
    report = json.loads((tmp_path / "ff" / "force_fit.json").read_text())
    assert [w["name"] for w in report["windows"]] == run.window_names
    assert [w["start"] for w in report["windows"]] == run.edges[:-1]


def test_windows_stages_needs_a_run_and_stages_that_can_be_placed(tmp_path, capsys):
    from particles.cli import main

    X, G, train = law_run(TRUE, p=11, d=2, seed=0, steps=600, every=30)
    with pytest.raises(ValueError, match="windows='stages' places the stages of one recorded run"):
        ForceLawFit(START, windows="stages").fit(X, G, train=train)
    traj = P.Trajectory(X, np.arange(len(X)) * 30, gradients=-G[:-1], meta={"task": "modular_addition"})
    traj = traj.with_train(train)
    path = traj.save(tmp_path / "run.npz")
    code = main(["force-fit", str(path), "--windows", "stages", "--out", str(tmp_path / "ff")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "stage" in err


def test_stage_windows_are_fitted_to_the_force_snapshots(monkeypatch):
    """Stage edges lie on the signals' steps; a window holding no force snapshot is merged into the next (the last
    into the one before), and a fit of part of the run clips them (a review found the whole fit refused)."""
    import fitting.signals as signals
    from fitting.forcefit.windows import StageWindows

    monkeypatch.setattr(signals, "stage_windows", lambda traj: ([0, 148, 951, 1381, 1991],
                                                                ["memorisation", "circuit formation", "cleanup",
                                                                 "after cleanup"]))
    w = StageWindows(None, np.array([0, 500, 1500]), 1990)
    assert w.edges == [0, 148, 951, 1991] and w.window_names[-1] == "cleanup + after cleanup"
    w = StageWindows(None, np.array([200, 500, 1000]), 1200)
    assert w.edges == [200, 951, 1201] and w.window_names == ["circuit formation", "cleanup"]
    w = StageWindows(None, np.array([0, 100, 500, 1000, 1500]), 1990)
    assert w.edges == [0, 148, 951, 1381, 1991]
