"""Status codes returned by every compiled integrator (one meaning each)."""

from __future__ import annotations

__all__ = ["OK", "NONFINITE", "BUDGET_USED", "STATUS_NAMES"]

#: the run finished (or the minimiser converged / could descend no further)
OK = 0
#: the state, the forces or the energy became NaN or infinite
NONFINITE = 1
#: the minimiser used its whole step budget without converging
BUDGET_USED = 2

STATUS_NAMES = {OK: "ok", NONFINITE: "non-finite state", BUDGET_USED: "step budget used up"}
