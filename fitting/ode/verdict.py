"""The verdict on a fit: what the data it was fitted on can say about it.

After :meth:`~fitting.ode.ODEModel.fit` the estimator simulates the fitted
model against the data it was given and stores what it found as
``fit_quality_`` (:func:`fit_quality`); when a check fails it warns
(:class:`~fitting.ode.FitQualityWarning`) in one sentence naming it.

The checks, in the data's own terms:

``horizon``
    How long the fitted model can predict from a state as uncertain as the
    data's: it is simulated from the first fitted state and from that state
    moved by the data's noise level (:func:`fitting.ode.noise.noise_level`;
    1e-8 of each column's spread on exact data), and the horizon is the
    time at which the two part by :data:`SEPARATION` of the data's spread
    (root mean square over the columns of the difference over each column's
    standard deviation) or by twice their first distance, whichever is
    larger, or the whole fitted span. A chaotic model has a short horizon; a
    stable or periodic one keeps the whole span.
``simulation``
    R^2 of simulations over horizon-long segments, each started from the
    data's own state at its start, against the data (pooled over segments
    and columns; the segment's first sample, which is the data, excluded),
    as the R^2 of the signal beneath the data's noise: 1 - (SSE - N) /
    (SS - N), SS about each run's column means and N the noise's share of
    both (:func:`segment_r2`), so an exact model of noisy data scores about
    1 at any noise level (data that are mostly noise, SS < 2 N, judge
    nothing: NaN, not failed). It fails below :data:`SIMULATION_R2`. Judging by simulation rather than by the residual
    of the regression is what lets an exact model of slightly inexact data
    pass (a solver's tolerance, a sensor's rounding: the simulation stays
    within that error of the data), while a model with wrong or missing
    terms drifts away from the data within its horizon.
``bounded``
    The simulation from the first fitted state over the whole fitted span
    stays finite and within ``blowup_factor`` times the data's largest
    magnitude. A step of the fixed-step integrator that leaves that range
    is confirmed with :func:`scipy.integrate.solve_ivp` (LSODA) before it
    counts, so a stiff but sound model is not failed by the cheap
    integrator.
``halves``
    Each half of the data predicting the other: the kept terms'
    coefficients fitted (least squares on those terms; a formulation whose
    rows map states, the flow map, solves its own regression) on the first
    half of every run's rows and simulated over the second half of its samples,
    and the other way round, on segments as above (SS about the whole run's
    means, so a half at rest is judged on the run's scale). It fails when
    neither half predicts the other to :data:`SIMULATION_R2`: the terms are
    then not determined by the data, though the whole may fit them (a
    trajectory that settles early, terms that trade off on the visited
    states). One half failing alone is common and harmless (the second half
    of a transient at rest determines little), so it does not count.
``condition``
    The largest condition number, over the equations, of the selected
    terms' columns of the regression (each scaled to unit norm): how far the
    data tell the kept terms apart. Reported, and failed only above
    :data:`MAX_CONDITION` (columns numerically dependent: the coefficients
    are not determined by the data).

The simulations are fourth-order Runge-Kutta steps on the samples' own
times, every segment at once (:mod:`.paths`: compiled for a polynomial
library, vectorised NumPy otherwise), so a verdict costs about what one
simulation of the data's span does.

What it cannot see: behaviour away from the states the data visited (a
second initial condition there may still fail). Measured on 43 systems of
our own (benchmarks/ode_verdicts.py, docs/fitting.md): the rates of
warnings on failed and on successful fits, and its cost.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from scipy.integrate import solve_ivp

from .paths import paths

__all__ = ["fit_quality", "quality_sentence", "segment_r2", "library_model", "SIMULATION_R2", "SEPARATION", "MIN_SEGMENT",
           "MAX_CONDITION", "EXACT_DATA_SHIFT"]

#: a simulation check passes at this R^2 or above (the share of success a user judges a fit by)
SIMULATION_R2 = 0.9
#: the horizon ends where the two simulations part by this share of the data's spread
SEPARATION = 0.1
#: fewest samples of a segment (its start included)
MIN_SEGMENT = 8
#: columns of the selected terms with a larger condition number are numerically dependent
MAX_CONDITION = 1e12
#: the shift of the second horizon simulation on data without measurable noise, a share of each column's spread
EXACT_DATA_SHIFT = 1e-8


def library_model(library: Any, coef: np.ndarray, K: int) -> tuple[Callable, Any]:
    """(rhs, plan) of dx/dt = coef @ library(x): the right-hand side on (S, K)
    states, and its product plan for the compiled integrator (None when the
    library declares none, :meth:`~fitting.ode.library.Library.product_plan`)."""
    products = library.product_plan(K)
    return (lambda X: library.features(X) @ coef.T), (None if products is None else (*products, coef))


def _horizon(rhs, plan, x: np.ndarray, t: np.ndarray, shift: np.ndarray, spread: np.ndarray, limit: float):
    """(horizon samples, blow-up time or None) of one run."""
    sims = paths(rhs, plan, np.vstack([x[0], x[0] + shift]), np.vstack([t, t]), limit)
    lost = ~np.all(np.isfinite(sims[0]), axis=1)
    blow = None
    if lost.any():
        first = int(np.argmax(lost))
        blow = float(t[first])
        sim = _confirm(rhs, x, t, limit)
        bad = ~np.all(np.isfinite(sim), axis=1) | (np.max(np.abs(np.nan_to_num(sim, nan=np.inf)), axis=1) > limit)
        if not bad.any():
            blow = None
            sims = np.stack([sim, sim])  # no separation measured beyond the cheap integrator's reach
        else:
            blow = float(t[int(np.argmax(bad))])
    sep = np.sqrt(np.mean(((sims[0] - sims[1]) / spread) ** 2, axis=1))
    parted = ~(sep <= max(SEPARATION, 2.0 * sep[0]))  # NaN (a path lost) counts as parted
    n = int(np.argmax(parted)) if parted.any() else len(t)
    return max(n, 1), blow


#: most evaluations of the right-hand side per sample the confirming solver may spend
CONFIRM_EVALUATIONS = 50


class _Spent(Exception):
    pass


def _confirm(rhs, x: np.ndarray, t: np.ndarray, limit: float) -> np.ndarray:
    """The path from x[0] by LSODA (stiff-capable, adaptive), ended at the
    limit (a terminal event) or after :data:`CONFIRM_EVALUATIONS` evaluations
    per sample; NaN where it did not reach."""
    sim = np.full(x.shape, np.nan)
    calls = [0]
    budget = CONFIRM_EVALUATIONS * len(t)

    def f(_t, y):
        calls[0] += 1
        if calls[0] > budget:
            raise _Spent
        return rhs(y[None])[0]

    def leaves(_t, y):
        return limit - np.max(np.abs(y))
    leaves.terminal = True
    with np.errstate(all="ignore"):
        try:
            sol = solve_ivp(f, (t[0], t[-1]), x[0], method="LSODA", t_eval=t, rtol=1e-6, events=leaves,
                            atol=1e-9 * max(float(np.max(np.abs(x))), 1e-300))
            sim[: sol.y.shape[1]] = sol.y.T
            if sol.status == -1 and sol.y.shape[1] == len(t):  # failed at the end
                sim[-1] = np.nan
        except (_Spent, ValueError, ArithmeticError):  # out of budget, or a library undefined where it went
            pass
    return sim


def segment_r2(rhs, plan, runs, times, length: int, limit: float, centres=None,
               sigma=None) -> tuple[float, int, int]:
    """Pooled R^2 of simulations over segments of ``length`` samples started
    from the data (SS about each run's column means, or ``centres``, one
    (K,) per run); the number of segments and of samples judged.

    With ``sigma`` (the data's noise level per column, (K,)), the R^2 of the
    signal beneath the noise: 1 - (SSE - N) / (SS - N), N = the noise's
    share of both (samples judged times sum sigma^2), so that an exact model
    of noisy data scores 1, not 1 - N / SS; NaN when the samples are
    mostly noise (SS < 2 N: nothing to judge a model by)."""
    starts, seg_times, observed, means = [], [], [], []
    for j, (x, t) in enumerate(zip(runs, times)):
        n = len(t)
        a = np.arange(0, n - 1, length - 1)
        if len(a) == 0:
            continue
        index = np.minimum(a[:, None] + np.arange(length), n - 1)  # (segments, length): the last padded with
        inside = (a[:, None] + np.arange(length)) < n  # steps of 0 (its last time repeated), not judged there
        obs = x[index]
        obs[~inside] = np.nan
        starts.append(x[a])
        seg_times.append(t[index])
        observed.append(obs)
        means.append(np.broadcast_to(x.mean(axis=0) if centres is None else centres[j], (len(a), x.shape[1])))
    if not starts:
        return float("nan"), 0, 0
    sims = paths(rhs, plan, np.vstack(starts), np.vstack(seg_times), limit)
    obs = np.vstack(observed)[:, 1:]
    sim = sims[:, 1:]
    keep = np.all(np.isfinite(obs), axis=2)
    ss = float(np.sum(((obs - np.vstack(means)[:, None, :]) ** 2)[keep]))
    diff = np.where(np.isfinite(sim), sim - obs, np.inf)  # a segment that left the range counts as missed
    with np.errstate(over="ignore", invalid="ignore"):
        sse = float(np.sum((diff ** 2)[keep]))
    count, judged = int(sum(len(s) for s in starts)), int(keep.sum())
    noise = 0.0 if sigma is None else judged * float(np.sum(np.asarray(sigma, dtype=float) ** 2))
    if not ss > 2.0 * noise:  # no variation, or mostly noise: no model can be judged on it
        return float("nan"), count, judged
    r2 = 1.0 - (sse - noise) / (ss - noise)
    return (min(r2, 1.0) if np.isfinite(r2) else -np.inf), count, judged


def halves_r2(solve: Callable, model_of: Callable, Theta: np.ndarray, Y: np.ndarray, owner: np.ndarray,
              samples: list, length: int, limit: float, sigma=None) -> tuple[float, float] | None:
    """Each half of the data predicting the other: the regression solved on
    the first half of every run's rows, simulated over the second half of
    its samples, and the other way round (segments of ``length`` samples,
    SS about the whole run's means, so a half at rest is judged on the run's
    scale). ``solve(Theta, Y) -> coef``; ``model_of(coef) -> (rhs, plan)``.
    None when a half has fewer rows than terms."""
    first = np.zeros(len(owner), dtype=bool)
    for run in np.unique(owner):
        rows = np.flatnonzero(owner == run)
        first[rows[: len(rows) // 2]] = True
    if min(first.sum(), (~first).sum()) <= Theta.shape[1]:
        return None
    halves = []
    for x, t in samples:
        mid = len(t) // 2
        halves.append(((x[:mid + 1], t[:mid + 1]), (x[mid:], t[mid:]), x.mean(axis=0)))
    out = []
    for fit_rows, judged in ((first, 1), (~first, 0)):
        try:
            coef = solve(Theta[fit_rows], Y[fit_rows])
        except (ValueError, np.linalg.LinAlgError):
            return None
        rhs, plan = model_of(coef)
        parts = [h[judged] for h in halves if len(h[judged][1]) >= 2]
        r2, _, _ = segment_r2(rhs, plan, [p[0] for p in parts], [p[1] for p in parts], length, limit,
                              centres=[h[2] for h in halves if len(h[judged][1]) >= 2], sigma=sigma)
        out.append(float(r2))
    return out[0], out[1]


def _determination(Theta: np.ndarray, Y: np.ndarray, coef: np.ndarray) -> float:
    """The smallest |t| = |c| / standard error over the kept terms of every
    equation: least squares of Y on the kept columns, the standard errors
    from its residual (inf on exact data, where nothing is uncertain)."""
    worst = float("inf")
    n = Theta.shape[0]
    for i, row in enumerate(coef):
        support = np.flatnonzero(row != 0)
        k = len(support)
        if k == 0 or n <= k:
            continue
        A = Theta[:, support]
        c, *_ = np.linalg.lstsq(A, Y[:, i], rcond=None)
        resid = Y[:, i] - A @ c
        s2 = float(resid @ resid) / (n - k)
        try:
            cov = s2 * np.linalg.inv(A.T @ A)
        except np.linalg.LinAlgError:
            return 0.0
        se = np.sqrt(np.maximum(np.diag(cov), 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(se > 0, np.abs(c) / se, np.inf)
        worst = min(worst, float(np.min(t)))
    return worst


def _condition(Theta: np.ndarray, coef: np.ndarray) -> float:
    """The largest condition number of the selected columns of Theta (unit-norm columns), over equations."""
    worst = 1.0
    seen = set()
    for row in coef:
        support = tuple(np.flatnonzero(row != 0))
        if len(support) < 2 or support in seen:
            continue
        seen.add(support)
        A = Theta[:, support]
        norms = np.linalg.norm(A, axis=0)
        if np.any(norms == 0):
            return float("inf")
        s = np.linalg.svd(A / norms, compute_uv=False)
        worst = max(worst, float(s[0] / s[-1]) if s[-1] > 0 else float("inf"))
    return worst


def fit_quality(rhs: Callable[[np.ndarray], np.ndarray], plan: Any, samples: list, sigma: np.ndarray, Theta: np.ndarray,
                coef: np.ndarray, limit: float, Y: np.ndarray | None = None, relation: bool = False,
                halves: Callable | None = None) -> dict[str, Any]:
    """The verdict on a fitted model (the checks of this module).

    Parameters
    ----------
    rhs : callable, (S, K) -> (S, K)
        The fitted right-hand side.
    plan : (parent, variable, coef) or None
        The same right-hand side as library products and coefficients, for
        the compiled integrator (:func:`.paths.paths`); None: ``rhs``.
    samples : list of (x, t)
        Each run's fitted samples, x of shape (T, K), and their times (T,).
    sigma : ndarray, shape (K,)
        The data's noise level per column.
    Theta : ndarray, shape (n, F)
        The regression's library columns.
    coef : ndarray, shape (K, F)
        The fitted coefficients.
    limit : float
        The bound on a simulated state's magnitude (``blowup_factor`` times
        the data's largest).
    Y : ndarray, shape (n, K), optional
        The regression's targets, for ``min_t``.
    relation : bool
        A linear relation among the states makes the library's columns
        dependent and was warned of (:mod:`.relations`): the conditioning is
        reported, not failed a second time.
    halves : callable, optional
        ``halves(length) -> (r2, r2) or None``: :func:`halves_r2` bound to
        the fit's rows and regressor (the ``halves`` check).

    Returns
    -------
    dict
        ``trusted`` (bool), ``failed`` (names of failed checks),
        ``simulation_r2``, ``threshold``, ``segments``, ``segment_samples``,
        ``samples_judged``, ``horizon`` (in time units) and
        ``horizon_share`` (of the fitted span), ``bounded`` and
        ``blowup_time`` (None when bounded), ``condition``, ``min_t`` (the
        smallest |coefficient| / standard error of a kept term, reported
        only: it flagged as many good fits as bad ones on our benchmark),
        ``noise_level`` (per column), ``span`` (first, last fitted time).
    """
    runs = [np.asarray(x, dtype=float) for x, _ in samples]
    times = [np.asarray(t, dtype=float) for _, t in samples]
    data = np.vstack(runs)
    spread = data.std(axis=0)
    spread = np.where(spread > 0, spread, 1.0)
    sigma = np.asarray(sigma, dtype=float)
    shift = np.where(sigma > EXACT_DATA_SHIFT * spread, sigma, EXACT_DATA_SHIFT * spread)
    longest = int(np.argmax([len(t) for t in times]))
    n_horizon, blow = _horizon(rhs, plan, runs[longest], times[longest], shift, spread, limit)
    t0 = times[longest]
    length = max(MIN_SEGMENT, n_horizon)
    r2, segments, judged = segment_r2(rhs, plan, runs, times, length, limit, sigma=sigma)
    condition = _condition(Theta, coef)
    halves_pair = None if halves is None else halves(length, sigma)
    determination = _determination(Theta, Y, coef) if Y is not None else float("inf")
    failed = []
    if r2 < SIMULATION_R2:  # NaN: the data are mostly noise, nothing to judge the simulation by
        failed.append("simulation")
    if blow is not None:
        failed.append("bounded")
    if halves_pair is not None and all(r < SIMULATION_R2 for r in halves_pair):  # neither half predicts the
        # other (a half that is mostly noise, NaN, judges nothing and so does not fail)
        failed.append("halves")
    if not condition <= MAX_CONDITION and not relation:  # a linear relation among the states was warned of
        failed.append("condition")
    span = (float(min(t[0] for t in times)), float(max(t[-1] for t in times)))
    horizon = float(t0[min(n_horizon, len(t0)) - 1] - t0[0])
    return {"trusted": not failed, "failed": failed, "simulation_r2": float(r2), "threshold": SIMULATION_R2,
            "segments": segments, "segment_samples": length, "samples_judged": judged, "horizon": horizon,
            "horizon_share": horizon / max(float(t0[-1] - t0[0]), 1e-300), "bounded": blow is None,
            "blowup_time": blow, "condition": condition, "min_t": determination,
            "halves_r2": None if halves_pair is None else list(halves_pair), "noise_level": sigma.tolist(), "span": span}


def quality_sentence(quality: dict[str, Any]) -> str | None:
    """One sentence naming what failed, or None when the fit is trusted."""
    if quality["trusted"]:
        return None
    parts = []
    if "bounded" in quality["failed"]:
        parts.append(f"its simulation from the first fitted state leaves the data's range at t = "
                     f"{quality['blowup_time']:.4g} (fitted span {quality['span'][0]:.4g}..{quality['span'][1]:.4g})")
    if "simulation" in quality["failed"]:
        r2 = quality["simulation_r2"]
        parts.append(f"simulated from the data's own states ({quality['segments']} segment(s) of "
                     f"{quality['segment_samples']} samples) it reproduces them with R^2 "
                     f"{'below -1e6' if r2 < -1e6 else f'{r2:.3g}'} (at least {quality['threshold']:g} expected)")
    if "halves" in quality["failed"]:
        a, b = quality["halves_r2"]
        parts.append(f"fitted on either half of the data it predicts neither other half (R^2 {max(a, -1e6):.3g}, "
                     f"{max(b, -1e6):.3g})")
    if "condition" in quality["failed"]:
        parts.append(f"its terms' columns are numerically dependent on the data (condition number "
                     f"{quality['condition']:.3g})")
    return ("the fitted model is not to be trusted: " + ", and ".join(parts)
            + " (a term missing or wrong, a constraint the data do not obey, or too little of the dynamics in "
              "the data); fit_quality_ has the numbers")
