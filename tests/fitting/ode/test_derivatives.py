"""Derivative estimators (fitting.ode.derivatives.differentiate)."""
import numpy as np
import pytest

from fitting import differentiate


def test_derivative_estimators_on_a_polynomial():
    t = np.linspace(0, 2, 201)
    x = np.column_stack([t**3, np.sin(t)])
    exact = np.column_stack([3 * t**2, np.cos(t)])
    s, d = differentiate(x, t, "forward")
    np.testing.assert_array_equal(s, x[:-1])
    assert np.max(np.abs(d - exact[:-1])) < 0.07  # O(dt) error
    s, d = differentiate(x, 0.01, "central")
    np.testing.assert_array_equal(s, x[1:-1])
    assert np.max(np.abs(d - exact[1:-1])) < 2e-4  # O(dt^2)
    s, d = differentiate(x, 0.01, "savgol", window_length=11, polyorder=3)
    assert s.shape == x.shape
    assert np.max(np.abs(d[:, 0] - exact[:, 0])) < 1e-9  # exact for a cubic
    assert np.max(np.abs(d[:, 1] - exact[:, 1])) < 2e-5
    with pytest.raises(ValueError, match="uniformly"):
        differentiate(x, t**2 + t, "savgol")
    with pytest.raises(ValueError, match="window_length"):
        differentiate(x, 0.01, "savgol", window_length=10)
    with pytest.raises(ValueError, match="method"):
        differentiate(x, 0.01, "backward")
