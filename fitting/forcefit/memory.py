"""Memory estimate of a force-law fit (issue 69), from its runs' shapes, before it starts (the factors
measured by ``benchmarks/memory_estimates.py``; see :mod:`fitting.signals.memory`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from particles.core.limits import MIB

__all__ = ["force_fit_bytes"]

def force_fit_bytes(runs: Any, n_terms: int = 5, n_ranges: int = 4) -> int:
    """:class:`fitting.ForceLawFit` on a run or a list of runs: the unit forces of every term on every
    snapshot (snapshots x p x d values per term and per searched range) and their design matrix."""
    runs = runs if isinstance(runs, (list, tuple)) else [runs]
    values = sum(int(np.prod(run.embeddings.shape)) for run in runs)
    return int(FORCE_PER_VALUE * 8 * values * (n_terms + n_ranges) + FORCE_FIXED)


#: measured factors of :func:`force_fit_bytes` (benchmarks/memory_estimates.py)
FORCE_PER_VALUE = 13.0
FORCE_FIXED = 22 * MIB
