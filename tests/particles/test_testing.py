"""The testing kit (particles.testing): checks fail on wrong forces with a
message naming the property and the numbers, refuse laws they do not apply
to, and the strategies build valid objects."""
import math

import numpy as np
import pytest
from hypothesis import given, settings

from particles import (ForceParams, PairEnergy, PairTerm, Trajectory, forces, gaussian_clustering, modular_addition,
                       addition)
from particles.reference import pair_forces_reference, pair_sums_reference
from particles.testing import (check_centroid_conserved, check_energy_decreases, check_forces_are_gradient,
                               check_relabelling_equivariance, check_same_seed_same_trajectory,
                               check_total_force_vanishes, check_zero_torque, rotation_invariant,
                               translation_invariant)
from particles.testing import strategies as pst
from particles.testing.strategies import SoftParams, soft_bump, soft_well


def _system(p=7, d=2, seed=0, fraction=0.8):
    rng = np.random.default_rng(seed)
    train = modular_addition(p).split(fraction, seed=rng)[0]
    return rng.normal(scale=1.5, size=(p, d)), train


LAWS = [ForceParams(), ForceParams(lam=1.0, wd=0.0), gaussian_clustering(wd=0.2)]


@pytest.mark.parametrize("law", LAWS)
def test_sign_flipped_forces_fail_with_numbers(law):
    x, train = _system()
    with pytest.raises(AssertionError, match=r"forces are not -grad U .*measured \d\.\d+e[+-]\d+, allowed 1\.000e-05"
                                             r"; worst at particle \d+, component \d"):
        check_forces_are_gradient(law, x, train, forces=lambda x, t, l: -forces(x, t, l))


def _forces_missing_factor_two(x, train, law):
    """Pair forces scattered once to a, once to b: wrong for u = (a, a),
    whose pair sum 2 x_a moves twice as fast."""
    f_pairs, _ = pair_forces_reference(pair_sums_reference(x, train.pairs), train.labels, law)
    out = np.zeros_like(x)
    for (a, b), f in zip(train.pairs, f_pairs):
        out[a] += f
        if b != a:
            out[b] += f
    return out - law.effective_wd * x


@pytest.mark.parametrize("law", LAWS)
def test_missing_factor_two_on_diagonal_pairs_fails(law):
    x, train = _system(fraction=1.0)  # every (a, a) is a training pair
    check_forces_are_gradient(law, x, train)  # the package's forces pass
    with pytest.raises(AssertionError, match="forces are not -grad U") as info:
        check_forces_are_gradient(law, x, train, forces=_forces_missing_factor_two)
    measured = float(str(info.value).split("measured ")[1].split(",")[0])
    assert measured > 1e-3


def _wrong_sign(r2, prm):  # d/dr2 of k / (1 + r2/s^2)^2 with its sign flipped: the bump now attracts
    return 2.0 * prm.k / (prm.s * prm.s) / (1.0 + r2 / (prm.s * prm.s)) ** 3


def _wrong_derivative_law():
    law = PairEnergy(distance=PairTerm(same=soft_well, other=soft_bump, params=SoftParams(1.5, 0.9),
                                       other_derivative=_wrong_sign))
    x, train = _system(seed=3)
    return law, x, train


@pytest.mark.slow
def test_wrong_supplied_derivative_fails_on_the_compiled_path():
    law, x, train = _wrong_derivative_law()
    with pytest.raises(AssertionError, match="forces are not -grad U"):
        check_forces_are_gradient(law, x, train)


@pytest.mark.slow  # compiles the law's Euler loop
def test_wrong_supplied_derivative_raises_the_energy_along_the_flow():
    law, x, train = _wrong_derivative_law()
    with pytest.raises(AssertionError, match=r"U increased along the flow .*U went from"):
        check_energy_decreases(law, x, train)


def test_total_force_and_torque_checks_catch_a_drift():
    x, train = _system()
    law = ForceParams(wd=0.0)
    drift = lambda x, t, l: forces(x, t, l) + np.array([0.0, 1e-3])  # noqa: E731
    with pytest.raises(AssertionError, match=r"the total force sum_a F_a is not 0 .*sum_a F_a = \["):
        check_total_force_vanishes(law, x, train, forces=drift)
    spin = lambda x, t, l: forces(x, t, l) + 1e-3 * np.stack([-x[:, 1], x[:, 0]], axis=1)  # noqa: E731
    with pytest.raises(AssertionError, match=r"the total torque .*torque = "):
        check_zero_torque(law, x, train, forces=spin)


def test_relabelling_check_catches_a_label_dependent_force():
    x, train = _system(p=7)
    law = ForceParams(wd=0.0)
    # a force that depends on the token index, not on the structure
    biased = lambda x, t, l: forces(x, t, l) + 1e-3 * np.arange(x.shape[0])[:, None]  # noqa: E731
    with pytest.raises(AssertionError, match=r"forces are not permuted by the relabelling k -> 3 k mod 7"):
        check_relabelling_equivariance(law, x, train, 3, forces=biased)


def test_checks_refuse_laws_they_do_not_apply_to():
    x, train = _system()
    with pytest.raises(ValueError, match="translation-invariant"):
        check_total_force_vanishes(ForceParams(wd=0.1), x, train)
    with pytest.raises(ValueError, match="translation-invariant"):
        check_centroid_conserved(gaussian_clustering(wd=0.1), x, train)
    with pytest.raises(ValueError, match="polar"):
        check_zero_torque(ForceParams(lam=1.0, alignment="polar"), x, train)
    with pytest.raises(ValueError, match="d = 2"):
        check_zero_torque(ForceParams(), np.zeros((7, 3)), train)
    with pytest.raises(ValueError, match="coprime"):
        check_relabelling_equivariance(ForceParams(), x, train, 7)
    with pytest.raises(ValueError, match="modular-addition pairs"):
        xa = np.random.default_rng(0).normal(size=(5, 2))
        check_relabelling_equivariance(ForceParams(), xa, addition(5), 2)
    with pytest.raises(TypeError, match="ForceParams or a PairEnergy"):
        check_forces_are_gradient("grids", x, train)


def test_invariance_predicates():
    assert translation_invariant(ForceParams(wd=0.0))
    assert not translation_invariant(ForceParams(wd=0.0, lam=1.0))
    assert translation_invariant(ForceParams(lam=1.0, wd=0.0, wd_target="classifier"))  # alignment off at wd = 0
    assert translation_invariant(gaussian_clustering(wd=0.0))
    assert rotation_invariant(ForceParams(lam=1.0)) and not rotation_invariant(ForceParams(lam=1.0, alignment="polar"))


def test_passing_checks_return_their_measure():
    x, train = _system()
    law = ForceParams(wd=0.0)
    assert check_forces_are_gradient(law, x, train) < 1e-5
    assert check_total_force_vanishes(law, x, train) < 1e-10
    assert check_same_seed_same_trajectory(law, x, train, steps=10) == 0.0


@settings(deadline=None, max_examples=20)
@given(pst.trajectories())
def test_trajectory_strategy_round_trips(tmp_path_factory, traj):
    path = tmp_path_factory.mktemp("t") / "t.npz"
    traj.save(path)
    back = Trajectory.load(path)
    assert np.array_equal(back.embeddings, traj.embeddings) and back.meta == traj.meta


@settings(deadline=None, max_examples=30)
@given(pst.systems(law=pst.force_params()))
def test_systems_strategy_is_consistent(system):
    law, x, train = system
    assert x.shape[0] == train.p and len(train) >= 1
    assert x.shape[1] >= (2 if law.effective_lam > 0 else 1)
    assert math.isfinite(float(np.abs(x).max()))


def test_relabelling_identity_and_bad_tolerances_are_refused():
    x, train = _system(p=7)
    with pytest.raises(ValueError, match="identity relabelling"):
        check_relabelling_equivariance(ForceParams(), x, train, 8)
    with pytest.raises(ValueError, match="h must be a finite number > 0"):
        check_forces_are_gradient(ForceParams(), x, train, h=0.0)
    with pytest.raises(ValueError, match="rtol must be"):
        check_forces_are_gradient(ForceParams(), x, train, rtol=-1)
