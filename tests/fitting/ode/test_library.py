"""Candidate-term libraries (fitting.ode.library)."""
import numpy as np
import pytest

from fitting import CustomLibrary, FourierLibrary, ODEModel, PolynomialLibrary


def test_libraries_name_their_columns():
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    poly = PolynomialLibrary(3)
    assert poly.feature_names(["u", "v"])[:7] == ["1", "u", "v", "u^2", "u v", "v^2", "u^3"]
    np.testing.assert_allclose(poly.transform(X)[:, 4], [2.0, 12.0])
    lib = PolynomialLibrary(1) + FourierLibrary(1) + CustomLibrary([np.exp], names=["exp({})"])
    assert lib.feature_names(["u", "v"]) == ["1", "u", "v", "sin(u)", "cos(u)", "sin(v)", "cos(v)", "exp(u)", "exp(v)"]
    assert lib.transform(X).shape == (2, 9)
    t = np.arange(0, 20, 0.01)
    x = np.column_stack([np.sin(t), np.cos(t)])  # du/dt = v, dv/dt = -u
    model = ODEModel(library=lib).fit(x, 0.01)
    assert model.equations(["u", "v"], precision=3) == ["du/dt = 1 v", "dv/dt = - 1 u"]
    import io

    buf = io.StringIO()
    model.print(["u", "v"], file=buf)
    assert buf.getvalue().splitlines()[0].startswith("du/dt = ")
    with pytest.raises(ValueError, match="degree"):
        PolynomialLibrary(0)


# ----------------------------------------------------------- exact forms of the inner loop
from hypothesis import given, settings, strategies as st  # noqa: E402

from fitting.ode.library import Library  # noqa: E402


@settings(deadline=None, max_examples=40)
@given(degree=st.integers(1, 4), bias=st.booleans(), K=st.integers(1, 5), seed=st.integers(0, 2**32 - 1),
       scale=st.floats(1e-3, 1e3))
def test_polynomial_features_equal_the_products_of_their_columns(degree, bias, K, seed, scale):
    """The monomials built from their parents are bit for bit np.prod over their factors."""
    lib = PolynomialLibrary(degree, include_bias=bias)
    X = np.random.default_rng(seed).normal(size=(30, K)) * scale
    reference = np.column_stack([np.prod(X[:, list(p)], axis=1) if p else np.ones(len(X)) for p in lib.powers(K)])
    out = lib.features(X)
    assert out.flags["C_CONTIGUOUS"] and out.shape == reference.shape
    np.testing.assert_array_equal(out, reference)


@settings(deadline=None, max_examples=40)
@given(degree=st.integers(1, 4), bias=st.booleans(), K=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_polynomial_jacobian_is_the_derivative(degree, bias, K, seed):
    """The closed-form Jacobian against central differences (the generic Library.jacobian),
    and against a hand-made derivative of one monomial."""
    lib = PolynomialLibrary(degree, include_bias=bias)
    X = np.random.default_rng(seed).uniform(-2, 2, size=(25, K))
    exact = lib.jacobian(X)
    assert exact.shape == (K, 25, lib.n_features(K))
    numeric = Library.jacobian(lib, X)
    np.testing.assert_allclose(exact, numeric, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(exact).max()))
    powers = lib.powers(K)
    col = len(powers) - 1  # x_K^degree: d/dx_K = degree x_K^(degree - 1)
    np.testing.assert_allclose(exact[K - 1, :, col], degree * X[:, K - 1] ** (degree - 1), rtol=1e-12)


def test_concatenated_libraries_stack_their_jacobians():
    lib = PolynomialLibrary(2) + FourierLibrary(1)
    X = np.random.default_rng(3).normal(size=(20, 2))
    J = lib.jacobian(X)
    np.testing.assert_array_equal(J[:, :, :6], PolynomialLibrary(2).jacobian(X))
    # d sin(x1)/dx1 = cos(x1), d cos(x1)/dx1 = -sin(x1) (central differences for the Fourier part)
    np.testing.assert_allclose(J[0, :, 6], np.cos(X[:, 0]), rtol=1e-6)
    np.testing.assert_allclose(J[0, :, 7], -np.sin(X[:, 0]), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(J[1, :, 6], 0.0, atol=1e-9)


def test_a_polynomial_subclass_with_other_columns_gets_the_generic_jacobian():
    class Shifted(PolynomialLibrary):
        def _transform(self, X):
            return super()._transform(X + 1.0) ** 2

    X = np.random.default_rng(4).normal(size=(15, 2))
    lib = Shifted(2)
    np.testing.assert_array_equal(lib.jacobian(X), Library.jacobian(lib, X))


def test_the_refit_says_so_when_its_rows_are_not_finite():
    """A coefficient so large that the rows' covariance overflows ends the
    weighted refit with a status, not an exception (LAPACK would carry NaN on)."""
    from fitting.ode.weighted import covariance_refit

    t = np.linspace(0, 10, 800)
    x = np.column_stack([np.sin(t), np.cos(t)]) + 0.01 * np.random.default_rng(5).normal(size=(800, 2))
    model = ODEModel(library=2).fit(x, t)
    coef = model.coef_.copy()
    coef[0, 3] = 1e160
    _, info = covariance_refit(coef, [x], [t], model.library_, model.formulation_)
    assert info["status"] == "covariance not positive definite"
