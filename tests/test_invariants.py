"""Property tests of every invariant of SPEC section 1."""
import math

import numpy as np
from hypothesis import given, settings, strategies as st

from particles import ForceParams, energy, energy_and_forces, forces, modular_addition, simulate

PROPS = settings(deadline=None, max_examples=40)

positive = st.floats(0.2, 3.0)
strength = st.floats(0.0, 3.0)


@st.composite
def setups(draw, d_min=1, d_max=4, lam=True, wd=True, gradient_only=False):
    p = draw(st.integers(3, 11))
    d = draw(st.integers(max(d_min, 2 if lam else d_min), d_max))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    fraction = draw(st.floats(0.3, 1.0))
    train = modular_addition(p).split(fraction, seed=rng)[0]
    x = rng.normal(scale=draw(st.floats(0.3, 2.0)), size=(p, d))
    # wd=False: nothing decays the particles. The classifier variant's wd
    # (a softening of the alignment) keeps every invariant, so it is drawn freely.
    target = draw(st.sampled_from(["particles", "classifier"]))
    if target == "particles":
        variant = dict(wd=draw(st.floats(0.0, 0.5)) if wd else 0.0)
    else:
        variant = dict(wd=draw(st.floats(0.0, 2.0)), bias_scale=draw(st.floats(0.1, 3.0)),
                       particle_decay=draw(st.floats(0.0, 1.0)) if wd else 0.0)
    params = ForceParams(
        k_a=draw(strength), sig_a=draw(positive), k_r=draw(strength), sig_r=draw(positive),
        lam=draw(st.floats(0.1, 3.0)) if lam else 0.0, sig_t=draw(st.floats(0.2, 1.0)), eps=draw(st.floats(0.3, 1.5)),
        alignment="gradient" if gradient_only else draw(st.sampled_from(["gradient", "polar"])),
        alignment_form=draw(st.sampled_from(["cosine", "axial"])), wd_target=target, **variant)
    return x, train, params


@PROPS
@given(setups(lam=False, wd=False))
def test_total_force_vanishes_without_alignment_and_decay(setup):
    x, train, params = setup
    f = forces(x, train, params)
    assert np.all(np.abs(f.sum(axis=0)) <= 1e-10 * max(1.0, np.abs(f).max()))


@settings(deadline=None, max_examples=15)
@given(setups(lam=False, wd=False))
def test_centroid_conserved_by_euler(setup):
    x, train, params = setup
    traj = simulate(x, train, params, steps=50, dt=1e-2, record_every=10)
    centroids = traj.embeddings.mean(axis=1)
    np.testing.assert_allclose(centroids, np.broadcast_to(x.mean(axis=0), centroids.shape), atol=1e-10)


@PROPS
@given(setups(d_min=2, d_max=2, wd=False, gradient_only=True))
def test_zero_total_torque_for_gradient_variant(setup):
    x, train, params = setup
    f = forces(x, train, params)
    torque = np.sum(x[:, 0] * f[:, 1] - x[:, 1] * f[:, 0])
    assert abs(torque) <= 1e-9 * max(1.0, np.abs(x).max() * np.abs(f).max())


@PROPS
@given(setups(gradient_only=True))
def test_force_is_minus_gradient(setup):
    x, train, params = setup
    f = forces(x, train, params)
    h = 1e-6
    grad = np.zeros_like(x)
    for a in range(x.shape[0]):
        for k in range(x.shape[1]):
            xp, xm = x.copy(), x.copy()
            xp[a, k] += h
            xm[a, k] -= h
            grad[a, k] = (energy(xp, train, params) - energy(xm, train, params)) / (2 * h)
    scale = max(1.0, np.abs(f).max())
    assert np.max(np.abs(f + grad)) <= 1e-5 * scale


@settings(deadline=None, max_examples=20)
@given(setups(gradient_only=True))
def test_energy_does_not_increase_along_flow(setup):
    x, train, params = setup
    _, f0 = energy_and_forces(x, train, params)
    dt = 1e-3 / max(1.0, np.abs(f0).max())
    traj = simulate(x, train, params, steps=200, dt=dt, record_every=1)
    increments = np.diff(traj.energy)
    assert np.all(increments <= 1e-10 * max(1.0, np.abs(traj.energy).max()))


@PROPS
@given(setups(), st.data())
def test_relabelling_equivariance(setup, data):
    x, train, params = setup
    p = x.shape[0]
    g = data.draw(st.sampled_from([g for g in range(1, p) if math.gcd(g, p) == 1]))
    # x'_{g k} = x_k, pairs (a, b) -> (g a, g b), labels -> g label: forces permute the same way
    x_new = np.empty_like(x)
    x_new[(g * np.arange(p)) % p] = x
    pairs_new = (g * train.pairs) % p
    from particles import PairDataset
    train_new = PairDataset(pairs_new, (g * train.labels) % p, p)
    f = forces(x, train, params)
    f_new = forces(x_new, train_new, params)
    np.testing.assert_allclose(f_new[(g * np.arange(p)) % p], f, rtol=1e-10, atol=1e-12)
    assert math.isclose(energy(x, train, params), energy(x_new, train_new, params), rel_tol=1e-10, abs_tol=1e-12)
