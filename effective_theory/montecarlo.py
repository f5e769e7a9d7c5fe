"""Monte Carlo over random training sets: how often the training set fixes
the linear structure (n0 = 2), and the grokking rate l3 against the training
fraction (docs/effective_theory.md).

Each Monte Carlo sample is a uniformly random order of the p(p+1)/2 addition
pairs; the training set of size s is its first s pairs, so every size sees a
uniformly random subset and one pass adds pairs one by one, updating an exact
echelon basis mod a prime (exact for p <= 23, see
:mod:`effective_theory.linalg`). Sizes are therefore correlated within a
sample, not across samples; confidence intervals are per size, and the
critical fraction's uncertainty comes from a bootstrap over samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange
from scipy.stats import norm

from particles.datasets import addition, make_rng
from particles.core.validation import check_array, check_float, check_int

from .linalg import PRIMES, reduce_into_basis, grokking_rate

__all__ = ["StructureProbability", "unique_structure_probability", "wilson_interval", "mean_interval", "GrokkingRateCurve",
           "grokking_rate_curve"]

#: exact with one prime below 2^31: (sqrt 6)^p < 2^31 for addition rows
MAX_EXACT_P = 23


@njit(cache=True, parallel=True)
def _nullity_prefixes(orders, pairs, labels, p, n_labels, q):
    """n0 of every prefix of every order: out[s, k] = n0 of the first k + 1 pairs."""
    n_samples, n = orders.shape
    out = np.empty((n_samples, n), dtype=np.int64)
    for s in prange(n_samples):
        basis = np.zeros((p, p), dtype=np.int64)
        pivots = np.zeros(p, dtype=np.int64)
        row = np.empty(p, dtype=np.int64)
        first = np.full(n_labels, -1, dtype=np.int64)
        rank = 0
        for k in range(n):
            u = orders[s, k]
            lab = labels[u]
            t = first[lab]
            if t < 0:
                first[lab] = u
            elif rank < p:
                # parallelograms within a class span the rows e(u) - e(first)
                for c in range(p):
                    row[c] = 0
                row[pairs[u, 0]] += 1
                row[pairs[u, 1]] += 1
                row[pairs[t, 0]] -= 1
                row[pairs[t, 1]] -= 1
                for c in range(p):
                    row[c] = row[c] % q
                rank = reduce_into_basis(row, basis, pivots, rank, q)
            out[s, k] = p - rank
    return out

#: most random training sets per size in unique_structure_probability (memory: 8 * samples * p (p + 1) / 2 bytes)
MAX_SAMPLES = 1_000_000
#: most bootstrap resamples of the critical fraction
MAX_BOOTSTRAP = 100_000
#: most random training sets per fraction in grokking_rate_curve (one eigenvalue problem each)
MAX_RATE_SAMPLES = 100_000


def mean_interval(values, confidence: float = 0.95) -> dict:
    """Mean and t interval of the finite numbers among ``values`` (None and
    NaN left out): ``{"mean", "ci": [low, high], "n"}``; with fewer than two
    values the interval is ``[None, None]``."""
    from scipy.stats import t as student

    confidence = check_float(confidence, "confidence", 0.0, 1.0, strict=True)
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size < 2:
        return {"mean": float(v.mean()) if v.size else None, "ci": [None, None], "n": int(v.size)}
    half = float(student.ppf(0.5 + confidence / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return {"mean": float(v.mean()), "ci": [float(v.mean() - half), float(v.mean() + half)], "n": int(v.size)}


def wilson_interval(successes: np.ndarray, n: int, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion: ``successes`` (ints in
    [0, n]) out of ``n`` >= 1 trials, at ``confidence`` in (0, 1)."""
    n = check_int(n, "n", 1)
    confidence = check_float(confidence, "confidence", 0.0, 1.0, strict=True)
    successes = check_array(successes, "successes", dtype="int", low=0, high=n)
    z = norm.ppf(0.5 + confidence / 2)
    phat = np.asarray(successes, dtype=float) / n
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # the interval contains phat; min/max only undo rounding at phat = 0 or 1
    return np.minimum(np.clip(centre - half, 0, 1), phat), np.maximum(np.clip(centre + half, 0, 1), phat)


def _crossing(fractions: np.ndarray, prob: np.ndarray, level: float = 0.5) -> float:
    above = np.flatnonzero(prob >= level)
    if above.size == 0:
        return math.nan
    i = above[0]
    if i == 0:
        return float(fractions[0])
    f0, f1, p0, p1 = fractions[i - 1], fractions[i], prob[i - 1], prob[i]
    return float(f0 + (level - p0) * (f1 - f0) / (p1 - p0))


@dataclass(frozen=True)
class StructureProbability:
    """P(n0 = 2) against training-set size.

    Attributes
    ----------
    p : int
    sizes : ndarray (S,)
        Training-set sizes.
    fractions : ndarray (S,)
        sizes / (p (p + 1) / 2).
    probability : ndarray (S,)
        Share of samples with n0 = 2.
    low, high : ndarray (S,)
        95 % Wilson intervals.
    samples : int
    critical_fraction : float or None
        Where the probability first crosses 1/2 (linear interpolation); None
        when it stays below 1/2 over the given sizes.
    critical_fraction_interval : (float, float) or None
        95 % bootstrap interval of the critical fraction; None with
        ``bootstrap=0`` or when no resample crosses 1/2.
    critical_fraction_std : float or None
        Bootstrap standard deviation; None when the interval is.
    """

    p: int
    sizes: np.ndarray
    fractions: np.ndarray
    probability: np.ndarray
    low: np.ndarray
    high: np.ndarray
    samples: int
    critical_fraction: float | None
    critical_fraction_interval: tuple[float, float] | None
    critical_fraction_std: float | None


def unique_structure_probability(p: int, sizes: np.ndarray | None = None, samples: int = 10_000,
                                 seed: int | np.random.Generator | None = 0,
                                 bootstrap: int = 200, callback=None) -> StructureProbability:
    """Monte Carlo P(n0 = 2) for addition over random training sets.

    Parameters
    ----------
    p : int in [3, 23]
        Tokens (exactness of the rank needs p <= 23).
    sizes : array of int, optional
        Training-set sizes in [1, p(p+1)/2]; default all of them.
    samples : int in [1, MAX_SAMPLES]
        Random training sets per size (the random orders take
        8 * samples * p (p + 1) / 2 bytes: 2.2 GB at the limit for p = 23).
    seed : int or Generator
    bootstrap : int in [0, MAX_BOOTSTRAP]
        Resamples for the critical fraction's uncertainty (0: no interval,
        ``critical_fraction_interval`` is None).
    callback : callable(done, total), optional
        Progress over the random training sets (about 50 calls); the result
        does not depend on it.
    """
    p = check_int(p, "p", 3, MAX_EXACT_P)
    samples = check_int(samples, "samples", 1, MAX_SAMPLES)
    bootstrap = check_int(bootstrap, "bootstrap", 0, MAX_BOOTSTRAP)
    data = addition(int(p))
    n = len(data)
    if sizes is None:
        sizes = np.arange(1, n + 1)
    else:
        sizes = np.unique(check_array(sizes, "sizes", dtype="int", ndim=(0, 1), min_size=1, low=1, high=n))
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    rng = make_rng(seed)
    n_classes = int(data.labels.max()) + 1
    # random orders drawn chunk by chunk (the same stream as one draw, so the
    # result does not depend on the chunks), so progress starts at once and
    # the orders of one chunk are in memory at a time
    chunk = max(1, math.ceil(samples / 50))
    parts = []
    if callback is not None:
        callback(0, samples)
    for start in range(0, samples, chunk):
        rows = min(chunk, samples - start)
        orders = np.argsort(rng.random((rows, n)), axis=1).astype(np.int64)
        parts.append(_nullity_prefixes(orders, data.pairs, data.labels, int(p), n_classes, PRIMES[0]))
        if callback is not None:
            callback(start + rows, samples)
    n0 = np.concatenate(parts, axis=0)
    unique = n0[:, sizes - 1] == 2  # (samples, S)
    count = unique.sum(axis=0)
    fractions = sizes / n
    prob = count / samples
    low, high = wilson_interval(count, samples)
    crit = _crossing(fractions, prob)
    boot = []
    hits = unique.astype(np.float64)
    for _ in range(bootstrap):
        pick = rng.integers(0, samples, samples)
        # the resample's share per size: counts of each drawn row times its
        # hits (integer sums, exact in float64: the same as unique[pick].mean)
        boot.append(_crossing(fractions, (np.bincount(pick, minlength=samples) @ hits) / samples))
    boot = np.array(boot)
    boot = boot[np.isfinite(boot)]
    interval = (float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))) if boot.size else None
    std = float(boot.std()) if boot.size else None
    crit = crit if math.isfinite(crit) else None
    return StructureProbability(p=int(p), sizes=sizes, fractions=fractions, probability=prob, low=low, high=high,
                                samples=int(samples), critical_fraction=crit, critical_fraction_interval=interval,
                                critical_fraction_std=std)


@dataclass(frozen=True)
class GrokkingRateCurve:
    """l3 (eigenvalue of H0) over random training sets of each fraction.

    ``rates`` is (F, samples); 0 where the structure is not unique.
    """

    p: int
    fractions: np.ndarray
    rates: np.ndarray

    @property
    def mean(self) -> np.ndarray:
        return self.rates.mean(axis=1)

    @property
    def unique_share(self) -> np.ndarray:
        return (self.rates > 0).mean(axis=1)

    def quantiles(self, q: float) -> np.ndarray:
        """The q-quantile of the rates at each fraction, q in [0, 1]."""
        q = check_float(q, "q", 0.0, 1.0)
        return np.quantile(self.rates, q, axis=1)


def grokking_rate_curve(p: int, fractions: np.ndarray, samples: int = 100,
                        seed: int | np.random.Generator | None = 0, callback=None) -> GrokkingRateCurve:
    """l3 of random addition training sets of each fraction (0 when n0 > 2).

    ``callback(done, total)`` reports progress after each fraction.
    """
    p = check_int(p, "p", 3)
    fractions = check_array(fractions, "fractions", ndim=1, min_size=1, high=1.0)
    if np.any(fractions <= 0):
        raise ValueError(f"fractions must lie in (0, 1], got a minimum of {fractions.min()!r}")
    samples = check_int(samples, "samples", 1, MAX_RATE_SAMPLES)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    rng = make_rng(seed)
    data = addition(int(p))
    rates = np.zeros((fractions.size, samples))
    for i, f in enumerate(fractions):
        for s in range(samples):
            train, _ = data.split(float(f), rng)
            rates[i, s] = grokking_rate(train)
        if callback is not None:
            callback((i + 1) * samples, fractions.size * samples)
    return GrokkingRateCurve(p=int(p), fractions=fractions, rates=rates)
