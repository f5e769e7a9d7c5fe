"""The force-law fit as an estimator (:class:`ForceLawFit`): settings
checked, then the range search, the strengths on every snapshot, one
full-data step, scores, intervals and the warnings of a fit that may be
wrong. See the package docstring and docs/force_fit.md."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from particles.core.validation import check_choice, check_int, describe
from particles.datasets import PairDataset
from particles.pair_path import check_path
from particles.law_terms import (answering, check_term_names, range_fields, range_names, range_values, term_names,
                                 unit_term_forces, with_ranges, with_strengths)
from particles.trajectory import Trajectory

from ..ode.quality import warn_quality
from .basis import Basis, resolve_law
from .data import TARGETS, ForceRun, as_force_runs, check_horizon, check_window, run_span
from .intervals import bootstrap_intervals
from .gauge import check_gauge, project
from .null import MAX_NULL, null_designs
from .progress import FitProgress, compile_kernels, expected_evaluations
from .windows import check_windows, resolve_windows, window_edges, window_fits, window_names
from .search import design, range_differences, range_jacobian, search_ranges
from .solve import bounded_solve, column_rms, lower_bounds, nnls, normal_equations, r2, shares, side_by_side
from .verdict import against_null, range_identification, shares_sentence, verdict, verdict_sentence

__all__ = ["ForceLawFit", "NORMALIZE", "DEFAULT_NULL", "REUSE_JACOBIAN", "UNIDENTIFIED", "CLIP_COST", "MAX_BOOTSTRAP",
           "MAX_WINDOWS", "target_scales"]

#: how G is scaled before the fit: None (as given) or "rms" (each run divided by its RMS force)
NORMALIZE = (None, "rms")
#: relabellings of the tokens in the null, by default (of ForceLawFit and of embdyn force-fit alike)
DEFAULT_NULL = 10
#: largest relative move of the ranges in the full-data step for which the Jacobian's unit-force
#: differences are reused
REUSE_JACOBIAN = 0.01
#: a term whose unit force (RMS over the data) is below this fraction of the observed force's RMS
#: has a strength the data do not measure (it makes up a remainder at whatever size): a warning
UNIDENTIFIED = 1e-6
#: a strength clipped at 0 warns when the sign constraint costs more than this share of the target's
#: squared norm (below it the unconstrained value is rounding about 0)
CLIP_COST = 1e-6
#: ... and the term's unconstrained force (RMS) is above this share of the target's RMS
CLIP_FORCE = 1e-3
#: most bootstrap replicates and windows of training steps (each keeps an array)
MAX_BOOTSTRAP = 100_000
MAX_WINDOWS = 10_000


def target_scales(runs: list[ForceRun], normalize: str | None) -> tuple[list[float], list[float], float]:
    """How each run's G is scaled: ``scales_`` (1, or the run's RMS force
    with ``normalize="rms"``), the divisor the fit works with, and the unit
    of the reported strengths in the fit's.

    The fit always works on targets of unit RMS: each run's G divided by
    its own RMS with "rms", all runs' G by their common RMS without. Its
    range search (whose gradient tolerance is absolute), the full-data
    step's rank cut (strengths' and ranges' columns side by side, the
    latter scaling with the strengths) and every threshold then see the
    same numbers whatever the units of G: for one run both settings give
    the same targets to the bit, and rescaling every run's G by one factor
    changes the targets by rounding only. The strengths are then reported
    per unit RMS force ("rms", unit 1) or in the units of G (None, unit the
    common RMS). A G that is zero everywhere (in a run, with "rms") has no
    force to explain: a ValueError."""

    def rms(arrays):
        return math.sqrt(sum(float(np.sum(G * G)) for G in arrays) / sum(G.size for G in arrays))

    if normalize == "rms":
        scales = [rms([r.G]) for r in runs]
        for i, s in enumerate(scales):
            if s == 0.0:
                label = f"run {i}: " if len(runs) > 1 else ""
                raise ValueError(f"{label}G is zero everywhere: there is no force to explain")
        return scales, scales, 1.0
    common = rms([r.G for r in runs])
    if common == 0.0:
        raise ValueError("G is zero everywhere: there is no force to explain")
    return [1.0] * len(runs), [common] * len(runs), common


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
    target : {"gradient", "update", "displacement"}
        With a Trajectory: fit minus the loss gradient (default; what the law
        models), the optimiser's update, or the displacement of the embedding
        per step over ``horizon`` steps, (X(s + horizon) - X(s)) / horizon,
        at every snapshot s that has a snapshot ``horizon`` steps later (the
        time scale of the motion itself: it needs no recorded gradients,
        and with arrays it is taken from X and ``steps``, G not given).
    horizon : int >= 1, optional
        The displacement's time scale in steps (target="displacement" only);
        None (default): each snapshot to the next one.
    normalize : {None, "rms"}
        The units of the strengths. None (default): those of G. "rms": each
        run's G divided by its root-mean-square force, so strengths are per
        unit RMS force and compare between runs and loss scales
        (``scales_`` keeps the factors). For one run, and for several runs
        whose G are all rescaled by one factor, R^2, the ranges, the null,
        the verdict and the shares do not depend on the units: only the
        strengths (and their intervals and RMS forces) rescale. With
        several runs of different RMS forces "rms" also weighs the runs
        equally where None weighs them by the size of their forces, so the
        fit itself may differ. (The fit always works on targets of unit RMS,
        so that its search tolerances are relative; see docs/force_fit.md.)
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
    windows : int >= 1, list of int, "stages", or a partition
        Windows of training steps for ``windows_``: that many equal spans of
        the run's steps, a strictly increasing list of step edges such as
        ``[0, 100, 1000, 3000]``, ``"stages"`` (the run's stages,
        :func:`fitting.stages`: cut at the ends of memorisation, circuit
        formation and cleanup, each window named after its stage; needs a
        Trajectory, and a run whose stages cannot be placed is refused with
        their reasons), or an object with ``edges`` (such a list)
        and optionally ``window_names`` (one name per window). Edges must
        lie within the run's steps (its first step with a force to its last
        recorded step + 1) and each window must hold a snapshot: otherwise
        :meth:`fit` refuses them, naming the run's steps. Each window gets
        strengths of its own (the ranges held at the whole run's) and its
        own verdict against the null.
    tie_alignment : bool
        Built-in law: fit one strength ``alignment`` (lam) for both
        alignment halves, so that :meth:`to_law` is a ForceParams.
    seed : int
        Seeds the bootstrap.
    gauge : {"auto", None, "translation", "similarity"}
        Motions of the whole embedding projected off the target and every
        term before fitting and scoring (:mod:`fitting.forcefit.gauge`):
        the common drift ("translation"), and the overall scale too
        ("similarity"). Only a gauge every fitted term admits (its force can
        never produce those motions) is accepted; "auto" (default) takes the
        largest: "similarity" for the effective loss, "translation" for
        distance terms alone, None when alignment or decay is fitted.
    null : int >= 0
        Relabellings of the tokens for the null (:mod:`fitting.forcefit.null`):
        the law refitted where the tokens' places no longer match the task;
        its R^2 is reported beside every R^2 and gives the verdict
        (:mod:`fitting.forcefit.verdict`). Default 10 (:data:`DEFAULT_NULL`,
        as ``embdyn force-fit``); 0: no null and no verdict.
    path : {"auto", "direct", "gram"}
        The pair kernels' path for the term forces (:mod:`particles.pair_path`):
        the Gram path, whose cost does not grow with d, from d = 6 on by
        default; both give the same forces to rounding.

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
        R^2 of the force field on the data fitted, with one strength per term
        for the whole run (see :meth:`score`).
    null_r2_, null_r2_interval_ : float and (float, float), or None
        The mean and 2.5-97.5 percentiles of the null's R^2 (``null`` > 0).
    verdict_ : str or None
        "above chance", "at chance" or "below chance": ``r2_`` against the
        null's interval with a margin (:func:`fitting.forcefit.verdict.verdict`);
        None without a null. :meth:`verdict_sentence` says it in a sentence.
    range_status_ : dict of str to str
        Per fitted range, "identified", or why it is not: "at its lower
        bound 0.3", "at its upper bound 30" (the best value may lie outside
        the box), "its terms have strength 0". ``ranges_`` keeps the values
        the law uses either way; :meth:`table`, :meth:`summary` and the
        command line report a range that is not identified as such, not as
        a value.
    coef_unconstrained_ : ndarray (K,)
        The strengths without the sign constraint (equal to ``coef_`` with
        ``nonnegative=False``); a strength clipped at 0 warns.
    gauge_ : str or None
        The gauge used.
    whole_run_ : dict
        The whole-run fit, labelled: ``label``, ``coef``, ``r2``, ``null_r2``,
        ``null_r2_interval``, ``verdict``, ``shares``.
    rms_forces_ : dict of str to float
        Each fitted term's root-mean-square force over the data, c_k
        RMS(F_k) (in the units of the fit): how much the term moves the
        embedding, whatever its range does to its unit force.
    shares_ : dict of str to float
        Each term's share of the explained force, |c_k F_k|^2 / sum_j
        |c_j F_j|^2 (:func:`fitting.forcefit.solve.shares`, the one
        definition of a share: the table, the summary, the windows and the
        JSON all use it): between 0 and 1, summing to 1; it says how much
        each term moves the embedding, not in which direction.
    windows_ : list of dict
        Per window of training steps (:mod:`fitting.forcefit.windows`):
        ``start``, ``stop``, ``name``, ``snapshots``, its own strengths
        ``coef`` (and ``coef_unconstrained``), ``r2`` (None where
        undefined), ``null_r2``, ``null_r2_interval``, ``verdict``,
        ``force_share`` (its share of the target's squared norm) and
        ``shares``.
    scales_ : list of float
        The factor each run's G was divided by (1 without normalisation).
    fit_info_ : dict
        The search's status, evaluations, snapshots used and bounds
        (``converged``; ``flat_stop``: the polish stopped because its cost
        fell by less than 1e-7 over ten iterations, a flat profile, see
        :data:`fitting.forcefit.search.FLAT_TOL`); ``term_evaluations`` (calls of the term forces) and
        ``snapshot_evaluations`` (snapshots they evaluated), the null's
        included; the kernels' ``path`` ("gram", "direct", or "direct+gram"
        when the snapshot sets took different ones: ``"auto"`` decides per
        set); ``strength_unit``: the factor from the strengths on the fit's
        targets of unit RMS to those reported (the RMS of G without
        normalisation, 1 with "rms"; see :func:`target_scales`).
    """

    def __init__(self, law: Any = "builtin", *, terms: Sequence[str] | None = None,
                 ranges: Sequence[str] | None = None, bounds: dict | None = None, target: str = "gradient",
                 horizon: int | None = None,
                 normalize: str | None = None, nonnegative: bool = True, n_bootstrap: int = 200,
                 bootstrap: str = "auto", search_snapshots: int = 20, max_evaluations: int = 200, windows: Any = 5,
                 tie_alignment: bool = False, seed: int = 0, path: str = "auto", gauge: Any = "auto",
                 null: int = DEFAULT_NULL) -> None:
        self.law = law
        self.terms = terms
        self.ranges = ranges
        self.bounds = bounds
        self.target = target
        self.horizon = horizon
        self.normalize = normalize
        self.nonnegative = nonnegative
        self.n_bootstrap = n_bootstrap
        self.bootstrap = bootstrap
        self.search_snapshots = search_snapshots
        self.max_evaluations = max_evaluations
        self.windows = windows
        self.tie_alignment = tie_alignment
        self.seed = seed
        self.path = path
        self.gauge = gauge
        self.null = null

    # ------------------------------------------------------------ checks
    def check_params(self) -> tuple[Any, tuple[str, ...], tuple[str, ...], np.ndarray, np.ndarray]:
        """Every setting checked, before any data are read: the law, the
        fitted terms, the searched ranges and their bounds (low, high)."""
        law = resolve_law(self.law)
        if not isinstance(self.tie_alignment, bool):
            raise TypeError(f"tie_alignment must be a bool, got {describe(self.tie_alignment)}")
        tied = answering(law).tied_terms if self.tie_alignment else {}
        names = term_names(law)
        if self.tie_alignment and not tied:
            raise ValueError("tie_alignment=True ties terms fitted with one strength (the built-in law's two "
                             "alignment halves); this law has none")
        for group, members in tied.items():  # each tied group in place of its first member, the rest left out
            names = tuple(group if n == members[0] else n for n in names if n not in members[1:])
        terms = names if self.terms is None else check_term_names(self.terms, names)
        self._groups = {t: tuple(tied.get(t, (t,))) for t in terms}
        terms = tuple(t for members in self._groups.values() for t in members)
        default = range_names(law, terms)
        allowed = range_fields(law, terms)
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
        every = range_fields(law)
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
        check_horizon(self.horizon, self.target)
        if check_path(self.path) == "gram" and getattr(answering(law), "unit_term_forces", None) is not None:
            raise ValueError("path='gram' runs the pair kernels, and this law computes its own forces (the effective "
                             "loss, from p x p matrices already): give path='auto' or 'direct'")
        if self.normalize not in NORMALIZE:
            raise ValueError(f"normalize must be one of {NORMALIZE}, got {self.normalize!r}")
        check_int(self.n_bootstrap, "n_bootstrap", 0, MAX_BOOTSTRAP)
        check_choice(self.bootstrap, "bootstrap", ("auto", "snapshots", "runs"))
        check_int(self.search_snapshots, "search_snapshots", 2)
        check_int(self.max_evaluations, "max_evaluations", 1)
        check_windows(self.windows)
        check_int(self.null, "null", 0, MAX_NULL)
        if self.null and not isinstance(law, str) and getattr(law, "p", None) is not None:
            raise ValueError("null relabels the tokens of each run's training pairs, and this law is built on fixed "
                             "pairs of its own (an EffectiveLoss object): give law='effective', which takes the run's "
                             "pairs, or null=0")
        self._gauge = check_gauge(self.gauge, answering(law), terms)
        check_int(self.seed, "seed", 0)
        if not isinstance(self.nonnegative, bool):
            raise TypeError(f"nonnegative must be a bool, got {describe(self.nonnegative)}")
        return law, terms, ranges, low, high

    # ------------------------------------------------------------- fit
    def fit(self, X: Any, G: Any = None, *, train: Any = None, steps: Any = None,
            window: tuple[int, int] | None = None, callback: Callable[[int, int], Any] | None = None
            ) -> "ForceLawFit":
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
            Fit only the snapshots with start <= step < stop; it must lie
            within the run's steps (first step with a force to last
            recorded step + 1) and hold a snapshot, else a ValueError naming
            ``window`` and the run's steps.
        callback : callable(done, total), optional
            Progress, in snapshots whose term forces were evaluated: first
            ``(0, total)`` before the fit compiles (or loads from Numba's
            cache) the pair kernels, the longest wait on a fresh install;
            then after each evaluation with the count so far and an
            estimate of the fit's total (raised when the search needs more;
            the last call has done == total).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Before any work, for bad settings or data, for windows or a
            window outside the run's steps, and for a G that is zero
            everywhere.
        """
        law, terms, ranges, low, high = self.check_params()
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable(done, total), got {describe(callback)}")
        runs = check_window(window, as_force_runs(X, G, train=train, steps=steps, target=self.target,
                                                  horizon=self.horizon))
        if getattr(law, "p", None) is not None and not isinstance(law, str):  # a law on a fixed set of tokens
            if any(r.train.p != law.p for r in runs):
                raise ValueError(f"law is an effective loss on p = {law.p} tokens, which the runs do not have")
        runs, scales, unit, edges, names = self._prepare(runs, X)  # windows refused before any work
        gauge = self._gauge
        groups = self._groups
        per_run = self.bootstrap == "runs" or (self.bootstrap == "auto" and len(runs) > 1)
        progress = self._start(callback, law, runs, ranges)
        basis = Basis(law, groups, ranges, runs, path=self.path, progress=progress, gauge=gauge)
        theta, info = search_ranges(basis, runs, ranges, np.log(range_values(law, ranges)), np.log(low),
                                    np.log(high), search_snapshots=self.search_snapshots,
                                    nonnegative=self.nonnegative, seed=self.seed,
                                    max_evaluations=self.max_evaluations)
        A, b, units = design(basis, runs, theta, per_run)
        coef = nnls(A, b, self.nonnegative)
        theta, A, coef, J, info_step = self._full_data_step(basis, runs, theta, A, b, coef, low, high, per_run)
        self.terms_ = tuple(groups)
        self.groups_ = groups
        self.range_names_ = ranges
        self.ranges_ = dict(zip(ranges, (float(v) for v in theta)))
        self.range_status_ = {n: why or "identified" for n, why in range_identification(
            ranges, theta, low, high, None if J is None else np.linalg.norm(J, axis=0) > 0).items()}
        self.scales_ = scales
        self.law_ = law
        self.train_ = runs[0].train
        self.n_runs_ = len(runs)
        self.gauge_ = gauge
        null_work = {"term_evaluations": 0, "snapshot_evaluations": 0}
        nulls = null_designs(law, groups, ranges, theta, runs, self.null, self.seed, path=self.path, gauge=gauge,
                             per_run=per_run, progress=progress, work=null_work) if self.null else []
        self._store_scores(A, b, coef, runs, edges, nulls, names)
        self.intervals_, self.bootstrap_ = bootstrap_intervals(
            theta, coef, A, b, units, J, np.log(low), np.log(high), list(self.terms_) + list(ranges),
            n_bootstrap=self.n_bootstrap, nonnegative=self.nonnegative, seed=self.seed)
        self._in_units(unit)
        info.update(self._record(basis, null_work, runs, ranges, low, high), full_data_step=info_step,
                    strength_unit=unit)
        if progress is not None:
            progress.finish()
        self.fit_info_ = info
        self._warn(info, ranges, theta, low, high)
        self._warn_unidentified(A, b)
        self._warn_clipped()
        return self

    def _record(self, basis, null_work, runs, ranges, low, high) -> dict[str, Any]:
        """What ``fit_info_`` keeps beside the search's record."""
        return {"snapshots": int(sum(len(r.X) for r in runs)), "runs": len(runs),
                "bounds": {n: [float(lo), float(hi)] for n, lo, hi in zip(ranges, low, high)},
                "term_evaluations": basis.evaluations + null_work["term_evaluations"],
                "snapshot_evaluations": basis.snapshot_evaluations + null_work["snapshot_evaluations"],
                "path": basis.path_taken or self.path, "gauge": self.gauge_, "null": self.null,
                "normalize": self.normalize, "target": self.target, "horizon": self.horizon}

    def _prepare(self, runs: list[ForceRun], X: Any) -> tuple[list[ForceRun], list[float], float, np.ndarray, Any]:
        """The runs as the fit sees them, each run's scale (``scales_``), the
        strengths' unit (:func:`target_scales`), and the windows' edges and
        names (refused here, before any work, when they leave the run)."""
        scales, divisors, unit = target_scales(runs, self.normalize)
        steps = np.concatenate([r.steps for r in runs])
        # "stages": the run's stages (fitting.stages), fitted to the snapshots with a force in the fitted window
        windows = resolve_windows(self.windows, X, steps, run_span(runs)[1])
        edges = window_edges(windows, steps, run_span(runs)[1], len(runs))
        names = window_names(windows, len(edges) - 1)
        # the fit works on targets of unit RMS (each run's with "rms", all runs' together without), so that
        # the search's tolerances, the full-data step's rank cut and every threshold are relative: the
        # units of G change the strengths' units and nothing else (see target_scales)
        fitted = [ForceRun(r.X, project(r.G / v, r.X, self._gauge), r.train, r.steps, r.last_step)
                  for r, v in zip(runs, divisors)]
        return fitted, scales, unit, edges, names

    def _start(self, callback, law, runs, ranges) -> FitProgress | None:
        """The fit's progress (None without a callback); with one, the
        kernels' compilation (or their load from Numba's cache) first, after
        ``callback(0, total)``: on a fresh install it is the longest wait."""
        if callback is None:
            return None
        progress = FitProgress(callback, expected_evaluations(runs, len(ranges), self.search_snapshots)
                               + self.null * sum(len(r.X) for r in runs))
        progress.start()
        compile_kernels(law, runs, self.path)
        return progress

    def _in_units(self, unit: float) -> None:
        """The strengths, computed on targets of unit RMS, in the units
        ``normalize`` asks for: times ``unit`` (see :func:`target_scales`);
        R^2, ranges, shares and verdicts have no units."""
        K = len(self.terms_)
        self.coef_ = self._coef * unit
        self.coef_unconstrained_ = self.coef_unconstrained_ * unit
        self.rms_forces_ = {k: v * unit for k, v in self.rms_forces_.items()}
        self.whole_run_["coef"] = {k: v * unit for k, v in self.whole_run_["coef"].items()}
        for w in self.windows_:
            for key in ("coef", "coef_unconstrained"):
                if w[key] is not None:
                    w[key] = {k: v * unit for k, v in w[key].items()}
        for name in self.terms_:
            if name in self.intervals_ and self.intervals_[name][0] is not None:
                self.intervals_[name] = tuple(v * unit for v in self.intervals_[name])
        if len(self.bootstrap_):
            self.bootstrap_[:, :K] *= unit

    def _full_data_step(self, basis, runs, theta, A, b, coef, low, high, per_run):
        """One Gauss-Newton step of strengths and log-ranges on every snapshot
        (the search used a subset), kept when it lowers the residual; returns
        the ranges, design, strengths, d(model)/d(log range) and whether the
        step was taken (None without ranges)."""
        info_step = None
        diffs = range_differences(basis, runs, theta, A, per_run)  # per range, (rows, terms)
        J = range_jacobian(diffs, coef)  # d(model)/d(log range)
        if J is not None:  # one Gauss-Newton step on every snapshot (the search used a subset)
            step = bounded_solve(*normal_equations(side_by_side(A, J), b - A @ coef),
                                 lower_bounds(coef, len(theta), self.nonnegative))
            with np.errstate(over="ignore"):  # a flat direction's step can be huge: exp is inf, clipped to the bound
                moved = np.clip(theta * np.exp(step[len(coef):]), np.exp(np.log(low)), np.exp(np.log(high)))
            A1, _, _ = design(basis, runs, moved, per_run)
            coef1 = nnls(A1, b, self.nonnegative)
            r0, r1 = b - A @ coef, b - A1 @ coef1
            if r1 @ r1 < r0 @ r0:
                # the intervals linearise at the final fit: a new Jacobian when the ranges moved by more
                # than REUSE_JACOBIAN (relative), else the unit-force differences already taken, with
                # the new strengths (the ranges' own move changes them at second order only)
                shift = float(np.max(np.abs(np.log(moved / theta))))
                theta, A, coef = moved, A1, coef1
                if shift > REUSE_JACOBIAN:
                    diffs = range_differences(basis, runs, theta, A, per_run)
                J = range_jacobian(diffs, coef)
                info_step = True
            else:
                info_step = False
        return theta, A, coef, J, info_step

    def _store_scores(self, A, b, coef, runs, edges, nulls, names) -> None:
        """Scores, shares, the null and the windows, on the fit's targets of
        unit RMS (the strengths are put in their units by :meth:`_in_units`)."""
        K = len(coef)
        d = runs[0].X.shape[2]
        self._coef = coef
        self.r2_ = r2(b, A @ coef, d)
        self.coef_unconstrained_ = nnls(A, b, False)
        # how much of the target the sign constraint costs (0 when nothing is clipped)
        r_nn, r_free = b - A @ coef, b - A @ self.coef_unconstrained_
        self._clip_cost = float((r_nn @ r_nn - r_free @ r_free) / max(float(b @ b), 1e-300))
        # each term's unconstrained RMS force, as a share of the target's RMS
        self._free_force = np.abs(self.coef_unconstrained_) * column_rms(A) / max(float(np.sqrt(np.mean(b ** 2))),
                                                                               1e-300)
        # each fitted term's RMS force on the data: a strength's size that does not hinge on its range
        # (a term whose range makes it tiny can carry a huge strength and still move nothing)
        self.rms_forces_ = dict(zip(self.terms_, (float(v) for v in np.sqrt(np.mean((A * coef) ** 2, axis=0)))))
        self.shares_ = dict(zip(self.terms_, shares(A, coef)))
        if nulls:
            values = np.array([r2(b, N @ nnls(N, b, self.nonnegative), d) for N in nulls])
            self.null_r2_ = float(values.mean())
            self.null_r2_interval_ = tuple(float(v) for v in np.percentile(values, [2.5, 97.5]))
        else:
            self.null_r2_ = self.null_r2_interval_ = None
        self.verdict_ = verdict(self.r2_, self.null_r2_, self.null_r2_interval_)
        self.whole_run_ = {"label": "whole run: one strength per term for every step",
                           "coef": dict(zip(self.terms_, (float(c) for c in coef))), "r2": self.r2_,
                           "null_r2": self.null_r2_, "null_r2_interval": self.null_r2_interval_,
                           "verdict": self.verdict_, "shares": dict(self.shares_)}
        steps = np.concatenate([r.steps for r in runs])
        size = runs[0].X.shape[1] * d
        self.windows_ = window_fits(A, b, np.repeat(steps, size), edges, self.terms_, d, size, self.nonnegative,
                                    nulls, names)
        self.n_terms_ = K

    def _warn_clipped(self) -> None:
        """A strength held at 0 by the sign constraint where the data push it
        below: the fit reports 0, the data say 'the other way'."""
        if not self.nonnegative or self._clip_cost <= CLIP_COST:
            return
        for name, c, free, force in zip(self.terms_, self.coef_, self.coef_unconstrained_, self._free_force):
            if c == 0.0 and free < 0.0 and force > CLIP_FORCE:
                warn_quality(f"the strength {name} is clipped at 0: without the sign constraint it is {free:.3g} "
                             f"(the data push it the other way; the constraint leaves {self._clip_cost:.2g} of the "
                             "target's squared norm unexplained); coef_unconstrained_ holds the signed fit, or fit "
                             "with nonnegative=False")

    def _warn(self, info, ranges, theta, low, high) -> None:
        if ranges and not info.get("converged", True):
            warn_quality(f"the range search stopped at its limit of {self.max_evaluations} evaluations before "
                         f"converging ({info['message']}); raise max_evaluations")
        for name, v, lo, hi in zip(ranges, theta, low, high):
            status = self.range_status_[name]
            if "bound" in status:
                warn_quality(f"the fitted {name} = {v:.4g} lies {status}, so it is not identified (the best value "
                             f"may lie outside [{lo:.4g}, {hi:.4g}]); widen bounds={{{name!r}: (low, high)}}")

    def _warn_unidentified(self, A, b) -> None:
        """A term whose unit force is a vanishing fraction of the data's
        force (below UNIDENTIFIED of its RMS) gets whatever strength makes
        up a remainder: a value like 1e+253 then stands for no measurement.
        Its RMS force (strength times unit force) is what the data fix."""
        target = float(np.sqrt(np.mean(b ** 2)))
        unit = column_rms(A)
        for name, c, u in zip(self.terms_, self.coef_, unit):
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
        unit = unit_term_forces(law, X, train, members, path=self.path)
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
        G, both projected in the fit's gauge (``gauge_``). Takes what :meth:`fit` takes. With ``normalize="rms"``
        the prediction is in the first fitted run's units, so score runs on
        that scale (held-out snapshots of the same run)."""
        check_is_fitted(self, "coef_")
        single = not isinstance(X, (Trajectory, list, tuple))
        runs = as_force_runs(X, G, train=self.train_ if (train is None and single) else train, steps=steps,
                             target=self.target, horizon=self.horizon)
        gauge = self.gauge_  # both sides in the fit's gauge: the motions the law cannot make left out
        obs = np.concatenate([project(run.G, run.X, gauge).ravel() for run in runs])
        pred = np.concatenate([project(self.predict(run.X, train=run.train), run.X, gauge).ravel() for run in runs])
        return r2(obs, pred, runs[0].X.shape[2])

    def to_law(self) -> Any:
        """The law with the fitted ranges and strengths (a ForceParams when
        it can hold them, see :func:`particles.law_terms.with_strengths`).
        With ``normalize="rms"`` its strengths are per unit RMS force: the
        same flow as the data's, on another time scale."""
        check_is_fitted(self, "coef_")
        if not answering(self.law_).simulates:
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
        if not answering(self.law_).simulates:
            raise ValueError("simulate needs a pair law; the effective loss runs with particles.simulate_effective")
        law = self.to_law()
        return simulate(x0, self.train_ if train is None else train, law, steps=steps, dt=dt, **options)

    def verdict_sentence(self) -> str:
        """The whole run's verdict in one sentence (the command line's): R^2,
        the null's mean and 95 % interval, and "above chance", "at chance"
        or "below chance" (:func:`fitting.forcefit.verdict.verdict`)."""
        check_is_fitted(self, "coef_")
        return verdict_sentence(self.law, self.target, self.horizon, self.r2_, self.null_r2_,
                                self.null_r2_interval_)

    def identified_ranges(self) -> dict[str, float | None]:
        """The fitted ranges as they can be read: the value where the range
        is identified, None where it is not (see ``range_status_``)."""
        check_is_fitted(self, "coef_")
        return {n: (v if self.range_status_[n] == "identified" else None) for n, v in self.ranges_.items()}

    def summary(self) -> str:
        """The fit's verdict in plain sentences: how much of the force the law
        explains against its null (:meth:`verdict_sentence`), in which
        gauge, which ranges are identified, which terms carry the force,
        and when (per window of steps, each with its verdict)."""
        check_is_fitted(self, "coef_")
        gauge = {None: "no gauge (the forces as they are)",
                 "translation": "the common drift of all tokens removed (translation gauge)",
                 "similarity": "the common drift and the overall scale removed (similarity gauge)"}[self.gauge_]
        target = {"gradient": "minus the loss gradient", "update": "the optimiser's update",
                  "displacement": "the displacement per step to the next snapshot" if self.horizon is None else
                  f"the displacement per step over {self.horizon} steps"}[self.target]
        lines = [f"Force-law fit of {self.fit_info_['snapshots']} snapshots ({self.n_runs_} run(s), target "
                 f"{target}), {gauge}."]
        lines.append(self.verdict_sentence())
        if self.range_names_:
            known = [f"{n} {v:.4g}" for n, v in self.identified_ranges().items() if v is not None]
            unknown = [f"{n} ({why})" for n, why in self.range_status_.items() if why != "identified"]
            parts = (["Ranges: " + ", ".join(known)] if known else []) + (
                ["not identified: " + ", ".join(unknown)] if unknown else [])
            text = "; ".join(parts)
            lines.append(text[0].upper() + text[1:] + ".")
        lines.append(shares_sentence(self.shares_))
        for w in self.windows_:
            name = "" if w.get("name") is None else f" {w['name']}"
            head = (f"Steps [{w['start']}, {w['stop']}){name} ({w['snapshots']} snapshots, {w['force_share']:.0%} "
                    "of the force): ")
            if not w["defined"]:
                lines.append(head + f"R^2 undefined ({w.get('why_undefined', '')}).")
                continue
            lead = max(w["shares"].items(), key=lambda kv: kv[1])
            carried = f"; mostly {lead[0]} ({lead[1]:.2f})." if lead[1] > 0 else "; no fitted term acts."
            note = f" Note: {w['note']}." if w.get("note") else ""
            lines.append(head + against_null(w["r2"], w["null_r2"], w["null_r2_interval"]) + carried + note)
        return "\n".join(lines)

    def table(self) -> list[dict[str, Any]]:
        """One row per fitted parameter: ``name``, ``kind`` ("strength" or
        "range"), ``value`` and 95 % ``interval`` (None for a range that is
        not identified), ``identified`` and ``note`` (why not), ``fitted``
        (the value the law uses either way), ``share`` and ``rms_force``
        (strengths)."""
        check_is_fitted(self, "coef_")
        rows = []
        for name, c in zip(self.terms_, self.coef_):
            rows.append({"name": name, "kind": "strength", "value": float(c), "fitted": float(c),
                         "interval": list(self.intervals_.get(name, (None, None))), "identified": True, "note": None,
                         "share": self.shares_[name], "rms_force": self.rms_forces_[name]})
        for name in self.range_names_:
            status = self.range_status_[name]
            known = status == "identified"
            rows.append({"name": name, "kind": "range", "value": self.ranges_[name] if known else None,
                         "fitted": self.ranges_[name],
                         "interval": list(self.intervals_.get(name, (None, None))) if known else [None, None],
                         "identified": known, "note": None if known else f"not identified: {status}",
                         "share": None, "rms_force": None})
        return rows
