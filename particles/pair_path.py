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

from .core.validation import describe

__all__ = ["PATHS", "GRAM_MIN_DIMENSION", "check_path", "use_gram"]

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


def use_gram(path: str, d: int, *, cell_lists: bool = False) -> bool:
    """Whether a call at dimension ``d`` runs on the Gram path: ``"gram"``
    always (refused with the cell-list cut-off, which is the direct path's,
    by name), ``"direct"`` never, ``"auto"`` for d >= GRAM_MIN_DIMENSION
    without cell lists."""
    path = check_path(path)
    if cell_lists:
        if path == "gram":
            raise ValueError("path='gram' cannot run the cell-list cut-off (repulsion_tol, d = 2), which sums on the "
                             "direct path: give path='direct' or 'auto', or repulsion_tol=None")
        return False
    return path == "gram" or (path == "auto" and d >= GRAM_MIN_DIMENSION)
