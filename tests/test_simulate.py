import numpy as np
import pytest

from particles import (ForceParams, NonFiniteStateError, energy, forces, minimize, modular_addition, simulate,
                       Trajectory)


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


def test_parallel_matches_serial(train17, rng):
    x0 = rng.standard_normal((17, 2))
    params = ForceParams(lam=1.0, alignment="polar")
    a = simulate(x0, train17, params, steps=200, dt=0.005, parallel=True)
    b = simulate(x0, train17, params, steps=200, dt=0.005, parallel=False)
    np.testing.assert_allclose(a.embeddings, b.embeddings, rtol=1e-9, atol=1e-12)


def test_nonfinite_state_stops_with_step(train17, rng):
    x0 = rng.standard_normal((17, 2))
    with pytest.raises(NonFiniteStateError, match=r"non-finite state at step \d+") as info:
        simulate(x0, train17, ForceParams(k_r=50.0, sig_r=0.05), steps=2000, dt=50.0, record_every=1)
    assert info.value.step > 0
    partial = info.value.trajectory
    assert partial is None or np.all(np.isfinite(partial.embeddings))


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(steps=0, dt=0.1), ValueError, "steps must be >= 1"),
    (dict(steps=1.5, dt=0.1), TypeError, "steps must be an int"),
    (dict(steps=10, dt=-0.1), ValueError, "dt must be > 0"),
    (dict(steps=10, dt=0.0), ValueError, "dt must be > 0"),
    (dict(steps=10, dt=float("nan")), ValueError, "dt must be > 0"),
    (dict(steps=10, dt=0.1, record_every=0), ValueError, "record_every must be >= 1"),
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
