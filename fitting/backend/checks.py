"""Argument checks shared by the stacked trainers (grid, batched seeds,
network sweep), built on :mod:`particles.validation`: an error naming the
parameter, before any work."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from particles.validation import check_float, check_int

__all__ = ["check_seeds", "check_weight_decays", "check_int_at_least"]


def check_seeds(seeds: Iterable[int]) -> list[int]:
    """``seeds`` as a list of distinct ints >= 0 (at least one)."""
    if isinstance(seeds, (str, bytes, dict)) or not hasattr(seeds, "__iter__") or np.ndim(seeds) > 1:
        raise ValueError(f"seeds must be a non-empty list of ints >= 0, got {seeds!r}")
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must be a non-empty list of ints >= 0, got an empty one")
    for s in seeds:
        check_int(s, "seeds", 0)
    if len(set(int(s) for s in seeds)) != len(seeds):
        raise ValueError("seeds must be distinct")
    return [int(s) for s in seeds]


def check_weight_decays(weight_decays: Iterable[float]) -> list[float]:
    """``weight_decays`` as a list of distinct finite floats >= 0 (at least one)."""
    if isinstance(weight_decays, (str, bytes, dict)) or not hasattr(weight_decays, "__iter__"):
        raise ValueError(f"weight_decays must be a non-empty list of numbers >= 0, got {weight_decays!r}")
    out = []
    for w in weight_decays:
        out.append(check_float(w, "weight_decays", 0))
    if not out:
        raise ValueError("weight_decays must be a non-empty list of numbers >= 0, got an empty one")
    if len(set(out)) != len(out):
        raise ValueError("weight_decays must be distinct")
    return out


def check_int_at_least(name: str, value: Any, low: int) -> int:
    """``value`` as an int >= ``low``, or an error naming ``name``."""
    return check_int(value, name, low)
