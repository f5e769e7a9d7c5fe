"""Fitness measures: what predicts which circles survive (docs/fitting.md, signals).

Runs are rows, frequencies are columns throughout: ``signals`` of several
runs is a list of (T, K) arrays or one (R, T, K) array, ``survived`` an
(R, K) boolean array.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from particles.datasets import make_rng
from particles.core.validation import check_array, check_float, check_int

from ..ode.data import as_runs
from ..signals import surviving_frequencies

__all__ = [
    "initial_signal",
    "initial_gradient",
    "survival_rate",
    "fitness_correlation",
    "survival_classifier",
    "SurvivalClassifierResult",
    "survival_table",
]


def _signal_runs(signals: Any, name: str = "signals") -> np.ndarray:
    """(R, T, K) float array from one (T, K) run, a list of runs or an (R, T, K) array."""
    runs = as_runs(signals, name)
    shapes = {r.shape for r in runs}
    if len(shapes) != 1:
        raise ValueError(f"{name} must be (T, K) arrays of one shape, got shapes {sorted(shapes)}")
    return np.stack(runs)


def _is_single_run(signals: Any) -> bool:
    return not isinstance(signals, (list, tuple)) and np.ndim(signals) == 2


def initial_signal(signals: Any) -> np.ndarray:
    """S_k(0) of each run: shape (K,) for one run, (R, K) for several."""
    arr = _signal_runs(signals)
    out = arr[:, 0, :]
    return out[0] if _is_single_run(signals) else out


def initial_gradient(signals: Any, step: int = 4) -> np.ndarray:
    """Relative early growth (S_k(t+1) - S_k(t)) / S_k(0) at step ``t = step``.

    Returns shape (K,) for one run, (R, K) for several.
    """
    arr = _signal_runs(signals)
    T = arr.shape[1]
    if T < 2:
        raise ValueError(f"signals must hold at least 2 samples for a gradient, got {T}")
    step = check_int(step, "step", 0, T - 2)
    s0 = arr[:, 0, :]
    if np.any(s0 <= 0):
        raise ValueError("initial signals must be > 0 to normalise the gradient")
    out = (arr[:, step + 1, :] - arr[:, step, :]) / s0
    return out[0] if _is_single_run(signals) else out


def survival_rate(survived: Any) -> np.ndarray:
    """Share of runs in which each frequency survived, shape (K,)."""
    arr = check_array(survived, "survived", dtype="bool", ndim=2)
    if arr.shape[0] < 1:
        raise ValueError("survived must hold at least one run (row)")
    return arr.mean(axis=0)


def fitness_correlation(rate: Any, signal: Any) -> tuple[float, float]:
    """Pearson r (and two-sided p-value, :func:`scipy.stats.pearsonr`) between
    survival rate and a fitness measure.

    Both arrays are flattened, so per-frequency (K,) arrays or per-run
    (R, K) arrays both work.
    """
    x = check_array(rate, "rate").ravel()
    y = check_array(signal, "signal").ravel()
    if x.shape != y.shape or x.size < 3:
        raise ValueError(f"rate and signal need the same size >= 3, got {x.size} and {y.size}")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("rate and signal must both vary for a correlation to be defined")
    res = stats.pearsonr(x, y)
    return float(res.statistic), float(res.pvalue)


@dataclass(frozen=True)
class SurvivalClassifierResult:
    """A linear SVM separating surviving from dead frequencies.

    Attributes
    ----------
    model : sklearn Pipeline (StandardScaler + LinearSVC)
    train_accuracy, test_accuracy : float
        Accuracy on the training part and on the held-out part.
    n_train, n_test : int
    majority_baseline : float
        Held-out accuracy of always predicting the larger class of the
        training part (what the SVM must beat).
    """

    model: Any
    train_accuracy: float
    test_accuracy: float
    n_train: int
    n_test: int
    majority_baseline: float


#: accepted SVM regularisation C: liblinear's solver takes seconds at C = 1e-8
#: and does not finish at extreme values (1e-300, 1e300)
C_RANGE = (1e-6, 1e6)


def survival_classifier(features: Any, survived: Any, test_size: float = 0.25,
                        rng: np.random.Generator | int | None = 0, C: float = 1.0) -> SurvivalClassifierResult:
    """Linear SVM on fitness features (e.g. signal and gradient) predicting survival.

    Parameters
    ----------
    features : ndarray, shape (n, f)
        One row per (run, frequency), e.g.
        ``np.column_stack([initial_signal(...).ravel(), initial_gradient(...).ravel()])``.
    survived : ndarray of bool, shape (n,) or anything that ravels to it
    test_size : float in (0, 1)
        Share held out (stratified).
    rng : Generator or int seed
        Controls the split.
    C : float in [1e-6, 1e6]
        Inverse regularisation of the linear SVM (``C_RANGE``).
    """
    X = check_array(features, "features", ndim=(1, 2))
    if X.ndim == 1:
        X = X[:, None]
    y = check_array(survived, "survived", dtype="bool", ndim=(1, 2)).ravel()
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"features must be (n, f) with n = {y.shape[0]} rows (one per survived entry), "
                         f"got {X.shape}")
    test_size = check_float(test_size, "test_size", 0.0, 1.0, strict=True)
    C = check_float(C, "C", C_RANGE[0], C_RANGE[1])
    counts = np.bincount(y.astype(int), minlength=2)
    if counts.min() < 2:
        raise ValueError(f"need at least 2 survivors and 2 dead frequencies, got {counts[1]} and {counts[0]}")
    seed = int(make_rng(rng, "rng").integers(2**31 - 1))
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)
    model = make_pipeline(StandardScaler(), LinearSVC(C=C, random_state=seed))
    model.fit(X_tr, y_tr)
    majority = bool(y_tr.mean() >= 0.5)
    return SurvivalClassifierResult(
        model=model,
        train_accuracy=float(model.score(X_tr, y_tr)),
        test_accuracy=float(model.score(X_te, y_te)),
        n_train=int(len(y_tr)),
        n_test=int(len(y_te)),
        majority_baseline=float(np.mean(y_te == majority)),
    )


def survival_table(signals: Sequence[np.ndarray], dcs: Sequence[Any], factor: float = 2.0,
                   step: int = 4) -> dict[str, np.ndarray]:
    """Everything the survival analysis needs from several runs.

    Parameters
    ----------
    signals : list of (T, K) arrays (or an (R, T, K) array)
    dcs : list of DC signals (scalars or (T,) series), one per run
    factor, step : see :func:`surviving_frequencies` and :func:`initial_gradient`

    Returns
    -------
    dict with ``survived`` (R, K) bool, ``initial_signal`` (R, K),
    ``initial_gradient`` (R, K), ``survival_rate`` (K,), ``n_survivors`` (R,)
    """
    arr = _signal_runs(signals)
    if isinstance(dcs, str) or not isinstance(dcs, (list, tuple, np.ndarray)):
        raise TypeError(f"dcs must be a list of DC signals, one per run, got {type(dcs).__name__}")
    if any(dc is None for dc in dcs):
        raise ValueError("dcs must hold a DC signal for every run, got None")
    if len(dcs) != arr.shape[0]:
        raise ValueError(f"dcs must hold one entry per run ({arr.shape[0]}), got {len(dcs)}")
    survived = np.stack([surviving_frequencies(run, factor, dc=dc) for run, dc in zip(arr, dcs)])
    return {
        "survived": survived,
        "initial_signal": arr[:, 0, :],
        "initial_gradient": initial_gradient(list(arr), step=step),
        "survival_rate": survival_rate(survived),
        "n_survivors": survived.sum(axis=1),
    }
