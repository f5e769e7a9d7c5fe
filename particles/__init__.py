"""Numba-compiled N-body model of embeddings under clustering and alignment forces."""
from .datasets import PairDataset, addition, modular_addition
from .energy import energy, energy_and_forces, forces
from .metrics import (best_circularity, circularity, classify_structure, grid_defects, pair_sum_accuracy,
                      structure_metrics)
from .params import ForceParams
from .simulate import MinimizeResult, NonFiniteStateError, minimize, simulate
from .trajectory import Trajectory, TrajectoryFormatError
