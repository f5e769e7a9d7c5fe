"""The force fit's linear algebra: strengths by (non-negative) least
squares, a step bounded below, and the scores of a fit (R^2 of the force
field, each term's share of the explained force, :func:`shares`)."""

from __future__ import annotations

import numpy as np
from scipy import linalg, optimize

__all__ = ["nnls", "r2", "shares", "normal_equations", "side_by_side", "lower_bounds", "bounded_solve", "column_rms"]


def nnls(A: np.ndarray, b: np.ndarray, nonnegative: bool) -> np.ndarray:
    """min ||A c - b|| (c >= 0 when ``nonnegative``), through a QR of A
    (Q' b applied by the Householder reflectors, Q never formed: a fifth of
    the time of forming it for the tall designs of the fit)."""
    if A.shape[0] < A.shape[1]:  # fewer rows than unknowns: the economic QR has a wide R
        Q, R = np.linalg.qr(A)
        qb = Q.T @ b
    else:
        qb, R = linalg.qr_multiply(A, b, mode="right")
    if not nonnegative:
        return np.linalg.lstsq(R, qb, rcond=None)[0]
    return optimize.nnls(R, qb, maxiter=50 * A.shape[1])[0]


def r2(obs: np.ndarray, pred: np.ndarray, d: int) -> float:
    """1 - SSE / sum |obs - mean force vector|^2 (rows flattened as (..., d))."""
    o = obs.reshape(-1, d)
    sst = float(np.sum((o - o.mean(axis=0)) ** 2))
    sse = float(np.sum((obs - pred) ** 2))
    return 1.0 - sse / sst if sst > 0 else float("nan")


def shares(A: np.ndarray, coef: np.ndarray) -> list[float]:
    """Each term's share of the explained force, the one definition every
    output uses: |c_k A_k|^2 / sum_j |c_j A_j|^2, term k's squared RMS force
    over the terms' total (between 0 and 1, summing to 1; all 0 when no
    term acts). It says which terms move the embedding, not which way:
    terms that oppose each other each keep a positive share."""
    norms = np.sum((A * coef) ** 2, axis=0)
    total = float(norms.sum())
    return [float(v / total) if total > 0 else 0.0 for v in norms]


def normal_equations(Z: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return Z.T @ Z, Z.T @ r


def side_by_side(*blocks: np.ndarray) -> np.ndarray:
    """The columns of the (rows, k_i) blocks side by side, Fortran-ordered
    (filled column block by column block; ``np.column_stack`` writes a
    C-ordered copy, several times slower for the fit's tall designs)."""
    out = np.empty((blocks[0].shape[0], sum(b.shape[1] for b in blocks)), order="F")
    k = 0
    for b in blocks:
        out[:, k:k + b.shape[1]] = b
        k += b.shape[1]
    return out


def lower_bounds(coef: np.ndarray, n_ranges: int, nonnegative: bool) -> np.ndarray:
    """Lower bounds of a step (strengths, log-ranges) that keeps the strengths >= 0."""
    return np.concatenate([-coef if nonnegative else np.full(coef.size, -np.inf), np.full(n_ranges, -np.inf)])


def bounded_solve(M: np.ndarray, v: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """argmin z' M z / 2 - v' z subject to z >= lower (M positive
    semi-definite; directions M does not see are left at 0)."""
    vals, vecs = np.linalg.eigh(M)
    keep = vals > max(float(vals.max()), 0.0) * 1e-12
    if not keep.any():
        return np.maximum(np.zeros_like(v), lower)
    z = vecs[:, keep] @ ((vecs[:, keep].T @ v) / vals[keep])
    if np.all(z >= lower):
        return z
    # a least-squares form of the same problem: |R z - q|^2 with R'R = M and R'q = v (on M's range)
    root = np.sqrt(vals[keep])
    R = root[:, None] * vecs[:, keep].T
    q = (vecs[:, keep].T @ v) / root
    # bvls: an exact active-set method for these few unknowns (the default trust-region method could
    # backtrack for minutes on an ill-conditioned replicate)
    return optimize.lsq_linear(R, q, bounds=(lower, np.full_like(lower, np.inf)), method="bvls",
                               max_iter=50 * len(lower)).x


def column_rms(A: np.ndarray) -> np.ndarray:
    """Root-mean-square of each column of A (rows, K), (K,), scaled by the
    column's largest magnitude first: the squares of values near 1e-256
    underflow to 0, which would read a tiny column as an empty one."""
    peak = np.max(np.abs(A), axis=0)
    safe = np.where(peak > 0, peak, 1.0)
    return peak * np.sqrt(np.mean((A / safe) ** 2, axis=0))
