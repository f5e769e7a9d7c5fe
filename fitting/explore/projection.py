"""Two-dimensional views of embeddings: the plane itself for d = 2, otherwise
the two leading principal components, with signs kept from frame to frame."""

from __future__ import annotations

import numpy as np

__all__ = ["principal_plane", "project"]


def principal_plane(E: np.ndarray, previous: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """The plane of the two leading principal components of ``E``.

    Parameters
    ----------
    E : ndarray, shape (n, d)
        Points (tokens or pair sums) in d dimensions.
    previous : ndarray, shape (d, 2), optional
        The last frame's basis: each new axis takes the sign that points the
        same way, so the picture does not flip between frames.

    Returns
    -------
    center : ndarray, shape (d,)
    basis : ndarray, shape (d, 2)
        Orthonormal columns (for d = 1 the second column is zero).
    explained : float
        The share of the variance about ``center`` in the plane (1 for d <= 2).
    """
    E = np.asarray(E, dtype=float)
    n, d = E.shape
    center = E.mean(axis=0)
    if d <= 2:
        basis = np.eye(d, 2)
        return center, basis, 1.0
    _, s, vt = np.linalg.svd(E - center, full_matrices=False)
    basis = np.zeros((d, 2))
    k = min(2, vt.shape[0])
    basis[:, :k] = vt[:k].T
    if previous is not None and previous.shape == basis.shape:
        signs = np.sign(np.sum(previous * basis, axis=0))
        basis *= np.where(signs == 0, 1.0, signs)
    total = float(np.sum(s ** 2))
    explained = float(np.sum(s[:2] ** 2) / total) if total > 0 else 1.0
    return center, basis, explained


def project(E: np.ndarray, center: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """``(E - center) @ basis`` for d > 2; the points themselves (padded to two columns) otherwise."""
    E = np.asarray(E, dtype=float)
    if E.shape[1] <= 2:
        out = np.zeros((E.shape[0], 2))
        out[:, :E.shape[1]] = E
        return out
    return (E - center) @ basis
