"""Runs, sample times and time windows: the data every ODE fit reads.

Data are one (T, K) array, an (R, T, K) array or a list of (T_r, K) arrays
(several runs); times are a step, one array of sample times, or one array
per run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from particles.core.validation import check_magnitude

from .derivatives import sample_times

__all__ = ["as_runs", "run_times", "check_window", "in_window", "is_run_list"]


def is_run_list(x: Any) -> bool:
    """True when ``x`` is a list/tuple of runs (not a single array)."""
    return isinstance(x, (list, tuple))


def as_runs(x: Any, name: str = "x") -> list[np.ndarray]:
    """Validated float64 runs, each of shape (T_r, K) with the same K."""
    if hasattr(x, "toarray"):
        raise TypeError(f"{name} is a sparse matrix: sparse input is not supported, pass dense arrays (T, K)")
    for i, r in enumerate(x if is_run_list(x) else ()):
        if hasattr(r, "toarray"):
            raise TypeError(f"{name} run {i} is a sparse matrix: sparse input is not supported, pass dense arrays "
                            f"(T, K)")
    if is_run_list(x):
        runs = list(x)
        if not runs:
            raise ValueError(f"{name} is an empty list of runs")
    else:
        arr = np.asarray(x)
        runs = list(arr) if arr.ndim == 3 else [arr]
    out = []
    for i, run in enumerate(runs):
        arr = np.asarray(run)
        if np.iscomplexobj(arr):
            raise TypeError(f"{name} run {i} must be real, got complex dtype {arr.dtype}")
        if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
            raise TypeError(f"{name} run {i} must be numeric, got dtype {arr.dtype}")
        if arr.ndim != 2:
            raise ValueError(f"{name} run {i} must have shape (T, K), got {arr.shape}")
        if arr.shape[0] == 0:
            raise ValueError(f"{name} run {i} is empty: 0 sample(s) (shape={arr.shape}) while a minimum of 1 is "
                             f"required.")
        if arr.shape[1] == 0:
            raise ValueError(f"{name} run {i} is empty: 0 feature(s) (shape={arr.shape}) while a minimum of 1 is "
                             f"required.")
        arr = arr.astype(np.float64, copy=False)
        if not np.all(np.isfinite(arr)):
            bad = np.argwhere(~np.isfinite(arr))[0]
            raise ValueError(f"{name} run {i} holds a non-finite value (NaN or inf) at (sample, column) = "
                             f"{tuple(int(v) for v in bad)}")
        out.append(check_magnitude(arr, f"{name} run {i}"))
    dims = [r.shape[1] for r in out]
    if len(set(dims)) != 1:
        raise ValueError(f"all runs in {name} must have the same number of columns, got {dims}")
    return out


def run_times(t: Any, runs: list[np.ndarray]) -> list[np.ndarray]:
    """Sample times of each run from a step, one array (shared by runs of
    the same length), or one array per run."""
    if not is_run_list(t) and np.ndim(t) == 0:
        return [sample_times(t, len(r)) for r in runs]
    if len(runs) == 1 and not is_run_list(t):
        return [sample_times(t, len(runs[0]))]
    if not is_run_list(t) and np.ndim(t) == 1:  # one time grid for every run
        lengths = sorted({len(r) for r in runs})
        if lengths != [len(t)]:
            raise ValueError(f"t is one array of {len(t)} times, but the runs have {lengths} samples: a shared "
                             f"time grid needs runs of its length; otherwise give one array of times per run")
        return [sample_times(t, len(r)) for r in runs]
    if isinstance(t, np.ndarray) and t.ndim == 2 and t.shape[0] == len(runs):
        t = list(t)
    if not is_run_list(t) or len(t) != len(runs):
        raise ValueError(f"t must be a step, one array of times shared by all runs, or one array of times per run "
                         f"({len(runs)} runs)")
    return [sample_times(ti, len(r)) for ti, r in zip(t, runs)]


def check_window(window: Any) -> tuple[float, float] | None:
    """``None`` or a validated (start, stop) with start < stop (None = open end)."""
    if window is None:
        return None
    try:
        start, stop = window
    except (TypeError, ValueError):
        raise ValueError(f"window must be None or (start, stop), got {window!r}") from None
    try:
        start = -math.inf if start is None else float(start)
        stop = math.inf if stop is None else float(stop)
    except (TypeError, ValueError):
        raise ValueError(f"window must hold two numbers (or None), got {window!r}") from None
    if math.isnan(start) or math.isnan(stop):
        raise ValueError(f"window must hold two numbers (or None for an open end), not NaN, got {window!r}")
    if not start < stop:
        raise ValueError(f"window must have start < stop, got {window!r}")
    return start, stop


def in_window(times: np.ndarray, window: tuple[float, float] | None) -> np.ndarray:
    """Boolean mask of the samples with start <= t < stop."""
    if window is None:
        return np.ones(times.shape, dtype=bool)
    return (times >= window[0]) & (times < window[1])
