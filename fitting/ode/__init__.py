"""ODE regression onto trajectories (docs/fitting.md, ODE fits), one job a file.

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
``relations``          linear relations among the states (conserved totals)
``quality``            FitQualityWarning: results that may be wrong
``forecast``           Forecast: a simulation from the fitted window's end vs persistence
``data``               runs, sample times and windows
=====================  ====================================================
"""

# public names and the submodules that define them; a submodule is imported
# the first time one of its names is used, so that importing the package (and
# `embdyn --help`) stays cheap
from particles.core.lazy import attach as _attach

_EXPORTS = {
    'FiniteDifference': ('.differentiation', 'FiniteDifference'),
    'Formulation': ('.differentiation', 'Formulation'),
    'SavitzkyGolay': ('.differentiation', 'SavitzkyGolay'),
    'BootstrapEnsemble': ('.ensemble', 'BootstrapEnsemble'),
    'EnsembleSimulation': ('.ensemble', 'EnsembleSimulation'),
    'FlowMap': ('.flowmap', 'FlowMap'),
    'BlowUpError': ('.integrate', 'BlowUpError'),
    'linear_solution': ('.integrate', 'linear_solution'),
    'ConcatLibrary': ('.library', 'ConcatLibrary'),
    'CustomLibrary': ('.library', 'CustomLibrary'),
    'FourierLibrary': ('.library', 'FourierLibrary'),
    'Library': ('.library', 'Library'),
    'PolynomialLibrary': ('.library', 'PolynomialLibrary'),
    'DERIVATIVE_METHODS': ('.models', 'DERIVATIVE_METHODS'),
    'LinearODE': ('.models', 'LinearODE'),
    'LotkaVolterra': ('.models', 'LotkaVolterra'),
    'ODEModel': ('.models', 'ODEModel'),
    'OLS': ('.regression', 'OLS'),
    'REGRESSORS': ('.regression', 'REGRESSORS'),
    'STLSQ': ('.regression', 'STLSQ'),
    'Lasso': ('.regression', 'Lasso'),
    'LassoCV': ('.regression', 'LassoCV'),
    'Regressor': ('.regression', 'Regressor'),
    'WeakForm': ('.weak', 'WeakForm'),
    'LinearRelationWarning': ('.relations', 'LinearRelationWarning'),
    'FitQualityWarning': ('.quality', 'FitQualityWarning'),
    'Forecast': ('.forecast', 'Forecast'),
}

__all__ = [
    "BlowUpError", "BootstrapEnsemble", "ConcatLibrary", "CustomLibrary", "DERIVATIVE_METHODS", "EnsembleSimulation",
    "FiniteDifference", "FitQualityWarning", "FlowMap", "Forecast", "FourierLibrary", "Formulation", "Lasso", "LassoCV", "Library", "LinearODE", "LinearRelationWarning", "LotkaVolterra",
    "ODEModel", "OLS", "PolynomialLibrary", "REGRESSORS", "Regressor", "STLSQ", "SavitzkyGolay", "WeakForm",
    "linear_solution",
]


__getattr__, __dir__ = _attach(__name__, _EXPORTS)
