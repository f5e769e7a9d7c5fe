import numpy as np
import pytest

from particles import modular_addition


@pytest.fixture(scope="session")
def train17():
    return modular_addition(17).split(0.8, seed=0)[0]


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
