"""The verdict on a fit (issue 73): a constructed failure warns, an exact
model of solver-tolerance data does not, and fit_quality_ holds the figures."""
import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from fitting import CustomLibrary, ODEModel
from fitting.ode import FitQualityWarning
from fitting.ode.verdict import SIMULATION_R2


def van_der_pol(_t, x):
    return [x[1], 2.0 * (1.0 - x[0] ** 2) * x[1] - x[0]]


def lorenz(_t, x):
    return [10.0 * (x[1] - x[0]), x[0] * (28.0 - x[2]) - x[1], x[0] * x[1] - 8.0 / 3.0 * x[2]]


def solver_data(f, x0, span, n=512, rtol=1e-5, noise=0.0, seed=0):
    """A trajectory as a solver writes it (relative tolerance ``rtol``), with optional noise."""
    t = np.linspace(0.0, span, n)
    x = solve_ivp(f, (0.0, span), x0, t_eval=t, rtol=rtol).y.T
    return t, x + noise * x.std(axis=0) * np.random.default_rng(seed).standard_normal(x.shape)


def fit_recording(model, x, t):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitQualityWarning)
        model.fit(x, t)
    return model, [str(w.message) for w in caught if issubclass(w.category, FitQualityWarning)]


@pytest.mark.parametrize("f, x0, span, degree", [(van_der_pol, [2.0, 0.0], 20.0, 3), (lorenz, [1.0, 1.0, 20.0], 10.0, 2)])
def test_an_exact_model_of_solver_tolerance_data_does_not_warn(f, x0, span, degree):
    """The data carry the solver's error (rtol 1e-5): the regression's whitened
    residual is large, the model exact; the verdict judges by simulation."""
    t, x = solver_data(f, x0, span)
    model, said = fit_recording(ODEModel(library=degree), x, t)
    assert said == []
    q = model.fit_quality_
    assert q["trusted"] and q["failed"] == [] and q["simulation_r2"] > 0.999 and q["bounded"]
    assert 0 < q["horizon_share"] <= 1 and q["segments"] >= 1 and q["condition"] >= 1


@pytest.mark.parametrize("f, x0, span", [(van_der_pol, [2.0, 0.0], 20.0), (lorenz, [1.0, 1.0, 20.0], 10.0)])
@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_a_library_missing_the_true_terms_warns_naming_the_simulation(f, x0, span, noise):
    t, x = solver_data(f, x0, span, noise=noise)
    model, said = fit_recording(ODEModel(library=1), x, t)  # the true terms are of degree 2 and 3
    assert len(said) == 1 and "not to be trusted" in said[0] and "R^2" in said[0] and "\n" not in said[0]
    q = model.fit_quality_
    assert not q["trusted"] and "simulation" in q["failed"] and q["simulation_r2"] < SIMULATION_R2


def test_a_model_that_runs_away_is_not_bounded():
    """Data that settle on a fixed point early, fitted with terms that are not
    the system's: outside the data's range the cubic term runs away."""
    t = np.linspace(0.0, 10.0, 400)
    x = np.exp(-3.0 * t)[:, None]  # dx/dt = -3x settles on 0 by t = 2
    coef = np.array([[0.0, -3.0, 0.0, 40.0]])  # dx/dt = -3x + 40 x^3: from x0 = 1 it leaves at once
    model = ODEModel(library=3)
    model.fit(x, t)
    from fitting.ode.verdict import fit_quality

    lib = model.library_
    q = fit_quality(lambda X: lib.features(X) @ coef.T, (*lib.product_plan(1), coef), [(x, t)], np.zeros(1),
                    lib.features(x), coef, model.blowup_factor * model.scale_)
    assert not q["trusted"] and "bounded" in q["failed"] and q["blowup_time"] is not None
    assert q["blowup_time"] < 1.0


def test_a_library_undefined_where_a_simulation_goes_is_no_crash():
    t = np.linspace(0.0, 5.0, 300)
    x = (1.0 + 0.5 * np.sin(t))[:, None]
    lib = CustomLibrary([np.log, lambda v: v], ["log({})", "{}"])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ODEModel(library=lib).fit(x, t)
    assert isinstance(model.fit_quality_["trusted"], bool)


def test_halves_that_predict_neither_other_fail_and_one_way_does_not():
    """The halves check on its own: a model fitted on a transient and its
    rest, each half judged on the other (the whole run's scale)."""
    from fitting import PolynomialLibrary
    from fitting.ode.verdict import halves_r2

    t = np.linspace(0.0, 20.0, 400)
    x = (1.0 / (1.0 + 99.0 * np.exp(-t)))[:, None]  # logistic: growth, then rest at 1
    lib = PolynomialLibrary(2)
    Theta = lib.features(x)
    Y = x * (1.0 - x)
    true = np.array([[0.0, 1.0, -1.0]])

    def model_of(coef):
        return (lambda X: lib.features(X) @ coef.T), (*lib.product_plan(1), coef)

    exact = halves_r2(lambda T, Yh: true, model_of, Theta, Y, np.zeros(400, dtype=int), [(x, t)], 50, 1e3)
    assert min(exact) > 0.99  # the true model predicts either half
    wrong = halves_r2(lambda T, Yh: np.array([[0.0, -0.5, 0.0]]), model_of, Theta, Y, np.zeros(400, dtype=int),
                      [(x, t)], 50, 1e3)
    assert max(wrong) < SIMULATION_R2  # a decay predicts neither half of a growth
    assert halves_r2(lambda T, Yh: true, model_of, Theta[:4], Y[:4], np.zeros(4, dtype=int), [(x[:4], t[:4])], 8,
                     1e3) is None  # halves with fewer rows than terms: no check
