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

The fit works on targets of unit RMS whatever the units of G, so that R^2,
the ranges and the verdict do not depend on them (``normalize`` sets the
strengths' units only); its R^2 is judged against the null (the law on
relabelled tokens) with a stated margin, and ranges at a bound of the
search box are reported as not identified (:mod:`fitting.forcefit.verdict`).

The subpackage, one job per module: ``data`` (runs and their checks),
``basis`` (the law's unit term forces), ``solve`` (least squares, bounded
steps, scores, the terms' shares), ``search`` (the range search, the
design), ``null`` (relabelled tokens), ``windows`` (strengths per window of
steps), ``intervals`` (the bootstrap), ``verdict`` (above, at or below
chance; identified ranges; the sentences), ``progress`` (the callback and
its stages), ``estimator`` (:class:`ForceLawFit`), ``figures``
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
