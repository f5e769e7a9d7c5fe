"""From particles to pair sums and back.

Pair sums are stored coordinate-major, S[k, u] for dimension k and training
pair u, so the inner loops over u run over contiguous memory and vectorise.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["pair_sums", "scatter_to_particles", "weight_decay_energy",
           "pair_sums_reference", "scatter_reference"]


@njit(cache=True)
def pair_sums(x, pairs, eps, S, U, rho):
    """Pair sums S, softened directions U = S / rho and
    rho = sqrt(|S|^2 + eps^2) (n,) of the particles x (p, d). S and U have
    shape (d, n + padding); only the first n columns are written."""
    d = S.shape[0]
    n = pairs.shape[0]
    for u in range(n):
        a = pairs[u, 0]
        b = pairs[u, 1]
        r2 = eps * eps
        for k in range(d):
            S[k, u] = x[a, k] + x[b, k]
            r2 += S[k, u] * S[k, u]
        rho[u] = np.sqrt(r2)
        for k in range(d):
            U[k, u] = S[k, u] / rho[u]


@njit(cache=True)
def scatter_to_particles(x, pairs, F, wd, force):
    """force[a] = -wd x_a + sum of F[:, u] over the pairs u that contain a
    (twice for u = (a, a))."""
    d = F.shape[0]
    n = pairs.shape[0]
    for a in range(x.shape[0]):
        for k in range(d):
            force[a, k] = -wd * x[a, k]
    for u in range(n):
        a = pairs[u, 0]
        b = pairs[u, 1]
        for k in range(d):
            force[a, k] += F[k, u]
            force[b, k] += F[k, u]


@njit(cache=True)
def weight_decay_energy(x, wd):
    """(wd / 2) sum_a |x_a|^2."""
    e = 0.0
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            e += x[a, k] * x[a, k]
    return 0.5 * wd * e


def pair_sums_reference(x: np.ndarray, pairs: np.ndarray, eps: float):
    """NumPy reference of :func:`pair_sums`: (S, U, rho) with S, U of shape (d, n)."""
    s = x[pairs[:, 0]] + x[pairs[:, 1]]
    rho = np.sqrt(np.sum(s * s, axis=1) + eps * eps)
    return s.T.copy(), (s / rho[:, None]).T.copy(), rho


def scatter_reference(x: np.ndarray, pairs: np.ndarray, F: np.ndarray, wd: float) -> np.ndarray:
    """NumPy reference of :func:`scatter_to_particles`."""
    force = -wd * x
    np.add.at(force, pairs[:, 0], F.T)
    np.add.at(force, pairs[:, 1], F.T)
    return force
