"""Bootstrap ensembles: coefficient intervals, inclusion probabilities and
simulation bands for any of the ODE estimators.

Regression rows are built once; each member refits on rows (or whole runs)
drawn with replacement. Resampling runs respects the correlation of the
rows within a run and is the choice when there are several runs;
resampling rows is E-SINDy's "bragging" (Fasel et al. 2022).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted

from particles.core.validation import check_array, check_float

from particles.core.validation import check_int
from .integrate import BlowUpError
from .base import ODEModel
from .linear import LinearODE

__all__ = ["BootstrapEnsemble", "EnsembleSimulation"]


@dataclass
class EnsembleSimulation:
    """Result of :meth:`BootstrapEnsemble.simulate`.

    ``median``, ``low`` and ``high`` have shape (n, K); ``low``/``high``
    are the ensemble's (1 - confidence)/2 and (1 + confidence)/2 quantiles
    over the members that did not blow up (``n_blown_up`` of them did).
    """

    t: np.ndarray
    median: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_members: int
    n_blown_up: int


#: most bootstrap members (each is a full fit)
MAX_MODELS = 100_000


class BootstrapEnsemble(BaseEstimator):
    """Bootstrap an ODE estimator.

    Parameters
    ----------
    estimator : ODEModel, LinearODE or LotkaVolterra, optional
        The (unfitted) model to bootstrap; default ``LinearODE()``.
    n_models : int in [2, MAX_MODELS = 100 000]
        Ensemble members.
    resample : {"auto", "rows", "runs"}
        What is drawn with replacement: regression rows, or whole runs
        ("auto": runs when there are at least 20, rows otherwise; with few
        runs the run bootstrap gave too narrow intervals in our tests).
    confidence : float in (0, 1)
        Width of the intervals and bands.
    random_state : int or None

    Attributes
    ----------
    estimator_ : the estimator fitted on all data
    coef_samples_ : ndarray, shape (n_models, K, F)
    coef_ : ndarray, shape (K, F)        median over members
    coef_interval_ : ndarray, shape (2, K, F)
    inclusion_probability_ : ndarray, shape (K, F)
        Share of members in which each term is non-zero.
    resample_ : str
    """

    def __init__(self, estimator: ODEModel | None = None, n_models: int = 50, resample: str = "auto",
                 confidence: float = 0.95, random_state: int | None = None):
        self.estimator = estimator
        self.n_models = n_models
        self.resample = resample
        self.confidence = confidence
        self.random_state = random_state

    def _check(self) -> ODEModel:
        est = LinearODE() if self.estimator is None else self.estimator
        if not isinstance(est, ODEModel):
            raise TypeError(f"estimator must be an ODEModel (LinearODE, LotkaVolterra, ...), got {type(est).__name__}")
        check_int(self.n_models, "n_models", 2, MAX_MODELS)
        if self.resample not in ("auto", "rows", "runs"):
            raise ValueError(f"resample must be 'auto', 'rows' or 'runs', got {self.resample!r}")
        check_float(self.confidence, "confidence", 0.0, 1.0, strict=True)
        check_int(self.random_state, "random_state", 0, allow_none=True)
        return est

    def fit(self, x: Any, t: Any = None) -> "BootstrapEnsemble":
        """Fit the estimator on all data and ``n_models`` bootstrap replicates."""
        est = clone(self._check())
        library, regressor, formulation = est.resolved_params()
        if getattr(formulation, "weighting", "none") != "none":
            # members refit resampled rows, which the covariance weighting (built
            # run by run) cannot follow: the whole ensemble, estimator_ included,
            # uses unweighted weak rows so that its intervals describe one estimator
            unweighted = copy.copy(formulation)
            unweighted.weighting = "none"
            est.set_params(derivative=unweighted)
            library, regressor, formulation = est.resolved_params()
        Theta, Y, _, owner, formulation, _ = est.fit_with_rows(x, t)  # the rows the fit solved, built once
        n_runs = len(np.unique(owner))
        mode = self.resample if self.resample != "auto" else ("runs" if n_runs >= 20 else "rows")
        if mode == "runs" and n_runs < 2:
            raise ValueError("resample='runs' needs at least 2 runs inside the window; use resample='rows'")
        rng = np.random.default_rng(self.random_state)
        ids = np.unique(owner)
        samples = []
        for _ in range(self.n_models):
            if mode == "rows":
                pick = rng.integers(0, len(Theta), len(Theta))
            else:
                chosen = rng.choice(ids, size=len(ids), replace=True)
                pick = np.concatenate([np.flatnonzero(owner == r) for r in chosen])
            coef, _, _ = est.solve_rows(Theta[pick], Y[pick], library, regressor, formulation)
            samples.append(coef)
        self.estimator_ = est
        self.coef_samples_ = np.stack(samples)
        q = [(1 - self.confidence) / 2, (1 + self.confidence) / 2]
        self.coef_ = np.median(self.coef_samples_, axis=0)
        self.coef_interval_ = np.quantile(self.coef_samples_, q, axis=0)
        self.inclusion_probability_ = np.mean(self.coef_samples_ != 0, axis=0)
        self.resample_ = mode
        return self

    def member(self, i: int) -> ODEModel:
        """Ensemble member i as a fitted estimator."""
        check_is_fitted(self, "coef_samples_")
        i = check_int(i, "i", 0, len(self.coef_samples_) - 1)
        m = copy.copy(self.estimator_)
        m.coef_ = self.coef_samples_[i]
        return m

    def predict(self, x: Any) -> np.ndarray:
        """Median over members of dx/dt at the states x, shape (n, K)."""
        check_is_fitted(self, "coef_samples_")
        return np.median(np.stack([self.member(i).predict(x) for i in range(self.n_models)]), axis=0)

    def simulate(self, x0: Any, t: Any, method: str = "auto") -> EnsembleSimulation:
        """Simulate every member from x0; median and band over members that stay bounded."""
        check_is_fitted(self, "coef_samples_")
        x0 = check_array(x0, "x0", shape=(self.coef_samples_.shape[1],))
        t = check_array(t, "t", ndim=1, min_size=1)
        sims, blown = [], 0
        for i in range(self.n_models):
            try:
                sims.append(self.member(i).simulate(x0, t, method=method))
            except BlowUpError:
                blown += 1
        if not sims:
            raise BlowUpError(float(t[0]), float("nan"), np.empty((0, len(np.atleast_1d(x0)))))
        S = np.stack(sims)
        q = [(1 - self.confidence) / 2, (1 + self.confidence) / 2]
        lo, hi = np.quantile(S, q, axis=0)
        return EnsembleSimulation(t=t, median=np.median(S, axis=0), low=lo, high=hi, n_members=self.n_models,
                                  n_blown_up=blown)

    def intervals(self, names=None, threshold: float = 0.5) -> dict[str, dict[str, tuple[float, float, float]]]:
        """{variable: {term: (low, high, inclusion probability)}} for terms
        included in more than ``threshold`` of the members."""
        check_is_fitted(self, "coef_samples_")
        threshold = check_float(threshold, "threshold", 0.0, 1.0)
        variables = self.estimator_.variable_names(names)
        terms = self.estimator_.feature_names(variables)
        out = {}
        for i, v in enumerate(variables):
            out[v] = {terms[j]: (float(self.coef_interval_[0, i, j]), float(self.coef_interval_[1, i, j]),
                                 float(self.inclusion_probability_[i, j]))
                      for j in np.flatnonzero(self.inclusion_probability_[i] > threshold)}
        return out
