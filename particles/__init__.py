"""Numba-compiled N-body model of token embeddings under clustering and
alignment forces between pair sums (SPEC section 1), its structure metrics,
and the trajectory file format shared by the whole distribution.

Public API::

    modular_addition, addition, PairDataset          datasets and splits
    ForceParams, energy, forces, energy_and_forces   the model
    PairEnergy, PairTerm, fast_exp                   your own force law (compiled)
    simulate, minimize, warmup                       integrators
    Trajectory                                       the shared file format
    circularity, best_circularity, pair_sum_accuracy,
    grid_defects, classify_structure, structure_metrics
    preset, Preset, sweep, SweepTable                presets and sweeps
    parallelograms, constraint_matrix, EffectiveLoss,
    effective_loss, simulate_effective, centroid_sum, spread
                                                     effective-loss dynamics (SPEC 2)
"""

from ._warmup import warmup
from .datasets import PairDataset, addition, make_rng, modular_addition, permutation_group
from .effective import (NORMALIZATIONS, EffectiveLoss, centroid_sum, effective_loss, effective_loss_gradient,
                        effective_loss_reference, simulate_effective, spread)
from .energy import energy, energy_and_forces, forces
from .metrics import (STRUCTURES, best_circularity, circularity, classify_structure, grid_defects, line_ratio,
                      pair_sum_accuracy, structure_metrics)
from .parallelograms import constraint_matrix, label_constraints, parallelograms
from .pair_energy import PairEnergy, PairTerm, cosine_alignment, fast_exp, gaussian_clustering
from .params import ALIGNMENT_FORMS, ALIGNMENTS, WD_TARGETS, ForceParams
from .presets import PRESETS, Preset, preset, preset_names
from .reference import energy_reference, forces_reference
from .simulate import MAX_GROWTH, MinimizeResult, NonFiniteStateError, RunawayError, minimize, simulate
from .sweep import SweepTable, sweep
from .trajectory import SCHEMA_VERSION, Trajectory, TrajectoryFormatError

__all__ = [
    "ALIGNMENTS", "ALIGNMENT_FORMS", "WD_TARGETS", "ForceParams", "MinimizeResult", "NonFiniteStateError", "RunawayError", "MAX_GROWTH", "PRESETS",
    "PairDataset", "Preset", "SCHEMA_VERSION", "STRUCTURES", "SweepTable", "Trajectory", "TrajectoryFormatError",
    "addition", "best_circularity", "circularity", "classify_structure", "energy", "energy_and_forces",
    "energy_reference", "forces", "forces_reference", "grid_defects", "line_ratio", "make_rng", "minimize", "modular_addition",
    "pair_sum_accuracy", "permutation_group", "preset", "preset_names", "simulate", "structure_metrics", "sweep", "warmup",
    "NORMALIZATIONS", "EffectiveLoss", "centroid_sum", "effective_loss", "effective_loss_gradient",
    "effective_loss_reference", "simulate_effective", "spread", "constraint_matrix", "label_constraints",
    "parallelograms", "PairEnergy", "PairTerm", "fast_exp", "gaussian_clustering", "cosine_alignment",
]

__version__ = "0.1.0"
