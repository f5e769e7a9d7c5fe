"""Solutions of fitted systems (fitting.ode.integrate): the exact linear
solution, rollouts, blow-ups reported."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from fitting import BlowUpError, LinearODE, LotkaVolterra, linear_solution


@pytest.mark.parametrize("singular", [False, True])
def test_analytic_solution_matches_solve_ivp(singular):
    rng = np.random.default_rng(11 + singular)
    K = 6
    M = rng.normal(size=(K, K))
    A = -(M @ M.T) / K - 0.1 * np.eye(K)  # stable
    if singular:
        U, s, Vt = np.linalg.svd(A)
        s[-1] = 0.0
        A = U @ np.diag(s) @ Vt
        assert np.linalg.matrix_rank(A) == K - 1
    b = rng.normal(size=K)
    x0 = rng.normal(size=K)
    t = np.linspace(0, 8, 81)
    exact = linear_solution(A, b, x0, t)
    sol = solve_ivp(lambda _t, x: A @ x + b, (0, 8), x0, t_eval=t, method="DOP853", rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(exact, sol.y.T, rtol=1e-8, atol=1e-8 * np.abs(sol.y).max())
    # a fitted model: its exact solution against its own solve_ivp integration
    model = LinearODE("ols", derivative="central").fit(exact, t)
    ivp = model.simulate(x0, t, method="ivp", rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(model.simulate(x0, t, method="exact"), ivp, rtol=1e-8, atol=1e-8 * np.abs(ivp).max())


def test_rollout_reproduces_a_forward_difference_fit_exactly():
    rng = np.random.default_rng(3)
    A = np.array([[0.98, 0.01], [-0.02, 0.97]])  # a discrete linear map x <- A x + b
    b = np.array([0.1, -0.05])
    x = [rng.normal(size=2)]
    for _ in range(200):
        x.append(A @ x[-1] + b)
    x = np.array(x)
    model = LinearODE("ols", derivative="forward").fit(x, 1.0)
    sim = model.simulate(x[0], np.arange(201.0), method="rollout")
    np.testing.assert_allclose(sim, x, rtol=1e-9, atol=1e-12)
    assert model.trajectory_score(x, method="rollout") > 1 - 1e-12


def test_blow_up_is_reported_not_returned():
    t = np.arange(0, 2, 0.01)
    x = np.exp(t)[:, None] * np.array([1.0, 2.0])
    model = LinearODE("ols", derivative="central").fit(x, 0.01)
    long = np.arange(0, 40, 0.01)
    for method in ("exact", "ivp", "rollout"):
        with pytest.raises(BlowUpError) as info:
            model.simulate(x[0], long, method=method)
        assert 8 < info.value.time < 40
        assert np.all(np.isfinite(info.value.partial))
    lv = LotkaVolterra("general", "ols", derivative="central").fit(x, 0.01)
    with pytest.raises(BlowUpError):
        lv.simulate(x[0], long)


def test_a_blow_up_survives_pickling():
    """Process pools (joblib, concurrent.futures) pickle a worker's exception to re-raise it."""
    import pickle

    err = BlowUpError(2.5, 1e3, np.ones((4, 2)))
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is BlowUpError and str(back) == str(err)
    assert back.time == 2.5 and back.limit == 1e3 and np.array_equal(back.partial, err.partial)


def test_a_pickled_blow_up_keeps_its_notes():
    import pickle

    err = BlowUpError(1.0, 10.0, np.zeros((0, 3)))
    err.add_note("while forecasting run 2")
    back = pickle.loads(pickle.dumps(err))
    assert back.__notes__ == ["while forecasting run 2"] and back.partial.shape == (0, 3)
