"""Progress of a force fit: snapshots whose term forces were evaluated,
against an estimate of the fit's total (:func:`expected_evaluations`)."""

from __future__ import annotations

from typing import Any, Callable

from .data import ForceRun
from .search import COARSE_SNAPSHOTS, POLISH_STARTS, SCREEN_EVALUATIONS, SOBOL_POINTS

__all__ = ["FitProgress", "expected_evaluations", "EXPECTED_POLISH"]

#: evaluations the last polish of the range search is expected to take (its limit is max_evaluations;
#: the estimate grows when a search takes more)
EXPECTED_POLISH = 15


def expected_evaluations(runs: list[ForceRun], n_ranges: int, search_snapshots: int) -> int:
    """Snapshots a fit is expected to evaluate: the coarse search, the
    screening and final polishes (each evaluation plus its finite-difference
    Jacobian), the design over every snapshot, the range differences and the
    full-data step."""
    total = sum(len(r.X) for r in runs)
    if n_ranges == 0:
        return total
    search = min(search_snapshots, total)
    coarse = (SOBOL_POINTS + 1) * min(COARSE_SNAPSHOTS, total)
    polish = (POLISH_STARTS * SCREEN_EVALUATIONS + EXPECTED_POLISH) * (1 + n_ranges) * search
    return coarse + polish + total * (2 + n_ranges)


class FitProgress:
    """Counts evaluated snapshots and reports ``callback(done, total)``."""

    def __init__(self, callback: Callable[[int, int], Any], total: int):
        self.callback = callback
        self.total = max(1, int(total))
        self.done = 0

    def __call__(self, snapshots: int) -> None:
        self.done += int(snapshots)
        if self.done >= self.total:  # the search took more than expected: room for the rest
            self.total = self.done + 1
        self.callback(self.done, self.total)

    def finish(self) -> None:
        self.total = self.done
        self.callback(self.done, self.total)
