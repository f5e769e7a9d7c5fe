"""Effective-loss dynamics (particles.effective): the normalized effective
loss, its gradient against the reference, its invariants and flow. (The
effective theory built on it is tested in tests/effective_theory/.)"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import effective_theory as et
from particles import PairDataset, addition
from particles.effective import (EffectiveLoss, effective_loss_gradient,
                                 effective_loss_reference, simulate_effective, spread, loss_and_grad)
from particles.parallelograms import constraint_matrix, parallelograms
from particles.testing import (check_effective_centroid_conserved, check_effective_loss_invariance,
                               check_effective_spread_conserved)
from particles.testing import strategies as pst

PROPS = settings(deadline=None, max_examples=30)


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


def test_centroid_sum_refuses_an_embedding_without_tokens():
    from particles import centroid_sum
    with pytest.raises(ValueError, match=r"E must have shape \(p, d\) with at least 1 token \(row\), got \(0, 2\)"):
        centroid_sum(np.zeros((0, 2)))
