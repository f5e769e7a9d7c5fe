"""The survival pipeline of the survival paper: fitness measures of the
frequencies (``measures``), the paper's linear-ODE analysis of a run's
signals (``analysis``) and the run shipped with the package (``examples``)."""

# public names and the modules that define them, imported on first use (so that
# `embdyn --help`, which imports the command modules, stays cheap)
from particles.core.lazy import attach as _attach

_EXPORTS = {
    'initial_signal': ('.measures', 'initial_signal'),
    'initial_gradient': ('.measures', 'initial_gradient'),
    'survival_rate': ('.measures', 'survival_rate'),
    'fitness_correlation': ('.measures', 'fitness_correlation'),
    'survival_classifier': ('.measures', 'survival_classifier'),
    'SurvivalClassifierResult': ('.measures', 'SurvivalClassifierResult'),
    'survival_table': ('.measures', 'survival_table'),
    'ODEAnalysis': ('.analysis', 'ODEAnalysis'),
    'survival_ode_analysis': ('.analysis', 'survival_ode_analysis'),
    'example_trajectory': ('.examples', 'example_trajectory'),
}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = _attach(__name__, _EXPORTS)
