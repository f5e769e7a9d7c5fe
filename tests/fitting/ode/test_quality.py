"""Fits that may be wrong warn (fitting.ode.quality, FitQualityWarning): in one
sentence, keeping the numbers, pointing at the caller, silenced by the filter."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fitting import FitQualityWarning, LinearODE

from .helpers import CASES, data, terms


def test_a_misfit_warns_in_one_sentence_and_keeps_the_numbers():
    coef, degree, x0s, t = CASES["spiral"]
    runs = data(coef, degree, x0s, t, 0.01, 7)
    with pytest.warns(FitQualityWarning, match=r"not to be trusted") as caught:  # issue 73: the verdict's sentence
        model = LinearODE().fit(runs, t)  # a linear model of a quadratic system
    message = str(next(w.message for w in caught if "not to be trusted" in str(w.message)))
    assert "\n" not in message and message.count(";") <= 1  # the whitened residual stays in fit_info_ only
    assert model.fit_info_["weighting"]["status"] == "misfit" and model.fit_info_["weighting"]["chi2_per_dof"] > 2
    assert "simulation" in model.fit_quality_["failed"] and model.fit_quality_["simulation_r2"] < 0.9


def test_an_unstable_linear_fit_warns_and_a_stable_one_does_not():
    A = np.array([[0.05, 1.0], [-1.0, 0.02]])
    t = np.arange(0, 20, 0.02)
    runs = data(terms(2, 1, [{"x1": 0.05, "x2": 1.0}, {"x1": -1.0, "x2": 0.02}]), 1, [[1, 0], [0, 1]], t, 0.01, 3)
    with pytest.warns(FitQualityWarning, match="the fitted linear system is unstable"):
        LinearODE().fit(runs, t)
    with warnings.catch_warnings(record=True) as caught:  # issue 73: a stable model of growing data may be
        warnings.simplefilter("always", FitQualityWarning)  # told not to reproduce it, but it is not unstable
        assert LinearODE(stable=True).fit(runs, t).is_stable_
    assert not any("unstable" in str(w.message) for w in caught)
    assert np.max(np.linalg.eigvals(A).real) > 0


def test_an_optimiser_at_its_iteration_limit_warns(monkeypatch):
    from functools import partial

    from fitting.ode import linear, stable

    monkeypatch.setattr(linear, "stable_least_squares", partial(stable.stable_least_squares, max_iter=2))
    t = np.arange(0, 20, 0.02)
    runs = data(terms(2, 1, [{"x1": 0.05, "x2": 1.0}, {"x1": -1.0, "x2": 0.02}]), 1, [[1, 0], [0, 1]], t, 0.01, 3)
    with pytest.warns(FitQualityWarning, match="stable fit's optimiser stopped after 2 iterations"):
        model = LinearODE(stable=True, derivative="weak").fit(runs, t)
    assert model.fit_info_["converged"] is False and model.fit_info_["max_iter"] == 2


@pytest.mark.slow
def test_warnings_are_silenced_by_the_filter_and_point_at_the_caller():
    coef, degree, x0s, t = CASES["spiral"]
    runs = data(coef, degree, x0s, t, 0.01, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        LinearODE().fit(runs, t)
    assert caught and all(w.filename == __file__ for w in caught if w.category is FitQualityWarning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", FitQualityWarning)
        LinearODE().fit(runs, t)
    assert not [w for w in caught if w.category is FitQualityWarning]
