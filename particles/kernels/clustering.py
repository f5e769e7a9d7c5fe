"""Clustering: the distance terms' pair loop.

U_clu is the sum over pairs u < v of the ``attraction`` (same class) or the
``repulsion`` (different classes) of r^2 = |s_u - s_v|^2, the terms defined in
:mod:`.law`; each pair is evaluated once (u < v) and applied to both. Also
the Gram path's factored form of a Gaussian repulsion (the ``gaussian``
capability of :data:`.law.TERMS`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .fastmath import EXP_FLOOR, FAST, exp_nonpositive, lane_sum
from .law import attraction, repulsion, term_values
from .pair_loops import scatter_differences, squared_distances
from .records import Row

__all__ = ["clustering_block", "clustering_reference", "distance_params",
           "repulsion_factors", "repulsion_from_factors", "GAUSSIAN_REPULSION", "FACTOR_LIMIT"]


# The distance terms, ``attraction`` for two pair sums of one class and
# ``repulsion`` for different classes, are defined once in .law (scalar
# functions of r^2 = |s_u - s_v|^2 returning (energy, d energy / d r^2)); they
# take the law's parameters as ``distance_params`` reads them from the record,
# once per block. clustering_block calls the three by these global names (the
# slots, .slots); a custom pair energy (particles.pair_energy) compiles a copy
# of the kernels with its own functions in their place (.rebind).

#: False for the built-in law (its arithmetic, bit for bit); a custom law's
#: copy of the kernels sets it True (see clustering_block)
EXACT_SAME = False
#: True when the term in the repulsion's place declares the ``gaussian``
#: capability (:data:`.law.TERMS`: the built-in law's does), which the Gram
#: path factors (:func:`repulsion_factors`); a custom law's copy sets it False
GAUSSIAN_REPULSION = True
#: the largest exponent a factor of :func:`repulsion_factors` may take: the products of two
#: factors then stay within exp(+-2 FACTOR_LIMIT), inside the normal doubles (exp(+-708));
#: beyond it the pair loop evaluates exp per pair
FACTOR_LIMIT = 340.0
#: exp(EXP_FLOOR): below it the per-pair exp returns 0, and so does the factored product
EXP_FLOOR_VALUE = float(np.exp(EXP_FLOOR))


@njit(cache=True)
def distance_params(prm):
    """The parameters attraction and repulsion take: the record itself."""
    return prm


@njit(cache=True, fastmath=FAST)
def repulsion_factors(prm, N, H, eN, EH):
    """The built-in repulsion per pair as a product of per-pair and
    token-pair factors, for the Gram path: with r^2 = N_u + N_v - 2 G_uv and
    G_uv = H[a_u, v] + H[b_u, v] (:mod:`.gram`),

        exp(-r^2 / 2 sig_r^2) = eN[u] eN[v] EH[a_u, v] EH[b_u, v],

    eN = exp(-N / 2 sig_r^2) (n,), EH = exp(H / sig_r^2) (p, n): p n + n
    exps per call instead of one per pair, evaluated as
    (eN[u] eN[v]) (EH[a_u, v] EH[b_u, v]). Fills eN and EH and returns True
    when every factor's exponent is within FACTOR_LIMIT, so that neither
    partial product leaves the normal doubles (the whole product, below
    exp(EXP_FLOOR), is taken as 0 as the per-pair exp does); else False,
    and the pair loop evaluates ``repulsion`` per pair (so also for a
    custom law, GAUSSIAN_REPULSION False). The exponents' rounding is of the order of the
    direct form's (whose r^2 is a difference of the same numbers): the two
    agree to about 4 FACTOR_LIMIT * 1e-16, relative (tested)."""
    if not GAUSSIAN_REPULSION:
        return False
    inv = 0.5 / (prm.sig_r * prm.sig_r)
    top = 0.0
    for v in range(N.shape[0]):
        top = max(top, N[v])
    big = 0.0
    for c in range(H.shape[0]):
        for v in range(H.shape[1]):
            big = max(big, abs(H[c, v]))
    if not (inv * top <= FACTOR_LIMIT and 2.0 * inv * big <= FACTOR_LIMIT):
        return False
    for v in range(N.shape[0]):
        eN[v] = exp_nonpositive(-inv * N[v])
    for c in range(H.shape[0]):
        hc = H[c]
        ec = EH[c]
        for v in range(H.shape[1]):
            ec[v] = exp_nonpositive(2.0 * inv * hc[v])  # as exact for 0 < arg < 709 (fastmath's docstring)
    return True


@njit(cache=True, fastmath=FAST, inline="always")
def repulsion_from_factors(e, prm):
    """repulsion's (value, derivative in r^2) from e = exp(-r^2 / 2
    sig_r^2) (the product of :func:`repulsion_factors`), in its arithmetic;
    e below exp(EXP_FLOOR) is taken as 0, as :func:`.fastmath.exp_nonpositive`
    returns (the product of two normal factors can be subnormal)."""
    inv_2sr2 = 0.5 / (prm.sig_r * prm.sig_r)
    ev = (e if e > EXP_FLOOR_VALUE else 0.0) * prm.k_r
    return ev, -(inv_2sr2 * ev)


@njit(cache=True, fastmath=FAST)
def clustering_block(rows, S, system, prm, F, scratch):
    """Clustering interactions of each row u in ``rows`` with every v > u,
    added to both rows of F. Returns their energy.

    Parameters
    ----------
    rows : ndarray of int64
        The rows u of this block (:func:`.forces.block_rows`).
    S : ndarray, shape (d, n)
        Pair sums, coordinate-major.
    system : PairSystem
        The training pairs (:class:`~.forces.PairSystem`); read are its
        CSR lists of each pair's same-class partners v > u, ``same_ptr`` and
        ``same_idx``.
    prm : KernelParams
        The law (its parameters as ``distance_params`` reads them).
    F : ndarray, shape (d, n)
        Forces on the pair sums, added to.
    scratch : ndarray, shape (>= 4, n)
        Work space.

    Notes
    -----
    The inner loops index with unsigned integers (a
    :class:`~.records.Row`): numba then emits no negative-index wrap-around,
    and they vectorise. Every v is first taken as another class (a
    branch-free loop), then the few same-class partners are corrected.
    """
    same_ptr = system.same_ptr
    same_idx = system.same_idx
    n = F.shape[1]
    law = distance_params(prm)
    r2 = scratch[0]
    w = scratch[1]
    coef = scratch[2]
    t0 = scratch[3]
    energy = 0.0
    for q in range(rows.shape[0]):
        u = rows[q]
        lo = np.uint64(u + 1)
        hi = np.uint64(n)
        row = Row(u, lo, hi)
        squared_distances(row, S, r2)  # r2 = |s_u - s_v|^2
        # every v as another class: w = phi(r^2), force coefficient
        # coef = -2 phi'(r^2), so that f_u = coef (s_u - s_v)
        for v in range(lo, hi):
            ev, dev = repulsion(r2[v], law)
            w[v] = ev
            coef[v] = -2.0 * dev
        if EXACT_SAME:
            # the same-class partners replace their entries before the sum,
            # so an ``other`` that is huge or infinite where same-class pair
            # sums meet (a custom law) never enters the energy
            for p in range(same_ptr[u], same_ptr[u + 1]):
                v = same_idx[p]
                ea, dea = attraction(r2[v], law)
                w[v] = ea
                coef[v] = -2.0 * dea
            energy += lane_sum(w, lo, hi)
        else:
            energy += lane_sum(w, lo, hi)
            # the same-class partners (the built-in arithmetic: ``other`` is
            # at most k_r, so subtracting it back is exact enough)
            for p in range(same_ptr[u], same_ptr[u + 1]):
                v = same_idx[p]
                ea, dea = attraction(r2[v], law)
                energy += ea - w[v]
                coef[v] = -2.0 * dea
        scatter_differences(row, S, coef, F, t0)  # f_u += coef (s_u - s_v), f_v -= the same
    return energy


def clustering_reference(S: np.ndarray, labels: np.ndarray, prm) -> tuple[np.ndarray, float]:
    """NumPy reference: clustering forces on the pair sums (d, n) and U_clu,
    from the terms' definitions (:mod:`.law`) run by NumPy with the exact exp."""
    s = S.T
    n = s.shape[0]
    off = ~np.eye(n, dtype=bool)
    same = labels[:, None] == labels[None, :]
    delta = s[:, None, :] - s[None, :, :]
    r2 = np.sum(delta ** 2, axis=-1)
    e_same, d_same = term_values(attraction, r2, prm)
    e_other, d_other = term_values(repulsion, r2, prm)
    coef = -2.0 * np.where(same, d_same, d_other) * off  # f_u = sum_v -2 phi'(r^2) (s_u - s_v)
    f = np.einsum("uv,uvk->uk", coef, delta)
    return f.T.copy(), float(0.5 * np.sum(np.where(same, e_same, e_other) * off))
