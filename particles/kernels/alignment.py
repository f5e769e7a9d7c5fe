"""Alignment: the cosine terms' pair loop and forces.

With c = U_u . U_v (U = s / sqrt(|s|^2 + eps^2)), a pair u < v contributes
h(c) = ``alignment_same`` (same class) or ``alignment_other`` (different),
the terms defined in :mod:`.law`. :func:`alignment_block` accumulates, for every u,
A_u = sum_v h'(c) U_v and B_u = sum_v h'(c) c (a
:class:`~.records.CosineSums`); :func:`alignment_forces` turns them into
forces on the pair sums (dc/ds_u = (U_v - c U_u) / rho_u).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .fastmath import FAST, lane_sum
from .law import alignment_other, alignment_same, term_values
from .pair_loops import dot_products, scatter_products, scatter_scalars
from .records import Row

__all__ = ["alignment_block", "alignment_forces", "alignment_reference", "cosine_reference_parts",
           "cosine_forces_reference", "cosine_params"]


# The cosine terms, ``alignment_same`` for one class and ``alignment_other``
# for different classes, are defined once in .law (scalar functions of
# c = U_u . U_v returning (h(c), h'(c))), taking the parameters
# ``cosine_params`` reads; called by these global names (the slots, .slots).

#: see particles.kernels.clustering.EXACT_SAME
EXACT_SAME = False


@njit(cache=True)
def cosine_params(prm):
    """The parameters alignment_same and alignment_other take: the record itself."""
    return prm


@njit(cache=True, fastmath=FAST)
def alignment_block(rows, U, system, prm, cos, scratch):
    """Alignment terms of each row u in ``rows`` with every v > u, added to
    both rows of ``cos``. Returns their (unweighted) energy.

    Parameters
    ----------
    rows : ndarray of int64
        The rows u of this block (:func:`.forces.block_rows`).
    U : ndarray, shape (d, n)
        Softened directions of the pair sums.
    system : PairSystem
        The training pairs; read are ``same_ptr``, ``same_idx`` (as in
        :func:`~particles.kernels.clustering.clustering_block`).
    prm : KernelParams
        The law (its parameters as ``cosine_params`` reads them).
    cos : CosineSums
        A (d, n) += h'(c) U_v and B (n,) += h'(c) c, for both rows of each
        pair (:class:`~.records.CosineSums`).
    scratch : ndarray, shape (>= 4, n)
        Work space; loops as in
        :func:`~particles.kernels.clustering.clustering_block`.
    """
    same_ptr = system.same_ptr
    same_idx = system.same_idx
    A = cos.A
    B = cos.B
    n = B.shape[0]
    law = cosine_params(prm)
    cc = scratch[0]
    h = scratch[1]
    dh = scratch[2]
    t0 = scratch[3]
    energy = 0.0
    for q in range(rows.shape[0]):
        u = rows[q]
        lo = np.uint64(u + 1)
        hi = np.uint64(n)
        row = Row(u, lo, hi)
        dot_products(row, U, cc)  # cc = U_u . U_v
        # every v as another class: h(c) and dh = h'(c)
        for v in range(lo, hi):
            hv, dhv = alignment_other(cc[v], law)
            h[v] = hv
            dh[v] = dhv
        if EXACT_SAME:
            # as in clustering_block: same-class entries replaced before the sum
            for p in range(same_ptr[u], same_ptr[u + 1]):
                v = same_idx[p]
                hs, dhs = alignment_same(cc[v], law)
                h[v] = hs
                dh[v] = dhs
            energy += lane_sum(h, lo, hi)
        else:
            energy += lane_sum(h, lo, hi)
            # the same-class partners
            for p in range(same_ptr[u], same_ptr[u + 1]):
                v = same_idx[p]
                hs, dhs = alignment_same(cc[v], law)
                energy += hs - h[v]
                dh[v] = dhs
        scatter_products(row, U, dh, A, t0)  # A_u += dh U_v, A_v += dh U_u
        scatter_scalars(row, dh, cc, B, t0)  # B_u and B_v += dh c
    return energy


@njit(cache=True)
def alignment_forces(sums, cos, prm, F):
    """Add the alignment forces -lam dU_ali/ds_u (or the polar variant,
    f = |s|^2 g - (s . g) s) to F.

    Parameters
    ----------
    sums : PairSums
        S, U (d, n) and rho (n,) (:class:`~.records.PairSums`).
    cos : CosineSums
        A (d, n) and B (n,) of :func:`alignment_block`, summed over blocks.
    prm : KernelParams
        ``lam`` and ``polar``.
    F : ndarray, shape (d, n)
        Forces on the pair sums, added to.
    """
    S = sums.S
    U = sums.U
    rho = sums.rho
    A = cos.A
    B = cos.B
    d = S.shape[0]
    n = rho.shape[0]
    lam = prm.lam
    for u in range(n):
        scale = -lam / rho[u]
        if prm.polar:
            s2 = 0.0
            sg = 0.0
            for k in range(d):
                gk = scale * (A[k, u] - B[u] * U[k, u])
                s2 += S[k, u] * S[k, u]
                sg += S[k, u] * gk
            for k in range(d):
                gk = scale * (A[k, u] - B[u] * U[k, u])
                F[k, u] += s2 * gk - sg * S[k, u]
        else:
            for k in range(d):
                F[k, u] += scale * (A[k, u] - B[u] * U[k, u])


def cosine_reference_parts(S: np.ndarray, labels: np.ndarray, prm) -> dict:
    """What the NumPy references of the cosine terms share: the pair sums
    ``s`` (n, d), their softened norms ``rho``, unit vectors ``unit``, cosines
    ``c``, the same-label and off-diagonal masks, and each term's value and
    derivative in c (n, n; ``h_same``, ``dh_same``, ``h_other``,
    ``dh_other``), from the terms' definitions (:mod:`.law`) run by NumPy."""
    s = S.T
    n = s.shape[0]
    rho = np.hypot(np.linalg.norm(s, axis=1), prm.eps)  # no overflow for a huge softening
    unit = s / rho[:, None]
    c = unit @ unit.T
    h_same, dh_same = term_values(alignment_same, c, prm)
    h_other, dh_other = term_values(alignment_other, c, prm)
    return {"s": s, "rho": rho, "unit": unit, "c": c, "same": labels[:, None] == labels[None, :],
            "off": ~np.eye(n, dtype=bool), "h_same": h_same, "dh_same": dh_same, "h_other": h_other,
            "dh_other": dh_other}


def cosine_forces_reference(dh: np.ndarray, parts: dict, prm) -> np.ndarray:
    """Forces (d, n) on the pair sums of the cosine energy whose derivative
    in c is ``dh`` (n, n): -lam grad, or its polar transform."""
    s, rho, unit, c = parts["s"], parts["rho"], parts["unit"], parts["c"]
    grad = (dh @ unit - np.sum(dh * c, axis=1)[:, None] * unit) / rho[:, None]  # dc_uv/ds_u = (U_v - c U_u) / rho_u
    f = -prm.lam * grad
    if prm.polar:
        f = np.sum(s ** 2, axis=1)[:, None] * f - np.sum(s * f, axis=1)[:, None] * s
    return f.T.copy()


def alignment_reference(S: np.ndarray, labels: np.ndarray, prm) -> tuple[np.ndarray, float]:
    """NumPy reference: alignment forces on the pair sums (d, n) and
    lam U_ali, for a :class:`~particles.kernels.kernel_params.KernelParams`."""
    parts = cosine_reference_parts(S, labels, prm)
    same, off = parts["same"], parts["off"]
    h = np.where(same, parts["h_same"], parts["h_other"]) * off
    dh = np.where(same, parts["dh_same"], parts["dh_other"]) * off
    return cosine_forces_reference(dh, parts, prm), float(prm.lam * 0.5 * np.sum(h))
