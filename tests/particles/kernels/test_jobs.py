"""Each compiled kernel job (particles/kernels/*.py) against the NumPy
reference beside it, on random inputs; serial and parallel kernels
bit-identical; the step loops and the minimiser as plain Python against
compiled. (The serial/parallel chooser: tests/particles/test_threads.py.)"""
import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from particles import ForceParams, energy_and_forces, forces_reference, modular_addition, preset, simulate
from particles.energy import pair_system, same_class_partners
from particles.kernels import BUDGET_USED, NONFINITE, OK, STATUS_NAMES
from particles.kernels import alignment, clustering, euler, fastmath, forces, minimize, pair_sums
from particles.kernels.kernel_params import KernelParams
from particles.kernels.records import CosineSums, PairSums, Row
from particles.threads import dynamic_schedule
from particles.kernels.records import ExactLaw, Recording, Span, Threaded


PARAMS = [
    ForceParams(),
    ForceParams(lam=2.0, sig_t=0.3, eps=0.7),
    ForceParams(lam=1.5, alignment="polar", k_a=0.5, sig_a=1.2),
    ForceParams(lam=3.0, alignment_form="axial", k_a=0.0, k_r=0.0, sig_t=0.5, wd=0.3),
    ForceParams(k_a=6.0, sig_a=3.0, sig_r=2.0, lam=3.0, alignment_form="axial", sig_t=0.5, eps=0.1, wd=0.6,
                wd_target="classifier", particle_wd=1.0),
]


def _rel_err(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


@numba.njit
def _exp_all(arg, out):
    for i in range(arg.shape[0]):
        out[i] = fastmath.exp_nonpositive(arg[i])


@settings(deadline=None, max_examples=50)
@given(st.lists(st.floats(-800.0, 0.0), min_size=1, max_size=40))
def test_exp_matches_reference(values):
    arg = np.array(values)
    out = np.empty_like(arg)
    _exp_all(arg, out)
    expected = fastmath.exp_nonpositive_reference(arg)
    normal = expected > 1e-300
    np.testing.assert_allclose(out[normal], expected[normal], rtol=3e-16, atol=0)
    assert np.all(out[~normal] <= 1e-300)


@settings(deadline=None, max_examples=50)
@given(st.lists(st.floats(0.0, 700.0), min_size=1, max_size=40))
def test_exp_matches_numpy_on_positive_arguments(values):
    """Positive arguments (the Gram path's repulsion factors take up to 340)."""
    arg = np.array(values)
    out = np.empty_like(arg)
    _exp_all(arg, out)
    np.testing.assert_allclose(out, np.exp(arg), rtol=3e-16, atol=0)


@settings(deadline=None, max_examples=30)
@given(st.lists(st.floats(-1e6, 1e6), min_size=0, max_size=40), st.integers(0, 5))
def test_lane_sum_is_the_sum(values, lo):
    x = np.array(values + [0.0] * 5)
    lo = min(lo, len(values))
    got = _lane_sum(x, np.uint64(lo), np.uint64(len(values)))
    assert got == pytest.approx(float(np.sum(x[lo:len(values)])), rel=1e-12, abs=1e-6)


def _system(seed, p=9, d=2, fraction=0.8):
    rng = np.random.default_rng(seed)
    train = modular_addition(p).split(fraction, seed=seed)[0]
    x = rng.normal(scale=rng.uniform(0.3, 3.0), size=(p, d))
    return train, x


@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 2**31 - 1), p=st.integers(3, 13), d=st.integers(2, 4), case=st.integers(0, 4))
def test_clustering_and_alignment_blocks_match_their_references(seed, p, d, case):
    """Rows split over 3 blocks, block results summed: each term against its
    NumPy reference."""
    train, x = _system(seed, p, d)
    prm = PARAMS[case].kernel_params()
    n = len(train)
    S, U, rho = pair_sums.pair_sums_reference(x, train.pairs, prm.eps)
    ptr, idx = same_class_partners(train.labels)
    system = forces.make_system(np.asarray(train.pairs, dtype=np.int64), ptr, idx)
    bptr, brows = forces.block_rows(n, 3)
    assert sorted(brows.tolist()) == list(range(n - 1))  # every row with a v > u, once
    scratch = np.empty((forces.SCRATCH_ROWS, n))
    F, A, B = np.zeros((d, n)), np.zeros((d, n)), np.zeros(n)
    e_clu = e_ali = 0.0
    for t in range(3):
        rows = brows[bptr[t]:bptr[t + 1]]
        e_clu += clustering.clustering_block(rows, S, system, prm, F, scratch)
        e_ali += alignment.alignment_block(rows, U, system, prm, CosineSums(A, B), scratch)
    f_ref, e_ref = clustering.clustering_reference(S, train.labels, prm)
    assert _rel_err(F, f_ref) < 1e-11 and e_clu == pytest.approx(e_ref, rel=1e-11, abs=1e-11)
    if prm.lam > 0:
        F = np.zeros((d, n))
        alignment.alignment_forces(PairSums(S, U, rho), CosineSums(A, B), prm, F)
        f_ref, e_ref = alignment.alignment_reference(S, train.labels, prm)
        assert _rel_err(F, f_ref) < 1e-10 and prm.lam * e_ali == pytest.approx(e_ref, rel=1e-10, abs=1e-10)


@numba.njit
def _pair_sums(x, pairs, eps, S, U, rho):
    pair_sums.pair_sums(x, pairs, eps, S, U, rho)


@numba.njit
def _scatter(x, pairs, F, wd, force):
    pair_sums.scatter_to_particles(x, pairs, F, wd, force)


@numba.njit
def _lane_sum(x, lo, hi):
    return fastmath.lane_sum(x, lo, hi)


@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 2**31 - 1), p=st.integers(2, 12), d=st.integers(1, 4))
def test_pair_sums_and_scatter_match_their_references(seed, p, d):
    train, x = _system(seed, p, d, fraction=1.0)
    n = len(train)
    S, U, rho = np.empty((d, n)), np.empty((d, n)), np.empty(n)
    _pair_sums(x, train.pairs, 0.3, S, U, rho)
    S_ref, U_ref, rho_ref = pair_sums.pair_sums_reference(x, train.pairs, 0.3)
    np.testing.assert_allclose(S, S_ref, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(U, U_ref, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(rho, rho_ref, rtol=1e-14)
    F = np.random.default_rng(seed).standard_normal((d, n))
    force = np.empty_like(x)
    _scatter(x, train.pairs, F, 0.7, force)
    np.testing.assert_allclose(force, pair_sums.scatter_reference(x, train.pairs, F, 0.7), rtol=1e-12, atol=1e-12)


@settings(deadline=None, max_examples=15)
@given(seed=st.integers(0, 2**31 - 1), p=st.integers(26, 40), d=st.integers(2, 3), case=st.integers(0, 4))
def test_serial_and_parallel_kernels_are_bit_identical(seed, p, d, case):
    """Blocked systems (n >= MIN_BLOCKED_PAIRS): same bits whatever runs them."""
    train, x = _system(seed, p, d)
    assume_blocked = len(train) >= forces.MIN_BLOCKED_PAIRS
    assert assume_blocked
    results = [energy_and_forces(x, train, PARAMS[case], parallel=par) for par in (False, True, None, None)]
    for u, f in results[1:]:
        assert u == results[0][0] and np.array_equal(f, results[0][1])
    assert _rel_err(results[0][1], forces_reference(x, train.pairs, train.labels, PARAMS[case])) < 1e-10


def test_simulation_is_bit_identical_whatever_the_kernel_and_threads():
    train = modular_addition(29).split(0.8, seed=1)[0]
    x0 = np.random.default_rng(2).standard_normal((29, 2))
    params = ForceParams(lam=1.0, alignment_form="axial", sig_t=0.5)
    runs = []
    threads = numba.get_num_threads()
    try:
        for par, nthreads in ((False, threads), (True, threads), (None, threads), (True, 1)):
            numba.set_num_threads(nthreads)
            runs.append(simulate(x0, train, params, steps=40, dt=0.01, temperature=0.01, seed=3, parallel=par))
    finally:
        numba.set_num_threads(threads)
    for t in runs[1:]:
        assert np.array_equal(t.embeddings, runs[0].embeddings)
        assert np.array_equal(t.scalars["energy"], runs[0].scalars["energy"])


def test_preset_runs_unchanged_by_the_kernel_choice():
    config = preset("clustering-alignment").replace(steps=200)
    a, b = config.run(seed=5, parallel=False), config.run(seed=5, parallel=True)
    assert np.array_equal(a.embeddings, b.embeddings)


def _inputs(seed, params, p=5):
    train = modular_addition(p)
    system = pair_system(train)
    x = np.random.default_rng(seed).standard_normal((p, 2))
    return train, system, x, params.kernel_params(), forces.make_workspace(2, system, 2)


def test_step_loops_as_python_match_compiled():
    train, system, x0, prm, ws = _inputs(1, ForceParams(lam=1.0), p=23)  # 276 pairs: 16 blocks
    assert len(system.block_ptr) - 1 == forces.BLOCKS
    sched = euler.EulerSchedule(1e-2, 5, 0.1, 0.0, 10, 1e6)
    outs = []
    law = ExactLaw(system, prm, ws)
    for fn, record in ((euler.run_euler, law), (euler.run_euler.py_func, law), (euler.run_euler, Threaded(law))):
        x = x0.copy()
        traj, energies = np.empty((3, 23, 2)), np.empty(3)
        with dynamic_schedule():
            code, reached, slot = fn(x, record, sched, Span(0, 10, 0), np.random.default_rng(2),
                                     Recording(traj, energies))
        assert code == OK and reached == 10 and slot == 2
        outs.append((x, traj[:2], energies[:2]))
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_step_loop_reports_a_nonfinite_state_by_name():
    train, system, x0, prm, ws = _inputs(1, ForceParams(wd=1e100))
    x = x0.copy()
    traj, energies = np.empty((11, 5, 2)), np.empty(11)
    code, reached, _ = euler.run_euler(x, ExactLaw(system, prm, ws), euler.EulerSchedule(1e300, 1, 0.0, 0.0, 10, np.inf),
                                              Span(0, 10, 0), np.random.default_rng(0), Recording(traj, energies))
    assert code == NONFINITE and STATUS_NAMES[code] == "non-finite state" and reached < 10


@pytest.mark.slow
def test_minimize_as_python_matches_compiled_and_names_its_status():
    train, system, x0, prm, ws = _inputs(4, ForceParams(lam=0.5))
    results = []
    for fn in (minimize.minimize_serial, minimize.minimize_serial.py_func):
        x = x0.copy()
        results.append((fn(x, ExactLaw(system, prm, ws), minimize.Descent(50, 1e-2, 1e-8, 1e6), np.empty_like(x)), x))
    (r1, x1), (r2, x2) = results
    assert r1[0] == r2[0] and r1[1] == r2[1]
    np.testing.assert_allclose(x1, x2, rtol=1e-9, atol=1e-12)
    code = minimize.minimize_serial(x0.copy(), ExactLaw(system, prm, ws), minimize.Descent(2, 1e-2, 1e-14, 1e6),
                                    np.empty_like(x0))[0]
    assert code == BUDGET_USED and STATUS_NAMES[BUDGET_USED] == "step budget used up"


def test_kernel_params_is_a_typed_record():
    prm = ForceParams(lam=2.0, alignment="polar", alignment_form="axial").kernel_params()
    assert isinstance(prm, KernelParams) and prm.lam == 2.0 and prm.polar and prm.axial


def test_the_slot_contract_is_explicit_and_a_wrong_name_is_an_error():
    """Every slot names a global its kernel module defines and a kernel of the
    package calls or reads; binding a name that is not a slot (a typo) is a
    ValueError, not the built-in law running silently."""
    import importlib
    import re
    from pathlib import Path

    import pytest

    from particles.kernels import forces
    from particles.kernels.rebind import rebind
    from particles.kernels.slots import SLOTS

    folder = Path(forces.__file__).parent
    source = "\n".join(p.read_text() for p in folder.glob("*.py") if p.name not in ("slots.py", "rebind.py"))
    for name, (module, _) in SLOTS.items():
        assert hasattr(importlib.import_module(f"particles.kernels.{module}"), name), name
        assert len(re.findall(rf"\b{name}\b", source)) >= 2, name  # defined and used
    with pytest.raises(ValueError, match="attracton"):
        rebind(forces.forces_serial, {"attracton": lambda r2, prm: (0.0, 0.0)})


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 8])
def test_the_shared_pair_loops_match_their_numpy_references(d):
    """The sweep-and-scatter loops of particles.kernels.pair_loops against
    NumPy on random inputs (called through a compiled wrapper, as the
    kernels inline them)."""
    from numba import njit

    from particles.kernels import pair_loops as pl

    @njit
    def run(u, S, coef, lo, hi, F, A, B):
        n = S.shape[1]
        r2, cc, t0 = np.zeros(n), np.zeros(n), np.zeros(n)
        row = Row(u, np.uint64(lo), np.uint64(hi))
        pl.squared_distances(row, S, r2)
        pl.dot_products(row, S, cc)
        pl.scatter_differences(row, S, coef, F, t0)
        pl.scatter_products(row, S, coef, A, t0)
        pl.scatter_scalars(row, coef, cc, B, t0)
        return r2, cc

    rng = np.random.default_rng(d)
    n, u = 23, 4
    S, coef = rng.normal(size=(d, n)), rng.normal(size=n)
    F, A, B = rng.normal(size=(d, n)), rng.normal(size=(d, n)), rng.normal(size=n)
    F0, A0, B0 = F.copy(), A.copy(), B.copy()
    r2, cc = run(u, S, coef, u + 1, n, F, A, B)
    np.testing.assert_allclose(r2[u + 1:], pl.squared_distances_reference(u, S, u + 1, n), rtol=1e-12)
    np.testing.assert_allclose(cc[u + 1:], pl.dot_products_reference(u, S, u + 1, n), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(F, pl.scatter_differences_reference(u, S, coef, u + 1, n, F0), rtol=1e-12, atol=1e-14)
    w = coef[u + 1:]
    A_ref = A0.copy()
    A_ref[:, u + 1:] += w * S[:, u:u + 1]
    A_ref[:, u] += S[:, u + 1:] @ w
    np.testing.assert_allclose(A, A_ref, rtol=1e-12, atol=1e-14)
    B_ref = B0.copy()
    B_ref[u + 1:] += w * cc[u + 1:]
    B_ref[u] += np.sum(w * cc[u + 1:])
    np.testing.assert_allclose(B, B_ref, rtol=1e-12, atol=1e-14)
