"""Old home of the ODE estimators, now one module each:
:mod:`fitting.ode.base` (:class:`ODEModel`), :mod:`fitting.ode.linear`
(:class:`LinearODE`), :mod:`fitting.ode.lotka_volterra`
(:class:`LotkaVolterra`) and :mod:`fitting.ode.inputs`. Kept so that models
saved before (``model.joblib``) still load; importing it warns with a
``DeprecationWarning``. It will be removed."""

import warnings

from .base import ODEModel
from .inputs import RegressionRows, as_formulation, from_trajectory
from .linear import LinearODE
from .lotka_volterra import LotkaVolterra
from .names import DERIVATIVE_METHODS, LV_FORMS

__all__ = ["ODEModel", "LinearODE", "LotkaVolterra", "LV_FORMS", "RegressionRows", "DERIVATIVE_METHODS",
           "as_formulation", "from_trajectory"]

warnings.warn("fitting.ode.models is split into fitting.ode.base (ODEModel), fitting.ode.linear (LinearODE) and "
              "fitting.ode.lotka_volterra (LotkaVolterra); import from there (the old module will be removed)",
              DeprecationWarning, stacklevel=2)
