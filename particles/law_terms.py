"""A force law as a sum of terms: each term's force field, its range
parameters, and the law rebuilt with other strengths and ranges.

The terms (docs/force_fit.md), and the range parameters they depend on:

- :class:`ForceParams`: ``attraction``, ``repulsion``, ``alignment_same``,
  ``alignment_other``, ``wd``; ranges ``sig_a``, ``sig_r``, ``sig_t`` and
  ``eps`` (``bias_scale`` in the classifier variant).
- :class:`PairEnergy`: ``attraction``, ``repulsion``,
  ``alignment_same``, ``alignment_other`` (those it has) and ``wd``; range
  ``eps`` by default, and any field of the terms' params when named, as
  ``distance.<field>`` / ``cosine.<field>``.
- ``"effective"`` or an :class:`EffectiveLoss`: ``effective`` (-grad l_eff)
  and ``wd``; no ranges.

A term's *strength* multiplies it: for the built-in law k_a, k_r, lam (both
alignment halves) and the decay wd; for a custom energy a factor on the
term as written (1 is the law itself). :func:`force_terms` gives the forces
with the law's strengths (they sum to :func:`particles.forces`);
:func:`unit_term_forces` gives them at strength 1, the columns of a
regression (:class:`fitting.ForceLawFit`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numba
import numpy as np

from .core.validation import check_array, describe
from .datasets import PairDataset
from .energy import check_embedding, pair_system
from .kernels.law import PAIR_TERMS
from .law_protocol import FORCE_LAW_ATTRIBUTES
from .pair_path import check_path, use_gram

__all__ = ["BUILTIN_TERMS", "CUSTOM_TERMS", "EFFECTIVE_TERMS", "force_terms", "unit_term_forces", "term_names",
           "check_term_names", "range_names", "range_fields", "range_values", "range_dependencies", "law_strengths",
           "with_ranges", "with_strengths", "check_force_law", "answering", "PARALLEL_WORK", "pair_work", "taken_path"]

#: terms of the built-in law, in order
BUILTIN_TERMS = ("attraction", "repulsion", "alignment_same", "alignment_other", "wd")
#: terms of a custom pair energy (those it has), in order
CUSTOM_TERMS = PAIR_TERMS + ("wd",)
#: terms of the effective loss as a law
EFFECTIVE_TERMS = ("effective", "wd")


def check_force_law(law: Any) -> Any:
    """``law`` as a force law: an object answering the force-law protocol
    (:mod:`particles.law_protocol`: a ForceParams, a PairEnergy, an
    EffectiveLoss, or a new kind), or the string ``"effective"`` (the
    effective loss of the training set); else a TypeError naming ``law``."""
    if isinstance(law, str) and law == "effective":
        return law
    if isinstance(law, str) or not all(hasattr(law, name) for name in FORCE_LAW_ATTRIBUTES):
        raise TypeError("law must be a ForceParams, a PairEnergy, an EffectiveLoss or 'effective' (or an object "
                        f"answering particles.law_protocol), got {describe(law)}")
    return law


def answering(law: Any) -> Any:
    """What answers the protocol for ``law``: the law itself, or for the
    string ``"effective"`` the EffectiveLoss class (whose class-level
    answers need no training set)."""
    law = check_force_law(law)
    if isinstance(law, str):
        from .effective import EffectiveLoss

        return EffectiveLoss
    return law


def term_names(law: Any) -> tuple[str, ...]:
    """The terms of ``law`` (see the module's table)."""
    return tuple(answering(law).term_names())


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


#: pair interactions x snapshots of one call (pair_work's units) above which it spreads the snapshots
#: over threads (about 25 ms of work on one thread); below, threads wait on each other more than they
#: compute, and beside a busy neighbour far more (a p = 17 call of 1 ms ran 8 ms on 2 threads next to
#: another process). Measured on 2 cores (2026-11-28): from 4.7e6 to 9e6 units, 2 threads took
#: 0.41-0.55x one thread's time idle, and 1.68-1.86x their idle time beside a busy neighbour, never
#: more than one thread beside it; at 2e6, 2.3x their idle time (20M until then: fits at d >= 64 ran
#: their range search on one thread)
PARALLEL_WORK = 5_000_000


def _pair_kernel(law: Any, work: int, gram: bool) -> Callable:
    parallel = work >= PARALLEL_WORK and numba.config.NUMBA_NUM_THREADS > 1
    kernels = law.kernels()
    if gram:
        return kernels.gram_term_forces if parallel else kernels.gram_term_forces_serial
    return kernels.term_forces if parallel else kernels.term_forces_serial


def pair_work(n_pairs: int, d: int, gram: bool) -> int:
    """The work of one snapshot's term forces in PARALLEL_WORK's units (pair
    interactions at d = 2): n^2 / 2 pair interactions, times d / 2 on the
    direct path (its loops sweep every coordinate), times 2 on the Gram path
    (about 1.5x the direct path's time at d = 2, measured)."""
    return n_pairs * n_pairs // 2 * (2 if gram else max(1, d // 2))


def pair_path_taken(law: Any, path: str, X: np.ndarray, train: PairDataset) -> bool:
    """Whether the pair kernels run on the Gram path for these snapshots
    (:func:`particles.pair_path.use_gram`; a law whose kernels have no Gram
    path runs the direct one, and refuses ``path="gram"`` by name)."""
    gram = use_gram(path, X.shape[-1], pairs=len(train), tokens=train.p, X=X)
    if gram and getattr(law.kernels(), "gram_term_forces", None) is None:
        if path == "gram":
            raise ValueError("path='gram': this law's kernels have no Gram path; give path='direct' or 'auto'")
        return False
    return gram


def taken_path(law: Any, path: str, X: np.ndarray, train: PairDataset) -> str:
    """``"gram"``, ``"direct"`` or ``"own"`` (a law computing its own
    forces): the path :func:`unit_term_forces` takes for these snapshots."""
    law = check_force_law(law)
    if getattr(answering(law), "unit_term_forces", None) is not None:
        return "own"
    return "gram" if pair_path_taken(law, path, np.asarray(X), train) else "direct"


def unit_term_forces(law: Any, X: np.ndarray, train: PairDataset, terms: Sequence[str] | None = None, *,
                     path: str = "auto") -> np.ndarray:
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
    path : {"auto", "direct", "gram"}
        The pair kernels' path (:mod:`particles.pair_path`): the direct pair
        loop or the Gram path, equal to rounding; ``"auto"`` takes the Gram
        path from d = GRAM_MIN_DIMENSION on. A law that computes its own
        forces (the effective loss) refuses ``"gram"`` by name.

    Returns
    -------
    ndarray, shape (T, K, p, d)
        Term k's force at strength 1 on snapshot t (``wd``: -x).
    """
    law = check_force_law(law)
    names = _check_terms(law, terms)
    path = check_path(path)
    X, train = _check_snapshots(X, train, law)
    if path == "gram" and getattr(answering(law), "unit_term_forces", None) is not None:
        raise ValueError("path='gram' runs the pair kernels, and this law computes its own forces (the effective "
                         "loss, from p x p matrices already): give path='auto' or 'direct'")
    if isinstance(law, str):  # the shortcut: the effective loss of this training set
        from .effective import EffectiveLoss

        law = EffectiveLoss.from_pairs(train)
    own = getattr(law, "unit_term_forces", None)  # a law whose forces are not the pair kernels' computes its own
    if own is not None:
        return own(X, train, names)
    T, p, d = X.shape
    out = np.empty((T, len(names), p, d))
    pair_names = [n for n in names if n != "wd"]
    if pair_names:
        which = np.zeros(4, dtype=np.bool_)
        for n in pair_names:
            which[law.pair_terms.index(n)] = True
        full = np.empty((T, 4, p, d))
        gram = pair_path_taken(law, path, X, train)
        _pair_kernel(law, T * pair_work(len(train), d, gram), gram)(X, pair_system(train), law.unit_record(), which,
                                                                    full)
    for k, name in enumerate(names):
        out[:, k] = -X if name == "wd" else full[:, law.pair_terms.index(name)]
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
    answering(law).check_dimension(X.shape[2])
    return np.ascontiguousarray(X, dtype=np.float64), train


def force_terms(law: Any, x: np.ndarray, train: PairDataset, *, path: str = "auto") -> dict[str, np.ndarray]:
    """Each term's force on the particles, with the law's own strengths.

    Parameters
    ----------
    law : ForceParams, PairEnergy, EffectiveLoss or "effective"
    x : ndarray, shape (p, d)
        One state of the particles (a token embedding).
    train : PairDataset
        Training pairs and labels.
    path : {"auto", "direct", "gram"}
        The pair kernels' path, see :func:`unit_term_forces`.

    Returns
    -------
    dict of str to ndarray (p, d)
        Term name to force, in the order of :func:`term_names`. For a
        ForceParams or PairEnergy the values sum to
        ``particles.forces(x, train, law)`` to rounding; the effective loss
        gives ``{"effective": -grad l_eff, "wd": 0}``.
    """
    law = check_force_law(law)
    if not isinstance(train, PairDataset):
        raise TypeError(f"train must be a PairDataset, got {describe(train)}")
    x = check_embedding(x, train.p, "x")
    names = answering(law).active_terms(x.shape[1])
    unit = unit_term_forces(law, x[None], train, names, path=path)[0]
    strengths = law_strengths(law)
    return {name: strengths[name] * unit[k] for k, name in enumerate(names)}


def law_strengths(law: Any) -> dict[str, float]:
    """Each term's strength in ``law`` (the factor on its unit force)."""
    return dict(answering(law).strengths())


# ---------------------------------------------------------------- ranges
def range_names(law: Any, terms: Sequence[str] | None = None) -> tuple[str, ...]:
    """The range parameters the named terms depend on (see the module's table)."""
    return tuple(answering(law).range_names(_check_terms(law, terms)))


def range_fields(law: Any, terms: Sequence[str] | None = None) -> tuple[str, ...]:
    """Every range parameter the named terms could search: for a custom law
    eps and the fields of their params as ``distance.<field>`` /
    ``cosine.<field>`` (index numbers for plain tuples); for the built-in
    law its range names."""
    return tuple(answering(law).range_fields(_check_terms(law, terms)))


def range_dependencies(law: Any, term: str) -> tuple[str, ...]:
    """The range parameters one term's force depends on (for a custom law
    every field of its term's params, and eps for a cosine term)."""
    return tuple(answering(law).range_dependencies(term))


def range_values(law: Any, names: Sequence[str]) -> np.ndarray:
    """The current values of the named range parameters."""
    return np.array(answering(law).range_values(list(names)), dtype=float)


def with_ranges(law: Any, names: Sequence[str], values: Sequence[float]) -> Any:
    """``law`` with the named range parameters set to ``values``."""
    law = check_force_law(law)
    if isinstance(law, str):
        return law
    return law.with_ranges(list(names), list(values))


# ------------------------------------------------------------- strengths
def with_strengths(law: Any, strengths: Mapping[str, float]) -> Any:
    """``law`` with each named term scaled to the given strength.

    For a ForceParams the strengths set k_a, k_r, lam and the decay (wd,
    or particle_wd in the classifier variant); the two alignment halves
    must then be equal (one lam), else the law comes back as a PairEnergy
    with the halves scaled apart (gradient alignment only). For a PairEnergy
    each term's functions are multiplied by its strength."""
    law = check_force_law(law)
    unknown = set(strengths) - set(term_names(law))
    if unknown:
        raise ValueError(f"strengths names terms {sorted(unknown)} the law does not have {term_names(law)}")
    if isinstance(law, str):
        return law
    s = {**law_strengths(law), **{k: float(v) for k, v in strengths.items()}}
    new = law.with_strengths(s)
    return _halves_apart(law, s) if new is None else new


def _halves_apart(law: Any, s: dict[str, float]) -> Any:
    """The built-in law with its two alignment halves at different strengths,
    which one lam cannot hold: its clustering and gradient alignment as a
    PairEnergy with the halves scaled apart."""
    from .pair_laws import cosine_alignment, gaussian_clustering

    clustering = gaussian_clustering(s["attraction"], law.sig_a, s["repulsion"], law.sig_r, s["wd"])
    alignment = cosine_alignment(1.0, law.sig_t, law.effective_eps, axial=law.alignment_form == "axial")
    cosine = alignment.cosine.scaled(s["alignment_same"], s["alignment_other"])
    return clustering.replace(cosine=cosine, eps=law.effective_eps, name="fitted")
