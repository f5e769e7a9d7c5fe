"""Time-resolved strengths: the force law's strengths fitted per window of
training steps (the ranges held at the whole run's), each window scored
against its own null (the law on randomly relabelled tokens).

Windows are given as a count of equal spans of the run's steps, as step
edges ``[e0, e1, ..., en]`` (window i covers [e_i, e_i+1)), or as a
partition of the run's steps into named windows: any object with ``edges``
(step edges) and, optionally, ``window_names`` (one name per window).
Edges must increase strictly and lie within the run's steps, from its
first step with a force to its last recorded step + 1, and every window
must hold a snapshot (:func:`window_edges`).

A window's record (:func:`window_fits`):

- ``start``, ``stop``: the steps [start, stop) it covers; ``name`` (None
  unless the windows were named); ``snapshots``;
- ``coef`` and ``coef_unconstrained``: its strengths, with the fit's sign
  constraint and without;
- ``r2``: R^2 of the (gauge-projected) force field in the window with its
  own strengths; None (undefined) when the window holds too few snapshots for
  its strengths or no force to explain;
- ``null_r2`` (mean) and ``null_r2_interval`` (2.5 and 97.5 percentiles)
  over the relabellings, None without a null; ``verdict``
  (:func:`fitting.forcefit.verdict.verdict`: "above chance", "at chance",
  "below chance", or None);
- ``force_share``: the window's share of the target's squared norm over the
  run (where the force is);
- ``shares``: each term's share of the window's explained force
  (:func:`fitting.forcefit.solve.shares`: |c_k F_k|^2 / sum_j |c_j F_j|^2,
  in [0, 1], summing to 1 when any term acts);
- ``note``: None, or a sentence on what the window's R^2 means when it
  holds a single snapshot (:data:`ONE_SNAPSHOT_NOTE`): its strengths are
  fitted to one moment's field (p(p+1)/2 pair sums' rows or p tokens' rows
  times d), so its R^2 is how well the law's shape fits that moment, not a
  stretch of training, and no bootstrap over snapshots bounds it.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .data import steps_text
from .solve import nnls, r2, shares
from .verdict import verdict

__all__ = ["check_windows", "resolve_windows", "StageWindows", "window_names", "window_edges", "window_fits", "fit_r2", "MAX_WINDOWS",
           "ONE_SNAPSHOT_NOTE"]

#: most windows of training steps
MAX_WINDOWS = 10_000
#: the note of a window that holds one snapshot (``note`` of :func:`window_fits`' records)
ONE_SNAPSHOT_NOTE = ("one snapshot: its strengths are fitted to that moment's field alone, so its R^2 says how well "
                     "the law's shape fits that moment, not a stretch of training")


def _edge_list(windows: Any) -> Any:
    """The step edges of ``windows`` as given: a partition's ``edges``, or the windows themselves."""
    edges = getattr(windows, "edges", None)
    return windows if edges is None or isinstance(windows, (str, bytes, np.ndarray)) else edges


def check_windows(windows: Any) -> int | np.ndarray:
    """``windows`` in its form: an int in [1, MAX_WINDOWS], or at least two
    integer step edges (a list, a 1-D integer array, or a partition's
    ``edges``) as an array; a partition's ``window_names`` must name each
    window once; else a TypeError/ValueError naming ``windows`` (before any
    data are read; the edges' order and place in the run are checked by
    :func:`window_edges`, which knows the run's steps)."""
    if isinstance(windows, str) and windows == "stages":  # the run's stages, resolved by the fit on a Trajectory
        return windows
    if isinstance(windows, (int, np.integer)) and not isinstance(windows, bool):
        if not 1 <= windows <= MAX_WINDOWS:
            raise ValueError(f"windows must be between 1 and {MAX_WINDOWS} (or a list of step edges), got {windows}")
        return int(windows)
    given = _edge_list(windows)
    if isinstance(given, np.ndarray):
        if given.ndim != 1 or given.dtype.kind not in "iu":
            raise TypeError(f"windows must be an int or a list of integer step edges, got an array of "
                            f"{given.dtype} with shape {given.shape}")
        given = given.tolist()
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
        raise TypeError(f"windows must be an int, a list of step edges, 'stages' or a partition with .edges, got "
                        f"{windows!r}" if isinstance(windows, str) else
                        f"windows must be an int, a list of step edges, 'stages' or a partition with .edges, got "
                        f"{type(windows).__name__}")
    if len(given) < 2 or not all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in given):
        raise ValueError(f"windows must list at least two integer step edges (e.g. [0, 100, 1000]), got {list(given)}")
    if len(given) - 1 > MAX_WINDOWS:
        raise ValueError(f"windows must be at most {MAX_WINDOWS} windows, got {len(given) - 1}")
    edges = np.asarray(given, dtype=np.int64)
    window_names(windows, len(edges) - 1)
    return edges


class StageWindows:
    """The windows of ``windows="stages"`` on one run, fitted to the force
    snapshots: ``edges`` and ``window_names``.

    The stages' edges (:func:`fitting.signals.stage_windows`) lie on the
    signals' steps, the snapshots with a force are sparser, and a fit may
    take part of the run (``window=``): the edges are clipped to the
    snapshots' span (``first`` .. ``last + 1``), and a window that holds no
    snapshot is merged into the next one (the last into the one before),
    its name joined to that one's with " + "."""

    def __init__(self, trajectory: Any, steps: np.ndarray | None = None, last: int | None = None):
        from ..signals import stage_windows

        edges, names = stage_windows(trajectory)
        if steps is None:
            self.edges, self.window_names = list(edges), list(names)
            return
        steps = np.asarray(steps)
        lo, hi = int(steps.min()), (int(steps.max()) if last is None else int(last)) + 1
        spans = [[max(a, lo), min(b, hi), n] for a, b, n in zip(edges, edges[1:], names) if b > lo and a < hi]
        merged: list[list] = []
        for span in spans:
            held = bool(np.any((steps >= span[0]) & (steps < span[1])))
            if merged and not merged[-1][3]:  # the one before held no snapshot: this one takes it in
                prev = merged.pop()
                span = [prev[0], span[1], f"{prev[2]} + {span[2]}"]
                held = bool(np.any((steps >= span[0]) & (steps < span[1])))
            merged.append([*span, held])
        if len(merged) > 1 and not merged[-1][3]:
            last_span = merged.pop()
            merged[-1] = [merged[-1][0], last_span[1], f"{merged[-1][2]} + {last_span[2]}", True]
        self.edges = [int(m[0]) for m in merged] + [int(merged[-1][1])]
        self.window_names = [m[2] for m in merged]


def resolve_windows(windows: Any, X: Any, steps: np.ndarray | None = None, last: int | None = None) -> Any:
    """``windows`` with ``"stages"`` replaced by the stages of the run ``X``
    (a Trajectory), fitted to the snapshots with a force at ``steps``
    (recorded to ``last``; :class:`StageWindows`); a ValueError naming
    ``windows`` for arrays or a list of runs, and the stages' own error for
    a run whose stages cannot be placed."""
    if not (isinstance(windows, str) and windows == "stages"):
        return windows
    from particles.trajectory import Trajectory

    if not isinstance(X, Trajectory):
        raise ValueError("windows='stages' places the stages of one recorded run: give X as a particles.Trajectory "
                         f"(got {type(X).__name__}), or give step edges")
    return StageWindows(X, steps, last)


def window_names(windows: Any, count: int) -> tuple[str, ...] | None:
    """The windows' names (a partition's ``window_names``), checked: one
    string per window; None for unnamed windows."""
    names = getattr(windows, "window_names", None)
    if names is None or isinstance(windows, (int, np.integer)):
        return None
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence) or not all(
            isinstance(n, str) for n in names):
        raise TypeError(f"windows.window_names must be a list of str, one per window, got {names!r}")
    if len(names) != count:
        raise ValueError(f"windows.window_names must name each of the {count} windows, got {len(names)} names")
    return tuple(names)


def window_edges(windows: Any, steps: np.ndarray, last: int | None = None, runs: int = 1) -> np.ndarray:
    """The step edges of ``windows`` (see :func:`check_windows`) on the
    data whose snapshots with a force are at ``steps`` (of ``runs`` runs),
    recorded up to step ``last`` (default ``steps.max()``): an int gives that
    many equal spans of the snapshots' steps. Listed edges must increase
    strictly, lie within the run (from its first step to ``last + 1``) and
    leave no window without a snapshot; else a ValueError naming
    ``windows``, the run's steps (first..last) and the accepted range
    (``embdyn force-fit --windows`` gets the same words)."""
    first = int(steps.min())
    last = int(steps.max()) if last is None else int(last)
    edges = check_windows(windows)
    if isinstance(edges, int):
        return np.unique(np.ceil(np.linspace(first, int(steps.max()) + 1, edges + 1)).astype(np.int64))
    shown = f"windows {[int(e) for e in edges]}"
    accepted = (f"{steps_text(first, last, len(steps), runs)}, so give edges {first} <= e0 < e1 < ... <= "
                f"{last + 1}")
    if np.any(np.diff(edges) <= 0):
        raise ValueError(f"{shown} must be strictly increasing step edges (a window may not be reversed, empty or "
                         f"overlap another): {accepted}")
    if edges[0] < first:
        raise ValueError(f"{shown} begin before the run's start: {accepted}")
    if edges[-1] > last + 1:
        raise ValueError(f"{shown} go past the run's end: {accepted}")
    counts = [int(np.sum((steps >= lo) & (steps < hi))) for lo, hi in zip(edges[:-1], edges[1:])]
    empty = [f"[{int(lo)}, {int(hi)})" for (lo, hi), c in zip(zip(edges[:-1], edges[1:]), counts) if c == 0]
    if empty:
        raise ValueError(f"{shown} must each hold a snapshot; {', '.join(empty)} hold{'s' if len(empty) == 1 else ''} "
                         f"none: {accepted}")
    return edges


def fit_r2(A: np.ndarray, b: np.ndarray, d: int, nonnegative: bool) -> tuple[np.ndarray, float]:
    """Strengths of ``A`` for ``b`` and their R^2."""
    coef = nnls(A, b, nonnegative)
    return coef, r2(b, A @ coef, d)


def window_fits(A: np.ndarray, b: np.ndarray, row_steps: np.ndarray, edges: np.ndarray, terms: Sequence[str],
                d: int, rows_per_snapshot: int, nonnegative: bool, nulls: Sequence[np.ndarray] = (),
                names: Sequence[str] | None = None) -> list[dict]:
    """One record per window (see the module), from the design ``A`` (rows,
    K) and target ``b`` of every snapshot, each row's training step, the
    null designs (the same rows on relabelled tokens) and the windows'
    ``names`` (optional, one per window)."""
    total = float(b @ b)
    out = []
    K = A.shape[1]
    for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        keep = (row_steps >= lo) & (row_steps < hi)
        n = int(keep.sum() // rows_per_snapshot)
        record: dict[str, Any] = {"start": int(lo), "stop": int(hi), "name": None if names is None else names[i],
                                  "snapshots": n, "coef": None, "coef_unconstrained": None, "r2": None,
                                  "null_r2": None, "null_r2_interval": None, "verdict": None, "force_share": 0.0,
                                  "shares": None, "defined": False,
                                  "note": ONE_SNAPSHOT_NOTE if n == 1 else None}
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
        record["shares"] = dict(zip(terms, shares(Aw, coef)))
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
                record["verdict"] = verdict(value, record["null_r2"], record["null_r2_interval"])
        out.append(record)
    return out
