"""Freed memory kept between fits (fitting.ode.heap)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

GLIBC = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc") if hasattr(os, "confstr") else False

CHILD = """
import json, resource, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from fitting import ODEModel
from fitting.ode.heap import heap_state
t = np.arange(0, 20, 0.002)  # 10 000 samples: blocks above glibc's mmap threshold too
x = np.column_stack([np.sin(t), np.cos(t), np.sin(2 * t)]) + 0.01 * np.random.default_rng(0).normal(size=(len(t), 3))
coef = ODEModel(library=2).fit(x, t).coef_
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    ODEModel(library=2).fit(x, t)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5
print(json.dumps({**heap_state(), "faults": faults, "coef": coef.tolist()}))
"""


def child(env: dict) -> dict:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("MALLOC_") and k not in ("EMBDYN_KEEP_HEAP", "GLIBC_TUNABLES")}
    out = subprocess.run([sys.executable, "-c", CHILD, root], env={**environ, **env}, capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_fits_after_the_first_fault_in_next_to_no_pages_and_the_user_can_say_no():
    kept = child({})
    assert kept["applied"] and kept["reason"] == "set"
    plain = child({"EMBDYN_KEEP_HEAP": "0"})
    assert not plain["applied"] and plain["reason"] == "EMBDYN_KEEP_HEAP=0"
    # each fit used to fault its temporaries in afresh (hundreds of pages); with the thresholds kept, none
    assert kept["faults"] < 20 < plain["faults"]
    assert kept["coef"] == plain["coef"]  # only where memory comes from changes, not a bit of the result
    own = child({"MALLOC_TRIM_THRESHOLD_": "131072"})
    assert not own["applied"] and own["reason"] == "MALLOC_TRIM_THRESHOLD_ is set"
    tunable = child({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"})
    assert not tunable["applied"] and tunable["reason"] == "GLIBC_TUNABLES sets glibc.malloc"
    assert not child({"EMBDYN_KEEP_HEAP": "off"})["applied"]


def test_a_failure_on_the_way_is_recorded_not_raised(monkeypatch):
    from fitting.ode import heap

    def broken():
        raise OSError("no libc here")

    monkeypatch.setattr(heap, "_STATE", {"decided": False, "applied": False, "reason": "no fit yet"})
    monkeypatch.setattr(heap, "_apply", broken)
    assert heap.keep_freed_memory() is False
    assert heap.heap_state() == {"applied": False, "reason": "OSError: no libc here"}
