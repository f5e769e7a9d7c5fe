"""Runs, sample times and time windows: the data every ODE fit reads.

Data are one (T, K) array, an (R, T, K) array or a list of (T_r, K) arrays
(several runs); times are a step, one array of sample times, or one array
per run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from particles.core.validation import check_float, check_magnitude

from .derivatives import sample_times

__all__ = ["as_runs", "run_times", "check_window", "window_numbers", "check_run_window", "check_run_horizon",
           "in_window", "is_run_list"]


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
        if arr.dtype.kind not in "iuf":  # not bool, timedelta64 (a numpy integer subtype), ...
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
    start, stop = window_numbers(window)
    if not start < stop:
        raise ValueError(f"window must have start < stop, got {window!r}")
    return start, stop


def window_numbers(window: Any, name: str = "window") -> tuple[float, float]:
    """(start, stop) of a window as numbers (None: an open end -> -inf or
    inf), in any order: the kind checked, the order left to
    :func:`check_window` or :func:`check_run_window`."""
    try:
        start, stop = window
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be None or (start, stop), got {window!r}") from None
    try:
        start = -math.inf if start is None else float(start)
        stop = math.inf if stop is None else float(stop)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold two numbers (or None), got {window!r}") from None
    if math.isnan(start) or math.isnan(stop):
        raise ValueError(f"{name} must hold two numbers (or None for an open end), not NaN, got {window!r}")
    return start, stop


def _number(value: float) -> str:
    """A time as people write it: 8000, not 8e+03 or 8000.0."""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


def _extent(times: list[np.ndarray]) -> tuple[float, float, float, str]:
    """``(first, last, limit, text)`` of the runs' sample times: the first
    and last sample, the furthest a window may stop (one sample interval
    past the last sample, where the next one would be; 1 for a run of one
    sample) and "the run covers 0..7999 (800 samples)"."""
    first = min(float(ti[0]) for ti in times)
    last = max(float(ti[-1]) for ti in times)
    ending = [ti for ti in times if float(ti[-1]) == last]
    spacing = max((float(ti[-1] - ti[-2]) if len(ti) > 1 else 1.0) for ti in ending)
    samples = sum(len(ti) for ti in times)
    who = "the run covers" if len(times) == 1 else f"the {len(times)} runs cover"
    text = f"{who} {_number(first)}..{_number(last)} ({samples} sample{'s' if samples != 1 else ''})"
    return first, last, last + spacing, text


def check_run_window(window: Any, times: list[np.ndarray], name: str = "window") -> tuple[float, float] | None:
    """``window`` checked against the runs' sample times ``times`` (one
    array per run): None, or (start, stop) with first <= start < stop <=
    limit that holds at least one sample, where first is the first sample
    time and limit one sample interval past the last (open ends, None, are
    not checked). The one check of ``ODEModel.fit`` (``window``) and
    ``embdyn fit --window``: the same message in both, with the runs'
    extent, for a window that is reversed, empty, begins before the run's
    start, goes past its end or holds no sample.

    Raises
    ------
    ValueError
        Naming ``name``, the window, the runs' first..last time and the
        accepted range.
    """
    if window is None:
        return None
    start, stop = win = window_numbers(window, name)
    first, last, limit, covers = _extent(times)
    shown = f"{name} [{_number(start)}, {_number(stop)})"
    accepted = f"{covers}, so give {_number(first)} <= start < stop <= {_number(limit)}"
    if start > stop:
        raise ValueError(f"{shown} is reversed (start > stop): {accepted}")
    if start == stop:
        raise ValueError(f"{shown} is empty (start = stop): {accepted}")
    if math.isfinite(start) and start < first:
        raise ValueError(f"{shown} begins before the run's start: {accepted}")
    if (math.isfinite(stop) and stop > limit + 1e-9 * (limit - last)) or start > last:  # slack: rounding of t
        raise ValueError(f"{shown} goes past the run's end: {accepted}")
    if not any(in_window(ti, win).any() for ti in times):
        raise ValueError(f"{shown} holds no sample: {accepted}")
    return win


def check_run_horizon(horizon: Any, start: float, times: list[np.ndarray], name: str = "horizon") -> float | None:
    """``horizon`` (None, or a number > 0) of a forecast from ``start``,
    checked against the runs' sample times ``times``: start + horizon must
    not pass the last sample. The one check of ``forecast(horizon=)`` and
    ``embdyn fit --horizon``, with the runs' extent in the message.

    Raises
    ------
    ValueError, TypeError
        Naming ``name``, the run's first..last time and the accepted range.
    """
    horizon = check_float(horizon, name, 0.0, strict=True, allow_none=True)
    if horizon is None:
        return None
    first, last, _, covers = _extent(times)
    if start + horizon > last + 1e-12 * abs(last):
        room = last - start
        accepted = (f"give 0 < {name} <= {_number(room)}" if room > 0 else
                    f"no sample follows t = {_number(start)}: end the fitted window earlier")
        raise ValueError(f"{name} {_number(horizon)} goes past the run's end: from t = {_number(start)} it reaches "
                         f"{_number(start + horizon)}, but {covers}; {accepted}")
    return horizon


def in_window(times: np.ndarray, window: tuple[float, float] | None) -> np.ndarray:
    """Boolean mask of the samples with start <= t < stop."""
    if window is None:
        return np.ones(times.shape, dtype=bool)
    return (times >= window[0]) & (times < window[1])
