"""Energy and forces of the clustering-and-alignment model (compiled)."""

from __future__ import annotations

import numba
import numpy as np

from . import _kernels
from .datasets import PairDataset
from .parallelograms import same_label_pairs
from .params import ForceParams

__all__ = ["energy", "forces", "energy_and_forces", "same_class_partners", "PARALLEL_MIN_PAIRS"]

#: below this many training pairs the serial kernel is faster than the
#: parallel one (thread start-up dominates); measured in benchmarks/
PARALLEL_MIN_PAIRS = 256


def check_embedding(x: np.ndarray, p: int, name: str = "x", allow_1d: bool = False) -> np.ndarray:
    """``x`` as a C-contiguous float64 (p, d) array, or a clear error naming
    ``name``: wrong shape, not real, or not finite. ``allow_1d`` reads a (p,)
    array as (p, 1)."""
    x = np.asarray(x)
    if allow_1d and x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"{name} must have shape (p, d) = ({p}, d), got {x.shape}")
    if x.shape[0] != p:
        raise ValueError(f"{name} must have p = {p} rows (one per token), got {x.shape[0]}")
    if x.shape[1] < 1:
        raise ValueError(f"{name} must have dimension d >= 1, got {x.shape[1]}")
    if not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
        raise TypeError(f"{name} must be a real array, got dtype {x.dtype}")
    x = np.ascontiguousarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains non-finite values (NaN or inf)")
    return x


def _check_inputs(x: np.ndarray, train: PairDataset, params: ForceParams, name: str = "x") -> np.ndarray:
    if not isinstance(train, PairDataset):
        raise TypeError(f"train must be a PairDataset, got {type(train).__name__}")
    if not isinstance(params, ForceParams):
        raise TypeError(f"params must be a ForceParams, got {type(params).__name__}")
    x = check_embedding(x, train.p, name)
    if params.effective_lam > 0 and x.shape[1] < 2:
        raise ValueError(f"alignment (lam = {params.lam} > 0) needs dimension d >= 2, got d = {x.shape[1]}")
    if len(train) == 0:
        raise ValueError("train holds no pairs")
    return x


def same_class_partners(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each pair u, the pairs v > u with the same label, in CSR form.

    Returns ``(ptr, idx)``: the partners of u are ``idx[ptr[u]:ptr[u+1]]``.
    """
    par = same_label_pairs(labels)
    n = len(labels)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(par[:, 0], minlength=n), out=ptr[1:])
    return ptr, np.ascontiguousarray(par[:, 1])


def _n_chunks(n_pairs: int, parallel: bool | None) -> int:
    if parallel is None:
        parallel = n_pairs >= PARALLEL_MIN_PAIRS
    return numba.get_num_threads() if parallel else 1


def energy_and_forces(x: np.ndarray, train: PairDataset, params: ForceParams, *,
                      parallel: bool | None = None) -> tuple[float, np.ndarray]:
    """U(x) and the forces on every particle.

    Parameters
    ----------
    x : ndarray, shape (p, d)
        Particle positions (token embeddings).
    train : PairDataset
        Training pairs; pair sums interact by their labels.
    params : ForceParams
    parallel : bool, optional
        Use the multi-threaded kernel; default by size (PARALLEL_MIN_PAIRS).

    Returns
    -------
    energy : float
    force : ndarray, shape (p, d)
        -grad U for the ``"gradient"`` alignment; the torque-driven alignment
        force for ``"polar"``.
    """
    x = _check_inputs(x, train, params)
    return _evaluate(x, train.pairs, same_class_partners(train.labels), params.as_array(),
                     _n_chunks(len(train), parallel))


def _evaluate(x: np.ndarray, pairs: np.ndarray, same: tuple[np.ndarray, np.ndarray], prm: np.ndarray,
              n_chunks: int) -> tuple[float, np.ndarray]:
    force = np.empty_like(x)
    if n_chunks > 1:
        u = _kernels.forces_parallel(x, pairs, same[0], same[1], prm, force, n_chunks)
    else:
        u = _kernels.forces_serial(x, pairs, same[0], same[1], prm, force)
    return float(u), force


def energy(x: np.ndarray, train: PairDataset, params: ForceParams) -> float:
    """U(x) = U_clu + lam U_ali + (wd/2) sum_a |x_a|^2 (SPEC section 1)."""
    return energy_and_forces(x, train, params)[0]


def forces(x: np.ndarray, train: PairDataset, params: ForceParams) -> np.ndarray:
    """Force on every particle, shape (p, d); see :func:`energy_and_forces`."""
    return energy_and_forces(x, train, params)[1]
