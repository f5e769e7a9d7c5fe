"""The survival paper's ODE analysis in one call, plus a stronger report.

Reference (docs/fitting.md, ODE fits): the first 1000 steps of the raw signals,
forward differences with dt = 1, Lasso(alpha = 0.01) and least squares,
in-sample R^2 of the differences. We add what the reference does not
measure: the R^2 of the simulated trajectory (exact solution and discrete
rollout) in sample and on the following, held-out steps; the sparsity of
A; and its stability.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
import warnings
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from particles.trajectory import Trajectory
from particles.core.validation import check_array, check_float, check_int

from ..ode import BlowUpError, Lasso, LinearODE
from ..ode.derivatives import is_uniform
from ..signals import trajectory_signals

__all__ = ["ODEAnalysis", "survival_ode_analysis"]


def _eigen_text(value: float, stable: bool) -> str:
    """The largest real part and its verdict, in words that agree with the warnings (no "-0 (unstable)")."""
    value = float(value) + 0.0  # -0.0 -> 0.0
    if stable:
        return f"{value:.3g} (stable)"
    if value == 0.0:
        return "0 (not stable: an eigenvalue on the imaginary axis, e.g. a row of A the Lasso set to zero)"
    return f"{value:.3g} (unstable: grows without bound)"


@dataclass
class ODEAnalysis:
    """Result of :func:`survival_ode_analysis`.

    R^2 values are uniform averages over frequencies. A trajectory R^2 is
    ``None`` when the simulation blew up (``notes`` says where) or, for the
    held-out part, when the data end at the fitting window.
    """

    n_steps: int
    alpha: float
    n_frequencies: int
    lasso_r2: float
    ols_r2: float
    lasso_nonzero: int
    lasso_sparsity: float
    max_real_eigenvalue: float
    stable: bool
    trajectory_r2: float | None
    rollout_r2: float | None
    heldout_r2: float | None
    heldout_window: tuple[int, int] | None
    notes: list[str] = field(default_factory=list)
    lasso: LinearODE | None = field(default=None, repr=False)
    ols: LinearODE | None = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers (no models), e.g. for JSON."""
        out = asdict(self)
        out.pop("lasso")
        out.pop("ols")
        return out

    def summary(self) -> str:
        def fmt(v):
            return "blew up / n.a." if v is None else f"{v:.4f}"

        lines = [
            f"linear ODE on the first {self.n_steps} steps of {self.n_frequencies} signals",
            f"  derivative R^2, Lasso alpha={self.alpha:g} (reference): {self.lasso_r2:.4f}",
            f"  derivative R^2, least squares:                  {self.ols_r2:.4f}",
            f"  Lasso non-zero entries of A and b: {self.lasso_nonzero} "
            f"({100 * self.lasso_sparsity:.1f} % of the entries are zero)",
            f"  max Re eigenvalue of A, Lasso (reference): {_eigen_text(self.max_real_eigenvalue, self.stable)}",
            *([f"  max Re eigenvalue of A, least squares:     {_eigen_text(self.ols.eigenvalues_.real.max(), self.ols.is_stable_)}"]
              if self.ols is not None else []),
            f"  trajectory R^2 in sample (exact solution): {fmt(self.trajectory_r2)}",
            f"  trajectory R^2 in sample (discrete rollout): {fmt(self.rollout_r2)}",
        ]
        if self.heldout_window is not None:
            lines.append(f"  trajectory R^2 held out, steps {self.heldout_window[0]}-{self.heldout_window[1]}: "
                         f"{fmt(self.heldout_r2)}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def survival_ode_analysis(signals: Any, steps: Any = None, n_steps: int = 1000, alpha: float = 0.01,
                          holdout_steps: int | None = None) -> ODEAnalysis:
    """Fit dx/dt = A x + b to signal trajectories as the survival paper does.

    Parameters
    ----------
    signals : ndarray, shape (T, K), or Trajectory
        Raw signals sampled at ``steps`` (a Trajectory supplies both).
    steps : ndarray of int, shape (T,), optional
        Training step of each row (default 0..T-1).
    n_steps : int >= 2
        Length of the fitting window [steps[0], steps[0] + n_steps). A window
        longer than the data fits every recorded step (and the held-out R^2
        is then None).
    alpha : float
        Lasso penalty (reference 0.01).
    holdout_steps : int, optional
        Length of the held-out window that follows (default ``n_steps``);
        its trajectory R^2 is reported when the data reach into it.
    """
    if isinstance(signals, Trajectory):
        steps, signals = trajectory_signals(signals)
    x = check_array(signals, "signals", ndim=2)
    if x.shape[0] < x.shape[1] + 2:
        raise ValueError(f"signals must be (T, K) with T >= K + 2 samples (a linear fit has K + 1 terms per "
                         f"equation), got shape {x.shape}; pass time along the first axis")
    steps = np.arange(x.shape[0]) if steps is None else check_array(steps, "steps", dtype="int",
                                                                    shape=(x.shape[0],))
    n_steps = check_int(n_steps, "n_steps", 2)
    holdout_steps = check_int(n_steps if holdout_steps is None else holdout_steps, "holdout_steps", 1)
    alpha = check_float(alpha, "alpha", 0.0)
    t = steps.astype(float)
    start = int(steps[0])
    # a window longer than the data fits every recorded step (documented): it stops one step past the last,
    # since LinearODE.fit refuses a window past the run's end
    window = (start, min(start + n_steps, int(steps[-1]) + 1))
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        lasso = LinearODE(Lasso(alpha, standardize=False), derivative="forward", window=window).fit(x, t)
    stopped = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    if stopped:
        notes.append(f"coordinate descent stopped at sklearn's default 1000 iterations in {stopped} of "
                     f"{x.shape[1]} equations, as in the reference")
    with warnings.catch_warnings(record=True) as caught:  # said again below, naming the fit they are about
        warnings.simplefilter("always")
        ols = LinearODE("ols", derivative="forward", window=window).fit(x, t)
    for w in caught:
        warnings.warn_explicit(f"the least-squares fit: {w.message}", w.category, w.filename, w.lineno)

    def traj_r2(method: str, win: tuple[int, int]) -> float | None:
        try:
            return lasso.trajectory_score(x, t, window=win, method=method)
        except BlowUpError as exc:
            notes.append(f"{method} simulation over steps {win[0]}-{win[1]}: {exc}")
            return None

    eig = lasso.eigenvalues_
    held = (start + n_steps, start + n_steps + holdout_steps)
    has_held = bool(np.sum((t >= held[0]) & (t < held[1])) >= 2)
    return ODEAnalysis(
        n_steps=int(n_steps),
        alpha=float(alpha),
        n_frequencies=int(x.shape[1]),
        lasso_r2=lasso.score(x, t, window=window),
        ols_r2=ols.score(x, t, window=window),
        lasso_nonzero=int(np.count_nonzero(lasso.coef_)),
        lasso_sparsity=lasso.sparsity_,
        max_real_eigenvalue=float(eig.real.max()),
        stable=bool(lasso.is_stable_),
        trajectory_r2=traj_r2("exact", window),
        rollout_r2=traj_r2("rollout", window) if len(t) > 1 and is_uniform(t) else None,
        heldout_r2=traj_r2("exact", held) if has_held else None,
        heldout_window=held if has_held else None,
        notes=notes,
        lasso=lasso,
        ols=ols,
    )

