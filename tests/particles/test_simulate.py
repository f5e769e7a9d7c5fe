import numpy as np
import pytest

from particles import ForceParams, NonFiniteStateError, energy, forces, minimize, modular_addition, simulate


def test_records_and_energy(train17, rng):
    x0 = rng.standard_normal((17, 2))
    traj = simulate(x0, train17, ForceParams(), steps=1000, dt=0.01, record_every=300)
    assert list(traj.snapshot_steps) == [0, 300, 600, 900, 1000]
    assert traj.embeddings.shape == (5, 17, 2)
    np.testing.assert_array_equal(traj.embeddings[0], x0)
    assert traj.energy[0] == pytest.approx(energy(x0, train17, ForceParams()), rel=1e-12)
    assert traj.energy[-1] == pytest.approx(energy(traj.final, train17, ForceParams()), rel=1e-12)
    assert traj.meta["source"] == "particles.simulate" and traj.meta["p"] == 17


def test_one_euler_step(train17, rng):
    x0 = rng.standard_normal((17, 2))
    params = ForceParams(lam=1.0)
    traj = simulate(x0, train17, params, steps=1, dt=0.05)
    np.testing.assert_allclose(traj.final, x0 + 0.05 * forces(x0, train17, params), rtol=1e-12)


def test_deterministic_with_noise(train17, rng):
    x0 = rng.standard_normal((17, 2))
    params = ForceParams(lam=1.0)
    a = simulate(x0, train17, params, steps=300, dt=0.01, temperature=0.5, seed=11)
    b = simulate(x0, train17, params, steps=300, dt=0.01, temperature=0.5, seed=11)
    c = simulate(x0, train17, params, steps=300, dt=0.01, temperature=0.5, seed=12)
    np.testing.assert_array_equal(a.embeddings, b.embeddings)
    assert not np.allclose(a.final, c.final)


def test_annealed_noise_vanishes_at_the_end(train17, rng):
    x0 = rng.standard_normal((17, 2))
    params = ForceParams()
    noisy = simulate(x0, train17, params, steps=200, dt=0.01, temperature=1.0, final_temperature=0.0, seed=1)
    quiet = simulate(x0, train17, params, steps=200, dt=0.01)
    assert not np.allclose(noisy.final, quiet.final)


def test_callback_gives_same_result(train17, rng):
    x0 = rng.standard_normal((17, 2))
    params = ForceParams(lam=0.5)
    seen = []
    a = simulate(x0, train17, params, steps=500, dt=0.01, record_every=7, temperature=0.2, seed=3,
                 callback=lambda done, total: seen.append((done, total)))
    b = simulate(x0, train17, params, steps=500, dt=0.01, record_every=7, temperature=0.2, seed=3)
    np.testing.assert_array_equal(a.embeddings, b.embeddings)
    np.testing.assert_array_equal(a.energy, b.energy)
    assert seen[-1] == (500, 500) and len(seen) > 10


def test_parallel_matches_serial(rng):
    """A system of 325 pairs (16 row blocks): the parallel kernel really
    splits the work, and gives the serial kernel's bits."""
    train = modular_addition(25)
    assert len(train) >= 256
    x0 = rng.standard_normal((25, 2))
    params = ForceParams(lam=1.0, alignment_form="axial", sig_t=0.5)
    a = simulate(x0, train, params, steps=100, dt=0.005, parallel=True)
    b = simulate(x0, train, params, steps=100, dt=0.005, parallel=False)
    assert np.array_equal(a.embeddings, b.embeddings)


def test_nonfinite_state_stops_with_step(train17, rng):
    x0 = rng.standard_normal((17, 2))
    with pytest.raises(NonFiniteStateError, match=r"simulate stopped at step \d+") as info:
        simulate(x0, train17, ForceParams(k_r=50.0, sig_r=0.05), steps=2000, dt=50.0, record_every=1,
                 max_growth=1e300)
    assert type(info.value) is NonFiniteStateError and info.value.step > 0
    partial = info.value.trajectory
    assert partial is None or np.all(np.isfinite(partial.embeddings))


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(steps=0, dt=0.1), ValueError, r"steps must be an int in \[1, 1000000000\], got 0"),
    (dict(steps=1.5, dt=0.1), TypeError, "steps must be an int"),
    (dict(steps=10, dt=-0.1), ValueError, "dt must be > 0"),
    (dict(steps=10, dt=0.0), ValueError, "dt must be > 0"),
    (dict(steps=10, dt=float("nan")), ValueError, "dt must be > 0"),
    (dict(steps=10, dt=0.1, record_every=0), ValueError, "record_every must be an int >= 1"),
    (dict(steps=10, dt=0.1, temperature=-1.0), ValueError, "temperature must be >= 0"),
])
def test_bad_run_settings(train17, kwargs, err, match):
    with pytest.raises(err, match=match):
        simulate(np.zeros((17, 2)), train17, ForceParams(), **kwargs)


@pytest.mark.parametrize("x0, match", [
    (np.zeros((16, 2)), "p = 17 rows"),
    (np.zeros(17), r"shape \(p, d\)"),
    (np.full((17, 2), np.nan), "non-finite"),
    (np.zeros((17, 1)), None),
])
def test_bad_x0(train17, x0, match):
    if match is None:  # d = 1 is fine without alignment, refused with it
        simulate(x0 + np.arange(17)[:, None], train17, ForceParams(), steps=2, dt=0.01)
        with pytest.raises(ValueError, match="needs dimension d >= 2"):
            simulate(x0, train17, ForceParams(lam=1.0), steps=2, dt=0.01)
    else:
        with pytest.raises(ValueError, match=match):
            simulate(x0, train17, ForceParams(), steps=2, dt=0.01)


@pytest.mark.parametrize("field, value, match", [
    ("sig_a", -1.0, "sig_a must be > 0"),
    ("sig_r", 0.0, "sig_r must be > 0"),
    ("k_a", -0.5, "k_a must be >= 0"),
    ("lam", float("inf"), "lam must be finite"),
    ("alignment", "torque", "alignment must be one of"),
    ("alignment_form", "square", "alignment_form must be one of"),
])
def test_bad_params(field, value, match):
    with pytest.raises(ValueError, match=match):
        ForceParams(**{field: value})


def test_wrong_argument_types(train17):
    with pytest.raises(TypeError, match="train must be a PairDataset"):
        simulate(np.zeros((17, 2)), [(0, 1)], ForceParams(), steps=1, dt=0.1)
    with pytest.raises(TypeError, match="params must be a ForceParams"):
        simulate(np.zeros((17, 2)), train17, {"lam": 1}, steps=1, dt=0.1)


def test_minimize_lowers_energy_and_converges(rng):
    train = modular_addition(7).split(0.8, seed=0)[0]
    x0 = rng.standard_normal((7, 2))
    params = ForceParams(lam=1.0, wd=0.3)
    result = minimize(x0, train, params, max_steps=20000, gtol=1e-6)
    assert result.energy < energy(x0, train, params)
    assert result.converged and result.max_force < 1e-6
    assert np.max(np.abs(forces(result.x, train, params))) < 1e-6


def test_minimize_refuses_polar(train17):
    with pytest.raises(ValueError, match="gradient forces"):
        minimize(np.ones((17, 2)), train17, ForceParams(lam=1.0, alignment="polar"))


def test_runaway_growth_stops_simulate_with_its_name(train17, rng):
    """A decay of 1e5 with dt = 0.01 multiplies x by -999 a step: finite for
    100 steps, but a runaway; it stops long before."""
    from particles import RunawayError
    x0 = rng.standard_normal((17, 2))
    with pytest.raises(RunawayError, match=r"simulate stopped at step \d+: runaway growth") as info:
        simulate(x0, train17, ForceParams(wd=1e5), steps=50, dt=0.01, record_every=1)
    assert 0 < info.value.step <= 3 and info.value.bound == pytest.approx(1e6 * np.abs(x0).max())
    assert np.all(np.abs(info.value.trajectory.embeddings) <= info.value.bound)


def test_growth_bound_is_relative_to_the_start(train17, rng):
    """A legitimate run that spreads out stays under the default bound; a tight
    bound stops the same run."""
    from particles import RunawayError
    x0 = 1e-3 * rng.standard_normal((17, 2))
    params = ForceParams(k_a=0.0, k_r=1.0, sig_r=1.0, wd=0.0)
    simulate(x0, train17, params, steps=200, dt=0.05)
    with pytest.raises(RunawayError):
        simulate(x0, train17, params, steps=200, dt=0.05, max_growth=1.5)


def test_runaway_stops_minimize_and_the_effective_flow(train17, rng):
    from particles import RunawayError, addition
    from particles.effective import simulate_effective
    x0 = 1e-3 * rng.standard_normal((17, 2))
    with pytest.raises(RunawayError, match="minimize stopped"):
        minimize(x0, train17, ForceParams(k_a=0.0, k_r=1.0, sig_r=1.0, wd=0.0), max_growth=1.5)
    E0 = rng.standard_normal((6, 2))
    with pytest.raises(RunawayError, match="simulate_effective stopped at step 1: runaway"):
        simulate_effective(E0, addition(6), steps=50, dt=100.0, max_growth=2.0)
    simulate_effective(E0, addition(6), steps=50, dt=1.0, max_growth=2.0)  # a tame flow passes


@pytest.mark.parametrize("bad, err", [(1.0, ValueError), (0.5, ValueError), (float("nan"), ValueError),
                                      (float("inf"), ValueError), ("10", TypeError), (True, TypeError)])
def test_max_growth_checked(train17, bad, err):
    with pytest.raises(err, match="max_growth"):
        simulate(np.zeros((17, 2)), train17, ForceParams(), steps=2, dt=0.01, max_growth=bad)


def test_divergence_errors_survive_pickling():
    """A sweep's worker processes pickle these to re-raise them: every field must come back."""
    import pickle

    from particles.simulate import NonFiniteStateError, RunawayError

    for err in (NonFiniteStateError(7, None, "minimize", "a custom law divided by zero"),
                RunawayError(9, 1.5e3, None, "simulate_effective")):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)
        assert (back.step, back.integrator, back.trajectory) == (err.step, err.integrator, None)
    assert back.bound == 1.5e3
