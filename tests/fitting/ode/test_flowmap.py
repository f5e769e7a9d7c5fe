"""Linear systems from their H-step map (fitting.ode.flowmap)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fitting import LinearODE, LotkaVolterra, linear_solution
from fitting.ode import FitQualityWarning

from .helpers import sparse_stable_system


def test_flow_map_recovers_a_linear_system_and_can_be_made_stable():
    from fitting import FlowMap

    A, b = sparse_stable_system(K=4, n_off=2, seed=12)
    rng = np.random.default_rng(12)
    t = np.arange(0, 8, 0.01)
    runs = [linear_solution(A, b, rng.normal(scale=3, size=4), t) for _ in range(3)]
    model = LinearODE("ols", derivative="flowmap").fit(runs, 0.01)
    assert model.formulation_.horizon >= 1 and model.derivative == "flowmap"
    np.testing.assert_allclose(model.A_, A, atol=1e-6 * np.abs(A).max())
    np.testing.assert_allclose(model.b_, b, atol=1e-6 * np.abs(b).max())
    assert model.score(runs) > 1 - 1e-10  # rows: the state one lag ahead
    # growing spiral: the unconstrained map is unstable, the stable one is not
    G = np.array([[0.1, 1.0], [-1.0, 0.05]])
    grow = [linear_solution(G, np.zeros(2), rng.normal(size=2), np.arange(0, 3, 0.01)) for _ in range(3)]
    assert not LinearODE(derivative=FlowMap(20)).fit(grow, 0.01).is_stable_
    stable = LinearODE(derivative=FlowMap(20), stable=True).fit(grow, 0.01)
    assert stable.is_stable_ and stable.fit_info_["projected"]
    with pytest.raises(ValueError, match="LinearODE only"):
        LotkaVolterra(derivative="flowmap").fit(grow, 0.01)
    with pytest.raises(ValueError, match="uniformly spaced"):
        LinearODE(derivative="flowmap").fit(grow[0], np.sort(rng.uniform(0, 3, 300)))
    with pytest.raises(ValueError, match="FlowMap horizon"):
        LinearODE(derivative=FlowMap(0)).fit(grow, 0.01)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), K=st.integers(2, 6), n_flip=st.integers(1, 2), tau=st.floats(0.01, 10))
def test_sign_flipping_modes_keep_their_decay_and_the_rest_state(seed, K, n_flip, tau):
    """A map eigenvalue lambda < 0 (no real flow flips a mode's sign) becomes
    log|lambda| / tau in A, the other modes are untouched and the rest state
    of the fitted map, x* = (I - M)^-1 c, is the fitted system's equilibrium."""
    from fitting.ode.flowmap import RADIUS, map_to_generator

    rng = np.random.default_rng(seed)
    lam = rng.uniform(0.2, 0.95, K)
    lam[:n_flip] *= -1
    V = rng.normal(size=(K, K)) + 2 * np.eye(K)
    M = V @ np.diag(lam) @ np.linalg.inv(V)
    c = rng.normal(size=K)
    coef, info = map_to_generator(np.column_stack([c, M]), tau, stable=False)
    b, A = coef[:, 0], coef[:, 1:]
    assert info["sign_flipping_modes"] == n_flip and not info["projected"]
    np.testing.assert_allclose(np.sort(np.linalg.eigvals(A).real), np.sort(np.log(np.abs(lam)) / tau),
                               rtol=1e-6, atol=1e-9 / tau)
    rest = np.linalg.solve(np.eye(K) - M, c)
    np.testing.assert_allclose(np.linalg.solve(A, -b), rest, rtol=1e-6, atol=1e-8 * np.abs(rest).max())
    assert info["logm_error"] < 1e-8 and info["eigen_rebuild_error"] < 1e-8
    # an unstable mode besides: with stable=True it is pulled onto the radius, and the
    # rest state kept is that of the projected map
    lam, kept = np.append(lam, 1.2), np.append(lam, RADIUS)
    V = rng.normal(size=(K + 1, K + 1)) + 2 * np.eye(K + 1)
    M, c = V @ np.diag(lam) @ np.linalg.inv(V), rng.normal(size=K + 1)
    coef, info = map_to_generator(np.column_stack([c, M]), tau, stable=True)
    b, A = coef[:, 0], coef[:, 1:]
    assert info["projected"] and info["sign_flipping_modes"] == n_flip
    assert np.linalg.eigvals(A).real.max() < 0
    rest = np.linalg.solve(np.eye(K + 1) - V @ np.diag(kept) @ np.linalg.inv(V), c)
    # the projected mode sits at 1 - RADIUS = 1e-3 from 1, so I - M can be ill-conditioned (a drawn V
    # of condition 4e4 gave cond(I - M) = 2e11 and a forward error of 1.4e-6 with a backward error of
    # 6e-13): the rest state is checked as an equilibrium of the fitted generator, relative to the
    # sizes of the terms that cancel (a wrong rest state leaves a residual of their size)
    residual = np.abs(A @ rest + b)
    assert np.all(residual <= 1e-9 * (np.abs(A) @ np.abs(rest) + np.abs(b)))


def test_a_defective_flow_map_with_a_sign_flip_warns():
    """Modes are changed through the eigenvectors; a Jordan block has too few,
    so the fit cannot follow the map and says so."""
    from fitting.ode.flowmap import map_to_generator

    M = np.array([[-0.5, 1.0, 0.0], [0.0, -0.5, 1.0], [0.0, 0.0, -0.5]])
    with pytest.warns(FitQualityWarning, match="nearly defective"):
        _, info = map_to_generator(np.column_stack([np.ones(3), M]), 1.0, stable=False)
    assert info["eigen_rebuild_error"] > 1e-8
