"""ODE regression onto trajectories (docs/fitting.md, ODE fits), one job a file.

=========================  ===================================================
``library``                candidate terms: PolynomialLibrary, FourierLibrary,
                           CustomLibrary (combine with ``+``)
``derivatives``            derivative estimators on samples: differentiate
``differentiation``        pointwise rows: FiniteDifference, SavitzkyGolay
``weak``                   the weak (integral) formulation: WeakForm
``noise``                  noise level and time scale of the samples
``weighted``, ``gls``      the covariance-weighted refit of weak-form rows
``flowmap``                linear systems from their H-step map: FlowMap
``regression``             STLSQ, OLS, Lasso, LassoCV (standardised)
``stable``                 least squares over stable linear systems
``integrate``              linear_solution, solve_ivp / rollout, BlowUpError
``inputs``                 trajectories, formulation shortcuts, RegressionRows
``base``                   ODEModel, the general library ODE
``linear``                 LinearODE
``lotka_volterra``         LotkaVolterra
``equations``              the fitted system as text (part of ODEModel)
``simulation_scores``      forecast and trajectory scores (part of ODEModel)
``ensemble``               BootstrapEnsemble
``relations``              linear relations among the states (conserved totals)
``quality``                FitQualityWarning: results that may be wrong
``verdict``, ``paths``     the verdict on a fit (``fit_quality_``), its RK4 paths
``degree``                 AutoDegree: library="auto", the degree chosen
``forecast``               Forecast: a simulation from the fitted window's end vs persistence
``data``                   runs, sample times and windows
``report``, ``figures``    what ``embdyn fit`` prints and draws; ``cli`` the command
=========================  ===================================================
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
    'DERIVATIVE_METHODS': ('.names', 'DERIVATIVE_METHODS'),
    'LinearODE': ('.linear', 'LinearODE'),
    'LotkaVolterra': ('.lotka_volterra', 'LotkaVolterra'),
    'ODEModel': ('.base', 'ODEModel'),
    'OLS': ('.regression', 'OLS'),
    'REGRESSORS': ('.regression', 'REGRESSORS'),
    'STLSQ': ('.regression', 'STLSQ'),
    'Lasso': ('.regression', 'Lasso'),
    'LassoCV': ('.regression', 'LassoCV'),
    'Regressor': ('.regression', 'Regressor'),
    'WeakForm': ('.weak', 'WeakForm'),
    'AutoDegree': ('.degree', 'AutoDegree'),
    'LinearRelationWarning': ('.relations', 'LinearRelationWarning'),
    'FitQualityWarning': ('.quality', 'FitQualityWarning'),
    'Forecast': ('.forecast', 'Forecast'),
    'fit_windows': ('.windows', 'fit_windows'),
}

__all__ = list(_EXPORTS)  # the one export list: _EXPORTS above


__getattr__, __dir__ = _attach(__name__, _EXPORTS)
