"""Property tests of every invariant of SPEC section 1, on built-in and
custom laws, through the public kit (particles.testing)."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from particles.testing import (check_centroid_conserved, check_energy_decreases, check_forces_are_gradient,
                               check_relabelling_equivariance, check_same_seed_same_trajectory,
                               check_total_force_vanishes, check_zero_torque, translation_invariant)
from particles.testing import strategies as pst

PROPS = settings(deadline=None, max_examples=40)

# custom laws of the quick suite: one set of functions (a distance term with
# complex-step derivatives) keeps compilation short; the slow step draws every
# kind, cosine terms included (test_every_check_on_every_kind_of_law,
# test_same_seed_same_trajectory_every_law)
QUICK = dict(kinds=("rational",), cosine_kinds=())


def laws(**kw):
    return pst.laws(**QUICK, **kw)


@PROPS
@given(pst.systems(law=laws(alignment=False, wd=False)))
def test_total_force_vanishes_without_alignment_and_decay(system):
    check_total_force_vanishes(*system)


@settings(deadline=None, max_examples=15)
@given(pst.systems(law=laws(alignment=False, wd=False)))
def test_centroid_conserved_by_euler(system):
    check_centroid_conserved(*system)


@PROPS
@given(pst.systems(law=laws(wd=False, gradient_only=True), d=2))
def test_zero_total_torque_for_gradient_laws(system):
    check_zero_torque(*system)


@PROPS
@given(pst.systems(law=laws(gradient_only=True)))
def test_force_is_minus_gradient(system):
    check_forces_are_gradient(*system)


@settings(deadline=None, max_examples=20)
@given(pst.systems(law=laws(gradient_only=True)))
def test_energy_does_not_increase_along_flow(system):
    check_energy_decreases(*system)


@PROPS
@given(pst.systems(law=laws(), kinds=("modular",)), st.data())
def test_relabelling_equivariance(system, data):
    law, x, train = system
    p = x.shape[0]
    g = data.draw(st.sampled_from([g for g in range(2, p) if math.gcd(g, p) == 1]))
    check_relabelling_equivariance(law, x, train, g)


@settings(deadline=None, max_examples=10)
@given(pst.systems(law=laws(alignment=False), p=(3, 7)))
def test_same_seed_same_trajectory(system):
    # quick suite: laws without alignment (one custom set of functions to
    # compile in parallel form); the slow step draws every law
    check_same_seed_same_trajectory(*system, steps=20)


@pytest.mark.slow
@settings(deadline=None, max_examples=30)
@given(pst.systems(law=pst.laws(), p=(3, 7)))
def test_same_seed_same_trajectory_every_law(system):
    check_same_seed_same_trajectory(*system, steps=20)


@pytest.mark.slow
@settings(deadline=None, max_examples=60)
@given(pst.systems(law=pst.laws(gradient_only=True), d=2, kinds=("modular",)), st.data())
def test_every_check_on_every_kind_of_law(system, data):
    # every distance and cosine form of pair_energies (each compiles once)
    law, x, train = system
    p = x.shape[0]
    check_forces_are_gradient(law, x, train)
    check_zero_torque(law, x, train)
    check_energy_decreases(law, x, train, steps=50)
    check_relabelling_equivariance(law, x, train, data.draw(st.sampled_from(
        [g for g in range(2, p) if math.gcd(g, p) == 1])))
    if translation_invariant(law):
        check_total_force_vanishes(law, x, train)
        check_centroid_conserved(law, x, train)
