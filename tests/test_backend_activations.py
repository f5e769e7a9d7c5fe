"""fitting.backend.activations: the fast tanh stays within its stated
absolute error of tanh, eager and compiled, in float32 and float64."""

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

from fitting.backend.activations import ABS_ERROR_EPS, tanh_fast, tanh_of  # noqa: E402

DTYPES = [torch.float32, torch.float64]


def dense_inputs(dtype):
    mag = torch.logspace(-30, 2, 100_001, dtype=torch.float64)
    x = torch.cat([mag, -mag, torch.linspace(-25, 25, 100_001, dtype=torch.float64), torch.zeros(1, dtype=torch.float64)])
    return x.to(dtype)


def abs_error_eps(fn, x):
    ref = torch.tanh(x.to(torch.float64))  # float64 tanh of the rounded input: the reference
    if x.dtype == torch.float64:
        ref = torch.from_numpy(np.tanh(x.numpy()))
    return float(((fn(x).to(torch.float64) - ref).abs() / torch.finfo(x.dtype).eps).max())


@pytest.mark.parametrize("dtype", DTYPES)
def test_fast_tanh_error_bound_on_a_dense_grid(dtype):
    x = dense_inputs(dtype)
    err = abs_error_eps(tanh_fast, x)
    assert err <= ABS_ERROR_EPS
    assert abs_error_eps(torch.tanh, x) <= 1.0  # the reference itself is sound
    assert tanh_fast(x).dtype == dtype and tanh_fast(x).shape == x.shape
    assert torch.all(tanh_fast(x).abs() <= 1)


@settings(deadline=None, max_examples=200)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=1, max_size=50),
       st.sampled_from(DTYPES))
def test_fast_tanh_error_bound_property(values, dtype):
    x = torch.tensor(values, dtype=dtype)
    assert abs_error_eps(tanh_fast, x) <= ABS_ERROR_EPS


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_fast_tanh_keeps_the_bound(dtype):
    compiled = torch.compile(tanh_fast, dynamic=True)  # the grid trainer compiles it inside its step
    x = dense_inputs(dtype)
    assert abs_error_eps(compiled, x) <= ABS_ERROR_EPS


def test_tanh_of_names_the_parameter():
    assert tanh_of("fast") is tanh_fast and tanh_of("exact") is torch.tanh
    with pytest.raises(ValueError, match="tanh must be one of"):
        tanh_of("approx")
