"""The forces of the four pair terms (:data:`.law.PAIR_TERMS`) through the
token Gram matrix, each into its own buffers: the per-term counterpart of
:mod:`.gram` (whose docstring has the algebra), for the force-law fit's
design columns (:func:`.terms.snapshot_term_forces` on the direct path).

One snapshot at a time (:func:`gram_snapshot_term_forces`); snapshots
spread over threads (:func:`gram_term_forces_many`), each on its own
buffers, so the bits do not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .alignment import cosine_params
from .clustering import distance_params, repulsion_factors
from .law import alignment_other, alignment_same, attraction
from .fastmath import FAST
from .gram import (LANES, add_column, apply_token_matrix, flush_tokens, gram_row, other_distance_coefficients,
                   pair_geometry, scatter_tokens)

__all__ = ["gram_term_rows", "term_token_matrix", "gram_snapshot_term_forces", "gram_term_forces_serial",
           "gram_term_forces_many"]


@njit(cache=True, fastmath=FAST)
def gram_term_rows(H, first, second, N, rho, same_ptr, same_idx, prm, which, Up, Lo, D, B, T, scratch, R, factors):
    """The four pair terms (:data:`.law.PAIR_TERMS`) of every row into
    their own buffers: Up, Lo (4, p, p), D (4, n) for the distance terms,
    B, T (4, n) for the cosine terms (indices 2, 3). ``factors``:
    (factored, eN, EH), the other-class distance term from the repulsion's
    factors (:func:`.clustering.repulsion_factors`) when ``factored``."""
    factored, eN, EH = factors
    n = N.shape[0]
    law_d = distance_params(prm)
    law_c = cosine_params(prm)
    G = scratch[0]
    coef = scratch[2]
    cc = scratch[3]
    t0 = scratch[4]
    R1 = R[0]
    R2 = R[1]
    lam = prm.lam
    polar = prm.polar
    inv_rho = scratch[1]  # 1 / rho, so the loops multiply
    for u in range(n):
        inv_rho[u] = 1.0 / rho[u]
    for u in range(n):
        lo = np.uint64(u + 1)
        hi = np.uint64(n)
        a = first[u]
        b = second[u]
        if which[2] or which[3]:  # the distance terms read H's rows themselves
            gram_row(u, H, first, second, lo, hi, G)
        nu = N[u]
        ha = H[a]
        hb = H[b]
        # the same-class partners, one by one
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
        if which[1]:
            other_distance_coefficients(u, lo, hi, nu, N, ha, hb, law_d, (factored, eN, EH[a], EH[b], prm), coef)
            for p in range(same_ptr[u], same_ptr[u + 1]):
                coef[same_idx[p]] = 0.0
            add_column(coef, lo, hi, D[1], u)
            scatter_tokens(coef, lo, hi, first, second, R1)
            flush_tokens(u, first, second, R1, Up[1])
        if which[3]:
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
            add_column(t0, lo, hi, B[3], u)
            for v in range(lo, hi):
                coef[v] *= lam_ru * inv_rho[v]
            if polar:
                for v in range(lo, hi):
                    t0[v] = coef[v] * G[v]
                add_column(t0, lo, hi, T[3], u)
                for v in range(lo, hi):
                    t0[v] = coef[v] * N[v]
                scatter_tokens(t0, lo, hi, first, second, R2)
                flush_tokens(u, first, second, R2, Lo[3])
                for v in range(lo, hi):
                    coef[v] *= nu
            scatter_tokens(coef, lo, hi, first, second, R1)
            flush_tokens(u, first, second, R1, Up[3])


@njit(cache=True)
def term_token_matrix(t, Up, Lo, D, B, T, rho, first, second, prm, M):
    """Term t's token matrix M (p, p) from its buffers."""
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
    first = np.ascontiguousarray(pairs[:, 0])
    second = np.ascontiguousarray(pairs[:, 1])
    g = np.empty((p, p))
    H = np.empty((p, n))
    N = np.empty(n)
    rho = np.empty(n)
    Up = np.zeros((4, p, p))
    Lo = np.zeros((4, p, p))
    D = np.zeros((4, n))
    B = np.zeros((4, n))
    T = np.zeros((4, n))
    scratch = np.empty((5, n))
    R = np.zeros((2, LANES * p))
    M = np.empty((p, p))
    pair_geometry(x, prm.eps, first, second, g, N, rho, H)
    eN = np.empty(n if which[1] else 0)  # the repulsion's factors, only for that term
    EH = np.empty((p, n) if which[1] else (0, 0))
    factored = which[1] and repulsion_factors(prm, N, H, eN, EH)
    gram_term_rows(H, first, second, N, rho, system.same_ptr, system.same_idx, prm, which, Up, Lo, D, B, T,
                   scratch, R, (factored, eN, EH))
    for t in range(4):
        if which[t]:
            term_token_matrix(t, Up, Lo, D, B, T, rho, first, second, prm, M)
            apply_token_matrix(M, x, 0.0, force[t])
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
