"""Integrating a fitted right-hand side: exact linear solutions, solve_ivp,
discrete rollout, and the blow-up check shared by all three."""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from particles.core.validation import check_magnitude

from .derivatives import is_uniform, sample_times

__all__ = ["BlowUpError", "linear_solution", "integrate", "SIMULATION_METHODS"]

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

    def __reduce__(self):  # rebuilt from its fields (joblib and process pools re-raise it in the parent)
        return (type(self), (self.time, self.limit, self.partial), self.__dict__)


def augmented(A: np.ndarray, b: np.ndarray, corner: float = 0.0) -> np.ndarray:
    """The (K+1, K+1) matrix [[A, b], [0, corner]] of the affine map or field
    x -> A x + b (corner 0 for a generator, whose exponential is the flow
    map; corner 1 for the map itself)."""
    K = A.shape[0]
    out = np.zeros((K + 1, K + 1))
    out[:K, :K], out[:K, K], out[K, K] = A, b, corner
    return out


def linear_solution(A: np.ndarray, b: np.ndarray, x0: np.ndarray, t: np.ndarray, *, check: bool = True
                    ) -> np.ndarray:
    """Exact solution of dx/dt = A x + b from x(t[0]) = x0 at times t.

    Uses the augmented exponential exp((t - t0) [[A, b], [0, 0]]), which is
    exact whether or not A is invertible (no regularising epsilon).

    Parameters
    ----------
    A : ndarray, shape (K, K)
    b : ndarray, shape (K,)
    x0 : ndarray, shape (K,)
    t : ndarray, shape (n,)

    check : bool
        Raise a ValueError when the solution overflows (default); False
        returns it with inf/NaN (the simulators turn that into BlowUpError).

    Returns
    -------
    ndarray, shape (n, K)
    """
    A = np.asarray(A)
    b = np.asarray(b)
    x0 = np.asarray(x0)
    t = np.asarray(t)
    for name, arr in (("A", A), ("b", b), ("x0", x0), ("t", t)):
        if arr.dtype.kind not in "iuf":  # not complex, bool, timedelta64 (a numpy integer subtype), ...
            raise TypeError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite")
        check_magnitude(arr.astype(float), name)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"A must be a non-empty square matrix, got shape {A.shape}")
    K = A.shape[0]
    if b.shape != (K,) or x0.shape != (K,):
        raise ValueError(f"b and x0 must have shape ({K},), got {b.shape} and {x0.shape}")
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"t must be a non-empty 1-D array, got shape {t.shape}")
    M = augmented(A, b)
    t = t.astype(float)
    z0 = np.append(x0.astype(float), 1.0)
    with warnings.catch_warnings(), np.errstate(over="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow is checked (or reported) below
        props = expm((t - t[0])[:, None, None] * M)  # (n, K+1, K+1)
        out = (props @ z0)[:, :K]
    if check and not np.all(np.isfinite(out)):
        first = int(np.argmax(~np.all(np.isfinite(out), axis=1)))
        raise ValueError(f"the solution overflows float64 at t = {t[first]:g} (max |eigenvalue of A| = "
                         f"{np.abs(np.linalg.eigvals(A)).max():.3g}, max |x0| = {np.abs(x0).max():.3g}, max |b| = "
                         f"{np.abs(b).max():.3g}); shorten t or rescale A, b and x0")
    return out


def integrate(rhs: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, t: np.ndarray, method: str,
              limit: float, linear: tuple[np.ndarray, np.ndarray] | None = None,
              rtol: float = 1e-8, atol: float = 1e-10) -> np.ndarray:
    """Integrate dx/dt = rhs(x) from x0 at t[0]; raise BlowUpError past ``limit``.

    Parameters
    ----------
    rhs : callable, (n, K) -> (n, K)
    x0 : ndarray, shape (K,)
    t : ndarray, shape (n,)
        Increasing output times.
    method : {"exact", "ivp", "rollout"}
        "exact" needs ``linear = (A, b)``; "ivp" is LSODA; "rollout" the
        discrete map x <- x + dt rhs(x) on uniform t.
    limit : float
        Bound on max |x|.
    """
    if method not in SIMULATION_METHODS or method == "auto":
        raise ValueError(f"method must be one of {SIMULATION_METHODS[1:]}, got {method!r}")
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or len(t) < 1:
        raise ValueError(f"t must be a 1-D array of increasing times, got shape {t.shape}")
    times = sample_times(t, t.shape[0])
    if len(times) == 1:
        return np.asarray(x0, dtype=float)[None].copy()
    if method == "exact":
        if linear is None:
            raise ValueError("method='exact' exists for linear models only; use 'ivp' or 'rollout'")
        out = linear_solution(linear[0], linear[1], x0, times, check=False)
    elif method == "rollout":
        if len(times) > 2 and not is_uniform(times):
            raise ValueError("method='rollout' needs uniformly spaced times")
        dt = float(times[1] - times[0]) if len(times) > 1 else 0.0
        out = np.full((len(times), x0.size), np.nan)
        out[0] = x0
        with np.errstate(over="ignore", invalid="ignore"):
            for n in range(1, len(times)):
                prev = out[n - 1]
                out[n] = prev + dt * rhs(prev[None])[0]
                if not np.all(np.isfinite(out[n])) or np.max(np.abs(out[n])) > limit:
                    break
    else:
        def event(_t, y):
            return limit - np.max(np.abs(y))
        event.terminal = True
        with np.errstate(over="ignore", invalid="ignore"):
            sol = solve_ivp(lambda _t, y: rhs(y[None])[0], (times[0], times[-1]), x0, method="LSODA",
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
