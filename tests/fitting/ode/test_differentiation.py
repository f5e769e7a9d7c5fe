"""Pointwise rows from estimated derivatives (fitting.ode.differentiation):
Savitzky-Golay on noisy data."""
import numpy as np

from fitting import LinearODE, LotkaVolterra, SavitzkyGolay, linear_solution

from .helpers import integrate, predator_prey, sparse_stable_system


def test_noisy_data_with_savgol_derivatives_keeps_trajectory_r2():
    rng = np.random.default_rng(7)
    t = np.arange(0, 30, 0.01)
    clean = integrate(predator_prey, [2.0, 1.0], t)
    noisy = clean * (1 + 0.01 * rng.normal(size=clean.shape))
    model = LotkaVolterra("classic", "ols", derivative=SavitzkyGolay(31, 3)).fit(noisy, 0.01)
    assert model.trajectory_score(noisy) > 0.95
    assert model.trajectory_score(clean) > 0.95
    A, b = sparse_stable_system()
    t = np.arange(0, 1, 0.01)
    runs = [linear_solution(A, b, rng.normal(scale=3, size=10), t) for _ in range(40)]
    noisy_runs = [r + 0.01 * np.std(r) * rng.normal(size=r.shape) for r in runs]
    lin = LinearODE("lasso", alpha=1e-3, derivative=SavitzkyGolay(21, 3)).fit(noisy_runs, 0.01)
    assert lin.trajectory_score(noisy_runs) > 0.95
