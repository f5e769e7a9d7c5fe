"""The repulsion cut-off (cell list, particles/kernels/cells.py): its stated
error bound against the exact sums, serial = parallel, and bad values."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from particles import ForceParams, energy_and_forces, modular_addition, preset, simulate
from particles.kernels import cells as C


def _bounds_hold(x, train, params, tol):
    u_exact, f_exact = energy_and_forces(x, train, params)
    u_cut, f_cut = energy_and_forces(x, train, params, repulsion_tol=tol)
    n = len(train)
    e_bound, f_bound = C.cutoff_bounds(n, params.k_r, params.sig_r, tol)
    # rounding: the two paths add the same terms in another order
    slack_u = 1e-12 * max(1.0, abs(u_exact))
    slack_f = 1e-12 * max(1.0, np.abs(f_exact).max())
    # a particle's force sums its pair sums' forces: at most 2 (p + 1) of them
    f_bound_particle = 2 * (train.p + 1) * f_bound
    assert abs(u_cut - u_exact) <= e_bound + slack_u, (abs(u_cut - u_exact), e_bound)
    assert np.abs(f_cut - f_exact).max() <= f_bound_particle + slack_f, (np.abs(f_cut - f_exact).max(),
                                                                         f_bound_particle)
    return abs(u_cut - u_exact), np.abs(f_cut - f_exact).max()


@pytest.mark.slow
@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**31 - 1), p=st.integers(3, 29), scale=st.floats(0.1, 40.0),
       sig_r=st.floats(0.2, 3.0), tol=st.sampled_from([1e-16, 1e-10, 1e-4, 1e-2, 0.5]), lam=st.sampled_from([0.0, 1.0]))
def test_cutoff_error_within_its_bound(seed, p, scale, sig_r, tol, lam):
    rng = np.random.default_rng(seed)
    train = modular_addition(p).split(0.8, seed=seed)[0] if p > 4 else modular_addition(p)
    x = rng.normal(scale=scale, size=(p, 2))
    params = ForceParams(k_a=rng.uniform(0, 5), sig_a=rng.uniform(0.5, 4), k_r=rng.uniform(0.1, 3), sig_r=sig_r,
                         lam=lam, sig_t=0.3)
    _bounds_hold(x, train, params, tol)


def test_a_loose_cutoff_drops_pairs_and_stays_within_its_bound():
    """tol = 1e-2 cuts at 3 sig_r: the result changes, by less than the bound."""
    train = modular_addition(23).split(0.8, seed=0)[0]
    x = np.random.default_rng(1).normal(scale=3.0, size=(23, 2))
    du, df = _bounds_hold(x, train, ForceParams(sig_r=1.0), 1e-2)
    assert du > 1e-6 and df > 1e-6


def test_cell_side_grows_when_the_spread_needs_too_many_cells():
    """Pair sums 1e6 apart with sig_r = 0.1: the grid is capped, cells widen,
    the sums stay right."""
    train = modular_addition(11)
    x = np.random.default_rng(2).normal(size=(11, 2))
    x[0] = [1e6, -1e6]
    _bounds_hold(x, train, ForceParams(sig_r=0.1), 1e-16)


def test_spread_beyond_int64_cell_counts_is_capped():
    """Coordinates near 1e18 with sig_r = 1e-3: cell counts computed as
    integers would overflow; the grid is capped and the sums stay right."""
    train = modular_addition(5)
    x = np.array([[0.0, 0.0], [1e18, -1e18], [3.0, 1.0], [-2e17, 5e17], [1.0, 1.0]])
    u_exact, f_exact = energy_and_forces(x, train, ForceParams(sig_r=1e-3))
    u_cut, f_cut = energy_and_forces(x, train, ForceParams(sig_r=1e-3), repulsion_tol=1e-16)
    assert np.isfinite(u_cut) and np.allclose(f_cut, f_exact, rtol=1e-12, atol=1e-12)


def test_coincident_pair_sums_in_one_cell():
    train = modular_addition(7)
    x = np.ones((7, 2))
    _bounds_hold(x, train, ForceParams(), 1e-16)


@pytest.mark.slow  # compiles the parallel cell-list kernels; keeps the README suite short
@settings(deadline=None, max_examples=10)
@given(seed=st.integers(0, 2**31 - 1), p=st.integers(26, 36))
def test_cutoff_serial_and_parallel_are_bit_identical(seed, p):
    train = modular_addition(p).split(0.8, seed=seed)[0]
    x = np.random.default_rng(seed).normal(scale=8.0, size=(p, 2))
    params = ForceParams(lam=0.5)
    a = energy_and_forces(x, train, params, repulsion_tol=1e-16, parallel=False)
    b = energy_and_forces(x, train, params, repulsion_tol=1e-16, parallel=True)
    assert a[0] == b[0] and np.array_equal(a[1], b[1])


@pytest.mark.slow
def test_cutoff_run_follows_the_exact_run():
    config = preset("grids").replace(steps=300)
    exact, cut = config.run(seed=4), config.run(seed=4, repulsion_tol=1e-16)
    assert np.abs(exact.embeddings - cut.embeddings).max() < 1e-9
    assert cut.meta["repulsion_tol"] == 1e-16 and exact.meta["repulsion_tol"] is None


@pytest.mark.parametrize("bad", [0.0, 0.6, 1.0, -1e-3, 2.0, float("nan")])
def test_repulsion_tol_out_of_range(bad):
    train = modular_addition(5)
    with pytest.raises(ValueError, match="repulsion_tol"):
        energy_and_forces(np.zeros((5, 2)), train, ForceParams(), repulsion_tol=bad)


@pytest.mark.parametrize("bad", ["1e-16", True, [1e-16]])
def test_repulsion_tol_wrong_type(bad):
    with pytest.raises(TypeError, match="repulsion_tol"):
        simulate(np.zeros((5, 2)), modular_addition(5), ForceParams(), steps=2, dt=0.01, repulsion_tol=bad)


def test_repulsion_tol_needs_two_dimensions():
    with pytest.raises(ValueError, match="repulsion_tol.*d = 2"):
        energy_and_forces(np.zeros((5, 3)), modular_addition(5), ForceParams(), repulsion_tol=1e-16)


def test_cutoff_radius_and_bounds():
    assert C.cutoff_radius(1.0, 1e-16) == pytest.approx(8.58, abs=0.01)
    e, f = C.cutoff_bounds(100, 2.0, 0.5, 1e-16)
    assert e == pytest.approx(2.0 * 1e-16 * 4950) and f == pytest.approx(99 * 2.0 * 1e-16 * C.cutoff_radius(0.5, 1e-16) / 0.25)
