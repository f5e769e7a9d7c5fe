"""Time the ODE fits on a survival-paper-sized problem.

Data: 29 signals x 1000 steps (p = 59), generated from a sparse stable
linear system at the survival MLP's scale (signals ~ 100, time scale
~ 300 steps) plus 0.1 % noise, so the run needs no torch.

1. LinearODE(Lasso, alpha = 0.01, forward differences) against the
   reference pipeline it reproduces: ``np.diff`` + ``sklearn Lasso`` with
   default settings on the raw arrays.
2. The general Lotka-Volterra model (29 + 435 = 464 terms per equation)
   with alpha chosen per equation by time-series cross-validation (LARS
   path, all cores), against one Lasso(alpha = 0.01) with default settings
   on the same 464 features (the reference's LV fit, which stops at
   sklearn's 1000-iteration limit on these collinear features).

    python benchmarks/bench_fitting.py [--quick]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso
from sklearn.preprocessing import PolynomialFeatures

from _timing import best_time
from fitting import LinearODE, LotkaVolterra, linear_solution


def survival_like_signals(K: int = 29, T: int = 1000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = -np.diag(rng.uniform(1 / 600, 1 / 150, K))
    for _ in range(2 * K):
        i, j = rng.choice(K, 2, replace=False)
        A[i, j] = rng.normal(scale=1 / 1500)
    A -= max(0.0, np.linalg.eigvals(A).real.max() + 1e-4) * np.eye(K)
    b = rng.uniform(0.0, 0.3, K)
    x = linear_solution(A, b, rng.uniform(60, 120, K), np.arange(T, dtype=float))
    return x * (1 + 1e-3 * rng.standard_normal(x.shape))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, fewer LV equations (CI smoke run)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    x = survival_like_signals()
    K = x.shape[1]
    repeats = 2 if args.quick else 5

    ours = LinearODE("lasso", alpha=0.01, derivative="forward")
    t_ours = best_time(lambda: ours.fit(x), repeats)

    def reference():
        return Lasso(alpha=0.01).fit(x[:-1], np.diff(x, axis=0))

    t_ref = best_time(reference, repeats)
    ref_model = reference()
    gap = max(np.abs(ours.A_ - ref_model.coef_).max(), np.abs(ours.b_ - ref_model.intercept_).max())
    print(f"linear ODE, Lasso alpha = 0.01, {K} signals x {len(x)} steps (forward differences)")
    print(f"  LinearODE.fit:                     {t_ours * 1e3:9.1f} ms  (derivative R^2 {ours.score(x):.4f})")
    print(f"  reference np.diff + sklearn Lasso: {t_ref * 1e3:9.1f} ms  (max coefficient difference {gap:.1e})")
    print(f"  ratio ours / reference:            {t_ours / t_ref:9.2f}x")

    cols = x if not args.quick else x[:, :8]
    k = cols.shape[1]
    n_terms = k + k * (k + 1) // 2
    lv = LotkaVolterra("general", regressor="lasso_cv", cv=5, derivative="forward", n_jobs=-1)
    start = time.perf_counter()
    lv.fit(cols)
    t_cv = time.perf_counter() - start
    features = PolynomialFeatures(2, include_bias=False).fit_transform(cols[:-1])
    assert features.shape[1] == n_terms
    start = time.perf_counter()
    Lasso(alpha=0.01).fit(features, np.diff(cols, axis=0))
    t_single = time.perf_counter() - start
    print(f"general Lotka-Volterra, {k} signals, {n_terms} terms per equation + constant")
    print(f"  lasso_cv (LARS path, 5 time-series folds, per equation, all cores): {t_cv:8.2f} s "
          f"(median alpha {np.median(lv.alphas_):.3g}, derivative R^2 {lv.score(cols):.4f}, "
          f"{np.count_nonzero(lv.coef_)} non-zero of {lv.coef_.size})")
    print(f"  one Lasso alpha = 0.01 on the same features (reference):           {t_single:8.2f} s")
    print(f"  ratio cross-validated / single fit: {t_cv / t_single:.1f}x")


if __name__ == "__main__":
    main()
