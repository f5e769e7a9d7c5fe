"""Effective theory of representation learning (docs/effective_theory.md): exact
degeneracy of parallelogram constraints, the critical training fraction,
Hessian grokking rates, RQI, predicted accuracy and learning phases.
"""

# public names and the submodules that define them; a submodule is imported
# the first time one of its names is used, so that importing the package (and
# `embdyn --help`) stays cheap
from particles.core.lazy import attach as _attach

_EXPORTS = {
    'constraint_matrix': ('particles.parallelograms', 'constraint_matrix'),
    'parallelograms': ('particles.parallelograms', 'parallelograms'),
    'degeneracy': ('.linalg', 'degeneracy'),
    'grokking_rate': ('.linalg', 'grokking_rate'),
    'hessian_spectrum': ('.linalg', 'hessian_spectrum'),
    'laplacian_spectrum': ('.linalg', 'laplacian_spectrum'),
    'nullity': ('.linalg', 'nullity'),
    'predicted_steps': ('.linalg', 'predicted_steps'),
    'rank': ('.linalg', 'rank'),
    'warmup': ('.precompile', 'warmup'),
    'GrokkingRateCurve': ('.montecarlo', 'GrokkingRateCurve'),
    'StructureProbability': ('.montecarlo', 'StructureProbability'),
    'grokking_rate_curve': ('.montecarlo', 'grokking_rate_curve'),
    'unique_structure_probability': ('.montecarlo', 'unique_structure_probability'),
    'wilson_interval': ('.montecarlo', 'wilson_interval'),
    'PHASES': ('.metrics', 'PHASES'),
    'classify_phase': ('.metrics', 'classify_phase'),
    'normalized_embedding': ('.metrics', 'normalized_embedding'),
    'predicted_accuracy': ('.metrics', 'predicted_accuracy'),
    'realised_parallelograms': ('.metrics', 'realised_parallelograms'),
    'rqi': ('.metrics', 'rqi'),
    'rqi_series': ('.metrics', 'rqi_series'),
}

__all__ = list(_EXPORTS)  # the one export list: _EXPORTS above

__all__ += ["PHASES", "classify_phase", "normalized_embedding", "predicted_accuracy", "realised_parallelograms",
            "rqi", "rqi_series"]


__getattr__, __dir__ = _attach(__name__, _EXPORTS)
