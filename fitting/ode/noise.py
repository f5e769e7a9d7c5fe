"""How noisy the samples are and on what time scale they vary: the
estimates that the weak form's settings, the covariance-weighted refit, the
flow map's horizon and the relations' check share.

``noise_level`` reads white measurement noise from fourth differences (or,
on an uneven grid, from the residual of local cubics); ``smooth_noise_level``
bounds it from differences of increasing order; ``noise_share`` and
``is_low_noise`` compare it with each column's spread (``column_spread``);
``dominant_period`` is the period below which the variation has most of its
power, net of the noise.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .derivatives import is_uniform

__all__ = ["noise_level", "smooth_noise_level", "column_spread", "noise_share", "is_low_noise", "dominant_period",
           "LOW_NOISE", "ROUNDING_SPREAD", "DIFFERENCE_ORDERS"]


def noise_level(runs: list[np.ndarray], times: list[np.ndarray] | None = None) -> np.ndarray:
    """Per-column standard deviation of white measurement noise, shape (K,).

    On evenly spaced samples (or without ``times``): sqrt(mean of squared
    fourth differences / 70), pooled over runs. On an uneven grid every five
    consecutive samples are combined with the unit vector orthogonal to cubic
    polynomials in their own times (the same weights, [1, -4, 6, -4, 1] /
    sqrt(70), on an even grid), so a smooth signal contributes only its
    fifth-order remainder and white noise its variance. Runs with fewer than
    5 samples are skipped; zeros if none has 5."""
    pieces = []
    for i, r in enumerate(runs):
        if len(r) < 5:
            continue
        t = None if times is None else np.asarray(times[i], dtype=float)
        if t is None or is_uniform(t):
            pieces.append(np.diff(r, n=4, axis=0) / np.sqrt(70.0))
            continue
        pieces.append(_fourth_order_residuals(r, t))
    if not pieces:
        return np.zeros(runs[0].shape[1])
    return np.sqrt(np.mean(np.vstack(pieces) ** 2, axis=0))


def _fourth_order_residuals(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """c_i . x[i:i+5] for every window of 5 samples, c_i the unit vector
    orthogonal to 1, tau, tau^2, tau^3 at the window's times: (T - 4, K)."""
    tw = np.lib.stride_tricks.sliding_window_view(t, 5)  # (N, 5)
    span = tw[:, -1:] - tw[:, :1]  # each window on its own span: the null space is unchanged, the SVD well scaled
    tau = (tw - tw[:, 2:3]) / np.where(span > 0, span, 1.0)
    V = tau[:, :, None] ** np.arange(4)  # (N, 5, 4)
    U = np.linalg.svd(V, full_matrices=True)[0]
    c = U[:, :, 4]  # the left singular vector outside V's column space
    xw = np.lib.stride_tricks.sliding_window_view(x, 5, axis=0)  # (N, K, 5)
    return np.einsum("nj,nkj->nk", c, xw)


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
        The white-noise level per column (:func:`fitting.ode.noise.noise_level`)
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
    estimated by :func:`fitting.ode.noise.noise_level`) is subtracted from
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
