"""Custom pair energies (particles.pair_energy): the same forces as the
built-in law when written the same way, compiled against the NumPy path,
the integrators, and bad input."""
import subprocess
import sys
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from particles import (ForceParams, NonFiniteStateError, PairEnergy, PairTerm, RunawayError, Trajectory,
                       cosine_alignment, energy_and_forces, fast_exp, gaussian_clustering, minimize,
                       modular_addition, simulate)
from particles.reference import energy_reference, forces_reference
from particles.testing.strategies import SoftParams, cubic_pull, exp_push, soft_bump, soft_well

PROPS = settings(deadline=None, max_examples=25)


def _system(p, d, seed, fraction=0.8):
    rng = np.random.default_rng(seed)
    train = modular_addition(p).split(fraction, seed=rng)[0]
    return rng.normal(scale=1.5, size=(p, d)), train


def _rel(a, b):
    return float(np.max(np.abs(a - b))) / max(1.0, float(np.max(np.abs(b))))


def _gaussian_equals_builtin(p, d, seed, k_a, sig_a, k_r, sig_r, wd, fast):
    x, train = _system(p, d, seed)
    e0, f0 = energy_and_forces(x, train, ForceParams(k_a=k_a, sig_a=sig_a, k_r=k_r, sig_r=sig_r, wd=wd))
    e1, f1 = energy_and_forces(x, train, gaussian_clustering(k_a, sig_a, k_r, sig_r, wd, fast=fast))
    assert _rel(f1, f0) <= 1e-12
    assert abs(e1 - e0) <= 1e-12 * max(1.0, abs(e0))
    if fast:  # the same arithmetic as the built-in kernel
        assert np.array_equal(f1, f0)


def _full_law_equals_builtin(p, d, seed, lam, sig_t, eps, axial, fast):
    x, train = _system(p, d, seed)
    prm = ForceParams(lam=lam, sig_t=sig_t, eps=eps, alignment_form="axial" if axial else "cosine")
    law = gaussian_clustering(fast=fast) + cosine_alignment(lam, sig_t, eps, axial=axial, fast=fast)
    e0, f0 = energy_and_forces(x, train, prm)
    e1, f1 = energy_and_forces(x, train, law)
    assert _rel(f1, f0) <= 1e-12
    assert abs(e1 - e0) <= 1e-12 * max(1.0, abs(e0))


GAUSSIAN = (st.integers(3, 23), st.integers(2, 4), st.integers(0, 2**31 - 1), st.floats(0.0, 3.0),
            st.floats(0.3, 3.0), st.floats(0.0, 3.0), st.floats(0.3, 3.0), st.floats(0.0, 0.5))
FULL = (st.integers(3, 17), st.integers(2, 3), st.integers(0, 2**31 - 1), st.floats(0.1, 3.0), st.floats(0.2, 1.0),
        st.floats(0.2, 1.5))


# quick suite: the fast forms (the built-in arithmetic); slow step: every form (kept quick although it takes
# about 5 s from a fresh install: the quick suite's one check that a custom law equals the built-in one)
@PROPS
@given(st.tuples(*GAUSSIAN))
def test_gaussian_clustering_equals_builtin(args):
    _gaussian_equals_builtin(*args, fast=True)


@pytest.mark.slow
@PROPS
@given(st.tuples(*GAUSSIAN, st.booleans()))
def test_gaussian_clustering_equals_builtin_every_form(args):
    _gaussian_equals_builtin(*args)


@pytest.mark.slow
@PROPS
@given(st.tuples(*FULL, st.booleans(), st.booleans()))
def test_full_law_equals_builtin_every_form(args):
    _full_law_equals_builtin(*args)


@pytest.mark.slow
def test_blocked_system_parallel_equals_serial_and_builtin():
    # 31 tokens: 496 pairs, so 16 row blocks
    x, train = _system(31, 2, 5, fraction=1.0)
    law = gaussian_clustering() + cosine_alignment(0.8, 0.5, 0.4)
    es, fs = energy_and_forces(x, train, law, parallel=False)
    ep, fp = energy_and_forces(x, train, law, parallel=True)
    assert np.array_equal(fs, fp) and es == ep
    _, f0 = energy_and_forces(x, train, ForceParams(lam=0.8, sig_t=0.5, eps=0.4))
    assert _rel(fs, f0) <= 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("which", ["distance", "cosine"])
def test_one_term_law_parallel_equals_serial_and_reference(which):
    # a one-term law compiles an empty block in place of the other term's
    x, train = _system(31, 2, 5, fraction=1.0)
    law = _rational() if which == "distance" else _cubic()
    es, fs = energy_and_forces(x, train, law, parallel=False)
    ep, fp = energy_and_forces(x, train, law, parallel=True)
    assert np.array_equal(fs, fp) and es == ep
    assert _rel(fs, forces_reference(x, train.pairs, train.labels, law)) <= 1e-11
    assert abs(es - energy_reference(x, train.pairs, train.labels, law)) <= 1e-11 * max(1.0, abs(es))


def _rational(k=1.3, s=0.8, wd=0.2):
    return PairEnergy(distance=PairTerm(same=soft_well, other=soft_bump, params=SoftParams(k, s)), wd=wd)


def _cubic(k=0.7, s=1.1, eps=0.6):
    return PairEnergy(cosine=PairTerm(same=cubic_pull, other=exp_push, variable="cosine", params=SoftParams(k, s)),
                      eps=eps)


@PROPS
@given(st.integers(3, 13), st.integers(2, 4), st.integers(0, 2**31 - 1), st.floats(0.0, 3.0), st.floats(0.3, 3.0),
       st.sampled_from(["distance"]))
def test_compiled_matches_numpy_path(p, d, seed, k, s, which):
    x, train = _system(p, d, seed)
    law = {"distance": _rational(k, s), "cosine": _cubic(k, s), "both": _rational(k, s) + _cubic(k, s)}[which]
    e, f = energy_and_forces(x, train, law)
    f_ref = forces_reference(x, train.pairs, train.labels, law)
    e_ref = energy_reference(x, train.pairs, train.labels, law)
    assert _rel(f, f_ref) <= 1e-11
    assert abs(e - e_ref) <= 1e-11 * max(1.0, abs(e_ref))


def test_complex_step_equals_written_derivative():
    def well_derivative(r2, prm):
        return prm.k / (prm.s * prm.s) / (1.0 + r2 / (prm.s * prm.s)) ** 2

    def bump_derivative(r2, prm):
        return -2.0 * prm.k / (prm.s * prm.s) / (1.0 + r2 / (prm.s * prm.s)) ** 3

    # on the NumPy path (which test_compiled_matches_numpy_path ties to the
    # compiled one)
    written = PairEnergy(distance=PairTerm(same=soft_well, other=soft_bump, params=SoftParams(1.3, 0.8),
                                           same_derivative=well_derivative, other_derivative=bump_derivative))
    x, train = _system(11, 3, 2)
    f0 = forces_reference(x, train.pairs, train.labels, _rational(wd=0.0))
    f1 = forces_reference(x, train.pairs, train.labels, written)
    assert _rel(f1, f0) <= 1e-13


def test_fast_exp_python_and_compiled():
    import numba

    xs = np.array([-800.0, -708.5, -50.0, -1.0, -1e-9, 0.0])
    py = fast_exp(xs)
    compiled = numba.njit(lambda v: fast_exp(v))
    assert np.all(np.abs(np.array([compiled(v) for v in xs]) - py) <= 4e-16 * np.abs(py))
    assert py[0] == 0.0 and py[-1] == 1.0


@pytest.mark.parametrize("with_cosine", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_simulate_and_minimize_with_a_custom_law(tmp_path, with_cosine):
    x, train = _system(7, 2, 3)
    law = _rational() + _cubic() if with_cosine else _rational()
    traj = simulate(x, train, law, steps=200, dt=0.01, temperature=0.01, seed=4)
    again = simulate(x, train, law, steps=200, dt=0.01, temperature=0.01, seed=4, parallel=True)
    assert np.array_equal(traj.embeddings, again.embeddings)
    assert traj.meta["params"]["kind"] == "PairEnergy"
    assert traj.meta["params"]["distance"]["params"] == {"k": 1.3, "s": 0.8}
    traj.save(tmp_path / "t.npz")
    assert Trajectory.load(tmp_path / "t.npz").meta["params"] == traj.meta["params"]
    result = minimize(x, train, law, max_steps=500)
    assert result.energy < traj.energy[0]


class Slope(NamedTuple):
    a: float


def _pull_out(r2, prm):
    return -prm.a * r2  # unbounded below: particles fly apart


def test_custom_law_nonfinite_status():
    # the rational law with scale s = 0: 0/0 = NaN where two pair sums of one
    # class coincide, as (a, b) and (b, a) do (NumPy's error model: no exception)
    train = modular_addition(5, ordered=True)
    x = np.random.default_rng(1).normal(size=(5, 2))
    with pytest.raises(NonFiniteStateError, match="simulate stopped at step 0"):
        simulate(x, train, _rational(1.0, 0.0), steps=10, dt=0.01)


@pytest.mark.slow
def test_custom_law_runaway_status():
    x, train = _system(5, 2, 1)
    runaway = PairEnergy(distance=PairTerm(same=_pull_out, other=_pull_out, params=Slope(5.0)))
    with pytest.raises(RunawayError):
        simulate(x, train, runaway, steps=2000, dt=0.05)
    with pytest.raises(RunawayError, match="minimize"):
        minimize(x, train, runaway, max_steps=2000)


@pytest.mark.slow  # a fresh process compiles every kernel; keeps the README suite short
def test_builtin_runs_unchanged_after_a_custom_law_compiled():
    # copies of the kernels must not take the built-in kernels' compiled
    # symbols (or give theirs) at link time, in a fresh process
    code = """
import numpy as np
from particles import ForceParams, PairEnergy, PairTerm, forces, modular_addition, simulate
from particles.testing.strategies import SoftParams, soft_bump, soft_well
x = np.array([[0.12573022], [-0.13210486], [0.64042265]])
train = modular_addition(3)
prm = ForceParams(k_a=0.0, sig_a=1.0, k_r=1.0, sig_r=1.0, wd=0.0)
before = simulate(x, train, prm, steps=50, dt=0.01).embeddings
law = PairEnergy(distance=PairTerm(same=soft_well, other=soft_bump, params=SoftParams(1.0, 1.0)))
forces(x, train, law)
simulate(x, train, law, steps=5, dt=0.01)
after = simulate(x, train, prm, steps=50, dt=0.01).embeddings
assert np.array_equal(before, after), "built-in result changed"
print("same")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "same" in out.stdout


@pytest.mark.parametrize("make, err, match", [
    (lambda: PairTerm(same=3), TypeError, "same must be a function"),
    (lambda: PairTerm(other=soft_bump, variable="angle"), ValueError, "variable must be one of"),
    (lambda: PairTerm(), ValueError, "at least one of same and other"),
    (lambda: PairTerm(same=soft_well, params=[1.0]), TypeError, "params must be a tuple"),
    (lambda: PairTerm(same=soft_well, params=SoftParams(float("nan"), 1.0)), ValueError, "params.k must be finite"),
    (lambda: PairTerm(same=soft_well, params=("a",)), TypeError, r"params.\[0\] must be a real number"),
    (lambda: PairTerm(other=soft_bump, same_derivative=soft_well), ValueError, "same_derivative given without"),
    (lambda: PairEnergy(), ValueError, "needs a distance term, a cosine term or both"),
    (lambda: PairEnergy(distance=PairTerm(same=cubic_pull, variable="cosine", params=SoftParams(1.0, 1.0))), ValueError,
     "distance must be a PairTerm with variable='distance'"),
    (lambda: PairEnergy(cosine=PairTerm(same=cubic_pull, variable="cosine", params=SoftParams(1.0, 1.0)), eps=0.0),
     ValueError, "eps must be > 0"),
    (lambda: PairEnergy(distance=PairTerm(same=soft_well, params=SoftParams(1.0, 1.0)), wd=-1), ValueError,
     "wd must be >= 0"),
    (lambda: PairTerm(same=soft_well, params=(1.0, 1.0)), ValueError, "params does not fit same"),
    (lambda: PairTerm(same=lambda q, prm: prm[0] * q, other=lambda q, prm: prm[2] * q, params=(1.0, 1.0)), ValueError,
     "params does not fit other"),
    (lambda: _rational() + _rational(), ValueError, "both laws have a distance term"),
])
def test_bad_construction(make, err, match):
    with pytest.raises(err, match=match):
        make()


def test_bad_use():
    x, train = _system(5, 1, 0)
    with pytest.raises(ValueError, match="a cosine term needs dimension d >= 2"):
        energy_and_forces(x, train, _cubic())
    x2, _ = _system(5, 2, 0)
    with pytest.raises(ValueError, match="repulsion_tol .* needs a ForceParams"):
        simulate(x2, train, _rational(), steps=5, dt=0.01, repulsion_tol=1e-8)
    with pytest.raises(TypeError, match="params must be a ForceParams or a PairEnergy"):
        energy_and_forces(x2, train, {"k_a": 1.0})


class Strength(NamedTuple):
    k: float


def _singular_push(r2, prm):  # infinite where two pair sums coincide
    return prm.k / r2


def _log_well(r2, prm):  # -inf at r2 = 0 (the diagonal of the NumPy path's matrices)
    return 0.5 * prm.k * np.log(r2 + 0.1)


@pytest.mark.slow
def test_other_is_never_evaluated_into_same_class_energy():
    # ordered pairs: (a, b) and (b, a) have the same pair sum and the same
    # label, so an ``other`` evaluated on them would be infinite
    from particles import PairDataset, energy_reference
    p = 5
    pairs = np.array([(a, b) for a in range(p) for b in range(p)])
    train = PairDataset(pairs, pairs.sum(axis=1) % p, p)
    x = np.random.default_rng(0).normal(size=(p, 2))
    law = PairEnergy(distance=PairTerm(same=_log_well, other=_singular_push, params=Strength(1.0)))
    e, f = energy_and_forces(x, train, law)
    e_ref = energy_reference(x, train.pairs, train.labels, law)
    assert np.isfinite(e) and np.all(np.isfinite(f))
    assert abs(e - e_ref) <= 1e-12 * abs(e_ref)
    assert _rel(f, forces_reference(x, train.pairs, train.labels, law)) <= 1e-12


def test_numpy_path_masks_the_diagonal():
    law = PairEnergy(distance=PairTerm(same=lambda r2, prm: prm.k * np.log(r2), params=Strength(1.0)))
    x, train = _system(7, 2, 4)
    assert np.isfinite(energy_reference(x, train.pairs, train.labels, law))
    assert np.all(np.isfinite(forces_reference(x, train.pairs, train.labels, law)))


def test_fast_exp_refuses_complex_and_caps_overflow():
    import numba

    with pytest.raises(TypeError, match="give the derivative"):
        fast_exp(np.array([1j]))
    compiled = numba.njit(lambda v: fast_exp(v))
    for v in (709.5, 720.0, 2000.0):
        assert compiled(v) == np.inf and fast_exp(v) == np.inf


def test_params_are_floats_and_laws_immutable(tmp_path):
    term = PairTerm(same=soft_well, other=soft_bump, params=SoftParams(np.float32(1.5), np.int64(2)))
    assert type(term.params) is SoftParams and all(type(v) is float for v in term.params)
    assert PairTerm(same=lambda q, prm: prm[0] * q + prm[1], params=(np.float32(1.5), 2)).params == (1.5, 2.0)
    law = PairEnergy(distance=term)
    x, train = _system(5, 2, 0)
    traj = simulate(x, train, law, steps=5, dt=0.01)
    traj.save(tmp_path / "t.npz")  # meta is JSON: no NumPy scalars
    with pytest.raises(AttributeError, match="immutable"):
        law.wd = 1.0
    with pytest.raises(AttributeError, match="with_params"):
        term.params = (1.0, 1.0)
    assert law.replace(wd=0.5).wd == 0.5


def test_builtin_written_laws_validate_like_forceparams():
    with pytest.raises(ValueError, match="sig_a must be > 0"):
        gaussian_clustering(sig_a=0.0)
    with pytest.raises(ValueError, match="k_r must be >= 0"):
        gaussian_clustering(k_r=-1.0)
    with pytest.raises(ValueError, match="sig_t must be > 0"):
        cosine_alignment(sig_t=0.0)
    with pytest.raises(TypeError, match="axial must be a bool"):
        cosine_alignment(axial="yes")


@pytest.mark.slow
@PROPS
@given(st.integers(3, 13), st.integers(2, 4), st.integers(0, 2**31 - 1), st.floats(0.0, 3.0), st.floats(0.3, 3.0),
       st.booleans())
def test_compiled_matches_numpy_path_with_cosine_terms(p, d, seed, k, s, both):
    x, train = _system(p, d, seed)
    law = _rational(k, s) + _cubic(k, s) if both else _cubic(k, s)
    e, f = energy_and_forces(x, train, law)
    assert _rel(f, forces_reference(x, train.pairs, train.labels, law)) <= 1e-11
    assert abs(e - energy_reference(x, train.pairs, train.labels, law)) <= 1e-11 * max(1.0, abs(e))


def test_a_force_law_function_must_take_q_and_params():
    # a one-argument function failed inside numba's compiler at the first run; now it is refused by name
    with pytest.raises(TypeError, match="same must be a function \\(q, params\\)"):
        PairTerm(same=lambda q: q)
    with pytest.raises(TypeError, match="other must be a function \\(q, params\\)"):
        PairTerm(same=lambda q, prm: q, other=lambda q, prm, extra: q)
    assert PairTerm(same=lambda q, prm=(): q).same is not None
