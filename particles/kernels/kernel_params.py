"""The typed parameter record the compiled kernels take.

:class:`KernelParams` holds the force law as the forces use it (the
classifier variant already folded into ``lam``, ``eps`` and ``wd``; see
``ForceParams.kernel_params``). Numba compiles a NamedTuple into a struct, so
kernels read ``prm.sig_r`` instead of unpacking a vector by index.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["KernelParams"]


class KernelParams(NamedTuple):
    """Force-law parameters of the compiled kernels.

    Attributes
    ----------
    k_a, sig_a : float
        Attraction strength and range (same class).
    k_r, sig_r : float
        Repulsion strength and range (different classes).
    lam : float
        Alignment weight as the forces use it (0: off).
    sig_t : float
        Angular range of the alignment repulsion.
    eps : float
        Softening of the norm in the cosine, as the forces use it.
    wd : float
        Weight decay on the particles as the forces use it, force -wd x
        (``ForceParams.effective_wd``): the user's ``wd`` with the default
        ``wd_target="particles"``, ``particle_wd`` in the classifier variant
        (whose ``wd`` is folded into ``eps`` and ``lam``). Like ``lam`` and
        ``eps``, every field is the value the forces use.
    polar : bool
        Torque-driven alignment force instead of the gradient.
    axial : bool
        Alignment energy on c**2 instead of c.
    user : ndarray of float64
        The parameters of a custom pair energy's terms
        (:class:`particles.PairEnergy`), one flat array (the parallel
        kernels pass arrays to their threads, not tuples); empty for the
        built-in force law.
    """

    k_a: float
    sig_a: float
    k_r: float
    sig_r: float
    lam: float
    sig_t: float
    eps: float
    wd: float
    polar: bool
    axial: bool
    user: np.ndarray = np.zeros(0)
