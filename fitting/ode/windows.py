"""One ODE fit per window of a run: ``windows="stages"`` fits each stage of
the run (:func:`fitting.stages`) on its own, or any list of step edges
(``embdyn fit --windows``)."""

from __future__ import annotations

from typing import Any

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
    try:
        edges = [int(e) for e in windows]
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be 'stages' or a list of integer step edges, got {windows!r}") from None
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"{name} must be at least two increasing step edges, got {edges}")
    steps, _ = trajectory_signals(trajectory)
    check_run_window((edges[0], edges[-1]), [steps.astype(float)], name)  # the message of window=, run's steps
    return edges, [f"window {i + 1}" for i in range(len(edges) - 1)]


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
        fitted copy, or None), ``report`` (:func:`fitting.ode.report.fit_report`,
        or None) and ``error`` (why the window could not be fitted, e.g. too
        few samples; else None).
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
    results = []
    for name, start, stop in zip(names, edges, edges[1:]):
        window = (start, stop)
        fitted = clone(model).set_params(window=window)
        try:
            fitted.fit(trajectory, frequencies=selection.frequencies)
            report = fit_report(fitted, trajectory, window=window)
            error = None
        except ValueError as exc:  # too few samples in a short window: said, the other windows fitted
            fitted, report, error = None, None, " ".join(str(exc).split())
        results.append({"name": name, "window": window, "model": fitted, "report": report, "error": error})
    return results
