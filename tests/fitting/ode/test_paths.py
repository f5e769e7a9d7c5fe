"""The verdict's integrator: the compiled polynomial paths against the NumPy
reference on random systems, states and time grids."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fitting import PolynomialLibrary
from fitting.ode.paths import paths, polynomial_paths, rk4_paths


@settings(max_examples=25, deadline=None)
@given(K=st.integers(1, 4), degree=st.integers(1, 4), S=st.integers(1, 5), L=st.integers(2, 40),
       seed=st.integers(0, 2**31 - 1))
def test_compiled_paths_match_the_numpy_reference(K, degree, S, L, seed):
    rng = np.random.default_rng(seed)
    lib = PolynomialLibrary(degree)
    F = lib.n_features(K)
    coef = rng.standard_normal((K, F)) * (rng.random((K, F)) < 0.5) * 0.3
    coef[:, 1:K + 1] -= np.eye(K)  # a decay, so most paths stay in range
    X0 = rng.standard_normal((S, K))
    steps = rng.random((S, L - 1)) * 0.05 * (rng.random((S, L - 1)) > 0.1)  # uneven, some steps of 0
    times = np.concatenate([np.zeros((S, 1)), np.cumsum(steps, axis=1)], axis=1)
    limit = 50.0
    parent, variable = lib.product_plan(K)
    compiled = polynomial_paths(parent, variable, coef, X0, times, limit)
    reference = rk4_paths(lambda X: lib.features(X) @ coef.T, X0, times, limit)
    assert compiled.shape == reference.shape == (S, L, K)
    assert np.array_equal(np.isnan(compiled), np.isnan(reference))
    ok = np.isfinite(reference)
    np.testing.assert_allclose(compiled[ok], reference[ok], rtol=1e-10, atol=1e-12)


def test_a_path_that_leaves_the_range_is_nan_from_there():
    lib = PolynomialLibrary(2)
    coef = np.zeros((1, 3))
    coef[0, 2] = 1.0  # dx/dt = x^2: blows up at t = 1 from x0 = 1
    times = np.linspace(0, 2, 201)[None]
    for plan in (None, (*lib.product_plan(1), coef)):
        out = paths(lambda X: lib.features(X) @ coef.T, plan, np.ones((1, 1)), times, 1e3)
        lost = np.isnan(out[0, :, 0])
        assert lost.any() and not lost[:90].any() and lost[np.argmax(lost):].all()


def test_only_libraries_of_products_give_a_plan():
    from fitting import CustomLibrary, FourierLibrary

    parent, variable = PolynomialLibrary(2).product_plan(2)  # 1, x1, x2, x1^2, x1 x2, x2^2
    assert parent.tolist() == [-1, -1, -1, 1, 1, 2] and variable.tolist() == [-1, 0, 1, 0, 1, 1]
    assert FourierLibrary(2).product_plan(2) is None
    assert CustomLibrary([np.sin], ["sin({})"]).product_plan(1) is None
    assert (PolynomialLibrary(1) + PolynomialLibrary(2)).product_plan(2) is None
