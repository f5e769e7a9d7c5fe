"""Linear relations among the states (fitting.ode.relations): conserved totals
found, named and reported in the user's names."""
import warnings

import numpy as np
import pytest

from fitting import LotkaVolterra, ODEModel, PolynomialLibrary

from .helpers import integrate, predator_prey


def sir(t, z, beta=1.5, gamma=0.3):
    s, i, r = z
    return [-beta * s * i, beta * s * i - gamma * i, gamma * i]


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_a_conserved_total_is_reported(noise):
    """S + I + R = 1 makes the quadratic library's columns dependent: the fit
    warns, names the relation and records it; a system without one does not."""
    from fitting.ode import LinearRelationWarning

    rng = np.random.default_rng(36)
    t = np.arange(0, 30, 0.05)
    runs = []
    for _ in range(3):
        i0, r0 = rng.uniform(0.005, 0.05), rng.uniform(0.0, 0.2)
        x = integrate(sir, [1 - i0 - r0, i0, r0], t)
        runs.append(x + noise * np.sqrt(np.mean(x**2, axis=0)) * rng.normal(size=x.shape))
    with pytest.warns(LinearRelationWarning, match="no more than the noise"):
        model = LotkaVolterra().fit(runs, 0.05)
    rel = model.fit_info_["linear_relation"]
    np.testing.assert_allclose(rel["combination"], np.ones(3), atol=0.03)  # S + I + R
    assert rel["value"] == pytest.approx(1.0, rel=0.01)
    pp = [integrate(predator_prey, x0, np.arange(0, 30, 0.01)) for x0 in ([2.0, 1.0], [3.0, 2.0])]
    noisy = [r + 0.05 * np.sqrt(np.mean(r**2, axis=0)) * rng.normal(size=r.shape) for r in pp]
    with warnings.catch_warnings():
        warnings.simplefilter("error", LinearRelationWarning)
        fitted = LotkaVolterra().fit(noisy, 0.01)
    assert "linear_relation" not in getattr(fitted, "fit_info_", {})


def test_relation_among_noisy_columns_is_found_next_to_a_quiet_one():
    """x2 = 1 - x1 with 2 % noise each, x3 small and nearly noise-free: the
    direction is chosen against the noise, so x1 + x2 = 1 is found (the least
    varying raw direction would be x3's)."""
    from fitting.ode.relations import linear_relation

    rng = np.random.default_rng(37)
    t = np.linspace(0, 20, 2000)
    x1 = 0.5 + 0.3 * np.sin(t)
    x = np.column_stack([x1, 1 - x1, 1e-3 * np.cos(1.3 * t)])
    x[:, :2] += 0.02 * rng.normal(size=(len(t), 2))
    x[:, 2] += 1e-6 * rng.normal(size=len(t))
    rel = linear_relation([(x, t)])
    assert rel is not None
    np.testing.assert_allclose(rel["combination"][:2], [1, 1], atol=0.05)
    # x3's share is undetermined within the noise: whatever it is, it moves c . x by < 5 % of the noise
    assert abs(rel["combination"][2]) * 1e-3 < 0.05 * rel["noise_sd"]
    assert rel["value"] == pytest.approx(1.0, abs=0.01)


def test_linear_terms_alone_are_not_degenerate_under_a_relation():
    """x1 + x2 = 1 makes a constant column (or products) dependent, not the
    two linear columns alone: only the library with a constant warns."""
    from fitting import ODEModel
    from fitting.ode import LinearRelationWarning

    t = np.linspace(0, 20, 2000)
    x1 = 0.5 + 0.3 * np.sin(t)
    x = np.column_stack([x1, 1 - x1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", LinearRelationWarning)
        ODEModel(library=PolynomialLibrary(1, include_bias=False), regressor="ols").fit(x, t)
    with pytest.warns(LinearRelationWarning):
        ODEModel(library=PolynomialLibrary(1), regressor="ols").fit(x, t)


def test_the_linear_relation_warning_is_one_line_in_the_users_names():
    from fitting.ode import LinearRelationWarning

    rng = np.random.default_rng(4)
    t = np.arange(0, 10, 0.01)
    a = np.exp(-0.3 * t)
    x = np.column_stack([a, 1 - a, 0.5 * np.cos(t)]) + 1e-4 * rng.standard_normal((len(t), 3))
    with pytest.warns(LinearRelationWarning) as caught:
        ODEModel(library=2).fit(x, t, names=["S", "R", "w"])
    message = str(next(w.message for w in caught if w.category is LinearRelationWarning))
    assert "\n" not in message and len(message) < 400
    assert "S" in message and "R" in message and "x1" not in message
