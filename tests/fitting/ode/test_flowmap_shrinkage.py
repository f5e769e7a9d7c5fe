"""The flow map's shrinkage towards the identity map (persistence)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.linalg import expm

from fitting import FlowMap, LinearODE
from fitting.ode.flowmap import choose_shrinkage, fit_flow_map


def linear_run(seed: int, T: int = 400, dt: float = 0.05, noise: float = 0.0):
    rng = np.random.default_rng(seed)
    A = np.array([[-0.3, 1.0], [-1.0, -0.3]])
    b = np.array([0.2, -0.1])
    x = np.empty((T, 2))
    x[0] = rng.normal(size=2) * 2
    step = expm(dt * np.block([[A, b[:, None]], [np.zeros((1, 3))]]))
    for i in range(1, T):
        x[i] = step[:2, :2] @ x[i - 1] + step[:2, 2]
    return x + noise * rng.normal(size=x.shape), dt, A, b


def test_zero_shrinkage_is_plain_least_squares():
    x, dt, _, _ = linear_run(0, noise=0.01)
    H = 5
    Theta = np.column_stack([np.ones(len(x) - H), x[:-H]])
    plain = np.linalg.lstsq(Theta, x[H:], rcond=None)[0].T
    assert np.allclose(fit_flow_map(Theta, x[H:], 0.0), plain, rtol=1e-10, atol=1e-12)


@settings(deadline=None, max_examples=25)
@given(st.integers(0, 10_000), st.floats(1e-4, 1e3))
def test_shrinkage_solves_the_scaled_ridge_problem(seed, lam):
    """The map minimises ||increment - Z W||^2 + lam n ||W||^2 on unit-RMS columns Z."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3)) * rng.uniform(0.1, 10, 3)
    Y = X + rng.normal(size=X.shape)
    Theta = np.column_stack([np.ones(len(X)), X])
    C = fit_flow_map(Theta, Y, lam)
    scale = np.sqrt(np.mean(Theta**2, axis=0))
    W = (C - np.column_stack([np.zeros(3), np.eye(3)])).T * scale[:, None]
    Z = Theta / scale
    gradient = Z.T @ (Z @ W - (Y - X)) + lam * len(Z) * W
    assert np.abs(gradient).max() <= 1e-8 * max(1.0, np.abs(Z.T @ (Y - X)).max())


def test_infinite_shrinkage_is_persistence():
    x, dt, _, _ = linear_run(1, noise=0.01)
    Theta = np.column_stack([np.ones(len(x) - 3), x[:-3]])
    C = fit_flow_map(Theta, x[3:], np.inf)
    assert np.array_equal(C, np.column_stack([np.zeros(2), np.eye(2)]))
    model = LinearODE(derivative=FlowMap(shrinkage=np.inf)).fit(x, dt)
    t = np.arange(100) * dt
    assert np.allclose(model.simulate(x[0], t), x[0], atol=1e-9)


def test_auto_keeps_a_predictable_linear_system():
    """Noise-free linear data: the window's last third is forecast best
    without shrinkage, and the true A, b come back."""
    x, dt, A, b = linear_run(2)
    model = LinearODE(stable=True).fit(x, dt)
    assert model.fit_info_["shrinkage"] == 0.0
    assert np.allclose(model.A_, A, atol=1e-6) and np.allclose(model.b_, b, atol=1e-6)


def test_auto_moves_towards_persistence_when_the_dynamics_change():
    """A run that moves fast in its first two thirds and stops: the plain map
    extrapolates the motion, the chosen shrinkage forecasts the rest better."""
    t = np.arange(600) * 1.0
    level = np.tanh(t / 120.0)[:, None] * np.array([1.0, -0.5, 0.3])
    x = level + 0.002 * np.random.default_rng(3).normal(size=level.shape)
    chosen, errors = choose_shrinkage([x], 20)
    assert chosen > 0 and errors[chosen] < errors[0.0]


def test_too_short_to_split_uses_plain_least_squares():
    x = np.random.default_rng(4).normal(size=(12, 2))
    assert choose_shrinkage([x], 5) == (0.0, {})


@pytest.mark.parametrize("value, kind", [(-1.0, ValueError), (float("nan"), ValueError), ("big", TypeError),
                                         (True, TypeError), ([1.0], TypeError)])
def test_bad_shrinkage_is_refused(value, kind):
    x, dt, _, _ = linear_run(5)
    with pytest.raises(kind, match="FlowMap shrinkage"):
        LinearODE(derivative=FlowMap(shrinkage=value)).fit(x, dt)
