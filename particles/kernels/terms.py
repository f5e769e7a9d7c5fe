"""The force law split into its terms, one force field per term.

A force law between pair sums has (at most) four pair terms, by variable and
class relation: distance / same class (the attraction of the built-in law),
distance / other classes (the repulsion), cosine / same class and cosine /
other classes (the two halves of the alignment); the decay -wd x is the
fifth. :func:`pair_term_forces` evaluates the forces of each pair term on the
pair sums in one pass over the pairs u < v, calling the law through the same
global slots as the force kernels (``attraction``, ..., see
:mod:`.clustering`), so a custom pair energy gets its own copy through
:func:`particles.kernels.rebind.rebind`. The terms add up to the total force
of :mod:`.forces` to rounding (the order of the sums differs).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .alignment import cosine_forces_reference, cosine_params, cosine_reference_parts
from .clustering import distance_params
from .law import alignment_other, alignment_same, attraction, repulsion
from .fastmath import FAST
from .pair_loops import dot_products_loop, scatter_differences, scatter_products, scatter_scalars, squared_distances_loop
from .pair_sums import pair_sums, scatter_to_particles

__all__ = ["pair_term_forces", "term_forces_serial", "same_class_terms", "other_distance_term", "other_cosine_term",
           "cosine_forces", "snapshot_term_forces", "term_forces_many", "pair_term_reference"]

@njit(cache=True, fastmath=FAST)
def same_class_terms(u, S, U, same_ptr, same_idx, law_d, law_c, w_ds, w_cs, out, A, B):
    """Row u's same-class partners, one by one: the distance term into
    out[0], the cosine term's sums into A[0], B[0]."""
    d = S.shape[0]
    for p in range(same_ptr[u], same_ptr[u + 1]):
        v = same_idx[p]
        if w_ds:
            r2 = 0.0
            for k in range(d):
                dk = S[k, u] - S[k, v]
                r2 += dk * dk
            coef = -2.0 * attraction(r2, law_d)[1]
            for k in range(d):
                fk = coef * (S[k, u] - S[k, v])
                out[0, k, u] += fk
                out[0, k, v] -= fk
        if w_cs:
            c = 0.0
            for k in range(d):
                c += U[k, u] * U[k, v]
            dh = alignment_same(c, law_c)[1]
            for k in range(d):
                A[0, k, u] += dh * U[k, v]
                A[0, k, v] += dh * U[k, u]
            B[0, u] += dh * c
            B[0, v] += dh * c


@njit(cache=True, fastmath=FAST)
def other_distance_term(u, S, same_ptr, same_idx, law_d, out, q, coef, t0):
    """Row u against every v > u of another class: the distance term into out[1]."""
    lo = np.uint64(u + 1)
    hi = np.uint64(S.shape[1])
    squared_distances_loop(u, S, lo, hi, q)  # the loop at every d: the term forces of earlier versions, bit for bit
    for v in range(lo, hi):
        coef[v] = -2.0 * repulsion(q[v], law_d)[1]
    for p in range(same_ptr[u], same_ptr[u + 1]):
        coef[same_idx[p]] = 0.0
    scatter_differences(u, S, coef, lo, hi, out[1], t0)


@njit(cache=True, fastmath=FAST)
def other_cosine_term(u, U, same_ptr, same_idx, law_c, A, B, q, coef, t0):
    """Row u against every v > u of another class: the cosine term's sums into A[1], B[1]."""
    lo = np.uint64(u + 1)
    hi = np.uint64(U.shape[1])
    dot_products_loop(u, U, lo, hi, q)
    for v in range(lo, hi):
        coef[v] = alignment_other(q[v], law_c)[1]
    for p in range(same_ptr[u], same_ptr[u + 1]):
        coef[same_idx[p]] = 0.0
    scatter_products(u, U, coef, lo, hi, A[1], t0)
    scatter_scalars(u, coef, q, lo, hi, B[1], t0)


@njit(cache=True)
def cosine_forces(t, S, U, rho, A, B, prm, F):
    """Cosine half t's sums A[t], B[t] as forces on the pair sums into F (d, n):
    -lam (A - B U) / rho, or its polar transform f = |s|^2 g - (s . g) s
    (linear in g, so the halves add up to the whole)."""
    d = S.shape[0]
    for u in range(rho.shape[0]):
        scale = -prm.lam / rho[u]
        if prm.polar:
            s2 = 0.0
            sg = 0.0
            for k in range(d):
                gk = scale * (A[t, k, u] - B[t, u] * U[k, u])
                s2 += S[k, u] * S[k, u]
                sg += S[k, u] * gk
            for k in range(d):
                gk = scale * (A[t, k, u] - B[t, u] * U[k, u])
                F[k, u] = s2 * gk - sg * S[k, u]
        else:
            for k in range(d):
                F[k, u] = scale * (A[t, k, u] - B[t, u] * U[k, u])


@njit(cache=True)
def pair_term_forces(S, U, rho, same_ptr, same_idx, prm, which, out, A, B):
    """Forces of each pair term on the pair sums.

    Parameters
    ----------
    S, U : ndarray, shape (d, n)
        Pair sums and their softened directions.
    rho : ndarray, shape (n,)
        Softened norms of the pair sums.
    same_ptr, same_idx : ndarray of int64
        CSR lists of each pair's same-class partners v > u
        (:class:`~particles.kernels.forces.PairSystem`).
    prm : KernelParams
        The law, strengths as it has them (alignment scaled by ``prm.lam``).
    which : ndarray of bool, shape (4,)
        The terms of :data:`.law.PAIR_TERMS` to evaluate (the others stay 0).
    out : ndarray, shape (4, d, n)
        Output, overwritten.
    A, B : ndarray, shapes (2, d, n) and (2, n)
        Work space of the cosine terms.

    Notes
    -----
    The same-class terms run over each pair's few partners; the other-class
    terms meet every v > u in loops that vectorise (as
    :func:`~.clustering.clustering_block`), with the same-class partners'
    coefficients then set to 0 (an assignment, never a product with a mask,
    so a law that is infinite where it does not apply adds nothing).
    """
    n = rho.shape[0]
    law_d = distance_params(prm)
    law_c = cosine_params(prm)
    out[:] = 0.0
    A[:] = 0.0
    B[:] = 0.0
    q = np.empty(n)
    coef = np.empty(n)
    t0 = np.empty(n)
    for u in range(n):
        same_class_terms(u, S, U, same_ptr, same_idx, law_d, law_c, which[0], which[2], out, A, B)
        if which[1]:
            other_distance_term(u, S, same_ptr, same_idx, law_d, out, q, coef, t0)
        if which[3]:
            other_cosine_term(u, U, same_ptr, same_idx, law_c, A, B, q, coef, t0)
    for t in range(2):
        if which[2 + t]:
            cosine_forces(t, S, U, rho, A, B, prm, out[2 + t])


@njit(cache=True)
def snapshot_term_forces(x, system, prm, which, force):
    """The forces of the four pair terms on the particles x (p, d), into
    ``force`` (4, p, d); terms not in ``which`` are 0. ``system``: the
    training pairs (:class:`~.forces.PairSystem`)."""
    pairs = system.pairs
    d = x.shape[1]
    n = pairs.shape[0]
    S = np.empty((d, n))
    U = np.empty((d, n))
    rho = np.empty(n)
    out = np.empty((4, d, n))
    A = np.empty((2, d, n))
    B = np.empty((2, n))
    pair_sums(x, pairs, prm.eps, S, U, rho)
    pair_term_forces(S, U, rho, system.same_ptr, system.same_idx, prm, which, out, A, B)
    for t in range(4):
        scatter_to_particles(x, pairs, out[t], 0.0, force[t])


@njit(cache=True)
def term_forces_serial(X, system, prm, which, force):
    """:func:`term_forces_many` on one thread (small work: threads would wait
    more than they compute, and far more beside a busy neighbour)."""
    for t in range(X.shape[0]):
        snapshot_term_forces(X[t], system, prm, which, force[t])


@njit(cache=True, parallel=True)
def term_forces_many(X, system, prm, which, force):
    """:func:`snapshot_term_forces` for every snapshot of X (T, p, d) into
    ``force`` (T, 4, p, d), snapshots spread over threads (each snapshot's
    arithmetic is the same whichever thread runs it)."""
    for t in prange(X.shape[0]):
        snapshot_term_forces(X[t], system, prm, which, force[t])


def pair_term_reference(S: np.ndarray, labels: np.ndarray, prm) -> np.ndarray:
    """NumPy reference of :func:`pair_term_forces` for the built-in law
    (``prm`` a KernelParams): the four pair-term forces (4, d, n)."""
    from .clustering import clustering_reference

    out = []
    for k_a, k_r in ((prm.k_a, 0.0), (0.0, prm.k_r)):
        out.append(clustering_reference(S, labels, prm._replace(k_a=k_a, k_r=k_r))[0])
    parts = cosine_reference_parts(S, labels, prm)
    same, off = parts["same"], parts["off"]
    for mask, dh in ((same & off, parts["dh_same"]), (~same & off, parts["dh_other"])):
        out.append(cosine_forces_reference(np.where(mask, dh, 0.0), parts, prm))
    return np.stack(out)
