"""fitting.training.activations: the fast tanh stays within its stated
absolute error of tanh, eager and compiled, in float32 and float64; eager,
its relative error is a few eps too."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

if os.environ.get("EMBDYN_REQUIRE_TORCH"):  # the CI step that installed the extra: never skip
    import torch
else:
    torch = pytest.importorskip("torch")

from fitting.training.activations import ABS_ERROR_EPS, tanh_fast, tanh_of  # noqa: E402

DTYPES = [torch.float32, torch.float64]


def dense_inputs(dtype):
    mag = torch.logspace(-30, 2, 100_001, dtype=torch.float64)
    line = torch.linspace(-25, 25, 100_001, dtype=torch.float64)
    x = torch.cat([mag, -mag, line, torch.zeros(1, dtype=torch.float64)])
    return x.to(dtype)


def reference(x):
    """tanh of the (rounded) inputs in extended precision (80-bit long double on x86)."""
    return np.tanh(x.numpy().astype(np.longdouble))


def errors_eps(fn, x):
    """(max absolute error, max relative error over x != 0), in machine epsilons of x's dtype."""
    ref, got = reference(x), fn(x).numpy().astype(np.longdouble)
    eps = np.longdouble(torch.finfo(x.dtype).eps)
    err = np.abs(got - ref) / eps
    nz = ref != 0
    return float(err.max()), float((err[nz] / np.abs(ref[nz])).max()) if nz.any() else 0.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_fast_tanh_error_bound_on_a_dense_grid(dtype):
    x = dense_inputs(dtype)
    abs_err, rel_err = errors_eps(tanh_fast, x)
    assert abs_err <= ABS_ERROR_EPS
    assert rel_err <= 4.0  # eager: expm1 keeps small |x| accurate (measured 1.4 / 1.9 eps)
    assert errors_eps(torch.tanh, x)[0] <= 1.0  # the extended-precision reference agrees with torch's own
    y = tanh_fast(x)
    assert y.dtype == dtype and y.shape == x.shape and torch.all(y.abs() <= 1)


@settings(deadline=None, max_examples=200)
@given(st.lists(st.one_of(st.floats(-25, 25, width=32), st.floats(-0.0009765625, 0.0009765625, width=32),
                          st.floats(-1e6, 1e6, width=32)), min_size=1, max_size=50),
       st.sampled_from(DTYPES))
def test_fast_tanh_error_bound_property(values, dtype):
    abs_err, rel_err = errors_eps(tanh_fast, torch.tensor(values, dtype=dtype))
    assert abs_err <= ABS_ERROR_EPS and rel_err <= 4.0


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_fast_tanh_keeps_the_absolute_bound(dtype):
    compiled = torch.compile(tanh_fast, dynamic=True)  # the grid trainer compiles it inside its step
    assert errors_eps(compiled, dense_inputs(dtype))[0] <= ABS_ERROR_EPS


def test_tanh_of_names_the_parameter():
    assert tanh_of("fast") is tanh_fast and tanh_of("exact") is torch.tanh
    with pytest.raises(ValueError, match="tanh must be one of"):
        tanh_of("approx")
