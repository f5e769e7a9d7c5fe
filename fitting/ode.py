"""ODE regression onto signal trajectories (SPEC section 4).

Two scikit-learn style estimators share one machinery: a library of
candidate terms (constant, x_j, x_j x_k for j <= k), a mask saying which
terms may enter which equation, and a sparse or plain linear regression of
the estimated derivatives on the library.

* :class:`LinearODE`: dx/dt = A x + b.
* :class:`LotkaVolterra`: ``form="general"`` gives
  dx_i/dt = b_i + sum_j a_ij x_j + sum_{j<=k} beta_ijk x_j x_k,
  ``form="classic"`` gives dx_i/dt = x_i (r_i + sum_j a_ij x_j).

Data are one (T, K) array or a list of them (several runs); times are a
step ``dt`` or arrays of sample times. Scores: :meth:`score` is the R^2 of
derivatives (the reference analysis), :meth:`trajectory_score` the R^2 of
the simulated trajectory against the data on any time window.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np
from joblib import Parallel, delayed
from scipy.integrate import solve_ivp
from scipy.linalg import expm
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LassoLarsCV, LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import TimeSeriesSplit

from .derivatives import DERIVATIVES, _is_uniform, _times, differentiate

__all__ = ["LinearODE", "LotkaVolterra", "BlowUpError", "REGRESSORS", "linear_solution"]

REGRESSORS = ("ols", "lasso", "lasso_cv")
SIMULATION_METHODS = ("auto", "exact", "ivp", "rollout")


class BlowUpError(RuntimeError):
    """A simulated trajectory left the range the model was fitted on.

    Attributes
    ----------
    time : float
        First sample time at which the state exceeded the limit (or became
        non-finite).
    limit : float
        The bound on max |x| that was crossed.
    partial : ndarray, shape (n, K)
        The finite part of the trajectory before ``time``.
    """

    def __init__(self, time: float, limit: float, partial: np.ndarray):
        super().__init__(f"simulated trajectory blew up at t = {time:g} (max |x| exceeded {limit:g}); "
                         f"{len(partial)} samples before it are in .partial")
        self.time = time
        self.limit = limit
        self.partial = partial


# ----------------------------------------------------------------- data
def _as_runs(x: Any, name: str = "x") -> list[np.ndarray]:
    if isinstance(x, (list, tuple)):
        runs = list(x)
        if not runs:
            raise ValueError(f"{name} is an empty list of runs")
    else:
        arr = np.asarray(x)
        runs = list(arr) if arr.ndim == 3 else [arr]
    out = []
    for i, run in enumerate(runs):
        arr = np.asarray(run)
        if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
            raise TypeError(f"{name} run {i} must be numeric, got dtype {arr.dtype}")
        if arr.ndim != 2:
            raise ValueError(f"{name} run {i} must have shape (T, K), got {arr.shape}")
        arr = arr.astype(np.float64, copy=False)
        if not np.all(np.isfinite(arr)):
            bad = np.argwhere(~np.isfinite(arr))[0]
            raise ValueError(f"{name} run {i} holds a non-finite value at (sample, column) = "
                             f"{tuple(int(v) for v in bad)}")
        out.append(arr)
    dims = [r.shape[1] for r in out]
    if len(set(dims)) != 1:
        raise ValueError(f"all runs in {name} must have the same number of columns, got {dims}")
    return out


def _run_times(t: Any, runs: list[np.ndarray]) -> list[np.ndarray]:
    if np.ndim(t) == 0 and not isinstance(t, (list, tuple)):
        return [_times(t, len(r)) for r in runs]
    if len(runs) == 1 and not isinstance(t, (list, tuple)):
        return [_times(t, len(runs[0]))]
    if not isinstance(t, (list, tuple)) or len(t) != len(runs):
        raise ValueError(f"t must be a step, or one array of times per run ({len(runs)} runs)")
    return [_times(ti, len(r)) for ti, r in zip(t, runs)]


def _check_window(window: Any) -> tuple[float, float] | None:
    if window is None:
        return None
    try:
        start, stop = window
    except (TypeError, ValueError):
        raise ValueError(f"window must be None or (start, stop), got {window!r}") from None
    start = -math.inf if start is None else float(start)
    stop = math.inf if stop is None else float(stop)
    if not start < stop:
        raise ValueError(f"window must have start < stop, got {window!r}")
    return start, stop


def _in_window(times: np.ndarray, window: tuple[float, float] | None) -> np.ndarray:
    if window is None:
        return np.ones(times.shape, dtype=bool)
    return (times >= window[0]) & (times < window[1])


# -------------------------------------------------------------- library
def _quadratic_pairs(K: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(K)


def _library(X: np.ndarray, quadratic: bool) -> np.ndarray:
    """Columns: 1, x_1..x_K, then x_j x_k for j <= k (row-major)."""
    cols = [np.ones((X.shape[0], 1)), X]
    if quadratic:
        j, k = _quadratic_pairs(X.shape[1])
        cols.append(X[:, j] * X[:, k])
    return np.hstack(cols)


def _library_names(names: Sequence[str], quadratic: bool) -> list[str]:
    out = ["1", *names]
    if quadratic:
        j, k = _quadratic_pairs(len(names))
        out += [f"{names[a]}^2" if a == b else f"{names[a]} {names[b]}" for a, b in zip(j, k)]
    return out


def linear_solution(A: np.ndarray, b: np.ndarray, x0: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Exact solution of dx/dt = A x + b from x(t[0]) = x0 at times t.

    Uses the augmented exponential exp((t - t0) [[A, b], [0, 0]]), which is
    exact whether or not A is invertible (no regularising epsilon).

    Returns
    -------
    ndarray, shape (len(t), K)
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    K = A.shape[0]
    M = np.zeros((K + 1, K + 1))
    M[:K, :K] = A
    M[:K, K] = b
    t = np.asarray(t, dtype=float)
    z0 = np.append(np.asarray(x0, dtype=float), 1.0)
    props = expm((t - t[0])[:, None, None] * M)  # (n, K+1, K+1)
    return (props @ z0)[:, :K]


# ------------------------------------------------------------ estimators
class _ODERegression(BaseEstimator):
    """Shared fit / predict / score / simulate for polynomial-library ODEs."""

    _quadratic = False

    def __init__(self, regressor: str = "lasso", alpha: float = 0.01, derivative: str = "forward",
                 window: tuple[float | None, float | None] | None = None, debias: bool = False,
                 savgol_window: int = 11, savgol_order: int = 3, cv: int = 5, max_iter: int = 1000,
                 tol: float = 1e-4, blowup_factor: float = 1e3, n_jobs: int | None = None):
        self.regressor = regressor
        self.alpha = alpha
        self.derivative = derivative
        self.window = window
        self.debias = debias
        self.savgol_window = savgol_window
        self.savgol_order = savgol_order
        self.cv = cv
        self.max_iter = max_iter
        self.tol = tol
        self.blowup_factor = blowup_factor
        self.n_jobs = n_jobs

    # subclasses define the term mask (K, F) and whether b is fitted
    def _mask(self, K: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _default_simulation(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---------------------------------------------------------- checks
    def _check_params(self) -> None:
        if self.regressor not in REGRESSORS:
            raise ValueError(f"regressor must be one of {REGRESSORS}, got {self.regressor!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float, np.integer, np.floating)) \
                or not (np.isfinite(self.alpha) and self.alpha >= 0):
            raise ValueError(f"alpha must be a finite number >= 0, got {self.alpha!r}")
        if self.regressor == "lasso" and self.alpha == 0:
            raise ValueError("alpha must be > 0 for regressor='lasso' (use regressor='ols' for alpha = 0)")
        if self.derivative not in DERIVATIVES:
            raise ValueError(f"derivative must be one of {DERIVATIVES}, got {self.derivative!r}")
        if isinstance(self.cv, bool) or not isinstance(self.cv, (int, np.integer)) or self.cv < 2:
            raise ValueError(f"cv must be an int >= 2 (time-series folds), got {self.cv!r}")
        if self.n_jobs is not None and (isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, (int, np.integer))):
            raise ValueError(f"n_jobs must be None or an int, got {self.n_jobs!r}")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise ValueError(f"max_iter must be an int >= 1, got {self.max_iter!r}")
        if not (isinstance(self.blowup_factor, (int, float)) and self.blowup_factor > 1):
            raise ValueError(f"blowup_factor must be a number > 1, got {self.blowup_factor!r}")
        _check_window(self.window)

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit(x, t) first")

    def _pairs(self, x: Any, t: Any, window: Any) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """Stacked (states, derivatives) over all runs inside the window."""
        runs = _as_runs(x)
        if hasattr(self, "n_features_in_") and runs[0].shape[1] != self.n_features_in_:
            raise ValueError(f"x has {runs[0].shape[1]} columns, the model was fitted on {self.n_features_in_}")
        times = _run_times(self._time_arg(t), runs)
        win = _check_window(window)
        states, rates = [], []
        for i, (run, ti) in enumerate(zip(runs, times)):
            keep = _in_window(ti, win)
            if keep.sum() == 0:
                continue
            s, r = differentiate(run[keep], ti[keep], self.derivative,
                                 window_length=self.savgol_window, polyorder=self.savgol_order)
            states.append(s)
            rates.append(r)
        if not states:
            raise ValueError(f"no samples fall inside the window {window!r}")
        return np.vstack(states), np.vstack(rates), runs

    def _time_arg(self, t: Any) -> Any:
        if t is not None:
            return t
        dt = getattr(self, "dt_", 1.0)
        if dt is None:
            raise ValueError("t is required: the model was fitted on explicit sample times")
        return dt

    # --------------------------------------------------------------- fit
    def fit(self, x: Any, t: Any = None) -> "_ODERegression":
        """Fit the ODE to one or several sampled trajectories.

        Parameters
        ----------
        x : ndarray, shape (T, K), or list of such arrays (or an (R, T, K) array)
        t : float or ndarray of shape (T,) or list of arrays, optional
            Time step (default 1) or sample times of each run.

        Returns
        -------
        self
        """
        self._check_params()
        for attr in [a for a in vars(self) if a.endswith("_") and not a.startswith("_")]:
            delattr(self, attr)
        states, rates, runs = self._pairs(x, t, self.window)
        K = states.shape[1]
        mask = self._mask(K)
        Theta = _library(states, self._quadratic)
        n_params = int(mask.sum(axis=1).max())
        if states.shape[0] < n_params:
            raise ValueError(f"fewer samples ({states.shape[0]}) than parameters per equation ({n_params}); "
                             "give more samples, a wider window or a smaller model")
        coef = np.zeros((K, Theta.shape[1]))
        alphas = np.full(K, float(self.alpha) if self.regressor == "lasso" else 0.0)
        shared = bool(np.all(mask == mask[0]))
        if shared and self.regressor != "lasso_cv":
            coef[:] = self._regress(Theta, rates, mask[0])[0]
        else:
            results = Parallel(n_jobs=self.n_jobs)(
                delayed(self._regress)(Theta, rates[:, i : i + 1], mask[i]) for i in range(K))
            for i, (row, a) in enumerate(results):
                coef[i], alphas[i] = row, a
        self.coef_ = coef
        self.alphas_ = alphas
        self.n_features_in_ = K
        self.term_mask_ = mask
        self.n_samples_fit_ = int(states.shape[0])
        if t is None:
            self.dt_ = 1.0
        elif np.ndim(t) == 0 and not isinstance(t, (list, tuple)):
            self.dt_ = float(t)
        else:  # explicit times: later calls must pass theirs
            self.dt_ = None
        self.scale_ = float(max(np.max(np.abs(np.vstack(runs))), 1e-300))
        return self

    def _regress(self, Theta: np.ndarray, y: np.ndarray, allowed: np.ndarray) -> tuple[np.ndarray, float]:
        """Coefficients over the full library for the targets ``y`` (n, m)."""
        has_const = bool(allowed[0])
        cols = np.flatnonzero(allowed[1:]) + 1
        X = Theta[:, cols]
        alpha = 0.0
        if self.regressor == "ols":
            model = LinearRegression(fit_intercept=has_const).fit(X, y)
        elif self.regressor == "lasso":
            # the Gram matrix gives the same coordinate-descent iterates, cheaper when n > F
            model = Lasso(alpha=self.alpha, fit_intercept=has_const, max_iter=self.max_iter, tol=self.tol,
                          precompute=X.shape[0] > 2 * X.shape[1]).fit(X, y)
            alpha = float(self.alpha)
        else:
            # the exact Lasso path by LARS: on the collinear quadratic library,
            # coordinate descent over an alpha grid is ~5x slower and does not converge
            # LARS warns when it stops the path early at alphas far below any
            # that cross-validation could select; that is not a failure of this fit
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Early stopping the lars path", category=ConvergenceWarning)
                model = LassoLarsCV(cv=TimeSeriesSplit(n_splits=self.cv), fit_intercept=has_const,
                                    max_iter=max(self.max_iter, 500)).fit(X, y.ravel())
            alpha = float(model.alpha_)
        w = np.atleast_2d(model.coef_)
        b = np.atleast_1d(model.intercept_) if has_const else np.zeros(w.shape[0])
        if self.debias and self.regressor != "ols":
            for r in range(w.shape[0]):  # least squares on the selected support (relaxed Lasso)
                support = np.flatnonzero(w[r] != 0)
                refit = LinearRegression(fit_intercept=has_const).fit(X[:, support], y[:, r] if y.ndim > 1 else y)
                w[r] = 0.0
                w[r, support] = refit.coef_
                if has_const:
                    b[r] = refit.intercept_
        full = np.zeros((w.shape[0], Theta.shape[1]))
        full[:, cols] = w
        full[:, 0] = b
        return (full if y.shape[1] > 1 else full[0]), alpha

    # ----------------------------------------------------------- predict
    def _rhs(self, X: np.ndarray) -> np.ndarray:
        return _library(X, self._quadratic) @ self.coef_.T

    def predict(self, x: Any) -> np.ndarray | list[np.ndarray]:
        """dx/dt at the given states: (n, K) -> (n, K); a list gives a list."""
        self._check_fitted()
        runs = _as_runs(x)
        if runs[0].shape[1] != self.n_features_in_:
            raise ValueError(f"x has {runs[0].shape[1]} columns, the model was fitted on {self.n_features_in_}")
        out = [self._rhs(r) for r in runs]
        return out if isinstance(x, (list, tuple)) else (out[0] if np.ndim(x) == 2 else np.stack(out))

    def score(self, x: Any, t: Any = None, window: Any = None, multioutput: str = "uniform_average") -> float:
        """R^2 of the derivatives on the samples in ``window``.

        ``multioutput="uniform_average"`` (default) averages the R^2 of the
        columns, as ``sklearn.linear_model.Lasso.score`` in the reference
        analysis; "variance_weighted" pools them (1 - total SSE / total SS).
        """
        self._check_fitted()
        states, rates, _ = self._pairs(x, t, window)
        return float(r2_score(rates, self._rhs(states), multioutput=multioutput))

    # ---------------------------------------------------------- simulate
    def simulate(self, x0: Any, t: Any, method: str = "auto", rtol: float = 1e-8, atol: float = 1e-10
                 ) -> np.ndarray:
        """Integrate the fitted system from x0 at t[0].

        Parameters
        ----------
        x0 : ndarray, shape (K,)
        t : ndarray, shape (n,)
            Increasing output times; x0 is the state at t[0].
        method : {"auto", "exact", "ivp", "rollout"}
            "exact" (linear models only): augmented matrix exponential.
            "ivp": ``scipy.integrate.solve_ivp`` (LSODA, ``rtol``/``atol``).
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
        self._check_fitted()
        if method not in SIMULATION_METHODS:
            raise ValueError(f"method must be one of {SIMULATION_METHODS}, got {method!r}")
        x0 = np.asarray(x0, dtype=float)
        if x0.shape != (self.n_features_in_,):
            raise ValueError(f"x0 must have shape ({self.n_features_in_},), got {x0.shape}")
        if not np.all(np.isfinite(x0)):
            raise ValueError("x0 must be finite")
        t = np.asarray(t, dtype=float)
        times = _times(t, t.shape[0]) if t.ndim == 1 else None
        if times is None or len(times) < 1:
            raise ValueError(f"t must be a 1-D array of increasing times, got shape {t.shape}")
        if method == "auto":
            method = self._default_simulation()
        limit = self.blowup_factor * max(self.scale_, float(np.max(np.abs(x0))))
        if method == "exact":
            if self._quadratic:
                raise ValueError("method='exact' exists for linear models only; use 'ivp' or 'rollout'")
            out = linear_solution(self.coef_[:, 1 : self.n_features_in_ + 1], self.coef_[:, 0], x0, times)
        elif method == "rollout":
            if len(times) > 2 and not _is_uniform(times):
                raise ValueError("method='rollout' needs uniformly spaced times")
            dt = float(times[1] - times[0]) if len(times) > 1 else 0.0
            out = np.empty((len(times), x0.size))
            out[0] = x0
            with np.errstate(over="ignore", invalid="ignore"):
                for n in range(1, len(times)):
                    prev = out[n - 1]
                    out[n] = prev + dt * self._rhs(prev[None])[0]
                    if not np.all(np.isfinite(out[n])) or np.max(np.abs(out[n])) > limit:
                        out[n + 1 :] = np.nan
                        break
        else:
            def event(_t, y):
                return limit - np.max(np.abs(y))
            event.terminal = True
            with np.errstate(over="ignore", invalid="ignore"):
                sol = solve_ivp(lambda _t, y: self._rhs(y[None])[0], (times[0], times[-1]), x0, method="LSODA",
                                t_eval=times, rtol=rtol, atol=atol, events=event)
            out = np.full((len(times), x0.size), np.nan)
            out[: sol.y.shape[1]] = sol.y.T
            if sol.status == -1 and sol.y.shape[1] == len(times):  # integrator failure at the end
                out[-1] = np.nan
        bad = ~np.all(np.isfinite(out), axis=1) | (np.max(np.abs(np.nan_to_num(out, nan=np.inf)), axis=1) > limit)
        if np.any(bad):
            first = int(np.argmax(bad))
            raise BlowUpError(float(times[first]), limit, out[:first].copy())
        return out

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
        self._check_fitted()
        runs = _as_runs(x)
        times = _run_times(self._time_arg(t), runs)
        win = _check_window(window)
        observed, simulated = [], []
        for run, ti in zip(runs, times):
            keep = _in_window(ti, win)
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
        return float(r2_score(obs, np.vstack(simulated), multioutput=multioutput))

    # ------------------------------------------------------ description
    @property
    def sparsity_(self) -> float:
        """Share of the allowed coefficients that are exactly zero."""
        self._check_fitted()
        return float(np.mean(self.coef_[self.term_mask_] == 0))

    def feature_names(self, names: Sequence[str] | None = None) -> list[str]:
        """Names of the library terms (columns of ``coef_``)."""
        self._check_fitted()
        return _library_names(self._variable_names(names), self._quadratic)

    def _variable_names(self, names: Sequence[str] | None) -> list[str]:
        K = self.n_features_in_
        if names is None:
            return [f"x{i + 1}" for i in range(K)]
        names = [str(n) for n in names]
        if len(names) != K:
            raise ValueError(f"names must hold {K} entries, got {len(names)}")
        return names

    def named_coefficients(self, names: Sequence[str] | None = None, threshold: float = 0.0
                           ) -> dict[str, dict[str, float]]:
        """Coefficients with |value| > threshold as {equation variable: {term: value}}."""
        variables = self._variable_names(names)
        terms = self.feature_names(variables)
        return {v: {terms[j]: float(self.coef_[i, j]) for j in np.flatnonzero(np.abs(self.coef_[i]) > threshold)}
                for i, v in enumerate(variables)}

    def equations(self, names: Sequence[str] | None = None, precision: int = 3, threshold: float = 0.0
                  ) -> list[str]:
        """The fitted system, one readable line per equation (terms with
        |coefficient| <= threshold left out)."""
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


class LinearODE(_ODERegression):
    """dx/dt = A x + b fitted by least squares or Lasso.

    Parameters
    ----------
    regressor : {"ols", "lasso", "lasso_cv"}
        Plain least squares; Lasso(alpha) by coordinate descent; or Lasso
        with alpha chosen per equation by time-series cross-validation
        (``cv`` folds of ``sklearn.model_selection.TimeSeriesSplit`` over the
        stacked samples) on the exact regularisation path computed by LARS
        (``sklearn.linear_model.LassoLarsCV``).
    alpha : float >= 0
        Lasso penalty (sklearn's scaling: 1/(2n) ||y - X w||^2 + alpha ||w||_1).
        The intercept b is not penalised.
    derivative : {"forward", "central", "savgol"}
    window : (start, stop) or None
        Only samples with start <= t < stop (same units as t) enter fit.
    debias : bool
        Refit least squares on the Lasso's support (relaxed Lasso).
    savgol_window, savgol_order : int
        Savitzky-Golay window and polynomial order.
    cv : int
        Folds of ``lasso_cv``.
    max_iter, tol : coordinate-descent limits of the Lasso; the defaults are
        scikit-learn's (1000, 1e-4), as in the reference analysis.
    n_jobs : int, optional
        Worker processes for per-equation fits (``lasso_cv`` and the classic
        LV form); joblib semantics.
    blowup_factor : float > 1
        A simulation blows up when max |x| exceeds this times the largest
        |x| of the fitting data.

    Attributes
    ----------
    A_ : ndarray, shape (K, K)
    b_ : ndarray, shape (K,)
    coef_ : ndarray, shape (K, K + 1)
        [b | A]: columns are the terms ``1, x1..xK``.
    alphas_ : ndarray, shape (K,)
        Penalty used in each equation (0 for OLS).
    eigenvalues_ : ndarray of complex, shape (K,)
        Eigenvalues of A (stability: all real parts < 0).
    sparsity_ : float
    """

    _quadratic = False

    def _mask(self, K: int) -> np.ndarray:
        return np.ones((K, K + 1), dtype=bool)

    def _default_simulation(self) -> str:
        return "exact"

    @property
    def A_(self) -> np.ndarray:
        self._check_fitted()
        return self.coef_[:, 1:]

    @property
    def b_(self) -> np.ndarray:
        self._check_fitted()
        return self.coef_[:, 0]

    @property
    def eigenvalues_(self) -> np.ndarray:
        return np.linalg.eigvals(self.A_)

    @property
    def is_stable_(self) -> bool:
        """All eigenvalues of A have negative real part."""
        return bool(np.all(self.eigenvalues_.real < 0))


class LotkaVolterra(_ODERegression):
    """Generalised Lotka-Volterra system fitted by least squares or Lasso.

    Parameters
    ----------
    form : {"general", "classic"}
        "general": dx_i/dt = b_i + sum_j a_ij x_j + sum_{j<=k} beta_ijk x_j x_k
        (K + K(K+1)/2 terms plus b_i per equation). "classic":
        dx_i/dt = x_i (r_i + sum_j a_ij x_j) (K + 1 terms, no constant).
    regressor, alpha, derivative, window, debias, savgol_window, savgol_order, cv, max_iter, tol, blowup_factor, n_jobs
        As in :class:`LinearODE`.

    Attributes
    ----------
    coef_ : ndarray, shape (K, 1 + K + K(K+1)/2)
        Over the terms ``1, x_j, x_j x_k (j <= k)``; see :meth:`feature_names`.
    intercept_ : ndarray, shape (K,)           b_i
    linear_ : ndarray, shape (K, K)            a_ij (general form)
    quadratic_ : ndarray, shape (K, K, K)      beta_ijk for j <= k, 0 below
    growth_rates_ : ndarray, shape (K,)        r_i (classic form)
    interactions_ : ndarray, shape (K, K)      a_ij (classic form)
    """

    _quadratic = True

    def __init__(self, form: str = "general", regressor: str = "lasso", alpha: float = 0.01,
                 derivative: str = "forward", window: tuple[float | None, float | None] | None = None,
                 debias: bool = False, savgol_window: int = 11, savgol_order: int = 3, cv: int = 5,
                 max_iter: int = 1000, tol: float = 1e-4, blowup_factor: float = 1e3, n_jobs: int | None = None):
        self.form = form
        super().__init__(regressor=regressor, alpha=alpha, derivative=derivative, window=window, debias=debias,
                         savgol_window=savgol_window, savgol_order=savgol_order, cv=cv, max_iter=max_iter, tol=tol,
                         blowup_factor=blowup_factor, n_jobs=n_jobs)

    def _check_params(self) -> None:
        if self.form not in ("general", "classic"):
            raise ValueError(f"form must be 'general' or 'classic', got {self.form!r}")
        super()._check_params()

    def _mask(self, K: int) -> np.ndarray:
        j, k = _quadratic_pairs(K)
        F = 1 + K + len(j)
        if self.form == "general":
            return np.ones((K, F), dtype=bool)
        mask = np.zeros((K, F), dtype=bool)
        for i in range(K):
            mask[i, 1 + i] = True
            mask[i, 1 + K :] = (j == i) | (k == i)
        return mask

    def _default_simulation(self) -> str:
        return "ivp"

    @property
    def intercept_(self) -> np.ndarray:
        self._check_fitted()
        return self.coef_[:, 0]

    @property
    def linear_(self) -> np.ndarray:
        self._check_fitted()
        return self.coef_[:, 1 : 1 + self.n_features_in_]

    @property
    def quadratic_(self) -> np.ndarray:
        self._check_fitted()
        K = self.n_features_in_
        j, k = _quadratic_pairs(K)
        out = np.zeros((K, K, K))
        out[:, j, k] = self.coef_[:, 1 + K :]
        return out

    @property
    def growth_rates_(self) -> np.ndarray:
        """r_i of the classic form (the coefficient of x_i in equation i)."""
        return np.diag(self.linear_).copy()

    @property
    def interactions_(self) -> np.ndarray:
        """a_ij of the classic form (coefficient of x_i x_j in equation i)."""
        Q = self.quadratic_
        K = self.n_features_in_
        return np.array([[Q[i, min(i, j), max(i, j)] for j in range(K)] for i in range(K)])

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """Jacobian of the fitted right-hand side at state x, shape (K, K)."""
        x = np.asarray(x, dtype=float)
        Q = self.quadratic_
        return self.linear_ + np.einsum("ijk,k->ij", Q, x) + np.einsum("ikj,k->ij", Q, x)
