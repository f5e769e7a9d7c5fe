"""The null of a force fit: the same law, ranges and gauge on randomly
relabelled tokens. Each relabelling permutes the token indices of the
training pairs (labels kept), so the law's form and the data's forces stay
and only the correspondence between the tokens' places and the task is
broken; what the law explains there is chance level."""

from __future__ import annotations

from typing import Any

import numpy as np

from particles.datasets import PairDataset

from .basis import Basis
from .data import ForceRun
from .search import design

__all__ = ["relabelled", "null_designs", "MAX_NULL"]

#: most relabellings of a null
MAX_NULL = 10_000


def relabelled(run: ForceRun, rng: np.random.Generator) -> ForceRun:
    """``run`` with its training pairs' tokens permuted at random."""
    train = run.train
    perm = rng.permutation(train.p)
    return ForceRun(run.X, run.G, PairDataset(perm[train.pairs], train.labels, train.p, train.name), run.steps,
                    run.last_step)


def null_designs(law: Any, groups: dict, ranges: tuple, theta: np.ndarray, runs: list[ForceRun], count: int,
                 seed: int, *, path: str, gauge: str | None, per_run: bool, progress: Any = None,
                 work: dict | None = None) -> list[np.ndarray]:
    """The design matrices (rows, K) of ``count`` relabellings, at the fitted
    ranges ``theta``, rows in the order of :func:`.search.design`; the
    calls of the term forces and the snapshots they evaluated are added to
    ``work`` (keys ``term_evaluations``, ``snapshot_evaluations``)."""
    rng = np.random.default_rng([seed, 0x6E756C6C])  # its own stream: the bootstrap's draws stay as they were
    out = []
    for _ in range(count):
        fake = [relabelled(run, rng) for run in runs]
        basis = Basis(law, groups, ranges, fake, path=path, progress=progress, gauge=gauge)
        out.append(design(basis, fake, theta, per_run)[0])
        if work is not None:
            work["term_evaluations"] = work.get("term_evaluations", 0) + basis.evaluations
            work["snapshot_evaluations"] = work.get("snapshot_evaluations", 0) + basis.snapshot_evaluations
    return out
