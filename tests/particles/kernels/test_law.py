"""The one definition of the built-in law (particles.kernels.law): each term
against the formula of docs/particles.md written here (the independent
statement every derived form rests on), its derivative against finite
differences, its NumPy form against its compiled form, and what TERMS
declares against what the kernels and the laws use."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from particles import ForceParams
from particles.kernels import law
from particles.kernels.kernel_params import KernelParams


def record(axial: bool, rng: np.random.Generator) -> KernelParams:
    return KernelParams(rng.uniform(0.1, 3), rng.uniform(0.2, 3), rng.uniform(0.1, 3), rng.uniform(0.2, 3),
                        rng.uniform(0.1, 3), rng.uniform(0.1, 1), 1.0, 0.1, False, axial)


def paper(name: str, q: np.ndarray, prm: KernelParams) -> np.ndarray:
    """docs/particles.md's terms, written out."""
    g = q * q if prm.axial else q
    if name == "attraction":
        return -prm.k_a * np.exp(-q / (2 * prm.sig_a ** 2))
    if name == "repulsion":
        return prm.k_r * np.exp(-q / (2 * prm.sig_r ** 2))
    return -g if name == "alignment_same" else np.exp(-(1 - g) / prm.sig_t ** 2)


def variable(term: law.Term, rng: np.random.Generator, size: int = 200) -> np.ndarray:
    return rng.uniform(0, 20, size) if term.variable == "distance" else rng.uniform(-1, 1, size)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), axial=st.booleans())
def test_each_term_is_the_papers_formula_and_its_derivative(seed, axial):
    rng = np.random.default_rng(seed)
    prm = record(axial, rng)
    for term in law.TERMS:
        q = variable(term, rng)
        value, derivative = law.term_values(term.function, q, prm)
        np.testing.assert_allclose(value, paper(term.name, q, prm), rtol=1e-13, atol=1e-300, err_msg=term.name)
        h = 1e-6
        numeric = (paper(term.name, q + h, prm) - paper(term.name, q - h, prm)) / (2 * h)
        np.testing.assert_allclose(derivative, numeric, rtol=1e-6, atol=1e-8, err_msg=term.name)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), axial=st.booleans())
def test_the_compiled_form_is_the_numpy_form_to_its_exp(seed, axial):
    rng = np.random.default_rng(seed)
    prm = record(axial, rng)
    for term in law.TERMS:
        q = variable(term, rng, 50)
        value, derivative = law.term_values(term.function, q, prm)
        compiled = np.array([term.function(float(v), prm) for v in q])
        np.testing.assert_allclose(compiled[:, 0], value, rtol=1e-15 * 4, atol=1e-300, err_msg=term.name)
        np.testing.assert_allclose(compiled[:, 1], derivative, rtol=1e-15 * 4, atol=1e-300, err_msg=term.name)


def test_terms_declare_the_names_places_and_fields_the_rest_reads():
    assert law.PAIR_TERMS == ("attraction", "repulsion", "alignment_same", "alignment_other")
    assert ForceParams.pair_terms == law.PAIR_TERMS == ForceParams().term_names()[:4]
    assert set(law.TERM_AT) == {(v, r) for v in ("distance", "cosine") for r in ("same", "other")}
    fields = set(KernelParams._fields)
    for term in law.TERMS:
        assert {term.strength, *term.ranges} <= fields, term.name
    # the one term with the Gaussian capability sits where the Gram path and the cell list use it
    assert [t.name for t in law.TERMS if t.gaussian] == ["repulsion"]


@pytest.mark.slow  # compiles two custom laws' kernels (about 20 s from a fresh install)
@pytest.mark.parametrize("axial", [False, True])
def test_the_exact_switch_of_the_custom_form_runs_the_same_definitions(axial):
    """gaussian_clustering / cosine_alignment with fast=False: the same
    functions compiled with np.exp, to rounding of the built-in law."""
    from particles import cosine_alignment, energy_and_forces, gaussian_clustering, modular_addition

    rng = np.random.default_rng(1)
    train = modular_addition(11)
    x = rng.normal(size=(11, 3))
    builtin = ForceParams(k_a=2.0, sig_a=1.5, k_r=1.2, sig_r=0.8, wd=0.2, lam=0.7, sig_t=0.4, eps=0.5,
                          alignment_form="axial" if axial else "cosine")
    e0, f0 = energy_and_forces(x, train, builtin)
    for fast in (True, False):
        custom = gaussian_clustering(2.0, 1.5, 1.2, 0.8, 0.2, fast=fast) + cosine_alignment(0.7, 0.4, 0.5, axial=axial,
                                                                                           fast=fast)
        e1, f1 = energy_and_forces(x, train, custom)
        np.testing.assert_allclose(f1, f0, rtol=1e-12, atol=1e-13)
        assert abs(e1 - e0) <= 1e-12 * max(1.0, abs(e0))
