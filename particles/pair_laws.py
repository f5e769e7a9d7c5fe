"""The built-in law written as custom energies (:class:`~particles.PairEnergy`):
:func:`gaussian_clustering` and :func:`cosine_alignment`. The benchmark and
the tests compare them with the built-in kernels; the force-law fit builds
one when the two alignment halves get different strengths."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .pair_energy import PairEnergy, PairTerm
from .pair_functions import fast_exp
from .params import ForceParams

__all__ = ["gaussian_clustering", "cosine_alignment", "GaussianParams", "AlignmentParams"]


class GaussianParams(NamedTuple):
    k_a: float
    sig_a: float
    k_r: float
    sig_r: float


def _attraction(r2, prm):
    return -(prm.k_a * np.exp(-r2 * (0.5 / (prm.sig_a * prm.sig_a))))


def _attraction_derivative(r2, prm):
    inv = 0.5 / (prm.sig_a * prm.sig_a)
    return inv * (prm.k_a * np.exp(-r2 * inv))


def _repulsion(r2, prm):
    return fast_exp(-r2 * (0.5 / (prm.sig_r * prm.sig_r))) * prm.k_r


def _repulsion_derivative(r2, prm):
    inv = 0.5 / (prm.sig_r * prm.sig_r)
    return -(inv * (fast_exp(-r2 * inv) * prm.k_r))


def _repulsion_numpy(r2, prm):
    return prm.k_r * np.exp(-r2 * (0.5 / (prm.sig_r * prm.sig_r)))


def gaussian_clustering(k_a: float = 3.0, sig_a: float = 3.0, k_r: float = 1.0, sig_r: float = 1.0,
                        wd: float = 0.1, *, fast: bool = True) -> PairEnergy:
    """The built-in clustering law (``ForceParams(k_a, sig_a, k_r, sig_r,
    wd=wd)``, lam = 0) as a custom energy: -k_a exp(-r^2 / 2 sig_a^2) within
    a class, k_r exp(-r^2 / 2 sig_r^2) between classes.

    ``fast=True`` computes the repulsion with :func:`fast_exp`, as the
    built-in kernel does (derivative supplied); ``fast=False`` uses ``np.exp``
    everywhere with complex-step derivatives.
    """
    checked = ForceParams(k_a=k_a, sig_a=sig_a, k_r=k_r, sig_r=sig_r, wd=wd)  # the same ranges and messages
    if not isinstance(fast, bool):
        raise TypeError(f"fast must be a bool, got {type(fast).__name__}")
    params = GaussianParams(checked.k_a, checked.sig_a, checked.k_r, checked.sig_r)
    if fast:
        term = PairTerm(same=_attraction, other=_repulsion, params=params, same_derivative=_attraction_derivative,
                        other_derivative=_repulsion_derivative)
    else:
        term = PairTerm(same=_attraction, other=_repulsion_numpy, params=params)
    return PairEnergy(distance=term, wd=wd, name="gaussian_clustering")


class AlignmentParams(NamedTuple):
    lam: float
    sig_t: float


def _align_same(c, prm):
    return -prm.lam * c


def _align_other(c, prm):
    return prm.lam * np.exp((c - 1.0) / (prm.sig_t * prm.sig_t))


def _align_same_axial(c, prm):
    return -prm.lam * c * c


def _align_other_axial(c, prm):
    return prm.lam * np.exp((c * c - 1.0) / (prm.sig_t * prm.sig_t))


def _align_same_derivative(c, prm):
    return -prm.lam + 0.0 * c


def _align_other_fast(c, prm):
    # the same expression as in the derivative, so compiled code computes the
    # exp once for both
    return prm.lam * fast_exp((c - 1.0) * (1.0 / (prm.sig_t * prm.sig_t)))


def _align_other_fast_derivative(c, prm):
    inv = 1.0 / (prm.sig_t * prm.sig_t)
    return prm.lam * fast_exp((c - 1.0) * inv) * inv


def _align_same_axial_derivative(c, prm):
    return -2.0 * prm.lam * c


def _align_other_axial_fast(c, prm):
    return prm.lam * fast_exp((c * c - 1.0) * (1.0 / (prm.sig_t * prm.sig_t)))


def _align_other_axial_fast_derivative(c, prm):
    inv = 1.0 / (prm.sig_t * prm.sig_t)
    return prm.lam * fast_exp((c * c - 1.0) * inv) * 2.0 * c * inv


def cosine_alignment(lam: float = 1.0, sig_t: float = 0.2, eps: float = 1.0, *, axial: bool = False,
                     fast: bool = True) -> PairEnergy:
    """The built-in alignment energy (gradient form) as a custom energy:
    lam times -g(c) within a class and exp(-(1 - g(c)) / sig_t^2) between
    classes, g(c) = c (or c^2 with ``axial=True``). Add it to
    :func:`gaussian_clustering` for the full law.

    ``fast=True`` uses :func:`fast_exp` with the derivatives written out;
    ``fast=False`` uses ``np.exp`` with complex-step derivatives.
    """
    checked = ForceParams(lam=lam, sig_t=sig_t, eps=eps)  # the same ranges and messages
    for label, flag in (("axial", axial), ("fast", fast)):
        if not isinstance(flag, bool):
            raise TypeError(f"{label} must be a bool, got {type(flag).__name__}")
    params = AlignmentParams(checked.lam, checked.sig_t)
    if fast and axial:
        term = PairTerm(same=_align_same_axial, other=_align_other_axial_fast, variable="cosine", params=params,
                        same_derivative=_align_same_axial_derivative,
                        other_derivative=_align_other_axial_fast_derivative)
    elif fast:
        term = PairTerm(same=_align_same, other=_align_other_fast, variable="cosine", params=params,
                        same_derivative=_align_same_derivative, other_derivative=_align_other_fast_derivative)
    else:
        same, other = (_align_same_axial, _align_other_axial) if axial else (_align_same, _align_other)
        term = PairTerm(same=same, other=other, variable="cosine", params=params)
    return PairEnergy(cosine=term, eps=eps, name="cosine_alignment")
