"""Memory estimates of the work done on a run's signals (issue 69), from its shapes, before it starts.

Each ``*_bytes`` function returns the bytes the work holds at its peak beyond the run's own arrays
(:attr:`particles.Trajectory.nbytes`), which a server already holds; :func:`total_bytes` adds them (and
the reader's buffers) for a process that reads the run first, as the command line does. The estimates are
sums of the arrays the work allocates, each with a factor measured once; ``benchmarks/memory_estimates.py``
compares them with measured peaks on runs of ten shapes the factors were not measured on
(``docs/figures/explore/memory_estimates.json``). The ODE fit's estimate is
:func:`fitting.ode.memory.fit_bytes`, the force fit's :func:`fitting.forcefit.memory.force_fit_bytes`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from particles.core.limits import MIB, load_bytes

from .fourier import SPECTRUM_BLOCK_BYTES

__all__ = ["total_bytes", "signals_bytes", "summary_bytes", "stages_bytes", "BASE"]

#: bytes any of these requests needs beyond its arrays (small temporaries, the thinned series sent to a
#: page, plans of the FFT)
BASE = 6 * MIB


def total_bytes(traj: Any, work: int) -> int:
    """The peak of a process that reads the run and then does ``work`` bytes of work on it: the larger of
    the reading's peak and the arrays plus the work."""
    held = traj.nbytes
    return max(load_bytes(held), held + int(work))


def _signal_shape(traj: Any) -> tuple[int, int, bool]:
    """(rows, columns, stored) of the run's Fourier signals: the stored series, or one row a snapshot."""
    p = traj.embeddings.shape[1]
    K = (p - 1) // 2
    if traj.signals is not None:
        return traj.signals.shape[0], K, True
    return traj.embeddings.shape[0], K, False


def signals_bytes(traj: Any) -> int:
    """Bytes of the run's Fourier signals when they must be computed from its snapshots
    (:func:`fitting.fourier_signals` works through blocks of
    :data:`fitting.signals.fourier.SPECTRUM_BLOCK_BYTES`); a stored series of |F_k| costs nothing, one of
    another power a copy."""
    rows, K, stored = _signal_shape(traj)
    if stored:  # used as they are, or raised to another power (a copy)
        return 0 if int(traj.meta.get("signal_power", 1)) == 1 else 8 * rows * K
    return 16 * rows * (K + 1) + 2 * SPECTRUM_BLOCK_BYTES + 2 * MIB


def summary_bytes(traj: Any) -> int:
    """The explorer's summary of a run (signals, key frequencies, planes, thinned series)."""
    return signals_bytes(traj) + BASE


def stages_bytes(traj: Any) -> int:
    """:func:`fitting.stages` of a run: smoothed copies of every signal column and the network's curves."""
    rows, K, _ = _signal_shape(traj)
    curves = sum(np.asarray(v).nbytes for _, v in traj.curves.values())
    return summary_bytes(traj) + int(2.8 * 8 * rows * K) + 4 * curves
