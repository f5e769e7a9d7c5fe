"""The gauge of a force fit: the motions of the whole embedding that the
fitted law cannot produce, projected off the target and every term before
fitting and scoring.

A law invariant under translation of the embedding has forces that sum to
zero over the tokens: it can never move the centroid, so the common drift
of all tokens in the target is something it cannot explain, whatever its
strengths. A law invariant under scaling too (the effective loss) has forces
orthogonal to the centred embedding: it cannot change the overall scale. The
gauge removes these directions, per snapshot, from the target G and from
every column (the term forces), so that the fit and its R^2 measure only
what the law could make.

- ``"translation"``: v -> v - mean over tokens (d directions per snapshot).
- ``"similarity"``: the above, then the component along the centred
  embedding X_c removed: v -> v - (<v, X_c> / |X_c|^2) X_c.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["GAUGES", "admitted_gauges", "default_gauge", "check_gauge", "project", "projector", "gauge_directions"]

#: the accepted gauges (None: fit the forces as they are)
GAUGES = (None, "translation", "similarity")
#: the invariances each gauge needs of every fitted term
NEEDS = {None: (), "translation": ("translation",), "similarity": ("translation", "scale")}


def term_invariances(law: Any, terms: Sequence[str]) -> set[str]:
    """The invariances every one of ``terms`` has (``term_invariances`` of
    the law, :mod:`particles.law_protocol`; a term not listed has none)."""
    table = getattr(law, "term_invariances", {}) or {}
    common = None
    for term in terms:
        mine = set(table.get(term, ()))
        common = mine if common is None else common & mine
    return common or set()


def admitted_gauges(law: Any, terms: Sequence[str]) -> tuple:
    """The gauges the fitted ``terms`` of ``law`` admit (None always)."""
    have = term_invariances(law, terms)
    return tuple(g for g in GAUGES if set(NEEDS[g]) <= have)


def default_gauge(law: Any, terms: Sequence[str]) -> str | None:
    """The largest gauge the fitted terms admit: "similarity" for the
    effective loss, "translation" for distance terms alone, None as soon as a
    term can move the centroid (alignment, decay)."""
    return admitted_gauges(law, terms)[-1]


def check_gauge(gauge: Any, law: Any, terms: Sequence[str]) -> str | None:
    """``gauge`` checked: "auto" (the default of the law's invariances), or
    one of :data:`GAUGES` that every fitted term admits; else a ValueError
    naming ``gauge`` and what the terms admit."""
    if gauge == "auto":
        return default_gauge(law, terms)
    if gauge not in GAUGES:
        raise ValueError(f"gauge must be 'auto' or one of {GAUGES}, got {gauge!r}")
    admitted = admitted_gauges(law, terms)
    if gauge not in admitted:
        raise ValueError(f"gauge={gauge!r} projects off motions that the fitted terms {tuple(terms)} can produce "
                         f"(they admit {admitted}): the fit would discard force the law explains")
    return gauge


def projector(X: np.ndarray, gauge: str | None):
    """The function that removes the gauge's directions at each snapshot of
    ``X`` (T, N, d) from a ``V`` as :func:`project` takes it; what depends on
    X alone (the centred embedding and its norms) is computed once, for all
    the columns a fit projects on the same snapshots."""
    if gauge is None:
        return lambda V: V
    Xc = safe = None
    if gauge == "similarity":
        Xc = X - X.mean(axis=1, keepdims=True)
        norm2 = np.einsum("tnd,tnd->t", Xc, Xc)
        safe = np.where(norm2 > 0, norm2, 1.0)

    def apply(V: np.ndarray) -> np.ndarray:
        columns = V.ndim == 4
        W = V if columns else V[:, None]
        W = W - W.mean(axis=2, keepdims=True)
        if Xc is not None:
            coeff = np.einsum("tknd,tnd->tk", W, Xc) / safe[:, None]
            W = W - coeff[:, :, None, None] * Xc[:, None]
        return W if columns else W[:, 0]

    return apply


def project(V: np.ndarray, X: np.ndarray, gauge: str | None) -> np.ndarray:
    """``V`` (T, N, d), or (T, K, N, d) for K columns, with the gauge's
    directions at each snapshot of ``X`` (T, N, d) removed (a copy)."""
    return projector(X, gauge)(V)


def gauge_directions(X: np.ndarray, gauge: str | None) -> np.ndarray:
    """An orthonormal basis of the gauge's directions at each snapshot, shape
    (T, m, N, d) with m = 0, d or d + 1 (for tests and checks)."""
    T, N, d = X.shape
    dirs = []
    if gauge in ("translation", "similarity"):
        for k in range(d):
            e = np.zeros((T, N, d))
            e[:, :, k] = 1.0 / np.sqrt(N)
            dirs.append(e)
    if gauge == "similarity":
        Xc = X - X.mean(axis=1, keepdims=True)
        norm = np.sqrt(np.einsum("tnd,tnd->t", Xc, Xc))
        dirs.append(Xc / np.where(norm > 0, norm, 1.0)[:, None, None])
    return np.stack(dirs, axis=1) if dirs else np.zeros((T, 0, N, d))
