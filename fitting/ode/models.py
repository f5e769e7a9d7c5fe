"""The estimators: a general library ODE and its linear and Lotka-Volterra forms.

Each estimator is a scikit-learn estimator built from three pluggable
parts: a library of candidate terms (:mod:`.library`), a formulation that
turns runs into regression rows (pointwise derivatives,
:mod:`.differentiation`, or the weak form, :mod:`.weak`) and a regressor
(:mod:`.regression`). Strings are shortcuts for the common choices.

Defaults (chosen from measurements on families of systems, docs/fitting.md):
the weak formulation with covariance-weighted rows (:mod:`.weighted`) and
STLSQ with threshold 0.1 on standardised coefficients (0.02 for
:class:`LinearODE`). All are scale-free: multiplying the data by c
multiplies the predicted derivatives by c, whatever c.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.metrics import r2_score
from sklearn.utils.validation import check_is_fitted

from particles.core.validation import check_array, check_bool, check_choice, check_float, check_int, describe

from .data import as_runs, check_window, in_window, is_run_list, run_times
from .differentiation import FiniteDifference, Formulation, SavitzkyGolay
from .flowmap import FlowMap, fit_flow_map, map_to_generator
from .blas import blas_threads_for
from .heap import keep_freed_memory
from .forecast import Forecast, pooled_error
from .integrate import SIMULATION_METHODS, BlowUpError, augmented, integrate
from .library import Library, PolynomialLibrary, as_library
from .names import DERIVATIVE_METHODS, LV_FORMS
from .regression import OLS, Regressor, as_regressor
from .quality import warn_at_caller, warn_quality
from .relations import LinearRelationWarning, degenerates, linear_relation, warning_text
from .stable import stable_least_squares
from .weak import WeakForm
from .weighted import MAX_ITERATIONS as MAX_GLS_ITERATIONS
from .noise import noise_level
from .weighted import covariance_refit

__all__ = ["ODEModel", "LinearODE", "LotkaVolterra", "LV_FORMS", "RegressionRows", "DERIVATIVE_METHODS", "as_formulation", "from_trajectory"]



def _store_params(estimator: BaseEstimator, params: dict) -> None:
    """Store the constructor's arguments unchanged (scikit-learn convention: no
    validation or conversion in ``__init__``)."""
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def from_trajectory(x: Any, t: Any, frequencies: Any = "auto", n_features: int | None = None
                    ) -> tuple[Any, Any, list[str] | None]:
    """``(x, t, names)``: a :class:`particles.Trajectory` as the Fourier
    signals of the frequencies ``frequencies`` selects
    (:func:`fitting.select_frequencies`: by default the survivors, else the
    key frequencies, else all; or the given list of k), its steps as times
    and the names ``S<k>``; anything else unchanged with names None.

    ``n_features`` (a fitted model's): a model that does not know its
    frequencies (fitted on arrays) is given all of them when it was fitted
    on K columns, and otherwise refused with a message; the selection must
    have that many columns."""
    from particles.trajectory import Trajectory

    if not isinstance(x, Trajectory):
        return x, t, None
    if t is not None:
        raise ValueError("t must be None when x is a Trajectory: its recorded steps are the sample times")
    from ..signals import parse_frequencies, select_frequencies
    from ..signals import trajectory_signals

    steps, signals = trajectory_signals(x)
    K = signals.shape[1]
    if n_features is not None and frequencies is None:  # fitted on arrays: which columns is not known
        if n_features != K:
            raise ValueError(f"x is a Trajectory with {K} frequencies, but this model was fitted on an array of "
                             f"{n_features} columns and does not know which frequencies they were: pass the "
                             "same columns as an array (or set model.frequencies_ to their k)")
        frequencies = "all"
    chosen = parse_frequencies("auto" if frequencies is None else frequencies, K)
    if isinstance(chosen, str):  # a rule: run it (a list of k, e.g. a fitted model's frequencies_, needs no rule)
        chosen = select_frequencies(x, chosen).frequencies
    if n_features is not None and len(chosen) != n_features:
        raise ValueError(f"this model was fitted on {n_features} variables but selects {chosen} of the Trajectory")
    return signals[:, np.asarray(chosen) - 1], steps.astype(float), [f"S{k}" for k in chosen]


def as_formulation(derivative: Formulation | str) -> Formulation:
    """A formulation from an object or one of ``DERIVATIVE_METHODS``."""
    if isinstance(derivative, Formulation):
        return derivative
    shortcuts = {"weak": WeakForm, "forward": lambda: FiniteDifference(1), "central": lambda: FiniteDifference(2),
                 "savgol": SavitzkyGolay, "flowmap": FlowMap}
    if not isinstance(derivative, str) or derivative not in shortcuts:
        raise ValueError(f"derivative must be a Formulation or one of {DERIVATIVE_METHODS}, got {derivative!r}")
    return shortcuts[derivative]()

#: the R^2 averages score and trajectory_score accept (one number over the equations)
MULTIOUTPUT = ("uniform_average", "variance_weighted")


class RegressionRows(NamedTuple):
    """The regression rows of a fit: Theta (n, F) and Y (n, K), the runs,
    the run index of each row, the formulation bound to the data, and the
    (samples, times) of each run inside the window."""

    Theta: np.ndarray
    Y: np.ndarray
    runs: list
    owner: np.ndarray
    formulation: Any
    samples: list


class ODEModel(BaseEstimator):
    """dx/dt = Theta(x) xi for a library Theta, fitted by sparse regression.

    Parameters
    ----------
    library : Library, int or {"linear", "quadratic", "cubic"}
        Candidate terms; an int is a polynomial degree. Default: polynomials
        up to degree 2 with a constant.
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
        Only samples with start <= t < stop (same units as t) enter fit.
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
    fit_info_ : dict
        Present when a step reported on itself: ``"weighting"`` (the weak
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

    def __init__(self, library: Library | int | str = "quadratic", regressor: Regressor | str = "stlsq",
                 alpha: float | None = None, derivative: Formulation | str | None = None,
                 window: tuple[float | None, float | None] | None = None, debias: bool = False,
                 blowup_factor: float = 1e3):
        _store_params(self, locals())

    # ------------------------------------------------------------ parts
    def _make_library(self) -> Library:
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
        if getattr(formulation, "linear_only", False) and not isinstance(self, LinearODE):
            raise ValueError(f"derivative={formulation!r} exists for LinearODE only")
        check_bool(self.debias, "debias")
        check_float(self.blowup_factor, "blowup_factor", 1.0, strict=True)
        check_window(self.window)
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
                what = "the weak form's windows" if isinstance(formulation, WeakForm) else repr(formulation)
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
        return (isinstance(formulation, WeakForm) and formulation.weighting == "covariance"
                and regressor.unpenalised)

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

        Warns
        -----
        FitQualityWarning
            When the fit may be wrong: a misfit (the fitted terms do not
            explain the data to within the noise), an optimiser stopped at
            its iteration limit, an unstable linear fit; one sentence each,
            the numbers in ``fit_info_``.
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
        variables = self._check_variable_names(names if names is not None else default_names, runs[0].shape[1])
        for attr in [a for a in vars(self) if a.endswith("_") and not a.startswith("_")]:
            delattr(self, attr)
        if default_names is not None:  # a Trajectory: score and forecast it on the same frequencies
            self.frequencies_ = [int(name[1:]) for name in default_names]
        size = sum(len(r) for r in runs) * runs[0].shape[1] * library.n_features(runs[0].shape[1])
        keep_freed_memory()  # a fit's temporaries are not faulted in afresh every time (fitting.ode.heap)
        with blas_threads_for(size):
            rows = self._fit(x, t, variables, library, regressor, formulation)
        self._warn_quality(getattr(self, "fit_info_", {}))
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
        return rows

    def _warn_quality(self, info: dict) -> None:
        """One :class:`FitQualityWarning` per sign that the fit may be wrong."""
        weighting = info.get("weighting", {})
        if weighting.get("status") == "misfit":
            warn_quality(f"the fitted terms do not explain the data to within the noise: the whitened residual is "
                         f"{weighting.get('chi2_per_dof', float('nan')):.3g} per degree of freedom where about 1 is "
                         f"expected (a term missing from the library, noise that is not white, or a model of the "
                         f"wrong kind); fit_info_['weighting'] has the numbers")
        elif weighting.get("status") == "not converged" and weighting.get("iterations", 0) >= MAX_GLS_ITERATIONS:
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

    def forecast(self, x: Any, t: Any = None, *, start: float | None = None, horizon: float | None = None,
                 method: str = "auto") -> Forecast:
        """Simulate from the observed state at ``start`` over ``horizon`` and
        score it against persistence (see :mod:`fitting.ode.forecast`).

        Parameters
        ----------
        x, t
            Runs and sample times as in :meth:`fit` (or a Trajectory); they
            must go past ``start``.
        start : float, optional
            Where the forecast starts; default the last sample time of the
            fitted window (``t_fit_end_``). The simulation starts from the
            observed state at the last sample at or before ``start``.
        horizon : float > 0, optional
            Length of the forecast in time units; default to the end of each
            run. A horizon past the data is refused.
        method : as in :meth:`simulate`

        Returns
        -------
        Forecast
            ``error``, ``persistence_error``, ``skill`` and the series.

        Warns
        -----
        FitQualityWarning
            When a simulation blows up (``error`` is then inf).
        """
        check_is_fitted(self, "coef_")
        x, t, _ = from_trajectory(x, t, getattr(self, "frequencies_", None), self.n_features_in_)
        runs = as_runs(x)
        times = run_times(self.time_values(t), runs)
        if start is None and not hasattr(self, "t_fit_end_"):  # a model fitted (and saved) before forecasts existed
            raise ValueError("start is required: this model does not know where its fitted window ended (refit it)")
        start = self.t_fit_end_ if start is None else check_float(start, "start")
        horizon = check_float(horizon, "horizon", 0.0, strict=True, allow_none=True)
        last = max(float(ti[-1]) for ti in times)
        if not last > start:
            raise ValueError(f"start must be before the data's last sample time {last:.6g} (the forecast needs "
                             f"samples after it), got {start:.6g}; pass data that go past the fitted window")
        if horizon is not None and start + horizon > last + 1e-12 * abs(last):
            raise ValueError(f"horizon must end within the data: start {start:.6g} + horizon {horizon:.6g} is past "
                             f"the last sample time {last:.6g}")
        stop = last if horizon is None else start + horizon
        observed, predicted, kept_times, persistence = [], [], [], []
        blew_up = False
        for run, ti in zip(runs, times):
            before = np.flatnonzero(ti <= start)
            ahead = (ti > start) & (ti <= stop + 1e-12 * abs(stop))
            if before.size == 0 or not ahead.any():
                continue
            i0 = int(before[-1])
            obs = run[ahead]
            observed.append(obs)
            kept_times.append(ti[ahead])
            persistence.append(np.broadcast_to(run[i0], obs.shape))
            if blew_up:
                continue
            try:
                sim = self.simulate(run[i0], np.concatenate([[ti[i0]], ti[ahead]]), method=method)[1:]
                predicted.append(sim)
            except BlowUpError as exc:
                blew_up = True
                warn_quality(f"the forecast's simulation blew up at t = {exc.time:.6g} (|x| past {exc.limit:.3g}), "
                             f"so the model does not forecast this run")
        if not observed:
            raise ValueError(f"no run has samples both at or before start = {start:.6g} and after it")
        error = float("inf") if blew_up else pooled_error(predicted, observed)
        return Forecast(start=float(start), times=kept_times, observed=observed,
                        predicted=[] if blew_up else predicted, error=error,
                        persistence_error=pooled_error(persistence, observed), blew_up=blew_up)

    def forecast_score(self, x: Any, t: Any = None, *, start: float | None = None,
                       horizon: float | None = None) -> float:
        """Skill of :meth:`forecast`: 1 - error / persistence error (> 0 beats
        persistence, -inf after a blow-up)."""
        return self.forecast(x, t, start=start, horizon=horizon).skill

    def trajectory_score(self, x: Any, t: Any = None, window: Any = None, method: str = "auto",
                         multioutput: str = "variance_weighted") -> float:
        """R^2 of simulated against observed trajectories.

        Each run is simulated from its first sample over all its times; R^2
        is computed on the samples whose times fall in ``window`` =
        (start, stop), so the end of a run or whole runs can be held out.
        The default pools the columns (1 - total SSE / total SS): a signal
        that is almost constant inside the window would otherwise dominate a
        uniform average with a huge negative R^2. Raises
        :class:`BlowUpError` when a simulation blows up.
        """
        check_is_fitted(self, "coef_")
        x, t, _ = from_trajectory(x, t, getattr(self, "frequencies_", None), self.n_features_in_)
        runs = as_runs(x)
        times = run_times(self.time_values(t), runs)
        win = check_window(window)
        observed, simulated = [], []
        for run, ti in zip(runs, times):
            keep = in_window(ti, win)
            if not keep.any():
                continue
            last = int(np.flatnonzero(keep)[-1]) + 1
            sim = self.simulate(run[0], ti[:last], method=method)
            observed.append(run[:last][keep[:last]])
            simulated.append(sim[keep[:last]])
        if not observed:
            raise ValueError(f"no samples fall inside the window {window!r}")
        obs = np.vstack(observed)
        if obs.shape[0] < 2:
            raise ValueError("need at least 2 samples inside the window for R^2")
        return float(r2_score(obs, np.vstack(simulated), multioutput=check_choice(multioutput, "multioutput",
                                                                                   MULTIOUTPUT)))

    # ------------------------------------------------------ description
    @property
    def sparsity_(self) -> float:
        """Share of the allowed coefficients that are exactly zero."""
        check_is_fitted(self, "coef_")
        return float(np.mean(self.coef_[self.term_mask_] == 0))

    def variable_names(self, names: Sequence[str] | None = None) -> list[str]:
        """``names`` checked against the fitted K, or the fitted ``variables_`` when None."""
        if names is None:
            return list(getattr(self, "variables_", None) or [f"x{i + 1}" for i in range(self.n_features_in_)])
        return self._check_variable_names(names, self.n_features_in_)

    @staticmethod
    def _check_variable_names(names: Sequence[str] | None, K: int) -> list[str]:
        """``names`` as a list of K str (``x1 .. xK`` when None)."""
        if names is None:
            return [f"x{i + 1}" for i in range(K)]
        if isinstance(names, str) or not isinstance(names, (list, tuple)) \
                or not all(isinstance(n, str) for n in names):
            raise TypeError(f"names must be a list of {K} variable names (str), got {describe(names)}")
        names = list(names)
        if len(names) != K:
            raise ValueError(f"names must hold {K} entries, got {len(names)}")
        return names

    def feature_names(self, names: Sequence[str] | None = None) -> list[str]:
        """Names of the library terms (columns of ``coef_``)."""
        check_is_fitted(self, "coef_")
        return self.library_.feature_names(self.variable_names(names))

    def named_coefficients(self, names: Sequence[str] | None = None, threshold: float = 0.0
                           ) -> dict[str, dict[str, float]]:
        """Coefficients with |value| > threshold as {equation variable: {term: value}}."""
        threshold = check_float(threshold, "threshold", 0.0)
        variables = self.variable_names(names)
        terms = self.feature_names(variables)
        return {v: {terms[j]: float(self.coef_[i, j]) for j in np.flatnonzero(np.abs(self.coef_[i]) > threshold)}
                for i, v in enumerate(variables)}

    def equations(self, names: Sequence[str] | None = None, precision: int = 3, threshold: float = 0.0
                  ) -> list[str]:
        """The fitted system, one readable line per equation (terms with
        |coefficient| <= threshold left out), e.g. ``dx/dt = 1 x - 0.5 x y``."""
        precision = check_int(precision, "precision", 1, 17)
        out = []
        for var, terms in self.named_coefficients(names, threshold).items():
            parts = []
            for term, value in terms.items():
                mag = f"{abs(value):.{precision}g}"
                body = mag if term == "1" else f"{mag} {term}"
                parts.append(("- " if value < 0 else "+ ") + body)
            rhs = " ".join(parts).removeprefix("+ ") if parts else "0"
            out.append(f"d{var}/dt = {rhs}")
        return out

    def print(self, names: Sequence[str] | None = None, precision: int = 3, threshold: float = 0.0,
              file: Any = None) -> None:
        """Print :meth:`equations`, one per line (as ``pysindy.SINDy.print``)."""
        import sys

        stream = sys.stdout if file is None else file
        for line in self.equations(names, precision, threshold):
            stream.write(line + "\n")


class LinearODE(ODEModel):
    """dx/dt = A x + b.

    Parameters
    ----------
    regressor, alpha, derivative, window, debias, blowup_factor
        As in :class:`ODEModel`, except that ``regressor="stlsq"`` thresholds
        at 0.02 by default (``default_threshold``), not 0.1: in a linear
        system small terms often set the decay rates (light damping next to a
        fast rotation), and at 0.1 STLSQ dropped them and returned unstable
        fits of stable systems (docs/fitting.md).
    stable : bool
        Least squares over stable systems only: every eigenvalue of A has
        negative real part, so the fitted model cannot blow up when
        simulated past its window. With a pointwise or weak formulation:
        least squares constrained to A = (J - R) Q (:mod:`fitting.ode.stable`;
        the regressor is not used; plain least squares is returned when it is
        already stable). With ``derivative="flowmap"``: the fitted H-step map
        has its spectrum pulled inside the unit circle
        (:mod:`fitting.ode.flowmap`), the better choice for predicting far
        past the window and the default with ``stable=True`` (held-out
        survival-MLP runs: 75 of 92 beat persistence with the flow map, 4
        with the weak form; grokking runs, where neither does, below and in
        docs/fitting.md). Its shrinkage towards the
        identity map is chosen by forecasting the window's last third
        (:class:`~fitting.ode.FlowMap`, ``fit_info_["shrinkage"]``).

    Attributes
    ----------
    A_ : ndarray, shape (K, K)
    b_ : ndarray, shape (K,)
    coef_ : ndarray, shape (K, K + 1)
        [b | A]: columns are the terms ``1, x1..xK``.
    eigenvalues_ : ndarray of complex, shape (K,)
    is_stable_ : bool
    fit_info_ : dict
        With ``stable=True`` or ``derivative="flowmap"``: how the constraint
        or the map logarithm acted; the weak form's weighting and a linear
        relation among the states, as in :class:`ODEModel`.
    """

    def __init__(self, regressor: Regressor | str = "stlsq", alpha: float | None = None,
                 derivative: Formulation | str | None = None, window: tuple[float | None, float | None] | None = None,
                 debias: bool = False, stable: bool = False, blowup_factor: float = 1e3):
        _store_params(self, locals())

    def _make_library(self) -> Library:
        return PolynomialLibrary(1)

    def _default_derivative(self) -> str:
        # the flow map forecasts best among the stable fits (held-out survival and grokking runs, docs/fitting.md)
        return "flowmap" if self.stable is True else "weak"

    default_threshold = 0.02

    def resolved_params(self):
        check_bool(self.stable, "stable")
        return super().resolved_params()

    def _weighted(self, regressor, formulation) -> bool:
        return not self.stable and super()._weighted(regressor, formulation)

    def solve_rows(self, Theta, Y, library, regressor, formulation):
        K = Y.shape[1]
        if isinstance(formulation, FlowMap):
            C = fit_flow_map(Theta, Y, formulation.shrinkage_)
            coef, info = map_to_generator(C, formulation.lag, self.stable)
            info = {**info, "shrinkage": formulation.shrinkage_}
            if not np.all(np.isfinite(coef)):
                raise ValueError("the flow-map fit failed: the fitted map has no real logarithm "
                                 "(try a shorter horizon)")
            return coef, np.zeros(K), info
        if not self.stable:
            return super().solve_rows(Theta, Y, library, regressor, formulation)
        coef, info = stable_least_squares(Theta, Y, np.arange(1, K + 1), 0)
        if not np.all(np.isfinite(coef)) or np.max(np.linalg.eigvals(coef[:, 1:]).real) >= 0:
            raise ValueError("the stable fit failed: no stable A was found (the data may be constant or too few)")
        return coef, np.zeros(K), info

    def _default_simulation(self) -> str:
        return "exact"

    def _warn_quality(self, info: dict) -> None:
        super()._warn_quality(info)
        growth = float(self.eigenvalues_.real.max())
        if growth > 0:
            warn_quality(f"the fitted linear system is unstable (an eigenvalue of A has real part {growth:.3g} > 0), "
                         f"so its simulations grow without bound past the data; LinearODE(stable=True) fits "
                         f"stable systems only")

    def predict_rows(self, Theta: np.ndarray, formulation: Formulation) -> np.ndarray:
        if isinstance(formulation, FlowMap):  # the map a lag ahead: exp(tau [[A, b], [0, 0]])
            from scipy.linalg import expm

            K = self.n_features_in_
            P = expm(formulation.lag * augmented(self.A_, self.b_))
            return Theta @ np.column_stack([P[:K, K], P[:K, :K]]).T
        return super().predict_rows(Theta, formulation)

    def _linear_part(self):
        return self.coef_[:, 1:], self.coef_[:, 0]

    @property
    def A_(self) -> np.ndarray:
        check_is_fitted(self, "coef_")
        return self.coef_[:, 1:]

    @property
    def b_(self) -> np.ndarray:
        check_is_fitted(self, "coef_")
        return self.coef_[:, 0]

    @property
    def eigenvalues_(self) -> np.ndarray:
        return np.linalg.eigvals(self.A_)

    @property
    def is_stable_(self) -> bool:
        """All eigenvalues of A have negative real part."""
        return bool(np.all(self.eigenvalues_.real < 0))


class LotkaVolterra(ODEModel):
    """Generalised Lotka-Volterra system.

    Parameters
    ----------
    form : {"general", "classic", "logistic"}
        "general": dx_i/dt = b_i + sum_j a_ij x_j + sum_{j<=k} beta_ijk x_j x_k
        (the full quadratic library). "classic": dx_i/dt = x_i (r_i +
        sum_j a_ij x_j) (K + 1 terms per equation, no constant).
        "logistic": dx_i/dt = x_i (r_i + a_ii x_i), each variable on its own
        (2 terms per equation): growth or decay that levels off at
        -r_i / a_ii, with no coupling between variables.
    regressor, alpha, derivative, window, debias, blowup_factor
        As in :class:`ODEModel`.

    Attributes
    ----------
    coef_ : ndarray, shape (K, 1 + K + K(K+1)/2)
        Over the terms ``1, x_j, x_j x_k (j <= k)``; see :meth:`feature_names`.
    intercept_ : ndarray, shape (K,)           b_i
    linear_ : ndarray, shape (K, K)            a_ij (general form)
    quadratic_ : ndarray, shape (K, K, K)      beta_ijk for j <= k, 0 below
    growth_rates_ : ndarray, shape (K,)        r_i (classic and logistic forms)
    interactions_ : ndarray, shape (K, K)      a_ij (classic form; diagonal in the logistic form)
    form_ : str                                the form fitted: ``form``, or "classic" when the general
                                               form has more terms than there are regression rows
                                               (a :class:`FitQualityWarning` says so)
    """

    def __init__(self, form: str = "general", regressor: Regressor | str = "stlsq", alpha: float | None = None,
                 derivative: Formulation | str | None = None, window: tuple[float | None, float | None] | None = None,
                 debias: bool = False, blowup_factor: float = 1e3):
        _store_params(self, locals())

    def _make_library(self) -> Library:
        return PolynomialLibrary(2)

    def resolved_params(self):
        if self.form not in LV_FORMS:
            raise ValueError(f"form must be one of {LV_FORMS}, got {self.form!r}")
        return super().resolved_params()

    def fit_with_rows(self, x: Any, t: Any = None, *, names: Sequence[str] | None = None,
                      frequencies: Any = "auto") -> RegressionRows:
        rows = super().fit_with_rows(x, t, names=names, frequencies=frequencies)
        self.form_ = getattr(self, "form_", self.form)
        return rows

    fit_with_rows.__doc__ = ODEModel.fit_with_rows.__doc__

    def fit(self, x: Any, t: Any = None, *, names: Sequence[str] | None = None,
            frequencies: Any = "auto") -> "LotkaVolterra":
        super().fit(x, t, names=names, frequencies=frequencies)
        return self

    fit.__doc__ = ODEModel.fit.__doc__

    def _fall_back(self, K: int, library: Library, rows: int) -> bool:
        if getattr(self, "form_", self.form) != "general" or rows < K + 1:
            return False
        terms = library.n_features(K)
        self.form_ = "classic"
        warn_quality(f"LotkaVolterra(form='general') on {K} variables has {terms} terms per equation but there are "
                     f"only {rows} regression rows, so the classic form ({K + 1} terms per equation) was fitted "
                     f"instead (form_ says which); give more samples for the general form")
        return True

    def _mask(self, K: int, library: Library) -> np.ndarray:
        powers = library.powers(K)
        form = getattr(self, "form_", self.form)
        if form == "general":
            return np.ones((K, len(powers)), dtype=bool)
        if form == "logistic":
            return np.array([[p == (i,) or p == (i, i) for p in powers] for i in range(K)])
        return np.array([[p == (i,) or (len(p) == 2 and i in p) for p in powers] for i in range(K)])

    @property
    def intercept_(self) -> np.ndarray:
        check_is_fitted(self, "coef_")
        return self.coef_[:, 0]

    @property
    def linear_(self) -> np.ndarray:
        check_is_fitted(self, "coef_")
        return self.coef_[:, 1 : 1 + self.n_features_in_]

    @property
    def quadratic_(self) -> np.ndarray:
        check_is_fitted(self, "coef_")
        K = self.n_features_in_
        j, k = np.triu_indices(K)
        out = np.zeros((K, K, K))
        out[:, j, k] = self.coef_[:, 1 + K :]
        return out

    @property
    def growth_rates_(self) -> np.ndarray:
        """r_i of the classic and logistic forms (the coefficient of x_i in equation i)."""
        return np.diag(self.linear_).copy()

    @property
    def interactions_(self) -> np.ndarray:
        """a_ij of the classic form (coefficient of x_i x_j in equation i); only
        the diagonal is fitted in the logistic form."""
        Q = self.quadratic_
        K = self.n_features_in_
        return np.array([[Q[i, min(i, j), max(i, j)] for j in range(K)] for i in range(K)])

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """Jacobian of the fitted right-hand side at state x, shape (K, K)."""
        check_is_fitted(self, "coef_")
        x = check_array(x, "x", shape=(self.linear_.shape[0],))
        Q = self.quadratic_
        return self.linear_ + np.einsum("ijk,k->ij", Q, x) + np.einsum("ikj,k->ij", Q, x)
