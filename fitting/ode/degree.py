"""The polynomial degree chosen from the data: ``library="auto"``.

:class:`AutoDegree` stands for the polynomial libraries of degree 1 to
``max_degree``; an estimator given it (``ODEModel(library="auto")`` or
``library=AutoDegree(4)``) fits each and keeps one (:func:`choose_degree`),
with the evidence in ``fit_info_["degree"]``.

The criterion works on one trajectory and has no units. Each candidate's
fitted model is simulated against the data as the fit's verdict does
(:mod:`.verdict`): from the data's own states over segments of a common
length, the shortest predictability horizon among the candidates, so every
degree is judged on the same samples. Its error is e_d = 1 - R^2 of those
simulations. The chosen degree is the lowest whose error is within
:data:`ERROR_RATIO` times the best candidate's plus :data:`ERROR_FLOOR`: a
degree below the system's misses terms and its simulations drift (its error
is many times the best), while degrees above it add terms the sparse
regression mostly prunes and simulate no better, so the lowest of those
that are as good is the one to keep (a higher degree can only fit the noise
or the solver's error better). A candidate whose simulation leaves the
data's range, or that has fewer regression rows than terms, is not chosen.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from particles.core.validation import check_bool, check_int

from .library import PolynomialLibrary

__all__ = ["AutoDegree", "choose_degree", "MAX_AUTO_DEGREE", "ERROR_RATIO", "ERROR_FLOOR"]

#: the largest degree ``library="auto"`` tries by default
MAX_AUTO_DEGREE = 5
#: a degree is as good as the best when its simulation error is at most this many times the best's ...
ERROR_RATIO = 1.5
#: ... plus this (R^2 differences below it are rounding and the solver's tolerance, not the model)
ERROR_FLOOR = 1e-6


class AutoDegree:
    """Polynomial libraries of degree 1 to ``max_degree``, one to be chosen
    by the fit (see the module).

    Parameters
    ----------
    max_degree : int >= 1
        The highest degree tried (default :data:`MAX_AUTO_DEGREE`). ``fit``
        refuses one whose library has more terms than the data have
        regression rows.
    include_bias : bool
        Libraries with the constant column.
    """

    def __init__(self, max_degree: int = MAX_AUTO_DEGREE, include_bias: bool = True):
        self.max_degree = check_int(max_degree, "max_degree", 1, 50)
        self.include_bias = check_bool(include_bias, "include_bias")

    def candidates(self, K: int) -> list[PolynomialLibrary]:
        """The libraries tried, lowest degree first."""
        return [PolynomialLibrary(d, self.include_bias) for d in range(1, self.max_degree + 1)]

    def n_features(self, K: int) -> int:
        """The columns of the largest candidate (what the data must support)."""
        return PolynomialLibrary(self.max_degree, self.include_bias).n_features(K)

    def check_rows(self, K: int, rows: int) -> None:
        """Refuse a ``max_degree`` whose library has more terms than ``rows``."""
        need = self.n_features(K)
        if need > rows:
            raise ValueError(f"max_degree = {self.max_degree} of library='auto' needs {need} terms per equation on "
                             f"{K} variables, more than the {rows} regression rows the data give; give a max_degree "
                             f"whose library the data can support, or more samples")

    def __repr__(self) -> str:
        return f"AutoDegree(max_degree={self.max_degree}, include_bias={self.include_bias})"


def choose_degree(errors: list[float], degrees: list[int], usable: list[bool]) -> tuple[int, dict[str, Any]]:
    """The index of the chosen candidate and the evidence.

    Parameters
    ----------
    errors : list of float
        Each candidate's simulation error 1 - R^2 on the common segments
        (inf for a candidate whose simulation left the data's range).
    degrees : list of int
    usable : list of bool
        Whether each candidate could be chosen at all.

    Returns
    -------
    (int, dict)
        The chosen index; ``{"chosen", "degrees", "errors", "best",
        "tolerance", "rule"}``.
    """
    finite = [e for e, u in zip(errors, usable) if u and np.isfinite(e)]
    best = min(finite) if finite else float("inf")
    tolerance = ERROR_RATIO * best + ERROR_FLOOR if np.isfinite(best) else float("inf")
    chosen = None
    for i, (e, u) in enumerate(zip(errors, usable)):
        if u and np.isfinite(e) and e <= tolerance:
            chosen = i
            break
    if chosen is None:  # none usable: the highest degree the data support
        chosen = max((i for i, u in enumerate(usable) if u), default=len(degrees) - 1)
    evidence = {"chosen": degrees[chosen], "degrees": list(degrees), "errors": [float(e) for e in errors],
                "best": float(best), "tolerance": float(tolerance),
                "rule": f"the lowest degree whose simulation error (1 - R^2 on common segments) is at most "
                        f"{ERROR_RATIO:g} x the best + {ERROR_FLOOR:g}"}
    return chosen, evidence
