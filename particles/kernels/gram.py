"""The pair forces through the token Gram matrix: a pair loop whose cost does
not grow with the dimension d.

Every law of the package depends on the embedding x (p, d) only through the
inner products of pair sums s_u = x_a + x_b: squared distances
|s_u - s_v|^2 = N_u + N_v - 2 G_uv and cosines G_uv / (rho_u rho_v), with
G_uv = s_u . s_v and N_u = G_uu. G comes from the token Gram matrix
g = x x^T (p, p): G_uv = g[a_u, a_v] + g[a_u, b_v] + g[b_u, a_v] + g[b_u, b_v].
Every pair force is a combination of pair sums,

    f_u = dw_u s_u - sum_v Q_uv s_v,

(clustering: Q_uv = -2 phi'(r^2) and dw_u = sum_v Q_uv; alignment:
Q_uv = lam h'(c) / (rho_u rho_v), dw_u = lam sum_v h'(c) c / rho_u^2; the
polar variant: Q_uv = lam N_u h'(c) / (rho_u rho_v),
dw_u = lam sum_v h'(c) G_uv / (rho_u rho_v)), so the force on the tokens is
F = M x - decay x with the (p, p) matrix M = P^T diag(dw) P - P^T Q P (P the
n x p pair-token incidence, 2 for a pair (a, a)). The pair loop fills M in
O(n^2) work whatever d; g and M x cost O(p^2 d).

A row u of G is read as H[a_u] + H[b_u] from the token-pair products
H = g P^T (p, n), H[c, v] = x_c . s_v, made once per call
(:func:`token_pair_products`): the pair loop's reads are then contiguous,
with no gather through the tokens of v. Its writes still go to the tokens
of v (:func:`scatter_tokens`); a token-by-pair buffer folded once per call
was measured instead and was no faster (docs/particles.md). The built-in
repulsion's exponential factors over H (:func:`.clustering.repulsion_factors`,
:func:`prepare_pairs`): p n exponentials per call instead of one per pair,
where the factors' exponents allow. The per-term kernels are in
:mod:`.gram_terms`.

The arithmetic differs from the direct kernels (:mod:`.forces`,
:mod:`.terms`) by rounding: a squared distance taken from the Gram matrix
has an absolute error of about 1e-16 (N_u + N_v), so where two pair sums
nearly coincide on a law that is steep there (a custom law singular at
r = 0) the direct path is the exact one (``path="direct"``). Squared
distances below 0 by rounding are set to 0.

Loops as in :mod:`.pair_loops`: a row u meets every v > u in loops with
unsigned bounds; the law is called through the same global slots
(``attraction``, ..., :mod:`.slots`), so a custom law's copies come from
:func:`.rebind.rebind` as for the direct kernels.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange

from .alignment import cosine_params
from .clustering import distance_params, repulsion_factors, repulsion_from_factors
from .law import alignment_other, alignment_same, attraction, repulsion
from .fastmath import FAST, lane_sum
from .records import PairGeometry, Row, RowRepulsion

__all__ = ["GramWorkspace", "GramScratch", "make_gram_workspace", "token_gram", "pair_norms", "gram_row",
           "gram_block", "gram_forces_serial", "gram_forces_parallel", "apply_token_matrix", "token_pair_products",
           "pair_geometry", "prepare_pairs", "scatter_tokens", "flush_tokens", "add_column",
           "other_distance_coefficients", "LANES", "token_gram_reference", "pair_gram_reference",
           "token_pair_products_reference", "GRAM_SCRATCH_ROWS"]

#: scratch vectors of length n one block of the Gram path needs
GRAM_SCRATCH_ROWS = 8
#: interleaved copies of the token accumulators (:func:`scatter_tokens`; flush_tokens sums 4)
LANES = 4


class GramWorkspace(NamedTuple):
    """Buffers of one run on the Gram path, allocated once (:func:`make_gram_workspace`)."""

    first: np.ndarray  # (n,) int64 first token of each pair
    second: np.ndarray  # (n,) int64 second token
    g: np.ndarray  # (p, p) token Gram matrix
    H: np.ndarray  # (p, n) token-pair inner products x_c . s_v (:func:`token_pair_products`)
    N: np.ndarray  # (n,) squared norms of the pair sums
    rho: np.ndarray  # (n,) softened norms sqrt(N + eps^2)
    eN: np.ndarray  # (n,) and
    EH: np.ndarray  # (p, n): the repulsion's factors (:func:`.clustering.repulsion_factors`)
    factored: np.ndarray  # (1,) bool: this call's repulsion from them
    Up: np.ndarray  # (n_blocks, p, p) P^T Q P from the rows' own side (u < v)
    Lo: np.ndarray  # (n_blocks, p, p) the other side, where Q is not symmetric (polar)
    D: np.ndarray  # (n_blocks, n) the pair diagonal (clustering part)
    B: np.ndarray  # (n_blocks, n) alignment sums h'(c) c
    T: np.ndarray  # (n_blocks, n) polar sums h'(c) G / (rho rho)
    block_energy: np.ndarray  # (n_blocks,)
    M: np.ndarray  # (p, p) the token matrix
    scratch: np.ndarray  # (n_threads, GRAM_SCRATCH_ROWS, n)
    R: np.ndarray  # (n_threads, 2, LANES p) row vectors over tokens (scatter_tokens' lanes)


class GramScratch(NamedTuple):
    """One thread's work space in :func:`gram_block` (rows of
    ``GramWorkspace.scratch`` and ``.R``)."""

    vectors: np.ndarray  # (GRAM_SCRATCH_ROWS, n) vectors over the pairs
    lanes: np.ndarray  # (2, LANES p) row vectors over tokens (scatter_tokens' lanes), 0 between rows


def make_gram_workspace(p: int, pairs: np.ndarray, n_blocks: int, n_threads: int, polar: bool = True
                        ) -> GramWorkspace:
    """The buffers of a run of ``p`` tokens on ``pairs``; the other side of
    Q (``Lo``) only for the polar alignment (else empty)."""
    n = len(pairs)
    t = max(1, n_threads)
    q = p if polar else 0
    return GramWorkspace(np.ascontiguousarray(pairs[:, 0], dtype=np.int64),
                         np.ascontiguousarray(pairs[:, 1], dtype=np.int64), np.empty((p, p)), np.empty((p, n)),
                         np.empty(n), np.empty(n), np.empty(n), np.empty((p, n)), np.zeros(1, dtype=np.bool_),
                         np.empty((n_blocks, p, p)), np.empty((n_blocks, q, q)),
                         np.empty((n_blocks, n)), np.empty((n_blocks, n)), np.empty((n_blocks, n)), np.empty(n_blocks),
                         np.empty((p, p)),
                         np.empty((t, GRAM_SCRATCH_ROWS, n)), np.zeros((t, 2, LANES * p)))  # R: zero between rows


@njit(cache=True, fastmath=FAST, inline="always")
def add_four(out, n, s0, v0, s1, v1, s2, v2, s3, v3):
    """out[i] = (((out[i] + s0 v0[i]) + s1 v1[i]) + s2 v2[i]) + s3 v3[i] for
    i < n: four scaled rows added in order, in one pass over ``out`` (its
    loads and stores shared; the order of each sum that of four single passes)."""
    for i in range(n):
        out[i] = (((out[i] + s0 * v0[i]) + s1 * v1[i]) + s2 * v2[i]) + s3 * v3[i]


@njit(cache=True, fastmath=FAST, inline="always")
def add_one(out, n, s, v):
    """out[i] += s v[i] for i < n."""
    for i in range(n):
        out[i] += s * v[i]


@njit(cache=True, fastmath=FAST)
def token_gram(x, g):
    """g = x x^T (p, p), a fixed-order loop (no BLAS: the same bits on any
    number of threads). Each entry sums over k = 0, 1, ..., d - 1 in order;
    the loop runs over tokens innermost (on x transposed), so it vectorises
    across entries without reassociating any sum, and takes four k per pass
    over a row (the row's loads and stores shared, the order unchanged)."""
    p = x.shape[0]
    d = x.shape[1]
    xt = np.empty((d, p))
    for a in range(p):
        for k in range(d):
            xt[k, a] = x[a, k]
    for a in range(p):
        row = g[a]
        for c in range(a + 1):
            row[c] = 0.0
        k = 0
        while k + 4 <= d:
            add_four(row, a + 1, x[a, k], xt[k], x[a, k + 1], xt[k + 1], x[a, k + 2], xt[k + 2], x[a, k + 3], xt[k + 3])
            k += 4
        while k < d:
            add_one(row, a + 1, x[a, k], xt[k])
            k += 1
        for c in range(a):
            g[c, a] = row[c]


@njit(cache=True)
def pair_norms(g, first, second, eps, N, rho):
    """N_u = |s_u|^2 and rho_u = sqrt(N_u + eps^2) from the token Gram matrix."""
    for u in range(N.shape[0]):
        a = first[u]
        b = second[u]
        nu = g[a, a] + 2.0 * g[a, b] + g[b, b]
        if nu < 0.0:
            nu = 0.0
        N[u] = nu
        rho[u] = np.sqrt(nu + eps * eps)


@njit(cache=True, fastmath=FAST)
def token_pair_products(g, first, second, H):
    """H[c, v] = x_c . s_v = g[c, a_v] + g[c, b_v] (p, n): a row u of the
    pair Gram matrix is then H[a_u] + H[b_u], read contiguously."""
    for c in range(H.shape[0]):
        gc = g[c]
        hc = H[c]
        for v in range(H.shape[1]):
            hc[v] = gc[first[v]] + gc[second[v]]


@njit(cache=True)
def pair_geometry(x, eps, geo):
    """Everything the pair loop reads of x into ``geo``.

    Parameters
    ----------
    x : ndarray, shape (p, d)
        The particles.
    eps : float
        The norms' softening.
    geo : PairGeometry
        ``first``, ``second`` (n,): the pairs' tokens, read; ``g`` (p, p),
        the token Gram matrix, ``N``, ``rho`` (n,), the pair norms, and ``H``
        (p, n), the token-pair products, written
        (:class:`~.records.PairGeometry`).
    """
    token_gram(x, geo.g)
    pair_norms(geo.g, geo.first, geo.second, eps, geo.N, geo.rho)
    token_pair_products(geo.g, geo.first, geo.second, geo.H)


@njit(cache=True)
def prepare_pairs(x, prm, ws):
    """:func:`pair_geometry` into the workspace, and the repulsion's factors
    where they apply (``ws.factored``)."""
    pair_geometry(x, prm.eps, PairGeometry(ws.first, ws.second, ws.g, ws.H, ws.N, ws.rho))
    ws.factored[0] = prm.k_r > 0.0 and repulsion_factors(prm, ws.N, ws.H, ws.eN, ws.EH)


@njit(cache=True, fastmath=FAST, inline="always")
def gram_row(row, H, first, second, G):
    """G[v] = s_u . s_v = H[a_u, v] + H[b_u, v] for v in [lo, hi).

    Parameters
    ----------
    row : Row
        The row u and the range [lo, hi) of v (:class:`~.records.Row`).
    H : ndarray, shape (p, n)
        The token-pair products (:func:`token_pair_products`).
    first, second : ndarray of int64, shape (n,)
        The pairs' tokens a_u, b_u.
    G : ndarray, shape (>= hi,)
        Output.

    Notes
    -----
    The helpers a row's loop calls take arrays, not records of them: a
    record's array read inside the loop over rows is reference counted
    there, once a row (:class:`~.records.Row`, scalars only, is free).
    """
    u, lo, hi = row
    ha = H[first[u]]
    hb = H[second[u]]
    for v in range(lo, hi):
        G[v] = ha[v] + hb[v]


@njit(cache=True, fastmath=FAST, inline="always")
def scatter_tokens(coef, row, first, second, R):
    """R[a_v] += coef[v] and R[b_v] += coef[v] for v in [lo, hi) (``row``,
    a :class:`~.records.Row`; a_v, b_v from ``first``, ``second`` (n,)), in
    LANES interleaved copies (R has LANES p entries; v goes to copy v mod
    LANES): consecutive pairs often share a token, and one copy would chain
    each add on the store before it."""
    lo = row.lo
    hi = row.hi
    for v in range(lo, hi):
        cv = coef[v]
        lane = v & np.uint64(LANES - 1)
        R[LANES * first[v] + lane] += cv
        R[LANES * second[v] + lane] += cv


@njit(cache=True, fastmath=FAST, inline="always")
def flush_tokens(row, first, second, R, Up):
    """Rows a_u and b_u of Up (p, p) += R's lanes summed in a fixed order
    (twice row a for u = (a, a)); R back to 0. ``row``: a
    :class:`~.records.Row` (its u); ``first``, ``second`` (n,): the pairs'
    tokens."""
    u = row.u
    a = first[u]
    b = second[u]
    for c in range(Up.shape[1]):
        k = LANES * c
        s = (R[k] + R[k + 1]) + (R[k + 2] + R[k + 3])
        Up[a, c] += s
        Up[b, c] += s
        R[k] = 0.0
        R[k + 1] = 0.0
        R[k + 2] = 0.0
        R[k + 3] = 0.0


@njit(cache=True, fastmath=FAST, inline="always")
def add_column(coef, row, D):
    """D[u] += sum_v coef[v] (a lane sum) and D[v] += coef[v], for the
    row u and v in [lo, hi) of ``row`` (a :class:`~.records.Row`); D (n,)."""
    u, lo, hi = row
    for v in range(lo, hi):
        D[v] += coef[v]
    D[u] += lane_sum(coef, lo, hi)


@njit(cache=True, fastmath=FAST, inline="always")
def distance_row(row, N, ha, hb, same_ptr, same_idx, rep, r2, w, coef, D):
    """Row u's distance terms: coef[v] = -2 phi'(r^2) (the pair's Q), its
    pair diagonal into D; returns their energy. The same-class partners
    replace their entries before the sum (as a custom law's direct kernels
    do), for every law. ``ha``, ``hb``: rows a_u and b_u of H; ``rep``: the
    row's :class:`~.records.RowRepulsion` (the other-class terms from the
    repulsion's factors when ``rep.factored``; its ``law`` is the
    attraction's too). r2, w: scratch (n,)."""
    u, lo, hi = row
    nu = N[u]
    factored, eN, ea, eb, prm, law_d = rep  # unpacked here, not in the branch (no reference counting per row)
    if factored:
        cu = eN[u]
        for v in range(lo, hi):
            ev, dev = repulsion_from_factors((cu * eN[v]) * (ea[v] * eb[v]), prm)
            w[v] = ev
            coef[v] = -2.0 * dev
        for p in range(same_ptr[u], same_ptr[u + 1]):
            v = same_idx[p]
            r = nu + N[v] - 2.0 * (ha[v] + hb[v])
            r2[v] = r if r > 0.0 else 0.0
    else:
        for v in range(lo, hi):
            r = nu + N[v] - 2.0 * (ha[v] + hb[v])
            r = r if r > 0.0 else 0.0
            r2[v] = r
            ev, dev = repulsion(r, law_d)
            w[v] = ev
            coef[v] = -2.0 * dev
    for p in range(same_ptr[u], same_ptr[u + 1]):
        es, des = attraction(r2[same_idx[p]], law_d)
        w[same_idx[p]] = es
        coef[same_idx[p]] = -2.0 * des
    add_column(coef, row, D)
    return lane_sum(w, lo, hi)


@njit(cache=True, fastmath=FAST, inline="always")
def other_distance_coefficients(row, N, ha, hb, rep, coef):
    """coef[v] = -2 phi'(r^2) of the other-class distance term for v in
    [lo, hi) (the term forces' row; :func:`distance_row` also keeps the
    values), from the repulsion's factors when ``rep.factored`` (as there).

    Parameters
    ----------
    row : Row
        The row u and the range [lo, hi) of v (:class:`~.records.Row`).
    N : ndarray, shape (n,)
        Squared norms of the pair sums.
    ha, hb : ndarray, shape (n,)
        Rows a_u and b_u of the token-pair products H.
    rep : RowRepulsion
        The row's repulsion: its factors, or the law per pair
        (:class:`~.records.RowRepulsion`).
    coef : ndarray, shape (>= hi,)
        Output.
    """
    u, lo, hi = row
    factored, eN, ea, eb, prm, law_d = rep  # unpacked here, not in the branch (no reference counting per row)
    if factored:
        cu = eN[u]
        for v in range(lo, hi):
            coef[v] = -2.0 * repulsion_from_factors((cu * eN[v]) * (ea[v] * eb[v]), prm)[1]
    else:
        nu = N[u]
        for v in range(lo, hi):
            r = nu + N[v] - 2.0 * (ha[v] + hb[v])
            coef[v] = -2.0 * repulsion(r if r > 0.0 else 0.0, law_d)[1]


@njit(cache=True, fastmath=FAST, inline="always")
def cosine_row(row, inv_rho, G, same_ptr, same_idx, law_c, lam, cc, w, dh, t0, B):
    """Row u's cosine terms: dh[v] = lam h'(c) / (rho_u rho_v) (the
    gradient alignment's Q), the sums h'(c) c into B; returns their energy
    (same-class partners replaced before the sum, as in :func:`distance_row`).
    ``inv_rho``: 1 / rho, so that the loops multiply; cc, w, t0 scratch (n,)."""
    u, lo, hi = row
    inv_ru = inv_rho[u]
    for v in range(lo, hi):
        c = G[v] * (inv_ru * inv_rho[v])
        cc[v] = c
        hv, dhv = alignment_other(c, law_c)
        w[v] = hv
        dh[v] = dhv
        t0[v] = dhv * c
    for p in range(same_ptr[u], same_ptr[u + 1]):
        v = same_idx[p]
        hs, dhs = alignment_same(cc[v], law_c)
        w[v] = hs
        dh[v] = dhs
        t0[v] = dhs * cc[v]
    add_column(t0, row, B)
    lam_ru = lam * inv_ru
    for v in range(lo, hi):
        dh[v] = lam_ru * dh[v] * inv_rho[v]
    return lane_sum(w, lo, hi)


@njit(cache=True, fastmath=FAST)
def gram_block(rows, system, prm, ws, t, scratch):
    """Rows ``rows`` (each u against every v > u) of both terms into block
    t's buffers; returns U_clu + lam U_ali of these rows.

    Parameters
    ----------
    rows : ndarray of int64
        The rows u of this block (:func:`.forces.block_rows`).
    system : PairSystem
        Read are ``same_ptr``, ``same_idx``: the CSR lists of each pair's
        same-class partners v > u (:class:`~.forces.PairSystem`).
    prm : KernelParams
        The law.
    ws : GramWorkspace
        The pair geometry and the repulsion's factors (:func:`prepare_pairs`),
        read; block t's buffers ws.Up[t], ws.Lo[t] (p, p), ws.D[t],
        ws.B[t], ws.T[t] (n,), added to.
    t : int
        The block.
    scratch : GramScratch
        This thread's work space (:class:`GramScratch`).
    """
    # the records' arrays read once, before the loop over rows (see gram_row)
    same_ptr = system.same_ptr
    same_idx = system.same_idx
    first = ws.first
    second = ws.second
    N = ws.N
    H = ws.H
    eN = ws.eN
    EH = ws.EH
    Up = ws.Up[t]
    Lo = ws.Lo[t]
    D = ws.D[t]
    B = ws.B[t]
    T = ws.T[t]
    R = scratch.lanes
    R0 = R[0]
    R1 = R[1]
    vectors = scratch.vectors
    n = N.shape[0]
    law_d = distance_params(prm)
    law_c = cosine_params(prm)
    factored = ws.factored[0]
    G = vectors[0]
    r2 = vectors[1]
    w = vectors[2]
    coef = vectors[3]
    cc = vectors[4]
    dh = vectors[5]
    t0 = vectors[6]
    clu = prm.k_a > 0.0 or prm.k_r > 0.0
    ali = prm.lam > 0.0
    polar = prm.polar
    e_clu = 0.0
    e_ali = 0.0
    inv_rho = vectors[7]
    if ali:
        for v in range(n):
            inv_rho[v] = 1.0 / ws.rho[v]
    for q in range(rows.shape[0]):
        u = rows[q]
        lo = np.uint64(u + 1)
        hi = np.uint64(n)
        row = Row(u, lo, hi)
        if ali:  # the distance terms read H's rows themselves
            gram_row(row, H, first, second, G)
        nu = N[u]
        if clu:
            rep = RowRepulsion(factored, eN, EH[first[u]], EH[second[u]], prm, law_d)
            e_clu += distance_row(row, N, H[first[u]], H[second[u]], same_ptr, same_idx, rep, r2, w, coef, D)
        else:
            for v in range(lo, hi):
                coef[v] = 0.0
        if ali:
            e_ali += cosine_row(row, inv_rho, G, same_ptr, same_idx, law_c, prm.lam, cc, w, dh, t0, B)
            if polar:
                for v in range(lo, hi):
                    t0[v] = dh[v] * G[v]
                add_column(t0, row, T)
                for v in range(lo, hi):  # the other side: lam N_v K, with the clustering's symmetric part
                    t0[v] = coef[v] + N[v] * dh[v]
                scatter_tokens(t0, row, first, second, R1)
                flush_tokens(row, first, second, R1, Lo)
                for v in range(lo, hi):
                    coef[v] += nu * dh[v]
            else:
                for v in range(lo, hi):
                    coef[v] += dh[v]
        scatter_tokens(coef, row, first, second, R0)
        flush_tokens(row, first, second, R0, Up)
    return e_clu + prm.lam * e_ali


@njit(cache=True)
def clear_block(ws, t):
    ws.Up[t][:] = 0.0
    ws.Lo[t][:] = 0.0
    ws.D[t][:] = 0.0
    ws.B[t][:] = 0.0
    ws.T[t][:] = 0.0


@njit(cache=True)
def run_gram_block(t, system, prm, ws, scratch, R):
    """Block t of the rows (:func:`.forces.block_rows`) into its own buffers."""
    rows = system.block_rows[system.block_ptr[t]:system.block_ptr[t + 1]]
    clear_block(ws, t)
    ws.block_energy[t] = gram_block(rows, system, prm, ws, t, GramScratch(scratch, R))


@njit(cache=True)
def token_matrix(ws, prm, symmetric):
    """ws.M = P^T diag(dw) P - P^T Q P from the blocks' buffers, summed in
    block order."""
    nb = ws.Up.shape[0]
    p = ws.M.shape[0]
    n = ws.N.shape[0]
    M = ws.M
    for a in range(p):
        for c in range(p):
            s = 0.0
            for t in range(nb):
                s += ws.Up[t, a, c]
            M[a, c] = s
    if symmetric:
        for a in range(p):
            for c in range(a + 1):
                s = -(M[a, c] + M[c, a])
                M[a, c] = s
                M[c, a] = s
    else:
        for a in range(p):
            for c in range(p):
                lo_ca = 0.0
                for t in range(nb):
                    lo_ca += ws.Lo[t, c, a]
                M[a, c] = -M[a, c] - lo_ca
    lam = prm.lam
    for u in range(n):
        dw = 0.0
        bb = 0.0
        tt = 0.0
        for t in range(nb):
            dw += ws.D[t, u]
            bb += ws.B[t, u]
            tt += ws.T[t, u]
        if lam > 0.0:
            if prm.polar:
                dw += tt  # lam is in T already
            else:
                dw += lam * bb / (ws.rho[u] * ws.rho[u])
        a = ws.first[u]
        b = ws.second[u]
        M[a, a] += dw
        M[a, b] += dw
        M[b, a] += dw
        M[b, b] += dw


@njit(cache=True, fastmath=FAST)
def apply_token_matrix(M, x, decay, force):
    """force = M x - decay x, each entry summed over c = 0, 1, ..., p - 1 in
    order, four c per pass over the row of force (its loads and stores
    shared); a group of four zero entries of M is skipped, a zero entry in a
    group with others is added as 0 x_c (so x must be finite: the callers
    refuse non-finite states before this point)."""
    p = x.shape[0]
    d = x.shape[1]
    for a in range(p):
        fa = force[a]
        for k in range(d):
            fa[k] = -decay * x[a, k]
        c = 0
        while c + 4 <= p:
            m0 = M[a, c]
            m1 = M[a, c + 1]
            m2 = M[a, c + 2]
            m3 = M[a, c + 3]
            if m0 != 0.0 or m1 != 0.0 or m2 != 0.0 or m3 != 0.0:
                add_four(fa, d, m0, x[c], m1, x[c + 1], m2, x[c + 2], m3, x[c + 3])
            c += 4
        while c < p:
            if M[a, c] != 0.0:
                add_one(fa, d, M[a, c], x[c])
            c += 1


@njit(cache=True)
def _gram_finish(x, prm, ws, force, energy):
    token_matrix(ws, prm, not (prm.polar and prm.lam > 0.0))
    apply_token_matrix(ws.M, x, prm.wd, force)
    e = 0.0
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            e += x[a, k] * x[a, k]
    return energy + 0.5 * prm.wd * e


@njit(cache=True, nogil=True)  # called from Python: other threads run meanwhile (the explorer)
def gram_forces_serial(x, law, force):
    """Particle forces into ``force`` (p, d) and U(x) on the Gram path;
    ``law`` a :class:`~particles.kernels.records.GramLaw`. One thread."""
    system = law.system
    prm = law.prm
    ws = law.ws
    prepare_pairs(x, prm, ws)
    nb = ws.block_energy.shape[0]
    for t in range(nb):
        run_gram_block(t, system, prm, ws, ws.scratch[0], ws.R[0])
    energy = 0.0
    for t in range(nb):
        energy += ws.block_energy[t]
    return _gram_finish(x, prm, ws, force, energy)


@njit(cache=True)
def gram_forces_parallel(x, law, force):
    """As :func:`gram_forces_serial`, blocks spread over threads (the same
    bits: each block has its own buffers, summed in block order)."""
    return _gram_forces_parallel(x, law.system, law.prm, law.ws, force)


@njit(cache=True, parallel=True)
def _gram_forces_parallel(x, system, prm, ws, force):
    prepare_pairs(x, prm, ws)
    nb = ws.block_energy.shape[0]
    for t in prange(nb):
        j = numba.get_thread_id() % ws.scratch.shape[0]
        run_gram_block(np.int64(t), system, prm, ws, ws.scratch[j], ws.R[j])  # the serial kernel's callee
    energy = 0.0
    for t in range(nb):
        energy += ws.block_energy[t]
    return _gram_finish(x, prm, ws, force, energy)


# ---------------------------------------------------------------- references
def token_gram_reference(x: np.ndarray) -> np.ndarray:
    """NumPy reference of :func:`token_gram`."""
    return x @ x.T


def token_pair_products_reference(x: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """NumPy reference of :func:`token_pair_products`: H (p, n), H[c, v] = x_c . s_v."""
    return x @ (x[pairs[:, 0]] + x[pairs[:, 1]]).T


def pair_gram_reference(x: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """NumPy reference of the pair Gram matrix G (n, n) that :func:`gram_row` reads row by row."""
    s = x[pairs[:, 0]] + x[pairs[:, 1]]
    return s @ s.T
