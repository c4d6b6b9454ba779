"""Helpers shared by the library tests (imported as `from _helpers import ...`)."""

import numpy as np


def central_difference(f, x, h):
    """Central finite-difference gradient of a scalar function f at x."""
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def make_logistic_data(rng, n=60, d=3, scale=1.0):
    """Features with an intercept column and labels drawn from a logistic model."""
    from blrlib import add_intercept, sigmoid

    X = add_intercept(rng.standard_normal((n, d - 1)))
    w = scale * rng.standard_normal(d)
    y = (rng.random(n) < sigmoid(X @ w)).astype(float)
    return X, y
