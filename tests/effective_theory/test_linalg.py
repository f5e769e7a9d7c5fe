"""Exact degeneracy of parallelogram constraints, spectra and grokking rates
(effective_theory.linalg)."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import effective_theory as et
from particles import addition, modular_addition
from particles.parallelograms import constraint_matrix, parallelograms

PROPS = settings(deadline=None, max_examples=30)


def test_addition_p10_reference_values():
    ds = addition(10)
    assert len(ds) == 55
    assert len(parallelograms(ds)) == 70
    assert et.degeneracy(ds) == 2
    np.testing.assert_allclose(et.laplacian_spectrum(ds)[:5], [0, 0, 30, 31.27, 36.55], atol=5e-3)
    assert et.degeneracy(modular_addition(10)) == 1
    assert et.degeneracy(modular_addition(17)) == 1


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
