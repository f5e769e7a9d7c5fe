"""One ODE fit per window of a run: ``windows="stages"`` fits each stage of
the run (:func:`fitting.stages`) on its own, or any list of step edges
(``embdyn fit --windows``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone

from particles.trajectory import Trajectory

from ..signals import stage_windows, trajectory_signals
from .data import check_run_window
from .report import fit_report

__all__ = ["fit_windows", "resolve_windows"]


def resolve_windows(trajectory: Trajectory, windows: Any, name: str = "windows") -> tuple[list[int], list[str]]:
    """Step edges and names of ``windows``: ``"stages"`` (the run's stages,
    :func:`fitting.signals.stage_windows`) or a list of at least two
    increasing step edges inside the run's recorded steps; a ValueError
    naming ``name`` and the run's steps otherwise, before any fit."""
    if isinstance(windows, (str, bytes)):
        if windows != "stages":
            raise ValueError(f"{name} must be 'stages' or a list of step edges, got {windows!r}")
        return stage_windows(trajectory)
    given = getattr(windows, "edges", windows)
    if isinstance(given, np.ndarray):
        given = given.tolist()
    if not isinstance(given, (list, tuple)):
        raise TypeError(f"{name} must be 'stages', a list of integer step edges or a partition with .edges, got "
                        f"{type(windows).__name__}")
    edges = list(given)
    if not all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in edges):
        raise TypeError(f"{name} must be 'stages', a list of integer step edges or a partition with .edges, got "
                        f"{windows!r}")
    edges = [int(e) for e in edges]
    if hasattr(windows, "window_names"):
        names = [str(n) for n in windows.window_names]
        if len(names) != len(edges) - 1:
            raise ValueError(f"{name}: window_names must name each of the {len(edges) - 1} windows")
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"{name} must be at least two increasing step edges, got {edges}")
    steps, _ = trajectory_signals(trajectory)
    check_run_window((edges[0], edges[-1]), [steps.astype(float)], name)  # the message of window=, run's steps
    if not hasattr(windows, "window_names"):
        names = [f"window {i + 1}" for i in range(len(edges) - 1)]
    return edges, names


def fit_windows(model: Any, trajectory: Trajectory, windows: Any = "stages", *,
                frequencies: Any = "auto") -> list[dict[str, Any]]:
    """Fit a copy of ``model`` (an unfitted :class:`fitting.ODEModel`,
    ``LinearODE`` or ``LotkaVolterra``; its own ``window`` is replaced) on
    each window of ``trajectory``.

    Parameters
    ----------
    model : ODEModel
        The estimator, with its settings.
    trajectory : particles.Trajectory
    windows : "stages" or list of int
        The run's stages (:func:`fitting.stages`: cut at the ends of
        memorisation, circuit formation and cleanup) or step edges.
    frequencies : as for ``fit``
        The same frequencies are fitted in every window (chosen once, on
        the whole run, by :func:`fitting.select_frequencies`).

    Returns
    -------
    list of dict
        One per window: ``name``, ``window`` (start, stop), ``model`` (the
        fitted copy, or None), ``report`` (:func:`fitting.ode.report.fit_report`
        on the run from the window's first sample on: the simulation R^2 of
        the window starts there, the forecast runs from its end to the run's
        end; or None) and ``error`` (why the window could not be fitted, e.g.
        too few samples; else None).
    """
    from ..signals import select_frequencies
    from .base import ODEModel

    if not isinstance(model, ODEModel):
        raise TypeError(f"model must be an ODEModel (LinearODE, LotkaVolterra, ...), got {type(model).__name__}")
    if not isinstance(trajectory, Trajectory):
        raise TypeError(f"trajectory must be a particles.Trajectory, got {type(trajectory).__name__}")
    model.check_params()  # its settings refused before any fit
    edges, names = resolve_windows(trajectory, windows)
    selection = select_frequencies(trajectory, frequencies)
    steps, signals = trajectory_signals(trajectory)
    x_all, t_all = signals[:, selection.columns], steps.astype(float)
    results = []
    for name, start, stop in zip(names, edges, edges[1:]):
        window = (start, stop)
        fitted = clone(model).set_params(window=window)
        try:
            fitted.fit(trajectory, frequencies=selection.frequencies)
            # scored from the window's first sample on: its simulation starts there, not at the run's start
            # (a model of a late stage is not run through the stages before it), its forecast from its end
            first = int(np.searchsorted(t_all, start))
            report = fit_report(fitted, x_all[first:], t_all[first:], window=window)
            error = None
        except ValueError as exc:  # too few samples in a short window: said, the other windows fitted
            fitted, report, error = None, None, " ".join(str(exc).split())
        results.append({"name": name, "window": window, "model": fitted, "report": report, "error": error})
    return results
