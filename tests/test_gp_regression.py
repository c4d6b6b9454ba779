"""Gaussian-process regression (chapter 8; GPML Alg. 2.1) against scikit-learn and dense formulas."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.stats import multivariate_normal
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from blrlib import GPRPosterior, GPRPrediction, gpr_posterior, gpr_predict, rbf_kernel


@pytest.fixture(scope="module")
def regression_data():
    rng = np.random.default_rng(31)
    X = rng.uniform(-3.0, 3.0, size=(40, 2))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(2.0 * X[:, 1]) + 0.1 * rng.standard_normal(40)
    X_test = rng.uniform(-4.0, 4.0, size=(30, 2))
    return X, y, X_test


def sklearn_fixed(X, y, variance, lengthscale, noise_variance):
    kernel = ConstantKernel(variance, "fixed") * RBF(lengthscale, "fixed")
    return GaussianProcessRegressor(kernel=kernel, alpha=noise_variance, optimizer=None).fit(X, y)


@pytest.mark.parametrize("variance", [0.1, 1.0, 30.0])
@pytest.mark.parametrize("lengthscale", [0.2, 1.0, 5.0])
@pytest.mark.parametrize("noise_variance", [1e-4, 0.01, 1.0])
def test_matches_sklearn(regression_data, variance, lengthscale, noise_variance):
    """Mean, noise-free latent variance and log marginal likelihood equal scikit-learn's."""
    X, y, X_test = regression_data
    fit = gpr_posterior(rbf_kernel(X, variance=variance, lengthscale=lengthscale), y, noise_variance)
    pred = gpr_predict(fit, rbf_kernel(X_test, X, variance=variance, lengthscale=lengthscale),
                       np.full(len(X_test), variance))
    sk = sklearn_fixed(X, y, variance, lengthscale, noise_variance)
    mean, sd = sk.predict(X_test, return_std=True)
    scale = np.max(np.abs(y))
    assert_allclose(pred.mean, mean, rtol=1e-9, atol=1e-9 * scale)
    assert_allclose(pred.var, sd**2, rtol=1e-8, atol=1e-10 * variance)
    assert_allclose(fit.log_marginal_likelihood, sk.log_marginal_likelihood_value_, rtol=1e-10, atol=1e-9)
    assert_allclose(fit.alpha, sk.alpha_, rtol=1e-8, atol=1e-10 * np.max(np.abs(sk.alpha_)))


def test_matches_gaussian_conditioning(regression_data):
    """The moments are those of the conditional Gaussian of f* given y (dense solves, chapter 8)."""
    X, y, X_test = regression_data
    K = rbf_kernel(X, variance=2.0, lengthscale=0.8)
    Ks = rbf_kernel(X_test, X, variance=2.0, lengthscale=0.8)
    Kss = rbf_kernel(X_test, variance=2.0, lengthscale=0.8)
    C = K + 0.05 * np.eye(len(y))
    mean = Ks @ np.linalg.solve(C, y)
    cov = Kss - Ks @ np.linalg.solve(C, Ks.T)
    pred = gpr_predict(gpr_posterior(K, y, 0.05), Ks, np.diag(Kss))
    assert_allclose(pred.mean, mean, rtol=1e-10, atol=1e-10)
    assert_allclose(pred.var, np.diag(cov), rtol=1e-9, atol=1e-12)
    lml = multivariate_normal(np.zeros(len(y)), C).logpdf(y)
    assert_allclose(gpr_posterior(K, y, 0.05).log_marginal_likelihood, lml, rtol=1e-12)


def test_noise_free_interpolates():
    X = np.array([[0.0], [1.0], [2.5], [4.0]])
    y = np.array([1.0, -1.0, 0.5, 2.0])
    fit = gpr_posterior(rbf_kernel(X), y, 0.0)
    pred = gpr_predict(fit, rbf_kernel(X, X), np.ones(4))
    assert_allclose(pred.mean, y, rtol=0, atol=1e-10)
    assert np.all(pred.var >= 0) and np.max(pred.var) < 1e-10
    # far from the data the prior returns: mean 0, variance k(x, x)
    far = gpr_predict(fit, rbf_kernel(np.array([[50.0]]), X, variance=3.0), np.array([3.0]))
    assert_allclose([far.mean[0], far.var[0]], [0.0, 3.0], rtol=0, atol=1e-12)


def test_noise_free_singular_kernel_is_refused():
    X = np.array([[0.0], [0.0], [1.0]])
    with pytest.raises(ValueError, match=r"not positive definite with noise_variance=0; use a noise_variance > 0"):
        gpr_posterior(rbf_kernel(X), np.array([1.0, 1.0, 0.0]), 0.0)
    # with noise the duplicated input is fine
    fit = gpr_posterior(rbf_kernel(X), np.array([1.0, 1.0, 0.0]), 0.1)
    assert np.isfinite(fit.log_marginal_likelihood)


def test_results_repr_and_frozen(regression_data):
    X, y, X_test = regression_data
    fit = gpr_posterior(rbf_kernel(X), y, 0.1)
    pred = gpr_predict(fit, rbf_kernel(X_test, X), np.ones(len(X_test)))
    assert isinstance(fit, GPRPosterior) and isinstance(pred, GPRPrediction)
    assert repr(fit).startswith("GPRPosterior(n=40, alpha=[") and "noise_variance=0.1)" in repr(fit)
    assert repr(pred).startswith("GPRPrediction(mean=[") and len(repr(pred)) < 200
    with pytest.raises(AttributeError):
        fit.alpha = None


K3 = rbf_kernel(np.array([[0.0], [1.0], [2.0]]))
FIT3 = gpr_posterior(K3, np.array([0.1, 0.2, 0.3]), 0.1)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: gpr_posterior(np.ones((3, 2)), np.ones(3), 0.1), ValueError, r"K must be square"),
        (lambda: gpr_posterior(K3, np.ones(2), 0.1), ValueError, r"K and y have different lengths: K has 3 rows"),
        (lambda: gpr_posterior(K3, np.array([0.0, np.nan, 1.0]), 0.1), ValueError, r"y must contain only finite"),
        (lambda: gpr_posterior(K3, np.ones((3, 1)), 0.1), ValueError, r"y must be 1-D"),
        (lambda: gpr_posterior(K3, np.ones(3), -0.1), ValueError, r"noise_variance must be >= 0, got -0.1"),
        (lambda: gpr_posterior(K3, np.ones(3), "a"), TypeError, r"noise_variance must be a real number, got str"),
        (lambda: gpr_predict("fit", K3, np.ones(3)), TypeError, r"fit must be a GPRPosterior .* got str"),
        (lambda: gpr_predict(FIT3, np.ones((2, 4)), np.ones(2)), ValueError,
         r"K_star must have shape \(m, 3\) .* got shape \(2, 4\)"),
        (lambda: gpr_predict(FIT3, np.ones((2, 3)), np.ones(3)), ValueError, r"k_star_star must have length 2"),
        (lambda: gpr_predict(FIT3, np.ones((2, 3)), -np.ones(2)), ValueError, r"k_star_star must be >= 0"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
