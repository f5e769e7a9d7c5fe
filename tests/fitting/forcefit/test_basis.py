"""The unit term forces of the force fit (fitting.forcefit.basis.Basis):
term-major columns equal to the term forces, and a cache that serves a
finite-difference Jacobian's base point."""

from __future__ import annotations

import numpy as np
import pytest

import fitting.forcefit.basis as basis_module
import particles
from fitting.forcefit.basis import Basis, resolve_law
from fitting.forcefit.data import ForceRun
from particles.law_terms import unit_term_forces, with_ranges

RANGES = ("sig_a", "sig_r", "sig_t", "eps")
TERMS = ("attraction", "repulsion", "alignment_same", "alignment_other", "wd")


def make_basis(seed=0, T=3, d=3):
    train = particles.modular_addition(7).split(0.6, seed=np.random.default_rng(seed))[0]
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, 7, d))
    run = ForceRun(X, rng.normal(size=X.shape), train, np.arange(T))
    groups = {"clustering": ("attraction", "repulsion"), "alignment_same": ("alignment_same",),
              "alignment_other": ("alignment_other",), "wd": ("wd",)}
    return Basis(resolve_law("builtin"), groups, RANGES, [run]), run


@pytest.mark.parametrize("seed", [0, 1])
def test_columns_are_the_groups_term_forces_term_major(seed):
    basis, run = make_basis(seed)
    theta = np.array([1.3, 0.7, 0.4, 0.9])
    forces = unit_term_forces(with_ranges(basis.law, RANGES, theta), run.X, run.train, TERMS)
    expected = [forces[:, 0] + forces[:, 1], forces[:, 2], forces[:, 3], forces[:, 4]]
    for rows in (None, np.array([0, 2])):
        cols = basis.columns(theta, 0, rows)
        for _ in range(2):  # computed, then served by the cache: the same numbers
            assert cols.shape == (4, run.X.shape[0] if rows is None else 2) + run.X.shape[1:]
            assert cols.flags.c_contiguous
            for k, e in enumerate(expected):
                np.testing.assert_allclose(cols[k], e if rows is None else e[rows], rtol=1e-12, atol=1e-14)
            cols = basis.columns(theta, 0, rows)


def test_a_finite_difference_jacobian_computes_only_the_terms_each_range_moves(monkeypatch):
    """Moving one range at a time from a base point computes only the terms
    of that range (the base values of the others are kept); back at the
    base point, only a term that two of the steps moved is computed again
    (its two steps took the places it keeps)."""
    basis, _ = make_basis()
    computed = []
    real = basis_module.unit_term_forces

    def counting(law, X, train, terms, **kwargs):
        computed.append(tuple(terms))
        return real(law, X, train, terms, **kwargs)

    monkeypatch.setattr(basis_module, "unit_term_forces", counting)
    theta = np.array([1.3, 0.7, 0.4, 0.9])
    basis.columns(theta, 0)
    assert computed == [TERMS]
    for j, name in enumerate(RANGES):
        computed.clear()
        step = theta.copy()
        step[j] *= 1.0 + 1e-5
        basis.columns(step, 0)
        moved = tuple(t for t in TERMS if name in basis.deps[t])
        assert computed == [moved], name
    computed.clear()
    basis.columns(theta, 0)
    twice = tuple(t for t in TERMS if len(basis.deps[t]) > 1)
    assert twice == ("alignment_other",)  # sig_t and eps
    assert computed == [twice]
    assert basis.evaluations == 2 + len(RANGES)


@pytest.mark.slow
def test_the_path_taken_names_both_paths_when_the_runs_took_different_ones():
    """``"auto"`` decides per snapshot set: a run near the origin takes the
    Gram path at d = 8, one far from it (its distances would cancel) the
    direct path, and the basis reports both."""
    train = particles.modular_addition(7).split(0.6, seed=np.random.default_rng(0))[0]
    rng = np.random.default_rng(0)
    near = rng.normal(size=(2, 7, 8))
    far = near + 1e4
    runs = [ForceRun(X, rng.normal(size=X.shape), train, np.arange(2)) for X in (near, far)]
    groups = {"clustering": ("attraction", "repulsion"), "wd": ("wd",)}
    basis = Basis(resolve_law("builtin"), groups, RANGES, runs)
    theta = np.array([1.3, 0.7, 0.4, 0.9])
    basis.columns(theta, 0)
    assert basis.path_taken == "gram"
    basis.columns(theta, 1)
    assert basis.path_taken == "direct+gram"
    basis.columns(theta, 0)
    assert basis.path_taken == "direct+gram"
