"""The offset check's kernel against its NumPy reference on random inputs."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from particles.kernels.offset import offset_ratio_kernel, offset_ratio_reference
from particles.pair_path import offset_ratio


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 4), p=st.integers(1, 12), d=st.integers(1, 40),
       shift=st.floats(-8, 8))
def test_kernel_matches_reference(seed, m, p, d, shift):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, p, d)) + rng.normal(size=d) * 10.0 ** shift
    got, want = offset_ratio_kernel(X), offset_ratio_reference(X)
    if np.isinf(want):
        assert got == want
    else:
        assert abs(got - want) <= 1e-14 * max(1.0, want) ** 2  # the spread loses digits as the shift grows (5.6e-16 seen)
    assert offset_ratio(X) == got
    assert offset_ratio(X[0]) == offset_ratio_kernel(X[:1])


def test_edge_cases():
    assert offset_ratio_kernel(np.zeros((2, 3, 4))) == offset_ratio_reference(np.zeros((2, 3, 4))) == 0.0
    same = np.ones((2, 3, 4))  # no spread, a shift: infinitely far
    assert offset_ratio_kernel(same) == offset_ratio_reference(same) == np.inf
    rng = np.random.default_rng(3)
    for value in (np.nan, np.inf, -np.inf):  # a non-finite value in one snapshot: NaN (the direct path)
        bad = rng.normal(size=(3, 4, 5))
        bad[1, 2, 3] = value
        assert np.isnan(offset_ratio_kernel(bad)) and np.isnan(offset_ratio_reference(bad))
    bad[1, 2, 2] = np.inf  # +inf and -inf in one snapshot
    assert np.isnan(offset_ratio_kernel(bad)) and np.isnan(offset_ratio_reference(bad))
    assert offset_ratio(np.zeros((0, 3, 4))) == 0.0
