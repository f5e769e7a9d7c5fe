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


def pytest_collection_modifyitems(session, config, items):
    """Run the whole-API bad-input battery last: its good calls then reuse
    the kernels the other tests have compiled in this process instead of
    compiling them again (about 20 s on a cold cache)."""
    last = [item for item in items if item.nodeid.startswith("tests/test_bad_input.py")]
    if last:
        items[:] = [item for item in items if item not in last] + last
