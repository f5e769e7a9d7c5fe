"""Time-resolved strengths: the force law's strengths fitted per window of
training steps (the ranges held at the whole run's), each window scored
against its own null (the law on randomly relabelled tokens).

A window's record (:func:`window_fits`):

- ``start``, ``stop``: the steps [start, stop) it covers; ``snapshots``;
- ``coef`` and ``coef_unconstrained``: its strengths, with the fit's sign
  constraint and without;
- ``r2``: R^2 of the (gauge-projected) force field in the window with its
  own strengths; None (undefined) when the window holds too few snapshots for
  its strengths or no force to explain;
- ``null_r2`` (mean) and ``null_r2_interval`` (2.5 and 97.5 percentiles)
  over the relabellings, None without a null;
- ``force_share``: the window's share of the target's squared norm over the
  run (where the force is);
- ``shares``: each term's share of the window's explained force, bounded:
  |c_k F_k|^2 / sum_j |c_j F_j|^2 (in [0, 1], summing to 1 when any term acts).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .solve import nnls, r2

__all__ = ["check_windows", "window_edges", "window_fits", "bounded_shares", "fit_r2", "MAX_WINDOWS"]

#: most windows of training steps
MAX_WINDOWS = 10_000


def check_windows(windows: Any) -> int | np.ndarray:
    """``windows`` in its form: an int in [1, MAX_WINDOWS], or at least two
    strictly increasing integer step edges (as an array); else a
    TypeError/ValueError naming ``windows`` (before any data are read)."""
    if isinstance(windows, (int, np.integer)) and not isinstance(windows, bool):
        if not 1 <= windows <= MAX_WINDOWS:
            raise ValueError(f"windows must be between 1 and {MAX_WINDOWS} (or a list of step edges), got {windows}")
        return int(windows)
    if isinstance(windows, (str, bytes)) or not isinstance(windows, Sequence):
        raise TypeError(f"windows must be an int or a list of step edges, got {type(windows).__name__}")
    if len(windows) < 2 or not all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in windows):
        raise ValueError(f"windows must list at least two integer step edges (e.g. [0, 100, 1000]), got {windows}")
    edges = np.asarray(windows, dtype=np.int64)
    if np.any(np.diff(edges) <= 0):
        raise ValueError(f"windows must be strictly increasing step edges (windows may not overlap), got {list(windows)}")
    return edges


def window_edges(windows: Any, steps: np.ndarray) -> np.ndarray:
    """The step edges of ``windows`` (see :func:`check_windows`) on a run
    whose snapshots are at ``steps``: an int gives that many equal spans of
    the run's steps; listed edges must lie inside the run, each window
    holding at least one snapshot; else a ValueError naming ``windows``."""
    first, last = int(steps.min()), int(steps.max())
    edges = check_windows(windows)
    if isinstance(edges, int):
        return np.unique(np.ceil(np.linspace(first, last + 1, edges + 1)).astype(np.int64))
    if edges[0] > last or edges[-1] <= first:
        raise ValueError(f"windows {list(windows)} lie outside the run's steps {first}..{last}")
    counts = [int(np.sum((steps >= lo) & (steps < hi))) for lo, hi in zip(edges[:-1], edges[1:])]
    empty = [(int(lo), int(hi)) for (lo, hi), c in zip(zip(edges[:-1], edges[1:]), counts) if c == 0]
    if empty:
        raise ValueError(f"windows must each hold a snapshot; [start, stop) = {empty} hold none (snapshots at steps "
                         f"{first}..{last})")
    return edges


def bounded_shares(A: np.ndarray, coef: np.ndarray) -> list[float]:
    """|c_k A_k|^2 / sum_j |c_j A_j|^2 for each term (0 when none acts)."""
    norms = np.sum((A * coef) ** 2, axis=0)
    total = float(norms.sum())
    return [float(v / total) if total > 0 else 0.0 for v in norms]


def fit_r2(A: np.ndarray, b: np.ndarray, d: int, nonnegative: bool) -> tuple[np.ndarray, float]:
    """Strengths of ``A`` for ``b`` and their R^2."""
    coef = nnls(A, b, nonnegative)
    return coef, r2(b, A @ coef, d)


def window_fits(A: np.ndarray, b: np.ndarray, row_steps: np.ndarray, edges: np.ndarray, terms: Sequence[str],
                d: int, rows_per_snapshot: int, nonnegative: bool, nulls: Sequence[np.ndarray] = ()) -> list[dict]:
    """One record per window (see the module), from the design ``A`` (rows,
    K) and target ``b`` of every snapshot, each row's training step, and
    the null designs (the same rows on relabelled tokens)."""
    total = float(b @ b)
    out = []
    K = A.shape[1]
    for lo, hi in zip(edges[:-1], edges[1:]):
        keep = (row_steps >= lo) & (row_steps < hi)
        n = int(keep.sum() // rows_per_snapshot)
        record: dict[str, Any] = {"start": int(lo), "stop": int(hi), "snapshots": n, "coef": None,
                                  "coef_unconstrained": None, "r2": None, "null_r2": None, "null_r2_interval": None,
                                  "force_share": 0.0, "shares": None, "defined": False}
        if n == 0:
            record["why_undefined"] = "no snapshot in the window"
            out.append(record)
            continue
        Aw, bw = A[keep], b[keep]
        bb = float(bw @ bw)
        record["force_share"] = bb / total if total > 0 else 0.0
        coef, value = fit_r2(Aw, bw, d, nonnegative)
        record["coef"] = dict(zip(terms, (float(c) for c in coef)))
        record["coef_unconstrained"] = dict(zip(terms, (float(c) for c in nnls(Aw, bw, False))))
        record["shares"] = dict(zip(terms, bounded_shares(Aw, coef)))
        if Aw.shape[0] <= K or bb <= 1e-24 * max(total, 1e-300):
            record["why_undefined"] = ("fewer rows than strengths" if Aw.shape[0] <= K else
                                       "no force to explain in the window")
        else:
            record["defined"] = True
            record["r2"] = value
            if len(nulls):
                values = np.array([fit_r2(N[keep], bw, d, nonnegative)[1] for N in nulls])
                record["null_r2"] = float(values.mean())
                record["null_r2_interval"] = [float(v) for v in np.percentile(values, [2.5, 97.5])]
        out.append(record)
    return out
