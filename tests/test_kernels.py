"""Compiled kernels against the NumPy reference, and the kernels' bodies
through .py_func (so coverage sees them)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from particles import ForceParams, addition, energy_and_forces, energy_reference, forces_reference, modular_addition
from particles import _kernels

PARAM_CASES = [
    ForceParams(),
    ForceParams(lam=2.0, sig_t=0.3, eps=0.7),
    ForceParams(lam=1.5, alignment="polar", k_a=0.5, sig_a=1.2),
    ForceParams(lam=3.0, alignment_form="axial", k_a=0.0, k_r=0.0, sig_t=0.5, wd=0.3),
    ForceParams(lam=1.0, alignment="polar", alignment_form="axial", wd=0.0),
]


def _rel_err(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


@pytest.mark.parametrize("params", PARAM_CASES)
@pytest.mark.parametrize("d", [2, 3])
def test_compiled_matches_reference(params, d):
    rng = np.random.default_rng(7)
    train = modular_addition(11).split(0.7, seed=1)[0]
    x = rng.standard_normal((11, d))
    f_ref = forces_reference(x, train.pairs, train.labels, params)
    u_ref = energy_reference(x, train.pairs, train.labels, params)
    for parallel in (False, True):
        u, f = energy_and_forces(x, train, params, parallel=parallel)
        assert _rel_err(f, f_ref) < 1e-10
        assert abs(u - u_ref) <= 1e-10 * max(1.0, abs(u_ref))


@settings(deadline=None, max_examples=30)
@given(seed=st.integers(0, 2**31 - 1), p=st.integers(2, 12), d=st.integers(2, 4), case=st.integers(0, 4))
def test_compiled_matches_reference_random(seed, p, d, case):
    rng = np.random.default_rng(seed)
    train = modular_addition(p)
    x = rng.normal(scale=rng.uniform(0.1, 3.0), size=(p, d))
    params = PARAM_CASES[case]
    f_ref = forces_reference(x, train.pairs, train.labels, params)
    u, f = energy_and_forces(x, train, params, parallel=bool(seed % 2))
    assert _rel_err(f, f_ref) < 1e-10
    assert abs(u - energy_reference(x, train.pairs, train.labels, params)) <= 1e-10 * max(1.0, abs(u))


def test_d1_clustering_only():
    train = addition(6)
    x = np.random.default_rng(0).standard_normal((6, 1))
    params = ForceParams()
    _, f = energy_and_forces(x, train, params)
    assert _rel_err(f, forces_reference(x, train.pairs, train.labels, params)) < 1e-10


@pytest.mark.parametrize("params", PARAM_CASES)
def test_py_func_bodies(params):
    """The same kernels run as plain Python (inlined helpers are called as
    their compiled versions, the kernel bodies themselves as Python)."""
    rng = np.random.default_rng(3)
    train = modular_addition(7).split(0.8, seed=0)[0]
    x = rng.standard_normal((7, 2))
    prm = params.as_array()
    f_ref = forces_reference(x, train.pairs, train.labels, params)
    f1 = np.empty_like(x)
    u1 = _kernels.forces_serial.py_func(x, train.pairs, train.labels, prm, f1)
    f2 = np.empty_like(x)
    u2 = _kernels.forces_parallel.py_func(x, train.pairs, train.labels, prm, f2, 3)
    assert _rel_err(f1, f_ref) < 1e-10 and _rel_err(f2, f_ref) < 1e-10
    assert abs(u1 - u2) < 1e-10 * max(1, abs(u1))
    fp = np.zeros((len(train), 2))
    s = np.empty((len(train), 2))
    unit = np.empty_like(s)
    rho = np.empty(len(train))
    _kernels._pair_sums.py_func(x, train.pairs, s)
    _kernels._directions.py_func(s, params.eps, unit, rho)
    a = np.zeros_like(s)
    b = np.zeros(len(train))
    e = sum(_kernels._row_upper.py_func(u, s, unit, train.labels, prm, fp, a, b) for u in range(len(train)))
    force = np.empty_like(x)
    _kernels._finish.py_func(x, train.pairs, s, unit, rho, prm, fp, a, b, force)
    assert _rel_err(force, f_ref) < 1e-10
    assert abs(e + _kernels._weight_decay_energy.py_func(x, params.wd) - u1) < 1e-9 * max(1, abs(u1))


def test_run_euler_py_func_matches_compiled():
    train = modular_addition(5)
    x0 = np.random.default_rng(1).standard_normal((5, 2))
    prm = ForceParams(lam=1.0).as_array()
    outs = []
    for fn in (_kernels.run_euler, _kernels.run_euler.py_func):
        x = x0.copy()
        traj = np.empty((3, 5, 2))
        energies = np.empty(3)
        status, reached, slot = fn(x, train.pairs, train.labels, prm, 0, 10, 1e-2, 5, 0.1, 0.0, 10,
                                   np.random.default_rng(2), traj, energies, 0, 1)
        assert status == _kernels.OK and reached == 10 and slot == 2
        outs.append((x, traj[:2], energies[:2]))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_minimize_py_func_matches_compiled():
    train = modular_addition(5)
    x0 = np.random.default_rng(4).standard_normal((5, 2))
    prm = ForceParams(lam=0.5).as_array()
    results = []
    for fn in (_kernels.minimize_serial, _kernels.minimize_serial.py_func):
        x = x0.copy()
        force = np.empty_like(x)
        results.append((fn(x, train.pairs, train.labels, prm, 50, 1e-2, 1e-8, force), x))
    (r1, x1), (r2, x2) = results
    assert r1[0] == r2[0] and r1[1] == r2[1]
    np.testing.assert_allclose(x1, x2, rtol=1e-9, atol=1e-12)
