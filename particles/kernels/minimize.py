"""Gradient descent with Armijo backtracking on U (compiled)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .forces import forces_serial
from .status import BUDGET_USED, NONFINITE, OK, RUNAWAY, check_state

__all__ = ["minimize_serial", "Descent"]


class Descent(NamedTuple):
    """Budget and tolerances of a descent: at most ``max_steps`` accepted
    steps from step size ``step0``, until max |F| < ``gtol``; RUNAWAY once
    max |x| exceeds ``max_abs``."""

    max_steps: int
    step0: float
    gtol: float
    max_abs: float


@njit(cache=True)
def minimize_serial(x, law, descent, force):
    """Descend U from x (in place) under ``law`` (an
    :class:`~particles.kernels.records.ExactLaw`) until max |F| < gtol.

    Every accepted step lowers U by at least half the linear prediction
    (Armijo). Returns (status, steps, energy, max |F|): OK when converged or
    when no descent is possible at machine precision, BUDGET_USED after
    max_steps, NONFINITE on a NaN or infinite state, RUNAWAY once max |x|
    exceeds max_abs.
    """
    max_steps, gtol, max_abs = descent.max_steps, descent.gtol, descent.max_abs
    trial = np.empty_like(x)
    ftrial = np.empty_like(x)
    energy = forces_serial(x, law, force)
    step = descent.step0
    fmax = 0.0
    for it in range(max_steps):
        g2 = 0.0
        fmax = 0.0
        for a in range(x.shape[0]):
            for k in range(x.shape[1]):
                g2 += force[a, k] * force[a, k]
                if abs(force[a, k]) > fmax:
                    fmax = abs(force[a, k])
        if not np.isfinite(energy) or not np.isfinite(g2):
            return NONFINITE, it, energy, fmax
        if fmax < gtol:
            return OK, it, energy, fmax
        accepted = False
        for _ in range(60):
            for a in range(x.shape[0]):
                for k in range(x.shape[1]):
                    trial[a, k] = x[a, k] + step * force[a, k]
            e_trial = forces_serial(trial, law, ftrial)
            if e_trial <= energy - 0.5 * step * g2:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            return OK, it, energy, fmax
        for a in range(x.shape[0]):
            for k in range(x.shape[1]):
                x[a, k] = trial[a, k]
                force[a, k] = ftrial[a, k]
        energy = e_trial
        if check_state(x, max_abs) == RUNAWAY:
            return RUNAWAY, it + 1, energy, fmax
        step *= 1.5
    return BUDGET_USED, max_steps, energy, fmax
