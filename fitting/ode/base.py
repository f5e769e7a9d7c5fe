"""The general library ODE estimator, :class:`ODEModel`: a scikit-learn
estimator built from three pluggable parts, a library of candidate terms
(:mod:`.library`), a formulation that turns runs into regression rows
(pointwise derivatives, :mod:`.differentiation`; the weak form,
:mod:`.weak`; the flow map, :mod:`.flowmap`) and a regressor
(:mod:`.regression`). Strings are shortcuts for the common choices.

Defaults (chosen from measurements on families of systems, docs/fitting.md):
the weak formulation with covariance-weighted rows (:mod:`.weighted`) and
STLSQ with threshold 0.1 on standardised coefficients. All are scale-free:
multiplying the data by c multiplies the predicted derivatives by c,
whatever c. Its forms: :class:`~fitting.ode.linear.LinearODE` and
:class:`~fitting.ode.lotka_volterra.LotkaVolterra`.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.metrics import r2_score
from sklearn.utils.validation import check_is_fitted

from particles.core.validation import check_array, check_bool, check_choice, check_float

from .data import as_runs, check_run_window, check_window, in_window, is_run_list, run_times, window_numbers
from .equations import EquationsMixin
from .differentiation import Formulation
from .blas import blas_threads_for
from .inputs import MULTIOUTPUT, RegressionRows, as_formulation, from_trajectory, store_params
from .integrate import SIMULATION_METHODS, integrate
from .library import Library, as_library
from .regression import OLS, Regressor, as_regressor
from .quality import warn_at_caller, warn_quality
from .simulation_scores import SimulationScoresMixin
from .relations import LinearRelationWarning, degenerates, linear_relation, warning_text
from .weighted import MAX_ITERATIONS as MAX_GLS_ITERATIONS
from .noise import noise_level
from .degree import AutoDegree, choose_degree
from .verdict import fit_quality, halves_r2, library_model, quality_sentence, segment_r2
from .weighted import covariance_refit

__all__ = ["ODEModel"]


class ODEModel(SimulationScoresMixin, EquationsMixin, BaseEstimator):
    """dx/dt = Theta(x) xi for a library Theta, fitted by sparse regression.

    Parameters
    ----------
    library : Library, int, AutoDegree or {"linear", "quadratic", "cubic", "auto"}
        Candidate terms; an int is a polynomial degree. Default: polynomials
        up to degree 2 with a constant. ``"auto"`` (``AutoDegree(5)``;
        :class:`~fitting.ode.degree.AutoDegree` for another largest degree):
        the fit tries degrees 1 to 5 and keeps the lowest that simulates
        the data as well as the best (:mod:`fitting.ode.degree`), with the
        evidence in ``fit_info_["degree"]``.
    regressor : Regressor or {"stlsq", "ols", "lasso", "lasso_cv"}
        Default :class:`~fitting.ode.STLSQ` (threshold 0.1, standardised;
        0.02 for :class:`LinearODE`).
    alpha : float, optional
        With a string regressor: STLSQ's threshold or Lasso's penalty (both
        on the standardised scale). Ignored by "ols" and "lasso_cv".
    derivative : Formulation or {"weak", "forward", "central", "savgol", "flowmap"}, optional
        How runs become regression rows. Default (None): the weak form (no
        numerical derivatives; :class:`LinearODE` with ``stable=True``: the
        flow map, which forecasts best).
    window : (start, stop) or None
        Only samples with start <= t < stop (same units as t) enter fit;
        None at either end leaves it open. ``fit`` refuses, with the runs'
        first..last time in the message (the message of ``embdyn fit
        --window``), a window that is reversed or empty, begins before the
        first sample, stops more than one sample interval past the last
        sample or holds no sample.
    debias : bool
        Least-squares refit on the selected terms of each equation.
    blowup_factor : float > 1
        A simulation blows up when max |x| exceeds this times the largest
        |x| of the fitting data.

    Attributes
    ----------
    coef_ : ndarray, shape (K, F)
        Coefficient of term j (see :meth:`feature_names`) in equation i, in
        the data's units.
    alphas_ : ndarray, shape (K,)
        Threshold or penalty used per equation (0 for least squares).
    library_, regressor_, formulation_ : the resolved parts.
    n_features_in_ : int
    n_samples_fit_ : int
        Regression rows (samples, or windows for the weak form).
    dt_ : float or None
        The step passed to fit (None when sample times were given).
    scale_ : float
        Largest |x| in the fitting data (for blow-up detection).
    t_fit_end_ : float
        Last sample time inside the fitted window (where :meth:`forecast`
        starts by default).
    variables_ : list of str
        Names of the state variables (``names`` of :meth:`fit`).
    fit_quality_ : dict
        The verdict on the fit from the data it was given
        (:func:`fitting.ode.verdict.fit_quality`): ``trusted``, ``failed``
        (the checks that failed: ``"simulation"``, ``"bounded"``,
        ``"halves"``, ``"condition"``), ``simulation_r2`` of simulations over
        the fitted model's predictability ``horizon`` started from the data's
        own states (the R^2 of the signal beneath the data's noise),
        ``bounded``, ``halves_r2`` (the first half's fit judged on the
        second half, then the reverse; NaN for a half that is mostly noise),
        ``condition``, ``min_t`` (the smallest |coefficient| / standard error
        of a kept term, reported only) and the figures behind them. A fit
        that is not trusted warned (FitQualityWarning) naming the checks.
    fit_info_ : dict
        Present when a step reported on itself: ``"degree"`` (``library="auto"``:
        the chosen degree, each candidate's simulation error, the rule, and
        ``not_fitted``: the degrees whose library had more terms than the
        formulation's regression rows, with the reason); ``"weighting"`` (the weak
        form's covariance-weighted refit: ``status``, ``iterations``,
        ``noise_sd``, ``chi2_per_dof``; see :mod:`fitting.ode.weighted`);
        ``"linear_relation"`` (the states vary along a direction no more than
        the noise does and the library is degenerate on them:
        ``combination``, ``value``, ``rms``, ``noise_sd``; a
        :class:`~fitting.ode.relations.LinearRelationWarning` was issued; see
        :mod:`fitting.ode.relations`).
    """

    #: STLSQ threshold of ``regressor="stlsq"`` when ``alpha`` is None
    default_threshold = 0.1

    #: whether formulations that exist for linear models only (``linear_only``) may be used
    supports_linear_only = False

    def __init__(self, library: Library | int | str = "quadratic", regressor: Regressor | str = "stlsq",
                 alpha: float | None = None, derivative: Formulation | str | None = None,
                 window: tuple[float | None, float | None] | None = None, debias: bool = False,
                 blowup_factor: float = 1e3):
        store_params(self, locals())

    # ------------------------------------------------------------ parts
    def _make_library(self) -> Library:
        if isinstance(self.library, str) and self.library == "auto":
            return AutoDegree()
        return as_library(self.library)

    def _mask(self, K: int, library: Library) -> np.ndarray:
        return np.ones((K, library.n_features(K)), dtype=bool)

    def _default_simulation(self) -> str:
        return "ivp"

    def _default_derivative(self) -> str:
        """The formulation of ``derivative=None``."""
        return "weak"

    def _fall_back(self, K: int, library: Library, rows: int) -> bool:
        """Switch to a smaller model when ``rows`` regression rows cannot
        determine this one (with a warning); False when there is none."""
        return False

    def _linear_part(self) -> tuple[np.ndarray, np.ndarray] | None:
        return None

    def check_params(self) -> None:
        """Check every parameter without fitting (``fit`` does the same
        first): a ValueError or TypeError naming the one that is wrong."""
        self.resolved_params()
        check_window(self.window)  # its order too; fit says that with the runs' extent (check_run_window)

    def resolved_params(self) -> tuple[Library, Regressor, Formulation]:
        """The checked parameters as objects: (library, regressor,
        formulation), the strings resolved to their classes (what ``fit``
        uses; :class:`~fitting.ode.BootstrapEnsemble` refits with them)."""
        library = self._make_library()
        check_float(self.alpha, "alpha", 0.0, allow_none=True)
        if self.regressor == "lasso" and self.alpha == 0:
            raise ValueError("alpha must be > 0 for regressor='lasso' (use regressor='ols' for alpha = 0)")
        regressor = as_regressor(self.regressor, self.alpha if self.alpha is not None or self.regressor != "stlsq"
                                 else self.default_threshold)
        regressor.check()
        formulation = as_formulation(self.derivative if self.derivative is not None else self._default_derivative())
        formulation.check()
        if getattr(formulation, "linear_only", False) and not self.supports_linear_only:
            raise ValueError(f"derivative={formulation!r} exists for LinearODE only")
        check_bool(self.debias, "debias")
        check_float(self.blowup_factor, "blowup_factor", 1.0, strict=True)
        if self.window is not None:  # its kind; fit checks it against the runs (check_run_window)
            window_numbers(self.window)
        return library, regressor, formulation

    # ------------------------------------------------------------- rows
    def time_values(self, t: Any) -> Any:
        """``t`` as given, or when None the fitted time step (``dt_``; 1 before fitting)."""
        if t is not None:
            return t
        dt = getattr(self, "dt_", 1.0)
        if dt is None:
            raise ValueError("t is required: the model was fitted on explicit sample times")
        return dt

    def regression_rows(self, x: Any, t: Any, window: Any, library: Library, formulation: Formulation):
        """Regression rows of all runs inside the window (the rows ``fit``
        solves; :class:`~fitting.ode.BootstrapEnsemble` resamples them).

        Returns Theta (n, F), Y (n, K), the runs, the run index of each row,
        the formulation bound to the data (the weak form's window) and the
        (samples, times) of each run inside the window.
        """
        runs = as_runs(x)
        if hasattr(self, "n_features_in_") and runs[0].shape[1] != self.n_features_in_:
            raise ValueError(f"x has {runs[0].shape[1]} columns, the model was fitted on {self.n_features_in_}")
        times = run_times(self.time_values(t), runs)
        win = check_window(window)
        kept = []
        for i, (run, ti) in enumerate(zip(runs, times)):
            keep = in_window(ti, win)
            if keep.any():
                kept.append((i, run[keep], ti[keep]))
        if not kept:
            raise ValueError(f"no samples fall inside the window {window!r}")
        formulation = formulation.bind([k[1] for k in kept], [k[2] for k in kept])
        need = formulation.min_samples()
        pieces = []
        for i, run, ti in kept:
            n = len(run)
            if n < need:
                what = formulation.samples_text()
                raise ValueError(f"run {i} has {n} samples inside the window, fewer than the {need} that {what} "
                                 f"need; give longer runs or a smaller window")
            pieces.append((i, *formulation.rows(run, ti, library)))
        Theta = np.vstack([p[1] for p in pieces])
        Y = np.vstack([p[2] for p in pieces])
        owner = np.concatenate([np.full(len(p[1]), p[0]) for p in pieces])
        return RegressionRows(Theta, Y, runs, owner, formulation, [(k[1], k[2]) for k in kept])

    def solve_rows(self, Theta: np.ndarray, Y: np.ndarray, library: Library, regressor: Regressor,
                   formulation: Formulation) -> tuple[np.ndarray, np.ndarray, dict]:
        """Coefficients (K, F), the regressor's alphas (K,) and an info dict
        from regression rows Theta (n, F), Y (n, K), without the weighted refit."""
        K = Y.shape[1]
        mask = self._mask(K, library)
        # the constant column is 1 on every row: pointwise rows, and weak rows
        # (window averages with unit-integral test functions)
        intercept = library.bias_column(K)
        coef, alphas = regressor.fit(Theta, Y, mask, intercept)
        if self.debias and not regressor.plain_least_squares:
            refit = OLS()
            coef, _ = refit.fit(Theta, Y, mask & (coef != 0), None)
        return coef, alphas, {}

    def _weighted(self, regressor: Regressor, formulation: Formulation) -> bool:
        """Whether the covariance-weighted refit applies: weak rows with
        ``weighting="covariance"`` and an unpenalised regressor."""
        return formulation.covariance_refit and regressor.unpenalised

    # -------------------------------------------------------------- fit
    def fit(self, x: Any, t: Any = None, *, names: Sequence[str] | None = None,
            frequencies: Any = "auto") -> "ODEModel":
        """Fit the ODE to one or several sampled trajectories.

        Parameters
        ----------
        x : ndarray, shape (T, K), list of such arrays (or an (R, T, K) array), or Trajectory
            A :class:`particles.Trajectory` is fitted on the Fourier signals
            (:func:`fitting.trajectory_signals`) of the frequencies
            :func:`fitting.select_frequencies` chooses by default (the
            survivors, else the key frequencies, else all; stored as
            ``frequencies_``, which ``score`` and ``forecast`` of a
            Trajectory then use) at its recorded steps, with the variables
            named ``S<k>`` by frequency.
        t : float, ndarray of shape (T,), or list of arrays (one per run), optional
            Time step (default 1) or sample times (one (T,) array serves
            every run when all runs have T samples). Passed as scikit-learn's
            ``y``, so ``GridSearchCV(...).fit(runs, times)`` splits runs and
            their times together. None with a Trajectory (its steps are the
            times).
        names : list of K str, optional
            Names of the state variables (default ``x1 .. xK``, or ``S<k>``
            of the selected frequencies for a Trajectory), used by :meth:`equations` and in
            warnings; stored as ``variables_``.
        frequencies : {"auto", "survivors", "key", "all"}, list of int or str, optional
            With a Trajectory: which frequencies to fit
            (:func:`fitting.select_frequencies`; ``"2,5,7"`` as on the
            command line). Ignored for arrays.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Before any work, for bad data or a ``window`` that does not fit
            the runs (reversed, empty, before the first sample, past the
            last, or holding no sample), with the runs' first..last time.

        Warns
        -----
        FitQualityWarning
            When the fit may be wrong: its verdict (``fit_quality_``: its
            simulations against the data, boundedness, the halves, the
            conditioning), an optimiser stopped at its iteration limit, an
            unstable linear fit; one sentence each, the numbers in
            ``fit_quality_`` and ``fit_info_``. (Another, about low-noise
            data on runs too short for the exact weak form, says how the
            rows were built, not that the fit failed.)
        LinearRelationWarning
            When the states satisfy a linear relation that makes the
            library's columns dependent.
        """
        self.fit_with_rows(x, t, names=names, frequencies=frequencies)
        return self

    def fit_with_rows(self, x: Any, t: Any = None, *, names: Sequence[str] | None = None,
                      frequencies: Any = "auto") -> "RegressionRows":
        """:meth:`fit`, returning the regression rows it built and solved
        (:class:`RegressionRows`), for callers that resample them
        (:class:`~fitting.ode.BootstrapEnsemble`) without building them again."""
        library, regressor, formulation = self.resolved_params()
        x, t, default_names = from_trajectory(x, t, frequencies)
        runs = as_runs(x)
        # the window within the runs, before any work: the message of embdyn fit --window, with the runs' extent
        check_run_window(self.window, run_times(1.0 if t is None else t, runs))
        variables = self._check_variable_names(names if names is not None else default_names, runs[0].shape[1])
        for attr in [a for a in vars(self) if a.endswith("_") and not a.startswith("_")]:
            delattr(self, attr)
        if default_names is not None:  # a Trajectory: score and forecast it on the same frequencies
            self.frequencies_ = [int(name[1:]) for name in default_names]
        size = sum(len(r) for r in runs) * runs[0].shape[1] * library.n_features(runs[0].shape[1])
        with blas_threads_for(size):
            if callable(getattr(library, "candidates", None)):  # libraries to choose from (library="auto")
                rows = self._fit_choosing(x, t, variables, library, regressor, formulation, runs)
            else:
                rows = self._fit(x, t, variables, library, regressor, formulation)
        self._warn_quality(getattr(self, "fit_info_", {}))
        return rows

    def _fit_choosing(self, x, t, variables, choice, regressor, formulation, runs) -> RegressionRows:
        """:meth:`_fit` with each of ``choice.candidates(K)`` and the one
        :func:`.degree.choose_degree` keeps (its state, its warnings);
        the evidence in ``fit_info_["degree"]``."""
        K = runs[0].shape[1]
        samples_in = sum(len(r) for r in runs)
        candidates = choice.candidates(K, samples_in)  # a max_degree the data cannot support: refused before work
        fits, not_fitted = [], {}
        for lib in candidates:
            for attr in [a for a in vars(self) if a.endswith("_") and not a.startswith("_")]:
                delattr(self, attr)  # each candidate from a clean estimator (fit_info_ is set only when there is some)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    rows = self._fit(x, t, variables, lib, regressor, formulation)
                except ValueError as exc:  # fewer regression rows than this library's terms
                    fits.append(None)
                    not_fitted[lib.degree] = str(exc)
                    continue
            state = {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}
            fits.append((lib, rows, state, [(str(w.message), w.category) for w in caught]))
        # a candidate its own verdict rejects is not chosen while another passes (the bounded ones, if none does)
        usable = [f is not None and f[2]["fit_quality_"]["trusted"] for f in fits]
        if not any(usable):
            usable = [f is not None and f[2]["fit_quality_"]["bounded"] for f in fits]
        if not any(f is not None for f in fits):
            raise ValueError("library='auto': no candidate degree could be fitted (fewer regression rows than "
                             "terms for each); give more samples or a smaller max_degree")
        length = min(f[2]["fit_quality_"]["segment_samples"] for f in fits if f is not None)
        errors = []
        for f in fits:
            if f is None:
                errors.append(float("inf"))
                continue
            lib, rows, state, _ = f
            coef = state["coef_"]
            r2, _, _ = segment_r2(*library_model(lib, coef, K), [s[0] for s in rows.samples],
                                  [s[1] for s in rows.samples], length, self.blowup_factor * state["scale_"],
                                  sigma=np.asarray(state["fit_quality_"]["noise_level"]))
            errors.append(1.0 - r2 if np.isfinite(r2) else (float("inf") if r2 < 0 else 0.0))
        degrees = [lib.degree for lib in candidates]
        index, evidence = choose_degree(errors, degrees, usable)
        lib, rows, state, said = fits[index]
        for attr in [a for a in vars(self) if a.endswith("_") and not a.startswith("_")]:
            delattr(self, attr)
        for attr, value in state.items():
            setattr(self, attr, value)
        self.fit_info_ = {**getattr(self, "fit_info_", {}),
                          "degree": {**evidence, "segment_samples": length, "not_fitted": not_fitted}}
        for message, category in said:
            warn_at_caller(message, category)
        return rows

    def _fit(self, x, t, variables, library, regressor, formulation) -> RegressionRows:
        """The body of :meth:`fit` on checked parameters; the rows it solved."""
        rows = self.regression_rows(x, t, self.window, library, formulation)
        Theta, Y, runs, _, formulation, samples = rows
        K = Y.shape[1]
        mask = self._mask(K, library)
        n_params = int(mask.sum(axis=1).max())
        if Theta.shape[0] < n_params and self._fall_back(K, library, Theta.shape[0]):
            mask = self._mask(K, library)
            n_params = int(mask.sum(axis=1).max())
        if Theta.shape[0] < n_params:
            hint = (f" or, for short runs, a pointwise derivative (derivative='central'); the derivative "
                    f"method is {formulation!r}"
                    if not formulation.pointwise else "")
            raise ValueError(f"fewer regression rows ({Theta.shape[0]}) than terms per equation ({n_params}); "
                             f"give more samples, a wider window or a smaller model{hint}")
        sigma = noise_level([s[0] for s in samples], [s[1] for s in samples])  # shared by the two users below
        relation = linear_relation(samples, sigma)
        if relation is not None and not degenerates(library, K, relation):
            relation = None
        if relation is not None:
            warn_at_caller(warning_text(relation, variables), LinearRelationWarning)
        self.coef_, self.alphas_, info = self.solve_rows(Theta, Y, library, regressor, formulation)
        if self._weighted(regressor, formulation):
            readmit = regressor.readmission(Theta, Y, mask)  # terms it pruned that the refit may bring back
            self.coef_, weighting = covariance_refit(self.coef_, [s[0] for s in samples], [s[1] for s in samples],
                                                     library, formulation, sigma=sigma, **readmit)
            info = {**info, "weighting": weighting}
        if relation is not None:
            info = {**info, "linear_relation": relation}
        if info:
            self.fit_info_ = info
        self.library_, self.regressor_, self.formulation_ = library, regressor, formulation
        self.term_mask_ = mask
        self.n_features_in_ = K
        self.n_samples_fit_ = int(Theta.shape[0])
        if t is None:
            self.dt_ = 1.0
        elif not is_run_list(t) and np.ndim(t) == 0:
            self.dt_ = float(t)
        else:  # explicit times: later calls must pass theirs
            self.dt_ = None
        self.scale_ = float(max(max(np.max(np.abs(r)) for r in runs), 1e-300))
        self.variables_ = variables
        self.t_fit_end_ = float(max(s[1][-1] for s in samples))
        def model_of(coef):  # (rhs, plan): the plan is the compiled integrator's view of it, if the library has one
            return library_model(library, coef, K)

        support = self._mask(K, library) & (self.coef_ != 0)

        def solve_half(T, Yh):  # the kept terms' coefficients from half the rows (least squares on them); a
            if formulation.maps_states:  # formulation whose rows map states solves its own regression
                return self.solve_rows(T, Yh, library, regressor, formulation)[0]
            return OLS().fit(T, Yh, support, library.bias_column(K))[0]

        def halves(length, noise):  # each half's fit on the other half (.verdict.halves_r2)
            return halves_r2(solve_half, model_of, Theta, Y, rows.owner, samples, length,
                             self.blowup_factor * self.scale_, sigma=noise)

        self.fit_quality_ = fit_quality(self._rhs, model_of(self.coef_)[1], samples, sigma, Theta, self.coef_,
                                        self.blowup_factor * self.scale_, Y, relation=relation is not None,
                                        halves=halves)
        return rows

    def _warn_quality(self, info: dict) -> None:
        """One :class:`FitQualityWarning` per sign that the fit may be wrong."""
        weighting = info.get("weighting", {})
        # the verdict: simulations against the data (.verdict); a large whitened residual is none (it is also
        # what an exact model of data with an error floor, a solver's tolerance, gives): fit_info_ keeps it
        sentence = quality_sentence(self.fit_quality_)
        if sentence is not None:
            warn_quality(sentence)
        if weighting.get("status") == "not converged" and weighting.get("iterations", 0) >= MAX_GLS_ITERATIONS:
            warn_quality(f"the covariance-weighted refit did not settle within {MAX_GLS_ITERATIONS} iterations, so "
                         f"the coefficients are the regressor's, unweighted; fit_info_['weighting'] has the numbers")
        if info.get("constrained") and not info.get("converged", True):
            warn_quality(f"the stable fit's optimiser stopped after {info.get('iterations')} iterations "
                         f"({info.get('optimizer_message', 'at its limit')}), so the coefficients may not be the "
                         f"best stable fit; fit_info_ has the numbers")

    # ---------------------------------------------------------- predict
    def _rhs(self, X: np.ndarray) -> np.ndarray:
        return self.library_.features(X) @ self.coef_.T

    def predict(self, x: Any) -> np.ndarray | list[np.ndarray]:
        """dx/dt at the given states: (n, K) -> (n, K); a list gives a list."""
        check_is_fitted(self, "coef_")
        runs = as_runs(x)
        if runs[0].shape[1] != self.n_features_in_:
            raise ValueError(f"x has {runs[0].shape[1]} columns, the model was fitted on {self.n_features_in_}")
        out = [self._rhs(r) for r in runs]
        return out if is_run_list(x) else (out[0] if np.ndim(x) == 2 else np.stack(out))

    def score(self, x: Any, t: Any = None, window: Any = None, multioutput: str = "uniform_average") -> float:
        """R^2 of the regression rows on the samples in ``window``.

        For a pointwise formulation the rows are estimated derivatives (the
        survival paper's "derivative R^2" with forward differences); for the
        weak form they are window averages of dx/dt. ``multioutput`` as in
        ``sklearn.metrics.r2_score``: "uniform_average" (default, as
        ``Lasso.score`` in the reference analysis) or "variance_weighted".
        """
        check_is_fitted(self, "coef_")
        x, t, _ = from_trajectory(x, t, getattr(self, "frequencies_", None), self.n_features_in_)
        Theta, Y, _, _, formulation, _ = self.regression_rows(x, t, window, self.library_, self.formulation_)
        multioutput = check_choice(multioutput, "multioutput", MULTIOUTPUT)
        return float(r2_score(Y, self.predict_rows(Theta, formulation), multioutput=multioutput))

    def predict_rows(self, Theta: np.ndarray, formulation: Formulation) -> np.ndarray:
        """The fitted model's prediction (n, K) of the targets of regression rows Theta (n, F)."""
        return Theta @ self.coef_.T

    # --------------------------------------------------------- simulate
    def simulate(self, x0: Any, t: Any, method: str = "auto", rtol: float = 1e-8, atol: float = 1e-10) -> np.ndarray:
        """Integrate the fitted system from x0 at t[0].

        Parameters
        ----------
        x0 : ndarray, shape (K,)
        t : ndarray, shape (n,)
            Increasing output times; x0 is the state at t[0].
        method : {"auto", "exact", "ivp", "rollout"}
            "exact" (linear models only): augmented matrix exponential.
            "ivp": :func:`scipy.integrate.solve_ivp` (LSODA, ``rtol``/``atol``).
            "rollout": the discrete map x <- x + dt f(x) on uniform t (what
            a model fitted to forward differences reproduces exactly).
            "auto": exact for linear models, ivp otherwise.

        Returns
        -------
        ndarray, shape (n, K)

        Raises
        ------
        BlowUpError
            when max |x| exceeds ``blowup_factor`` times the largest |x| of
            the fitting data, or the state stops being finite.
        """
        check_is_fitted(self, "coef_")
        if method not in SIMULATION_METHODS:
            raise ValueError(f"method must be one of {SIMULATION_METHODS}, got {method!r}")
        x0 = check_array(x0, "x0", shape=(self.n_features_in_,))
        check_array(t, "t", ndim=1, min_size=1)
        rtol = check_float(rtol, "rtol", 0.0, strict=True)
        atol = check_float(atol, "atol", 0.0, strict=True)
        if method == "auto":
            method = self._default_simulation()
        limit = self.blowup_factor * max(self.scale_, float(np.max(np.abs(x0))))
        return integrate(self._rhs, x0, t, method, limit, linear=self._linear_part(), rtol=rtol, atol=atol)
