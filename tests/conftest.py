import numpy as np
import pytest

from particles import modular_addition


@pytest.fixture(scope="session")
def train17():
    return modular_addition(17).split(0.8, seed=0)[0]


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def interrupted_frame():
    """``run(live, steps, interrupt)``: a live run's ``advance(steps)`` in a thread, ``interrupt()`` called once
    it is 5 steps in; returns the steps the frame took (the thread joined, failing if it did not end)."""
    import threading
    import time

    def run(live, steps, interrupt):
        done = []
        thread = threading.Thread(target=lambda: done.append(live.advance(steps)))
        thread.start()
        while live.step < 5 and thread.is_alive():
            time.sleep(0.001)
        interrupt()
        thread.join(60)
        assert not thread.is_alive(), "the frame did not end"
        return done[0]

    return run


#: test files that compile the same kernels, each group run by one xdist worker (the README's command gives
#: ``--dist loadgroup``): in two workers, each compiled them on a cold cache (the force-law fit's term kernels about
#: 20 s, a custom law's kernels, which Numba cannot cache on disk, a few seconds in every process)
COMPILE_GROUPS = {
    "force-fit": ("tests/fitting/forcefit/", "tests/fitting/explore/test_handover.py",
                  "tests/particles/test_law_terms.py"),
    "custom-laws": ("tests/particles/test_invariants.py", "tests/particles/test_pair_energy.py",
                    "tests/particles/test_testing.py"),
}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(session, config, items):
    """Put the files of each of COMPILE_GROUPS in one xdist group, and run
    the whole-API bad-input battery last: its good calls then reuse the
    kernels the other tests have compiled in this process instead of
    compiling them again (about 20 s on a cold cache)."""
    for item in items:
        for group, paths in COMPILE_GROUPS.items():
            if item.nodeid.startswith(paths):
                item.add_marker(pytest.mark.xdist_group(group))
    last = [item for item in items if item.nodeid.startswith("tests/test_bad_input.py")]
    if last:
        items[:] = [item for item in items if item not in last] + last
