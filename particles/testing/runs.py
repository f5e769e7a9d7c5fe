"""Known-law data for force-law fits: a particle run under a law, with the
law's forces at its snapshots (plus noise), and an example custom law.

What the recovery tests, the coverage study
(docs/examples/force_fit_coverage.py) and the benchmark fit
(:class:`fitting.ForceLawFit`) to check that a fit finds the law it is given.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..datasets import PairDataset, modular_addition
from ..energy import forces
from ..pair_energy import PairEnergy, PairTerm
from ..simulate import simulate

__all__ = ["law_run", "Well", "example_custom_law"]


def law_run(law, *, p: int = 13, d: int = 2, seed: int = 0, steps: int = 1500, every: int = 30, dt: float = 0.01,
            noise: float = 0.0) -> tuple[np.ndarray, np.ndarray, PairDataset]:
    """Snapshots X (T, p, d) of a particle run under ``law`` from N(0, 1)
    (an 80 % split of modular addition mod p, both from ``seed``), the law's
    forces G at them, plus Gaussian noise of ``noise`` times their RMS, and
    the training set."""
    rng = np.random.default_rng(seed)
    train = modular_addition(p).split(0.8, seed=rng)[0]
    X = simulate(rng.normal(size=(p, d)), train, law, steps=steps, dt=dt, record_every=every).embeddings
    G = np.stack([forces(x, train, law) for x in X])
    if noise:
        G = G + noise * np.sqrt(np.mean(G ** 2)) * rng.normal(size=G.shape)
    return X, G, train


class Well(NamedTuple):
    """Parameters of :func:`example_custom_law`'s distance term."""

    depth: float
    width: float


def _well(r2, prm):
    return -prm.depth * np.exp(-r2 / (2 * prm.width ** 2))


def _soft(r2, prm):
    return prm.depth / (1.0 + r2 / prm.width ** 2)


def _axial(c, q):
    return -q[0] * c * c


def _apart(c, q):
    return q[0] * np.exp((c - 1) / q[1] ** 2)


def example_custom_law(depth: float = 2.0, width: float = 1.7, angle: float = 0.4, eps: float = 0.8,
                       wd: float = 0.1) -> PairEnergy:
    """A custom law unlike the built-in one: a Gaussian well within a class,
    a Lorentzian bump between classes (``Well(depth, width)``), an axial
    cosine term (params ``(1, angle)``) and decay ``wd``. The functions are
    module-level, so every law made here shares its compiled kernels."""
    return PairEnergy(distance=PairTerm(_well, _soft, params=Well(depth, width)),
                      cosine=PairTerm(_axial, _apart, variable="cosine", params=(1.0, angle)), eps=eps, wd=wd)
