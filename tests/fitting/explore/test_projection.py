"""The 2-D views: principal plane against a NumPy eigen-decomposition, signs kept between frames."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fitting.explore.projection import principal_plane, project


@settings(deadline=None, max_examples=60)
@given(st.integers(3, 30), st.integers(3, 9), st.integers(0, 2 ** 31))
def test_plane_against_eigendecomposition(n, d, seed):
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((n, d)) * rng.uniform(0.1, 3, d)
    center, basis, explained = principal_plane(E)
    C = np.cov((E - E.mean(0)).T, bias=True)
    w, v = np.linalg.eigh(C)
    np.testing.assert_allclose(center, E.mean(0), atol=1e-12)
    np.testing.assert_allclose(basis.T @ basis, np.eye(2), atol=1e-10)
    assert abs(explained - w[-2:].sum() / w.sum()) < 1e-10
    # the plane is the span of the two leading eigenvectors (when they are separated from the rest)
    if w[-2] - w[-3] > 1e-6 * w[-1]:
        P = v[:, -2:] @ v[:, -2:].T
        np.testing.assert_allclose(P @ basis, basis, atol=1e-6)
    Y = project(E, center, basis)
    np.testing.assert_allclose(Y, (E - E.mean(0)) @ basis, atol=1e-12)


def test_signs_follow_the_previous_frame():
    rng = np.random.default_rng(1)
    E = rng.standard_normal((20, 5)) * [5, 2, 1, 0.5, 0.1]
    _, basis, _ = principal_plane(E)
    _, again, _ = principal_plane(E + 1e-9 * rng.standard_normal(E.shape), previous=-basis)
    assert np.all(np.sum(again * -basis, axis=0) > 0.99)


def test_plane_itself_for_d_up_to_2():
    E = np.arange(10.0).reshape(5, 2)
    center, basis, explained = principal_plane(E)
    assert explained == 1.0
    np.testing.assert_array_equal(project(E, center, basis), E)
    np.testing.assert_array_equal(project(E[:, :1], center[:1], basis[:1]), np.c_[E[:, :1], np.zeros(5)])
