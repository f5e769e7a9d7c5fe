"""Weak (integral) formulation: fitting without numerical derivatives.

For a test function phi that vanishes at both ends of a time window,
integration by parts turns dx/dt = Theta(x) xi into

    integral phi(t) Theta(x(t)) dt  xi  =  - integral phi'(t) x(t) dt,

so the targets are integrals of the data against phi' and no derivative is
ever estimated; noise is averaged over each window instead of amplified by
differencing. Each window gives one regression row. We use the polynomial
bump phi(u) = (u (1 - u))^order on u = (t - a) / (b - a), normalised to
unit integral, so a row is a phi-weighted average of the library and of
dx/dt over its window (same units as a pointwise row). Integrals use the
trapezoid rule on the samples (any spacing); phi's vanishing derivatives at
the window ends make that rule converge fast.

The window length is the one setting that matters. The default chooses it
from the data: the shortest window over which every signal moves by a
clear margin, capped so that each run gives at least ``min_windows`` rows
(see :class:`WeakForm`).
"""

from __future__ import annotations

import copy

import numpy as np
from scipy import special

from ..derivatives import is_uniform
from particles.core.validation import check_float, check_int
from .differentiation import Formulation
from .library import Library
from .quality import warn_quality
from .weighted import noise_level

__all__ = ["WeakForm", "WEIGHTINGS", "windowed", "smooth_noise_level", "is_low_noise", "noise_share", "NOISY",
           "MODERATE", "SMOOTH", "SHORT_QUIET", "LOW_NOISE", "MODERATE_NOISE", "column_spread",
           "ROUNDING_SPREAD"]

WEIGHTINGS = ("covariance", "none")


class WeakForm(Formulation):
    """Weak formulation on overlapping windows.

    Parameters
    ----------
    window : int >= 2 * order + 1, or None
        Samples per window. None: chosen from the data, see Notes.
    stride : int >= 1, or None
        Samples between window starts (default window // 4).
    order : int >= 2, or None
        Exponent of the test function (order - 1 derivatives vanish at the
        window ends). None (default): chosen from the data, see Notes.
    min_windows : int >= 4
        Fewest windows (rows) per run the default window allows. Runs too
        short for it use the shortest window, ``2 * order + 3`` samples.

    period_fraction : float > 0, or None
        Default window as a share of the data's dominant period. None
        (default): chosen from the data, see Notes.
    weighting : {"covariance", "none"}
        ``"covariance"`` (default): after the regressor has selected the
        terms, an unpenalised regressor's (STLSQ, OLS) coefficients on them
        are refitted by generalised least squares with the covariance that
        measurement noise gives the rows (overlapping windows, state-dependent
        errors; :mod:`fitting.ode.weighted`). ``"none"``: ordinary least
        squares rows, as the regressor left them.

    Notes
    -----
    Default order and period fraction (``None``), fixed once per fit from
    all runs: on low-noise data (:func:`is_low_noise`: the white-noise level
    that differences of order 4-16 admit is below ``LOW_NOISE`` = 1 % of
    every column's spread within the runs, :func:`column_spread`: offsets
    between runs and columns constant up to rounding do not count as
    variation) whose runs all hold at least
    ``min_windows`` windows of 35 samples, ``SMOOTH`` = order 16 over 0.75
    of the dominant period: the trapezoid rule's error then falls as the
    16th power of the step, and noise-free polynomial systems are recovered
    to rounding. Otherwise, where the noise is at most ``MODERATE_NOISE``
    = 5 % of every varying column's spread (:func:`noise_share`),
    ``MODERATE`` = order 4 over 0.5 of the period, and above that ``NOISY``
    = order 4 over 0.25 of the period, which averages noise best. Low-noise
    data on runs too short for the first setting get ``SHORT_QUIET`` = order
    4 over a whole period (capped, as every default window, at a
    ``min_windows``-th of the shortest run) with a
    :class:`FitQualityWarning` (the noise share is not read there: at a
    few samples a period the fourth differences hold signal, not noise).
    With a given ``window`` only the order is left to the data (16 where
    the data are noise-free and the window holds the order-16 bump, else
    4), and ``period_fraction`` stays as given. The bound copy's
    ``low_noise`` and ``order`` / ``period_fraction`` say which was used.

    Default window (``window=None``), fixed once per fit from all runs:
    ``period_fraction`` times the dominant period of the data
    (:func:`dominant_period`: 90 % of the variation's power lies at longer
    periods), capped at T // ``min_windows`` samples for the shortest run
    of T samples and at least 2 * order + 3, rounded to odd. Rows from long
    windows vary less from one another; short windows average less noise
    and integrate less accurately; the measurements behind the defaults are
    in docs/fitting.md.
    """

    pointwise = False

    def __init__(self, window: int | None = None, stride: int | None = None, order: int | None = None,
                 min_windows: int = 12, period_fraction: float | None = None, weighting: str = "covariance"):
        self.window = window
        self.stride = stride
        self.order = order
        self.min_windows = min_windows
        self.period_fraction = period_fraction
        self.weighting = weighting

    def check(self) -> None:
        o = check_int(self.order, "WeakForm order", 2, allow_none=True)
        check_int(self.window, "WeakForm window", 2 * (o or NOISY[0]) + 1, allow_none=True,
                  unit=" (2 * order + 1 samples)")
        check_int(self.stride, "WeakForm stride", 1, allow_none=True)
        check_float(self.period_fraction, "WeakForm period_fraction", 0.0, strict=True, allow_none=True)
        check_int(self.min_windows, "WeakForm min_windows", 4)
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"WeakForm weighting must be one of {WEIGHTINGS}, got {self.weighting!r}")

    def min_samples(self) -> int:
        return self.window if self.window is not None else 2 * (self.order or NOISY[0]) + 3

    def bind(self, runs: list[np.ndarray], times: list[np.ndarray]) -> "WeakForm":
        """A copy with the order, the period fraction and the window fixed
        from the data (those left None); ``low_noise`` says whether the
        data were read as noise-free (see Notes)."""
        bound = copy.copy(self)
        if self.window is not None and self.order is not None:  # nothing left to choose
            bound.low_noise = False
            return bound
        # what the data choose: the order, and the period fraction when it sets the window
        auto = self.order is None or (self.period_fraction is None and self.window is None)
        # the low-noise setting needs min_windows of its shortest window in every run
        need = self.min_windows * (2 * SMOOTH[0] + 3)
        shortest = min(len(r) for r in runs)
        spread = column_spread(runs) if auto else None  # shared by the noise checks below
        quiet = bool(auto and is_low_noise(runs, times, spread=spread))
        if self.window is not None:  # a given window: the low-noise bump only where it fits in it
            bound.low_noise = quiet and self.window >= 2 * SMOOTH[0] + 1
        else:
            bound.low_noise = quiet and shortest >= need
        level = None  # the white-noise level per column, shared by the noise share and the dominant period
        if bound.low_noise:
            order, fraction = SMOOTH
        elif quiet:  # noise-free but too short for SMOOTH: the longest windows integrate most accurately
            order, fraction = SHORT_QUIET
        elif self.window is None and self.period_fraction is None:  # the noise share sets the window
            level = noise_level(runs, times)
            share = noise_share(runs, times, level=level, spread=spread)
            order, fraction = MODERATE if share is not None and share <= MODERATE_NOISE else NOISY
        else:  # only the order is left to the data: 4, as in MODERATE and NOISY
            order, fraction = NOISY
        bound.order = order if self.order is None else self.order
        if self.window is not None:  # a given window: no period fraction is used
            bound.period_fraction = self.period_fraction
            return bound
        bound.period_fraction = fraction if self.period_fraction is None else self.period_fraction
        w = min(shortest // self.min_windows,
                int(round(bound.period_fraction * dominant_period(runs, times=times, noise=level))))
        w = max(2 * bound.order + 3, w)  # the smallest window of the order
        bound.window = int(w + 1 - w % 2)
        if quiet and not bound.low_noise:
            typical = ("; with the default order and fraction the quadrature error is typically 1e-5 to 1e-4 of "
                       "the derivatives" if (bound.order, bound.period_fraction) == SHORT_QUIET else "")
            warn_quality(f"the data look (nearly) noise-free, but a run of {shortest} samples is too short for the "
                         f"exact weak form ({need} samples: {self.min_windows} windows of {2 * SMOOTH[0] + 3}), so "
                         f"order-{bound.order} windows of {bound.window} samples are used{typical}; give longer "
                         f"runs for exact recovery")
        return bound

    def window_starts(self, x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, int]:
        """First sample of every window of a run, and the window length L."""
        T = len(t)
        L = self.window if self.window is not None else self.bind([x], [t]).window
        if T < L:
            raise ValueError(f"the weak form needs at least {L} samples per run for windows of {L} samples "
                             f"(order {self.order or NOISY[0]}); this run has {T}: give longer runs or a smaller "
                             f"window")
        stride = self.stride if self.stride is not None else max(1, L // 4)
        return np.arange(0, T - L + 1, stride), int(L)

    def window_weights(self, x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
        """Quadrature-weighted phi and phi' on every window.

        Returns ``(starts, L, P, dP)``: the first sample of each window, the
        window length and two (n_windows, L) arrays with ``P[w] @ f[s:s+L]``
        approximating the integral of phi f over window w (s = starts[w]).
        On an evenly spaced grid every window has the same weights (one row,
        broadcast: read-only)."""
        if self.window is None or self.order is None:  # unbound: the data choose (as ODEModel.fit binds first)
            return self.bind([x], [t]).window_weights(x, t)
        starts, L = self.window_starts(x, t)
        t = np.asarray(t, dtype=float)
        if is_uniform(t):
            P, dP = self._weights(t[:L])
            shape = (len(starts), L)
            return starts, L, np.broadcast_to(P, shape), np.broadcast_to(dP, shape)
        P = np.empty((len(starts), L))
        dP = np.empty((len(starts), L))
        for k, s in enumerate(starts):
            P[k], dP[k] = self._weights(t[s : s + L])
        return starts, L, P, dP

    def _weights(self, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """phi and phi' times the trapezoid weights at the window's times,
        normalised so the phi weights sum to 1."""
        a, b = tau[0], tau[-1]
        u = (tau - a) / (b - a)
        core = u * (1 - u)
        p = int(self.order or NOISY[0])
        phi = core**p
        dphi = p * core ** (p - 1) * (1 - 2 * u) / (b - a)
        w = np.zeros(len(tau))  # trapezoid weights
        h = np.diff(tau)
        w[:-1] += h / 2
        w[1:] += h / 2
        norm = np.sum(w * phi)
        return w * phi / norm, w * dphi / norm

    def test_functions(self, x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Quadrature-weighted phi and phi' of every window: two (n_windows, T) arrays.

        ``Phi @ f`` approximates the integral of phi f over the window (the
        dense form of :meth:`window_weights`)."""
        starts, L, P, dP = self.window_weights(x, t)
        Phi = np.zeros((len(starts), len(t)))
        dPhi = np.zeros((len(starts), len(t)))
        for k, s in enumerate(starts):
            Phi[k, s : s + L] = P[k]
            dPhi[k, s : s + L] = dP[k]
        return Phi, dPhi

    def rows(self, x: np.ndarray, t: np.ndarray, library: Library) -> tuple[np.ndarray, np.ndarray]:
        starts, L, P, dP = self.window_weights(x, t)
        return windowed(library.features(x), starts, P), -windowed(x, starts, dP)


def windowed(f: np.ndarray, starts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum_l weights[w, l] f[starts[w] + l]`` for every window w: (n_windows, columns).

    ``f`` is (T, columns); ``weights`` is (n_windows, L), one row per window
    or one row broadcast (evenly spaced samples), as from
    :meth:`WeakForm.window_weights`."""
    L = weights.shape[1]
    views = np.lib.stride_tricks.sliding_window_view(f, L, axis=0)[starts]  # (n_windows, columns, L)
    if weights.strides[0] == 0:  # the same weights on every window: one matrix product
        return views @ weights[0]
    return np.einsum("wcl,wl->wc", views, weights)


#: (order, period_fraction) of the default weak form on noisy data: short
#: windows of a low-order bump average the noise best (docs/fitting.md)
NOISY = (4, 0.25)
#: the same on moderately noisy data (noise at most ``MODERATE_NOISE`` of
#: every column's spread, :func:`noise_share`): windows twice as long, whose
#: smaller quadrature error matters more than the noise they average less.
#: Over the 79 polynomial dysts systems at 0.5-10 % noise (316 cases) half a
#: period's windows had a geometric-mean derivative error of 0.54-0.84x the
#: quarter period's where the noise was 1-7 % of every column's spread, 1.24x
#: at 7-10 % and 0.99-1.07x above (docs/fitting.md); fewer rows, so faster too
MODERATE = (4, 0.5)
#: the noise share (:func:`noise_share`) up to which ``MODERATE`` is used
MODERATE_NOISE = 5e-2
#: the same on noise-free runs too short for ``SMOOTH``: quadrature error is
#: all there is, so the longest windows the runs allow. On the 79 polynomial
#: dysts systems fitted on 250-400 clean samples (100 a period; 158 cases,
#: alternate halves at different lengths) a whole period's windows had a
#: geometric-mean derivative error of 0.25-0.75x half a period's (never worse
#: by more than 10 %) and 0.03-0.13x a quarter's; median errors 2e-5 to 1e-4
#: (docs/figures/fitting/weak_window_short.json)
SHORT_QUIET = (4, 1.0)
#: the same on noise-free data, where the trapezoid rule's error is all
#: there is: a bump of order 16 (15 vanishing derivatives at the window
#: ends, so the rule's error falls as the 16th power of the step) over
#: three quarters of the dominant period reaches rounding level on
#: polynomial systems sampled at 100 points a period (docs/fitting.md)
SMOOTH = (16, 0.75)
#: the low-noise setting is used when the white-noise level that the
#: highest useful differences admit is below this share of each column's
#: standard deviation. Its error grows about as 0.1 x that share, while the
#: noisy setting's stays near its quadrature floor (7e-4 median at 100
#: points a period); over 20 dysts systems (500 cases at 0.1-2 % noise) the
#: low-noise setting's error was a median 0.2-0.26x the other's below 0.8 %,
#: 0.57x at 0.8-1.6 %, 1.03x at 1.6-3.2 % and 1.43x above (docs/fitting.md)
LOW_NOISE = 1e-2
#: difference orders tried by :func:`smooth_noise_level`
DIFFERENCE_ORDERS = (4, 6, 8, 10, 12, 14, 16)


def smooth_noise_level(runs: list[np.ndarray], times: list[np.ndarray] | None = None) -> np.ndarray | None:
    """Upper bound on the white-noise level per column, (K,), from
    differences of increasing order; None on an uneven grid.

    White noise of standard deviation sigma gives n-th differences of
    variance C(2n, n) sigma^2 whatever n; a smooth signal sampled finely
    gives differences that shrink geometrically with n. So
    sqrt(mean((diff^n x)^2) / C(2n, n)) is about sigma for every n on noisy
    data and falls towards rounding on noise-free data: its smallest value
    over n in ``DIFFERENCE_ORDERS`` bounds the noise from above."""
    from math import comb

    if times is not None and not all(len(t) < 2 or is_uniform(np.asarray(t, dtype=float)) for t in times):
        return None
    best = None
    diffs, done = list(runs), 0  # each run's differences of order `done`, raised order by order
    for n in DIFFERENCE_ORDERS:
        diffs = [np.diff(d, n=n - done, axis=0) for d in diffs if len(d) > n - done]
        done = n
        pieces = [d for d in diffs if len(d) > 1]  # runs longer than n + 1 samples
        if not pieces:
            break
        level = np.sqrt(np.mean(np.vstack(pieces) ** 2, axis=0) / comb(2 * n, n))
        best = level if best is None else np.minimum(best, level)
    return best


#: a column whose spread is at most this share of its largest magnitude is
#: constant up to rounding (a conserved quantity, a parameter column)
ROUNDING_SPREAD = 1e-12


def column_spread(runs: list[np.ndarray]) -> np.ndarray:
    """Spread of each column within the runs, for the noise checks.

    Parameters
    ----------
    runs : list of (T_i, K) arrays
        Samples of the K signals in each run.

    Returns
    -------
    (K,) array
        The standard deviation about each run's own mean, pooled over the
        runs (every sample counts once), so offsets between runs do not
        count as variation. Pooled, the runs that vary most weigh most, as
        in :func:`dominant_period`: a run that has settled, whose samples
        are mostly noise, does not make the whole fit read as noisy (nor
        does its own noise share decide). 0 for a column whose spread is at
        most ``ROUNDING_SPREAD`` = 1e-12 times its largest magnitude
        (constant up to rounding, or varying by less than that share); NaN
        where the column holds NaN.

    Raises
    ------
    ValueError
        When the runs hold no sample.
    """
    runs = [np.asarray(r, dtype=float) for r in runs if len(r)]
    if not runs:
        raise ValueError("column_spread needs at least one sample in runs, got none")
    n = sum(len(r) for r in runs)
    spread = np.sqrt(sum(np.sum((r - r.mean(axis=0)) ** 2, axis=0) for r in runs) / n)
    scale = np.max([np.abs(r).max(axis=0) for r in runs], axis=0)
    return np.where(spread <= ROUNDING_SPREAD * scale, 0.0, spread)  # NaN stays NaN


def noise_share(runs: list[np.ndarray], times: list[np.ndarray] | None = None,
                level: np.ndarray | None = None, spread: np.ndarray | None = None) -> float | None:
    """The white-noise level as a share of the signals' spread.

    Parameters
    ----------
    runs : list of (T_i, K) arrays
        Samples of the K signals in each run.
    times : list of (T_i,) arrays, optional
        Sample times of each run (units of the data's time); needed only for
        the noise level's check of uniform spacing.
    level : (K,) array, optional
        The white-noise level per column (:func:`fitting.ode.weighted.noise_level`)
        when the caller has it; estimated here otherwise.
    spread : (K,) array, optional
        :func:`column_spread` of the runs when the caller has it.

    Returns
    -------
    float or None
        The largest ratio of noise level to spread over the columns that
        vary within the runs; None when no column varies.
    """
    runs = [np.asarray(r, dtype=float) for r in runs]
    spread = column_spread(runs) if spread is None else np.asarray(spread, dtype=float)
    live = spread > 0
    if not live.any():
        return None
    level = noise_level(runs, times) if level is None else np.asarray(level, dtype=float)
    return float(np.max(level[live] / spread[live]))


def is_low_noise(runs: list[np.ndarray], times: list[np.ndarray] | None = None,
                 spread: np.ndarray | None = None) -> bool:
    """Whether the runs read as (nearly) noise-free: :func:`smooth_noise_level` below
    ``LOW_NOISE`` times the spread (:func:`column_spread`, or ``spread`` (K,)
    when the caller has it) of every column that varies within the runs."""
    runs = [np.asarray(r, dtype=float) for r in runs]
    level = smooth_noise_level(runs, times)
    if level is None:
        return False
    spread = column_spread(runs) if spread is None else np.asarray(spread, dtype=float)
    live = spread > 0
    return bool(live.any() and np.all(level[live] <= LOW_NOISE * spread[live]))


def dominant_period(runs: list[np.ndarray], share: float = 0.9, times: list[np.ndarray] | None = None,
                    noise: np.ndarray | None = None) -> float:
    """Period, in samples, below which the runs' variation has ``share`` of its power.

    Columns are centred and scaled with the mean and standard deviation
    pooled over all runs (columns that do not vary within the runs,
    :func:`column_spread`, left out); each run is tapered (Hann) and its spectrum summed
    over columns; the expected power of white measurement noise (its level
    estimated by :func:`fitting.ode.weighted.noise_level`) is subtracted from
    every frequency, so noise does not pull the period down; the run's
    period is 1 / f where f is the lowest frequency (cycles per sample)
    whose cumulative non-constant power reaches ``share``. The result is the
    power-weighted median over runs, so a run that has settled (little
    variation, spectrum mostly noise) has little say. Without any variation
    the longest run's length is returned. ``noise`` (K,): the noise level
    per column when the caller has it (else estimated here).

    A run with unevenly spaced ``times`` is first interpolated (linearly)
    onto as many evenly spaced times over the same span: read sample by
    sample, uneven spacing would turn a smooth signal's slope into
    high-frequency power and shorten the period. The noise level is
    estimated on the run's own times and used unscaled: interpolation
    averages neighbouring samples, which lowers the noise's variance at high
    frequencies but not at low ones, where the signal is.
    """
    allx = np.vstack(runs)
    mean, sd = allx.mean(axis=0), allx.std(axis=0)
    live = column_spread(runs) > 0  # varying within the runs, beyond rounding
    level = noise_level(runs, times) if noise is None else np.asarray(noise, dtype=float)
    noise_var = float(np.sum((level[live] / sd[live]) ** 2)) if live.any() else 0.0
    # the noise power at one frequency is a sum of one exponential per live
    # column; read as gamma(n_live), which is exact when the columns carry
    # equal noise shares and too light-tailed when one column carries most
    # (then a few noise-only frequencies pass the cut; measured below)
    shape = float(max(int(live.sum()), 1))
    longest = float(max(len(r) for r in runs))
    if not live.any():
        return longest
    periods, weights = [], []
    for i, x in enumerate(runs):
        T = x.shape[0]
        if T < 4:
            continue
        if times is not None and not is_uniform(np.asarray(times[i], dtype=float)):
            x = _even_resample(x, np.asarray(times[i], dtype=float))
        z = (x[:, live] - mean[live]) / sd[live]
        taper = np.hanning(T)
        z = (z - z.mean(axis=0)) * taper[:, None]
        power = np.sum(np.abs(np.fft.rfft(z, axis=0)) ** 2, axis=1)[1:]
        # minus the noise's expected power, counting only frequencies whose
        # power is beyond what noise alone reaches at any of them (a sum of
        # exponentials: gamma quantile at 1 - 0.1 / bins). Subtracting
        # the mean everywhere would leave the noise's scatter, a random walk
        # in the cumulative sum that can move the share far out.
        level = noise_var * float(np.sum(taper**2))
        if level > 0:
            cut = level * float(special.gammaincinv(shape, 1 - 0.1 / len(power))) / shape  # stats.gamma.ppf
            power = np.where(power > cut, power - level, 0.0)
        cum = np.cumsum(power)
        total = float(cum[-1])
        if total <= 0:
            continue
        k = int(np.argmax(cum >= share * total)) + 1
        periods.append(T / k)
        weights.append(total / T)
    if not periods:
        return longest
    order = np.argsort(periods)
    cum = np.cumsum(np.asarray(weights)[order])
    return float(np.asarray(periods)[order][int(np.searchsorted(cum, cum[-1] / 2))])


def _even_resample(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``x`` linearly interpolated at len(t) evenly spaced times over [t0, t_end]."""
    T = len(t)
    grid = np.linspace(t[0], t[-1], T)
    idx = np.clip(np.searchsorted(t, grid, side="right") - 1, 0, T - 2)
    gap = t[idx + 1] - t[idx]
    u = np.clip(np.divide(grid - t[idx], gap, out=np.zeros(T), where=gap > 0), 0.0, 1.0)
    return (1 - u)[:, None] * x[idx] + u[:, None] * x[idx + 1]
