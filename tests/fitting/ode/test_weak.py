"""The weak (integral) formulation (fitting.ode.weak): exact on clean data,
its windows, the default window under noise, the low-noise setting."""
import warnings

import numpy as np
import pytest

from fitting import STLSQ, FitQualityWarning, LinearODE, LotkaVolterra, ODEModel, PolynomialLibrary, WeakForm

from .helpers import CASES, data, integrate, predator_prey, run


def test_weak_form_is_exact_on_clean_data_and_needs_enough_samples():
    t = np.arange(0, 30, 0.01)
    x = integrate(predator_prey, [2.0, 1.0], t)
    model = LotkaVolterra("classic", "ols").fit(x, 0.01)
    np.testing.assert_allclose(model.growth_rates_, [1.0, -0.75], rtol=1e-5)
    assert model.formulation_.window >= 11 and model.derivative is None  # the parameter is not mutated
    assert isinstance(model.formulation_, WeakForm)
    with pytest.raises(ValueError, match="weak form's windows"):
        LinearODE(derivative=WeakForm(window=101)).fit(x[:50], 0.01)
    with pytest.raises(ValueError, match="WeakForm window must be"):
        LinearODE(derivative=WeakForm(window=3)).fit(x, 0.01)
    with pytest.raises(ValueError, match="STLSQ threshold"):
        LinearODE(STLSQ(threshold=-1)).fit(x, 0.01)


def test_default_weak_window_does_not_shrink_with_noise():
    """The noise's expected power is taken out of the spectrum before the
    dominant period is read, so white noise does not pull the window down."""
    t = np.arange(0, 40, 0.02)
    rng = np.random.default_rng(33)
    runs = [integrate(predator_prey, x0, t) for x0 in rng.uniform([1, 0.5], [4, 3], size=(3, 2))]
    weak = WeakForm(order=4, period_fraction=0.25)  # the noisy-data setting on every input (see test below)
    clean = weak.bind(runs, [t] * 3).window
    for level in (0.01, 0.05, 0.1):
        noisy = [r + level * np.sqrt(np.mean(r**2, axis=0)) * rng.normal(size=r.shape) for r in runs]
        assert abs(weak.bind(noisy, [t] * 3).window - clean) <= 0.2 * clean


def food_chain(t, z):
    x, y, w = z
    return [x - 0.5 * x * x - x * y, -0.5 * y + x * y - y * w, -0.3 * w + 0.6 * y * w]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("uneven", [False, True])
def test_default_weak_window_holds_at_high_noise_on_even_and_uneven_times(seed, uneven):
    """A 3-species food chain at 5 % and 10 % noise, on even times and on sorted
    uniform random times: the default window stays within 25 % of the clean
    one. (The previous rule failed 5 of these 6 cases, e.g. 11 samples
    instead of 83: the cumulative sum of noise-subtracted power wandered, and
    read by sample index, uneven spacing looked like high-frequency power.)"""
    rng = np.random.default_rng(100 + seed)
    n = 2001
    t = np.concatenate([[0.0], np.sort(rng.uniform(0, 40, n - 2)), [40.0]]) if uneven else np.linspace(0, 40, n)
    runs = [integrate(food_chain, x0, t) for x0 in rng.uniform([0.5, 0.3, 0.3], [1.5, 1.0, 1.0], size=(3, 3))]
    weak = WeakForm(order=4, period_fraction=0.25)  # by default clean data get the low-noise setting
    clean = weak.bind(runs, [t] * 3).window
    for level in (0.05, 0.1):
        noisy = [r + level * np.sqrt(np.mean(r**2, axis=0)) * rng.normal(size=r.shape) for r in runs]
        assert abs(weak.bind(noisy, [t] * 3).window - clean) <= 0.25 * clean


def derivative_error(model, coef, degree, states):
    truth = PolynomialLibrary(degree).transform(states) @ coef.T
    return float(np.linalg.norm(model.predict(states) - truth) / np.linalg.norm(truth))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_noise_free_polynomial_systems_are_recovered_to_rounding(name):
    coef, degree, x0s, t = CASES[name]
    runs = data(coef, degree, x0s, t, 0.0, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitQualityWarning)  # no misfit on clean data
        model = ODEModel(library=degree).fit(runs, t)
    assert model.formulation_.low_noise and model.formulation_.order == 16
    held_out = run(coef, degree, np.asarray(x0s[0], float) * 0.7 + 0.1, t)
    assert derivative_error(model, coef, degree, held_out) <= 1e-8
    np.testing.assert_array_equal(model.coef_ != 0, coef != 0)  # the constants included


def test_low_noise_data_on_short_runs_say_the_weak_form_is_not_exact():
    coef, degree, x0s, t = CASES["driven"]
    short = t[:200]
    runs = data(coef, degree, x0s, short, 0.0, 0)
    with pytest.warns(FitQualityWarning, match="too short for the exact weak form.*order-4 windows "
                      "of 17 samples.*typically 1e-5 to 1e-4"):
        model = ODEModel(library=1).fit(runs, short)
    # noise-free but short: order 4 over a whole period (SHORT_QUIET), not read by the noise share
    assert not model.formulation_.low_noise and model.formulation_.order == 4
    assert model.formulation_.period_fraction == 1.0


def test_the_default_window_setting_follows_the_noise_level():
    """Clean data: the exact setting (order 16, 0.75 of the period); noise
    up to MODERATE_NOISE of every column's spread: order 4 over half the
    period; more noise: order 4 over a quarter (fitting.ode.weak's notes)."""
    from fitting.ode.noise import dominant_period, noise_share
    from fitting.ode.weak import MODERATE, MODERATE_NOISE, NOISY, SMOOTH
    from fitting.ode.noise import noise_level

    coef, degree, x0s, t = CASES["driven"]
    clean = data(coef, degree, x0s, t, 0.0, 0)
    spread = np.vstack(clean).std(axis=0)
    rng = np.random.default_rng(5)
    settings = {}
    for share in (0.0, 0.02, 0.15):
        runs = [r + share * spread * rng.normal(size=r.shape) for r in clean]
        bound = WeakForm().bind(runs, [t] * len(runs))
        settings[share] = (bound.order, bound.period_fraction)
        if share:
            assert noise_share(runs) == pytest.approx(share, rel=0.1)  # estimated, against the truth
    assert settings == {0.0: SMOOTH, 0.02: MODERATE, 0.15: NOISY} and 0.02 < MODERATE_NOISE < 0.15
    # a given period fraction or order is kept; the noise level passed in is the one estimated inside
    runs = [r + 0.02 * spread * rng.normal(size=r.shape) for r in clean]
    assert WeakForm(period_fraction=0.25).bind(runs, [t] * 3).period_fraction == 0.25
    given = WeakForm(window=41).bind(runs, [t] * 3)  # a given window: only the order is chosen
    assert (given.window, given.order, given.period_fraction) == (41, 4, None)
    # the window follows the dominant period at the noise level estimated once, and that level counts
    level = noise_level(runs)
    assert dominant_period(runs, noise=1e3 * level) != dominant_period(runs, noise=0 * level)
    w = max(2 * 4 + 3, min(len(t) // 12, int(round(0.5 * dominant_period(runs, noise=level)))))
    assert WeakForm().bind(runs, [t] * 3).window == w + 1 - w % 2
    assert noise_share([np.ones((50, 2))]) is None
    # integer input is read as numbers, not wrapped around
    small = [np.round(50 + 40 * np.sin(np.linspace(0, 20, 400)))[:, None] + np.arange(2)]
    assert noise_share([r.astype(np.uint8) for r in small]) == noise_share(small)


def test_the_noise_checks_read_the_spread_within_runs():
    """Runs offset from one another do not make noisy data look quiet, and
    a column constant up to rounding (a conserved quantity) is not read as a
    noisy varying column (fitting.ode.noise.column_spread)."""
    from fitting.ode.noise import column_spread, noise_share
    from fitting.ode.weak import MODERATE, NOISY

    t = np.linspace(0, 40, 2000)
    rng = np.random.default_rng(8)
    wave = np.column_stack([np.sin(t), np.cos(0.5 * t)])
    # three runs offset by 0, 10, 20, each with noise of 20 % of its own spread
    runs = [wave + 10.0 * k + 0.2 * wave.std(axis=0) * rng.normal(size=wave.shape) for k in range(3)]
    np.testing.assert_allclose(column_spread(runs), wave.std(axis=0), rtol=0.05)
    assert noise_share(runs) == pytest.approx(0.2, rel=0.15)
    bound = WeakForm().bind(runs, [t] * 3)
    assert (bound.order, bound.period_fraction) == NOISY and not bound.low_noise
    # 2 % noise plus a column sin^2 + cos^2, constant up to rounding
    quiet = [wave + 0.02 * wave.std(axis=0) * rng.normal(size=wave.shape) for _ in range(2)]
    conserved = [np.column_stack([q, np.sin(t) ** 2 + np.cos(t) ** 2]) for q in quiet]
    assert column_spread(conserved)[2] == 0.0
    assert noise_share(conserved) == pytest.approx(noise_share(quiet))
    bound = WeakForm().bind(conserved, [t] * 2)
    assert (bound.order, bound.period_fraction) == MODERATE
    # no sample: said; NaN is not read as a constant column
    with pytest.raises(ValueError, match="at least one sample"):
        column_spread([np.zeros((0, 2))])
    assert np.isnan(column_spread([np.column_stack([t, np.where(t > 20, np.nan, t)])])[1])
