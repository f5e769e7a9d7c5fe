"""What ``embdyn fit`` reports, as a library function: every score labelled
for what it measures, the forecast from the fitted window's end against
persistence, and one sentence when the scores disagree.

    >>> from fitting import LinearODE, example_trajectory
    >>> from fitting.ode.report import fit_report
    >>> traj = example_trajectory()
    >>> model = LinearODE(stable=True, window=(0, 1000)).fit(traj)   # doctest: +SKIP
    >>> report = fit_report(model, traj)                               # doctest: +SKIP
    >>> report["scores"]["forecast_skill"]["value"]                    # doctest: +SKIP
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .data import as_runs, run_times
from .integrate import BlowUpError
from .base import ODEModel
from .inputs import from_trajectory

__all__ = ["fit_report", "ROW_MEANING"]

#: what the R^2 of the regression rows measures, by formulation
ROW_MEANING = {
    "weak": "window averages of dx/dt (weak form) against the fitted right-hand side's, inside the fitted window",
    "flowmap": "the state one lag ahead against the fitted map's prediction from the state now (a lag-map R^2, "
               "inside the fitted window; near 1 for any smooth data)",
    "pointwise": "estimated derivatives dx/dt against the fitted right-hand side, inside the fitted window",
}


def _row_kind(model: ODEModel) -> str:
    return model.formulation_.kind


def fit_report(model: ODEModel, x: Any, t: Any = None, *, window: Any = None,
               horizon: float | None = None) -> dict:
    """Scores of a fitted ``model`` on the data it was fitted on, each with
    what it measures.

    Parameters
    ----------
    model : fitted ODEModel (or LinearODE, LotkaVolterra)
    x, t : the runs and times (or a Trajectory), as passed to ``fit``
    window : (start, stop), optional
        The fitted window (default the model's ``window``).
    horizon : float, optional
        Forecast length past the window (default: to the end of the data).

    Returns
    -------
    dict
        ``scores``: name -> {"value", "what"} for ``rows_r2``,
        ``trajectory_r2_fit_window`` and, when the data go past the fitted
        window, ``forecast_error``, ``persistence_error`` and
        ``forecast_skill`` (1 - error / persistence error); ``notes``: one
        sentence for each disagreement between them (rows fitted well but a
        simulation that drifts; a forecast that loses to persistence; a
        blow-up). A simulation that blows up gives None and a note.
    """
    x, t, _ = from_trajectory(x, t, getattr(model, "frequencies_", None), model.n_features_in_)
    window = model.window if window is None else window
    scores: dict[str, dict] = {}
    notes: list[str] = []
    kind = _row_kind(model)
    rows = model.score(x, t, window=window)
    scores["rows_r2"] = {"value": rows, "what": "R^2 of " + ROW_MEANING[kind]}
    try:
        sim = model.trajectory_score(x, t, window=window)
    except BlowUpError as exc:
        sim = None
        notes.append(f"Simulated from the run's first sample, the model blew up at t = {exc.time:.6g}: it "
                     f"does not reproduce the data it was fitted on.")
    scores["trajectory_r2_fit_window"] = {
        "value": sim, "what": "R^2 of the simulation from the run's first sample, scored on the data inside the "
                              "fitted window (pooled over variables)"}
    if rows < 0:
        notes.append(f"The fitted rows are further from the data than their own mean (R^2 {rows:.3g}): the model "
                     f"does not describe these data (with --stable a fit reduced to no dynamics looks like this).")
    elif sim is not None and sim < 0 and rows < 0.9:
        notes.append(f"Simulated from the run's first sample, the model is further from the data than their mean "
                     f"(trajectory R^2 {sim:.3g}): it does not reproduce the data it was fitted on.")
    if sim is not None and rows >= 0.9 and sim < 0.5:
        notes.append(f"The rows are fitted well (R^2 {rows:.3g}) but the simulation drifts away from the data "
                     f"(trajectory R^2 {sim:.3g}): small errors in the fitted rates compound over time, so judge "
                     f"the model by its simulation and forecast, not by the row R^2.")
    runs = as_runs(x)
    last = max(float(ti[-1]) for ti in run_times(model.dt_ if t is None else t, runs))
    forecast = None
    if last > model.t_fit_end_:
        forecast = model.forecast(x, t, horizon=horizon)
    else:
        notes.append("No data after the fitted window, so no forecast: fit part of the run (a window) to score "
                     "what the model predicts next.")
    if forecast is not None:
        after = sum(int(np.sum(np.asarray(ti) > model.t_fit_end_)) for ti in run_times(model.dt_ if t is None else t,
                                                                                    runs))
        if after < 3:
            notes.append(f"The forecast covers only {after} sample{'s' if after != 1 else ''} after the fitted "
                         f"window: its error and skill say little; end the window earlier.")
        scores["forecast_error"] = {
            "value": None if forecast.blew_up else forecast.error,
            "what": f"relative error ||x_sim - x_obs|| / ||x_obs|| of the simulation from the observed state at "
                    f"t = {forecast.start:.6g} (the fitted window's end) over the rest of the data"}
        scores["persistence_error"] = {
            "value": forecast.persistence_error,
            "what": "the same error for holding the state at the window's end (persistence)"}
        skill = forecast.skill
        scores["forecast_skill"] = {
            "value": None if math.isinf(skill) else skill,
            "what": "1 - forecast error / persistence error: > 0 beats persistence"}
        if forecast.blew_up:
            notes.append("The forecast blew up: the fitted system is unstable past the window "
                         "(LinearODE(stable=True) cannot blow up).")
        elif not forecast.beats_persistence:
            notes.append(f"The forecast (error {forecast.error:.3g}) loses to holding the window's last state "
                         f"({forecast.persistence_error:.3g}): the model does not predict these data.")
    return {"scores": scores, "notes": notes}


def format_value(value: Any) -> str:
    """A score for people: 4 significant digits, 'blew up' for None."""
    if value is None:
        return "n/a (blew up)"
    if isinstance(value, float):
        return f"{value:.4g}" if np.isfinite(value) else str(value)
    return str(value)


def model_summary(model: ODEModel) -> list[str]:
    """A short readable description of what was fitted (not the estimator's
    full repr): the model and its form, how the rows were built, how they
    were solved, and the fitted system's size. Lines without line breaks."""
    name = type(model).__name__
    K = int(model.n_features_in_)
    lines = []
    stable = bool(getattr(model, "stable", False))
    form_text = getattr(model, "form", None)
    head = f"{name}" + ("(stable=True)" if stable else f"(form={form_text!r})" if form_text else "")
    lines.append(f"model: {head}, {K} variable{'s' if K != 1 else ''}, {model.coef_.shape[1]} terms per equation")
    formulation = model.formulation_
    lines.append(f"rows: {formulation.description()}")
    solver = None
    if formulation.maps_states:
        solver = "least squares of the map, then its matrix logarithm" + (", stable part" if stable else "")
    if solver is None:
        solver = "least squares over stable systems" if stable else repr(model.regressor_)
    lines.append(f"solved by: {solver}")
    return lines
