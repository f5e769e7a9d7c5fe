"""Fourier signals of embeddings, survival measures and ODE regression onto
embedding trajectories (SPEC sections 3 and 4), plus an optional torch
training backend.

Public API::

    fourier_signals, trajectory_signals, surviving_frequencies,
    frequency_circularity, n_frequencies                 signals (SPEC 3)
    initial_signal, initial_gradient, survival_rate,
    fitness_correlation, survival_classifier, survival_table
                                                         fitness measures
    differentiate                                        derivative estimators
    ODEModel, LinearODE, LotkaVolterra, linear_solution, BlowUpError,
    BootstrapEnsemble                                    ODE regression (SPEC 4)
    PolynomialLibrary, FourierLibrary, CustomLibrary     libraries
    STLSQ, OLS, Lasso, LassoCV                           regressors
    FiniteDifference, SavitzkyGolay, WeakForm, FlowMap   formulations
    survival_ode_analysis, ODEAnalysis                   the reference analysis
    example_trajectory                                   a shipped survival-MLP run

The torch backend (SPEC 5) lives in ``fitting.backend``: its configurations
import without torch, training needs ``pip install 'embedding-dynamics[torch]'``.
"""

from .analysis import ODEAnalysis, survival_ode_analysis
from .derivatives import DERIVATIVES, differentiate
from .examples import example_trajectory
from .ode import (OLS, REGRESSORS, STLSQ, BlowUpError, BootstrapEnsemble, CustomLibrary, FiniteDifference, FlowMap,
                  FourierLibrary, Lasso, LassoCV, LinearODE, LotkaVolterra, ODEModel, PolynomialLibrary, SavitzkyGolay,
                  WeakForm, linear_solution)
from .signals import (DC_SCALAR, fourier_signals, frequency_circularity, n_frequencies, surviving_frequencies,
                      trajectory_signals)
from .survival import (SurvivalClassifierResult, fitness_correlation, initial_gradient, initial_signal,
                       survival_classifier, survival_rate, survival_table)

__all__ = [
    "OLS", "STLSQ", "BootstrapEnsemble", "CustomLibrary", "FiniteDifference", "FlowMap", "FourierLibrary", "Lasso", "LassoCV",
    "ODEModel", "PolynomialLibrary", "SavitzkyGolay", "WeakForm",
    "example_trajectory", "DC_SCALAR", "DERIVATIVES", "REGRESSORS", "BlowUpError", "LinearODE", "LotkaVolterra", "ODEAnalysis",
    "SurvivalClassifierResult", "differentiate", "fitness_correlation", "fourier_signals", "frequency_circularity",
    "initial_gradient", "initial_signal", "linear_solution", "n_frequencies", "survival_classifier",
    "survival_ode_analysis", "survival_rate", "survival_table", "surviving_frequencies", "trajectory_signals",
]
