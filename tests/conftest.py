import numpy as np
import pytest

from blrlib import _gp_lowrank, datasets


@pytest.fixture
def rng():
    """A seeded generator: every test sees the same numbers on every run."""
    return np.random.default_rng(20261125)


# --- data shared by the GP tests (tests/test_gp_*.py) -------------------------------------------

@pytest.fixture(scope="module")
def moons():
    return datasets.two_moons(80, noise=0.25, seed=4)


@pytest.fixture(scope="module")
def X_test():
    return np.random.default_rng(7).uniform(-1.5, 2.5, size=(40, 2))


@pytest.fixture(scope="module")
def big_moons():
    """Large enough (n >= 500) for the mode searches to use conjugate gradients and EP its low-rank phase."""
    X, y = datasets.two_moons(600, noise=0.3, seed=2)
    assert len(y) >= _gp_lowrank.CG_MIN_N
    return X, y
