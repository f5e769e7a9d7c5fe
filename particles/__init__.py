"""Numba-compiled N-body model of token embeddings under clustering and
alignment forces between pair sums (docs/particles.md, the energy), its structure metrics,
and the trajectory file format shared by the whole distribution.

Public API::

    modular_addition, addition, PairDataset          datasets and splits
    ForceParams, energy, forces, energy_and_forces   the model
    PairEnergy, PairTerm, fast_exp                   your own force law (compiled)
    force_terms, unit_term_forces, term_names        a law split into its terms (docs/force_fit.md)
    simulate, minimize, warmup                       integrators
    Trajectory                                       the shared file format
    circularity, best_circularity, pair_sum_accuracy,
    grid_defects, classify_structure, structure_metrics
    preset, Preset, sweep, SweepTable                presets and sweeps
    parallelograms, constraint_matrix, EffectiveLoss,
    effective_loss, simulate_effective, centroid_sum, spread
                                                     effective-loss dynamics (docs/effective_theory.md)
"""

# public names and the submodules that define them; a submodule is imported
# the first time one of its names is used, so that importing the package (and
# `embdyn --help`) stays cheap
from .core.lazy import attach as _attach

_EXPORTS = {
    'warmup': ('.precompile', 'warmup'),
    'PairDataset': ('.datasets', 'PairDataset'),
    'addition': ('.datasets', 'addition'),
    'make_rng': ('.datasets', 'make_rng'),
    'modular_addition': ('.datasets', 'modular_addition'),
    'permutation_group': ('.datasets', 'permutation_group'),
    'NORMALIZATIONS': ('.effective', 'NORMALIZATIONS'),
    'EffectiveLoss': ('.effective', 'EffectiveLoss'),
    'centroid_sum': ('.effective', 'centroid_sum'),
    'effective_loss': ('.effective', 'effective_loss'),
    'effective_loss_gradient': ('.effective', 'effective_loss_gradient'),
    'effective_loss_reference': ('.effective', 'effective_loss_reference'),
    'simulate_effective': ('.effective', 'simulate_effective'),
    'spread': ('.effective', 'spread'),
    'energy': ('.energy', 'energy'),
    'energy_and_forces': ('.energy', 'energy_and_forces'),
    'forces': ('.energy', 'forces'),
    'STRUCTURES': ('.metrics', 'STRUCTURES'),
    'best_circularity': ('.metrics', 'best_circularity'),
    'circularity': ('.metrics', 'circularity'),
    'classify_structure': ('.metrics', 'classify_structure'),
    'grid_defects': ('.metrics', 'grid_defects'),
    'line_ratio': ('.metrics', 'line_ratio'),
    'fourier_plane_share': ('.metrics', 'fourier_plane_share'),
    'pair_sum_accuracy': ('.metrics', 'pair_sum_accuracy'),
    'structure_metrics': ('.metrics', 'structure_metrics'),
    'constraint_matrix': ('.parallelograms', 'constraint_matrix'),
    'label_constraints': ('.parallelograms', 'label_constraints'),
    'parallelograms': ('.parallelograms', 'parallelograms'),
    'force_terms': ('.law_terms', 'force_terms'),
    'unit_term_forces': ('.law_terms', 'unit_term_forces'),
    'term_names': ('.law_terms', 'term_names'),
    'PairEnergy': ('.pair_energy', 'PairEnergy'),
    'PairTerm': ('.pair_energy', 'PairTerm'),
    'cosine_alignment': ('.pair_laws', 'cosine_alignment'),
    'fast_exp': ('.pair_functions', 'fast_exp'),
    'gaussian_clustering': ('.pair_laws', 'gaussian_clustering'),
    'ALIGNMENT_FORMS': ('.params', 'ALIGNMENT_FORMS'),
    'ALIGNMENTS': ('.params', 'ALIGNMENTS'),
    'WD_TARGETS': ('.params', 'WD_TARGETS'),
    'ForceParams': ('.params', 'ForceParams'),
    'PRESETS': ('.presets', 'PRESETS'),
    'Preset': ('.presets', 'Preset'),
    'preset': ('.presets', 'preset'),
    'preset_names': ('.presets', 'preset_names'),
    'energy_reference': ('.reference', 'energy_reference'),
    'forces_reference': ('.reference', 'forces_reference'),
    'MAX_GROWTH': ('.simulate', 'MAX_GROWTH'),
    'MAX_STEPS': ('.core.limits', 'MAX_STEPS'),
    'MinimizeResult': ('.simulate', 'MinimizeResult'),
    'NonFiniteStateError': ('.simulate', 'NonFiniteStateError'),
    'RunawayError': ('.simulate', 'RunawayError'),
    'minimize': ('.simulate', 'minimize'),
    'simulate': ('.simulate', 'simulate'),
    'SweepTable': ('.sweep', 'SweepTable'),
    'sweep': ('.sweep', 'sweep'),
    'SCHEMA_VERSION': ('.trajectory', 'SCHEMA_VERSION'),
    'Trajectory': ('.trajectory', 'Trajectory'),
    'TrajectoryFormatError': ('.trajectory', 'TrajectoryFormatError'),
}

__all__ = list(_EXPORTS)  # the one export list: _EXPORTS above

__version__ = "0.1.0"


__getattr__, __dir__ = _attach(__name__, _EXPORTS)
