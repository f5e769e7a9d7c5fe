"""Argument checks shared by the stacked trainers (grid, batched seeds,
network sweep): a ValueError naming the parameter, before any work."""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

__all__ = ["check_seeds", "check_weight_decays", "check_int_at_least"]


def check_seeds(seeds: Iterable[int]) -> list[int]:
    """``seeds`` as a list of distinct ints >= 0 (at least one)."""
    if isinstance(seeds, (str, bytes, dict)) or not hasattr(seeds, "__iter__") or np.ndim(seeds) > 1:
        raise ValueError(f"seeds must be a non-empty list of ints >= 0, got {seeds!r}")
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must be a non-empty list of ints >= 0, got an empty one")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0:
            raise ValueError(f"seeds must be ints >= 0, got {s!r}")
    if len(set(int(s) for s in seeds)) != len(seeds):
        raise ValueError("seeds must be distinct")
    return [int(s) for s in seeds]


def check_weight_decays(weight_decays: Iterable[float]) -> list[float]:
    """``weight_decays`` as a list of distinct finite floats >= 0 (at least one)."""
    if isinstance(weight_decays, (str, bytes, dict)) or not hasattr(weight_decays, "__iter__"):
        raise ValueError(f"weight_decays must be a non-empty list of numbers >= 0, got {weight_decays!r}")
    out = []
    for w in weight_decays:
        if isinstance(w, bool) or not isinstance(w, (int, float, np.integer, np.floating)) or not math.isfinite(w) \
                or w < 0:
            raise ValueError(f"weight_decays must be finite numbers >= 0, got {w!r}")
        out.append(float(w))
    if not out:
        raise ValueError("weight_decays must be a non-empty list of numbers >= 0, got an empty one")
    if len(set(out)) != len(out):
        raise ValueError("weight_decays must be distinct")
    return out


def check_int_at_least(name: str, value: Any, low: int) -> int:
    """``value`` as an int >= ``low``, or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)
