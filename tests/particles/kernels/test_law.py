"""The one definition of the built-in law (particles.kernels.law): each term
against the formula of docs/particles.md written here (the independent
statement every derived form rests on), its derivative against finite
differences, its NumPy form against its compiled form, and what TERMS
declares against what the kernels and the laws use; and a malformed
definition refused when the law is built (law.check_terms), naming the term
and the field."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from particles import ForceParams
from particles.kernels import clustering, law
from particles.kernels.kernel_params import KernelParams

KERNELS = Path(law.__file__).parent


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


# ------------------------------------------------------------- what TERMS declares, against its readers
def test_every_range_field_is_searched_by_the_force_law_fit_within_bounds():
    """A term's range fields are the ranges the force-law fit searches for it
    (ForceParams.range_dependencies, hand-written in particles/params.py),
    between bounds 0 < low < start < high < inf (start / 10 to start x 10,
    fitting.forcefit.estimator), which exist because ForceParams refuses a
    range <= 0."""
    from fitting.forcefit import ForceLawFit

    start = ForceParams(lam=1.0)
    for term in law.TERMS:
        _, _, ranges, low, high = ForceLawFit(law=start, terms=[term.name]).check_params()
        assert set(term.ranges) <= set(ranges), (term.name, term.ranges, ranges)
        for field in term.ranges:
            i = ranges.index(field)
            assert 0 < low[i] < getattr(start, field) < high[i] < np.inf, (term.name, field)
            with pytest.raises(ValueError, match=rf"ForceParams\.{field} must be > 0"):
                ForceParams(**{field: 0.0})


def test_each_terms_strength_is_the_field_forceparams_and_the_kernels_read():
    """TERMS' strength fields are ForceParams.strengths() (hand-written in
    particles/params.py) and the fields the kernels test to skip a place's
    block (``prm.k_a > 0.0``, ``prm.lam > 0.0`` in kernels/forces.py and
    kernels/gram.py): a term under another strength field would be skipped."""
    params = ForceParams(k_a=2.0, k_r=3.0, lam=5.0, wd=0.25)
    record = params.kernel_params()
    strengths = params.strengths()
    for term in law.TERMS:
        assert strengths[term.name] == getattr(record, term.strength), term.name
    tested = set()
    for name in ("forces.py", "gram.py"):
        for node in ast.walk(ast.parse((KERNELS / name).read_text())):
            if (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Gt)
                    and isinstance(node.left, ast.Attribute) and isinstance(node.left.value, ast.Name)
                    and node.left.value.id in ("prm", "params")):
                tested.add(node.left.attr)
    assert tested == {t.strength for t in law.TERMS}


def test_the_gaussian_capability_is_what_the_gram_path_and_the_cell_list_assume():
    """The ``gaussian`` flag of the term in the Gram path's place is the
    compile-time switch the kernels read (clustering.GAUSSIAN_REPULSION, a
    literal) and ForceParams.cell_lists: a term there that is no Gaussian
    must turn both off, or the Gram path and the cell list would compute
    the old Gaussian."""
    term = next(t for t in law.TERMS if (t.variable, t.relation) == law.GAUSSIAN_PLACE)
    assert clustering.GAUSSIAN_REPULSION is term.gaussian
    assert ForceParams.cell_lists is term.gaussian


def test_the_definition_is_checked_when_the_module_is_imported():
    """law.py calls check_terms(TERMS) at module level, after TERMS and
    before anything is derived from it."""
    body = ast.parse(inspect.getsource(law)).body
    order = []
    for node in body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            order.append(node.targets[0].id)
        elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
              and getattr(node.value.func, "id", None) == "check_terms"
              and [getattr(a, "id", None) for a in node.value.args] == ["TERMS"]):
            order.append("check_terms(TERMS)")
    assert "check_terms(TERMS)" in order
    at = order.index("check_terms(TERMS)")
    assert order.index("TERMS") < at < order.index("PAIR_TERMS") < order.index("TERM_AT")


# ------------------------------------------------------------- a malformed definition, refused
@njit
def value_only(q, prm):
    return -prm.k_a * np.exp(-q)


@njit
def wrong_derivative(q, prm):
    return -prm.k_a * np.exp(-q), 0.0


@njit
def reads_a_missing_field(q, prm):
    return prm.k_b * q, prm.k_b


@njit
def infinite(q, prm):
    return 1.0 / (q - 0.5), -1.0 / (q - 0.5) ** 2


def python_attraction(q, prm):
    return -prm.k_a * np.exp(-q), prm.k_a * np.exp(-q)


@njit
def reads_eps(q, prm):
    return -prm.k_a * np.exp(-q / prm.eps), prm.k_a / prm.eps * np.exp(-q / prm.eps)


def replaced(which: str, **changes) -> tuple:
    """TERMS with one term's fields changed."""
    return tuple(t._replace(**changes) if t.name == which else t for t in law.TERMS)


#: one malformed definition a case: (the term changed, its changes, the error, what the message says: the term
#: and the field, as a literal text)
MALFORMED = {
    "name used twice": ("alignment_same", {"name": "attraction"}, ValueError,
                        "law term 'attraction': name is used by two terms"),
    "empty name": ("attraction", {"name": ""}, TypeError, "a law term's name must be a non-empty str"),
    "unknown variable": ("repulsion", {"variable": "angle"}, ValueError,
                         "law term 'repulsion': variable must be one of ('distance', 'cosine'), got 'angle'"),
    "unknown relation": ("repulsion", {"relation": "any"}, ValueError,
                         "law term 'repulsion': relation must be one of ('same', 'other'), got 'any'"),
    "two terms in one place": ("alignment_other", {"relation": "same"}, ValueError,
                               ("law term 'alignment_other': variable='cosine', relation='same' is the place of term "
                                "'alignment_same' already; the kernels have one slot per place")),
    "strength the record lacks": ("attraction", {"strength": "k_b"}, ValueError,
                                  "law term 'attraction': strength must be a number field of KernelParams"),
    "range the record lacks": ("alignment_other", {"ranges": ("sig_t", "sig_b")}, ValueError,
                               "law term 'alignment_other': ranges names 'sig_b', which is not a number field"),
    "range that is a switch": ("attraction", {"ranges": ("axial",)}, ValueError,
                               "law term 'attraction': ranges names 'axial', which is not a number field"),
    "range named twice": ("attraction", {"ranges": ("sig_a", "sig_a")}, ValueError,
                          "law term 'attraction': ranges must name each field once and not the strength 'k_a'"),
    "strength as a range": ("attraction", {"ranges": ("sig_a", "k_a")}, ValueError,
                            "law term 'attraction': ranges must name each field once and not the strength 'k_a'"),
    "ranges not a tuple": ("attraction", {"ranges": "sig_a"}, TypeError,
                           "law term 'attraction': ranges must be a tuple of KernelParams field names"),
    "function not compiled": ("attraction", {"function": python_attraction}, TypeError,
                              "law term 'attraction': function must be a compiled function"),
    "missing derivative": ("attraction", {"function": value_only}, ValueError,
                           ("law term 'attraction': function must return the pair (phi, d phi / dq), the value and "
                            "its derivative in q")),
    "derivative not the value's": ("attraction", {"function": wrong_derivative}, ValueError,
                                   "law term 'attraction': function's second output must be d phi / dq"),
    "function reads a field the record lacks": ("attraction", {"function": reads_a_missing_field}, ValueError,
                                                ("law term 'attraction': function(q, prm) must run on a "
                                                 "KernelParams record; at q = 0.5 it raised AttributeError")),
    "function not finite": ("repulsion", {"function": infinite}, ValueError,
                            "law term 'repulsion': function must return finite (phi, d phi / dq) at q = 0.5"),
    "parameter with no range": ("attraction", {"function": reads_eps}, ValueError,
                                ("law term 'attraction': function reads prm.eps, which is neither its strength 'k_a' "
                                 "nor one of its ranges ('sig_a',): add it to ranges")),
    "range the function never reads": ("attraction", {"ranges": ("sig_a", "sig_t")}, ValueError,
                                       "law term 'attraction': ranges names 'sig_t', which function never reads"),
    "gaussian not a bool": ("repulsion", {"gaussian": 1}, TypeError, "law term 'repulsion': gaussian must be a bool"),
    "gaussian where the kernels do not use it": ("attraction", {"gaussian": True}, ValueError,
                                                 "law term 'attraction': gaussian=True only where the kernels"),
    "gaussian without a width": ("repulsion", {"ranges": ()}, ValueError,
                                 "law term 'repulsion': gaussian=True needs exactly one range field"),
    "gaussian with two widths": ("repulsion", {"ranges": ("sig_r", "sig_a")}, ValueError,
                                 "law term 'repulsion': gaussian=True needs exactly one range field"),
    # the attraction's formula (negative) under the repulsion's name and capability
    "gaussian that is no gaussian": ("repulsion", {"function": law.attraction}, ValueError,
                                     "law term 'repulsion': gaussian=True says phi = k_r exp(-q / 2 sig_r^2)"),
}


def test_the_built_in_terms_pass():
    assert law.check_terms(law.TERMS) is None
    with pytest.raises(TypeError, match="terms must be a tuple of law.Term"):
        law.check_terms(list(law.TERMS))


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_definition_is_refused_naming_the_term_and_the_field(case):
    which, changes, error, message = MALFORMED[case]
    with pytest.raises(error, match=re.escape(message)):
        law.check_terms(replaced(which, **changes))
