"""Hypothesis strategies for the particle model (needs ``hypothesis``).

Every strategy draws plain parameters and a seed, then builds NumPy data
from that seed, so failures shrink to small systems and replay exactly.

- :func:`datasets` -- modular or plain addition, any p in a range
- :func:`splits` -- a seeded training split of a dataset
- :func:`embeddings` -- positions (p, d)
- :func:`force_params` -- built-in laws (:class:`~particles.ForceParams`)
- :func:`pair_energies` -- custom laws (:class:`~particles.PairEnergy`)
- :func:`systems` -- ``(law, x, train)`` triples, ready for the checks
- :func:`effective_systems` -- ``(E, train)`` for the effective loss
- :func:`trajectories` -- :class:`~particles.Trajectory` objects

The custom laws :func:`pair_energies` draws are built from the example
functions :func:`soft_well`, :func:`soft_bump` (distance terms),
:func:`cubic_pull` and :func:`exp_push` (cosine terms), all with
:class:`SoftParams` and complex-step derivatives.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("particles.testing.strategies needs hypothesis: pip install '.[test]' in the repository root"
                      ) from exc

from ..datasets import PairDataset, addition, modular_addition
from ..pair_energy import PairEnergy, PairTerm
from ..pair_laws import cosine_alignment, gaussian_clustering
from ..params import ForceParams
from ..trajectory import Trajectory

__all__ = ["datasets", "splits", "embeddings", "force_params", "pair_energies", "laws", "systems",
           "effective_systems", "trajectories", "SoftParams", "soft_well", "soft_bump", "cubic_pull", "exp_push",
           "DISTANCE_KINDS", "COSINE_KINDS"]

DATASET_KINDS = ("modular", "addition")


@st.composite
def datasets(draw, p=(3, 13), kinds=DATASET_KINDS) -> PairDataset:
    """A full dataset: modular addition (unordered pairs) or plain addition,
    p drawn from the closed range ``p``."""
    kind = draw(st.sampled_from(list(kinds)))
    p = draw(st.integers(*p))
    return modular_addition(p) if kind == "modular" else addition(p)


@st.composite
def splits(draw, dataset=None, fraction=(0.3, 1.0)) -> PairDataset:
    """A seeded training split (at least one pair) of a drawn dataset."""
    ds = draw(dataset if dataset is not None else datasets())
    frac = draw(st.floats(*fraction))
    seed = draw(st.integers(0, 2**31 - 1))
    train = ds.split(frac, seed=seed)[0]
    if len(train) == 0:
        train = ds.subset(np.arange(1))
    return train


@st.composite
def embeddings(draw, p: int, d=(1, 4), scale=(0.3, 2.0)) -> np.ndarray:
    """Gaussian positions (p, d) with a drawn scale; ``d`` an int or a range."""
    d = d if isinstance(d, int) else draw(st.integers(*d))
    s = draw(st.floats(*scale))
    seed = draw(st.integers(0, 2**31 - 1))
    return np.random.default_rng(seed).normal(scale=s, size=(p, d))


@st.composite
def force_params(draw, alignment=True, wd=True, gradient_only=False) -> ForceParams:
    """A built-in law. ``alignment=False`` draws lam = 0; ``wd=False``
    no particle decay (the classifier variant's wd, a softening of the
    alignment, is still drawn); ``gradient_only`` excludes the polar
    alignment."""
    positive = st.floats(0.2, 3.0)
    strength = st.floats(0.0, 3.0)
    target = draw(st.sampled_from(["particles", "classifier"]))
    if target == "particles":
        variant = dict(wd=draw(st.floats(0.0, 0.5)) if wd else 0.0)
    else:
        variant = dict(wd=draw(st.floats(0.0, 2.0)), bias_scale=draw(st.floats(0.1, 3.0)),
                       particle_wd=draw(st.floats(0.0, 1.0)) if wd else 0.0)
    return ForceParams(
        k_a=draw(strength), sig_a=draw(positive), k_r=draw(strength), sig_r=draw(positive),
        lam=draw(st.floats(0.1, 3.0)) if alignment else 0.0, sig_t=draw(st.floats(0.2, 1.0)),
        eps=draw(st.floats(0.3, 1.5)),
        alignment="gradient" if gradient_only else draw(st.sampled_from(["gradient", "polar"])),
        alignment_form=draw(st.sampled_from(["cosine", "axial"])), wd_target=target, **variant)


class SoftParams(NamedTuple):
    """Strength ``k`` and scale ``s`` of the example terms."""

    k: float
    s: float


def soft_well(r2, prm):
    """-k / (1 + r^2 / s^2): a rational well (no exp)."""
    return -prm.k / (1.0 + r2 / (prm.s * prm.s))


def soft_bump(r2, prm):
    """k / (1 + r^2 / s^2)^2: a rational bump."""
    return prm.k / (1.0 + r2 / (prm.s * prm.s)) ** 2


def cubic_pull(c, prm):
    """-k c^3: pulls a class's directions together."""
    return -prm.k * c * c * c


def exp_push(c, prm):
    """k exp(c / s): pushes classes apart in angle."""
    return prm.k * np.exp(c / prm.s)


#: distance terms :func:`pair_energies` draws from
DISTANCE_KINDS = ("gaussian", "gaussian-complex-step", "rational")
#: cosine terms :func:`pair_energies` draws from
COSINE_KINDS = ("alignment", "alignment-complex-step", "cubic")


@st.composite
def pair_energies(draw, alignment=True, wd=True, kinds=DISTANCE_KINDS, cosine_kinds=COSINE_KINDS
                  ) -> PairEnergy:
    """A custom law: the built-in Gaussians rewritten as a PairEnergy (with
    :func:`~particles.fast_exp` and written-out derivatives, or with np.exp
    and complex-step derivatives), or rational wells and bumps; with
    ``alignment`` sometimes a cosine term (the built-in alignment, cosine or
    axial, or a cubic pull with an exponential push); ``wd=False`` gives
    wd = 0. Each set of functions compiles once per process (a few
    seconds), so narrow ``kinds`` and ``cosine_kinds`` in quick suites."""
    positive = st.floats(0.2, 3.0)
    strength = st.floats(0.0, 3.0)
    wd = draw(st.floats(0.0, 0.5)) if wd else 0.0
    kind = draw(st.sampled_from(list(kinds)))
    if kind == "rational":
        law = PairEnergy(distance=PairTerm(same=soft_well, other=soft_bump,
                                           params=SoftParams(draw(strength), draw(positive))), wd=wd,
                         name="rational")
    else:
        law = gaussian_clustering(draw(strength), draw(positive), draw(strength), draw(positive), wd=wd,
                                  fast=kind == "gaussian")
    if alignment and cosine_kinds and draw(st.booleans()):
        eps = draw(st.floats(0.3, 1.5))
        cosine = draw(st.sampled_from(list(cosine_kinds)))
        if cosine != "cubic":
            extra = cosine_alignment(draw(st.floats(0.1, 3.0)), draw(st.floats(0.2, 1.0)), eps,
                                     axial=draw(st.booleans()), fast=cosine == "alignment")
        else:
            extra = PairEnergy(cosine=PairTerm(same=cubic_pull, other=exp_push, variable="cosine",
                                               params=SoftParams(draw(strength), draw(st.floats(0.5, 2.0)))),
                               eps=eps, name="cubic")
        law = law + extra
    return law


def laws(alignment=True, wd=True, gradient_only=False, kinds=DISTANCE_KINDS, cosine_kinds=COSINE_KINDS):
    """A built-in or a custom law (see :func:`force_params`,
    :func:`pair_energies`)."""
    return st.one_of(force_params(alignment=alignment, wd=wd, gradient_only=gradient_only),
                     pair_energies(alignment=alignment, wd=wd, kinds=kinds, cosine_kinds=cosine_kinds))


@st.composite
def systems(draw, law=None, d=(1, 4), p=(3, 11), kinds=DATASET_KINDS, fraction=(0.3, 1.0)):
    """``(law, x, train)``: a law (default :func:`laws`), a training split
    of a drawn dataset and positions; d >= 2 whenever the law aligns."""
    law = draw(law if law is not None else laws())
    train = draw(splits(datasets(p=p, kinds=kinds), fraction=fraction))
    lo, hi = (d, d) if isinstance(d, int) else d
    if law.effective_lam > 0:
        lo = max(lo, 2)
        hi = max(hi, lo)
    x = draw(embeddings(train.p, d=(lo, hi)))
    return law, x, train


@st.composite
def effective_systems(draw, p=(4, 12), d=(1, 3), offset=(-3.0, 3.0)):
    """``(E, train)`` for :func:`particles.simulate_effective`: an addition
    dataset (all pairs, so parallelograms exist) and an embedding shifted by
    a drawn offset."""
    train = addition(draw(st.integers(*p)))
    E = draw(embeddings(train.p, d=d, scale=(0.5, 2.0))) + draw(st.floats(*offset))
    return E, train


@st.composite
def trajectories(draw, p=(2, 9), d=(1, 4), snapshots=(1, 6)) -> Trajectory:
    """A :class:`~particles.Trajectory` with increasing snapshot steps, an
    energy series and a small ``meta``."""
    n = draw(st.integers(*snapshots))
    p = draw(st.integers(*p))
    d = draw(st.integers(*d))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    steps = np.cumsum(rng.integers(1, 50, size=n)) - 1
    return Trajectory(rng.standard_normal((n, p, d)), steps, scalars={"energy": rng.standard_normal(n)},
                      meta={"source": "particles.testing", "seed": seed})
