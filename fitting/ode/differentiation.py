"""Pointwise formulations: derivatives estimated from the samples.

A formulation turns one run into regression rows ``(features, targets)``
for a library. The pointwise ones estimate dx/dt at the samples
(:func:`fitting.differentiate`) and pair it with the library evaluated at
the matching states:

* :class:`FiniteDifference` (``"forward"``: order 1, the survival paper's
  reference; ``"central"``: order 2);
* :class:`SavitzkyGolay` (``"savgol"``): local polynomial smoothing and its
  derivative; the smoothed states enter the library too.

The weak (integral) formulation lives in :mod:`fitting.ode.weak`.
"""

from __future__ import annotations

import numpy as np

from .derivatives import check_savgol, differentiate
from .library import Library

__all__ = ["Formulation", "FiniteDifference", "SavitzkyGolay"]


class Formulation:
    """Base class: ``rows(x, t, library) -> (Theta, Y)`` for one run.

    ``pointwise`` says whether each row is one sample (so the library's
    constant column is 1 on every row); ``min_samples`` how many samples a
    run needs. What the estimator, the report and the figures need to know
    of a formulation it declares here, so that nothing tells formulations
    apart by their class:

    * ``kind``: ``"pointwise"`` (derivative estimates), ``"weak"`` or
      ``"flowmap"`` (the name reports and memory estimates use);
    * ``estimates_derivatives``: its rows hold estimated dx/dt (a figure can
      plot them against the model's);
    * ``maps_states``: its rows are the state one ``lag`` ahead (a linear
      model is fitted as a map and its matrix logarithm);
    * ``covariance_refit``: the fit refits with the rows' covariance;
    * :meth:`description` and :meth:`samples_text`: its words in a report
      and in the message of a run too short for it.
    """

    pointwise = True
    kind = "pointwise"
    estimates_derivatives = True
    maps_states = False
    covariance_refit = False
    #: the derivative estimate's name in a figure's caption
    estimate_name = "pointwise"

    def description(self) -> str:
        """The rows in a report's words."""
        return f"pointwise derivatives ({type(self).__name__})"

    def samples_text(self) -> str:
        """What needs the samples, in the message of a run too short for it."""
        return repr(self)

    def rate_times(self, times: np.ndarray, n: int) -> np.ndarray:
        """The times of the ``n`` rates :meth:`derivative` returns for samples at ``times``."""
        return times[:n]

    def check(self) -> None:
        """Validate the parameters (called by the estimator's ``fit``)."""

    def min_samples(self) -> int:
        return 2

    def bind(self, runs: list[np.ndarray], times: list[np.ndarray]) -> "Formulation":
        """The formulation with any data-dependent setting fixed (pointwise: itself)."""
        return self

    def rows(self, x: np.ndarray, t: np.ndarray, library: Library) -> tuple[np.ndarray, np.ndarray]:
        states, rates = self.derivative(x, t)
        return library.features(states), rates

    def derivative(self, x: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(states, dx/dt) of one run."""
        raise NotImplementedError  # pragma: no cover

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    __hash__ = None


class FiniteDifference(Formulation):
    """Finite differences: ``order=1`` forward (reference), ``order=2`` central."""

    estimate_name = "central-difference"

    def __init__(self, order: int = 2):
        self.order = order

    def rate_times(self, times: np.ndarray, n: int) -> np.ndarray:
        return times[:n] if self.order == 1 else times[1 : 1 + n]

    def check(self) -> None:
        if self.order not in (1, 2) or isinstance(self.order, bool):
            raise ValueError(f"FiniteDifference order must be 1 (forward) or 2 (central), got {self.order!r}")

    def min_samples(self) -> int:
        return 2 if self.order == 1 else 3

    def derivative(self, x, t):
        return differentiate(x, t, "forward" if self.order == 1 else "central")


class SavitzkyGolay(Formulation):
    """Savitzky-Golay smoothing and derivative (uniform sampling), by
    :func:`scipy.signal.savgol_filter`.

    Parameters
    ----------
    window_length : odd int >= 3
    polyorder : int in [1, window_length - 1]
    """

    estimate_name = "Savitzky-Golay"

    def __init__(self, window_length: int = 11, polyorder: int = 3):
        self.window_length = window_length
        self.polyorder = polyorder

    def check(self) -> None:
        check_savgol(self.window_length, self.polyorder, prefix="SavitzkyGolay ")

    def min_samples(self) -> int:
        return int(self.window_length)

    def derivative(self, x, t):
        return differentiate(x, t, "savgol", window_length=self.window_length, polyorder=self.polyorder)
