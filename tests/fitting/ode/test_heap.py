"""Freed memory kept between fits (fitting.ode.heap)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

GLIBC = platform.libc_ver()[0] == "glibc"

CHILD = """
import json, resource, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from fitting import ODEModel
from fitting.ode.heap import heap_state
t = np.arange(0, 20, 0.01)
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
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "EMBDYN_KEEP_HEAP"}
    out = subprocess.run([sys.executable, "-c", CHILD, root], env={**environ, **env}, capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


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
