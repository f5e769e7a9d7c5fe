"""ODE regression onto trajectories (SPEC section 4), one job a file.

=====================  ====================================================
``library``            candidate terms: PolynomialLibrary, FourierLibrary,
                       CustomLibrary (combine with ``+``)
``differentiation``    pointwise rows: FiniteDifference, SavitzkyGolay
``weak``               the weak (integral) formulation: WeakForm
``flowmap``            linear systems from their H-step map: FlowMap
``regression``         STLSQ, OLS, Lasso, LassoCV (standardised)
``stable``             least squares over stable linear systems
``integrate``          linear_solution, solve_ivp / rollout, BlowUpError
``models``             ODEModel, LinearODE, LotkaVolterra
``ensemble``           BootstrapEnsemble
``data``               runs, sample times and windows
=====================  ====================================================
"""

from .differentiation import FiniteDifference, Formulation, SavitzkyGolay
from .ensemble import BootstrapEnsemble, EnsembleSimulation
from .flowmap import FlowMap
from .integrate import BlowUpError, linear_solution
from .library import ConcatLibrary, CustomLibrary, FourierLibrary, Library, PolynomialLibrary
from .models import DERIVATIVE_METHODS, LinearODE, LotkaVolterra, ODEModel
from .regression import OLS, REGRESSORS, STLSQ, Lasso, LassoCV, Regressor
from .weak import WeakForm

__all__ = [
    "BlowUpError", "BootstrapEnsemble", "ConcatLibrary", "CustomLibrary", "DERIVATIVE_METHODS", "EnsembleSimulation",
    "FiniteDifference", "FlowMap", "FourierLibrary", "Formulation", "Lasso", "LassoCV", "Library", "LinearODE", "LotkaVolterra",
    "ODEModel", "OLS", "PolynomialLibrary", "REGRESSORS", "Regressor", "STLSQ", "SavitzkyGolay", "WeakForm",
    "linear_solution",
]
