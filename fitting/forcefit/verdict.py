"""What a force fit lets its user conclude, each decided in one place and
used by :meth:`ForceLawFit.summary`, ``force_fit.json`` and ``embdyn
force-fit`` alike:

- :func:`verdict`: the law's R^2 against its null (the same law on
  relabelled tokens) as "above chance", "at chance" or "below chance".
  Above chance needs an effect, not just a difference: R^2 above the null's
  upper 95 % bound (its 97.5 percentile) by at least :func:`chance_margin`,
  max(:data:`MARGIN_ABSOLUTE`, :data:`MARGIN_RELATIVE` x |the null's mean
  R^2|); below chance, R^2 below the null's lower bound by as much;
  anything between is at chance.
- :func:`range_identification`: whether each fitted range is identified.
  A range that ends at (within 1e-3, relative, of) a bound of its search
  box is not: the best value may lie outside the box, and the value found
  says nothing but "the box ends here". Nor is a range whose terms all
  have strength 0 (it moves nothing).
- :func:`verdict_sentence`: the verdict in one sentence.

Why this margin. R^2 is a share of the force's variance, so the margin is
free of the force's units. 0.01 absolute: a law that explains less than 1 %
of the force more than it does on relabelled tokens gives nothing to act
on, and the null's percentiles come from few relabellings (10 by default:
its 2.5-97.5 % interval is then about its smallest to its largest value)
so its upper bound is itself uncertain by about that much. 5 % of the
null's level: where chance alone explains much of the force (nulls of
0.1-0.7 were measured on networks, docs/force_fit.md) the fitted R^2 moves
by several hundredths between nearby optima of the range search and
between seeds, so a law has to beat chance by a twentieth of chance's own
level there.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["MARGIN_ABSOLUTE", "MARGIN_RELATIVE", "BOUND_TOLERANCE", "VERDICTS", "chance_margin", "verdict",
           "against_null", "verdict_sentence", "shares_sentence", "range_identification", "law_label", "target_label",
           "r2_text"]

#: the smallest margin by which R^2 must clear the null's 95 % bound (a share of the force's variance)
MARGIN_ABSOLUTE = 0.01
#: ... and the margin's part proportional to the null's mean R^2
MARGIN_RELATIVE = 0.05
#: a fitted range within this relative distance of a bound is at the bound (not identified)
BOUND_TOLERANCE = 1e-3
#: the verdicts :func:`verdict` gives
VERDICTS = ("above chance", "at chance", "below chance")


def chance_margin(null_r2: float) -> float:
    """The effect R^2 must show beyond the null's 95 % interval:
    max(MARGIN_ABSOLUTE, MARGIN_RELATIVE x |null_r2|)."""
    return max(MARGIN_ABSOLUTE, MARGIN_RELATIVE * abs(float(null_r2)))


def verdict(r2: float | None, null_r2: float | None, null_interval: Sequence[float] | None) -> str | None:
    """"above chance" when ``r2`` exceeds the null's upper bound by the
    margin (:func:`chance_margin` of the null's mean ``null_r2``), "below
    chance" when it lies below the lower bound by as much, else "at
    chance"; None when R^2 is undefined or there is no null."""
    if r2 is None or null_r2 is None or null_interval is None or not math.isfinite(r2):
        return None
    lo, hi = (float(v) for v in null_interval)
    margin = chance_margin(null_r2)
    if r2 > hi + margin:
        return "above chance"
    if r2 < lo - margin:
        return "below chance"
    return "at chance"


def r2_text(value: float) -> str:
    """An R^2 for reading: three decimals, or two significant digits below 0.01."""
    if not math.isfinite(value):
        return "undefined"
    return f"{value:.3f}" if abs(value) >= 0.01 or value == 0.0 else f"{value:.2g}"


def against_null(r2: float | None, null_r2: float | None, null_interval: Sequence[float] | None) -> str:
    """"R^2 0.063, against 0.058 [0.050, 0.066] for relabelled tokens: at
    chance" (the verdict of :func:`verdict`), or what stands in its place."""
    if r2 is None or not math.isfinite(r2):
        return "R^2 undefined"
    if null_r2 is None or null_interval is None:
        return f"R^2 {r2_text(r2)}; no verdict without a null (fit with null=K relabellings)"
    lo, hi = null_interval
    return (f"R^2 {r2_text(r2)}, against {r2_text(null_r2)} [{r2_text(lo)}, {r2_text(hi)}] for relabelled tokens: "
            f"{verdict(r2, null_r2, null_interval)}")


def law_label(law: Any) -> str:
    """How a sentence names the fitted law."""
    if isinstance(law, str):
        if law == "builtin":
            return "the built-in law"
        if law == "effective":
            return "the effective loss"
        return f"the {law} preset's law"
    name = type(law).__name__
    return {"ForceParams": "the built-in law", "EffectiveLoss": "the effective loss"}.get(name, f"the law ({name})")


def target_label(target: str, horizon: int | None = None) -> str:
    """How a sentence names what was fitted."""
    if target == "gradient":
        return "the embedding's gradient"
    if target == "update":
        return "the optimiser's update of the embedding"
    return ("the embedding's displacement to the next snapshot" if horizon is None else
            f"the embedding's displacement over {horizon} steps")


def verdict_sentence(law: Any, target: str, horizon: int | None, r2: float | None, null_r2: float | None,
                     null_interval: Sequence[float] | None) -> str:
    """The whole run's verdict in one sentence, e.g. "The built-in law
    explains R^2 0.063 of the embedding's gradient (one strength per term
    for the whole run), against 0.058 [0.050, 0.066] for relabelled tokens:
    at chance." """
    head = law_label(law)
    head = head[0].upper() + head[1:]
    what = target_label(target, horizon)
    if r2 is None or not math.isfinite(r2):
        return f"{head} has no R^2 on {what}: the force to explain is zero after the gauge."
    text = f"{head} explains R^2 {r2_text(r2)} of {what} (one strength per term for the whole run)"
    if null_r2 is None or null_interval is None:
        return text + "; no verdict without a null (fit with null=K relabellings, --null K)."
    lo, hi = null_interval
    return (text + f", against {r2_text(null_r2)} [{r2_text(lo)}, {r2_text(hi)}] for relabelled tokens: "
            f"{verdict(r2, null_r2, null_interval)}.")


def shares_sentence(shares: dict[str, float]) -> str:
    """The terms by their share of the explained force
    (:func:`fitting.forcefit.solve.shares`), largest first, those of 0.005
    or more, in a sentence."""
    top = [(k, v) for k, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v >= 0.005]
    if not top:
        return "No fitted term acts: every strength is 0 (see coef_unconstrained_ for the signs the data ask for)."
    return "Terms by their share of the explained force: " + ", ".join(f"{k} {v:.2f}" for k, v in top) + "."


def range_identification(names: Sequence[str], theta: np.ndarray, low: np.ndarray, high: np.ndarray,
                         moves: np.ndarray | None) -> dict[str, str | None]:
    """Per range: None when identified, else why not ("at its upper bound
    10", "its terms have strength 0"). ``moves``: whether the range moves
    the fitted model at all (a nonzero column of d(model)/d(log range))."""
    out: dict[str, str | None] = {}
    for j, (name, v, lo, hi) in enumerate(zip(names, theta, low, high)):
        if v <= lo * (1 + BOUND_TOLERANCE):
            out[name] = f"at its lower bound {lo:.4g}"
        elif v >= hi * (1 - BOUND_TOLERANCE):
            out[name] = f"at its upper bound {hi:.4g}"
        elif moves is not None and not bool(moves[j]):
            out[name] = "its terms have strength 0"
        else:
            out[name] = None
    return out
