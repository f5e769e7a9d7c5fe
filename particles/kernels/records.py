"""The typed records the compiled entry points take (Numba compiles a
NamedTuple into a struct): the force law at a system, the span of steps a
call runs and the buffers it records into. The parameters themselves are
:class:`~particles.kernels.kernel_params.KernelParams`; a run's time step, noise and
bounds its schedule (:class:`~particles.kernels.euler.EulerSchedule`).

Also the records the kernels of several modules pass each other (no
exported kernel takes more than six arguments; the rest travel grouped):
a row of the pair loop (:class:`Row`), the pair sums (:class:`PairSums`),
the cosine terms' sums (:class:`CosineSums`), and the Gram path's pair
geometry and a row's repulsion (:class:`PairGeometry`,
:class:`RowRepulsion`). A record of one module's kernels only is in
that module. Building one in compiled code costs nothing; reading one of
its arrays inside a loop over rows costs a reference count each time, so
the kernels read a record's arrays before their loops, and the helpers a
row's loop calls take arrays and a :class:`Row` (scalars)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["ExactLaw", "CellLaw", "GramLaw", "Threaded", "Span", "Recording", "Row", "PairSums", "CosineSums",
           "PairGeometry", "RowRepulsion"]


class ExactLaw(NamedTuple):
    """The force law on a system, every pair-pair interaction summed."""

    system: Any  # forces.PairSystem
    prm: Any  # record.KernelParams
    ws: Any  # forces.Workspace


class CellLaw(NamedTuple):
    """The force law with the repulsion cut off on a cell list (d = 2);
    ``prm_align`` is ``prm`` with k_a = k_r = 0 (the block pass then runs the
    alignment only)."""

    system: Any
    prm: Any
    prm_align: Any
    ws: Any
    cells: Any  # cells.CellList


class GramLaw(NamedTuple):
    """The force law on a system, every pair-pair interaction summed through
    the token Gram matrix (:mod:`.gram`: the pair loop's cost does not grow
    with d)."""

    system: Any  # forces.PairSystem
    prm: Any  # record.KernelParams
    ws: Any  # gram.GramWorkspace


class Threaded(NamedTuple):
    """``law`` (an ExactLaw, a CellLaw or a GramLaw) with its blocks spread over
    threads: the step loop compiled for this type calls the parallel force
    kernel (the type, not a value, selects it, so each specialisation
    compiles only the kernel it calls)."""

    law: Any


class Span(NamedTuple):
    """Global steps ``start .. stop - 1``, recording from ``slot``."""

    start: int
    stop: int
    slot: int


class Recording(NamedTuple):
    """Where a run records the states before due steps and the numbers that
    go with them (the energy, or a row of series for the effective flow)."""

    traj: np.ndarray  # (R, p, d)
    energies: np.ndarray  # (R,), or (R, k) for k series


class Row(NamedTuple):
    """Row ``u`` of the pair loop against the pair sums v in [lo, hi)
    (v > u; :mod:`.pair_loops`). The bounds are unsigned (``np.uint64``):
    loops over them emit no negative-index wrap-around and vectorise."""

    u: int  # the row's pair sum
    lo: np.uint64  # the first v
    hi: np.uint64  # one past the last v


class PairSums(NamedTuple):
    """The pair sums s_u = x_a + x_b of a state, coordinate-major
    (:func:`.pair_sums.pair_sums`)."""

    S: np.ndarray  # (d, n) pair sums
    U: np.ndarray  # (d, n) softened directions S / rho
    rho: np.ndarray  # (n,) softened norms sqrt(|s|^2 + eps^2)


class CosineSums(NamedTuple):
    """What a cosine term's pair loop accumulates for every pair sum u
    (:func:`.alignment.alignment_block`), from which its forces follow
    (:func:`.alignment.alignment_forces`)."""

    A: np.ndarray  # (d, n) A_u = sum_v h'(c_uv) U_v
    B: np.ndarray  # (n,) B_u = sum_v h'(c_uv) c_uv


class PairGeometry(NamedTuple):
    """Everything the Gram path's pair loop reads of a state x (p, d)
    (:func:`.gram.pair_geometry`): the pairs' tokens, the token Gram matrix
    and what follows from it. The fields are the
    :class:`~.gram.GramWorkspace`'s of the same names."""

    first: np.ndarray  # (n,) int64 first token a_u of each pair
    second: np.ndarray  # (n,) int64 second token b_u
    g: np.ndarray  # (p, p) token Gram matrix x x^T
    H: np.ndarray  # (p, n) token-pair products H[c, v] = x_c . s_v
    N: np.ndarray  # (n,) squared norms |s_u|^2
    rho: np.ndarray  # (n,) softened norms sqrt(N + eps^2)


class RowRepulsion(NamedTuple):
    """How row u of the Gram path's pair loop evaluates its other-class
    distance term (:func:`.gram.other_distance_coefficients`): where
    ``factored``, the built-in repulsion from its factors
    (:func:`.clustering.repulsion_factors`), the pair (u, v)'s exponential
    being (eN[u] eN[v]) (ea[v] eb[v]); else ``repulsion`` per pair with
    ``law``, and eN, ea, eb are not read. Built per row (the row's views of
    EH taken by the caller, beside the other per-row views)."""

    factored: bool  # this call's repulsion from the factors
    eN: np.ndarray  # (n,) exp(-N / 2 sig_r^2)
    ea: np.ndarray  # (n,) EH[a_u] = exp(H[a_u] / sig_r^2), a_u the row's first token
    eb: np.ndarray  # (n,) EH[b_u], its second token
    prm: Any  # kernel_params.KernelParams: k_r and sig_r (:func:`.clustering.repulsion_from_factors`)
    law: Any  # distance_params(prm): what the slots attraction and repulsion take
