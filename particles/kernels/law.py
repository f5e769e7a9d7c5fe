"""The built-in force law, defined once.

Each of the law's four pair terms is one scalar function of its variable q,
``(q, prm) -> (phi(q), d phi / dq)``, reading its parameters from the kernel
record (:class:`~.kernel_params.KernelParams`), the way a custom law's terms
are written (:class:`particles.PairTerm`). q is r^2 = |s_u - s_v|^2 for the
distance terms and the softened cosine c = U_u . U_v for the cosine terms
(docs/particles.md):

- ``attraction``: -k_a exp(-r^2 / 2 sig_a^2), pair sums of one class;
- ``repulsion``: k_r exp(-r^2 / 2 sig_r^2), different classes;
- ``alignment_same``: -g(c), one class;
- ``alignment_other``: exp(-(1 - g(c)) / sig_t^2), different classes;

with g(c) = c, or c^2 in the axial form; the alignment's weight lam scales
both alignment terms outside them (the cosine forces are summed per pair sum
first, :func:`.alignment.alignment_forces`).

:data:`TERMS` says of each term what the rest of the package asks: its name,
its variable and class relation (its place in the kernels' slots,
:mod:`.slots`), the record field that is its strength, its range fields, and
the fast paths it admits (:class:`Term`'s ``gaussian``). Everything else is
derived from these four functions:

- the compiled kernels call them through the force-law slots: the direct
  pair loops (:mod:`.clustering`, :mod:`.alignment`), the per-term forces
  (:mod:`.terms`), the Gram path (:mod:`.gram`, :mod:`.gram_terms`) and the
  cell list (:mod:`.cells`);
- :func:`numpy_form` runs the same function's code on NumPy arrays with the
  exact exp in place of the vectorised one: the NumPy references
  (:func:`.clustering.clustering_reference`,
  :func:`.alignment.alignment_reference`, :mod:`particles.reference`) call
  it, so they are the exact switch of the same definition;
- :mod:`particles.pair_laws` builds the built-in law as a custom energy from
  them.

The law as the paper writes it is checked against these functions in
``tests/particles/kernels/test_law.py`` (values from the formulas above,
derivatives against finite differences), not in a second copy here.
"""

from __future__ import annotations

import types as pytypes
from typing import Callable, NamedTuple

import numpy as np
from numba import njit

from .fastmath import FAST, exp_nonpositive, exp_nonpositive_reference

__all__ = ["attraction", "repulsion", "alignment_same", "alignment_other", "Term", "TERMS", "PAIR_TERMS",
           "TERM_AT", "numpy_form", "term_values"]


@njit(cache=True, fastmath=FAST)
def attraction(r2, prm):
    """-k_a exp(-r^2 / 2 sig_a^2) and its derivative in r^2."""
    inv_2sa2 = 0.5 / (prm.sig_a * prm.sig_a)
    att = prm.k_a * np.exp(-r2 * inv_2sa2)
    return -att, inv_2sa2 * att


@njit(cache=True, fastmath=FAST)
def repulsion(r2, prm):
    """k_r exp(-r^2 / 2 sig_r^2) and its derivative in r^2."""
    inv_2sr2 = 0.5 / (prm.sig_r * prm.sig_r)
    ev = exp_nonpositive(-r2 * inv_2sr2) * prm.k_r
    return ev, -(inv_2sr2 * ev)


@njit(cache=True, fastmath=FAST)
def alignment_same(c, prm):
    """-g(c), with g = c (cosine form) or c^2 (axial form), and its derivative.
    The form is a select, not a branch, so that the loops calling it
    vectorise."""
    g = c * (c if prm.axial else 1.0)
    dg = (2.0 * c) if prm.axial else 1.0
    return -g, -dg


@njit(cache=True, fastmath=FAST)
def alignment_other(c, prm):
    """exp(-(1 - g(c)) / sig_t^2) and its derivative (selects, as above)."""
    inv_st2 = 1.0 / (prm.sig_t * prm.sig_t)
    g = c * (c if prm.axial else 1.0)
    dg = (2.0 * c) if prm.axial else 1.0
    hv = exp_nonpositive((g - 1.0) * inv_st2)
    return hv, hv * dg * inv_st2


class Term(NamedTuple):
    """One pair term of the built-in law.

    Attributes
    ----------
    name : str
        Its name everywhere (ForceParams' terms, the force-law fit, the
        explorer, the docs).
    variable : {"distance", "cosine"}
        What q is.
    relation : {"same", "other"}
        Pairs of one class, or of different classes.
    strength : str
        The record field that scales it (1 in the unit record the force-law
        fit's columns are computed with).
    ranges : tuple of str
        The record fields that set its range.
    function : numba dispatcher
        ``(q, prm) -> (phi, d phi / dq)``.
    gaussian : bool
        phi = strength exp(-q / 2 range^2) (one range field): the Gram path
        factors it over token-pair products
        (:func:`.clustering.repulsion_factors`) and the cell list cuts it off
        where it falls below a tolerance (:mod:`.cells`). A capability the
        term declares; the kernels use it for the ``repulsion`` place.
    """

    name: str
    variable: str
    relation: str
    strength: str
    ranges: tuple
    function: Callable
    gaussian: bool = False


#: the built-in law's pair terms, in the order of the kernels' outputs
TERMS = (
    Term("attraction", "distance", "same", "k_a", ("sig_a",), attraction),
    Term("repulsion", "distance", "other", "k_r", ("sig_r",), repulsion, gaussian=True),
    Term("alignment_same", "cosine", "same", "lam", (), alignment_same),
    Term("alignment_other", "cosine", "other", "lam", ("sig_t",), alignment_other),
)
#: the pair terms' names, in the order of the kernels' outputs
PAIR_TERMS = tuple(t.name for t in TERMS)
#: (variable, class relation) -> the pair term in that place: the built-in law's names for the four places,
#: whatever a custom law puts there (its same-class distance term is its ``attraction``, of either sign)
TERM_AT = {(t.variable, t.relation): t.name for t in TERMS}


def numpy_form(function: Callable) -> Callable:
    """The Python code of a compiled term function, run by NumPy: the same
    arithmetic on arrays of q, with the exact exp
    (:func:`.fastmath.exp_nonpositive_reference`, 0 below exp's floor as the
    compiled one) in place of the vectorised one."""
    py = function.py_func
    namespace = dict(py.__globals__)
    namespace["exp_nonpositive"] = exp_nonpositive_reference
    return pytypes.FunctionType(py.__code__, namespace, py.__name__, py.__defaults__, py.__closure__)


def term_values(function: Callable, q: np.ndarray, prm) -> tuple[np.ndarray, np.ndarray]:
    """phi(q) and d phi / dq of a term function on an array of q (float64
    arrays of q's shape), through :func:`numpy_form`."""
    q = np.asarray(q, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        value, derivative = numpy_form(function)(q, prm)
    return np.broadcast_to(np.asarray(value, dtype=np.float64), q.shape).copy(), \
        np.broadcast_to(np.asarray(derivative, dtype=np.float64), q.shape).copy()
