"""Which kernels evaluate a pair law: the direct pair loop or the Gram path.

The direct kernels (:mod:`particles.kernels.forces`, :mod:`.terms`) sweep the
pair sums coordinate by coordinate, a cost that grows with the dimension d;
the Gram path (:mod:`particles.kernels.gram`) reads every pair's inner
products from the token Gram matrix, a pair loop whose cost does not depend
on d. Both give the same forces to rounding (docs/particles.md, "Forces at
any dimension"); ``path="auto"`` takes the Gram path from
:data:`GRAM_MIN_DIMENSION` on, the crossover measured by
``benchmarks/bench_particles.py --dims``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core.validation import describe

__all__ = ["PATHS", "GRAM_MIN_DIMENSION", "GRAM_MAX_OFFSET", "check_path", "use_gram", "offset_ratio"]

#: the accepted values of every ``path`` parameter
PATHS = ("auto", "direct", "gram")
#: ``path="auto"`` takes the Gram path for d >= this (the crossover of the two paths' time per
#: force call, measured at p = 41, 59 and 113 in benchmarks/bench_particles.py --dims)
GRAM_MIN_DIMENSION = 6


def check_path(path: Any) -> str:
    """``path`` checked: one of :data:`PATHS`, else a TypeError/ValueError naming it."""
    if not isinstance(path, str):
        raise TypeError(f"path must be one of {PATHS}, got {describe(path)}")
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, got {path!r}")
    return path


#: ``path="auto"`` stays on the direct path when the embedding's centroid lies further than this many
#: times its spread from the origin: the Gram path's squared distances then cancel against |x|^2
#: (a relative force error of about 1e-16 times the square of the ratio: 1e-12 at 100, 5e-8 at 1e4)
GRAM_MAX_OFFSET = 100.0


def offset_ratio(X: np.ndarray) -> float:
    """The largest |centroid| / RMS spread about it over the snapshots of X
    (..., p, d): how far from the origin the embedding sits, in its own size
    (compiled, :func:`.kernels.offset.offset_ratio_kernel`)."""
    from .kernels.offset import offset_ratio_kernel

    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2 or X.size == 0:
        return 0.0
    return float(offset_ratio_kernel(np.ascontiguousarray(X.reshape((-1,) + X.shape[-2:]))))


def use_gram(path: str, d: int, *, cell_lists: bool = False, pairs: int | None = None, tokens: int | None = None,
             X: np.ndarray | None = None) -> bool:
    """Whether a call at dimension ``d`` runs on the Gram path.

    ``"gram"``: always (refused by name with the cell-list cut-off, which sums
    on the direct path). ``"direct"``: never. ``"auto"``: from d =
    GRAM_MIN_DIMENSION on, unless the Gram path's p x p work per row block
    would exceed its pair loop (``tokens`` squared times the row blocks above
    half of ``pairs`` squared: many tokens, few pairs) or the states ``X``
    sit further from the origin than GRAM_MAX_OFFSET times their spread."""
    path = check_path(path)
    if cell_lists:
        if path == "gram":
            raise ValueError("path='gram' cannot run the cell-list cut-off (repulsion_tol, d = 2), which sums on the "
                             "direct path: give path='direct' or 'auto', or repulsion_tol=None")
        return False
    if path != "auto":
        return path == "gram"
    if d < GRAM_MIN_DIMENSION:
        return False
    if pairs is not None and tokens is not None:
        from .kernels.forces import blocks_for

        if blocks_for(pairs) * tokens * tokens > pairs * pairs // 2:
            return False
    return X is None or offset_ratio(X) <= GRAM_MAX_OFFSET
