import os
import subprocess
import sys

import numpy as np
import pytest

from particles import modular_addition


@pytest.fixture(scope="session")
def train17():
    return modular_addition(17).split(0.8, seed=0)[0]


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


#: test files that never call a compiled kernel: they run first, while the
#: second core fills Numba's on-disk cache (see pytest_sessionstart)
KERNEL_FREE = ("test_validation.py", "test_datasets.py", "test_fitting_signals.py", "test_fitting_ode.py",
               "test_interop.py", "test_plot.py", "test_metrics.py", "test_backend_configs.py")


def pytest_sessionstart(session):
    """On a cold cache (a fresh clone) most of the suite's time is Numba
    compiling the built-in kernels. A second process compiles them into the
    on-disk cache (``particles.warmup()``) on the other core while the
    kernel-free tests run; the tests then load them from the cache. Set
    EMBDYN_TEST_WARMUP=0 to turn it off. It changes no result: cached and
    freshly compiled kernels are the same code."""
    if os.environ.get("EMBDYN_TEST_WARMUP", "1") == "0" or (os.cpu_count() or 1) < 2:
        return
    session.config._embdyn_warmup = subprocess.Popen(
        [sys.executable, "-c", "import particles; particles.warmup()"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pytest_sessionfinish(session, exitstatus):
    proc = getattr(session.config, "_embdyn_warmup", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def pytest_collection_modifyitems(session, config, items):
    """Kernel-free files first (see KERNEL_FREE), the whole-API bad-input
    battery last: its good calls then reuse the kernels the other tests have
    compiled in this process instead of compiling them again."""
    def rank(item):
        name = item.nodeid.split("::")[0].rsplit("/", 1)[-1]
        return 0 if name in KERNEL_FREE else 2 if name == "test_bad_input.py" else 1
    items[:] = sorted(items, key=rank)  # sorted is stable: the order within each group is kept
