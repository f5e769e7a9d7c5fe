"""Memory estimate of an ODE fit (issue 69), from the samples and variables it fits, before it starts
(the factors measured by ``benchmarks/memory_estimates.py``; see :mod:`fitting.signals.memory`)."""

from __future__ import annotations

from typing import Any

from particles.core.limits import MIB

from .weighted import UNIFORM_MAX_K

__all__ = ["fit_bytes", "fit_form", "FIT_FACTORS"]


def fit_bytes(n_samples: int, n_variables: int, *, form: str = "weak", figures: bool = False) -> int:
    """An ODE fit of ``n_variables`` series on ``n_samples`` samples with its report (scores, simulations,
    a forecast), for the rows ``form``: ``"weak"`` (the default :class:`~fitting.ode.WeakForm` with its
    covariance-weighted refit, whose (samples, variables, variables) arrays make it quadratic in the
    variables), ``"flowmap"`` (``LinearODE(stable=True)``, the explorer's fit) or ``"pointwise"``
    (derivative estimates; bounded by the weak form's figure). ``figures``: the command line's three
    figures (each line drawn with at most :data:`particles.core.figures.MAX_LINE_POINTS` points).

    The factors are upper envelopes of peaks measured on 17 runs (``benchmarks/memory_estimates.py``):
    a fit's memory also depends on the data (the weak form's window length, the flow map's lag), so the
    estimate is tight for the runs that need the most and generous for short ones."""
    if form not in FIT_FACTORS:
        raise ValueError(f"form must be one of {', '.join(map(repr, FIT_FACTORS))}, got {form!r}")
    n, m = int(n_samples), int(n_variables)
    fixed, per_sample, per_variable, per_pair = FIT_FACTORS[form]
    fixed = min(fixed, FIXED_PER_SAMPLE * n)  # a short run's fit never reaches the fixed part (its chunks)
    if form != "flowmap" and m <= UNIFORM_MAX_K:  # the refit's all-offsets product copies (windows, m^2, window)
        per_pair += WEAK_UNIFORM_PER_PAIR
    drawn = FIGURES if figures and form == "flowmap" else 0  # the weak form's factors were measured with them
    return int(fixed + 8 * n * (per_sample + per_variable * m + per_pair * m * m) + drawn)


def fit_form(model: Any) -> str:
    """The ``form`` of :func:`fit_bytes` for an ODE model's settings: ``"flowmap"`` for
    ``derivative="flowmap"`` (and ``LinearODE(stable=True)``'s default), ``"weak"`` for the weak form
    (the default) and ``"pointwise"`` for a named derivative estimate; a formulation object is counted
    as the weak form."""
    derivative = getattr(model, "derivative", None)
    if derivative is None or derivative == "auto":
        return "flowmap" if getattr(model, "stable", False) else "weak"
    if isinstance(derivative, str):
        return derivative if derivative in ("flowmap", "weak") else "pointwise"
    return "weak"


#: measured factors of :func:`fit_bytes` by form: (bytes, then float64 values a sample: fixed, per
#: variable, per pair of variables)
FIT_FACTORS = {"weak": (18 * MIB, 5.0, 0.0, 5.0), "flowmap": (4 * MIB, 20.0, 5.0, 3.0)}
FIT_FACTORS["pointwise"] = FIT_FACTORS["weak"]
#: bytes a sample of the fixed part of :data:`FIT_FACTORS` (the refit's chunks of 2e6 values): a run of a
#: few hundred samples holds a few hundred KiB
FIXED_PER_SAMPLE = 1024
#: the weak form's refit with at most ``fitting.ode.weighted.UNIFORM_MAX_K`` variables: float64 values a
#: sample per pair of variables added (its windows overlap four times, two such arrays)
WEAK_UNIFORM_PER_PAIR = 7.5
#: the command line's figures (Matplotlib's canvases and artists), added to the flow map's factors (the
#: weak form's were measured with them)
FIGURES = 16 * MIB
