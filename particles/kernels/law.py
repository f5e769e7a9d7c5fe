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

:func:`check_terms` refuses a malformed definition when this module is
imported (a name used twice, a field the record lacks, two terms in one of
the kernels' four places, a function without its derivative, a parameter
read but declared neither strength nor range, a ``gaussian`` term that is
not one), with a ValueError or TypeError naming the term and
the field.

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
from .kernel_params import KernelParams

__all__ = ["attraction", "repulsion", "alignment_same", "alignment_other", "Term", "TERMS", "PAIR_TERMS",
           "TERM_AT", "VARIABLES", "RELATIONS", "GAUSSIAN_PLACE", "check_terms", "numpy_form", "term_values"]

#: what a term's q is (docs/particles.md)
VARIABLES = ("distance", "cosine")
#: which pairs a term acts between: one class, or different classes
RELATIONS = ("same", "other")
#: the one place whose term's ``gaussian`` capability the kernels use (the Gram path's factors,
#: :func:`.clustering.repulsion_factors`, and the cell list's cut-off, :mod:`.cells`)
GAUSSIAN_PLACE = ("distance", "other")


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


def numpy_form(function: Callable) -> Callable:
    """The Python code of a compiled term function, run by NumPy: the same
    arithmetic on arrays of q, with the exact exp
    (:func:`.fastmath.exp_nonpositive_reference`, 0 below exp's floor as the
    compiled one) in place of the vectorised one."""
    py = function.py_func
    namespace = dict(py.__globals__)
    namespace["exp_nonpositive"] = exp_nonpositive_reference
    return pytypes.FunctionType(py.__code__, namespace, py.__name__, py.__defaults__, py.__closure__)


#: the record the term functions are tried on when a law is built: every number field 1 (no decay), the
#: switches off; its float fields are the ones a term's strength and ranges may name
TRIAL_RECORD = KernelParams(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, False, False)
#: the q they are tried at (a distance r^2 and a cosine alike)
TRIAL_Q = 0.5


def check_terms(terms: tuple) -> None:
    """Refuse a malformed law definition, naming the term and its field.

    Applied to :data:`TERMS` when this module is imported, so a built-in
    term written wrongly fails at import, not inside compiled code.

    Parameters
    ----------
    terms : tuple of Term
        The law's pair terms.

    Raises
    ------
    TypeError
        ``terms`` is not a tuple of :class:`Term`; a term's ``name`` is not a
        str, its ``ranges`` not a tuple of str, its ``gaussian`` not a bool,
        or its ``function`` not a compiled function (a numba dispatcher
        with ``py_func``).
    ValueError
        A name used twice or empty; a ``variable`` not in :data:`VARIABLES`
        or a ``relation`` not in :data:`RELATIONS`; two terms in one place
        (variable, relation), which has one slot in the kernels; a
        ``strength`` or range field that is not a number field of
        :class:`~.kernel_params.KernelParams`, or a range field named twice
        or also the strength; a ``function`` that does not return the pair
        (phi, d phi / dq) of finite numbers on :data:`TRIAL_RECORD`, or
        whose derivative is not that of its value; a function reading a
        number field that is neither its strength nor a range, or a range it
        never reads; a ``gaussian`` term outside :data:`GAUSSIAN_PLACE`, or without exactly
        one range field, or whose values are not strength exp(-q / 2 range^2).
    """
    if not isinstance(terms, tuple) or not all(isinstance(t, Term) for t in terms):
        raise TypeError(f"terms must be a tuple of law.Term, got {terms!r}")
    numbers = [f for f, value in zip(KernelParams._fields, TRIAL_RECORD) if type(value) is float]
    seen: dict[str, Term] = {}
    places: dict[tuple, str] = {}
    for term in terms:
        if not isinstance(term.name, str) or not term.name:
            raise TypeError(f"a law term's name must be a non-empty str, got {term.name!r}")
        label = f"law term {term.name!r}"
        if term.name in seen:
            raise ValueError(f"{label}: name is used by two terms; every term's name must be unique (the names "
                             "are the law's term names everywhere: ForceParams, the force-law fit, the explorer)")
        seen[term.name] = term
        if term.variable not in VARIABLES:
            raise ValueError(f"{label}: variable must be one of {VARIABLES}, got {term.variable!r}")
        if term.relation not in RELATIONS:
            raise ValueError(f"{label}: relation must be one of {RELATIONS}, got {term.relation!r}")
        place = (term.variable, term.relation)
        if place in places:
            raise ValueError(f"{label}: variable={term.variable!r}, relation={term.relation!r} is the place of term "
                             f"{places[place]!r} already; the kernels have one slot per place (variable x relation), "
                             "so a place holds at most one term: write the two as one function")
        places[place] = term.name
        _check_fields(term, label, numbers)
        _check_function(term, label)
        _check_gaussian(term, label)
        _check_reads(term, label, numbers)


def _check_fields(term: Term, label: str, numbers: list[str]) -> None:
    """The strength and range fields: number fields of the record, each once."""
    if term.strength not in numbers:
        raise ValueError(f"{label}: strength must be a number field of KernelParams {tuple(numbers)}, "
                         f"got {term.strength!r}")
    if not isinstance(term.ranges, tuple) or not all(isinstance(r, str) for r in term.ranges):
        raise TypeError(f"{label}: ranges must be a tuple of KernelParams field names, got {term.ranges!r}")
    for field in term.ranges:
        if field not in numbers:
            raise ValueError(f"{label}: ranges names {field!r}, which is not a number field of KernelParams "
                             f"{tuple(numbers)}; add the field to the record (and to ForceParams)")
    if len(set(term.ranges)) != len(term.ranges) or term.strength in term.ranges:
        raise ValueError(f"{label}: ranges must name each field once and not the strength {term.strength!r}, "
                         f"got {term.ranges!r}")


def _check_function(term: Term, label: str) -> None:
    """The function: compiled, and (phi, d phi / dq) of finite numbers on the
    trial record, the derivative that of the value (a central difference)."""
    if not callable(getattr(term.function, "py_func", None)):
        raise TypeError(f"{label}: function must be a compiled function (@njit, with py_func) "
                        f"(q, prm) -> (phi, d phi / dq), got {type(term.function).__name__}")
    _, dphi = _trial(term, TRIAL_RECORD, label)
    step = 1e-5
    ahead, behind = (_trial(term, TRIAL_RECORD, label, TRIAL_Q + h)[0] for h in (step, -step))
    numeric = (ahead - behind) / (2.0 * step)
    if not np.isclose(dphi, numeric, rtol=1e-6, atol=1e-9):
        raise ValueError(f"{label}: function's second output must be d phi / dq, the derivative of its first; at "
                         f"q = {TRIAL_Q} it gives {dphi!r} where phi's central difference is {numeric!r}")


def _check_reads(term: Term, label: str, numbers: list[str]) -> None:
    """The number fields the function reads (its code's attribute names) are
    its strength and ranges, and it reads every range: a parameter read but
    not declared would be searched by no fit and checked by no law."""
    read = set(term.function.py_func.__code__.co_names) & set(numbers)
    undeclared = sorted(read - {term.strength, *term.ranges})
    if undeclared:
        raise ValueError(f"{label}: function reads prm.{undeclared[0]}, which is neither its strength "
                         f"{term.strength!r} nor one of its ranges {term.ranges}: add it to ranges")
    unread = [r for r in term.ranges if r not in read]
    if unread:
        raise ValueError(f"{label}: ranges names {unread[0]!r}, which function never reads (it reads "
                         f"{sorted(read)}): drop it from ranges")


def _check_gaussian(term: Term, label: str) -> None:
    """The ``gaussian`` capability: where the kernels use it, and what it says."""
    if not isinstance(term.gaussian, bool):
        raise TypeError(f"{label}: gaussian must be a bool, got {term.gaussian!r}")
    if not term.gaussian:
        return
    if (term.variable, term.relation) != GAUSSIAN_PLACE:
        raise ValueError(f"{label}: gaussian=True only where the kernels use it, variable={GAUSSIAN_PLACE[0]!r}, "
                         f"relation={GAUSSIAN_PLACE[1]!r} (the Gram path's factors and the cell list's cut-off); "
                         f"got variable={term.variable!r}, relation={term.relation!r}")
    if len(term.ranges) != 1:
        raise ValueError(f"{label}: gaussian=True needs exactly one range field, the Gaussian's width, "
                         f"got ranges={term.ranges!r}")
    strength, width = 1.5, 0.8
    prm = TRIAL_RECORD._replace(**{term.strength: strength, term.ranges[0]: width})
    phi, dphi = _trial(term, prm, label)
    want = strength * np.exp(-TRIAL_Q / (2.0 * width * width))
    if not (np.isclose(phi, want, rtol=1e-12, atol=0.0) and np.isclose(dphi, -want / (2.0 * width * width),
                                                                          rtol=1e-12, atol=0.0)):
        raise ValueError(f"{label}: gaussian=True says phi = {term.strength} exp(-q / 2 {term.ranges[0]}^2), which "
                         f"the Gram path and the cell list assume; function gives phi = {phi!r}, dphi = {dphi!r} "
                         f"where that is {want!r}, {-want / (2.0 * width * width)!r}")


def _trial(term: Term, prm: KernelParams, label: str, q: float = TRIAL_Q) -> tuple[float, float]:
    """The term's function run in Python (its NumPy form: nothing is
    compiled) at q: (phi, d phi / dq) as two finite floats, or a ValueError
    naming the term and its function."""
    try:
        with np.errstate(all="ignore"):
            out = numpy_form(term.function)(np.float64(q), prm)
    except Exception as exc:  # any failure of the definition, reported with the term's name
        raise ValueError(f"{label}: function(q, prm) must run on a KernelParams record; at q = {q} it raised "
                         f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(out, tuple) or len(out) != 2:
        raise ValueError(f"{label}: function must return the pair (phi, d phi / dq), the value and its derivative "
                         f"in q (the kernels need both), got {out!r} at q = {q}")
    try:
        values = tuple(float(v) for v in out)
    except (TypeError, ValueError):
        raise ValueError(f"{label}: function must return two real numbers (phi, d phi / dq), got {out!r} at "
                         f"q = {q}") from None
    if not all(np.isfinite(values)):
        raise ValueError(f"{label}: function must return finite (phi, d phi / dq) at q = {q} on the trial record "
                         f"{prm}, got {values}")
    return values


check_terms(TERMS)
#: the pair terms' names, in the order of the kernels' outputs
PAIR_TERMS = tuple(t.name for t in TERMS)
#: (variable, class relation) -> the pair term in that place: the built-in law's names for the four places,
#: whatever a custom law puts there (its same-class distance term is its ``attraction``, of either sign)
TERM_AT = {(t.variable, t.relation): t.name for t in TERMS}


def term_values(function: Callable, q: np.ndarray, prm) -> tuple[np.ndarray, np.ndarray]:
    """phi(q) and d phi / dq of a term function on an array of q (float64
    arrays of q's shape), through :func:`numpy_form`."""
    q = np.asarray(q, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        value, derivative = numpy_form(function)(q, prm)
    return np.broadcast_to(np.asarray(value, dtype=np.float64), q.shape).copy(), \
        np.broadcast_to(np.asarray(derivative, dtype=np.float64), q.shape).copy()
