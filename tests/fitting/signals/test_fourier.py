"""Fourier signals and the survival rule (fitting.signals; SPEC section 3)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitting import DC_SCALAR, fourier_signals, frequency_circularity, surviving_frequencies, trajectory_signals
from particles import Trajectory, circularity


def circle(p, k, d=2, radius=1.0, phase=0.0):
    n = np.arange(p)
    E = np.zeros((p, d))
    E[:, 0] = radius * np.cos(2 * np.pi * k * n / p + phase)
    E[:, 1] = radius * np.sin(2 * np.pi * k * n / p + phase)
    return E


def reference_signals(E, power=1):
    """Direct sum over tokens, no FFT: S_k = |sum_n exp(-2 pi i k n / p) E_n|."""
    p = E.shape[0]
    K = (p - 1) // 2
    out = np.empty(K + 1)
    for k in range(K + 1):
        F = sum(np.exp(-2j * np.pi * k * n / p) * E[n] for n in range(p))
        out[k] = np.linalg.norm(F) ** power
    return out


@pytest.mark.parametrize("p,k", [(17, 3), (59, 11), (13, 6)])
def test_perfect_circle_puts_all_signal_in_its_frequency(p, k):
    E = circle(p, k, d=3) + np.array([0.5, -0.2, 0.0])  # offset only changes DC
    S = fourier_signals(E, dc=True)
    assert S.shape == ((p - 1) // 2 + 1,)
    assert S[k] == pytest.approx(p / np.sqrt(2), rel=1e-12)  # |F_k|^2 = p^2/2 for a unit circle in a plane
    others = np.delete(S[1:], k - 1)
    assert np.max(others) < 1e-10 * S[k]
    full = np.linalg.norm(np.fft.fft(E, axis=0), axis=1)
    assert full[p - k] == pytest.approx(S[k], rel=1e-12)  # k and p - k are the same circle
    assert np.sum(np.delete(full, [0, k, p - k])) < 1e-9 * S[k]


def test_signals_match_direct_sum_and_power(rng):
    E = rng.normal(size=(11, 4))
    np.testing.assert_allclose(fourier_signals(E, dc=True), reference_signals(E), rtol=1e-12)
    np.testing.assert_allclose(fourier_signals(E, power=2), reference_signals(E, 2)[1:], rtol=1e-12)


def test_stack_and_trajectory_give_the_same_signals(rng):
    stack = rng.normal(size=(5, 13, 3))
    S = fourier_signals(stack)
    assert S.shape == (5, 6)
    for t in range(5):
        np.testing.assert_allclose(S[t], fourier_signals(stack[t]))
    traj = Trajectory(embeddings=stack, snapshot_steps=np.arange(5) * 10)
    np.testing.assert_allclose(fourier_signals(traj), S)
    steps, S2 = trajectory_signals(traj)
    np.testing.assert_array_equal(steps, np.arange(5) * 10)
    np.testing.assert_allclose(S2, S)


def test_trajectory_signals_prefers_stored_series(rng):
    stack = rng.normal(size=(2, 13, 3))
    stored = rng.uniform(1, 2, size=(7, 6))
    traj = Trajectory(embeddings=stack, snapshot_steps=[0, 6], steps=np.arange(7), signals=stored,
                      meta={"signal_power": 1})
    steps, S = trajectory_signals(traj)
    np.testing.assert_array_equal(S, stored)
    np.testing.assert_allclose(trajectory_signals(traj, power=2)[1], stored**2)


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), p=st.sampled_from([5, 7, 13, 17]), d=st.integers(1, 6),
       shift=st.integers(-20, 20))
def test_signals_invariant_under_token_rotation_and_orthogonal_maps(seed, p, d, shift):
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(p, d))
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    S = fourier_signals(E, dc=True)
    np.testing.assert_allclose(fourier_signals(np.roll(E, shift, axis=0), dc=True), S, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fourier_signals(E @ Q.T, dc=True), S, rtol=1e-9, atol=1e-12)


def test_bad_signal_inputs():
    with pytest.raises(ValueError, match="power"):
        fourier_signals(np.ones((5, 2)), power=3)
    with pytest.raises(ValueError, match="E must have shape"):
        fourier_signals(np.ones(5))
    with pytest.raises(ValueError, match="non-finite"):
        fourier_signals(np.full((5, 2), np.nan))
    with pytest.raises(TypeError, match="numeric"):
        fourier_signals(np.array([["a", "b"]] * 5))


def test_survival_rule_matches_full_spectrum_definition(rng):
    p = 23
    E = 0.05 * rng.normal(size=(p, 6)) + circle(p, 4, d=6) + 0.7 * circle(p, 9, d=6, phase=1.0)[:, ::-1]
    full = np.linalg.norm(np.fft.fft(E, axis=0), axis=1)  # all p bins, DC included
    expected = full[1 : (p - 1) // 2 + 1] > 2 * full.mean()
    S = fourier_signals(E, dc=True)
    got = surviving_frequencies(S[1:], dc=S[0])
    np.testing.assert_array_equal(got, expected)
    assert set(np.flatnonzero(got) + 1) == {4, 9}
    traj = Trajectory(embeddings=E[None], snapshot_steps=[0])
    np.testing.assert_array_equal(surviving_frequencies(traj), expected)
    # a (T, K) array uses its last row; dc series its last entry
    stacked = np.vstack([np.ones_like(S[1:]), S[1:]])
    np.testing.assert_array_equal(surviving_frequencies(stacked, dc=[1.0, S[0]]), expected)
    # larger factor: fewer survivors
    assert surviving_frequencies(S[1:], factor=50, dc=S[0]).sum() < got.sum()


def test_survival_rule_bad_inputs():
    S = np.ones(5)
    with pytest.raises(ValueError, match="dc is required"):
        surviving_frequencies(S)
    with pytest.raises(ValueError, match="factor"):
        surviving_frequencies(S, factor=0, dc=1)
    with pytest.raises(ValueError, match="p must be odd"):
        surviving_frequencies(S, dc=1, p=12)
    with pytest.raises(ValueError, match="p must be an int"):
        surviving_frequencies(S, dc=1, p=20)


def test_frequency_circularity_reuses_particles_metric(rng):
    E = circle(17, 5) + 0.01 * rng.normal(size=(17, 2))
    np.testing.assert_array_equal(frequency_circularity(E), circularity(E))
    stack = np.stack([E, circle(17, 2)])
    C = frequency_circularity(stack)
    assert C.shape == (2, 8)
    assert np.argmax(C[0]) == 4 and np.argmax(C[1]) == 1 and C[1, 1] == pytest.approx(1.0)


def test_dc_scalar_name_is_a_valid_trajectory_scalar(rng):
    traj = Trajectory(embeddings=rng.normal(size=(1, 5, 2)), snapshot_steps=[0], scalars={DC_SCALAR: [1.0]})
    assert DC_SCALAR in traj.scalars


@pytest.mark.parametrize("bad, err", [(-5, ValueError), (0, ValueError), ("5", TypeError), (5.0, TypeError),
                                      (True, TypeError)])
def test_n_frequencies_checked(bad, err):
    from fitting.signals import n_frequencies
    with pytest.raises(err, match="p must be"):
        n_frequencies(bad)


def test_surviving_frequencies_as_mask_or_frequencies():
    from fitting import surviving_frequencies

    rng = np.random.default_rng(3)
    signals = rng.uniform(0, 1, (4, 8))
    signals[-1, [1, 5]] = 20.0
    mask = surviving_frequencies(signals, dc=0.5)
    ks = surviving_frequencies(signals, dc=0.5, output="frequencies")
    assert mask.dtype == bool and ks.tolist() == (np.flatnonzero(mask) + 1).tolist() == [2, 6]
    with pytest.raises(ValueError, match="output must be one of"):
        surviving_frequencies(signals, dc=0.5, output="ks")


def test_a_token_axis_that_contradicts_p_is_refused_with_the_transpose_suggested(rng):
    E = rng.normal(size=(97, 96))  # p = 97 tokens in d = 96 dimensions
    assert fourier_signals(E.T).shape == (47,)  # without p nothing is guessed: axis -2 is the token axis
    assert fourier_signals(E, p=97).shape == (48,)
    with pytest.raises(ValueError) as info:
        fourier_signals(E.T, p=97)
    assert str(info.value) == ("E has shape (96, 97): its token axis (axis 0) has 96 entries, but p = 97; its last "
                               "axis has 97, so it looks transposed, (d, p) where (p, d) is expected: pass E.T")
    with pytest.raises(ValueError, match=r"axis 1\) has 96 entries, but p = 97; .*pass np.swapaxes\(E, 1, 2\)"):
        fourier_signals(np.stack([E.T, E.T]), p=97)
    with pytest.raises(ValueError, match=r"E has shape \(50, 96\): its token axis \(axis 0\) has 50 entries, but "
                                         r"p = 97; embeddings are \(p, d\)"):
        fourier_signals(E[:50], p=97)
    for bad, kind in ((1, ValueError), (2.0, TypeError), (True, TypeError), ("97", TypeError)):
        with pytest.raises(kind, match="p must be an int >= 2"):
            fourier_signals(E, p=bad)


def test_a_trajectory_is_checked_against_the_p_it_records(rng):
    E = rng.normal(size=(2, 97, 6))
    good = Trajectory(E, [0, 10], meta={"p": 97})
    assert trajectory_signals(good)[1].shape == (2, 48)
    flipped = Trajectory(np.swapaxes(E, 1, 2), [0, 10], meta={"p": 97})  # stored (S, d, p)
    for call in (lambda: trajectory_signals(flipped), lambda: fourier_signals(flipped),
                 lambda: frequency_circularity(flipped), lambda: surviving_frequencies(flipped)):
        with pytest.raises(ValueError, match=r"embeddings has shape \(2, 6, 97\): its token axis \(axis 1\) has 6 "
                                             r"entries, but the trajectory's meta records p = 97; its last axis has "
                                             r"97, so it looks transposed.*build the Trajectory from np.swapaxes"):
            call()
    with pytest.raises(ValueError, match="but p = 5"):  # a given p is checked too
        fourier_signals(good, p=5)
    unrecorded = Trajectory(np.swapaxes(E, 1, 2), [0, 10])  # no recorded p: taken as (S, p, d), as the format says
    assert trajectory_signals(unrecorded)[1].shape == (2, 2)
    wrong = Trajectory(E, [0, 10], signals=np.ones((2, 47)), meta={"p": 97})  # signals over another axis
    with pytest.raises(ValueError, match=r"traj.signals has 47 columns, but the trajectory's p = 97 tokens have 48"):
        trajectory_signals(wrong)


def test_surviving_frequencies_refuses_signals_without_rows():
    # used to be an IndexError from taking the last row of a (0, K) array
    with pytest.raises(ValueError, match=r"signals must have shape \(K,\) or \(T, K\) with K >= 1 and T >= 1, "
                                         r"got \(0, 3\)"):
        surviving_frequencies(np.empty((0, 3)), dc=0.0)


@pytest.mark.parametrize("dtype", ["m8[s]", complex, bool, object])
def test_fourier_signals_refuses_non_real_dtypes(dtype):
    # timedelta64 is a NumPy integer subtype and used to be read as numbers
    with pytest.raises(TypeError, match=r"E must be a real numeric array, got dtype"):
        fourier_signals(np.zeros((5, 2), dtype=dtype))
