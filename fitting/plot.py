"""Old home of the figures, now each with its subpackage:
:func:`~fitting.signals.figures.plot_signals`,
:func:`~fitting.ode.figures.plot_fit` and
:func:`~fitting.ode.figures.plot_coefficients`,
:func:`~fitting.training.figures.plot_phase_grid`,
:func:`~fitting.forcefit.figures.plot_force_shares` and
:func:`particles.core.figures.save_figure`. Importing it warns with a
``DeprecationWarning``; it will be removed."""

import warnings

from particles.core.figures import save_figure

from .forcefit.figures import plot_force_shares
from .ode.figures import plot_coefficients, plot_fit
from .signals.figures import plot_signals
from .training.figures import PHASE_COLORS, plot_phase_grid

__all__ = ["plot_signals", "plot_fit", "plot_coefficients", "plot_phase_grid", "plot_force_shares", "save_figure",
           "PHASE_COLORS"]

warnings.warn("fitting.plot is split: import plot_signals from fitting.signals.figures, plot_fit and "
              "plot_coefficients from fitting.ode.figures, plot_phase_grid from fitting.training.figures, "
              "plot_force_shares from fitting.forcefit.figures, save_figure from particles.core.figures "
              "(fitting.plot will be removed)", DeprecationWarning, stacklevel=2)
