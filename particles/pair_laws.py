"""The built-in law as custom energies (:class:`~particles.PairEnergy`):
:func:`gaussian_clustering` and :func:`cosine_alignment`, built from the one
definition of its terms (:mod:`particles.kernels.law`). The benchmark and
the tests compare them with the built-in kernels; the force-law fit builds
one when the two alignment halves get different strengths."""

from __future__ import annotations

import functools
import types as pytypes
from typing import Callable, NamedTuple

import numba
import numpy as np

from .kernels.fastmath import FAST
from .kernels.law import alignment_other, alignment_same, attraction, numpy_form, repulsion
from .pair_energy import PairEnergy, PairTerm
from .params import ForceParams

__all__ = ["gaussian_clustering", "cosine_alignment", "GaussianParams", "AlignmentParams"]


@functools.lru_cache(maxsize=None)
def exact_form(function: Callable) -> Callable:
    """A term function of :mod:`particles.kernels.law` compiled with
    ``np.exp`` in place of the vectorised exp (the exact switch)."""
    py = function.py_func
    namespace = dict(py.__globals__)
    namespace["exp_nonpositive"] = np.exp
    return numba.njit(fastmath=FAST)(pytypes.FunctionType(py.__code__, namespace, py.__name__))


@functools.lru_cache(maxsize=None)
def _term_parts(function: Callable, by_lam: bool = False) -> tuple[Callable, Callable]:
    """A term function's value and derivative as a PairTerm takes them
    ((q, params) -> float), times ``params.lam`` with ``by_lam``; the NumPy
    path runs the definition's NumPy form. Made once per function, so that
    every law built from it shares its compiled kernels."""
    numpy_fn = numpy_form(function)
    if not by_lam:
        def value(q, prm):
            return function(q, prm)[0]

        def derivative(q, prm):
            return function(q, prm)[1]

        value.numpy_form = lambda q, prm: numpy_fn(q, prm)[0] + 0.0 * q
        derivative.numpy_form = lambda q, prm: numpy_fn(q, prm)[1] + 0.0 * q
    else:
        def value(q, prm):
            return prm.lam * function(q, prm)[0]

        def derivative(q, prm):
            return prm.lam * function(q, prm)[1]

        value.numpy_form = lambda q, prm: prm.lam * numpy_fn(q, prm)[0] + 0.0 * q
        derivative.numpy_form = lambda q, prm: prm.lam * numpy_fn(q, prm)[1] + 0.0 * q
    return value, derivative


class GaussianParams(NamedTuple):
    k_a: float
    sig_a: float
    k_r: float
    sig_r: float


def gaussian_clustering(k_a: float = 3.0, sig_a: float = 3.0, k_r: float = 1.0, sig_r: float = 1.0,
                        wd: float = 0.1, *, fast: bool = True) -> PairEnergy:
    """The built-in clustering law (``ForceParams(k_a, sig_a, k_r, sig_r,
    wd=wd)``, lam = 0) as a custom energy: -k_a exp(-r^2 / 2 sig_a^2) within
    a class, k_r exp(-r^2 / 2 sig_r^2) between classes.

    ``fast=True`` runs the terms' definitions as the built-in kernels do
    (the repulsion with the vectorised exp); ``fast=False`` compiles them
    with ``np.exp`` (the exact switch). Both use the derivatives the
    definitions give.
    """
    checked = ForceParams(k_a=k_a, sig_a=sig_a, k_r=k_r, sig_r=sig_r, wd=wd)  # the same ranges and messages
    if not isinstance(fast, bool):
        raise TypeError(f"fast must be a bool, got {type(fast).__name__}")
    params = GaussianParams(checked.k_a, checked.sig_a, checked.k_r, checked.sig_r)
    form = (lambda f: f) if fast else exact_form
    same, same_derivative = _term_parts(form(attraction))
    other, other_derivative = _term_parts(form(repulsion))
    term = PairTerm(same=same, other=other, params=params, same_derivative=same_derivative,
                    other_derivative=other_derivative)
    return PairEnergy(distance=term, wd=wd, name="gaussian_clustering")


class AlignmentParams(NamedTuple):
    lam: float
    sig_t: float
    axial: float  # 1.0: g(c) = c^2; 0.0: g(c) = c


def cosine_alignment(lam: float = 1.0, sig_t: float = 0.2, eps: float = 1.0, *, axial: bool = False,
                     fast: bool = True) -> PairEnergy:
    """The built-in alignment energy (gradient form) as a custom energy:
    lam times -g(c) within a class and exp(-(1 - g(c)) / sig_t^2) between
    classes, g(c) = c (or c^2 with ``axial=True``). Add it to
    :func:`gaussian_clustering` for the full law.

    ``fast=True`` runs the terms' definitions as the built-in kernels do;
    ``fast=False`` compiles them with ``np.exp`` (the exact switch).
    """
    checked = ForceParams(lam=lam, sig_t=sig_t, eps=eps)  # the same ranges and messages
    for label, flag in (("axial", axial), ("fast", fast)):
        if not isinstance(flag, bool):
            raise TypeError(f"{label} must be a bool, got {type(flag).__name__}")
    params = AlignmentParams(checked.lam, checked.sig_t, 1.0 if axial else 0.0)
    form = (lambda f: f) if fast else exact_form
    same, same_derivative = _term_parts(form(alignment_same), by_lam=True)
    other, other_derivative = _term_parts(form(alignment_other), by_lam=True)
    term = PairTerm(same=same, other=other, variable="cosine", params=params, same_derivative=same_derivative,
                    other_derivative=other_derivative)
    return PairEnergy(cosine=term, eps=eps, name="cosine_alignment")
