"""The forces of the four pair terms (:data:`.law.PAIR_TERMS`) through the
token Gram matrix, each into its own buffers: the per-term counterpart of
:mod:`.gram` (whose docstring has the algebra), for the force-law fit's
design columns (:func:`.terms.snapshot_term_forces` on the direct path).

One snapshot at a time (:func:`gram_snapshot_term_forces`); snapshots
spread over threads (:func:`gram_term_forces_many`), each on its own
buffers, so the bits do not depend on the number of threads. Each term
adds to its own buffers in the order of the rows, so the same-class terms
(:func:`same_class_gram_terms`) and the other-class ones
(:func:`gram_term_rows`) take a pass over the rows each.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .alignment import cosine_params
from .clustering import distance_params, repulsion_factors
from .law import alignment_other, alignment_same, attraction
from .fastmath import FAST
from .gram import (LANES, add_column, apply_token_matrix, flush_tokens, gram_row, other_distance_coefficients,
                   pair_geometry, scatter_tokens)
from .records import PairGeometry, Row, RowRepulsion

__all__ = ["GramTermWorkspace", "make_gram_term_workspace", "same_class_gram_terms", "gram_term_rows",
           "term_token_matrix", "gram_snapshot_term_forces", "gram_term_forces_serial", "gram_term_forces_many"]


class GramTermWorkspace(NamedTuple):
    """The buffers of one snapshot's term forces on the Gram path
    (:func:`make_gram_term_workspace`): per term t of :data:`.law.PAIR_TERMS`
    the pieces of its token matrix (as :class:`~.gram.GramWorkspace`'s, one
    block), the matrix itself, scratch and the repulsion's factors."""

    Up: np.ndarray  # (4, p, p) P^T Q P from the rows' own side (u < v), zeroed
    Lo: np.ndarray  # (4, p, p) the other side, where Q is not symmetric (polar), zeroed
    D: np.ndarray  # (4, n) the pair diagonal (distance terms), zeroed
    B: np.ndarray  # (4, n) cosine sums h'(c) c (indices 2, 3), zeroed
    T: np.ndarray  # (4, n) polar sums lam h'(c) G / (rho rho) (indices 2, 3), zeroed
    scratch: np.ndarray  # (5, n): a row of G, 1 / rho, coefficients, cosines, scratch
    R: np.ndarray  # (2, LANES p) row vectors over tokens (scatter_tokens' lanes), zeroed
    M: np.ndarray  # (p, p) one term's token matrix (:func:`term_token_matrix`)
    eN: np.ndarray  # (n,) and
    EH: np.ndarray  # (p, n): the repulsion's factors (:func:`.clustering.repulsion_factors`; empty without term 1)
    factored: np.ndarray  # (1,) bool: term 1 from them


@njit(cache=True)
def make_gram_term_workspace(p, n, factors):
    """The buffers of :func:`gram_term_rows` for ``p`` tokens and ``n``
    pairs, the accumulators zeroed; the repulsion's factors only where
    ``factors`` (the other-class distance term is evaluated), else empty."""
    return GramTermWorkspace(np.zeros((4, p, p)), np.zeros((4, p, p)), np.zeros((4, n)), np.zeros((4, n)),
                             np.zeros((4, n)), np.empty((5, n)), np.zeros((2, LANES * p)), np.empty((p, p)),
                             np.empty(n if factors else 0), np.empty((p, n) if factors else (0, 0)),
                             np.zeros(1, dtype=np.bool_))


@njit(cache=True, fastmath=FAST)
def same_class_gram_terms(geo, system, prm, which, ws):
    """The same-class terms (indices 0 and 2) of every row, partner by
    partner, into ws.D[0], ws.Up[0] (distance) and ws.B[2], ws.T[2],
    ws.Up[2], ws.Lo[2] (cosine); parameters as :func:`gram_term_rows`'s,
    1 / rho read from ws.scratch[1]. G_uv = H[a_u, v] + H[b_u, v] is
    taken per partner into ws.scratch[0] (the sum :func:`.gram.gram_row`
    takes for a whole row)."""
    first, second, _g, H, N, _rho = geo
    Up, Lo, D, B, T = ws.Up, ws.Lo, ws.D, ws.B, ws.T
    same_ptr = system.same_ptr
    same_idx = system.same_idx
    G = ws.scratch[0]
    inv_rho = ws.scratch[1]
    law_d = distance_params(prm)
    law_c = cosine_params(prm)
    lam = prm.lam
    polar = prm.polar
    for u in range(N.shape[0]):
        a = first[u]
        b = second[u]
        nu = N[u]
        ha = H[a]
        hb = H[b]
        for p in range(same_ptr[u], same_ptr[u + 1]):
            v = same_idx[p]
            av = first[v]
            bv = second[v]
            if which[0]:
                r = nu + N[v] - 2.0 * (ha[v] + hb[v])
                c0 = -2.0 * attraction(r if r > 0.0 else 0.0, law_d)[1]
                D[0, u] += c0
                D[0, v] += c0
                Up[0, a, av] += c0
                Up[0, a, bv] += c0
                Up[0, b, av] += c0
                Up[0, b, bv] += c0
            if which[2]:
                # G_uv through memory, read after each store as the row's G of gram_row was: a product
                # kept in a register for both sums below would round once, and they would not be FMAs
                G[v] = ha[v] + hb[v]
                c = G[v] * (inv_rho[u] * inv_rho[v])  # as gram_block and the other-class loop: multiplied
                dhs = alignment_same(c, law_c)[1]
                B[2, u] += dhs * c
                B[2, v] += dhs * c
                k = lam * dhs * (inv_rho[u] * inv_rho[v])
                T[2, u] += k * G[v]
                T[2, v] += k * G[v]
                ku = k * nu if polar else k
                Up[2, a, av] += ku
                Up[2, a, bv] += ku
                Up[2, b, av] += ku
                Up[2, b, bv] += ku
                if polar:
                    kv = k * N[v]
                    Lo[2, a, av] += kv
                    Lo[2, a, bv] += kv
                    Lo[2, b, av] += kv
                    Lo[2, b, bv] += kv


@njit(cache=True, fastmath=FAST)
def gram_term_rows(geo, system, prm, which, ws):
    """The four pair terms (:data:`.law.PAIR_TERMS`) of every row into
    their own buffers: the same-class ones by
    :func:`same_class_gram_terms`, the other-class ones (indices 1 and 3)
    row by row against every v > u.

    Parameters
    ----------
    geo : PairGeometry
        The pair geometry of the state (:func:`.gram.pair_geometry`): ``H``
        (p, n), ``first``, ``second``, ``N``, ``rho`` (n,) are read.
    system : PairSystem
        Read are ``same_ptr``, ``same_idx``: the CSR lists of each pair's
        same-class partners v > u (:class:`~.forces.PairSystem`).
    prm : KernelParams
        The law.
    which : ndarray of bool, shape (4,)
        The terms evaluated (the others' buffers are not touched).
    ws : GramTermWorkspace
        Added to: Up, Lo (4, p, p), D (4, n) for the distance terms, B, T
        (4, n) for the cosine terms (indices 2, 3); scratch and R used; the
        other-class distance term from the repulsion's factors eN, EH
        (:func:`.clustering.repulsion_factors`) where ws.factored[0]
        (:class:`GramTermWorkspace`).
    """
    # the records' arrays read once, before the loops over rows (see .gram.gram_row)
    first, second, _g, H, N, rho = geo
    Up, Lo, D, B, T, scratch, R = ws.Up, ws.Lo, ws.D, ws.B, ws.T, ws.scratch, ws.R
    same_ptr = system.same_ptr
    same_idx = system.same_idx
    eN = ws.eN
    EH = ws.EH
    factored = ws.factored[0]
    n = N.shape[0]
    law_d = distance_params(prm)
    law_c = cosine_params(prm)
    G = scratch[0]
    inv_rho = scratch[1]  # 1 / rho, so the loops multiply
    coef = scratch[2]
    cc = scratch[3]
    t0 = scratch[4]
    R1 = R[0]
    R2 = R[1]
    lam = prm.lam
    polar = prm.polar
    for u in range(n):
        inv_rho[u] = 1.0 / rho[u]
    if which[0] or which[2]:
        same_class_gram_terms(geo, system, prm, which, ws)
    for u in range(n):
        lo = np.uint64(u + 1)
        hi = np.uint64(n)
        row = Row(u, lo, hi)
        a = first[u]
        b = second[u]
        nu = N[u]
        ha = H[a]
        hb = H[b]
        if which[1]:
            rep = RowRepulsion(factored, eN, EH[a], EH[b], prm, law_d)
            other_distance_coefficients(row, N, ha, hb, rep, coef)
            for p in range(same_ptr[u], same_ptr[u + 1]):
                coef[same_idx[p]] = 0.0
            add_column(coef, row, D[1])
            scatter_tokens(coef, row, first, second, R1)
            flush_tokens(row, first, second, R1, Up[1])
        if which[3]:
            gram_row(row, H, first, second, G)
            inv_ru = inv_rho[u]
            lam_ru = lam * inv_ru
            for v in range(lo, hi):
                c = G[v] * (inv_ru * inv_rho[v])
                cc[v] = c
                dhv = alignment_other(c, law_c)[1]
                coef[v] = dhv
                t0[v] = dhv * c
            for p in range(same_ptr[u], same_ptr[u + 1]):
                coef[same_idx[p]] = 0.0
                t0[same_idx[p]] = 0.0
            add_column(t0, row, B[3])
            for v in range(lo, hi):
                coef[v] *= lam_ru * inv_rho[v]
            if polar:
                for v in range(lo, hi):
                    t0[v] = coef[v] * G[v]
                add_column(t0, row, T[3])
                for v in range(lo, hi):
                    t0[v] = coef[v] * N[v]
                scatter_tokens(t0, row, first, second, R2)
                flush_tokens(row, first, second, R2, Lo[3])
                for v in range(lo, hi):
                    coef[v] *= nu
            scatter_tokens(coef, row, first, second, R1)
            flush_tokens(row, first, second, R1, Up[3])


@njit(cache=True)
def term_token_matrix(t, ws, geo, prm):
    """Term t's token matrix into ws.M (p, p) from its buffers.

    Parameters
    ----------
    t : int
        The term (index into :data:`.law.PAIR_TERMS`).
    ws : GramTermWorkspace
        Up, Lo (4, p, p), D, B, T (4, n) of :func:`gram_term_rows`, read;
        M (p, p), written.
    geo : PairGeometry
        Read are ``rho``, ``first`` and ``second`` (n,).
    prm : KernelParams
        ``lam`` and ``polar``.
    """
    Up = ws.Up
    Lo = ws.Lo
    D = ws.D
    B = ws.B
    T = ws.T
    M = ws.M
    rho = geo.rho
    first = geo.first
    second = geo.second
    p = M.shape[0]
    lo_side = Lo if (t >= 2 and prm.polar) else Up  # Q symmetric: the other side is Up itself
    for a in range(p):
        for c in range(p):
            M[a, c] = -(Up[t, a, c] + lo_side[t, c, a])
    lam = prm.lam
    for u in range(rho.shape[0]):
        if t < 2:
            dw = D[t, u]
        elif prm.polar:
            dw = T[t, u]
        else:
            dw = lam * B[t, u] / (rho[u] * rho[u])
        a = first[u]
        b = second[u]
        M[a, a] += dw
        M[a, b] += dw
        M[b, a] += dw
        M[b, b] += dw


@njit(cache=True)
def gram_snapshot_term_forces(x, system, prm, which, force):
    """The forces of the four pair terms on x (p, d) into ``force`` (4, p, d)
    on the Gram path (terms not in ``which`` are 0); as
    :func:`.terms.snapshot_term_forces`."""
    pairs = system.pairs
    p = x.shape[0]
    n = pairs.shape[0]
    geo = PairGeometry(np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1]), np.empty((p, p)),
                       np.empty((p, n)), np.empty(n), np.empty(n))
    ws = make_gram_term_workspace(p, n, which[1])  # the repulsion's factors only for that term
    pair_geometry(x, prm.eps, geo)
    ws.factored[0] = which[1] and repulsion_factors(prm, geo.N, geo.H, ws.eN, ws.EH)
    gram_term_rows(geo, system, prm, which, ws)
    for t in range(4):
        if which[t]:
            term_token_matrix(t, ws, geo, prm)
            apply_token_matrix(ws.M, x, 0.0, force[t])
        else:
            force[t][:] = 0.0


@njit(cache=True)
def gram_term_forces_serial(X, system, prm, which, force):
    """:func:`gram_term_forces_many` on one thread."""
    for t in range(X.shape[0]):
        gram_snapshot_term_forces(X[t], system, prm, which, force[t])


@njit(cache=True, parallel=True)
def gram_term_forces_many(X, system, prm, which, force):
    """:func:`gram_snapshot_term_forces` for every snapshot of X (T, p, d)
    into ``force`` (T, 4, p, d), snapshots spread over threads."""
    for t in prange(X.shape[0]):
        gram_snapshot_term_forces(X[t], system, prm, which, force[t])
