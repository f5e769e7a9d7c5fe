"""Fourth-order Runge-Kutta paths of a fitted system, many at once, on each
path's own sample times: what the fit's verdict simulates (:mod:`.verdict`).

:func:`rk4_paths` takes any right-hand side (vectorised NumPy, one call per
stage for every path); :func:`polynomial_paths` is the same arithmetic
compiled for a right-hand side that is a library of products
(:meth:`~fitting.ode.library.Library.product_plan`, the polynomial library)
times coefficients, and :func:`paths` picks it when the plan is given. The
two agree to rounding (tests/fitting/ode/test_paths.py, random systems).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numba import njit

__all__ = ["paths", "rk4_paths", "polynomial_paths", "warmup"]


def rk4_paths(rhs: Callable[[np.ndarray], np.ndarray], X0: np.ndarray, times: np.ndarray,
              limit: float) -> np.ndarray:
    """Fourth-order Runge-Kutta on each row's own sample times, every row
    at once (the NumPy reference of :func:`polynomial_paths`).

    Parameters
    ----------
    rhs : callable, (S, K) -> (S, K)
    X0 : ndarray, shape (S, K)
        Start states.
    times : ndarray, shape (S, L)
        Each row's times, non-decreasing (a repeated time is a step of 0).
    limit : float
        A state whose largest magnitude exceeds it, or that is not finite,
        ends its row: it and what follows are NaN.

    Returns
    -------
    ndarray, shape (S, L, K)
    """
    S, L = times.shape
    out = np.full((S, L, X0.shape[1]), np.nan)
    x = np.array(X0, dtype=float)
    out[:, 0] = x
    alive = np.ones(S, dtype=bool)
    f = _guarded(rhs)
    with np.errstate(all="ignore"):
        for n in range(1, L):
            h = (times[:, n] - times[:, n - 1])[:, None]
            k1 = f(x)
            k2 = f(x + 0.5 * h * k1)
            k3 = f(x + 0.5 * h * k2)
            k4 = f(x + h * k3)
            x = x + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            alive &= np.all(np.isfinite(x), axis=1) & (np.max(np.abs(np.nan_to_num(x, nan=np.inf)), axis=1) <= limit)
            if not alive.any():
                break
            x = np.where(alive[:, None], x, 0.0)  # a row that left stays NaN in out
            out[alive, n] = x[alive]
    return out


def _guarded(rhs: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """``rhs`` that gives NaN for the states it refuses (a user's library
    undefined there, such as a logarithm of a negative state, raises): such
    a path has left where the fitted model is defined, like a blow-up."""
    def f(x: np.ndarray) -> np.ndarray:
        try:
            return np.asarray(rhs(x), dtype=float)
        except (ValueError, ArithmeticError):
            out = np.full(x.shape, np.nan)
            for s in range(x.shape[0]):
                if np.all(np.isfinite(x[s])):
                    try:
                        out[s] = rhs(x[s:s + 1])[0]
                    except (ValueError, ArithmeticError):
                        pass
            return out
    return f


@njit(cache=True)
def _rhs_products(x, parent, variable, coef, feats, dx):
    """dx = coef @ features(x) for one state, the features as products."""
    for c in range(parent.shape[0]):
        v = variable[c]
        if v < 0:
            feats[c] = 1.0
        elif parent[c] < 0:
            feats[c] = x[v]
        else:
            feats[c] = feats[parent[c]] * x[v]
    for i in range(coef.shape[0]):
        acc = 0.0
        for c in range(coef.shape[1]):
            acc += coef[i, c] * feats[c]
        dx[i] = acc


@njit(cache=True)
def polynomial_paths(parent, variable, coef, X0, times, limit):
    """:func:`rk4_paths` for dx/dt = coef @ features(x), the features
    products (``parent``, ``variable``: int64 (F,); ``coef`` (K, F)),
    one path at a time."""
    S, L = times.shape
    K = X0.shape[1]
    out = np.full((S, L, K), np.nan)
    feats = np.empty(parent.shape[0])
    x = np.empty(K)
    y = np.empty(K)
    k1 = np.empty(K)
    k2 = np.empty(K)
    k3 = np.empty(K)
    k4 = np.empty(K)
    for s in range(S):
        for i in range(K):
            x[i] = X0[s, i]
            out[s, 0, i] = x[i]
        for n in range(1, L):
            h = times[s, n] - times[s, n - 1]
            _rhs_products(x, parent, variable, coef, feats, k1)
            for i in range(K):
                y[i] = x[i] + 0.5 * h * k1[i]
            _rhs_products(y, parent, variable, coef, feats, k2)
            for i in range(K):
                y[i] = x[i] + 0.5 * h * k2[i]
            _rhs_products(y, parent, variable, coef, feats, k3)
            for i in range(K):
                y[i] = x[i] + h * k3[i]
            _rhs_products(y, parent, variable, coef, feats, k4)
            ok = True
            for i in range(K):
                x[i] = x[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
                if not (abs(x[i]) <= limit):  # NaN fails too
                    ok = False
            if not ok:
                break
            for i in range(K):
                out[s, n, i] = x[i]
    return out


def paths(rhs: Callable[[np.ndarray], np.ndarray], plan: Any, X0: np.ndarray, times: np.ndarray,
          limit: float) -> np.ndarray:
    """:func:`polynomial_paths` when ``plan`` = (parent, variable, coef) is
    given, else :func:`rk4_paths` through ``rhs``."""
    if plan is None:
        return rk4_paths(rhs, X0, times, limit)
    parent, variable, coef = plan
    return polynomial_paths(parent, variable, np.ascontiguousarray(coef, dtype=np.float64),
                            np.ascontiguousarray(X0, dtype=np.float64), np.ascontiguousarray(times, dtype=np.float64),
                            float(limit))


def warmup() -> None:
    """Compile (or load from Numba's cache) :func:`polynomial_paths`."""
    paths(None, (np.array([-1, -1], dtype=np.int64), np.array([-1, 0], dtype=np.int64), np.zeros((1, 2))),
          np.zeros((1, 1)), np.zeros((1, 2)), 1.0)
