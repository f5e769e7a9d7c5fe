"""Experiments of the effective theory that the CLI and docs run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from particles.datasets import addition, make_rng
from particles.effective import simulate_effective, spread
from particles.core.validation import check_array, check_float, check_int

from .linalg import degeneracy, predicted_steps
from .metrics import rqi_series

__all__ = ["StepsComparison", "compare_steps", "MAX_STEPS_P"]

#: largest p of :func:`compare_steps` (its addition table has p(p+1)/2 pairs
#: and every training set runs up to ``max_steps`` steps of the flow)
MAX_STEPS_P = 1000


@dataclass(frozen=True)
class StepsComparison:
    """Predicted 1/(l3 eta) (l3 of l_eff = eigenvalue of H0 / Z) against the
    measured first step with RQI > 0.95, over random training sets with n0 = 2."""

    fractions: np.ndarray
    predicted: np.ndarray
    measured: np.ndarray

    @property
    def ratio(self) -> np.ndarray:
        return self.measured / self.predicted


def compare_steps(p: int = 10, fractions=(0.5, 0.6, 0.7, 0.8, 0.9, 1.0), sets: int = 10, eta: float = 0.5,
                  max_steps: int = 20_000, seed: int = 0, callback=None) -> StepsComparison:
    """Effective-loss flow from E ~ U(-1/2, 1/2)^(p x 2) on random addition
    training sets with a unique structure; records steps to RQI > 0.95 on
    the full dataset.

    ``callback(done, total)``, if given, is called after each training set
    (total: ``len(fractions) * sets``); the result does not depend on it."""
    p = check_int(p, "p", 3, MAX_STEPS_P)
    fractions = check_array(fractions, "fractions", ndim=1, min_size=1, low=0.0, high=1.0)
    sets = check_int(sets, "sets", 1, 100_000)
    eta = check_float(eta, "eta", 0.0, None, strict=True)
    max_steps = check_int(max_steps, "max_steps", 1, 10**9)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    rng = make_rng(seed)
    total = len(fractions) * sets
    if callback is not None:
        callback(0, total)
    data = addition(p)
    fr, pred, meas = [], [], []
    for i, f in enumerate(fractions):
        done = 0
        attempts = 0
        while done < sets and attempts < 50 * sets:
            attempts += 1
            train, _ = data.split(float(f), rng)
            if degeneracy(train) != 2:
                continue
            E0 = rng.uniform(-0.5, 0.5, (p, 2))
            traj = simulate_effective(E0, train, steps=max_steps, dt=eta, record_every=1)
            quality = rqi_series(traj.embeddings, data)
            hit = np.flatnonzero(quality > 0.95)
            if hit.size == 0:
                continue
            fr.append(f)
            pred.append(predicted_steps(train, eta, Z=spread(E0)))
            meas.append(float(traj.snapshot_steps[hit[0]]))
            done += 1
            if callback is not None:
                callback(i * sets + done, total)
        if callback is not None and done < sets:  # a fraction that found fewer sets than asked counts as done
            callback((i + 1) * sets, total)
    return StepsComparison(np.array(fr), np.array(pred), np.array(meas))


@dataclass(frozen=True)
class DigitsCollapse:
    """Classification-variant flow on scikit-learn's digits (1797 samples)."""

    trajectory: object
    labels: np.ndarray
    within_share: np.ndarray  # within-class sum of squares / Z, per snapshot


def within_class_share(E: np.ndarray, labels: np.ndarray) -> float:
    """Within-class sum of squared deviations over the total (Z)."""
    total = spread(E)
    within = sum(float(np.sum((E[labels == c] - E[labels == c].mean(axis=0)) ** 2)) for c in np.unique(labels))
    return within / total


def digits_collapse(steps: int = 200, seed: int = 0, record_every: int = 2) -> DigitsCollapse:
    """Embed the digits (64 pixels) to 2-D by a seeded random linear map and
    run the classification-variant flow with projection (Z fixed). The step
    is eta = 0.05 Z / lambda_max(H0), a fortieth of explicit Euler's
    stability limit, so the collapse is resolved over ~100 steps."""
    from sklearn.datasets import load_digits

    from particles.effective import EffectiveLoss

    X, y = load_digits(return_X_y=True)
    rng = make_rng(seed)
    E0 = X @ rng.standard_normal((X.shape[1], 2)) / np.sqrt(X.shape[1])
    loss = EffectiveLoss.classification(y)
    # L = sum over classes of (n_c I - 1 1^T) on the class block: largest eigenvalue max n_c
    lam_max = 2.0 * np.bincount(y).max() / loss.n_constraints
    eta = 0.05 * spread(E0) / lam_max
    traj = simulate_effective(E0, loss, steps=steps, dt=eta, project=True, record_every=record_every,
                              meta={"dataset": "sklearn.datasets.load_digits", "seed": int(seed)})
    share = np.array([within_class_share(E, y) for E in traj.embeddings])
    return DigitsCollapse(trajectory=traj, labels=y, within_share=share)
