"""Forecasts from the end of the fitted window, scored against persistence.

A model fitted on part of a run is judged by what it predicts next: it is
simulated from the *observed* state at the end of the fitted window over a
horizon, and its relative error ``||x_sim - x_obs|| / ||x_obs||`` over the
horizon's samples is set beside the error of persistence (holding the state
at the start). ``skill = 1 - error / persistence_error`` is positive when
the model beats persistence, 0 when it ties and negative when it loses (-inf
when its simulation blows up).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Forecast"]


@dataclass(frozen=True)
class Forecast:
    """The result of :meth:`fitting.ODEModel.forecast`.

    Attributes
    ----------
    start : float
        Time of the observed state the simulation starts from.
    times : list of ndarray
        Sample times of the horizon, per run (start excluded).
    observed, predicted : list of ndarray, shape (n, K) per run
        The data over the horizon, and the model's simulation (empty when
        it blew up).
    error : float
        ||predicted - observed|| / ||observed|| pooled over runs (inf when a
        simulation blew up).
    persistence_error : float
        The same for holding the state at ``start``.
    blew_up : bool
    """

    start: float
    times: list
    observed: list
    predicted: list
    error: float
    persistence_error: float
    blew_up: bool = False

    @property
    def skill(self) -> float:
        """1 - error / persistence_error: > 0 beats persistence, -inf after a blow-up."""
        if self.blew_up:
            return float("-inf")
        if self.persistence_error == 0:
            return 0.0 if self.error == 0 else float("-inf")
        return 1.0 - self.error / self.persistence_error

    @property
    def beats_persistence(self) -> bool:
        return bool(self.error < self.persistence_error)

    def summary(self) -> str:
        """One sentence for people."""
        span = max((float(t[-1]) for t in self.times if len(t)), default=self.start) - self.start
        if self.blew_up:
            return (f"forecast over {span:.4g} time units from t = {self.start:.4g}: the simulation blew up "
                    f"(persistence error {self.persistence_error:.3g})")
        verdict = "beats" if self.beats_persistence else "loses to"
        return (f"forecast over {span:.4g} time units from the observed state at t = {self.start:.4g}: relative "
                f"error {self.error:.3g}, {verdict} persistence ({self.persistence_error:.3g}); skill "
                f"{self.skill:.3g}")


def pooled_error(predicted: list, observed: list) -> float:
    """sqrt(sum ||p - o||^2) / sqrt(sum ||o||^2) over runs."""
    num = sum(float(np.sum((p - o) ** 2)) for p, o in zip(predicted, observed))
    den = sum(float(np.sum(o**2)) for o in observed)
    return float(np.sqrt(num / den)) if den > 0 else (0.0 if num == 0 else float("inf"))
