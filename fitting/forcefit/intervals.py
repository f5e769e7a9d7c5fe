"""Bootstrap intervals of a force fit's strengths and ranges."""

from __future__ import annotations

import math

import numpy as np

from ..ode.quality import warn_quality
from .solve import bounded_solve, lower_bounds, side_by_side

__all__ = ["bootstrap_intervals"]


def bootstrap_intervals(theta, coef, A, b, units, J, log_lo, log_hi, names, *, n_bootstrap: int, nonnegative: bool,
                        seed: int) -> tuple[dict, np.ndarray]:
    """95 % percentile intervals of every strength and range (``names``:
    the terms then the ranges) and the replicates (n_bootstrap, len(names)).

    Each replicate resamples the bootstrap ``units`` (snapshots or runs)
    with replacement and refits strengths and log-ranges together on the
    model linearised at the fit (columns A and J = d(model)/d(log range)),
    strengths kept >= 0 when ``nonnegative``; the spread about the estimate
    is scaled by sqrt(n / (n - P)) (HC1)."""
    K = len(coef)
    if n_bootstrap == 0:
        return {}, np.zeros((0, len(names)))
    # the model linearised at the fit: columns of the strengths and d(model)/d(log range); a range
    # whose terms all have strength 0 moves nothing (a zero column) and gets no interval
    live = np.zeros(0, dtype=bool) if J is None else np.linalg.norm(J, axis=0) > 0
    Z = A if J is None else side_by_side(A, J[:, live])
    n_J = int(live.sum())
    n_units = int(units.max()) + 1
    gram = np.zeros((n_units, Z.shape[1], Z.shape[1]))
    rhs = np.zeros((n_units, Z.shape[1]))
    resid = b - A @ coef
    in_order = bool(np.all(units[1:] >= units[:-1]))  # each unit's rows a block (snapshots, runs): views
    order = np.arange(len(units)) if in_order else np.argsort(units, kind="stable")
    bounds_ = np.searchsorted(units[order], np.arange(n_units + 1))
    for u in range(n_units):
        idx = slice(bounds_[u], bounds_[u + 1]) if in_order else order[bounds_[u]:bounds_[u + 1]]
        Zu = Z[idx]
        gram[u] = Zu.T @ Zu
        rhs[u] = Zu.T @ resid[idx]
    lower = lower_bounds(coef, n_J, nonnegative)
    rng = np.random.default_rng(seed)
    P = K + n_J
    # the bootstrap's spread scaled by sqrt(n / (n - P)), n units and P
    # parameters: the small-sample correction of a sandwich variance
    # (HC1), which the plain bootstrap of n units lacks
    if n_units > P + 1:
        inflate = math.sqrt(n_units / (n_units - P))
    else:
        inflate = 1.0
        warn_quality(f"the intervals rest on {n_units} bootstrap units for {P} parameters, too few to "
                     "trust them; give more snapshots or runs")
    # replicates are centred on the estimate: their step is taken from the full-data step
    centre = bounded_solve(gram.sum(axis=0), rhs.sum(axis=0), lower)
    steps = np.empty((n_bootstrap, P))
    for k in range(n_bootstrap):
        w = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units)).astype(float)
        steps[k] = inflate * (bounded_solve(np.tensordot(w, gram, axes=1), w @ rhs, lower) - centre)
    draws = np.full((n_bootstrap, len(names)), np.nan)
    draws[:, :K] = np.maximum(coef + steps[:, :K], 0.0) if nonnegative else coef + steps[:, :K]
    if n_J:
        log_theta = np.log(theta[live]) + steps[:, K:]
        draws[:, K + np.flatnonzero(live)] = np.exp(np.clip(log_theta, log_lo[live], log_hi[live]))
    out = {}
    for j, name in enumerate(names):
        if np.all(np.isnan(draws[:, j])):
            out[name] = (None, None)
        else:
            lo, hi = np.percentile(draws[:, j], [2.5, 97.5])
            out[name] = (float(lo), float(hi))
    return out, draws
