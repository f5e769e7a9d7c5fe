"""The digits-collapse experiment (effective_theory.experiments)."""
import numpy as np


def test_digits_collapse_keeps_Z():
    from effective_theory.experiments import digits_collapse
    result = digits_collapse(steps=60, seed=1, record_every=10)
    assert result.within_share[-1] < 1e-2 * result.within_share[0]
    z = result.trajectory.scalars["Z"]
    np.testing.assert_allclose(z, z[0], rtol=1e-12)
