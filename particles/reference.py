"""Plain NumPy reference of the particle energy and forces.

Dense u x v matrices of the law's terms, each term from its one definition
(:mod:`particles.kernels.law`) run by NumPy with the exact exp
(:func:`particles.kernels.clustering.clustering_reference`,
:func:`particles.kernels.alignment.alignment_reference`), so the compiled
kernels' loops, paths and approximations are checked against it; the
definitions themselves are checked against the formulas of docs/particles.md
in tests/particles/kernels/test_law.py. It is O(n^2) in memory and meant for
tests and benchmarks, not for runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernels.alignment import alignment_reference
from .kernels.clustering import clustering_reference
from .pair_energy import PairEnergy
from .params import ForceParams
from .core.validation import check_array

__all__ = ["pair_sums_reference", "pair_forces_reference", "energy_reference", "forces_reference"]


def pair_sums_reference(x: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """s_u = x_a + x_b for every pair u = (a, b); shape (n, d)."""
    return x[pairs[:, 0]] + x[pairs[:, 1]]


def pair_forces_reference(s: np.ndarray, labels: np.ndarray, params: ForceParams | PairEnergy
                          ) -> tuple[np.ndarray, float]:
    """Forces f_u = -dU/ds_u on the pair sums (alignment transformed for the
    ``"polar"`` variant) and the interaction energy U_clu + lam U_ali.

    Parameters
    ----------
    s : ndarray, shape (n, d)
    labels : ndarray of int, shape (n,)
    params : ForceParams or PairEnergy
        A custom energy runs its own NumPy path
        (:meth:`PairEnergy.pair_forces_reference`).

    Returns
    -------
    f : ndarray, shape (n, d)
    u : float
    """
    own = getattr(params, "pair_forces_reference", None)  # a custom law's own NumPy path
    if own is not None:
        return own(s, labels)
    prm = params.kernel_params()  # the law as the forces use it (the classifier variant folded in)
    S = np.ascontiguousarray(s.T)
    f, energy = clustering_reference(S, labels, prm)
    if prm.lam > 0:
        if s.shape[1] < 2:
            raise ValueError("alignment (lam > 0) needs dimension d >= 2")
        f_ali, e_ali = alignment_reference(S, labels, prm)
        f, energy = f + f_ali, energy + e_ali
    return f.T.copy(), float(energy)


def _scatter(f_pairs: np.ndarray, pairs: np.ndarray, p: int) -> np.ndarray:
    force = np.zeros((p, f_pairs.shape[1]))
    np.add.at(force, pairs[:, 0], f_pairs)
    np.add.at(force, pairs[:, 1], f_pairs)
    return force


def _check_system(x: Any, pairs: Any, labels: Any, params: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x (p, d) real and finite; pairs (n, 2) token indices in [0, p); labels (n,) ints; params a force law."""
    if not getattr(params, "simulates", False) or isinstance(params, type):  # a law the engine runs
        raise TypeError(f"params must be a ForceParams or a PairEnergy, got {type(params).__name__}")
    x = check_array(x, "x", ndim=2)
    pairs = check_array(pairs, "pairs", dtype="int", shape=(None, 2))
    labels = check_array(labels, "labels", dtype="int", ndim=1)
    if labels.shape[0] != pairs.shape[0]:
        raise ValueError(f"labels must have shape ({pairs.shape[0]},) to match pairs, got {labels.shape}")
    if pairs.size and (pairs.min() < 0 or pairs.max() >= x.shape[0]):
        raise ValueError(f"pairs must hold token indices in [0, p) with p = {x.shape[0]} rows of x, got range "
                         f"[{pairs.min()}, {pairs.max()}]")
    return x, pairs, labels


def energy_reference(x: np.ndarray, pairs: np.ndarray, labels: np.ndarray, params: ForceParams | PairEnergy
                     ) -> float:
    """U(x) of docs/particles.md, the energy."""
    x, pairs, labels = _check_system(x, pairs, labels, params)
    _, u = pair_forces_reference(pair_sums_reference(x, pairs), labels, params)
    return u + 0.5 * params.effective_wd * float(np.sum(x**2))


def forces_reference(x: np.ndarray, pairs: np.ndarray, labels: np.ndarray, params: ForceParams | PairEnergy
                     ) -> np.ndarray:
    """F_a = sum over pairs u containing a of f_u (twice for u = (a, a)), minus the particle decay times x_a."""
    x, pairs, labels = _check_system(x, pairs, labels, params)
    f_pairs, _ = pair_forces_reference(pair_sums_reference(x, pairs), labels, params)
    return _scatter(f_pairs, pairs, x.shape[0]) - params.effective_wd * x
