"""The force evaluation: pair sums, blocks of rows, reduction, particle forces.

Every interaction of two pair sums is evaluated once (u < v) and applied to
both. The rows are split into ``n_blocks`` blocks (block t takes the rows i
and n-1-i for i = t, t + n_blocks, ..., so blocks do about equal work); each
block accumulates into its own buffers, which are then summed in block
order. The number of blocks depends on n alone (:func:`blocks_for`), so the
serial and the parallel kernel give bit-identical results, whatever the
number of threads and whichever thread ran which block.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange
from numba.extending import overload

from .alignment import alignment_block, alignment_forces
from .cells import build_cells, cell_block, same_class_corrections, unsort_forces
from .clustering import clustering_block
from .fastmath import FAST
from .pair_sums import pair_sums, scatter_to_particles, weight_decay_energy
from .gram import gram_forces_parallel, gram_forces_serial
from .records import CellLaw, CosineSums, ExactLaw, GramLaw, PairSums, Threaded

__all__ = ["PairSystem", "Workspace", "make_system", "make_workspace", "blocks_for", "block_rows", "run_block",
           "sum_blocks", "run_term", "splits_by_term", "combine_energies", "forces_serial", "forces_parallel", "forces_serial_cells", "forces_parallel_cells", "law_forces", "BLOCKS", "MIN_BLOCKED_PAIRS", "SCRATCH_ROWS"]

#: blocks of rows from this many training pairs on (below: one block)
MIN_BLOCKED_PAIRS = 256
#: number of row blocks of larger systems; the parallel kernel hands them to
#: threads one at a time, so a thread slowed by other work takes fewer
BLOCKS = 16
#: scratch vectors of length n one block needs
SCRATCH_ROWS = 4


def blocks_for(n_pairs: int) -> int:
    """Row blocks for n training pairs: 1 below MIN_BLOCKED_PAIRS, else BLOCKS."""
    return 1 if n_pairs < MIN_BLOCKED_PAIRS else BLOCKS


def block_rows(n_pairs: int, n_blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of each block in CSR form ``(ptr, rows)``: block t takes i and
    n-1-i for i = t, t + n_blocks, ... below (n + 1) // 2."""
    per_block = []
    half = (n_pairs + 1) // 2
    for t in range(n_blocks):
        rows = []
        for i in range(t, half, n_blocks):
            rows.append(i)
            if n_pairs - 1 - i != i:
                rows.append(n_pairs - 1 - i)
        per_block.append([u for u in rows if u + 1 < n_pairs])  # the last row has no v > u
    ptr = np.zeros(n_blocks + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(r) for r in per_block])
    rows = np.array([u for r in per_block for u in r], dtype=np.int64)
    return ptr, rows


class PairSystem(NamedTuple):
    """The training pairs as the kernels see them (built once per dataset).

    Attributes
    ----------
    pairs : ndarray of int64, shape (n, 2)
        Token indices.
    same_ptr, same_idx : ndarray of int64
        For each pair u, the pairs v > u of the same class are
        ``same_idx[same_ptr[u]:same_ptr[u + 1]]`` (CSR).
    block_ptr, block_rows : ndarray of int64
        The rows of block t are ``block_rows[block_ptr[t]:block_ptr[t + 1]]``
        (see :func:`block_rows`).
    """

    pairs: np.ndarray
    same_ptr: np.ndarray
    same_idx: np.ndarray
    block_ptr: np.ndarray
    block_rows: np.ndarray


class Workspace(NamedTuple):
    """Buffers of one run, allocated once (:func:`make_workspace`)."""

    S: np.ndarray  # (d, n) pair sums
    U: np.ndarray  # (d, n) softened directions
    rho: np.ndarray  # (n,)
    F: np.ndarray  # (n_blocks, d, n) clustering forces per block; the sum goes to F[0]
    A: np.ndarray  # (n_blocks, d, n) alignment sums per block
    B: np.ndarray  # (n_blocks, n)
    block_energy: np.ndarray  # (n_blocks,)
    terms: np.ndarray  # (2,) U_clu and U_ali of a one-block system split by term
    scratch: np.ndarray  # (n_threads, SCRATCH_ROWS, n), one per thread (NUMBA_NUM_THREADS rows)


def make_system(pairs: np.ndarray, same_ptr: np.ndarray, same_idx: np.ndarray) -> PairSystem:
    ptr, rows = block_rows(len(pairs), blocks_for(len(pairs)))
    return PairSystem(pairs, same_ptr, same_idx, ptr, rows)


def make_workspace(d: int, system: PairSystem, n_threads: int) -> Workspace:
    n = len(system.pairs)
    nb = len(system.block_ptr) - 1
    return Workspace(np.empty((d, n)), np.empty((d, n)), np.empty(n), np.empty((nb, d, n)), np.empty((nb, d, n)),
                     np.empty((nb, n)), np.empty(nb), np.empty(2), np.empty((max(1, n_threads), SCRATCH_ROWS, n)))


@njit(cache=True, fastmath=FAST)
def combine_energies(e_clu, e_ali, lam):
    """U_clu + lam U_ali, rounded the same way by every kernel."""
    return e_clu + lam * e_ali


def splits_by_term(n_blocks: int, params) -> bool:
    """One block with both clustering and alignment on (``params``: a
    KernelParams): the parallel kernel runs the two terms on two threads
    (:func:`run_term`)."""
    return n_blocks == 1 and (params.k_a > 0 or params.k_r > 0) and params.lam > 0


@njit(cache=True)
def run_term(task, system, prm, ws, scratch):
    """One force term of a one-block system: task 0 the clustering into
    ws.F[0], task 1 the alignment into ws.A[0], ws.B[0]; its energy into
    ws.terms[task]. Same arithmetic as :func:`run_block`."""
    rows = system.block_rows[system.block_ptr[0]:system.block_ptr[1]]
    if task == 0:
        F = ws.F[0]
        F[:] = 0.0
        ws.terms[0] = clustering_block(rows, ws.S, system, prm, F, scratch)
    else:
        A = ws.A[0]
        B = ws.B[0]
        A[:] = 0.0
        B[:] = 0.0
        ws.terms[1] = alignment_block(rows, ws.U, system, prm, CosineSums(A, B), scratch)


@njit(cache=True, fastmath=FAST)
def run_block(t, system, prm, ws, scratch):
    """Block t into its own buffers ws.F[t], ws.A[t], ws.B[t]; its energy
    U_clu + lam U_ali into ws.block_energy[t]."""
    rows = system.block_rows[system.block_ptr[t]:system.block_ptr[t + 1]]
    F = ws.F[t]
    A = ws.A[t]
    B = ws.B[t]
    F[:] = 0.0
    A[:] = 0.0
    B[:] = 0.0
    e_clu = 0.0
    e_ali = 0.0
    if prm.k_a > 0.0 or prm.k_r > 0.0:
        e_clu = clustering_block(rows, ws.S, system, prm, F, scratch)
    if prm.lam > 0.0:
        e_ali = alignment_block(rows, ws.U, system, prm, CosineSums(A, B), scratch)
    ws.block_energy[t] = combine_energies(e_clu, e_ali, prm.lam)


@njit(cache=True)
def sum_blocks(F, A, B, lo, hi):
    """Sum the block buffers F, A (n_blocks, d, n) and B (n_blocks, n) into
    block 0 for pair sums lo <= u < hi, in block order."""
    nb = F.shape[0]
    d = F.shape[1]
    for t in range(1, nb):
        for k in range(d):
            for u in range(lo, hi):
                F[0, k, u] += F[t, k, u]
                A[0, k, u] += A[t, k, u]
        for u in range(lo, hi):
            B[0, u] += B[t, u]


@njit(cache=True)
def _finish(x, system, prm, ws, force):
    """Alignment forces, particle forces and the total energy from the
    summed block buffers."""
    if prm.lam > 0.0:
        alignment_forces(PairSums(ws.S, ws.U, ws.rho), CosineSums(ws.A[0], ws.B[0]), prm, ws.F[0])
    scatter_to_particles(x, system.pairs, ws.F[0], prm.wd, force)
    energy = 0.0
    for t in range(ws.block_energy.shape[0]):
        energy += ws.block_energy[t]
    return energy + weight_decay_energy(x, prm.wd)


@njit(cache=True, nogil=True)  # called from Python: other threads run meanwhile (the explorer)
def forces_serial(x, law, force):
    """Particle forces into ``force`` (p, d) under ``law`` (an
    :class:`~particles.kernels.records.ExactLaw`); returns the energy U(x).
    One thread."""
    system = law.system
    prm = law.prm
    ws = law.ws
    pair_sums(x, system.pairs, prm.eps, ws.S, ws.U, ws.rho)
    for t in range(ws.block_energy.shape[0]):
        run_block(t, system, prm, ws, ws.scratch[0])
    sum_blocks(ws.F, ws.A, ws.B, 0, ws.rho.shape[0])
    return _finish(x, system, prm, ws, force)


@njit(cache=True)
def forces_parallel(x, law, force):
    """As :func:`forces_serial`, with the blocks spread over threads (see
    :func:`_forces_parallel`; Numba's parallel loops take the records' fields
    as arguments, not the records)."""
    return _forces_parallel(x, law.system, law.prm, law.ws, force)


@njit(cache=True, parallel=True)
def _forces_parallel(x, system, prm, ws, force):
    """As :func:`forces_serial`, with the blocks spread over threads, each
    thread using its own scratch; a one-block system with both forces on
    runs its clustering and its alignment on two threads instead
    (:func:`run_term`). The same bits as the serial kernel either way. Call
    it under ``numba.parallel_chunksize(1)`` so that blocks go to threads one
    at a time (a thread slowed by other work then takes fewer)."""
    pair_sums(x, system.pairs, prm.eps, ws.S, ws.U, ws.rho)
    nb = ws.block_energy.shape[0]
    if nb == 1 and (prm.k_a > 0.0 or prm.k_r > 0.0) and prm.lam > 0.0:
        for task in prange(2):
            run_term(task, system, prm, ws, ws.scratch[numba.get_thread_id() % ws.scratch.shape[0]])
        ws.block_energy[0] = combine_energies(ws.terms[0], ws.terms[1], prm.lam)
        return _finish(x, system, prm, ws, force)
    for t in prange(nb):
        run_block(t, system, prm, ws, ws.scratch[numba.get_thread_id() % ws.scratch.shape[0]])
    n = ws.rho.shape[0]
    stripes = ws.scratch.shape[0]
    for j in prange(stripes):
        sum_blocks(ws.F, ws.A, ws.B, j * n // stripes, (j + 1) * n // stripes)
    return _finish(x, system, prm, ws, force)


@njit(cache=True)
def _finish_cells(x, system, prm, ws, cells, force):
    """Cell-list variant of the last steps: forces back to pair order, the
    same-class pairs exact, then as :func:`_finish`."""
    unsort_forces(cells, ws.F[0], cells.Fu)
    e_corr = same_class_corrections(ws.S, system.same_ptr, system.same_idx, prm, cells.r_cut, cells.Fu)
    for k in range(2):
        for u in range(ws.rho.shape[0]):
            ws.F[0, k, u] = cells.Fu[k, u]
    e_cells = 0.0
    for t in range(cells.block_energy.shape[0]):
        e_cells += cells.block_energy[t]
    return _finish(x, system, prm, ws, force) + e_cells + e_corr


@njit(cache=True, nogil=True)  # called from Python: other threads run meanwhile (the explorer)
def forces_serial_cells(x, law, force):
    """As :func:`forces_serial` with the repulsion cut off at cells.r_cut
    (d = 2; see :mod:`particles.kernels.cells`); ``law`` is a
    :class:`~particles.kernels.records.CellLaw`."""
    system = law.system
    prm = law.prm
    prm_align = law.prm_align
    ws = law.ws
    cells = law.cells
    pair_sums(x, system.pairs, prm.eps, ws.S, ws.U, ws.rho)
    build_cells(ws.S, cells)
    nb = ws.block_energy.shape[0]
    for t in range(nb):
        run_block(t, system, prm_align, ws, ws.scratch[0])
        cell_block(t, nb, cells, prm, ws.F[t], ws.scratch[0])
    sum_blocks(ws.F, ws.A, ws.B, 0, ws.rho.shape[0])
    return _finish_cells(x, system, prm, ws, cells, force)


@njit(cache=True)
def forces_parallel_cells(x, law, force):
    """As :func:`forces_serial_cells`, blocks spread over threads."""
    return _forces_parallel_cells(x, law.system, law.prm, law.prm_align, law.ws, law.cells, force)


@njit(cache=True, parallel=True)
def _forces_parallel_cells(x, system, prm, prm_align, ws, cells, force):
    """The parallel body of :func:`forces_parallel_cells`."""
    pair_sums(x, system.pairs, prm.eps, ws.S, ws.U, ws.rho)
    build_cells(ws.S, cells)
    nb = ws.block_energy.shape[0]
    for t in prange(nb):
        scratch = ws.scratch[numba.get_thread_id() % ws.scratch.shape[0]]
        run_block(t, system, prm_align, ws, scratch)
        cell_block(t, nb, cells, prm, ws.F[t], scratch)
    n = ws.rho.shape[0]
    stripes = ws.scratch.shape[0]
    for j in prange(stripes):
        sum_blocks(ws.F, ws.A, ws.B, j * n // stripes, (j + 1) * n // stripes)
    return _finish_cells(x, system, prm, ws, cells, force)


def law_forces(x, law, force):
    """The forces of ``law`` into ``force`` and U(x), by the record's type:
    ExactLaw -> :func:`forces_serial`, CellLaw -> :func:`forces_serial_cells`,
    GramLaw -> :func:`.gram.gram_forces_serial`, ``Threaded(...)`` -> their
    parallel kernels. Compiled code selects the
    kernel at compile time (an overload on the record's type); this Python
    body is what the loops run as plain Python."""
    if isinstance(law, Threaded):
        inner = law.law
        if isinstance(inner, GramLaw):
            return gram_forces_parallel(x, inner, force)
        return (forces_parallel_cells if isinstance(inner, CellLaw) else forces_parallel)(x, inner, force)
    if isinstance(law, GramLaw):
        return gram_forces_serial(x, law, force)
    return (forces_serial_cells if isinstance(law, CellLaw) else forces_serial)(x, law, force)


def _record_class(typ):
    return getattr(typ, "instance_class", None)


@overload(law_forces, jit_options={"cache": True})
def _law_forces_compiled(x, law, force):
    outer = _record_class(law)
    if outer is Threaded:
        inner = _record_class(law.types[0])
        if inner is CellLaw:
            return lambda x, law, force: forces_parallel_cells(x, law.law, force)
        if inner is ExactLaw:
            return lambda x, law, force: forces_parallel(x, law.law, force)
        if inner is GramLaw:
            return lambda x, law, force: gram_forces_parallel(x, law.law, force)
    if outer is GramLaw:
        return lambda x, law, force: gram_forces_serial(x, law, force)
    if outer is CellLaw:
        return lambda x, law, force: forces_serial_cells(x, law, force)
    if outer is ExactLaw:
        return lambda x, law, force: forces_serial(x, law, force)
    raise TypeError(f"law_forces takes an ExactLaw, a CellLaw, a GramLaw or a Threaded one, got {law}")
