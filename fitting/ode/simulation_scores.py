"""Scores of a fitted ODE by simulation: the forecast from the end of the
fitted window against persistence, and R^2 of whole simulated runs
(:class:`SimulationScoresMixin`, part of every
:class:`~fitting.ode.ODEModel`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.metrics import r2_score
from sklearn.utils.validation import check_is_fitted

from particles.core.validation import check_choice, check_float

from .data import as_runs, check_run_horizon, check_window, in_window, run_times
from .forecast import Forecast, pooled_error
from .integrate import BlowUpError
from .inputs import MULTIOUTPUT, from_trajectory
from .quality import warn_quality

__all__ = ["SimulationScoresMixin"]


class SimulationScoresMixin:
    """Forecast skill and trajectory R^2. Needs ``simulate``, ``time_values``
    and the fitted ``n_features_in_`` (and ``window``, the fitted window)."""

    def forecast(self, x: Any, t: Any = None, *, start: float | None = None, horizon: float | None = None,
                 method: str = "auto") -> Forecast:
        """Simulate from the observed state at ``start`` over ``horizon`` and
        score it against persistence (see :mod:`fitting.ode.forecast`).

        Parameters
        ----------
        x, t
            Runs and sample times as in :meth:`fit` (or a Trajectory); they
            must go past ``start``.
        start : float, optional
            Where the forecast starts; default the last sample time of the
            fitted window (``t_fit_end_``). The simulation starts from the
            observed state at the last sample at or before ``start``.
        horizon : float > 0, optional
            Length of the forecast in time units; default to the end of each
            run. A horizon past the data's last sample is refused, with the
            runs' first..last time in the message (that of ``embdyn fit
            --horizon``).
        method : as in :meth:`simulate`

        Returns
        -------
        Forecast
            ``error``, ``persistence_error``, ``skill`` and the series.

        Warns
        -----
        FitQualityWarning
            When a simulation blows up (``error`` is then inf).
        """
        check_is_fitted(self, "coef_")
        x, t, _ = from_trajectory(x, t, getattr(self, "frequencies_", None), self.n_features_in_)
        runs = as_runs(x)
        times = run_times(self.time_values(t), runs)
        if start is None and not hasattr(self, "t_fit_end_"):  # a model fitted (and saved) before forecasts existed
            raise ValueError("start is required: this model does not know where its fitted window ended (refit it)")
        start = self.t_fit_end_ if start is None else check_float(start, "start")
        # the check and message of embdyn fit --horizon, with the runs' extent (a start at the end included)
        horizon = check_run_horizon(horizon, start, times)
        last = max(float(ti[-1]) for ti in times)
        if not last > start:
            raise ValueError(f"start must be before the data's last sample time {last:.6g} (the forecast needs "
                             f"samples after it), got {start:.6g}; pass data that go past the fitted window")
        stop = last if horizon is None else start + horizon
        observed, predicted, kept_times, persistence = [], [], [], []
        blew_up = False
        for run, ti in zip(runs, times):
            before = np.flatnonzero(ti <= start)
            ahead = (ti > start) & (ti <= stop + 1e-12 * abs(stop))
            if before.size == 0 or not ahead.any():
                continue
            i0 = int(before[-1])
            obs = run[ahead]
            observed.append(obs)
            kept_times.append(ti[ahead])
            persistence.append(np.broadcast_to(run[i0], obs.shape))
            if blew_up:
                continue
            try:
                sim = self.simulate(run[i0], np.concatenate([[ti[i0]], ti[ahead]]), method=method)[1:]
                predicted.append(sim)
            except BlowUpError as exc:
                blew_up = True
                warn_quality(f"the forecast's simulation blew up at t = {exc.time:.6g} (|x| past {exc.limit:.3g}), "
                             f"so the model does not forecast this run")
        if not observed:
            raise ValueError(f"no run has samples both at or before start = {start:.6g} and after it")
        error = float("inf") if blew_up else pooled_error(predicted, observed)
        return Forecast(start=float(start), times=kept_times, observed=observed,
                        predicted=[] if blew_up else predicted, error=error,
                        persistence_error=pooled_error(persistence, observed), blew_up=blew_up)

    def forecast_score(self, x: Any, t: Any = None, *, start: float | None = None,
                       horizon: float | None = None) -> float:
        """Skill of :meth:`forecast`: 1 - error / persistence error (> 0 beats
        persistence, -inf after a blow-up)."""
        return self.forecast(x, t, start=start, horizon=horizon).skill

    def trajectory_score(self, x: Any, t: Any = None, window: Any = None, method: str = "auto",
                         multioutput: str = "variance_weighted") -> float:
        """R^2 of simulated against observed trajectories.

        Each run is simulated from its first sample over all its times; R^2
        is computed on the samples whose times fall in ``window`` =
        (start, stop), so the end of a run or whole runs can be held out.
        The default pools the columns (1 - total SSE / total SS): a signal
        that is almost constant inside the window would otherwise dominate a
        uniform average with a huge negative R^2. Raises
        :class:`BlowUpError` when a simulation blows up.
        """
        check_is_fitted(self, "coef_")
        x, t, _ = from_trajectory(x, t, getattr(self, "frequencies_", None), self.n_features_in_)
        runs = as_runs(x)
        times = run_times(self.time_values(t), runs)
        win = check_window(window)
        observed, simulated = [], []
        for run, ti in zip(runs, times):
            keep = in_window(ti, win)
            if not keep.any():
                continue
            last = int(np.flatnonzero(keep)[-1]) + 1
            sim = self.simulate(run[0], ti[:last], method=method)
            observed.append(run[:last][keep[:last]])
            simulated.append(sim[keep[:last]])
        if not observed:
            raise ValueError(f"no samples fall inside the window {window!r}")
        obs = np.vstack(observed)
        if obs.shape[0] < 2:
            raise ValueError("need at least 2 samples inside the window for R^2")
        return float(r2_score(obs, np.vstack(simulated), multioutput=check_choice(multioutput, "multioutput",
                                                                                   MULTIOUTPUT)))
