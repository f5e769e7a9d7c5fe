"""Generalised least squares pieces of the covariance-weighted refit:
whitening by a banded covariance, the normal equations of whitened rows,
their residual, standard errors, and solves and inverses with the columns
scaled to unit diagonal."""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.linalg.lapack import dpbtrf, dtbtrs

__all__ = ["whiten", "normal_equations", "whitened_rss", "standard_errors", "scaled_inverse", "solve_scaled",
           "PIVOT_FLOOR"]

#: smallest squared Cholesky pivot of a unit-diagonal normal matrix that
#: :func:`scaled_inverse` inverts by Cholesky; below it the columns are nearly
#: collinear and the pseudo-inverse is used (which inverts the matrices above it
#: the same way, to rounding)
PIVOT_FLOOR = 1e-10


def whiten(band: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(W rhs[:, :-1], W rhs[:, -1]) with W = U'^-1 for the symmetric positive
    definite band matrix C = U' U in the upper storage of
    ``scipy.linalg.solveh_banded`` (one triangular solve where
    ``solveh_banded`` makes two); LinAlgError when C is not positive
    definite, ValueError when either is not finite (LAPACK would carry NaN on)."""
    if not (np.all(np.isfinite(band)) and np.all(np.isfinite(rhs))):
        raise ValueError("the rows or their covariance are not finite (a coefficient or state too large)")
    U, info = dpbtrf(band)
    if info != 0:
        raise LinAlgError(f"the rows' covariance is not positive definite (LAPACK dpbtrf info {info})")
    out, info = dtbtrs(U, rhs, uplo="U", trans="T")
    if info != 0:
        raise LinAlgError(f"the rows' covariance factor is singular (LAPACK dtbtrs info {info})")
    return out[:, :-1], out[:, -1]


def normal_equations(parts) -> tuple[np.ndarray, np.ndarray, int]:
    """D' C^-1 D, D' C^-1 b and the number of rows, summed over runs (parts: whitened (W D, W b))."""
    M = sum(WD.T @ WD for WD, _ in parts)
    v = sum(WD.T @ Wb for WD, Wb in parts)
    return M, v, sum(len(Wb) for _, Wb in parts)


def whitened_rss(parts, xi: np.ndarray, cols: np.ndarray | None = None) -> float:
    """r' C^-1 r = |W D xi - W b|^2 of the residual r = D xi - b (D's columns
    ``cols``, all by default), run by run."""
    if cols is None:
        return sum(float(np.sum((WD @ xi - Wb) ** 2)) for WD, Wb in parts)
    return sum(float(np.sum((WD[:, cols] @ xi - Wb) ** 2)) for WD, Wb in parts)


def standard_errors(M: np.ndarray, s2: float) -> np.ndarray:
    """sqrt(diag(M^-1) s2): the GLS standard errors from the normal matrix M."""
    return np.sqrt(np.maximum(np.diag(scaled_inverse(M)), 0.0) * s2)


def scaled_inverse(M: np.ndarray) -> np.ndarray:
    """M^-1 of a symmetric positive semi-definite normal matrix, its columns
    scaled to unit diagonal for conditioning: by Cholesky, or by the
    pseudo-inverse when the scaled matrix is not numerically positive
    definite (collinear terms)."""
    scale = np.sqrt(np.abs(np.diag(M)))
    scale[scale == 0] = 1.0
    outer = np.outer(scale, scale)
    A = M / outer
    try:
        factor = cho_factor(A, check_finite=False)
    except LinAlgError:
        factor = None
    # a pivot below PIVOT_FLOOR (of a unit diagonal) means nearly collinear columns, whose Cholesky
    # inverse is rounding noise: the pseudo-inverse then drops the directions the data do not fix
    if factor is None or not np.min(np.abs(np.diag(factor[0]))) ** 2 >= PIVOT_FLOOR:
        return np.linalg.pinv(A) / outer
    return cho_solve(factor, np.eye(len(A)), check_finite=False) / outer


def solve_scaled(M: np.ndarray, v: np.ndarray) -> np.ndarray:
    """M xi = v with the columns scaled to unit diagonal (conditioning)."""
    scale = np.sqrt(np.abs(np.diag(M)))
    scale[scale == 0] = 1.0
    return np.linalg.lstsq(M / np.outer(scale, scale), v / scale, rcond=None)[0] / scale
