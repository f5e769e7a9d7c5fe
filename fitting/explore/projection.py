"""Two-dimensional views of embeddings: the plane itself for d = 2, otherwise
the two leading principal components (with signs kept from frame to frame) or
the Fourier plane of one frequency (:func:`fourier_plane`), and the share of
the embedding's variance a plane holds (:func:`plane_share`)."""

from __future__ import annotations

import numpy as np

__all__ = ["principal_plane", "fourier_plane", "plane_share", "project"]


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


def fourier_plane(E: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The Fourier plane of frequency ``k``: where the embedding's circle of frequency k lies.

    With tokens t = 0..p-1 (row t of ``E``), the two d-vectors

    ``c = sum_t cos(2 pi k t / p) E_t`` and ``s = sum_t sin(2 pi k t / p) E_t``

    (the real part and minus the imaginary part of the Fourier coefficient
    ``F_k = sum_t exp(-2 pi i k t / p) E_t`` whose norm is the signal S_k)
    span the plane; the basis is ``c`` normalised and ``s`` made orthogonal to
    it and normalised (Gram-Schmidt, in that order). A perfect circle of
    frequency k, ``E_t = m + r (cos(2 pi k t / p) a + sin(2 pi k t / p) b)``
    with a, b orthonormal, projects onto token t at angle ``2 pi k t / p``,
    counter-clockwise, radius r. Centring over tokens does not change ``c``
    and ``s`` (the cosines and sines of 0 < k < p sum to zero over t).

    Parameters
    ----------
    E : ndarray, shape (p, d)
        Token embeddings, row t the embedding of token t.
    k : int
        The frequency, 1 <= k <= (p - 1) // 2.

    Returns
    -------
    center : ndarray, shape (d,)
        The mean over tokens.
    basis : ndarray, shape (d, 2)
        Orthonormal columns: the cos direction, then the sin direction
        orthogonalised. When ``s`` is parallel to ``c`` (relative residual
        below 1e-12) the second column is zero.
    explained : float
        The share of the embedding's variance (centred over tokens) in the
        plane, :func:`plane_share`.

    Raises
    ------
    ValueError
        For k outside 1..(p-1)//2, or a frequency without power (``c`` and
        ``s`` both below 1e-12 times the norm of ``E``: rounding): it has
        no plane.
    """
    E = np.asarray(E, dtype=float)
    if E.ndim != 2:
        raise ValueError(f"E must have shape (p, d), got {E.shape}")
    p, d = E.shape
    K = (p - 1) // 2
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= K:
        raise ValueError(f"k must be a frequency in 1..{K} (p = {p}), got {k!r}")
    angle = 2.0 * np.pi * int(k) * np.arange(p) / p
    c = np.cos(angle) @ E
    s = np.sin(angle) @ E
    scale = max(float(np.linalg.norm(c)), float(np.linalg.norm(s)))
    if not scale > 1e-12 * float(np.linalg.norm(E)) or scale == 0:  # rounding of a frequency that is not there
        raise ValueError(f"frequency {int(k)} has no power in this embedding: it has no Fourier plane")
    basis = np.zeros((d, 2))
    first, second = (c, s) if np.linalg.norm(c) >= 1e-12 * scale else (s, c)
    basis[:, 0] = first / np.linalg.norm(first)
    rest = second - (second @ basis[:, 0]) * basis[:, 0]
    if np.linalg.norm(rest) > 1e-12 * scale:
        basis[:, 1] = rest / np.linalg.norm(rest)
    if first is s:  # keep the order cos, sin: the only direction there is goes to the axis it came from
        basis = basis[:, ::-1].copy()
    center = E.mean(axis=0)
    return center, basis, plane_share(E, basis)


def plane_share(E: np.ndarray, basis: np.ndarray) -> float:
    """The share of the variance of ``E`` (p, d), centred over tokens, that lies in the plane of the
    orthonormal columns ``basis`` (d, 2): ``|(E - mean) basis|^2 / |E - mean|^2`` (1 for an embedding
    without variance)."""
    E = np.asarray(E, dtype=float)
    centred = E - E.mean(axis=0)
    total = float(np.sum(centred ** 2))
    return float(np.sum((centred @ basis) ** 2) / total) if total > 0 else 1.0
