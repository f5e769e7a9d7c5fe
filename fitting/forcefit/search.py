"""The range search of the force fit: the profile residual (the best
strengths for given ranges), a scrambled Sobol sample of the log-range box
on a few snapshots, short trust-region polishes from the best points, the
best to convergence; and the design matrix over every snapshot with its
derivative in log-range (for the full-data step and the intervals)."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

from .basis import Basis
from .data import ForceRun
from .solve import nnls

__all__ = ["FLAT_TOL", "FLAT_ITERATIONS", "FlatStop", "search_rows", "profile_residual", "search_ranges", "design",
           "range_differences", "range_jacobian", "LOG_STEP", "SOBOL_POINTS", "COARSE_SNAPSHOTS", "POLISH_STARTS",
           "SCREEN_EVALUATIONS", "SEARCH_TOL"]

#: relative step of the finite differences in log-range
LOG_STEP = 1e-5
#: points of the coarse search (a scrambled Sobol sample of the log-range box, plus the start)
SOBOL_POINTS = 32
#: snapshots the coarse search uses
COARSE_SNAPSHOTS = 8
#: polishes started from the law's own ranges and the best other coarse points, each
#: for at most SCREEN_EVALUATIONS evaluations; the best goes on to convergence
POLISH_STARTS = 3
SCREEN_EVALUATIONS = 6
#: the polishes' xtol, ftol and gtol. At 1e-12 a flat profile (a law that explains little, ranges at
#: their bounds) never converged: a recorded MLP run spent the whole budget of 200 evaluations on cost
#: changes below 1e-10 (52 s), where 1e-10 stops it after 33 (10 s). SciPy's default, 1e-8, stopped one
#: of the interval-coverage test's 120 synthetic fits on a plateau (attraction switched off, sig_a at
#: its lower bound); 1e-9 and 1e-10 found the true ranges there
SEARCH_TOL = 1e-10
#: the polish also stops when its cost fell by less than FLAT_TOL (relative) over its last
#: FLAT_ITERATIONS iterations: a profile so flat that R^2 moves by less than 1e-7 in ten steps (SciPy's
#: default ftol, 1e-8, held for ten iterations instead of met once). On a recorded MLP run (p 41, d 64)
#: the polish otherwise crawled at 1e-9 per iteration to its limit (218 evaluations in all, cost 5e-7
#: lower than where this stops it, after 49 polish evaluations, 67 in all)
FLAT_TOL = 1e-7
FLAT_ITERATIONS = 10


def search_rows(runs: list[ForceRun], search_snapshots: int, count: int | None = None) -> list[np.ndarray]:
    """Each run's snapshots among ``count`` (at most ``search_snapshots``)
    spread evenly over all runs' snapshots."""
    total = sum(len(r.X) for r in runs)
    count = search_snapshots if count is None else min(count, search_snapshots)
    pick = np.unique(np.linspace(0, total - 1, min(count, total)).round().astype(np.int64))
    rows, offset = [], 0
    for run in runs:
        mine = pick[(pick >= offset) & (pick < offset + len(run.X))] - offset
        rows.append(mine)
        offset += len(run.X)
    return rows


def profile_residual(basis: Basis, runs: list[ForceRun], rows: list[np.ndarray], theta: np.ndarray,
                     nonnegative: bool) -> np.ndarray:
    """Residual of the best strengths at ranges ``theta`` on the snapshots ``rows``."""
    A, b = [], []
    for i, (run, r) in enumerate(zip(runs, rows)):
        if r.size == 0:
            continue
        A.append(basis.columns(theta, i, r))
        b.append(run.G[r].ravel())
    A = joined(A)
    b = np.concatenate(b)
    if not np.all(np.isfinite(A)):  # a range where a term overflows: a residual the search backs away from
        return np.full_like(b, 1e10 * (1.0 + float(np.sqrt(np.mean(b ** 2)))))
    return A @ nnls(A, b, nonnegative) - b


class FlatStop:
    """A ``least_squares`` callback that stops the polish where the profile
    is flat: the cost fell by at most :data:`FLAT_TOL` (relative) over the
    last :data:`FLAT_ITERATIONS` iterations, and by no more in their second
    half than in their first (a crawl, not a start gathering pace). SciPy
    calls it after its own tests, so an iteration where both stop is
    reported as this stop."""

    def __init__(self):
        self.costs: list[float] = []
        self.stopped = False

    def __call__(self, intermediate_result) -> None:
        self.costs.append(float(intermediate_result.cost))
        if len(self.costs) > FLAT_ITERATIONS:
            before, now = self.costs[-1 - FLAT_ITERATIONS], self.costs[-1]
            middle = self.costs[-1 - FLAT_ITERATIONS // 2]
            # flat, and not speeding up: a trust region growing from a tiny start (at a bound) also
            # moves the cost little at first, but its later steps gain more than its earlier ones
            slack = 64.0 * np.finfo(float).eps * now  # the halves' falls compared above rounding
            if before - now <= FLAT_TOL * now and middle - now <= before - middle + slack:
                self.stopped = True
                raise StopIteration


def search_ranges(basis: Basis, runs: list[ForceRun], ranges, log0, log_lo, log_hi, *, search_snapshots: int,
                  nonnegative: bool, seed: int, max_evaluations: int) -> tuple[np.ndarray, dict]:
    """The fitted ranges and the search's record (status, evaluations, ...)."""
    if not ranges:
        return np.zeros(0), {"search": "none (no ranges searched)", "converged": True, "flat_stop": False}
    rows = search_rows(runs, search_snapshots)
    log_theta = np.clip(log0, log_lo, log_hi)

    # coarse: the start and a scrambled Sobol sample of the log box, on a few snapshots
    coarse_rows = search_rows(runs, search_snapshots, COARSE_SNAPSHOTS)
    sample = stats.qmc.Sobol(len(ranges), scramble=True, seed=seed).random(SOBOL_POINTS)
    candidates = np.vstack([log_theta, log_lo + sample * (log_hi - log_lo)])
    values = []
    for lt in candidates:
        r = profile_residual(basis, runs, coarse_rows, np.exp(lt), nonnegative)
        values.append(float(r @ r))
    # polish the best few briefly on the search snapshots, then the best of those to convergence; the
    # residual in units of the target's RMS, so that every stopping rule (gtol is absolute in SciPy) is
    # the same for a rescaled target and the ranges do not depend on the forces' unit
    target = np.concatenate([run.G[r].ravel() for run, r in zip(runs, rows) if r.size])
    unit = float(np.sqrt(np.mean(target ** 2))) if target.size else 1.0
    unit = unit if np.isfinite(unit) and unit > 0 else 1.0
    fun = lambda lt: profile_residual(basis, runs, rows, np.exp(lt), nonnegative) / unit  # noqa: E731
    options = dict(bounds=(log_lo, log_hi), method="trf", x_scale=1.0, diff_step=LOG_STEP, xtol=SEARCH_TOL,
                   ftol=SEARCH_TOL, gtol=SEARCH_TOL)
    result = None
    evaluations = 0
    order = [0] + [int(i) for i in np.argsort(values) if i != 0][:POLISH_STARTS - 1]  # the start always
    for i in order:
        trial = optimize.least_squares(fun, candidates[i], max_nfev=SCREEN_EVALUATIONS, **options)
        evaluations += int(trial.nfev)
        if result is None or trial.cost < result.cost:
            result = trial
    flat = FlatStop()
    if result.status == 0:  # not converged within the screening budget: go on
        result = optimize.least_squares(fun, result.x, max_nfev=max_evaluations, callback=flat, **options)
        evaluations += int(result.nfev)
    message = str(result.message)
    if flat.stopped:
        message = (f"the cost fell by less than {FLAT_TOL:g} (relative) over the last {FLAT_ITERATIONS} "
                   "iterations: a flat profile")
    theta = np.exp(result.x)
    return theta, {"search": "grid + least_squares", "status": int(result.status),
                   "message": message, "evaluations": evaluations,
                   "coarse_points": len(candidates),
                   "search_snapshots": int(sum(r.size for r in rows)),
                   "converged": bool(result.status > 0 or flat.stopped), "flat_stop": flat.stopped}


def design(basis: Basis, runs: list[ForceRun], theta: np.ndarray, per_run: bool
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Design matrix (rows, terms) and target over every snapshot, and each
    row's bootstrap unit (its run when ``per_run``, else its snapshot)."""
    A, b, units = [], [], []
    offset = 0
    for i, run in enumerate(runs):
        cols = basis.columns(theta, i)
        T = cols.shape[1]
        A.append(cols)
        b.append(run.G.ravel())
        size = run.X.shape[1] * run.X.shape[2]
        unit = np.full(T, i) if per_run else offset + np.arange(T)
        units.append(np.repeat(unit, size))
        offset += T
    return joined(A), np.concatenate(b), np.concatenate(units)


def joined(blocks: list[np.ndarray]) -> np.ndarray:
    """The design (rows, K), Fortran-ordered (the column order LAPACK works
    in), from runs' term-major blocks (K, T, N, d) of :meth:`.Basis.columns`."""
    flat = [b.reshape(b.shape[0], -1) for b in blocks]
    return (flat[0] if len(flat) == 1 else np.concatenate(flat, axis=1)).T


def range_differences(basis: Basis, runs: list[ForceRun], theta: np.ndarray, A: np.ndarray, per_run: bool
                      ) -> list[np.ndarray] | None:
    """d(unit forces)/d(log range) at ``theta``, one (rows, terms) array per
    range, by forward differences of relative step LOG_STEP; None without
    ranges. The model's derivative is :func:`range_jacobian` of these."""
    if theta.size == 0:
        return None
    diffs = []  # A: the design at theta (unit forces, rows x terms)
    for j in range(theta.size):
        up = theta.copy()
        up[j] *= math.exp(LOG_STEP)
        Au, _, _ = design(basis, runs, up, per_run)
        Au -= A
        Au /= LOG_STEP
        diffs.append(Au)
    return diffs


def range_jacobian(diffs: list[np.ndarray] | None, coef: np.ndarray) -> np.ndarray | None:
    """d(model)/d(log range), (rows, ranges), from :func:`range_differences`
    and the strengths ``coef``."""
    if diffs is None:
        return None
    J = np.empty((diffs[0].shape[0], len(diffs)), order="F")  # columns filled in place (column_stack copies)
    for j, D in enumerate(diffs):
        J[:, j] = D @ coef
    return J
