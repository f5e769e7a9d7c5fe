"""Clustering with a cut-off: the repulsion over a cell list (d = 2).

The cut-off is the ``gaussian`` capability of the term in the repulsion's
place (:data:`.law.TERMS`): the built-in repulsion k_r exp(-r^2 / 2 sig_r^2),
called here through its slot as everywhere, between pair sums falls below
``tol * k_r`` beyond r_cut = sig_r sqrt(2 ln(1 / tol)) (8.6 sig_r for
tol = 1e-16; tol <= 1/2, so that r_cut >= sig_r, which the force bound
below needs). Pair sums are sorted into square cells of side >= r_cut, so
every pair closer than r_cut lies in the same or a neighbouring cell; the
repulsion is summed over those pairs only, and exactly over pairs with
r < r_cut (the others count 0). The attraction within a class is summed
exactly over the same-class pairs (a sparse list), at any distance.

Error bound (tested): every dropped pair has r >= r_cut, so it would have
added at most k_r tol to the energy and, as r exp(-r^2 / 2 sig^2) falls
beyond sig, at most k_r tol r_cut / sig_r^2 to the force on either pair sum.
Hence |dU| <= k_r tol n (n - 1) / 2 and |dF_u| <= (n - 1) k_r tol
r_cut / sig_r^2 for each pair sum u (n training pairs); particle forces add
two pair sums per pair.

Cells are numbered column by column (id = iy + gy ix), so that for a pair
sum in cell (ix, iy) the partners v > u of its own cell and of cell
(ix, iy + 1) form one contiguous range of the sorted order, and cells
(ix + 1, iy - 1 .. iy + 1) another: two vectorised loops per row.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .clustering import distance_params
from .fastmath import FAST, lane_sum
from .law import attraction, repulsion

__all__ = ["CellList", "make_cells", "cutoff_radius", "cutoff_bounds", "build_cells", "cell_block",
           "same_class_corrections", "unsort_forces"]


def cutoff_radius(sig_r: float, tol: float) -> float:
    """r_cut = sig_r sqrt(2 ln(1 / tol)): the repulsion weight is tol there."""
    return sig_r * math.sqrt(2.0 * math.log(1.0 / tol))


def cutoff_bounds(n_pairs: int, k_r: float, sig_r: float, tol: float) -> tuple[float, float]:
    """(energy bound, per-pair-sum force bound) of the cut-off, see the module
    docstring."""
    r_cut = cutoff_radius(sig_r, tol)
    return k_r * tol * n_pairs * (n_pairs - 1) / 2, (n_pairs - 1) * k_r * tol * r_cut / sig_r ** 2


class CellList(NamedTuple):
    """Cell-list buffers of one run (:func:`make_cells`). ``r_cut`` 0 means
    no cut-off."""

    r_cut: float
    order: np.ndarray  # (n,) pair sum at each sorted position
    start: np.ndarray  # (max_cells + 1,) first sorted position of each cell
    fill: np.ndarray  # (max_cells,) counting-sort cursor per cell
    cell: np.ndarray  # (n,) cell of each pair sum
    grid: np.ndarray  # (2,) int64: gx, gy
    Ss: np.ndarray  # (2, n) pair sums in sorted order
    Fu: np.ndarray  # (2, n) forces back in pair order
    block_energy: np.ndarray  # (n_blocks,) repulsion energy of each block


def make_cells(n: int, r_cut: float, n_blocks: int) -> CellList:
    max_cells = 4 * n + 16
    return CellList(float(r_cut), np.empty(n, dtype=np.int64), np.zeros(max_cells + 1, dtype=np.int64),
                    np.zeros(max_cells, dtype=np.int64), np.empty(n, dtype=np.int64), np.zeros(2, dtype=np.int64),
                    np.empty((2, n)), np.empty((2, n)), np.empty(n_blocks))


@njit(cache=True)
def build_cells(S, cells):
    """Sort the pair sums S (2, n) into square cells of side >= r_cut (at
    most len(fill) cells: wider if the spread needs it); counting sort,
    stable, so the order depends on the positions alone."""
    n = S.shape[1]
    x_lo = S[0, 0]
    x_hi = S[0, 0]
    y_lo = S[1, 0]
    y_hi = S[1, 0]
    for u in range(n):
        x_lo = min(x_lo, S[0, u])
        x_hi = max(x_hi, S[0, u])
        y_lo = min(y_lo, S[1, u])
        y_hi = max(y_hi, S[1, u])
    side = cells.r_cut
    max_cells = cells.fill.shape[0]
    # count in floats (a huge spread would overflow int64), convert once capped
    nx = np.floor((x_hi - x_lo) / side) + 1.0
    ny = np.floor((y_hi - y_lo) / side) + 1.0
    while nx * ny > max_cells:
        side *= 2.0
        nx = np.floor((x_hi - x_lo) / side) + 1.0
        ny = np.floor((y_hi - y_lo) / side) + 1.0
    gx = int(nx)
    gy = int(ny)
    cells.grid[0] = gx
    cells.grid[1] = gy
    start = cells.start
    for c in range(gx * gy + 1):
        start[c] = 0
    for u in range(n):
        ix = min(int((S[0, u] - x_lo) / side), gx - 1)
        iy = min(int((S[1, u] - y_lo) / side), gy - 1)
        c = iy + gy * ix
        cells.cell[u] = c
        start[c + 1] += 1
    for c in range(gx * gy):
        start[c + 1] += start[c]
        cells.fill[c] = start[c]
    for u in range(n):
        c = cells.cell[u]
        pos = cells.fill[c]
        cells.fill[c] = pos + 1
        cells.order[pos] = u
        cells.Ss[0, pos] = S[0, u]
        cells.Ss[1, pos] = S[1, u]


@njit(cache=True, fastmath=FAST)
def cell_block(t, n_blocks, cells, prm, F, scratch):
    """Repulsion between pair sums closer than r_cut, for the rows (sorted
    positions) in the cells c = t, t + n_blocks, ...; added to both rows of
    F (2, n) in sorted order; the energy goes to cells.block_energy[t].

    Every pair, same class or not, is counted as repulsion here;
    :func:`same_class_corrections` swaps same-class pairs for attraction.
    """
    Ss = cells.Ss
    start = cells.start
    gx = cells.grid[0]
    gy = cells.grid[1]
    law = distance_params(prm)
    rc2 = cells.r_cut * cells.r_cut
    w = scratch[0]
    t0 = scratch[2]
    t1 = scratch[3]
    energy = 0.0
    for c in range(t, gx * gy, n_blocks):
        ix = c // gy
        iy = c - gy * ix
        # own cell (v > u) and cell (ix, iy + 1): one range
        own_end = start[min(c + 2, gx * gy)] if iy + 1 < gy else start[c + 1]
        # cells (ix + 1, iy - 1 .. iy + 1): another range
        if ix + 1 < gx:
            c_lo = iy - 1 + gy * (ix + 1) if iy > 0 else gy * (ix + 1)
            c_hi = iy + 1 + gy * (ix + 1) if iy + 1 < gy else iy + gy * (ix + 1)
            next_lo = start[c_lo]
            next_hi = start[c_hi + 1]
        else:
            next_lo = 0
            next_hi = 0
        for u in range(start[c], start[c + 1]):
            s0 = Ss[0, u]
            s1 = Ss[1, u]
            f0u = 0.0
            f1u = 0.0
            for part in range(2):
                if part == 0:
                    lo = np.uint64(u + 1)
                    hi = np.uint64(own_end)
                else:
                    lo = np.uint64(next_lo)
                    hi = np.uint64(next_hi)
                if lo >= hi:
                    continue
                for v in range(lo, hi):
                    d0 = s0 - Ss[0, v]
                    d1 = s1 - Ss[1, v]
                    rr = d0 * d0 + d1 * d1
                    ev, dev = repulsion(rr, law)
                    inside = rr < rc2
                    w[v] = ev if inside else 0.0
                    cv = -2.0 * dev if inside else 0.0
                    g0 = cv * d0
                    g1 = cv * d1
                    t0[v] = g0
                    t1[v] = g1
                    F[0, v] -= g0
                    F[1, v] -= g1
                energy += lane_sum(w, lo, hi)
                f0u += lane_sum(t0, lo, hi)
                f1u += lane_sum(t1, lo, hi)
            F[0, u] += f0u
            F[1, u] += f1u
    cells.block_energy[t] = energy


@njit(cache=True)
def unsort_forces(cells, F_sorted, F_out):
    """F_out[:, u] = F_sorted[:, position of u]."""
    for pos in range(cells.order.shape[0]):
        u = cells.order[pos]
        F_out[0, u] = F_sorted[0, pos]
        F_out[1, u] = F_sorted[1, pos]


@njit(cache=True, fastmath=FAST)
def same_class_corrections(S, same_ptr, same_idx, prm, r_cut, F):
    """For every same-class pair u < v: add the attraction
    -k_a exp(-r^2 / 2 sig_a^2) and remove the repulsion the cell pass
    counted (when r < r_cut), in pair order into F (2, n). Returns the
    energy change."""
    law = distance_params(prm)
    rc2 = r_cut * r_cut
    energy = 0.0
    for u in range(S.shape[1]):
        for q in range(same_ptr[u], same_ptr[u + 1]):
            v = same_idx[q]
            d0 = S[0, u] - S[0, v]
            d1 = S[1, u] - S[1, v]
            rr = d0 * d0 + d1 * d1
            ea, dea = attraction(rr, law)
            er, der = repulsion(rr, law)
            inside = rr < rc2
            energy += ea - (er if inside else 0.0)
            cv = -2.0 * (dea - (der if inside else 0.0))  # the attraction's coefficient less the repulsion's
            F[0, u] += cv * d0
            F[1, u] += cv * d1
            F[0, v] -= cv * d0
            F[1, v] -= cv * d1
    return energy
