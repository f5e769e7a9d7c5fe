"""Timing and output helpers shared by the benchmark scripts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import contextmanager

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


@contextmanager
def busy_neighbour(active: bool = True):
    """A second process spinning on one core while the block runs."""
    if not active:
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        yield
    finally:
        proc.kill()
        proc.wait()
