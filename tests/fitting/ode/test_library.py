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
