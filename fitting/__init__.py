"""Fourier signals of embeddings, survival measures and ODE regression onto
embedding trajectories (docs/fitting.md), plus an optional torch
training backend.

Public API::

    fourier_signals, trajectory_signals, surviving_frequencies,
    frequency_circularity, n_frequencies                 signals (docs/fitting.md)
    initial_signal, initial_gradient, survival_rate,
    fitness_correlation, survival_classifier, survival_table
                                                         fitness measures
    differentiate                                        derivative estimators
    ODEModel, LinearODE, LotkaVolterra, linear_solution, BlowUpError,
    BootstrapEnsemble                                    ODE regression (docs/fitting.md)
    PolynomialLibrary, FourierLibrary, CustomLibrary     libraries
    STLSQ, OLS, Lasso, LassoCV                           regressors
    FiniteDifference, SavitzkyGolay, WeakForm, FlowMap   formulations
    survival_ode_analysis, ODEAnalysis                   the reference analysis
    stages, RunStages, network_curves                    the stages of a run (docs/bring_your_own_run.md)
    fit_windows                                          one ODE fit per stage or window of a run
    example_trajectory                                   a shipped survival-MLP run
    ForceLawFit                                          which force law explains training (docs/force_fit.md)

The torch backend (docs/training.md) lives in ``fitting.training``: its configurations
import without torch, training needs ``pip install '.[torch]'`` (in the repository root).
"""

# public names and the submodules that define them; a submodule is imported
# the first time one of its names is used, so that importing the package (and
# `embdyn --help`) stays cheap
from particles.core.lazy import attach as _attach

_EXPORTS = {
    'ODEAnalysis': ('.survival.analysis', 'ODEAnalysis'),
    'survival_ode_analysis': ('.survival.analysis', 'survival_ode_analysis'),
    'DERIVATIVES': ('.ode.derivatives', 'DERIVATIVES'),
    'differentiate': ('.ode.derivatives', 'differentiate'),
    'example_trajectory': ('.survival.examples', 'example_trajectory'),
    'FrequencySelection': ('.signals.frequencies', 'FrequencySelection'),
    'stages': ('.signals.stages', 'stages'),
    'RunStages': ('.signals.stages', 'RunStages'),
    'network_curves': ('.signals.stages', 'network_curves'),
    'key_frequencies': ('.signals.frequencies', 'key_frequencies'),
    'select_frequencies': ('.signals.frequencies', 'select_frequencies'),
    'ForceLawFit': ('.forcefit', 'ForceLawFit'),
    'OLS': ('.ode', 'OLS'),
    'fit_windows': ('.ode', 'fit_windows'),
    'REGRESSORS': ('.ode', 'REGRESSORS'),
    'STLSQ': ('.ode', 'STLSQ'),
    'BlowUpError': ('.ode', 'BlowUpError'),
    'BootstrapEnsemble': ('.ode', 'BootstrapEnsemble'),
    'CustomLibrary': ('.ode', 'CustomLibrary'),
    'FiniteDifference': ('.ode', 'FiniteDifference'),
    'FlowMap': ('.ode', 'FlowMap'),
    'FitQualityWarning': ('.ode', 'FitQualityWarning'),
    'FourierLibrary': ('.ode', 'FourierLibrary'),
    'Lasso': ('.ode', 'Lasso'),
    'LassoCV': ('.ode', 'LassoCV'),
    'LinearODE': ('.ode', 'LinearODE'),
    'LotkaVolterra': ('.ode', 'LotkaVolterra'),
    'ODEModel': ('.ode', 'ODEModel'),
    'PolynomialLibrary': ('.ode', 'PolynomialLibrary'),
    'SavitzkyGolay': ('.ode', 'SavitzkyGolay'),
    'WeakForm': ('.ode', 'WeakForm'),
    'linear_solution': ('.ode', 'linear_solution'),
    'DC_SCALAR': ('.signals.fourier', 'DC_SCALAR'),
    'fourier_signals': ('.signals.fourier', 'fourier_signals'),
    'frequency_circularity': ('.signals.fourier', 'frequency_circularity'),
    'n_frequencies': ('.signals.fourier', 'n_frequencies'),
    'surviving_frequencies': ('.signals.fourier', 'surviving_frequencies'),
    'trajectory_signals': ('.signals.fourier', 'trajectory_signals'),
    'SurvivalClassifierResult': ('.survival.measures', 'SurvivalClassifierResult'),
    'fitness_correlation': ('.survival.measures', 'fitness_correlation'),
    'initial_gradient': ('.survival.measures', 'initial_gradient'),
    'initial_signal': ('.survival.measures', 'initial_signal'),
    'survival_classifier': ('.survival.measures', 'survival_classifier'),
    'survival_rate': ('.survival.measures', 'survival_rate'),
    'survival_table': ('.survival.measures', 'survival_table'),
}

__all__ = list(_EXPORTS)  # the one export list: _EXPORTS above


__getattr__, __dir__ = _attach(__name__, _EXPORTS)
