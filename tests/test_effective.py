"""Effective-loss dynamics (particles.effective) and the effective theory."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import effective_theory as et
from particles import PairDataset, addition, modular_addition
from particles.effective import (EffectiveLoss, effective_loss_gradient,
                                 effective_loss_reference, simulate_effective, spread, loss_and_grad)
from particles.parallelograms import constraint_matrix, label_constraints, parallelograms
from particles.testing import (check_effective_centroid_conserved, check_effective_loss_invariance,
                               check_effective_spread_conserved)
from particles.testing import strategies as pst

PROPS = settings(deadline=None, max_examples=30)


def test_addition_p10_reference_values():
    ds = addition(10)
    assert len(ds) == 55
    assert len(parallelograms(ds)) == 70
    assert et.degeneracy(ds) == 2
    np.testing.assert_allclose(et.laplacian_spectrum(ds)[:5], [0, 0, 30, 31.27, 36.55], atol=5e-3)
    assert et.degeneracy(modular_addition(10)) == 1
    assert et.degeneracy(modular_addition(17)) == 1


def test_constraint_rows():
    A = constraint_matrix(addition(6))
    assert np.all(np.asarray(A.sum(axis=1)).ravel() == 0)
    dense = A.toarray()
    assert set(np.unique(dense)) <= {-2, -1, 0, 1, 2}
    assert np.all(dense @ np.arange(6) == 0)  # the linear mode E_k = k satisfies addition


def test_label_constraints():
    A = label_constraints(np.array([0, 1, 0, 1, 1]))
    assert A.shape == (4, 5)
    assert np.all(np.asarray(A.sum(axis=1)).ravel() == 0)


@PROPS
@given(st.integers(0, 2**31 - 1), st.integers(3, 9))
def test_nullity_invariant_under_row_permutation_and_duplication(seed, p):
    rng = np.random.default_rng(seed)
    train, _ = addition(p).split(rng.uniform(0.3, 1.0), rng)
    A = constraint_matrix(train)
    assert np.all(np.asarray(A.sum(axis=1)).ravel() == 0)  # rows sum to zero
    n = et.nullity(A)
    if A.shape[0] == 0:
        assert n == p
        return
    perm = rng.permutation(A.shape[0])
    assert et.nullity(A[perm]) == n
    dup = sp.vstack([A, A[rng.integers(0, A.shape[0], 5)]])
    assert et.nullity(dup) == n
    assert n == p - np.linalg.matrix_rank(A.toarray())  # small: floating rank agrees


def test_nullity_exact_on_large_matrix():
    # p = 40 needs several primes for the proof; the structure is known: n0 = 2
    assert et.nullity(constraint_matrix(addition(40))) == 2
    assert et.rank(np.array([[2, 4], [1, 2]])) == 1
    with pytest.raises(ValueError, match="integers"):
        et.nullity(np.array([[0.5, 1.0]]))


def test_degeneracy_without_parallelograms_is_p():
    ds = addition(5)
    train = ds.subset(np.array([0]))
    assert et.degeneracy(train) == 5


@PROPS
@given(st.integers(0, 2**31 - 1), st.sampled_from(["centred", "uncentred"]))
def test_kernel_matches_reference(seed, normalization):
    rng = np.random.default_rng(seed)
    train, _ = addition(8).split(0.7, rng)
    if len(parallelograms(train)) == 0:
        return
    E = rng.standard_normal((8, rng.integers(1, 4)))
    l1, g1 = effective_loss_gradient(E, train, normalization)
    l2, g2 = effective_loss_reference(E, constraint_matrix(train), normalization)
    assert math.isclose(l1, l2, rel_tol=1e-10, abs_tol=1e-14)
    np.testing.assert_allclose(g1, g2, rtol=1e-10, atol=1e-13)
    g3 = np.empty_like(E)
    loss = EffectiveLoss.from_pairs(train)
    l0, z = loss_and_grad.py_func(E, loss.laplacian, float(loss.n_constraints), normalization == "centred", g3)
    np.testing.assert_allclose(g3, g1, rtol=1e-10, atol=1e-13)


@PROPS
@given(pst.effective_systems(), st.floats(-5, 5), st.floats(0.1, 10))
def test_effective_loss_translation_and_scale_invariant(system, shift, scale):
    check_effective_loss_invariance(*system, shift=shift, scale=scale)


@PROPS
@given(pst.effective_systems())
def test_centroid_conserved_exactly_by_centred_euler(system):
    check_effective_centroid_conserved(*system)


@settings(deadline=None, max_examples=15)
@given(st.integers(0, 2**31 - 1))
def test_uncentred_normalization_moves_C_unless_zero(seed):
    rng = np.random.default_rng(seed)
    E0 = rng.standard_normal((8, 2)) + 2.0  # C != 0
    traj = simulate_effective(E0, addition(8), steps=50, dt=0.2, normalization="uncentred", record_every=10)
    assert np.max(np.abs(traj.scalars["C0"] - traj.scalars["C0"][0])) > 1e-6
    E0 = E0 - E0.mean(axis=0)  # C = 0 is a fixed point
    traj = simulate_effective(E0, addition(8), steps=50, dt=0.2, normalization="uncentred", record_every=10)
    assert np.max(np.abs(traj.scalars["C0"])) < 1e-12


@settings(deadline=None, max_examples=15)
@given(pst.effective_systems())
def test_Z_drift_is_second_order_and_projection_is_exact(system):
    check_effective_spread_conserved(*system)


def test_unique_structure_reaches_rqi_and_degenerate_does_not():
    rng = np.random.default_rng(1)
    ds = addition(10)
    E0 = rng.uniform(-0.5, 0.5, (10, 2))
    full = simulate_effective(E0, ds, steps=2000, dt=0.5)
    assert et.rqi(full.final, ds) > 0.95
    # a training set with n0 > 2 leaves free modes: no unique linear structure
    train = ds.subset(np.arange(0, 55, 3))
    assert et.degeneracy(train) > 2
    part = simulate_effective(E0, train, steps=2000, dt=0.5)
    assert et.rqi(part.final, ds) < 0.95


def test_predicted_accuracy_and_rqi():
    ds = addition(10)
    E = np.c_[np.arange(10.0), np.zeros(10)]  # the perfect linear structure
    assert et.rqi(E, ds) == 1.0
    train, _ = ds.split(0.6, seed=0)
    acc = et.predicted_accuracy(E, train, ds)
    assert acc == et.predicted_accuracy(None, train, ds, ideal=True)
    assert len(train) / len(ds) < acc <= 1.0
    noise = np.random.default_rng(0).standard_normal((10, 2))
    assert et.rqi(noise, ds) < 0.2


@pytest.mark.parametrize("t_train, t_val, phase", [
    (100, 500, "comprehension"), (100, 5000, "grokking"), (100, None, "memorization"), (None, None, "confusion"),
    (100, 2e5, "memorization"), (None, 300, "comprehension"),
])
def test_classify_phase(t_train, t_val, phase):
    assert et.classify_phase(t_train, t_val) == phase


def test_classify_phase_validation_without_training():
    assert et.classify_phase(None, 300, val_without_train="confusion") == "confusion"
    assert et.classify_phase(100, 300, val_without_train="confusion") == "comprehension"
    with pytest.raises(ValueError, match="val_without_train"):
        et.classify_phase(None, 300, val_without_train="grokking")


def test_probability_curve_p10():
    r = et.unique_structure_probability(10, samples=2000, seed=0, bootstrap=50)
    assert r.sizes.shape == (55,) and r.probability[0] == 0 and r.probability[-1] == 1
    assert np.all(np.diff(r.probability) >= 0)  # prefixes: adding pairs never raises n0
    assert np.all(r.low <= r.probability) and np.all(r.probability <= r.high)
    assert 0.35 < r.critical_fraction < 0.45
    lo, hi = r.critical_fraction_interval
    assert lo <= r.critical_fraction <= hi


def test_probability_matches_direct_degeneracy():
    rng = np.random.default_rng(3)
    ds = addition(7)
    size = 12
    direct = np.mean([et.degeneracy(ds.subset(rng.choice(len(ds), size, replace=False))) == 2
                      for _ in range(600)])
    mc = et.unique_structure_probability(7, sizes=[size], samples=4000, seed=4, bootstrap=0).probability[0]
    assert abs(direct - mc) < 0.08


def test_grokking_rate_and_curve():
    assert et.grokking_rate(addition(10)) == pytest.approx(2 / 70 * 30)
    assert et.predicted_steps(addition(10), 0.1) == pytest.approx(1 / (0.1 * 2 / 70 * 30))
    assert et.grokking_rate(addition(10).subset(np.arange(5))) == 0.0
    curve = et.grokking_rate_curve(8, [0.3, 1.0], samples=5, seed=0)
    assert curve.rates.shape == (2, 5) and np.all(curve.rates[1] > 0)


def test_sparse_spectrum_path(monkeypatch):
    import effective_theory.linalg as lin
    ds = addition(12)
    dense = et.laplacian_spectrum(ds, 4)
    monkeypatch.setattr(lin, "DENSE_MAX_P", 5)
    np.testing.assert_allclose(et.laplacian_spectrum(ds, 4), dense, atol=1e-8)


def test_classification_variant_collapses_classes():
    labels = np.repeat(np.arange(3), 5)
    rng = np.random.default_rng(0)
    E0 = rng.standard_normal((15, 2))
    traj = simulate_effective(E0, EffectiveLoss.classification(labels), steps=3000, dt=0.5, project=True)
    E = traj.final
    within = sum(np.sum((E[labels == c] - E[labels == c].mean(axis=0)) ** 2) for c in range(3))
    assert within / spread(E) < 1e-3
    np.testing.assert_allclose(traj.scalars["Z"], spread(E0), rtol=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda: simulate_effective(np.zeros((10, 2)), addition(10), steps=5, dt=0.1), "Z = 0"),
    (lambda: simulate_effective(np.full((10, 2), np.nan), addition(10), steps=5, dt=0.1), "non-finite"),
    (lambda: simulate_effective(np.ones((9, 2)), addition(10), steps=5, dt=0.1), "p = 10 rows"),
    (lambda: simulate_effective(np.eye(10, 2), addition(10), steps=5, dt=-1), "dt must be > 0"),
    (lambda: simulate_effective(np.eye(10, 2), addition(10), steps=5, dt=0.1, normalization="x"), "normalization"),
    (lambda: EffectiveLoss.from_pairs(addition(5).subset(np.array([], dtype=int))), "no pairs"),
    (lambda: PairDataset(np.zeros((3, 2), int), np.zeros(2, int), 3), "labels must have shape"),
    (lambda: et.rqi(np.eye(10, 2), addition(10), delta2=0), "delta2 must be a finite number > 0"),
    (lambda: et.rqi(np.full((10, 2), np.inf), addition(10)), "E must be finite"),
    (lambda: et.degeneracy(addition(5).subset(np.array([], dtype=int))), "empty"),
    (lambda: et.unique_structure_probability(2), "p must be"),
    (lambda: et.classify_phase(10, 20, budget=-1), "budget"),
])
def test_bad_inputs(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_rqi_series_matches_rqi():
    rng = np.random.default_rng(2)
    stack = rng.standard_normal((4, 10, 2))
    stack[1] = np.c_[np.arange(10.0), np.zeros(10)]
    ds = addition(10)
    np.testing.assert_allclose(et.rqi_series(stack, ds), [et.rqi(E, ds) for E in stack])


def test_cli_theory(tmp_path, capsys):
    from particles.cli import main
    assert main(["theory", "critical-fraction", "--p", "6", "--samples", "200", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "critical fraction" in out
    assert (tmp_path / "critical_fraction.png").stat().st_size > 0
    assert main(["theory", "grokking-rate", "--p", "6", "--samples", "3", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "grokking_rate.png").stat().st_size > 0
    assert main(["theory", "digits", "--steps", "20", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "digits_collapse.png").stat().st_size > 0
    assert main(["theory", "steps", "--p", "6", "--sets", "1", "--out", str(tmp_path)]) == 0
    assert "measured / predicted" in capsys.readouterr().out


def test_digits_collapse_keeps_Z():
    from effective_theory.experiments import digits_collapse
    result = digits_collapse(steps=60, seed=1, record_every=10)
    assert result.within_share[-1] < 1e-2 * result.within_share[0]
    z = result.trajectory.scalars["Z"]
    np.testing.assert_allclose(z, z[0], rtol=1e-12)


@pytest.mark.parametrize("successes, n, confidence, err", [
    (3, -1, 0.95, ValueError), (3, 0, 0.95, ValueError), (3, 2.5, 0.95, TypeError), (3, 10, 1.5, ValueError),
    (11, 10, 0.95, ValueError), (-1, 10, 0.95, ValueError), (float("nan"), 10, 0.95, ValueError),
    (np.array([1 + 1j]), 10, 0.95, TypeError)])
def test_wilson_interval_checked(successes, n, confidence, err):
    from effective_theory.montecarlo import wilson_interval
    with pytest.raises(err, match="successes|n must|confidence"):
        wilson_interval(successes, n, confidence)


def test_progress_callbacks_do_not_change_results():
    calls = []
    a = et.unique_structure_probability(6, samples=120, seed=3, bootstrap=20)
    b = et.unique_structure_probability(6, samples=120, seed=3, bootstrap=20, callback=lambda d, t: calls.append(d))
    assert np.array_equal(a.probability, b.probability) and a.critical_fraction == b.critical_fraction
    assert calls[-1] == 120 and calls == sorted(calls)
    fr = np.array([0.5, 1.0])
    c = et.grokking_rate_curve(6, fr, samples=5, seed=1)
    d = et.grokking_rate_curve(6, fr, samples=5, seed=1, callback=lambda d, t: calls.append((d, t)))
    assert np.array_equal(c.rates, d.rates) and calls[-1] == (10, 10)
    with pytest.raises(TypeError, match="callback must be callable"):
        et.grokking_rate_curve(6, fr, samples=5, callback=3)
