"""Pay the compilation cost of the effective-theory kernels up front."""

from __future__ import annotations

import time

__all__ = ["warmup"]


def warmup() -> float:
    """Compile (or load from Numba's on-disk cache) the effective theory's
    kernels (Monte Carlo nullities, grokking rates) on a tiny problem.

    Returns
    -------
    float
        Seconds taken.
    """
    import numpy as np

    from .montecarlo import grokking_rate_curve, unique_structure_probability

    start = time.perf_counter()
    unique_structure_probability(4, samples=2, seed=0, bootstrap=2)
    grokking_rate_curve(4, np.array([1.0]), samples=1, seed=0)
    return time.perf_counter() - start
