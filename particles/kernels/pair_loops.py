"""The sweep-and-scatter loops every pair kernel shares, written once.

A row u meets every v in [lo, hi) (v > u), given as a
:class:`~.records.Row` ``(u, lo, hi)``: first a sweep computes one
number per v from the two columns (the squared distance of two pair sums,
or the dot product of two unit vectors), then, with a coefficient per v,
a scatter adds the pair's force to both columns: to v directly, to u as a
fixed-order lane sum (:func:`.fastmath.lane_sum`). The clustering and
alignment blocks and the per-term kernels (:mod:`.terms`) call these; each
is inlined into its caller, so there is no call in the inner loop. Bounds
are unsigned (no negative-index wrap-around, the loops vectorise).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .fastmath import FAST, lane_sum

__all__ = ["squared_distances", "squared_distances_loop", "dot_products", "dot_products_loop", "scatter_differences", "scatter_products", "scatter_scalars",
           "squared_distances_reference", "dot_products_reference", "scatter_differences_reference"]


@njit(cache=True, fastmath=FAST, inline="always")
def squared_distances_loop(row, S, r2):
    """r2[v] = |S[:, u] - S[:, v]|^2 for v in [lo, hi), summed over k in a
    loop (any d; the per-term kernels' arithmetic at every d).

    Parameters
    ----------
    row : Row
        The row u and the range [lo, hi) of v (:class:`~.records.Row`).
    S : ndarray, shape (d, n)
        Pair sums, coordinate-major.
    r2 : ndarray, shape (>= hi,)
        Output; entries outside [lo, hi) are left as they are.
    """
    u, lo, hi = row
    for v in range(lo, hi):
        r2[v] = 0.0
    for k in range(S.shape[0]):
        su = S[k, u]
        for v in range(lo, hi):
            dk = su - S[k, v]
            r2[v] += dk * dk


@njit(cache=True, fastmath=FAST, inline="always")
def squared_distances(row, S, r2):
    """As :func:`squared_distances_loop`, but at d = 2 one expression, which
    LLVM contracts into another FMA than the loop over k: it keeps the
    engine's trajectories of earlier versions bit for bit."""
    u, lo, hi = row
    if S.shape[0] == 2:
        s0 = S[0, u]
        s1 = S[1, u]
        for v in range(lo, hi):
            d0 = s0 - S[0, v]
            d1 = s1 - S[1, v]
            r2[v] = d0 * d0 + d1 * d1
    else:
        squared_distances_loop(row, S, r2)


@njit(cache=True, fastmath=FAST, inline="always")
def dot_products_loop(row, U, cc):
    """cc[v] = U[:, u] . U[:, v] for v in [lo, hi) (``row``, a
    :class:`~.records.Row`), summed over k in a loop; U (d, n), cc (>= hi,)."""
    u, lo, hi = row
    for v in range(lo, hi):
        cc[v] = 0.0
    for k in range(U.shape[0]):
        uu = U[k, u]
        for v in range(lo, hi):
            cc[v] += uu * U[k, v]


@njit(cache=True, fastmath=FAST, inline="always")
def dot_products(row, U, cc):
    """As :func:`dot_products_loop`, at d = 2 as one expression (the engine's)."""
    u, lo, hi = row
    if U.shape[0] == 2:
        u0 = U[0, u]
        u1 = U[1, u]
        for v in range(lo, hi):
            cc[v] = u0 * U[0, v] + u1 * U[1, v]
    else:
        dot_products_loop(row, U, cc)


@njit(cache=True, fastmath=FAST, inline="always")
def scatter_differences(row, S, coef, F, t0):
    """F[:, u] += sum_v coef[v] (S[:, u] - S[:, v]) and F[:, v] -= the same
    term (a central pair force), for v in [lo, hi).

    Parameters
    ----------
    row : Row
        The row u and the range [lo, hi) of v (:class:`~.records.Row`).
    S : ndarray, shape (d, n)
        Pair sums, coordinate-major.
    coef : ndarray, shape (>= hi,)
        The pair force's coefficient per v.
    F : ndarray, shape (d, n)
        Forces on the pair sums, added to.
    t0 : ndarray, shape (>= hi,)
        Scratch.
    """
    u, lo, hi = row
    for k in range(S.shape[0]):
        su = S[k, u]
        for v in range(lo, hi):
            fk = coef[v] * (su - S[k, v])
            t0[v] = fk
            F[k, v] -= fk
        F[k, u] += lane_sum(t0, lo, hi)


@njit(cache=True, fastmath=FAST, inline="always")
def scatter_products(row, U, coef, A, t0):
    """A[:, u] += sum_v coef[v] U[:, v] and A[:, v] += coef[v] U[:, u] for
    v in [lo, hi) (``row``, a :class:`~.records.Row`); U, A (d, n), coef
    (>= hi,), t0 (>= hi,) scratch."""
    u, lo, hi = row
    for k in range(U.shape[0]):
        uu = U[k, u]
        for v in range(lo, hi):
            t0[v] = coef[v] * U[k, v]
            A[k, v] += coef[v] * uu
        A[k, u] += lane_sum(t0, lo, hi)


@njit(cache=True, fastmath=FAST, inline="always")
def scatter_scalars(row, coef, values, B, t0):
    """B[v] += coef[v] values[v] for each v in [lo, hi) (``row``, a
    :class:`~.records.Row`), and B[u] += their sum; coef, values (>= hi,),
    B (n,), t0 (>= hi,) scratch."""
    u, lo, hi = row
    for v in range(lo, hi):
        wv = coef[v] * values[v]
        t0[v] = wv
        B[v] += wv
    B[u] += lane_sum(t0, lo, hi)


def squared_distances_reference(u: int, S: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """NumPy reference of :func:`squared_distances`: the values for v in [lo, hi)."""
    return np.sum((S[:, u:u + 1] - S[:, lo:hi]) ** 2, axis=0)


def dot_products_reference(u: int, U: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """NumPy reference of :func:`dot_products`."""
    return U[:, u] @ U[:, lo:hi]


def scatter_differences_reference(u: int, S: np.ndarray, coef: np.ndarray, lo: int, hi: int,
                                  F: np.ndarray) -> np.ndarray:
    """NumPy reference of :func:`scatter_differences`: F after the scatter (a copy)."""
    F = F.copy()
    f = coef[lo:hi] * (S[:, u:u + 1] - S[:, lo:hi])
    F[:, lo:hi] -= f
    F[:, u] += f.sum(axis=1)
    return F
