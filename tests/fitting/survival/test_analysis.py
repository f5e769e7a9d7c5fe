"""The reference analysis of survival signals (fitting.survival.analysis.survival_ode_analysis)."""
import numpy as np

from fitting import Lasso, LinearODE, linear_solution, survival_ode_analysis

from ..ode.helpers import sparse_stable_system


def test_survival_ode_analysis_on_a_known_linear_system():
    A, b = sparse_stable_system(K=6, n_off=4, seed=4)
    A = A * 0.002  # slow dynamics in units of steps, signals of order 100 as in the survival MLP
    rng = np.random.default_rng(4)
    steps = np.arange(3000)
    x = linear_solution(A, b, rng.uniform(50, 150, size=6), steps.astype(float))
    report = survival_ode_analysis(x, steps, n_steps=1000, alpha=0.01)
    assert report.n_steps == 1000 and report.n_frequencies == 6
    assert report.ols_r2 > 0.999 and report.lasso_r2 > 0.9
    eig = np.linalg.eigvals(report.lasso.A_)
    assert report.max_real_eigenvalue == eig.real.max() and report.stable == bool(np.all(eig.real < 0))
    assert report.lasso_r2 == report.lasso.score(x, steps.astype(float), window=(0, 1000))
    assert report.heldout_window == (1000, 2000)
    assert report.trajectory_r2 > 0.999 and report.rollout_r2 > 0.999
    independent = LinearODE(Lasso(0.01, standardize=False), derivative="forward", window=(0, 1000)).fit(x, steps.astype(float))
    assert report.heldout_r2 == independent.trajectory_score(x, steps.astype(float), window=(1000, 2000))
    assert report.heldout_r2 > 0.9
    assert 0 < report.lasso_sparsity < 1
    text = report.summary()
    assert "reference" in text and "held out" in text
    assert set(report.as_dict()) >= {"lasso_r2", "ols_r2", "heldout_r2", "notes"}
