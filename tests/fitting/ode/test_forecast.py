"""Forecasts from the fitted window's end against persistence (fitting.ode.forecast)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fitting import FitQualityWarning, FlowMap, LinearODE
from fitting.ode import Forecast

from .helpers import CASES, data, terms


def test_the_stable_default_is_the_flow_map_and_it_forecasts():
    coef, degree, x0s, t = CASES["driven"]
    runs = data(coef, degree, x0s, t, 0.01, 9)
    model = LinearODE(stable=True, window=(0, 15)).fit(runs, t)
    assert isinstance(model.formulation_, FlowMap) and model.derivative is None
    assert model.t_fit_end_ == pytest.approx(t[t < 15][-1])
    forecast = model.forecast(runs, t)
    assert isinstance(forecast, Forecast) and forecast.start == model.t_fit_end_
    assert forecast.beats_persistence and forecast.skill > 0.5
    assert model.forecast_score(runs, t) == pytest.approx(forecast.skill)
    # persistence: the state at the start held over the horizon
    held = [r[t > forecast.start] for r in runs]
    hold = [np.broadcast_to(r[t <= forecast.start][-1], h.shape) for r, h in zip(runs, held)]
    expected = np.sqrt(sum(np.sum((a - b) ** 2) for a, b in zip(hold, held)) / sum(np.sum(h**2) for h in held))
    assert forecast.persistence_error == pytest.approx(expected, rel=1e-12)
    short = model.forecast(runs, t, horizon=3.0)
    assert max(ti[-1] for ti in short.times) <= forecast.start + 3.0 + 1e-9
    with pytest.raises(ValueError, match=r"horizon 100 goes past the run.s end: .* the 3 runs cover 0..29.97 "
                                         r"\(3000 samples\)"):
        model.forecast(runs, t, horizon=100.0)
    with pytest.raises(ValueError, match="start must be before the data's last sample time"):
        model.forecast(runs, t, start=30.0)
    with pytest.raises(ValueError, match=r"horizon must be None or a finite number > 0"):
        model.forecast(runs, t, horizon=-1.0)


def test_a_forecast_that_blows_up_warns_and_scores_minus_infinity():
    t = np.arange(0, 20, 0.02)
    runs = data(terms(2, 1, [{"x1": 0.05, "x2": 1.0}, {"x1": -1.0, "x2": 0.02}]), 1, [[1, 0], [0, 1]], t, 0.0, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitQualityWarning)
        model = LinearODE("ols", window=(0, 10)).fit(runs, t)
    model.coef_[:, 1:] += 2.0 * np.eye(2)  # a model that grows like e^2t: far past 1000 x the data by t = 20
    with pytest.warns(FitQualityWarning, match="the forecast's simulation blew up"):
        forecast = model.forecast(runs, t)
    assert forecast.blew_up and forecast.skill == -np.inf and forecast.error == np.inf
