"""Timing and output helpers shared by the benchmark scripts."""

from __future__ import annotations

import json
import time

import numpy as np

from particles.core.io import atomic_write_text


def write_json(path, obj) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    text = json.dumps(obj, indent=1)
    atomic_write_text(path, text)


def best_time(fn, repeats: int, min_time: float = 0.2) -> float:
    """Best per-call time of ``fn`` over ``repeats`` rounds of >= min_time each."""
    best = np.inf
    for _ in range(repeats):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / calls)
    return best
