import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from fitting.forcefit.solve import nnls


@settings(deadline=None, max_examples=40)
@given(rows=st.integers(1, 400), cols=st.integers(1, 9), seed=st.integers(0, 2**31 - 1),
       nonnegative=st.booleans())
def test_nnls_equals_scipy_on_tall_and_wide_systems(rows, cols, seed, nonnegative):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(rows, cols)) * rng.uniform(0.1, 10.0, size=cols)
    b = A @ rng.normal(size=cols) + rng.normal(size=rows)
    c = nnls(A, b, nonnegative)
    if nonnegative:
        assert np.all(c >= 0.0)
        ref = optimize.nnls(A, b, maxiter=50 * cols)[0]
    else:
        ref = np.linalg.lstsq(A, b, rcond=None)[0]
    # the same residual (the minimiser is not unique when A has fewer rows than columns)
    r, r_ref = A @ c - b, A @ ref - b
    assert abs(r @ r - r_ref @ r_ref) <= 1e-9 * max(1.0, float(b @ b))


def test_nnls_takes_fortran_and_c_ordered_designs_alike():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(5000, 5))
    b = rng.normal(size=5000)
    for nonnegative in (False, True):
        assert np.allclose(nnls(np.asfortranarray(A), b, nonnegative), nnls(np.ascontiguousarray(A), b, nonnegative),
                           rtol=1e-12, atol=1e-14)
