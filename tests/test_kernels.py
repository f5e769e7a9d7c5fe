"""Compiled kernels against the NumPy reference, and the kernels' bodies
through .py_func (so coverage sees them)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from particles import (ForceParams, addition, energy_and_forces, energy_reference, forces, forces_reference,
                       modular_addition)
from particles import _kernels
from particles.energy import same_class_partners

PARAM_CASES = [
    ForceParams(),
    ForceParams(lam=2.0, sig_t=0.3, eps=0.7),
    ForceParams(lam=1.5, alignment="polar", k_a=0.5, sig_a=1.2),
    ForceParams(lam=3.0, alignment_form="axial", k_a=0.0, k_r=0.0, sig_t=0.5, wd=0.3),
    ForceParams(lam=1.0, alignment="polar", alignment_form="axial", wd=0.0),
    ForceParams(k_a=6.0, sig_a=3.0, sig_r=2.0, lam=3.0, alignment_form="axial", sig_t=0.5, eps=0.1, wd=0.6,
                wd_target="classifier", bias_scale=1.0, particle_decay=1.0),
    ForceParams(lam=3.0, alignment_form="axial", wd=0.0, wd_target="classifier", particle_decay=0.5),
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
    """The same kernels run as plain Python (the helpers they call run
    compiled; their bodies are covered by test_helper_py_funcs)."""
    rng = np.random.default_rng(3)
    train = modular_addition(7).split(0.8, seed=0)[0]
    x = rng.standard_normal((7, 2))
    prm = params.as_array()
    ptr, idx = same_class_partners(train.labels)
    f_ref = forces_reference(x, train.pairs, train.labels, params)
    f1 = np.empty_like(x)
    u1 = _kernels.forces_serial.py_func(x, train.pairs, ptr, idx, prm, f1)
    f2 = np.empty_like(x)
    u2 = _kernels.forces_parallel.py_func(x, train.pairs, ptr, idx, prm, f2, 3)
    assert _rel_err(f1, f_ref) < 1e-10 and _rel_err(f2, f_ref) < 1e-10
    assert abs(u1 - u2) < 1e-10 * max(1, abs(u1))


@pytest.mark.parametrize("params", PARAM_CASES)
def test_helper_py_funcs(params):
    """Helper bodies as plain Python, assembled like forces_serial."""
    rng = np.random.default_rng(5)
    train = modular_addition(7).split(0.8, seed=2)[0]
    x = rng.standard_normal((7, 3))
    prm = params.as_array()
    n, d = len(train), 3
    ptr, idx = same_class_partners(train.labels)
    S, U, rho = np.empty((d, n)), np.empty((d, n)), np.empty(n)
    _kernels._prepare.py_func(x, train.pairs, params.effective_eps, S, U, rho)
    F, A, B = np.zeros((d, n)), np.zeros((d, n)), np.zeros(n)
    scratch, bits = [np.empty(n) for _ in range(6)], np.empty(n, dtype=np.int64)
    e = sum(_kernels._rows_upper.py_func(t, 2, S, U, ptr, idx, prm, F, A, B, *scratch, bits) for t in range(2))
    force = np.empty_like(x)
    _kernels._finish.py_func(x, train.pairs, S, U, rho, prm, F, A, B, force)
    assert _rel_err(force, forces_reference(x, train.pairs, train.labels, params)) < 1e-10
    e += _kernels._weight_decay_energy.py_func(x, params.particle_wd)
    assert abs(e - energy_reference(x, train.pairs, train.labels, params)) < 1e-10 * max(1, abs(e))


@settings(deadline=None, max_examples=50)
@given(st.lists(st.floats(-800.0, 0.0), min_size=1, max_size=40))
def test_fast_exp_matches_numpy(values):
    arg = np.array(values)
    out = np.empty_like(arg)
    bits = np.empty(arg.shape, dtype=np.int64)
    for fn in (_kernels._exp_from, _kernels._exp_from.py_func):
        fn(arg, out, bits, np.uint64(0), np.uint64(len(arg)))
        expected = np.exp(arg)
        big = expected > 1e-300
        np.testing.assert_allclose(out[big], expected[big], rtol=1e-15)
        assert np.all(out[~big] <= 1e-300)


def test_same_class_partners():
    labels = np.array([2, 0, 2, 1, 0, 2])
    ptr, idx = same_class_partners(labels)
    partners = [list(idx[ptr[u]:ptr[u + 1]]) for u in range(len(labels))]
    assert partners == [[2, 5], [4], [5], [], [], []]


def _small_system(seed, params):
    """Full p = 5 dataset, a random start, and the kernel inputs."""
    train = modular_addition(5)
    ptr, idx = same_class_partners(train.labels)
    return train, np.random.default_rng(seed).standard_normal((5, 2)), params.as_array(), ptr, idx


def test_run_euler_py_func_matches_compiled():
    train, x0, prm, ptr, idx = _small_system(1, ForceParams(lam=1.0))
    outs = []
    runners = [(_kernels.run_euler_serial, ()), (_kernels.run_euler_serial.py_func, ()),
               (_kernels.run_euler_parallel, (2,)), (_kernels.run_euler_parallel.py_func, (2,))]
    for fn, extra in runners:
        x = x0.copy()
        traj = np.empty((3, 5, 2))
        energies = np.empty(3)
        status, reached, slot = fn(x, train.pairs, ptr, idx, prm, 0, 10, 1e-2, 5, 0.1, 0.0, 10,
                                   np.random.default_rng(2), traj, energies, 0, *extra)
        assert status == _kernels.OK and reached == 10 and slot == 2
        outs.append((x, traj[:2], energies[:2]))
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_minimize_py_func_matches_compiled():
    train, x0, prm, ptr, idx = _small_system(4, ForceParams(lam=0.5))
    results = []
    for fn in (_kernels.minimize_serial, _kernels.minimize_serial.py_func):
        x = x0.copy()
        force = np.empty_like(x)
        results.append((fn(x, train.pairs, ptr, idx, prm, 50, 1e-2, 1e-8, force), x))
    (r1, x1), (r2, x2) = results
    assert r1[0] == r2[0] and r1[1] == r2[1]
    np.testing.assert_allclose(x1, x2, rtol=1e-9, atol=1e-12)


def test_classifier_weight_decay_is_a_softened_alignment():
    """wd_target="classifier": the forces are those of the SPEC energy with
    eps -> sqrt(eps^2 + (bias_scale / wd)^2) and particle decay particle_decay."""
    rng = np.random.default_rng(3)
    train = modular_addition(11).split(0.8, seed=4)[0]
    x = rng.standard_normal((11, 2))
    base = dict(k_a=6.0, sig_a=3.0, sig_r=2.0, lam=3.0, alignment_form="axial", sig_t=0.5, eps=0.1)
    for wd in (0.3, 1.0, 5.0):
        variant = ForceParams(**base, wd=wd, wd_target="classifier", bias_scale=1.5, particle_decay=0.7)
        plain = ForceParams(**{**base, "eps": math.hypot(0.1, 1.5 / wd)}, wd=0.7)
        u1, f1 = energy_and_forces(x, train, variant)
        u2, f2 = energy_and_forces(x, train, plain)
        assert u1 == u2 and np.array_equal(f1, f2)


def test_classifier_weight_decay_switches_alignment_on_continuously():
    """At wd = 0 alignment is off (lam has no effect); as wd -> 0 the forces
    tend to the clustering-only forces, as wd grows the softening tends to eps."""
    rng = np.random.default_rng(4)
    train = modular_addition(13).split(0.8, seed=5)[0]
    x = rng.standard_normal((13, 2))
    base = dict(k_a=6.0, sig_a=3.0, sig_r=2.0, alignment_form="axial", sig_t=0.5, eps=0.1,
                wd_target="classifier", particle_decay=1.0)
    clustering = forces(x, train, ForceParams(**base, lam=0.0, wd=0.0))
    assert np.array_equal(forces(x, train, ForceParams(**base, lam=3.0, wd=0.0)), clustering)
    gaps = [np.abs(forces(x, train, ForceParams(**base, lam=3.0, wd=w)) - clustering).max() for w in (1e-3, 1e-2, 1e-1)]
    assert gaps[0] < gaps[1] < gaps[2] and gaps[0] < 1e-4
    assert ForceParams(**base, lam=3.0, wd=1e6).effective_eps == pytest.approx(0.1)
