"""The force law split into its terms, one force field per term.

A force law between pair sums has (at most) four pair terms, by variable and
class relation: distance / same class (the attraction of the built-in law),
distance / other classes (the repulsion), cosine / same class and cosine /
other classes (the two halves of the alignment); the decay -wd x is the
fifth. :func:`pair_term_forces` evaluates the forces of each pair term on the
pair sums in a pass over the pairs u < v per term, calling the law through the same
global slots as the force kernels (``attraction``, ..., see
:mod:`.clustering`), so a custom pair energy gets its own copy through
:func:`particles.kernels.rebind.rebind`. The terms add up to the total force
of :mod:`.forces` to rounding (the order of the sums differs).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .alignment import alignment_forces, cosine_forces_reference, cosine_params, cosine_reference_parts
from .clustering import distance_params
from .law import alignment_other, alignment_same, attraction, repulsion
from .fastmath import FAST
from .pair_loops import dot_products_loop, scatter_differences, scatter_products, scatter_scalars, squared_distances_loop
from .pair_sums import pair_sums, scatter_to_particles
from .records import CosineSums, PairSums, Row

__all__ = ["TermSums", "pair_term_forces", "term_forces_serial", "same_class_terms",
           "other_distance_term", "other_cosine_term", "snapshot_term_forces", "term_forces_many",
           "pair_term_reference"]


class TermSums(NamedTuple):
    """What :func:`pair_term_forces` accumulates: the forces of the four pair
    terms (:data:`.law.PAIR_TERMS`) and the sums of the two cosine terms
    (index 0 the same-class half, 1 the other-class half) before they
    become forces."""

    out: np.ndarray  # (4, d, n) forces of each pair term on the pair sums
    A: np.ndarray  # (2, d, n) A_u = sum_v h'(c) U_v per cosine half (.records.CosineSums)
    B: np.ndarray  # (2, n) B_u = sum_v h'(c) c per cosine half


@njit(cache=True, fastmath=FAST)
def same_class_terms(sums, system, law_d, law_c, which, acc):
    """Every row's same-class partners, one by one: the distance term into
    acc.out[0], the cosine term's sums into acc.A[0], acc.B[0].

    Parameters
    ----------
    sums : PairSums
        S, U (d, n) (:class:`~.records.PairSums`; rho is not read).
    system : PairSystem
        ``same_ptr``, ``same_idx``: the CSR lists of each pair's same-class
        partners v > u (:class:`~.forces.PairSystem`).
    law_d, law_c : parameters
        What the distance and the cosine terms take (``distance_params(prm)``,
        ``cosine_params(prm)``).
    which : ndarray of bool, shape (4,)
        The terms evaluated; read are which[0] (distance) and which[2] (cosine).
    acc : TermSums
        Added to.
    """
    S = sums.S
    U = sums.U
    same_ptr = system.same_ptr
    same_idx = system.same_idx
    w_ds = which[0]
    w_cs = which[2]
    out = acc.out
    A = acc.A
    B = acc.B
    d = S.shape[0]
    for u in range(S.shape[1]):
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
def other_distance_term(S, system, law_d, F, scratch):
    """Every row u against every v > u of another class: the distance term into F.

    Parameters
    ----------
    S : ndarray, shape (d, n)
        Pair sums.
    system : PairSystem
        ``same_ptr``, ``same_idx``: the partners whose coefficients are set to 0.
    law_d : parameters
        What ``repulsion`` takes (``distance_params(prm)``).
    F : ndarray, shape (d, n)
        The term's forces on the pair sums, added to.
    scratch : ndarray, shape (>= 3, n)
        Work space.
    """
    same_ptr = system.same_ptr
    same_idx = system.same_idx
    q = scratch[0]
    coef = scratch[1]
    t0 = scratch[2]
    n = S.shape[1]
    for u in range(n):
        lo = np.uint64(u + 1)
        hi = np.uint64(n)
        row = Row(u, lo, hi)
        squared_distances_loop(row, S, q)  # the loop at every d: the term forces of earlier versions, bit for bit
        for v in range(lo, hi):
            coef[v] = -2.0 * repulsion(q[v], law_d)[1]
        for p in range(same_ptr[u], same_ptr[u + 1]):
            coef[same_idx[p]] = 0.0
        scatter_differences(row, S, coef, F, t0)


@njit(cache=True, fastmath=FAST)
def other_cosine_term(U, system, law_c, cos, scratch):
    """Every row u against every v > u of another class: the cosine term's
    sums into ``cos``.

    Parameters
    ----------
    U : ndarray, shape (d, n)
        Softened directions of the pair sums.
    system : PairSystem
        ``same_ptr``, ``same_idx``: the partners whose coefficients are set to 0.
    law_c : parameters
        What ``alignment_other`` takes (``cosine_params(prm)``).
    cos : CosineSums
        A (d, n), B (n,) of the other-class half (:class:`~.records.CosineSums`), added to.
    scratch : ndarray, shape (>= 3, n)
        Work space.
    """
    same_ptr = system.same_ptr
    same_idx = system.same_idx
    A = cos.A
    B = cos.B
    q = scratch[0]
    coef = scratch[1]
    t0 = scratch[2]
    n = U.shape[1]
    for u in range(n):
        lo = np.uint64(u + 1)
        hi = np.uint64(n)
        row = Row(u, lo, hi)
        dot_products_loop(row, U, q)
        for v in range(lo, hi):
            coef[v] = alignment_other(q[v], law_c)[1]
        for p in range(same_ptr[u], same_ptr[u + 1]):
            coef[same_idx[p]] = 0.0
        scatter_products(row, U, coef, A, t0)
        scatter_scalars(row, coef, q, B, t0)


@njit(cache=True)
def pair_term_forces(sums, system, prm, which, acc):
    """Forces of each pair term on the pair sums.

    Parameters
    ----------
    sums : PairSums
        S, U (d, n), the pair sums and their softened directions, and rho
        (n,), their softened norms (:class:`~.records.PairSums`).
    system : PairSystem
        Read are ``same_ptr``, ``same_idx``: the CSR lists of each pair's
        same-class partners v > u (:class:`~particles.kernels.forces.PairSystem`).
    prm : KernelParams
        The law, strengths as it has them (alignment scaled by ``prm.lam``).
    which : ndarray of bool, shape (4,)
        The terms of :data:`.law.PAIR_TERMS` to evaluate (the others stay 0).
    acc : TermSums
        ``out`` (4, d, n): the output, overwritten; ``A`` (2, d, n), ``B``
        (2, n): work space of the cosine terms (:class:`TermSums`).

    Notes
    -----
    The same-class terms run over each pair's few partners; the other-class
    terms meet every v > u in loops that vectorise (as
    :func:`~.clustering.clustering_block`), with the same-class partners'
    coefficients then set to 0 (an assignment, never a product with a mask,
    so a law that is infinite where it does not apply adds nothing). Each
    term adds to its own buffers, row by row in order, in a pass over the
    rows of its own (the records' arrays are read once per pass, not once
    per row: see :mod:`.records`).
    """
    n = sums.rho.shape[0]
    law_d = distance_params(prm)
    law_c = cosine_params(prm)
    out = acc.out
    out[:] = 0.0
    acc.A[:] = 0.0
    acc.B[:] = 0.0
    scratch = np.empty((3, n))
    same_class_terms(sums, system, law_d, law_c, which, acc)
    if which[1]:
        other_distance_term(sums.S, system, law_d, out[1], scratch)
    if which[3]:
        other_cosine_term(sums.U, system, law_c, CosineSums(acc.A[1], acc.B[1]), scratch)
    for t in range(2):  # each cosine half's sums as its forces (out was zeroed: the forces added are the forces)
        if which[2 + t]:
            alignment_forces(sums, CosineSums(acc.A[t], acc.B[t]), prm, out[2 + t])


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
    pair_term_forces(PairSums(S, U, rho), system, prm, which, TermSums(out, A, B))
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
