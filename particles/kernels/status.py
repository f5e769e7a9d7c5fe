"""Status codes returned by every compiled integrator (one meaning each)."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["OK", "NONFINITE", "BUDGET_USED", "RUNAWAY", "STATUS_NAMES", "check_state"]

#: the run finished (or the minimiser converged / could descend no further)
OK = 0
#: the state, the forces or the energy became NaN or infinite
NONFINITE = 1
#: the minimiser used its whole step budget without converging
BUDGET_USED = 2

#: the state grew past its bound (max |x| above ``max_abs``)
RUNAWAY = 3

STATUS_NAMES = {OK: "ok", NONFINITE: "non-finite state", BUDGET_USED: "step budget used up",
                RUNAWAY: "runaway growth"}


@njit(cache=True)
def check_state(x, max_abs):
    """OK, NONFINITE if any entry of x (p, d) is NaN or infinite, or RUNAWAY
    if max |x| exceeds ``max_abs``."""
    biggest = 0.0
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            v = x[a, k]
            if not np.isfinite(v):
                return NONFINITE
            biggest = max(biggest, abs(v))
    return RUNAWAY if biggest > max_abs else OK
