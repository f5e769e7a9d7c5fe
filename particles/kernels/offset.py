"""How far an embedding sits from the origin in its own size: the check
that keeps ``path="auto"`` off the Gram path where its squared distances
would cancel (:func:`particles.pair_path.offset_ratio`). One pass per
snapshot instead of NumPy's five temporaries: the public force call runs it
every time, at a few microseconds."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["offset_ratio_kernel", "offset_ratio_reference"]


@njit(cache=True)
def offset_ratio_kernel(X):
    """max over snapshots of |centroid| / RMS spread about it, for X
    (m, p, d) float64: 0 where both are 0, inf where only the spread is;
    NaN where X holds a non-finite value (or its squares overflow), so that
    ``use_gram`` keeps such input on the direct path."""
    m, p, d = X.shape
    worst = 0.0
    centre = np.empty(d)
    for s in range(m):
        xs = X[s]
        for k in range(d):
            centre[k] = 0.0
        for a in range(p):
            for k in range(d):
                centre[k] += xs[a, k]
        shift2 = 0.0
        for k in range(d):
            centre[k] /= p
            shift2 += centre[k] * centre[k]
        spread2 = 0.0
        for a in range(p):
            for k in range(d):
                dx = xs[a, k] - centre[k]
                spread2 += dx * dx
        if not (np.isfinite(shift2) and np.isfinite(spread2)):
            return np.nan
        spread = np.sqrt(spread2 / p)
        shift = np.sqrt(shift2)
        if spread > 0.0:
            ratio = shift / spread
        elif shift == 0.0:
            ratio = 0.0
        else:
            ratio = np.inf
        worst = max(worst, ratio)
    return worst


def offset_ratio_reference(X: np.ndarray) -> float:
    """NumPy reference of :func:`offset_ratio_kernel` (X (..., p, d))."""
    X = np.asarray(X, dtype=float).reshape((-1,) + np.shape(X)[-2:])
    if not np.isfinite(X).all():
        return float("nan")
    centre = X.mean(axis=1, keepdims=True)
    spread = np.sqrt(np.mean(np.sum((X - centre) ** 2, axis=2), axis=1))
    shift = np.linalg.norm(centre[:, 0], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(spread > 0, shift / np.where(spread > 0, spread, 1.0), np.where(shift > 0, np.inf, 0.0))
    return float(ratio.max()) if ratio.size else 0.0
