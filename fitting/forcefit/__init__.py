"""Which force law explains training: regress observed embedding forces onto
a law's pair-force terms (docs/force_fit.md).

Given snapshots X_t (T, N, d) of an embedding and the observed forces G_t at
the same steps (minus the loss gradient, or the optimiser's update), fit

    G_t  ~  sum_k c_k F_k(X_t; theta)

with the terms F_k of a law (:mod:`particles.law_terms`), strengths c >= 0
by non-negative least squares and the range parameters theta by a bounded
search on the profile (for each theta the best c): a coarse grid per range,
then a trust-region polish (``scipy.optimize.least_squares``) on a spread
subset of the snapshots; the strengths are then refitted on every snapshot.

Intervals are percentile bootstrap intervals: snapshots (or runs, when
several are given) resampled with replacement, each replicate refitted on
the model linearised at the fit (strengths and log-ranges together, the
strengths kept >= 0), so the ranges' uncertainty enters the strengths'
intervals; the replicates' spread is scaled by sqrt(n / (n - P)) for n
units and P parameters (the HC1 small-sample correction).

The subpackage, one job per module: ``data`` (runs and their checks),
``basis`` (the law's unit term forces), ``solve`` (least squares, bounded
steps, scores), ``search`` (the range search, the design), ``intervals``
(the bootstrap), ``estimator`` (:class:`ForceLawFit`), ``figures``
(:func:`plot_force_shares`) and ``cli`` (``embdyn force-fit``).
"""

# public names and the modules that define them, imported on first use (so that
# `embdyn --help`, which imports the command modules, stays cheap)
from particles.core.lazy import attach as _attach

_EXPORTS = {
    'ForceLawFit': ('.estimator', 'ForceLawFit'),
    'NORMALIZE': ('.estimator', 'NORMALIZE'),
    'ForceRun': ('.data', 'ForceRun'),
    'TARGETS': ('.data', 'TARGETS'),
    'as_force_runs': ('.data', 'as_force_runs'),
}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = _attach(__name__, _EXPORTS)
