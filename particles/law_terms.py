"""A force law as a sum of terms: each term's force field, its range
parameters, and the law rebuilt with other strengths and ranges.

The terms (docs/force_fit.md), and the range parameters they depend on:

- :class:`ForceParams`: ``attraction``, ``repulsion``, ``alignment_same``,
  ``alignment_other``, ``decay``; ranges ``sig_a``, ``sig_r``, ``sig_t`` and
  ``eps`` (``bias_scale`` in the classifier variant).
- :class:`PairEnergy`: ``distance_same``, ``distance_other``,
  ``cosine_same``, ``cosine_other`` (those it has) and ``decay``; range
  ``eps`` by default, and any field of the terms' params when named, as
  ``distance.<field>`` / ``cosine.<field>``.
- ``"effective"`` or an :class:`EffectiveLoss`: ``effective`` (-grad l_eff)
  and ``decay``; no ranges.

A term's *strength* multiplies it: for the built-in law k_a, k_r, lam (both
alignment halves) and the decay wd; for a custom energy a factor on the
term as written (1 is the law itself). :func:`force_terms` gives the forces
with the law's strengths (they sum to :func:`particles.forces`);
:func:`unit_term_forces` gives them at strength 1, the columns of a
regression (:class:`fitting.ForceLawFit`).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numba
import numpy as np

from .core.validation import check_array, describe
from .datasets import PairDataset
from .energy import check_embedding, pair_system
from .kernels import terms as _terms
from .pair_energy import PairEnergy, PairTerm, compiled_function, python_function
from .params import ForceParams

__all__ = ["BUILTIN_TERMS", "CUSTOM_TERMS", "EFFECTIVE_TERMS", "force_terms", "unit_term_forces", "term_names",
           "check_term_names", "range_names", "range_fields", "range_values", "range_dependencies", "law_strengths", "with_ranges", "with_strengths", "check_force_law"]

#: terms of the built-in law, in order
BUILTIN_TERMS = ("attraction", "repulsion", "alignment_same", "alignment_other", "decay")
#: terms of a custom pair energy (those it has), in order
CUSTOM_TERMS = _terms.PAIR_TERMS + ("decay",)
#: terms of the effective loss as a law
EFFECTIVE_TERMS = ("effective", "decay")


def check_force_law(law: Any) -> Any:
    """``law`` as a force law: a ForceParams, a PairEnergy, an EffectiveLoss,
    or the string ``"effective"`` (the effective loss of the training
    set); else a TypeError naming ``law``."""
    from .effective import EffectiveLoss

    if isinstance(law, (ForceParams, PairEnergy, EffectiveLoss)) or (isinstance(law, str) and law == "effective"):
        return law
    raise TypeError("law must be a ForceParams, a PairEnergy, an EffectiveLoss or 'effective', got "
                    f"{describe(law)}")


def _is_effective(law: Any) -> bool:
    from .effective import EffectiveLoss  # not at import time: particles.effective is the heavier module

    return isinstance(law, (str, EffectiveLoss))


def term_names(law: Any) -> tuple[str, ...]:
    """The terms of ``law`` (see the module's table)."""
    law = check_force_law(law)
    if _is_effective(law):
        return EFFECTIVE_TERMS
    if isinstance(law, ForceParams):
        return BUILTIN_TERMS
    names = []
    if law.distance is not None:
        names += [n for n, fn in zip(CUSTOM_TERMS[:2], (law.distance.same, law.distance.other)) if fn is not None]
    if law.cosine is not None:
        names += [n for n, fn in zip(CUSTOM_TERMS[2:4], (law.cosine.same, law.cosine.other)) if fn is not None]
    return tuple(names) + ("decay",)


def _check_terms(law: Any, terms: Sequence[str] | None) -> tuple[str, ...]:
    names = term_names(law)
    return names if terms is None else check_term_names(terms, names)


def check_term_names(terms: Any, names: Sequence[str]) -> tuple[str, ...]:
    """``terms`` as a tuple of distinct names among ``names`` (a law's
    terms), at least one; else a TypeError/ValueError naming ``terms``."""
    names = tuple(names)
    if isinstance(terms, str) or not isinstance(terms, Sequence):
        raise TypeError(f"terms must be a sequence of term names of the law {names}, got {describe(terms)}")
    if len(terms) == 0:
        raise ValueError(f"terms must name at least one term of the law {names}")
    unknown = [t for t in terms if t not in names]
    if unknown:
        raise ValueError(f"terms must be among the law's terms {names}, got {unknown}")
    if len(set(terms)) != len(terms):
        raise ValueError(f"terms must not repeat a name, got {list(terms)}")
    return tuple(terms)


def _unit_record(law: ForceParams | PairEnergy):
    """The kernel record with every strength 1 (the built-in law's k_a, k_r
    and lam; a custom law's terms are as written)."""
    prm = law.kernel_params()
    if isinstance(law, ForceParams):
        return prm._replace(k_a=1.0, k_r=1.0, lam=1.0, decay=0.0)
    return prm._replace(decay=0.0)


#: pair interactions x snapshots of one call above which it spreads the snapshots over threads (about
#: 10 ms of work); below, threads wait on each other more than they compute, and beside a busy
#: neighbour far more (a p = 17 fit ran 5x slower on 2 threads next to another process)
PARALLEL_WORK = 20_000_000


def _pair_kernel(law: ForceParams | PairEnergy, work: int) -> Callable:
    parallel = work >= PARALLEL_WORK and numba.config.NUMBA_NUM_THREADS > 1
    if isinstance(law, PairEnergy):
        kernels = law.kernels()
        return kernels.term_forces if parallel else kernels.term_forces_serial
    return _terms.term_forces_many if parallel else _terms.term_forces_serial


def _pair_index(law: Any, name: str) -> int:
    names = _terms.PAIR_TERMS if isinstance(law, PairEnergy) else BUILTIN_TERMS[:4]
    return names.index(name)


def unit_term_forces(law: Any, X: np.ndarray, train: PairDataset, terms: Sequence[str] | None = None) -> np.ndarray:
    """The forces of the named terms at strength 1 on every snapshot.

    Parameters
    ----------
    law : ForceParams, PairEnergy, EffectiveLoss or "effective"
        The law; its range parameters are used as they are.
    X : ndarray, shape (T, p, d)
        Snapshots of the particles (token embeddings).
    train : PairDataset
        The training pairs and labels.
    terms : sequence of str, optional
        Which terms (default all of :func:`term_names`).

    Returns
    -------
    ndarray, shape (T, K, p, d)
        Term k's force at strength 1 on snapshot t (``decay``: -x).
    """
    law = check_force_law(law)
    names = _check_terms(law, terms)
    X, train = _check_snapshots(X, train, law)
    T, p, d = X.shape
    out = np.empty((T, len(names), p, d))
    if _is_effective(law):
        from .effective import EffectiveLoss, effective_loss_gradient

        system = EffectiveLoss.from_pairs(train) if isinstance(law, str) else law
        if system.p != p:
            raise ValueError(f"law is an effective loss on p = {system.p} tokens, but X has p = {p}")
        for t in range(T):
            for k, name in enumerate(names):
                out[t, k] = -effective_loss_gradient(X[t], system)[1] if name == "effective" else -X[t]
        return out
    pair_names = [n for n in names if n != "decay"]
    if pair_names:
        which = np.zeros(4, dtype=np.bool_)
        for n in pair_names:
            which[_pair_index(law, n)] = True
        full = np.empty((T, 4, p, d))
        n = len(train)
        _pair_kernel(law, T * n * n // 2)(X, pair_system(train), _unit_record(law), which, full)
    for k, name in enumerate(names):
        out[:, k] = -X if name == "decay" else full[:, _pair_index(law, name)]
    return out


def _check_snapshots(X: Any, train: Any, law: Any) -> tuple[np.ndarray, PairDataset]:
    if not isinstance(train, PairDataset):
        raise TypeError(f"train must be a PairDataset, got {describe(train)}")
    if len(train) == 0:
        raise ValueError("train holds no pairs")
    X = check_array(X, "X", dtype="float", ndim=3)
    if X.shape[1] != train.p:
        raise ValueError(f"X must have p = {train.p} tokens (the training set's) on axis 1, got shape {X.shape}")
    if X.shape[0] < 1 or X.shape[2] < 1:
        raise ValueError(f"X must hold at least one snapshot of dimension d >= 1, got shape {X.shape}")
    if not _is_effective(law) and isinstance(law, (ForceParams, PairEnergy)) and X.shape[2] < 2:
        cosine = isinstance(law, ForceParams) or law.cosine is not None
        if cosine and isinstance(law, PairEnergy):
            raise ValueError(f"a cosine term needs dimension d >= 2, got d = {X.shape[2]}")
    return np.ascontiguousarray(X, dtype=np.float64), train


def force_terms(law: Any, x: np.ndarray, train: PairDataset) -> dict[str, np.ndarray]:
    """Each term's force on the particles, with the law's own strengths.

    Parameters
    ----------
    law : ForceParams, PairEnergy, EffectiveLoss or "effective"
    x : ndarray, shape (p, d)
        One state of the particles (a token embedding).
    train : PairDataset
        Training pairs and labels.

    Returns
    -------
    dict of str to ndarray (p, d)
        Term name to force, in the order of :func:`term_names`. For a
        ForceParams or PairEnergy the values sum to
        ``particles.forces(x, train, law)`` to rounding; the effective loss
        gives ``{"effective": -grad l_eff, "decay": 0}``.
    """
    law = check_force_law(law)
    if not isinstance(train, PairDataset):
        raise TypeError(f"train must be a PairDataset, got {describe(train)}")
    x = check_embedding(x, train.p, "x")
    names = term_names(law)
    if isinstance(law, ForceParams) and law.effective_lam > 0 and x.shape[1] < 2:
        raise ValueError(f"alignment (lam = {law.lam} > 0) needs dimension d >= 2, got d = {x.shape[1]}")
    if isinstance(law, ForceParams) and x.shape[1] < 2:
        names = names[:2] + names[4:]
    unit = unit_term_forces(law, x[None], train, names)[0]
    strengths = law_strengths(law)
    return {name: strengths[name] * unit[k] for k, name in enumerate(names)}


def law_strengths(law: Any) -> dict[str, float]:
    """Each term's strength in ``law`` (the factor on its unit force)."""
    if _is_effective(law):
        return {"effective": 1.0, "decay": 0.0}
    if isinstance(law, ForceParams):
        lam = law.effective_lam
        return {"attraction": law.k_a, "repulsion": law.k_r, "alignment_same": lam, "alignment_other": lam,
                "decay": law.particle_wd}
    return {**{n: 1.0 for n in term_names(law)}, "decay": law.wd}


# ---------------------------------------------------------------- ranges
def range_names(law: Any, terms: Sequence[str] | None = None) -> tuple[str, ...]:
    """The range parameters the named terms depend on (see the module's table)."""
    law = check_force_law(law)
    names = _check_terms(law, terms)
    if _is_effective(law):
        return ()
    if isinstance(law, ForceParams):
        out = []
        if "attraction" in names:
            out.append("sig_a")
        if "repulsion" in names:
            out.append("sig_r")
        if "alignment_other" in names:
            out.append("sig_t")
        if "alignment_same" in names or "alignment_other" in names:
            out.append("bias_scale" if law.wd_target == "classifier" and law.wd > 0 else "eps")
        return tuple(out)
    # a custom law's parameters may be strengths (degenerate with the fitted
    # factor) or ranges: only eps is searched unless the fit names fields
    # (ranges=("distance.width", ...), see range_fields)
    return ("eps",) if any(n.startswith("cosine") for n in names) else ()


def range_fields(law: PairEnergy, terms: Sequence[str] | None = None) -> tuple[str, ...]:
    """Every range parameter a custom law's named terms could search: eps
    and the fields of their params as ``distance.<field>`` /
    ``cosine.<field>`` (index numbers for plain tuples)."""
    names = _check_terms(law, terms)
    out = []
    for prefix, term in (("distance", law.distance), ("cosine", law.cosine)):
        if term is not None and any(n.startswith(prefix) for n in names):
            fields = getattr(term.params, "_fields", None) or [str(i) for i in range(len(term.params))]
            out += [f"{prefix}.{f}" for f in fields]
    if any(n.startswith("cosine") for n in names):
        out.append("eps")
    return tuple(out)


def range_dependencies(law: Any, term: str) -> tuple[str, ...]:
    """The range parameters one term's force depends on (for a custom law
    every field of its term's params, and eps for a cosine term)."""
    if isinstance(law, PairEnergy):
        return range_fields(law, [term])
    return range_names(law, [term])


def range_values(law: Any, names: Sequence[str]) -> np.ndarray:
    """The current values of the named range parameters."""
    values = []
    for name in names:
        if isinstance(law, ForceParams):
            values.append(getattr(law, name))
        elif name == "eps":
            values.append(law.eps)
        else:
            prefix, field = name.split(".", 1)
            params = getattr(law, prefix).params
            values.append(params[int(field)] if field.isdigit() else getattr(params, field))
    return np.array(values, dtype=float)


def with_ranges(law: Any, names: Sequence[str], values: Sequence[float]) -> Any:
    """``law`` with the named range parameters set to ``values``."""
    changes = {n: float(v) for n, v in zip(names, values)}
    if isinstance(law, ForceParams):
        return law.replace(**changes) if changes else law
    if _is_effective(law) or not changes:
        return law
    new = {}
    if "eps" in changes:
        new["eps"] = changes.pop("eps")
    for prefix in ("distance", "cosine"):
        mine = {k.split(".", 1)[1]: v for k, v in changes.items() if k.startswith(prefix + ".")}
        if mine:
            term = getattr(law, prefix)
            params = list(term.params)
            fields = getattr(term.params, "_fields", None)
            for field, value in mine.items():
                params[int(field) if field.isdigit() else fields.index(field)] = value
            params = type(term.params)(*params) if fields else tuple(params)
            new[prefix] = term.with_params(params)
    return law.replace(**new)


# ------------------------------------------------------------- strengths
def _scaled(fn: Callable | None, factor: float) -> Callable | None:
    """fn times a constant, compiled (a new function per factor); None (no
    interaction) for factor 0, so a law infinite somewhere adds no NaN."""
    if fn is None or factor == 0.0:
        return None
    inner = compiled_function(fn)
    py = python_function(fn)

    def scaled(q, prm):
        return factor * inner(q, prm)

    dispatcher = numba.njit(error_model="numpy")(scaled)

    def scaled_python(q, prm):  # the NumPy path calls the Python form
        return factor * py(q, prm)

    dispatcher.py_func.__dict__["numpy_form"] = scaled_python
    return dispatcher


def _scaled_term(term: PairTerm, same: float, other: float) -> PairTerm | None:
    """The term with its parts scaled; None when both parts vanish."""
    if (term.same is None or same == 0.0) and (term.other is None or other == 0.0):
        return None
    return PairTerm(_scaled(term.same, same), _scaled(term.other, other), variable=term.variable,
                    params=term.params, same_derivative=_scaled(term.same_derivative, same),
                    other_derivative=_scaled(term.other_derivative, other))


def with_strengths(law: Any, strengths: Mapping[str, float]) -> Any:
    """``law`` with each named term scaled to the given strength.

    For a ForceParams the strengths set k_a, k_r, lam and the decay (wd,
    or particle_decay in the classifier variant); the two alignment halves
    must then be equal (one lam), else the law comes back as a PairEnergy
    with the halves scaled apart (gradient alignment only). For a PairEnergy
    each term's functions are multiplied by its strength."""
    law = check_force_law(law)
    unknown = set(strengths) - set(term_names(law))
    if unknown:
        raise ValueError(f"strengths names terms {sorted(unknown)} the law does not have {term_names(law)}")
    if _is_effective(law):
        return law
    s = {**law_strengths(law), **{k: float(v) for k, v in strengths.items()}}
    if isinstance(law, ForceParams):
        same, other = s["alignment_same"], s["alignment_other"]
        decay = {"particle_decay" if law.wd_target == "classifier" else "wd": s["decay"]}
        if math.isclose(same, other, rel_tol=1e-12, abs_tol=0.0) or (same == 0.0 and other == 0.0):
            lam = 0.5 * (same + other)
            if law.wd_target == "classifier" and law.wd == 0.0 and lam > 0.0:
                # the classifier variant has no alignment at wd = 0: a fitted alignment needs the baseline
                # form, with the softening the forces used and the particles' decay as wd
                return ForceParams(k_a=s["attraction"], sig_a=law.sig_a, k_r=s["repulsion"], sig_r=law.sig_r,
                                   lam=lam, sig_t=law.sig_t, eps=law.effective_eps, wd=s["decay"],
                                   alignment=law.alignment, alignment_form=law.alignment_form)
            if law.wd_target == "classifier" and law.wd == 0.0:
                lam = law.lam
            return law.replace(k_a=s["attraction"], k_r=s["repulsion"], lam=lam, **decay)
        if law.alignment != "gradient":
            raise ValueError("the alignment halves have different strengths, which a ForceParams cannot hold, and "
                             "the polar alignment has no PairEnergy form; fit with the halves tied "
                             "(ForceLawFit(..., tie_alignment=True))")
        from .pair_laws import cosine_alignment, gaussian_clustering

        clustering = gaussian_clustering(s["attraction"], law.sig_a, s["repulsion"], law.sig_r, s["decay"])
        alignment = cosine_alignment(1.0, law.sig_t, law.effective_eps, axial=law.alignment_form == "axial")
        cosine = _scaled_term(alignment.cosine, same, other)
        return clustering.replace(cosine=cosine, eps=law.effective_eps, name="fitted")
    new = {"wd": s["decay"]}
    for prefix in ("distance", "cosine"):
        term = getattr(law, prefix)
        if term is not None:
            new[prefix] = _scaled_term(term, s.get(f"{prefix}_same", 1.0), s.get(f"{prefix}_other", 1.0))
    if new.get("distance", law.distance) is None and new.get("cosine", law.cosine) is None:
        raise ValueError("every pair term of the law has strength 0: there is no PairEnergy left to build")
    return law.replace(**new)
