import os

import numpy as np
import pytest

import _system
from blrlib import _gp_lowrank, datasets


# --- system tools (tests/_system.py): skipped loudly where missing, required under CI ----------

@pytest.fixture(scope="session")
def bwrap():
    """Checks that run notebooks in the grading sandbox need bubblewrap."""
    _system.require("bwrap")


def pytest_terminal_summary(terminalreporter):
    """Record the checks skipped for a missing system tool; `make test` prints them once."""
    if hasattr(terminalreporter.config, "workerinput"):  # a pytest-xdist worker: the controller
        return
    found = _system.records(terminalreporter.stats.get("skipped", []))
    _system.record(found)
    if found and os.environ.get("BOOK_SYSTEM_SUMMARY") != "make":  # make test: once, at its end
        terminalreporter.write(_system.summary(found), yellow=True, bold=True)


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
