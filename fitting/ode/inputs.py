"""What the ODE estimators take, resolved: a Trajectory as Fourier signals
(:func:`from_trajectory`), a formulation from its shortcut
(:func:`as_formulation`), the constructor's arguments stored
(:func:`store_params`), and the regression rows of a fit
(:class:`RegressionRows`)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator

from .differentiation import FiniteDifference, Formulation, SavitzkyGolay
from .flowmap import FlowMap
from .names import DERIVATIVE_METHODS
from .weak import WeakForm

__all__ = ["from_trajectory", "as_formulation", "store_params", "RegressionRows", "MULTIOUTPUT"]


def store_params(estimator: BaseEstimator, params: dict) -> None:
    """Store the constructor's arguments unchanged (scikit-learn convention: no
    validation or conversion in ``__init__``)."""
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def from_trajectory(x: Any, t: Any, frequencies: Any = "auto", n_features: int | None = None
                    ) -> tuple[Any, Any, list[str] | None]:
    """``(x, t, names)``: a :class:`particles.Trajectory` as the Fourier
    signals of the frequencies ``frequencies`` selects
    (:func:`fitting.select_frequencies`: by default the survivors, else the
    key frequencies, else all; or the given list of k), its steps as times
    and the names ``S<k>``; anything else unchanged with names None.

    ``n_features`` (a fitted model's): a model that does not know its
    frequencies (fitted on arrays) is given all of them when it was fitted
    on K columns, and otherwise refused with a message; the selection must
    have that many columns."""
    from particles.trajectory import Trajectory

    if not isinstance(x, Trajectory):
        return x, t, None
    if t is not None:
        raise ValueError("t must be None when x is a Trajectory: its recorded steps are the sample times")
    from ..signals import parse_frequencies, select_frequencies
    from ..signals import trajectory_signals

    steps, signals = trajectory_signals(x)
    K = signals.shape[1]
    if n_features is not None and frequencies is None:  # fitted on arrays: which columns is not known
        if n_features != K:
            raise ValueError(f"x is a Trajectory with {K} frequencies, but this model was fitted on an array of "
                             f"{n_features} columns and does not know which frequencies they were: pass the "
                             "same columns as an array (or set model.frequencies_ to their k)")
        frequencies = "all"
    chosen = parse_frequencies("auto" if frequencies is None else frequencies, K)
    if isinstance(chosen, str):  # a rule: run it (a list of k, e.g. a fitted model's frequencies_, needs no rule)
        chosen = select_frequencies(x, chosen).frequencies
    if n_features is not None and len(chosen) != n_features:
        raise ValueError(f"this model was fitted on {n_features} variables but selects {chosen} of the Trajectory")
    return signals[:, np.asarray(chosen) - 1], steps.astype(float), [f"S{k}" for k in chosen]


def as_formulation(derivative: Formulation | str) -> Formulation:
    """A formulation from an object or one of ``DERIVATIVE_METHODS``."""
    if isinstance(derivative, Formulation):
        return derivative
    shortcuts = {"weak": WeakForm, "forward": lambda: FiniteDifference(1), "central": lambda: FiniteDifference(2),
                 "savgol": SavitzkyGolay, "flowmap": FlowMap}
    if not isinstance(derivative, str) or derivative not in shortcuts:
        raise ValueError(f"derivative must be a Formulation or one of {DERIVATIVE_METHODS}, got {derivative!r}")
    return shortcuts[derivative]()

#: the R^2 averages score and trajectory_score accept (one number over the equations)
MULTIOUTPUT = ("uniform_average", "variance_weighted")


class RegressionRows(NamedTuple):
    """The regression rows of a fit: Theta (n, F) and Y (n, K), the runs,
    the run index of each row, the formulation bound to the data, and the
    (samples, times) of each run inside the window."""

    Theta: np.ndarray
    Y: np.ndarray
    runs: list
    owner: np.ndarray
    formulation: Any
    samples: list
