"""The polynomial degree chosen from the data: ``library="auto"``.

:class:`AutoDegree` stands for the polynomial libraries of degree 1 to
``max_degree``; an estimator given it (``ODEModel(library="auto")`` or
``library=AutoDegree(4)``) fits each the data support and keeps one (:func:`choose_degree`),
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
    max_degree : int >= 1, optional
        The highest degree tried. ``fit`` refuses one whose library has
        more terms than the data have samples. None (the default, and
        ``library="auto"``): :data:`MAX_AUTO_DEGREE`, or the highest degree
        below it whose library the data support.
    include_bias : bool
        Libraries with the constant column.
    """

    def __init__(self, max_degree: int | None = None, include_bias: bool = True):
        self.max_degree = check_int(max_degree, "max_degree", 1, 50, allow_none=True)
        self.include_bias = check_bool(include_bias, "include_bias")

    def top_degree(self, K: int, rows: int) -> int:
        """The highest degree tried on K variables and ``rows`` samples:
        ``max_degree`` (refused when its library has more terms than
        ``rows``), or by default the highest up to :data:`MAX_AUTO_DEGREE`
        that ``rows`` support."""
        if self.max_degree is not None:
            need = PolynomialLibrary(self.max_degree, self.include_bias).n_features(K)
            if need > rows:
                raise ValueError(f"max_degree = {self.max_degree} of library='auto' needs {need} terms per equation "
                                 f"on {K} variables, more than the {rows} samples the data give; give a max_degree "
                                 "whose library the data can support, or more samples")
            return self.max_degree
        top = 0
        for d in range(1, MAX_AUTO_DEGREE + 1):
            if PolynomialLibrary(d, self.include_bias).n_features(K) > rows:
                break
            top = d
        if top == 0:
            raise ValueError(f"library='auto': even the linear library has more terms than the {rows} samples the data "
                             f"give on {K} variables; give more samples")
        return top

    def candidates(self, K: int, rows: int) -> list[PolynomialLibrary]:
        """The libraries tried, lowest degree first (:meth:`top_degree`)."""
        return [PolynomialLibrary(d, self.include_bias) for d in range(1, self.top_degree(K, rows) + 1)]

    def n_features(self, K: int) -> int:
        """The columns of the largest library it may try (what sizes a fit's work)."""
        return PolynomialLibrary(self.max_degree or MAX_AUTO_DEGREE, self.include_bias).n_features(K)

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
