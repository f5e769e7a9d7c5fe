"""Overdamped Euler (Langevin) step loops, the whole loop in compiled code.

One loop, :func:`run_euler`, for every force kernel: the type of its law
record selects the kernel at compile time (exact sums or the cell list;
``Threaded`` for the parallel kernel; see
:func:`~particles.kernels.forces.law_forces`), so each specialisation
compiles, and caches on disk, only the kernel it calls. Serial and parallel
give bit-identical results. A custom pair energy runs copies of the same
loop with its own force kernels in the ``law_forces`` slot
(:mod:`particles.kernels.rebind`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .forces import law_forces
from .status import NONFINITE, OK, check_state

__all__ = ["EulerSchedule", "run_euler"]


class EulerSchedule(NamedTuple):
    """Time step, recording stride, temperature schedule and growth bound of
    a run.

    The state before global step i is recorded when i % record_every == 0;
    the temperature at step i is t0 + (t_end - t0) * i / total; the run stops
    with RUNAWAY once max |x| exceeds max_abs.
    """

    dt: float
    record_every: int
    t0: float
    t_end: float
    total: int
    max_abs: float


@njit(cache=True)
def _all_finite(x):
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            if not np.isfinite(x[a, k]):
                return False
    return True


@njit(cache=True)
def _record(x, energy, slot, traj, energies):
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            traj[slot, a, k] = x[a, k]
    energies[slot] = energy


@njit(cache=True)
def _advance(x, force, energy, i, sched, rng, traj, energies, slot):
    """The rest of Euler step i once the forces at x are known: check, record
    the state before the step when due, move, add noise sqrt(2 T dt) N(0, 1).
    Returns (status, step reached, next slot)."""
    if not np.isfinite(energy) or not _all_finite(force):
        return NONFINITE, i, slot
    if i % sched.record_every == 0:
        _record(x, energy, slot, traj, energies)
        slot += 1
    dt = sched.dt
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            x[a, k] += dt * force[a, k]
    if sched.t0 > 0.0 or sched.t_end > 0.0:
        temp = sched.t0 + (sched.t_end - sched.t0) * i / sched.total
        if temp > 0.0:
            amplitude = np.sqrt(2.0 * temp * dt)
            for a in range(x.shape[0]):
                for k in range(x.shape[1]):
                    x[a, k] += amplitude * rng.standard_normal()
    code = check_state(x, sched.max_abs)
    return code, i + 1, slot


@njit(cache=True)
def run_euler(x, law, sched, span, rng, rec):
    """Euler steps ``span.start .. span.stop - 1`` in place on x under
    ``law`` (:func:`~particles.kernels.forces.law_forces`: exact or cell
    list, serial or ``Threaded``), recording into ``rec`` from ``span.slot``.
    Returns (status, step reached, next slot)."""
    force = np.empty_like(x)
    slot = span.slot
    for i in range(span.start, span.stop):
        energy = law_forces(x, law, force)
        status, reached, slot = _advance(x, force, energy, i, sched, rng, rec.traj, rec.energies, slot)
        if status != OK:
            return status, reached, slot
    return OK, span.stop, slot


@njit(cache=True, nogil=True)
def run_euler_serial(x, law, sched, span, rng, rec):
    """:func:`run_euler` with a serial law, without Python's lock (GIL) while
    it runs: other threads of the process (a server's event loop, other
    sessions) go on meanwhile. The parallel kernels keep the lock: Numba's
    fallback threading layer (workqueue) aborts when two threads launch
    parallel regions at once."""
    return run_euler(x, law, sched, span, rng, rec)
