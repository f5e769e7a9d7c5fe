"""The Lotka-Volterra forms of the ODE estimator: :class:`LotkaVolterra`
(general, classic, logistic)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from sklearn.utils.validation import check_is_fitted

from particles.core.validation import check_array

from .differentiation import Formulation
from .inputs import RegressionRows, store_params
from .library import Library, PolynomialLibrary
from .names import LV_FORMS
from .regression import Regressor
from .quality import warn_quality
from .base import ODEModel

__all__ = ["LotkaVolterra"]


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
        store_params(self, locals())

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
