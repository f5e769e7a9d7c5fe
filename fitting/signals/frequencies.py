"""Which Fourier frequencies to look at: the key frequencies of a run and the
one default selection that ``embdyn fit``, ``LinearODE().fit(trajectory)``,
the explorer and the fit figures share (docs/fitting.md, key frequencies).

Two rules:

- the **survival paper's rule** (:func:`fitting.surviving_frequencies`): a
  frequency survives when its final signal exceeds twice the mean over all p
  bins. It was made for networks that keep a few circles out of many; in a
  network that learns with many frequencies at once (a grokked MLP at d = 64
  keeps eight or more) the mean is lifted by the strong frequencies
  themselves and nothing survives.
- the **key-frequency rule** (:func:`key_frequencies`): sort the final
  signals in decreasing order and cut at the largest drop (the largest ratio
  between consecutive signals) among the cuts that leave a bulk below
  (at least 3 frequencies and a quarter of them) and put everything above
  at least ``ratio`` times the bulk's median, where ``ratio`` is the larger
  of 2 (the paper's factor) and the chance level: the ratio that the
  largest of K frequencies of a structureless embedding (i.i.d. Gaussian,
  d dimensions) exceeds over their median with probability 1 %. It is
  scale-free (signals multiplied by a constant give the same answer) and
  finds the many frequencies of a grokked network as well as the few
  survivors of the survival paper's runs (docs/fitting.md, key
  frequencies, with the runs it was checked on and its misses).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from particles.core.validation import check_array, check_choice, check_float, check_int
from particles.trajectory import Trajectory

from .fourier import DC_SCALAR, surviving_frequencies, trajectory_signals

__all__ = ["key_frequencies", "select_frequencies", "FrequencySelection", "KEY_RATIO", "KEY_NULL_LEVEL",
           "FREQUENCY_RULES", "parse_frequencies", "chance_ratio"]

#: everything above the cut is at least this many times the bulk's median (the paper's factor 2) ...
KEY_RATIO = 2.0
#: ... or the chance level: the ratio a structureless embedding's largest frequency exceeds with this probability
KEY_NULL_LEVEL = 0.01
#: the rules :func:`select_frequencies` knows
FREQUENCY_RULES = ("auto", "survivors", "key", "all")


def _final_row(x: Any, step: Any, steps: Any, name: str) -> tuple[np.ndarray, int | None]:
    """The signal row at the end (or at the last recorded step <= ``step``) and that step."""
    if isinstance(x, Trajectory):
        steps, signals = trajectory_signals(x)
    else:
        signals = check_array(x, name, ndim=(1, 2))
        if signals.ndim == 1:
            if signals.shape[0] == 0:
                raise ValueError(f"{name} must hold at least one frequency, got an empty array")
            if step is not None:
                raise ValueError("step needs signals over time (a (T, K) array with steps=, or a Trajectory)")
            if not np.all(np.isfinite(signals)):
                raise ValueError(f"{name} must be finite")
            return signals, None
        if steps is None:
            steps = np.arange(signals.shape[0])
        steps = check_array(steps, "steps", dtype="int", ndim=1, shape=(signals.shape[0],))
    if signals.shape[0] == 0 or signals.shape[1] == 0:
        raise ValueError(f"{name} must hold at least one step and one frequency, got shape {signals.shape}")
    if step is None:
        row = len(steps) - 1
    else:
        step = check_int(step, "step", int(steps[0]), int(steps[-1]))
        row = int(np.searchsorted(steps, step, side="right") - 1)
    final = np.asarray(signals[row], dtype=float)
    if not np.all(np.isfinite(final)):
        raise ValueError(f"{name} must be finite at step {int(steps[row])}")
    return final, int(steps[row])


def key_frequencies(x: Any, *, step: int | None = None, steps: Any = None, d: int | None = None,
                    power: int = 1, ratio: float = KEY_RATIO, output: str = "frequencies") -> np.ndarray:
    """The frequencies that stand out of the spectrum's bulk.

    The rule (scale-free; docs/fitting.md, key frequencies):

    1. sort the K signals ``S_k`` (norms ``|F_k|``) in decreasing order;
    2. a cut after the m strongest is admissible when it leaves a bulk of
       at least ``max(3, ceil(K / 4))`` frequencies below and the weakest
       above it is at least ``r`` times the bulk's median, with
       ``r = max(ratio, chance level)``; the chance level is the ratio the
       largest of K norms of a structureless embedding (i.i.d. Gaussian in
       ``d`` dimensions, ``|F_k|^2 ~ chi^2_2d``) exceeds over their median
       with probability 1 % (:func:`chance_ratio`; for K = 20 about 1.2 at
       d = 64, 2.7 at d = 2, so the floor 2 decides from d = 8 up);
    3. the key frequencies are those above the admissible cut with the
       largest drop ``S_(m) / S_(m+1)``; none when no cut is admissible.

    Parameters
    ----------
    x : Trajectory, or ndarray of shape (K,) or (T, K)
        A run (its stored signals, else those of its snapshots) or signals
        of k = 1..K (column j is k = j + 1); a (T, K) array uses its last
        row unless ``step`` is given.
    step : int, optional
        Use the signals at the last recorded step at or before this one
        (default: the end of the run).
    steps : ndarray of int, shape (T,), optional
        The steps of a (T, K) array's rows (default 0..T-1).
    d : int, optional
        Embedding dimension, for the chance level (a Trajectory gives its
        own; without it arrays use ``ratio`` alone).
    power : {1, 2}
        What an array holds: ``|F_k|`` (1) or ``|F_k|^2`` (2); the rule
        works on norms. A Trajectory's signals are read as norms.
    ratio : float > 1
        The least ratio of every key frequency to the bulk's median.
    output : {"frequencies", "mask"}
        The key k in increasing order, or a boolean mask over the K columns.

    Returns
    -------
    ndarray of int (the key frequencies k) or of bool, shape (K,)

    Examples
    --------
    >>> S = np.array([30., 8, 9, 35, 7, 10, 6, 9, 32, 8])
    >>> key_frequencies(S)
    array([1, 4, 9])
    """
    ratio = check_float(ratio, "ratio", 1.0, strict=True)
    output = check_choice(output, "output", ("frequencies", "mask"))
    if power not in (1, 2) or isinstance(power, bool):
        raise ValueError(f"power must be 1 (|F_k|) or 2 (|F_k|^2), got {power!r}")
    if isinstance(x, Trajectory):
        d = x.d
    elif d is not None:
        d = check_int(d, "d", 1)
    final, _ = _final_row(x, step, steps, "x")
    if not isinstance(x, Trajectory) and power == 2:
        final = np.sqrt(np.maximum(final, 0.0))
    if np.any(final < 0):
        raise ValueError("x must hold signals >= 0 (norms |F_k|)")
    mask = key_mask(final, ratio, d)
    return mask if output == "mask" else np.flatnonzero(mask) + 1


@functools.lru_cache(maxsize=256)
def chance_ratio(K: int, d: int, level: float = KEY_NULL_LEVEL) -> float:
    """The chance level of the key-frequency rule: the ratio ``S_(m) /
    median(S_(m+1..K))`` (maximised over the admissible cuts m) that K norms
    ``|F_k|`` of a structureless embedding (i.i.d. Gaussian in d dimensions:
    ``|F_k|^2 ~ chi^2`` with 2d degrees of freedom, independent) exceed with
    probability ``level``. Measured on 4000 seeded draws (the same value on
    every call); for K > 200 the Bonferroni bound on the largest over the
    median of all K is used instead."""
    K, d = int(K), int(d)
    bulk_min = max(3, -(-K // 4))
    if K - bulk_min < 1:
        return 1.0
    if K > 200:
        from scipy.stats import chi2

        dof = 2 * d
        return float(np.sqrt(chi2.isf(level / K, dof) / chi2.median(dof)))
    rng = np.random.default_rng(20261127)
    s = -np.sort(-np.sqrt(rng.chisquare(2 * d, size=(4000, K))), axis=1)
    stat = np.max(np.stack([s[:, m - 1] / np.median(s[:, m:], axis=1) for m in range(1, K - bulk_min + 1)]), axis=0)
    return float(np.quantile(stat, 1.0 - level))


def key_mask(final: np.ndarray, ratio: float = KEY_RATIO, d: int | None = None) -> np.ndarray:
    """The key-frequency rule on one spectrum of norms (K,) (checked by the caller)."""
    K = final.shape[0]
    mask = np.zeros(K, dtype=bool)
    bulk_min = max(3, -(-K // 4))
    if K - bulk_min < 1:
        return mask
    need = max(ratio, chance_ratio(K, d)) if d is not None else ratio
    order = np.argsort(final, kind="stable")[::-1]
    s = final[order]
    best, cut = -np.inf, 0
    for m in range(1, K - bulk_min + 1):
        bulk = float(np.median(s[m:]))
        if s[m - 1] <= 0 or s[m - 1] < need * bulk:
            continue
        drop = np.inf if s[m] <= 0 else float(np.log(s[m - 1] / s[m]))
        if drop > best and drop > 0:  # never a cut between equal signals
            best, cut = drop, m
    mask[order[:cut]] = True
    return mask


def parse_frequencies(value: Any, K: int, name: str = "frequencies") -> str | list[int]:
    """A rule name of :data:`FREQUENCY_RULES`, or frequencies k in 1..K given as a
    list of ints or as text ``"K1,K2,..."``; errors name ``name`` and the range."""
    if isinstance(value, str):
        text = value.strip()
        if text in FREQUENCY_RULES:
            return text
        try:
            value = [int(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise ValueError(f"{name} must be one of {', '.join(FREQUENCY_RULES)} or a comma-separated list of "
                             f"frequencies in 1..{K}, got {text!r}") from None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (list, tuple, np.ndarray)):
        raise TypeError(f"{name} must be a rule name or a list of frequencies, got {type(value).__name__}")
    ks = []
    for v in value:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must hold integer frequencies, got {v!r}")
        if not 1 <= int(v) <= K:
            raise ValueError(f"{name}: frequency {int(v)} is outside 1..{K} (K = (p - 1) // 2 for this run)")
        ks.append(int(v))
    if not ks:
        raise ValueError(f"{name} must name at least one frequency in 1..{K}")
    if len(set(ks)) != len(ks):
        raise ValueError(f"{name} names a frequency twice: {ks}")
    return sorted(ks)


@dataclass(frozen=True)
class FrequencySelection:
    """Which signal columns a fit uses and why.

    Attributes
    ----------
    frequencies : list of int
        The frequencies k (1..K), increasing.
    rule : str
        ``"survivors"`` (the survival paper's rule), ``"key"``, ``"given"``
        or ``"all"``.
    requested : str
        What was asked for (``"auto"``, a rule, or ``"given"``).
    message : str
        One line saying which rule chose what (printed by ``embdyn fit``,
        shown by the explorer).
    survivors, key : list of int
        What each rule found (``survivors`` is None when it could not be
        applied: signal arrays without the DC signal).
    """

    frequencies: list[int]
    rule: str
    requested: str
    message: str
    survivors: list[int] | None = None
    key: list[int] = field(default_factory=list)

    @property
    def columns(self) -> np.ndarray:
        """Column indices (k - 1) into a (T, K) signal array."""
        return np.asarray(self.frequencies, dtype=np.int64) - 1

    @property
    def names(self) -> list[str]:
        """``S<k>`` of each selected frequency, the fits' variable names."""
        return [f"S{k}" for k in self.frequencies]


def select_frequencies(x: Any, frequencies: Any = "auto", *, factor: float = 2.0, ratio: float = KEY_RATIO,
                       dc: Any = None, power: int = 1, name: str = "frequencies") -> FrequencySelection:
    """The frequencies a fit of ``x`` uses: the one default every surface shares.

    Parameters
    ----------
    x : Trajectory or ndarray of shape (T, K)
        A run, or its signals (then ``dc`` for the survivors rule).
    frequencies : {"auto", "survivors", "key", "all"} or list of int
        ``"auto"`` (default): the survivors of the survival paper's rule when
        there are any, else the key frequencies (:func:`key_frequencies`),
        else all. ``"survivors"``/``"key"`` use that rule alone (an error if
        it finds nothing); ``"all"`` every frequency; a list (or text
        ``"2,5,7"``) exactly those k in 1..K.
    factor : float > 0
        The survival rule's factor (2 in the paper).
    ratio : float > 1
        The key-frequency rule's least ratio to the bulk (see
        :func:`key_frequencies`).
    dc : float or ndarray, optional
        The DC signal for the survival rule on arrays (a Trajectory gives
        its own). Without it, arrays skip the survival rule.
    power : {1, 2}
        What an array holds, ``|F_k|`` or ``|F_k|^2`` (both rules are read on
        the norms); a Trajectory's signals are read as norms.
    name : str
        The parameter's name in error messages (``--frequencies`` on the
        command line).

    Returns
    -------
    FrequencySelection
        What was chosen and why; ``survivors`` and ``key`` hold what each
        rule found, whatever was asked for.
    """
    factor = check_float(factor, "factor", 0.0, strict=True)
    ratio = check_float(ratio, "ratio", 1.0, strict=True)
    if power not in (1, 2) or isinstance(power, bool):
        raise ValueError(f"power must be 1 (|F_k|) or 2 (|F_k|^2), got {power!r}")
    if isinstance(x, Trajectory):
        steps, signals = trajectory_signals(x)
    else:
        signals = check_array(x, "x", ndim=2)
        if signals.shape[0] == 0 or signals.shape[1] == 0:
            raise ValueError(f"x must hold at least one step and one frequency, got shape {signals.shape}")
        if power == 2:
            signals = np.sqrt(np.maximum(signals, 0.0))
    K = int(signals.shape[1])
    requested = parse_frequencies(frequencies, K, name)
    final = np.asarray(signals[-1], dtype=float)
    if not np.all(np.isfinite(final)):
        raise ValueError("the signals must be finite at the run's end")
    key = [int(k) for k in key_frequencies(x if isinstance(x, Trajectory) else final, ratio=ratio)]
    survivors: list[int] | None
    if isinstance(x, Trajectory):
        if DC_SCALAR in x.scalars:
            mask = surviving_frequencies(signals, factor, dc=x.scalars[DC_SCALAR])
        else:
            mask = surviving_frequencies(x, factor)
        survivors = [int(k) for k in np.flatnonzero(mask) + 1]
    elif dc is not None:
        dc_norm = np.sqrt(np.maximum(np.asarray(dc, dtype=float), 0.0)) if power == 2 else dc
        survivors = [int(k) for k in np.flatnonzero(surviving_frequencies(signals, factor, dc=dc_norm)) + 1]
    else:
        survivors = None
    if not isinstance(requested, str):
        return FrequencySelection(requested, "given", "given", f"frequencies: {requested} (given)", survivors, key)
    paper = f"the survival paper's rule (final signal > {factor:g} x the mean of all bins)"
    keyrule = "the key-frequency rule (standing out of the bulk; fitting.key_frequencies)"
    everything = list(range(1, K + 1))
    if requested == "all":
        return FrequencySelection(everything, "all", "all", f"frequencies: all {K} (asked for all)", survivors, key)
    if requested == "survivors":
        if survivors is None:
            raise ValueError(f"{name}='survivors' needs the DC signal with a signal array (dc=...)")
        if not survivors:
            raise ValueError(f"{name} survivors: no frequency survives by {paper}; try key or auto")
        return FrequencySelection(survivors, "survivors", "survivors", f"frequencies: {survivors}, the survivors by "
                                  f"{paper}", survivors, key)
    if requested == "key":
        if not key:
            raise ValueError(f"{name} key: no frequency stands out by {keyrule}; try all or name them")
        return FrequencySelection(key, "key", "key", f"frequencies: {key}, the key frequencies by {keyrule}",
                                  survivors, key)
    if survivors:
        more = sorted(set(key) - set(survivors))
        extra = (f" (the key-frequency rule also names {more}: --frequencies key, or frequencies='key', fits all "
                 f"{len(key)})" if more else "")
        return FrequencySelection(survivors, "survivors", "auto", f"frequencies: {survivors}, the survivors by "
                                  f"{paper}{extra}", survivors, key)
    lead = ("no frequency survives by the survival paper's rule" if survivors is not None
            else "the survival rule needs the DC signal (not given)")
    if key:
        return FrequencySelection(key, "key", "auto", f"frequencies: {key}; {lead}, so the key frequencies by "
                                  f"{keyrule}", survivors, key)
    return FrequencySelection(everything, "all", "auto", f"frequencies: all {K}; {lead} and none stands out by "
                              f"{keyrule}", survivors, key)
