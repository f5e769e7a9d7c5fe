"""Regressors: coefficients of the library terms from (features, targets).

Every regressor solves ``Y ~ Theta @ coef.T`` equation by equation, with a
mask of the terms each equation may use, and returns coefficients in the
data's own units. With ``standardize=True`` (the default) each feature
column and each target is divided by its root mean square before any
penalty or threshold acts, so the same settings give the same fit whatever
the units or amplitude of the data (scale equivariance).

* :class:`STLSQ`: sequentially thresholded least squares (SINDy's sparse
  regression); the threshold acts on standardised coefficients.
* :class:`OLS`: least squares.
* :class:`Lasso`: L1-penalised least squares (scikit-learn's scaling).
* :class:`LassoCV`: Lasso with alpha chosen per equation by time-series
  cross-validation on the exact LARS path.

``"stlsq"``, ``"ols"``, ``"lasso"`` and ``"lasso_cv"`` are shortcuts.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso as _SkLasso
from sklearn.linear_model import LassoLarsCV
from sklearn.model_selection import TimeSeriesSplit

from particles.core.validation import check_array

from particles.core.validation import check_bool, check_float, check_int
from .names import REGRESSORS

__all__ = ["Regressor", "STLSQ", "OLS", "Lasso", "LassoCV", "REGRESSORS", "as_regressor"]



def _rms(a: np.ndarray) -> np.ndarray:
    return np.sqrt(np.mean(a * a, axis=0))


def standardised_scale(Theta: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """(m, F) factors that put coefficients on the standardised scale of
    :class:`STLSQ` (feature RMS / target RMS; 0 where the target is 0)."""
    sy = _rms(Y)
    return np.divide(_rms(Theta)[None, :], sy[:, None], out=np.zeros((Y.shape[1], Theta.shape[1])),
                     where=sy[:, None] > 0)


#: largest ``max_iter`` accepted (an iteration cap, not a budget: solvers
#: stop at convergence; scikit-learn stores it as a 32-bit unsigned int)
MAX_ITER = 10**9


class Regressor:
    """Base class. Subclasses implement :meth:`solve_one` on standardised data."""

    standardize = True
    fits_intercept = False  # uses the library's constant column as an unpenalised intercept
    #: what a regressor supports, declared here instead of being checked by type:
    #: ``unpenalised``: its coefficients are least squares on the terms it kept, so the
    #: covariance-weighted refit of the weak form may replace them (OLS, STLSQ)
    unpenalised = False
    #: ``plain_least_squares``: it is least squares on every allowed term, so ``debias=True``
    #: (a least-squares refit on the selected terms) has nothing to do (OLS)
    plain_least_squares = False

    def readmission(self, Theta: np.ndarray, Y: np.ndarray, mask: np.ndarray) -> dict:
        """Options of the covariance-weighted refit for terms this regressor
        pruned (``mask``, ``threshold``, ``eliminate``, ``term_scale``: see
        :func:`fitting.ode.weighted.covariance_refit`); ``{}`` when it prunes
        nothing the refit could readmit."""
        return {}

    def check(self) -> None:
        """Validate the parameters (called by the estimator's ``fit``)."""

    def check_rows(self, n: int) -> None:
        """Refuse, naming the parameter, settings that ``n`` regression rows cannot meet."""

    def fit(self, Theta: np.ndarray, Y: np.ndarray, mask: np.ndarray, intercept: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        """Coefficients (m, F) and the penalty used per equation (m,).

        Parameters
        ----------
        Theta : ndarray, shape (n, F)
        Y : ndarray, shape (n, m)
        mask : ndarray of bool, shape (m, F)
            Terms each equation may use.
        intercept : int or None
            Column of Theta that is the constant 1 on every row (pointwise
            formulations); regressors with ``fits_intercept`` leave it
            unpenalised.
        """
        self.check()
        Theta = check_array(Theta, "Theta", ndim=2, min_size=1)
        n, F = Theta.shape
        Y = check_array(Y, "Y", ndim=2)
        if Y.shape[0] != n or Y.shape[1] < 1:
            raise ValueError(f"Y must have shape ({n}, m) with m >= 1 (one row per row of Theta), got {Y.shape}")
        m = Y.shape[1]
        self.check_rows(n)
        mask = check_array(mask, "mask", dtype="bool", shape=(m, F))
        if intercept is not None:
            intercept = check_int(intercept, "intercept", 0, F - 1)
        coef = np.zeros((m, F))
        alphas = np.zeros(m)
        scale = _rms(Theta) if self.standardize else np.ones(F)
        live = scale > 0
        for i in range(m):
            cols = np.flatnonzero(mask[i] & live)
            if cols.size == 0:
                continue
            y = Y[:, i]
            sy = float(_rms(y[:, None])[0]) if self.standardize else 1.0
            if sy == 0:
                continue
            icol = None
            if intercept is not None and self.fits_intercept and intercept in cols:
                icol = int(np.flatnonzero(cols == intercept)[0])
            Xs = Theta[:, cols] / scale[cols]
            w, alphas[i] = self.solve_one(Xs, y / sy, icol)
            coef[i, cols] = w * sy / scale[cols]
        return coef, alphas

    def solve_one(self, X: np.ndarray, y: np.ndarray, intercept: int | None) -> tuple[np.ndarray, float]:
        raise NotImplementedError  # pragma: no cover

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


def _lstsq(X: np.ndarray, y: np.ndarray, ridge: float = 0.0) -> np.ndarray:
    if ridge > 0:
        n, F = X.shape
        G = X.T @ X / n + ridge * np.eye(F)
        return np.linalg.solve(G, X.T @ y / n)
    return np.linalg.lstsq(X, y, rcond=None)[0]


class OLS(Regressor):
    """Least squares on the allowed terms (standardised for conditioning only)."""

    unpenalised = True
    plain_least_squares = True

    def __init__(self, standardize: bool = True):
        self.standardize = standardize

    def check(self) -> None:
        check_bool(self.standardize, "standardize")

    def solve_one(self, X, y, intercept):
        return _lstsq(X, y), 0.0


class STLSQ(Regressor):
    """Sequentially thresholded least squares (Brunton, Proctor & Kutz 2016).

    Least squares, then repeatedly: terms whose standardised coefficient
    has magnitude below ``threshold`` are removed and the rest refitted,
    until the support stops changing; a final least-squares refit on the
    support removes the ridge bias.

    Parameters
    ----------
    threshold : float >= 0
        On the standardised scale: a term is kept when one RMS of its
        feature moves the target by at least ``threshold`` of the target's
        RMS. Scale-free; 0 gives least squares.
    ridge : float >= 0
        L2 penalty during thresholding (mean-squared-error scaling, on
        standardised features), for collinear libraries.
    max_iter : int in [1, MAX_ITER = 10**9]
    standardize : bool
        False thresholds raw coefficients (PySINDy's default behaviour).
    """

    unpenalised = True

    def __init__(self, threshold: float = 0.1, ridge: float = 0.0, max_iter: int = 20, standardize: bool = True):
        self.threshold = threshold
        self.ridge = ridge
        self.max_iter = max_iter
        self.standardize = standardize

    def readmission(self, Theta, Y, mask):
        # after a misfit, terms it pruned may return if they clear READMIT_SHARE of its bar on the refitted scale
        return {"mask": mask, "threshold": self.threshold, "eliminate": True,
                "term_scale": standardised_scale(Theta, Y) if self.standardize else None}

    def check(self) -> None:
        check_float(self.threshold, "STLSQ threshold", 0.0)
        check_float(self.ridge, "STLSQ ridge", 0.0)
        check_int(self.max_iter, "STLSQ max_iter", 1, MAX_ITER)
        check_bool(self.standardize, "standardize")

    def solve_one(self, X, y, intercept):
        F = X.shape[1]
        support = np.ones(F, dtype=bool)
        w = _lstsq(X, y, self.ridge)
        for _ in range(self.max_iter):
            keep = np.abs(w) >= self.threshold
            if not keep.any():
                return np.zeros(F), 0.0
            if np.array_equal(keep, support):
                break
            support = keep
            w = np.zeros(F)
            w[support] = _lstsq(X[:, support], y, self.ridge)
        w = np.zeros(F)
        w[support] = _lstsq(X[:, support], y)
        return w, float(self.threshold)


class Lasso(Regressor):
    """L1-penalised least squares by coordinate descent
    (:class:`sklearn.linear_model.Lasso`).

    Minimises 1/(2n) ||y - X w||^2 + alpha ||w||_1 on standardised data
    (``standardize=True``: features and target centred and divided by their
    standard deviation, so alpha is scale-free) or on the raw arrays
    (``standardize=False``: the survival paper's reference, alpha = 0.01).
    The constant term is an unpenalised intercept.
    """

    fits_intercept = True

    def __init__(self, alpha: float = 1e-3, standardize: bool = True, max_iter: int = 1000, tol: float = 1e-4):
        self.alpha = alpha
        self.standardize = standardize
        self.max_iter = max_iter
        self.tol = tol

    def check(self) -> None:
        check_float(self.alpha, "Lasso alpha", 0.0, strict=True)
        check_int(self.max_iter, "Lasso max_iter", 1, MAX_ITER)
        check_float(self.tol, "Lasso tol", 0.0, strict=True)
        check_bool(self.standardize, "standardize")

    def _model(self, has_intercept: bool):
        return _SkLasso(alpha=self.alpha, fit_intercept=has_intercept, max_iter=self.max_iter, tol=self.tol)

    def solve_one(self, X, y, intercept):
        rest = np.arange(X.shape[1]) if intercept is None else np.delete(np.arange(X.shape[1]), intercept)
        Z = X[:, rest]
        if self.standardize and intercept is not None:  # centred columns: rescale to unit standard deviation
            sd = Z.std(axis=0)
            sd[sd == 0] = 1.0
            sy = float(y.std()) or 1.0
        else:
            sd, sy = np.ones(Z.shape[1]), 1.0
        model = self._model(intercept is not None)
        if "precompute" in model.get_params():  # a coordinate-descent solver that can use the Gram matrix
            model.set_params(precompute=Z.shape[0] > 2 * Z.shape[1])  # same iterates, cheaper when n > F
        model.fit(Z / sd, y / sy)
        w = np.zeros(X.shape[1])
        w[rest] = model.coef_ * sy / sd
        if intercept is not None:
            w[intercept] = model.intercept_ * sy
        chosen = getattr(model, "alpha_", None)  # LassoCV's choice
        return w, float(self.alpha if chosen is None else chosen)


class LassoCV(Lasso):
    """Lasso with alpha per equation from time-series cross-validation.

    The exact regularisation path by LARS
    (:class:`sklearn.linear_model.LassoLarsCV`) with ``cv`` folds of ``TimeSeriesSplit`` over the stacked
    rows; on collinear polynomial libraries coordinate descent over an alpha
    grid is slower and does not converge.
    """

    def __init__(self, cv: int = 5, standardize: bool = True, max_iter: int = 1000):
        self.cv = cv
        self.standardize = standardize
        self.max_iter = max_iter

    def check(self) -> None:
        check_int(self.cv, "LassoCV cv", 2)
        check_int(self.max_iter, "LassoCV max_iter", 1, MAX_ITER)
        check_bool(self.standardize, "standardize")

    def check_rows(self, n: int) -> None:
        cv = check_int(self.cv, "LassoCV cv", 2)
        if cv + 1 > n:
            raise ValueError(f"LassoCV cv={cv} needs at least cv + 1 = {cv + 1} regression rows (time-series "
                             f"folds), got {n}; lower cv or give more samples")

    def _model(self, has_intercept: bool):
        return _QuietLassoLarsCV(cv=TimeSeriesSplit(n_splits=self.cv), fit_intercept=has_intercept,
                                 max_iter=max(self.max_iter, 500))


class _QuietLassoLarsCV(LassoLarsCV):
    # LARS warns when it stops the path early at alphas far below any that
    # cross-validation could select; that is not a failure of the fit
    def fit(self, X, y, **kw):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Early stopping the lars path", category=ConvergenceWarning)
            return super().fit(X, y, **kw)


def as_regressor(regressor: Regressor | str, alpha: float | None = None) -> Regressor:
    """A regressor from an object or a shortcut name.

    ``alpha`` (optional) sets the shortcut's penalty: Lasso's alpha or
    STLSQ's threshold.
    """
    if isinstance(regressor, Regressor):
        return regressor
    if not isinstance(regressor, str) or regressor not in REGRESSORS:
        raise ValueError(f"regressor must be a Regressor or one of {REGRESSORS}, got {regressor!r}")
    if regressor == "ols":
        return OLS()
    if regressor == "lasso_cv":
        return LassoCV()
    if regressor == "lasso":
        return Lasso() if alpha is None else Lasso(alpha=alpha)
    return STLSQ() if alpha is None else STLSQ(threshold=alpha)

