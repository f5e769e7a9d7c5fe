"""Effective theory of representation learning (SPEC section 2): exact
degeneracy of parallelogram constraints, the critical training fraction,
Hessian grokking rates, RQI, predicted accuracy and learning phases."""

from particles.parallelograms import constraint_matrix, parallelograms

from .linalg import (degeneracy, grokking_rate, hessian_spectrum, laplacian_spectrum, nullity, predicted_steps,
                     rank)
from ._warmup import warmup
from .montecarlo import (GrokkingRateCurve, StructureProbability, grokking_rate_curve, unique_structure_probability,
                         wilson_interval)

__all__ = ["warmup", 
    "GrokkingRateCurve", "StructureProbability", "constraint_matrix", "degeneracy", "grokking_rate",
    "grokking_rate_curve", "hessian_spectrum", "laplacian_spectrum", "nullity", "parallelograms", "predicted_steps",
    "rank", "unique_structure_probability", "wilson_interval",
]
from .metrics import (PHASES, classify_phase, normalized_embedding, predicted_accuracy, realised_parallelograms,
                      rqi, rqi_series)

__all__ += ["PHASES", "classify_phase", "normalized_embedding", "predicted_accuracy", "realised_parallelograms",
            "rqi", "rqi_series"]
