"""Time derivatives of sampled trajectories (docs/fitting.md, ODE fits).

Each estimator returns the samples it pairs with the derivative, so a
regression of ``dxdt`` on ``x`` is always aligned:

=============  ==========================================  ============================
method         derivative at sample i                      paired state
=============  ==========================================  ============================
``forward``    (x[i+1] - x[i]) / (t[i+1] - t[i])           x[i], i = 0..T-2 (reference)
``central``    (x[i+1] - x[i-1]) / (t[i+1] - t[i-1])       x[i], i = 1..T-2
``savgol``     derivative of a local polynomial fit        smoothed x[i], i = 0..T-1
               (Savitzky-Golay, uniform sampling)
=============  ==========================================  ============================

With ``savgol`` the paired state is the smoothed signal too, so noise does
not enter the regression's features (errors-in-variables bias).
"""

from __future__ import annotations

import numpy as np
from scipy.signal import savgol_filter

from particles.core.validation import check_array, check_float, check_magnitude

__all__ = ["DERIVATIVES", "check_savgol", "differentiate", "is_uniform", "sample_times"]

DERIVATIVES = ("forward", "central", "savgol")


def is_uniform(t: np.ndarray) -> bool:
    steps = np.diff(t)
    return bool(np.allclose(steps, steps[0], rtol=1e-9, atol=0.0))


def differentiate(x: np.ndarray, t: np.ndarray | float = 1.0, method: str = "forward", *,
                  window_length: int = 11, polyorder: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Derivative of one sampled trajectory and the states it pairs with.

    Parameters
    ----------
    x : ndarray, shape (T, K)
    t : float or ndarray of shape (T,)
        Time step, or strictly increasing sample times.
    method : {"forward", "central", "savgol"}
    window_length, polyorder : int
        Savitzky-Golay window (odd, <= T) and polynomial order (< window).

    Returns
    -------
    states : ndarray, shape (n, K)
    dxdt : ndarray, shape (n, K)
    """
    if method not in DERIVATIVES:
        raise ValueError(f"method must be one of {DERIVATIVES}, got {method!r}")
    x = check_array(x, "x", ndim=2)
    T = x.shape[0]
    times = sample_times(t, T)
    if method == "forward":
        if T < 2:
            raise ValueError(f"x must have at least 2 samples for forward differences, got {T}")
        return x[:-1], np.diff(x, axis=0) / np.diff(times)[:, None]
    if method == "central":
        if T < 3:
            raise ValueError(f"central differences need at least 3 samples, got {T}")
        return x[1:-1], (x[2:] - x[:-2]) / (times[2:] - times[:-2])[:, None]
    check_savgol(window_length, polyorder)
    if window_length > T:
        raise ValueError(f"window_length ({window_length}) exceeds the number of samples ({T})")
    if not is_uniform(times):
        raise ValueError("savgol derivatives need uniformly spaced times")
    dt = float(times[1] - times[0])
    smooth = savgol_filter(x, window_length, polyorder, axis=0)
    dxdt = savgol_filter(x, window_length, polyorder, deriv=1, delta=dt, axis=0)
    return smooth, dxdt


def check_savgol(window_length: int, polyorder: int, prefix: str = "") -> None:
    """Savitzky-Golay settings: an odd window >= 3 and an order in [1, window - 1]."""
    w, o = window_length, polyorder
    if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 3 or w % 2 == 0:
        raise ValueError(f"{prefix}window_length must be an odd int >= 3, got {w!r}")
    if isinstance(o, bool) or not isinstance(o, (int, np.integer)) or not 1 <= o < w:
        raise ValueError(f"{prefix}polyorder must be an int in [1, {w - 1}], got {o!r}")


def sample_times(t: np.ndarray | float, T: int) -> np.ndarray:
    """Sample times from a step or an array; validated."""
    if np.ndim(t) == 0:
        if isinstance(t, np.ndarray):  # a 0-d array holds one step
            t = check_array(t, "t (a time step)")[()]
        dt = check_float(t, "t (a time step)", 0, strict=True)
        return dt * np.arange(T, dtype=float)
    times = check_array(t, "t", finite=False)
    if times.ndim != 1 or times.shape[0] != T:
        raise ValueError(f"t must be a step or an array of {T} times (one per sample of x), got shape {times.shape}")
    if not np.all(np.isfinite(times)) or (T > 1 and np.any(np.diff(times) <= 0)):
        raise ValueError("t must hold finite, strictly increasing times")
    return check_magnitude(times, "t")
