"""Which force law explains training: regress observed embedding forces onto
a law's pair-force terms (docs/force_fit.md).

Given snapshots X_t (T, N, d) of an embedding and the observed forces G_t at
the same steps (minus the loss gradient, or the optimiser's update), fit

    G_t  ~  sum_k c_k F_k(X_t; theta)

with the terms F_k of a law (:mod:`particles.law_terms`), strengths c >= 0
by non-negative least squares and the range parameters theta by a bounded
search on the profile (for each theta the best c): a coarse grid per range,
then a trust-region polish (``scipy.optimize.least_squares``) on a spread
subset of the snapshots; the strengths are then refitted on every snapshot.

Intervals are percentile bootstrap intervals: snapshots (or runs, when
several are given) resampled with replacement, each replicate refitted on
the model linearised at the fit (strengths and log-ranges together, the
strengths kept >= 0), so the ranges' uncertainty enters the strengths'
intervals; the replicates' spread is scaled by sqrt(n / (n - P)) for n
units and P parameters (the HC1 small-sample correction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy import optimize, stats
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from particles.core.validation import check_array, check_choice, check_int, describe
from particles.datasets import TASK_LABELS, PairDataset
from particles.law_terms import (check_force_law, check_term_names, range_dependencies, range_fields, range_names,
                                 range_values, term_names, unit_term_forces, with_ranges, with_strengths)
from particles.pair_energy import PairEnergy
from particles.params import ForceParams
from particles.trajectory import Trajectory

from .ode.quality import warn_quality

__all__ = ["ForceLawFit", "ForceRun", "TARGETS", "NORMALIZE", "as_force_runs"]

#: what the observed force is: minus the loss gradient, or the optimiser's update
TARGETS = ("gradient", "update")
#: how G is scaled before the fit: None (as given) or "rms" (each run divided by its RMS force)
NORMALIZE = (None, "rms")
#: largest relative move of the ranges in the full-data step for which the Jacobian's unit-force
#: differences are reused
REUSE_JACOBIAN = 0.01
#: a term whose unit force (RMS over the data) is below this fraction of the observed force's RMS
#: has a strength the data do not measure (it makes up a remainder at whatever size): a warning
UNIDENTIFIED = 1e-6
#: most bootstrap replicates and windows of training steps (each keeps an array)
MAX_BOOTSTRAP = 100_000
MAX_WINDOWS = 10_000
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


@dataclass
class ForceRun:
    """One run's data: snapshots X (T, N, d), observed forces G (T, N, d),
    its training set and the step of each snapshot."""

    X: np.ndarray
    G: np.ndarray
    train: PairDataset
    steps: np.ndarray


def _gradient_help() -> str:
    return ("record them with fitting.training.train(config, seed, gradients=True), `embdyn train ... --gradients` "
            "or EmbeddingRecorder(..., gradients=True)")


def _run_from_trajectory(traj: Trajectory, target: str, train: PairDataset | None, name: str) -> ForceRun:
    field = "gradients" if target == "gradient" else "updates"
    values = getattr(traj, field)
    if values is None:
        raise ValueError(f"{name} has no {field}: {_gradient_help()}")
    if train is None:
        train = traj.train
        if train is not None and traj.meta.get("task") not in TASK_LABELS:
            warn_quality(f"{name}'s training labels were not checked against a task (its meta names none of "
                         f"{sorted(TASK_LABELS)}): wrong labels would fit a wrong force law without a word; record "
                         "the run with meta={'task': 'modular_addition'} (or 'addition') to have them checked")
    if train is None:
        if not all(k in traj.meta for k in ("model", "config", "train_indices")):
            raise ValueError(f"{name} holds no training set: give it as train=PairDataset(pairs, labels, p) (or "
                             "record it with EmbeddingRecorder(..., train=(pairs, labels))), or on the command line "
                             "embdyn force-fit RUN --train FILE (.npz with arrays pairs, labels or a CSV a,b,label)")
        from .training.configs import training_set

        train = training_set(traj.meta)
    G = -values if target == "gradient" else values
    n = len(G)  # the last snapshot has no gradient when no step followed it
    return ForceRun(traj.embeddings[:n], G, train, traj.snapshot_steps[:n])


def as_force_runs(X: Any, G: Any = None, *, train: Any = None, steps: Any = None, target: str = "gradient"
                  ) -> list[ForceRun]:
    """The data of :meth:`ForceLawFit.fit` as a list of runs, checked (see there)."""
    check_choice(target, "target", TARGETS)
    if isinstance(X, Trajectory) or (isinstance(X, (list, tuple)) and X and all(isinstance(t, Trajectory) for t in X)):
        if G is not None:
            raise ValueError("G must be None when X is a Trajectory (the forces come from its gradients)")
        trajs = [X] if isinstance(X, Trajectory) else list(X)
        trains = train if isinstance(train, (list, tuple)) else [train] * len(trajs)
        if len(trains) != len(trajs):
            raise ValueError(f"train must be one PairDataset or one per trajectory ({len(trajs)}), got {len(trains)}")
        for i, tr in enumerate(trains):
            if tr is not None and not isinstance(tr, PairDataset):
                raise TypeError(f"train must be a PairDataset (or one per trajectory), got {describe(tr)} for "
                                f"trajectory {i}")
        runs = [_run_from_trajectory(t, target, tr, f"trajectory {i}" if len(trajs) > 1 else "the trajectory")
                for i, (t, tr) in enumerate(zip(trajs, trains))]
    else:
        if G is None:
            raise ValueError(f"G must be given with X as an array (the observed forces, shape of X); {_gradient_help()}")
        if not isinstance(train, PairDataset):
            raise TypeError(f"train must be a PairDataset (the training pairs and labels), got {describe(train)}")
        X = check_array(X, "X", dtype="float", ndim=3)
        G = check_array(G, "G", dtype="float", ndim=3)
        if G.shape != X.shape:
            raise ValueError(f"G must have the shape of X {X.shape}, got {G.shape}")
        steps = np.arange(X.shape[0]) if steps is None else check_array(steps, "steps", dtype="int", low=0,
                                                                          shape=(X.shape[0],))
        runs = [ForceRun(X, G, train, np.asarray(steps, dtype=np.int64))]
    for i, run in enumerate(runs):
        label = f"run {i}: " if len(runs) > 1 else ""
        if run.X.shape[0] < 1:
            raise ValueError(f"{label}X must hold at least one snapshot")
        if run.X.shape[1] != run.train.p:
            raise ValueError(f"{label}X has {run.X.shape[1]} tokens but train has p = {run.train.p}")
        if not np.all(np.isfinite(run.G)):
            raise ValueError(f"{label}G holds non-finite values")
        if not np.all(np.isfinite(run.X)):
            raise ValueError(f"{label}X holds non-finite values")
    shapes = {run.X.shape[1:] for run in runs}
    if len(shapes) > 1:
        raise ValueError(f"the runs must share p and d (tokens and dimension), got {sorted(shapes)}")
    return runs


def _check_window(window: Any, runs: list[ForceRun]) -> list[ForceRun]:
    if window is None:
        return runs
    if not isinstance(window, (tuple, list)) or len(window) != 2:
        raise TypeError(f"window must be (start, stop) steps, got {describe(window)}")
    start, stop = (check_int(v, f"window[{i}]", 0) for i, v in enumerate(window))
    if stop <= start:
        raise ValueError(f"window must have start < stop, got ({start}, {stop})")
    out = []
    for run in runs:
        keep = (run.steps >= start) & (run.steps < stop)
        if keep.any():
            out.append(ForceRun(run.X[keep], run.G[keep], run.train, run.steps[keep]))
    if not out:
        lo = min(int(r.steps[0]) for r in runs)
        hi = max(int(r.steps[-1]) for r in runs)
        raise ValueError(f"window ({start}, {stop}) holds no snapshot: the run's snapshots lie in steps [{lo}, {hi}]")
    return out


def _law_shortcut(law: Any) -> Any:
    if isinstance(law, str) and law != "effective":
        if law == "builtin":
            return ForceParams(lam=1.0)
        from particles.presets import preset, preset_names

        if law in preset_names():
            return preset(law).params
        raise ValueError(f"law must be 'builtin', 'effective', a preset name {tuple(preset_names())}, or a law object, "
                         f"got {law!r}")
    return check_force_law(law)


class _Basis:
    """Unit term forces of the runs' snapshots, cached per term on the
    values of the ranges that term depends on."""

    def __init__(self, law: Any, groups: dict[str, tuple[str, ...]], ranges: tuple[str, ...], runs: list[ForceRun]):
        self.law = law
        self.groups = groups
        self.terms = tuple(t for members in groups.values() for t in members)
        self.ranges = ranges
        self.runs = runs
        self.deps = {t: tuple(r for r in range_dependencies(law, t) if r in ranges) for t in self.terms}
        self.cache: dict[tuple, tuple[tuple, np.ndarray]] = {}
        self.evaluations = 0

    def columns(self, theta: np.ndarray, run: int, rows: np.ndarray | None = None) -> np.ndarray:
        """(T, K, N, d) unit forces of run ``run`` (its snapshots ``rows``) at ranges theta."""
        values = dict(zip(self.ranges, theta))
        tag = None if rows is None else rows.tobytes()
        missing = []
        out = {}
        for term in self.terms:
            key = tuple(values[r] for r in self.deps[term])
            hit = self.cache.get((run, tag, term))
            if hit is not None and hit[0] == key:
                out[term] = hit[1]
            else:
                missing.append(term)
        if missing:
            law = with_ranges(self.law, self.ranges, theta)
            X = self.runs[run].X if rows is None else self.runs[run].X[rows]
            fresh = unit_term_forces(law, X, self.runs[run].train, missing)
            self.evaluations += 1
            for k, term in enumerate(missing):
                key = tuple(values[r] for r in self.deps[term])
                self.cache[(run, tag, term)] = (key, fresh[:, k])
                out[term] = fresh[:, k]
        return np.stack([sum(out[t] for t in members) for members in self.groups.values()], axis=1)


def _nnls(A: np.ndarray, b: np.ndarray, nonnegative: bool) -> np.ndarray:
    """min ||A c - b|| (c >= 0 when ``nonnegative``), through a QR of A."""
    Q, R = np.linalg.qr(A)
    qb = Q.T @ b
    if not nonnegative:
        return np.linalg.lstsq(R, qb, rcond=None)[0]
    return optimize.nnls(R, qb, maxiter=50 * A.shape[1])[0]


class ForceLawFit(BaseEstimator):
    """Fit a force law's term strengths and ranges to observed embedding forces.

    Parameters
    ----------
    law : ForceParams, PairEnergy, EffectiveLoss or str
        The law whose terms are fitted; its range parameters are the search's
        starting point. Strings: ``"builtin"`` (``ForceParams(lam=1)``),
        ``"effective"`` (the effective loss of the training set) or a preset
        name (``particles.preset_names()``).
    terms : sequence of str, optional
        The terms fitted (default all of the law's, see
        :func:`particles.law_terms.term_names`).
    ranges : sequence of str, optional
        The range parameters searched (default: those the fitted terms of a
        built-in law depend on; ``eps`` for a custom law's cosine terms, whose
        other parameters are searched only when named, e.g.
        ``("distance.width",)``; ``()`` keeps the law's values).
    bounds : dict of str to (low, high), optional
        Search bounds per range (default the start value / 10 to x 10);
        bounds of ranges the fitted terms do not use are ignored.
    target : {"gradient", "update"}
        With a Trajectory: fit minus the loss gradient (default; what the law
        models) or the optimiser's update.
    normalize : {None, "rms"}
        "rms" divides each run's G by its root-mean-square force before the
        fit, so strengths are comparable between runs and loss scales; the
        strengths are then per unit RMS force (``scales_`` keeps the factors).
    nonnegative : bool
        Strengths >= 0 (NNLS, default) or unconstrained least squares.
    n_bootstrap : int >= 0
        Bootstrap replicates for ``intervals_`` (0: none).
    bootstrap : {"auto", "snapshots", "runs"}
        What is resampled: "auto" is runs when several are given, else snapshots.
    search_snapshots : int >= 2
        Snapshots (spread evenly over the data) the range search uses.
    max_evaluations : int >= 1
        Limit of the polish's function evaluations.
    windows : int >= 1
        Windows of training steps for ``windows_`` (equal spans of steps).
    tie_alignment : bool
        Built-in law: fit one strength ``alignment`` (lam) for both
        alignment halves, so that :meth:`to_law` is a ForceParams.
    seed : int
        Seeds the bootstrap.

    Attributes
    ----------
    terms_ : tuple of str
    coef_ : ndarray (K,)
        Fitted strengths.
    ranges_ : dict of str to float
        Fitted range parameters.
    intervals_ : dict of str to (float, float)
        95 % bootstrap intervals of every strength and range.
    r2_ : float
        R^2 of the force field on the data fitted (see :meth:`score`).
    rms_forces_ : dict of str to float
        Each fitted term's root-mean-square force over the data, c_k
        RMS(F_k) (in the units of the fit): how much the term moves the
        embedding, whatever its range does to its unit force.
    shares_ : dict of str to float
        Each term's share of the explained force, <P_k, P> / |P|^2 with
        P_k = c_k F_k and P their sum (the shares sum to 1; a term that
        opposes the others has a negative share).
    windows_ : list of dict
        ``start``, ``stop``, ``snapshots``, ``r2`` and ``shares`` per window
        of training steps.
    scales_ : list of float
        The factor each run's G was divided by (1 without normalisation).
    fit_info_ : dict
        The search's status, evaluations, snapshots used and bounds.
    """

    def __init__(self, law: Any = "builtin", *, terms: Sequence[str] | None = None,
                 ranges: Sequence[str] | None = None, bounds: dict | None = None, target: str = "gradient",
                 normalize: str | None = None, nonnegative: bool = True, n_bootstrap: int = 200,
                 bootstrap: str = "auto", search_snapshots: int = 20, max_evaluations: int = 200, windows: int = 5,
                 tie_alignment: bool = False, seed: int = 0) -> None:
        self.law = law
        self.terms = terms
        self.ranges = ranges
        self.bounds = bounds
        self.target = target
        self.normalize = normalize
        self.nonnegative = nonnegative
        self.n_bootstrap = n_bootstrap
        self.bootstrap = bootstrap
        self.search_snapshots = search_snapshots
        self.max_evaluations = max_evaluations
        self.windows = windows
        self.tie_alignment = tie_alignment
        self.seed = seed

    # ------------------------------------------------------------ checks
    def check_params(self) -> tuple[Any, tuple[str, ...], tuple[str, ...], np.ndarray, np.ndarray]:
        """Every setting checked, before any data are read: the law, the
        fitted terms, the searched ranges and their bounds (low, high)."""
        law = _law_shortcut(self.law)
        if not isinstance(self.tie_alignment, bool):
            raise TypeError(f"tie_alignment must be a bool, got {describe(self.tie_alignment)}")
        tied = self.tie_alignment and isinstance(law, ForceParams)
        names = term_names(law)
        if tied:
            names = ("attraction", "repulsion", "alignment", "decay")
        if self.tie_alignment and not isinstance(law, ForceParams):
            raise ValueError("tie_alignment=True ties the built-in law's two alignment halves; the law is not a "
                             "ForceParams")
        terms = names if self.terms is None else check_term_names(self.terms, names)
        self._groups = {t: (("alignment_same", "alignment_other") if t == "alignment" else (t,)) for t in terms}
        terms = tuple(t for members in self._groups.values() for t in members)
        default = range_names(law, terms)
        allowed = range_fields(law, terms) if isinstance(law, PairEnergy) else default
        if self.ranges is not None and (isinstance(self.ranges, str) or not isinstance(self.ranges, (tuple, list))):
            raise TypeError(f"ranges must be a list or tuple of range names, got {describe(self.ranges)}")
        ranges = default if self.ranges is None else tuple(self.ranges)
        bad = [r for r in ranges if r not in allowed]
        if bad:
            raise ValueError(f"ranges must be among the range parameters of the fitted terms {allowed}, got {bad}")
        start = range_values(law, ranges)
        if np.any(start <= 0):
            raise ValueError(f"ranges must start > 0: the law has {dict(zip(ranges, start))}")
        low, high = start / 10.0, start * 10.0
        bounds = {} if self.bounds is None else self.bounds
        if not isinstance(bounds, dict):
            raise TypeError(f"bounds must be a dict of range name to (low, high), got {describe(bounds)}")
        every = range_fields(law) if isinstance(law, PairEnergy) else range_names(law)
        for name, pair in bounds.items():
            if name not in every:
                raise ValueError(f"bounds names {name!r}, which is not a range parameter of the law {every}")
            if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not all(
                    isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in pair):
                raise TypeError(f"bounds[{name!r}] must be (low, high), two numbers, got {describe(pair)}")
            lo, hi = (float(v) for v in pair)
            if not (0 < lo < hi) or not math.isfinite(hi):
                raise ValueError(f"bounds[{name!r}] must satisfy 0 < low < high < inf (ranges are > 0), got {pair}")
            if name not in ranges:  # a range of the law that this fit does not search
                continue
            i = ranges.index(name)
            low[i], high[i] = lo, hi
        check_choice(self.target, "target", TARGETS)
        if self.normalize not in NORMALIZE:
            raise ValueError(f"normalize must be one of {NORMALIZE}, got {self.normalize!r}")
        check_int(self.n_bootstrap, "n_bootstrap", 0, MAX_BOOTSTRAP)
        check_choice(self.bootstrap, "bootstrap", ("auto", "snapshots", "runs"))
        check_int(self.search_snapshots, "search_snapshots", 2)
        check_int(self.max_evaluations, "max_evaluations", 1)
        check_int(self.windows, "windows", 1, MAX_WINDOWS)
        check_int(self.seed, "seed", 0)
        if not isinstance(self.nonnegative, bool):
            raise TypeError(f"nonnegative must be a bool, got {describe(self.nonnegative)}")
        return law, terms, ranges, low, high

    # ------------------------------------------------------------- fit
    def fit(self, X: Any, G: Any = None, *, train: Any = None, steps: Any = None,
            window: tuple[int, int] | None = None) -> "ForceLawFit":
        """Fit the law to observed forces.

        Parameters
        ----------
        X : Trajectory, list of Trajectory, or ndarray (T, N, d)
            Snapshots. A Trajectory brings its forces (``gradients`` or
            ``updates``, see ``target``) and, for runs of
            :func:`fitting.training.train`, its training set; several
            trajectories are several runs (bootstrapped by run).
        G : ndarray (T, N, d), optional
            The observed forces at the snapshots, with X as an array.
        train : PairDataset or list of them, optional
            The training pairs and labels (needed with arrays and with runs
            not written by the package's trainer).
        steps : ndarray (T,) of int, optional
            Training step of each snapshot (arrays; default 0..T-1).
        window : (start, stop), optional
            Fit only the snapshots with start <= step < stop.

        Returns
        -------
        self
        """
        law, terms, ranges, low, high = self.check_params()
        runs = _check_window(window, as_force_runs(X, G, train=train, steps=steps, target=self.target))
        if law != "effective" and not isinstance(law, str) and type(law).__name__ == "EffectiveLoss":
            if any(r.train.p != law.p for r in runs):
                raise ValueError(f"law is an effective loss on p = {law.p} tokens, which the runs do not have")
        scales = []
        for run in runs:
            scale = float(np.sqrt(np.mean(run.G ** 2))) if self.normalize == "rms" else 1.0
            if scale == 0.0:
                raise ValueError("G is zero everywhere: there is no force to explain")
            scales.append(scale)
        runs = [ForceRun(r.X, r.G / s, r.train, r.steps) for r, s in zip(runs, scales)]
        groups = self._groups
        basis = _Basis(law, groups, ranges, runs)
        theta, info = self._search(basis, runs, ranges, np.log(range_values(law, ranges)), np.log(low),
                                   np.log(high))
        A, b, units = self._design(basis, runs, theta)
        coef = _nnls(A, b, self.nonnegative)
        J = self._jacobian(basis, runs, theta, coef, A)
        if J is not None:  # one Gauss-Newton step on every snapshot (the search used a subset)
            step = _bounded_solve(*_normal(np.column_stack([A, J]), b - A @ coef), _lower(coef, len(ranges),
                                                                                           self.nonnegative))
            moved = np.clip(theta * np.exp(step[len(coef):]), np.exp(np.log(low)), np.exp(np.log(high)))
            A1, _, _ = self._design(basis, runs, moved)
            coef1 = _nnls(A1, b, self.nonnegative)
            r0, r1 = b - A @ coef, b - A1 @ coef1
            if r1 @ r1 < r0 @ r0:
                # the intervals linearise at the final fit: a new Jacobian when the ranges moved by more
                # than REUSE_JACOBIAN (relative), else the unit-force differences already taken, with
                # the new strengths (the ranges' own move changes them at second order only)
                shift = float(np.max(np.abs(np.log(moved / theta))))
                theta, A, coef = moved, A1, coef1
                J = (self._jacobian(basis, runs, theta, coef, A) if shift > REUSE_JACOBIAN
                     else np.einsum("rkj,k->rj", self._diffs, coef))
                info_step = True
            else:
                info_step = False
        self.terms_ = tuple(groups)
        self.groups_ = groups
        self.coef_ = coef
        self.range_names_ = ranges
        self.ranges_ = dict(zip(ranges, (float(v) for v in theta)))
        self.scales_ = scales
        self.law_ = law
        self.train_ = runs[0].train
        self.n_runs_ = len(runs)
        self._store_scores(A, b, coef, runs)
        self.intervals_, self.bootstrap_ = self._intervals(theta, coef, A, b, units, J, np.log(low), np.log(high))
        info.update({"full_data_step": info_step if J is not None else None, "snapshots": int(sum(len(r.X) for r in runs)), "runs": len(runs), "bounds":
                     {n: [float(lo), float(hi)] for n, lo, hi in zip(ranges, low, high)},
                     "term_evaluations": basis.evaluations, "normalize": self.normalize, "target": self.target})
        self.fit_info_ = info
        self._warn(info, ranges, theta, low, high)
        self._warn_unidentified(A, b, coef)
        return self

    def _search_rows(self, runs: list[ForceRun], count: int | None = None) -> list[np.ndarray]:
        total = sum(len(r.X) for r in runs)
        count = self.search_snapshots if count is None else min(count, self.search_snapshots)
        pick = np.unique(np.linspace(0, total - 1, min(count, total)).round().astype(np.int64))
        rows, offset = [], 0
        for run in runs:
            mine = pick[(pick >= offset) & (pick < offset + len(run.X))] - offset
            rows.append(mine)
            offset += len(run.X)
        return rows

    def _residual(self, basis: _Basis, runs: list[ForceRun], rows: list[np.ndarray], theta: np.ndarray
                  ) -> np.ndarray:
        A, b = [], []
        for i, (run, r) in enumerate(zip(runs, rows)):
            if r.size == 0:
                continue
            cols = basis.columns(theta, i, r)
            A.append(np.moveaxis(cols, 1, -1).reshape(-1, len(basis.groups)))
            b.append(run.G[r].ravel())
        A = np.concatenate(A)
        b = np.concatenate(b)
        if not np.all(np.isfinite(A)):  # a range where a term overflows: a residual the search backs away from
            return np.full_like(b, 1e10 * (1.0 + float(np.sqrt(np.mean(b ** 2)))))
        return A @ _nnls(A, b, self.nonnegative) - b

    def _search(self, basis: _Basis, runs, ranges, log0, log_lo, log_hi) -> tuple[np.ndarray, dict]:
        if not ranges:
            return np.zeros(0), {"search": "none (no ranges searched)"}
        rows = self._search_rows(runs)
        log_theta = np.clip(log0, log_lo, log_hi)

        def sse(lt):
            r = self._residual(basis, runs, rows, np.exp(lt))
            return float(r @ r)

        # coarse: the start and a scrambled Sobol sample of the log box, on a few snapshots
        coarse_rows = self._search_rows(runs, COARSE_SNAPSHOTS)
        sample = stats.qmc.Sobol(len(ranges), scramble=True, seed=self.seed).random(SOBOL_POINTS)
        candidates = np.vstack([log_theta, log_lo + sample * (log_hi - log_lo)])
        values = []
        for lt in candidates:
            r = self._residual(basis, runs, coarse_rows, np.exp(lt))
            values.append(float(r @ r))
        # polish the best few briefly on the search snapshots, then the best of those to convergence
        fun = lambda lt: self._residual(basis, runs, rows, np.exp(lt))  # noqa: E731
        options = dict(bounds=(log_lo, log_hi), method="trf", x_scale=1.0, diff_step=LOG_STEP, xtol=1e-12,
                       ftol=1e-12, gtol=1e-12)
        result = None
        evaluations = 0
        order = [0] + [int(i) for i in np.argsort(values) if i != 0][:POLISH_STARTS - 1]  # the start always
        for i in order:
            trial = optimize.least_squares(fun, candidates[i], max_nfev=SCREEN_EVALUATIONS, **options)
            evaluations += int(trial.nfev)
            if result is None or trial.cost < result.cost:
                result = trial
        if result.status == 0:  # not converged within the screening budget: go on
            result = optimize.least_squares(fun, result.x, max_nfev=self.max_evaluations, **options)
            evaluations += int(result.nfev)
        theta = np.exp(result.x)
        return theta, {"search": "grid + least_squares", "status": int(result.status),
                       "message": str(result.message), "evaluations": evaluations,
                       "coarse_points": len(candidates),
                       "search_snapshots": int(sum(r.size for r in rows)),
                       "converged": bool(result.status > 0)}

    def _design(self, basis: _Basis, runs: list[ForceRun], theta: np.ndarray):
        """Design matrix and target over every snapshot, and each row's bootstrap unit."""
        A, b, units = [], [], []
        per_run = self.bootstrap == "runs" or (self.bootstrap == "auto" and len(runs) > 1)
        offset = 0
        for i, run in enumerate(runs):
            cols = basis.columns(theta, i)
            T = cols.shape[0]
            A.append(np.moveaxis(cols, 1, -1).reshape(-1, len(basis.groups)))
            b.append(run.G.ravel())
            size = run.X.shape[1] * run.X.shape[2]
            unit = np.full(T, i) if per_run else offset + np.arange(T)
            units.append(np.repeat(unit, size))
            offset += T
        return np.concatenate(A), np.concatenate(b), np.concatenate(units)

    # ---------------------------------------------------------- scores
    def _store_scores(self, A, b, coef, runs) -> None:
        K = len(coef)
        self.r2_ = _r2(b, A @ coef, runs[0].X.shape[2])
        # each fitted term's RMS force on the data: a strength's size that does not hinge on its range
        # (a term whose range makes it tiny can carry a huge strength and still move nothing)
        self.rms_forces_ = dict(zip(self.terms_, (float(v) for v in np.sqrt(np.mean((A * coef) ** 2, axis=0)))))
        self.shares_ = dict(zip(self.terms_, _shares(A, coef)))
        steps = np.concatenate([r.steps for r in runs])
        size = runs[0].X.shape[1] * runs[0].X.shape[2]
        edges = np.unique(np.ceil(np.linspace(steps.min(), steps.max() + 1, self.windows + 1)).astype(np.int64))
        row_steps = np.repeat(steps, size)
        out = []
        for lo, hi in zip(edges[:-1], edges[1:]):
            keep = (row_steps >= lo) & (row_steps < hi)
            n = int(keep.sum() // size)
            if n == 0:
                out.append({"start": int(lo), "stop": int(hi), "snapshots": 0, "r2": None, "shares": None})
                continue
            Aw, bw = A[keep], b[keep]
            out.append({"start": int(lo), "stop": int(hi), "snapshots": n,
                        "r2": _r2(bw, Aw @ coef, runs[0].X.shape[2]),
                        "shares": dict(zip(self.terms_, _shares(Aw, coef)))})
        self.windows_ = out
        self.n_terms_ = K

    def _jacobian(self, basis, runs, theta, coef, A) -> np.ndarray | None:
        """d(model)/d(log range) at the fit, by forward differences of
        relative step LOG_STEP (None without ranges)."""
        if theta.size == 0:
            return None
        diffs = []  # A: the design at theta (unit forces, rows x terms)
        for j in range(theta.size):
            up = theta.copy()
            up[j] *= math.exp(LOG_STEP)
            Au, _, _ = self._design(basis, runs, up)
            diffs.append((Au - A) / LOG_STEP)
        self._diffs = np.stack(diffs, axis=-1)  # (rows, terms, ranges): d(unit forces)/d(log range)
        return np.einsum("rkj,k->rj", self._diffs, coef)

    def _intervals(self, theta, coef, A, b, units, J, log_lo, log_hi):
        K = len(coef)
        names = list(self.terms_) + list(self.range_names_)
        if self.n_bootstrap == 0:
            return {}, np.zeros((0, len(names)))
        # the model linearised at the fit: columns of the strengths and d(model)/d(log range); a range
        # whose terms all have strength 0 moves nothing (a zero column) and gets no interval
        live = np.zeros(0, dtype=bool) if J is None else np.linalg.norm(J, axis=0) > 0
        Z = A if J is None else np.column_stack([A, J[:, live]])
        n_J = int(live.sum())
        n_units = int(units.max()) + 1
        gram = np.zeros((n_units, Z.shape[1], Z.shape[1]))
        rhs = np.zeros((n_units, Z.shape[1]))
        resid = b - A @ coef
        order = np.argsort(units, kind="stable")
        bounds_ = np.searchsorted(units[order], np.arange(n_units + 1))
        for u in range(n_units):
            idx = order[bounds_[u]:bounds_[u + 1]]
            Zu = Z[idx]
            gram[u] = Zu.T @ Zu
            rhs[u] = Zu.T @ resid[idx]
        lower = _lower(coef, n_J, self.nonnegative)
        rng = np.random.default_rng(self.seed)
        P = K + n_J
        # the bootstrap's spread scaled by sqrt(n / (n - P)), n units and P
        # parameters: the small-sample correction of a sandwich variance
        # (HC1), which the plain bootstrap of n units lacks
        if n_units > P + 1:
            inflate = math.sqrt(n_units / (n_units - P))
        else:
            inflate = 1.0
            warn_quality(f"the intervals rest on {n_units} bootstrap units for {P} parameters, too few to "
                         "trust them; give more snapshots or runs")
        # replicates are centred on the estimate: their step is taken from the full-data step
        centre = _bounded_solve(gram.sum(axis=0), rhs.sum(axis=0), lower)
        steps = np.empty((self.n_bootstrap, P))
        for k in range(self.n_bootstrap):
            w = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units)).astype(float)
            steps[k] = inflate * (_bounded_solve(np.tensordot(w, gram, axes=1), w @ rhs, lower) - centre)
        draws = np.full((self.n_bootstrap, len(names)), np.nan)
        draws[:, :K] = np.maximum(coef + steps[:, :K], 0.0) if self.nonnegative else coef + steps[:, :K]
        if n_J:
            log_theta = np.log(theta[live]) + steps[:, K:]
            draws[:, K + np.flatnonzero(live)] = np.exp(np.clip(log_theta, log_lo[live], log_hi[live]))
        out = {}
        for j, name in enumerate(names):
            if np.all(np.isnan(draws[:, j])):
                out[name] = (None, None)
            else:
                lo, hi = np.percentile(draws[:, j], [2.5, 97.5])
                out[name] = (float(lo), float(hi))
        return out, draws

    def _warn(self, info, ranges, theta, low, high) -> None:
        if ranges and not info.get("converged", True):
            warn_quality(f"the range search stopped at its limit of {self.max_evaluations} evaluations before "
                         f"converging ({info['message']}); raise max_evaluations")
        for name, v, lo, hi in zip(ranges, theta, low, high):
            if v <= lo * (1 + 1e-3) or v >= hi * (1 - 1e-3):
                side = "lower" if v <= lo * (1 + 1e-3) else "upper"
                warn_quality(f"the fitted {name} = {v:.4g} lies at its {side} bound, so the best value may lie "
                             f"outside [{lo:.4g}, {hi:.4g}]; widen bounds={{{name!r}: (low, high)}}")

    def _warn_unidentified(self, A, b, coef) -> None:
        """A term whose unit force is a vanishing fraction of the data's
        force (below UNIDENTIFIED of its RMS) gets whatever strength makes
        up a remainder: a value like 1e+253 then stands for no measurement.
        Its RMS force (strength times unit force) is what the data fix."""
        target = float(np.sqrt(np.mean(b ** 2)))
        unit = np.sqrt(np.mean(A ** 2, axis=0))
        for name, c, u in zip(self.terms_, coef, unit):
            if c != 0.0 and u < UNIDENTIFIED * target:
                warn_quality(f"the strength {name} = {c:.3g} is not measured: the term's unit force at the fitted "
                             f"ranges is {u / target:.2g} of the force's RMS, so the strength only makes up a "
                             f"remainder; read its RMS force, rms_forces_[{name!r}] = "
                             f"{self.rms_forces_[name]:.3g}, or bound its range")

    # ------------------------------------------------------- using it
    def _columns(self, X: np.ndarray, train: PairDataset | None) -> tuple[np.ndarray, PairDataset]:
        check_is_fitted(self, "coef_")
        train = self.train_ if train is None else train
        if not isinstance(train, PairDataset):
            raise TypeError(f"train must be a PairDataset, got {describe(train)}")
        law = with_ranges(self.law_, self.range_names_, [self.ranges_[n] for n in self.range_names_])
        members = [t for group in self.groups_.values() for t in group]
        unit = unit_term_forces(law, X, train, members)
        cols, k = [], 0
        for group in self.groups_.values():
            cols.append(unit[:, k:k + len(group)].sum(axis=1))
            k += len(group)
        return np.stack(cols, axis=1), train

    def predict(self, X: Any, *, train: PairDataset | None = None) -> np.ndarray:
        """The fitted law's force on each snapshot of X (T, N, d), in the
        units of the fitted G (with ``normalize="rms"``: the strengths times
        the first run's scale, ``scales_[0]``); ``train`` defaults to the
        (first) run's training set."""
        cols, _ = self._columns(X, train)
        return self.scales_[0] * np.tensordot(self.coef_, np.moveaxis(cols, 1, 0), axes=1)

    def score(self, X: Any, G: Any = None, *, train: Any = None, steps: Any = None) -> float:
        """R^2 of the force field, 1 - SSE / sum |G - mean G|^2 (the mean
        force vector over snapshots and tokens), of :meth:`predict` against
        G as given. Takes what :meth:`fit` takes. With ``normalize="rms"``
        the prediction is in the first fitted run's units, so score runs on
        that scale (held-out snapshots of the same run)."""
        check_is_fitted(self, "coef_")
        single = not isinstance(X, (Trajectory, list, tuple))
        runs = as_force_runs(X, G, train=self.train_ if (train is None and single) else train, steps=steps,
                             target=self.target)
        obs = np.concatenate([run.G.ravel() for run in runs])
        pred = np.concatenate([self.predict(run.X, train=run.train).ravel() for run in runs])
        return _r2(obs, pred, runs[0].X.shape[2])

    def to_law(self) -> Any:
        """The law with the fitted ranges and strengths (a ForceParams when
        it can hold them, see :func:`particles.law_terms.with_strengths`).
        With ``normalize="rms"`` its strengths are per unit RMS force: the
        same flow as the data's, on another time scale."""
        check_is_fitted(self, "coef_")
        if not isinstance(self.law_, (ForceParams, PairEnergy)):
            raise ValueError("the effective loss has no law object with strengths: its fitted strengths are coef_ "
                             "(run it with particles.simulate_effective)")
        law = with_ranges(self.law_, self.range_names_, [self.ranges_[n] for n in self.range_names_])
        strengths = {t: float(c) for group, c in zip(self.groups_.values(), self.coef_) for t in group}
        # terms left out of the fit have strength 0
        strengths.update({t: 0.0 for t in term_names(self.law_) if t not in strengths})
        return with_strengths(law, strengths)

    def simulate(self, x0: Any, steps: int, *, dt: float = 0.01, train: PairDataset | None = None,
                 **options: Any) -> Trajectory:
        """Run the particle engine with the fitted law from the state x0
        (p, d) for ``steps`` Euler steps of ``dt`` (see
        :func:`particles.simulate`; other options pass through)."""
        from particles.simulate import simulate

        check_is_fitted(self, "coef_")
        if not isinstance(self.law_, (ForceParams, PairEnergy)):
            raise ValueError("simulate needs a pair law; the effective loss runs with particles.simulate_effective")
        law = self.to_law()
        return simulate(x0, self.train_ if train is None else train, law, steps=steps, dt=dt, **options)

    def table(self) -> list[dict[str, Any]]:
        """One row per fitted parameter: name, kind, value and 95 % interval."""
        check_is_fitted(self, "coef_")
        rows = []
        for name, c in zip(self.terms_, self.coef_):
            rows.append({"name": name, "kind": "strength", "value": float(c),
                         "interval": list(self.intervals_.get(name, (None, None))),
                         "share": self.shares_[name], "rms_force": self.rms_forces_[name]})
        for name in self.range_names_:
            rows.append({"name": name, "kind": "range", "value": self.ranges_[name],
                         "interval": list(self.intervals_.get(name, (None, None))), "share": None,
                         "rms_force": None})
        return rows


def _r2(obs: np.ndarray, pred: np.ndarray, d: int) -> float:
    """1 - SSE / sum |obs - mean force vector|^2 (rows flattened as (..., d))."""
    o = obs.reshape(-1, d)
    sst = float(np.sum((o - o.mean(axis=0)) ** 2))
    sse = float(np.sum((obs - pred) ** 2))
    return 1.0 - sse / sst if sst > 0 else float("nan")


def _shares(A: np.ndarray, coef: np.ndarray) -> list[float]:
    parts = A * coef
    total = parts.sum(axis=1)
    norm = float(total @ total)
    if norm == 0.0:
        return [0.0] * len(coef)
    return [float(parts[:, k] @ total / norm) for k in range(len(coef))]


def _normal(Z: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return Z.T @ Z, Z.T @ r


def _lower(coef: np.ndarray, n_ranges: int, nonnegative: bool) -> np.ndarray:
    """Lower bounds of a step (strengths, log-ranges) that keeps the strengths >= 0."""
    return np.concatenate([-coef if nonnegative else np.full(coef.size, -np.inf), np.full(n_ranges, -np.inf)])


def _bounded_solve(M: np.ndarray, v: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """argmin z' M z / 2 - v' z subject to z >= lower (M positive
    semi-definite; directions M does not see are left at 0)."""
    vals, vecs = np.linalg.eigh(M)
    keep = vals > max(float(vals.max()), 0.0) * 1e-12
    if not keep.any():
        return np.maximum(np.zeros_like(v), lower)
    z = vecs[:, keep] @ ((vecs[:, keep].T @ v) / vals[keep])
    if np.all(z >= lower):
        return z
    # a least-squares form of the same problem: |R z - q|^2 with R'R = M and R'q = v (on M's range)
    root = np.sqrt(vals[keep])
    R = root[:, None] * vecs[:, keep].T
    q = (vecs[:, keep].T @ v) / root
    # bvls: an exact active-set method for these few unknowns (the default trust-region method could
    # backtrack for minutes on an ill-conditioned replicate)
    return optimize.lsq_linear(R, q, bounds=(lower, np.full_like(lower, np.inf)), method="bvls",
                               max_iter=50 * len(lower)).x
