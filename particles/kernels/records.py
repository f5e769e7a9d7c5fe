"""The typed records the compiled entry points take (Numba compiles a
NamedTuple into a struct): the force law at a system, the span of steps a
call runs and the buffers it records into. The parameters themselves are
:class:`~particles.kernels.kernel_params.KernelParams`; a run's time step, noise and
bounds its schedule (:class:`~particles.kernels.euler.EulerSchedule`)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["ExactLaw", "CellLaw", "GramLaw", "Threaded", "Span", "Recording"]


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
