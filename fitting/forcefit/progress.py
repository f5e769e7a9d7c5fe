"""Progress of a force fit: snapshots whose term forces were evaluated,
against an estimate of the fit's total (:func:`expected_evaluations`),
reported as ``callback(done, total)``, the package's one progress signature.

Before any evaluation the fit compiles the pair kernels it will call
(:func:`compile_kernels`): on a fresh install Numba compiles them, which
takes longer than the fit itself on a small run. The callback hears
``(0, total)`` before that wait, so a bar is on the screen during it (the
CLI's says that a first run compiles); later calls, in any process, load the
kernels from Numba's cache in well under a second."""

from __future__ import annotations

from typing import Any, Callable

from .data import ForceRun
from .search import COARSE_SNAPSHOTS, POLISH_STARTS, SCREEN_EVALUATIONS, SOBOL_POINTS

__all__ = ["FitProgress", "expected_evaluations", "compile_kernels", "EXPECTED_POLISH"]

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

    def __init__(self, callback: Callable[..., Any], total: int):
        self.callback = callback
        self.total = max(1, int(total))
        self.done = 0

    def __call__(self, snapshots: int) -> None:
        self.done += int(snapshots)
        if self.done >= self.total:  # the search took more than expected: room for the rest
            self.total = self.done + 1
        self.callback(self.done, self.total)

    def start(self) -> None:
        """``callback(0, total)``: the fit has started (before the kernels' compilation)."""
        self.callback(0, self.total)

    def finish(self) -> None:
        self.total = self.done
        self.callback(self.done, self.total)


def compile_kernels(law: Any, runs: list[ForceRun], path: str) -> None:
    """Compile (or load from Numba's cache) the pair kernels the fit's term
    forces will call on ``runs``: the serial kernel of the path each run
    takes (:func:`particles.law_terms.taken_path`), and the multi-threaded
    one when a call over all of a run's snapshots reaches
    :data:`particles.law_terms.PARALLEL_WORK`, by evaluating one snapshot
    with each. A law that computes its own forces (the effective loss) has
    none to compile."""
    import numba
    import numpy as np

    from particles.energy import pair_system
    from particles.law_terms import PARALLEL_WORK, pair_work, taken_path

    if isinstance(law, str) or getattr(law, "unit_term_forces", None) is not None:
        return
    kernels = law.kernels()
    done = set()
    for run in runs:
        taken = taken_path(law, path, run.X, run.train)
        work = len(run.X) * pair_work(len(run.train), run.X.shape[2], taken == "gram")
        parallel = work >= PARALLEL_WORK and numba.config.NUMBA_NUM_THREADS > 1
        if taken == "own" or (taken, parallel) in done:
            continue
        done.add((taken, parallel))
        X = np.ascontiguousarray(run.X[:1])
        system = pair_system(run.train)
        which = np.zeros(4, dtype=np.bool_)  # the kernels' four term slots, as unit_term_forces fills them
        which[:len(law.pair_terms)] = True
        full = np.empty((1, 4) + X.shape[1:])
        names = ("gram_term_forces_serial", "gram_term_forces") if taken == "gram" else ("term_forces_serial",
                                                                                            "term_forces")
        for name in names if parallel else names[:1]:
            getattr(kernels, name)(X, system, law.unit_record(), which, full)
