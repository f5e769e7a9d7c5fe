"""Property tests of the law in custom_force_law.py with the kit
(docs/custom_force_law.md). Run: python -m pytest test_custom_force_law.py"""
from hypothesis import given, settings, strategies as st

from custom_force_law import cutoff_law
from particles.testing import (check_centroid_conserved, check_energy_decreases, check_forces_are_gradient,
                               check_zero_torque)
from particles.testing import strategies as pst

# the law with drawn parameters; weight decay off, so the centroid is kept
laws = st.builds(cutoff_law, k=st.floats(0.1, 5.0), rc=st.floats(0.5, 6.0), k_r=st.floats(0.0, 3.0),
                 wd=st.just(0.0))


@settings(deadline=None, max_examples=30)
@given(pst.systems(law=laws, d=2))
def test_forces_are_minus_gradient_and_torque_free(system):
    check_forces_are_gradient(*system)
    check_zero_torque(*system)


@settings(deadline=None, max_examples=10)
@given(pst.systems(law=laws))
def test_flow_lowers_energy_and_keeps_centroid(system):
    check_energy_decreases(*system)
    check_centroid_conserved(*system)
