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

from .derivatives import is_uniform
from particles.core.validation import check_float, check_int
from .differentiation import Formulation
from .library import Library
from .quality import warn_quality
from .noise import column_spread, dominant_period, is_low_noise, noise_level, noise_share

__all__ = ["WeakForm", "WEIGHTINGS", "windowed", "NOISY", "MODERATE", "SMOOTH", "SHORT_QUIET", "MODERATE_NOISE"]

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
    kind = "weak"
    estimates_derivatives = False

    @property
    def covariance_refit(self) -> bool:
        return self.weighting == "covariance"

    def description(self) -> str:
        return "weak form (integrals against test functions; no derivatives)"

    def samples_text(self) -> str:
        return "the weak form's windows"

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
