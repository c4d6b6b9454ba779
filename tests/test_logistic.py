"""The logistic model: sigmoid, log-likelihood, gradient and Hessian (chapters 1-4)."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

from blrlib import add_intercept, gradient, hessian, log_likelihood, log_posterior, log_sigmoid, logit, sigmoid
from _helpers import central_difference, make_logistic_data


def test_sigmoid_symmetry_and_derivative(rng):
    a = rng.normal(scale=5, size=200)
    assert_allclose(sigmoid(-a), 1 - sigmoid(a), rtol=0, atol=1e-15)
    h = 1e-5
    assert_allclose((sigmoid(a + h) - sigmoid(a - h)) / (2 * h), sigmoid(a) * (1 - sigmoid(a)), atol=1e-10)


def test_logit_inverts_sigmoid(rng):
    a = rng.uniform(-30, 10, size=100)  # above ~15, 1 - sigma(a) has too few digits
    assert_allclose(logit(sigmoid(a)), a, rtol=1e-9, atol=1e-9)
    assert logit(0.0) == -np.inf and logit(1.0) == np.inf


@pytest.mark.parametrize("a", [-1e4, -800.0, -40.0, 0.0, 40.0, 800.0, 1e4])
def test_log_sigmoid_finite_and_accurate_at_extremes(a):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = log_sigmoid(np.array([a]))[0]
        s = sigmoid(np.array([a]))[0]
    assert np.isfinite(value)
    # log sigma(a) = -log(1 + e^{-a}) = min(a, 0) - log1p(e^{-|a|})
    assert_allclose(value, min(a, 0.0) - np.log1p(np.exp(-abs(a))), rtol=1e-15, atol=0)
    assert 0.0 <= s <= 1.0


def test_log_likelihood_equals_bernoulli_sum(rng):
    X, y = make_logistic_data(rng)
    w = rng.standard_normal(X.shape[1])
    p = sigmoid(X @ w)
    assert_allclose(log_likelihood(w, X, y), np.sum(y * np.log(p) + (1 - y) * np.log1p(-p)), rtol=1e-12)


def test_log_likelihood_stable_for_huge_margins():
    X = np.array([[1.0, 500.0], [1.0, -500.0]])
    y = np.array([0.0, 1.0])
    w = np.array([0.0, 10.0])  # margins -5000 on both points: confidently wrong
    assert_allclose(log_likelihood(w, X, y), -10000.0, rtol=1e-15)


def test_log_posterior_adds_gaussian_prior(rng):
    X, y = make_logistic_data(rng)
    w = rng.standard_normal(X.shape[1])
    assert_allclose(log_posterior(w, X, y, 2.5), log_likelihood(w, X, y) - 1.25 * w @ w, rtol=1e-14)
    lam = np.array([0.0, 2.0, 5.0])  # the prior N(0, diag(lam)^-1), flat on the intercept
    expected = log_likelihood(w, X, y) - 0.5 * (2.0 * w[1] ** 2 + 5.0 * w[2] ** 2)
    assert_allclose(log_posterior(w, X, y, lam), expected, rtol=1e-14)
    assert_allclose(log_posterior(w, X, y, np.full(3, 2.5)), log_posterior(w, X, y, 2.5), rtol=1e-15)


PRIORS = [0.0, 3.0, (0.0, 1.0, 3.0, 10.0)]  # scalar lambda, or one precision per weight


@pytest.mark.parametrize("scale", [0.0, 0.1, 1.0, 10.0, 100.0])
@pytest.mark.parametrize("prior_precision", PRIORS)
def test_gradient_matches_central_differences(rng, scale, prior_precision):
    """Several weight scales: at scale 100 most margins are in the hundreds."""
    X, y = make_logistic_data(rng, n=80, d=4)
    w = scale * rng.standard_normal(4)
    h = 1e-6 * max(1.0, scale)
    fd = central_difference(lambda v: log_posterior(v, X, y, prior_precision), w, h)
    g = gradient(w, X, y, prior_precision)
    assert_allclose(g, fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(g).max()))


@pytest.mark.parametrize("scale", [0.0, 0.1, 1.0, 10.0, 100.0])
@pytest.mark.parametrize("prior_precision", PRIORS)
def test_hessian_matches_central_differences_of_gradient(rng, scale, prior_precision):
    X, y = make_logistic_data(rng, n=80, d=4)
    w = scale * rng.standard_normal(4)
    h = 1e-6 * max(1.0, scale)
    H = hessian(w, X, y, prior_precision)
    fd = np.column_stack([
        (gradient(w + h * e, X, y, prior_precision) - gradient(w - h * e, X, y, prior_precision)) / (2 * h)
        for e in np.eye(4)
    ])
    assert_allclose(H, fd, rtol=1e-5, atol=1e-7 * max(1.0, np.abs(H).max()))
    assert_allclose(H, H.T, rtol=0, atol=0)


def test_hessian_equals_dense_formula_and_is_negative_definite(rng):
    X, y = make_logistic_data(rng, n=50, d=5)
    w = rng.standard_normal(5)
    p = sigmoid(X @ w)
    dense = -X.T @ np.diag(p * (1 - p)) @ X - 0.7 * np.eye(5)
    H = hessian(w, X, y, 0.7)
    assert_allclose(H, dense, rtol=1e-12, atol=1e-13)
    assert np.linalg.eigvalsh(H).max() < 0


def test_add_intercept_puts_ones_first():
    X = np.arange(6.0).reshape(3, 2)
    Xi = add_intercept(X)
    assert Xi.shape == (3, 3)
    assert_allclose(Xi[:, 0], 1.0)
    assert_allclose(Xi[:, 1:], X)
