"""Predictions of a GP classifier (chapters 9 and 11; GPML Alg. 3.2 and 3.6) against scikit-learn
and dense Gaussian conditioning."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from blrlib import (
    GPCPrediction,
    expected_sigmoid,
    gpc_ep,
    gpc_laplace,
    gpc_predict,
    rbf_kernel,
)

VARIANCES = [1.0, 10.0, 100.0, 1000.0]
LENGTHSCALES = [0.3, 1.0, 3.0]


@pytest.mark.parametrize("variance", VARIANCES)
@pytest.mark.parametrize("lengthscale", LENGTHSCALES)
def test_laplace_latent_moments_match_sklearn(moons, X_test, variance, lengthscale):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X, variance=variance, lengthscale=lengthscale), y)
    pred = gpc_predict(fit, rbf_kernel(X_test, X, variance=variance, lengthscale=lengthscale),
                       np.full(len(X_test), variance))
    kernel = ConstantKernel(variance, "fixed") * RBF(lengthscale, "fixed")
    mean, var = GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(X, y).latent_mean_and_variance(X_test)
    assert_allclose(pred.mean, mean, rtol=1e-8, atol=1e-8)
    assert_allclose(pred.var, np.maximum(var, 0), rtol=1e-8, atol=1e-8)


def test_laplace_latent_variance_equals_dense_formula(moons, X_test):
    """var = k** - k*^T (K + W^-1)^-1 k* (chapter 9, eq-gpc-latent-moments), from a dense solve."""
    X, y = moons
    K = rbf_kernel(X, variance=2.0, lengthscale=0.7)
    Ks = rbf_kernel(X_test, X, variance=2.0, lengthscale=0.7)
    fit = gpc_laplace(K, y)
    pred = gpc_predict(fit, Ks, np.full(len(X_test), 2.0))
    W = fit.W_sqrt**2
    dense = 2.0 - np.einsum("ij,ji->i", Ks, np.linalg.solve(K + np.diag(1 / W), Ks.T))
    assert_allclose(pred.var, dense, rtol=1e-9, atol=1e-10)
    assert_allclose(pred.mean, Ks @ (y - expit(fit.f_hat)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variance, lengthscale", [(1.0, 1.0), (30.0, 0.5), (300.0, 2.0)])
def test_ep_latent_moments_equal_gaussian_conditioning(moons, X_test, variance, lengthscale):
    """Alg. 3.6 is the conditional of f* given f, averaged over q(f) = N(mu, Sigma):
    mean k*^T K^-1 mu and variance k** - k*^T K^-1 k* + k*^T K^-1 Sigma K^-1 k*, i.e.
    k** - k*^T (K + S~^-1)^-1 k*; all from dense solves with the sites."""
    X, y = moons
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
    Ks = rbf_kernel(X_test, X, variance=variance, lengthscale=lengthscale)
    ep = gpc_ep(K, y)
    pred = gpc_predict(ep, Ks, np.full(len(X_test), variance))
    C = K + np.diag(1.0 / ep.tau_tilde)  # K + S~^-1
    mu = K @ np.linalg.solve(C, ep.nu_tilde / ep.tau_tilde)  # the EP posterior mean
    assert_allclose(mu, ep.mean, rtol=1e-8, atol=1e-8 * np.max(np.abs(mu)))
    assert_allclose(pred.mean, Ks @ np.linalg.solve(C, ep.nu_tilde / ep.tau_tilde), rtol=1e-8,
                    atol=1e-8 * np.max(np.abs(mu)))
    assert_allclose(pred.var, variance - np.einsum("ij,ji->i", Ks, np.linalg.solve(C, Ks.T)), rtol=1e-8,
                    atol=1e-10 * variance)


@pytest.mark.parametrize("method", ["probit", "quadrature", "mc"])
@pytest.mark.parametrize("inference", ["laplace", "ep"])
def test_probabilities_use_expected_sigmoid(moons, X_test, method, inference):
    X, y = moons
    K = rbf_kernel(X, variance=50.0)
    fit = gpc_laplace(K, y) if inference == "laplace" else gpc_ep(K, y)
    pred = gpc_predict(fit, rbf_kernel(X_test, X, variance=50.0), np.full(len(X_test), 50.0), method=method)
    assert_allclose(pred.prob, expected_sigmoid(pred.mean, pred.var, method=method), rtol=0, atol=1e-15)
    assert np.all((pred.prob >= 0) & (pred.prob <= 1)) and pred.method == method


def test_default_method_is_probit(moons, X_test):
    """The contract's default for gpc_predict (GPClassifier's own default is quadrature)."""
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X, variance=5.0), y)
    Ks, kss = rbf_kernel(X_test, X, variance=5.0), np.full(len(X_test), 5.0)
    pred = gpc_predict(fit, Ks, kss)
    assert pred.method == "probit"
    assert_allclose(pred.prob, gpc_predict(fit, Ks, kss, method="probit").prob, rtol=0, atol=0)


def test_plugin_ignores_the_variance(moons, X_test):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X, variance=50.0), y)
    Ks = rbf_kernel(X_test, X, variance=50.0)
    plug = gpc_predict(fit, Ks, np.full(len(X_test), 50.0), method="plugin")
    quad = gpc_predict(fit, Ks, np.full(len(X_test), 50.0), method="quadrature")
    assert_allclose(plug.prob, expit(plug.mean), rtol=0, atol=0)
    # averaging over the latent uncertainty pulls probabilities towards 1/2
    assert np.all(np.abs(quad.prob - 0.5) <= np.abs(plug.prob - 0.5) + 1e-15)


def test_quadrature_and_probit_are_close(moons, X_test):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X, variance=5.0), y)
    Ks, kss = rbf_kernel(X_test, X, variance=5.0), np.full(len(X_test), 5.0)
    quad = gpc_predict(fit, Ks, kss, method="quadrature").prob
    assert_allclose(gpc_predict(fit, Ks, kss, method="probit").prob, quad, rtol=0, atol=0.02)


def test_far_from_the_data_the_prior_returns(moons):
    X, y = moons
    K = rbf_kernel(X, variance=7.0)
    far = np.array([[40.0, 40.0]])
    for fit in (gpc_laplace(K, y), gpc_ep(K, y)):
        pred = gpc_predict(fit, rbf_kernel(far, X, variance=7.0), np.array([7.0]), method="quadrature")
        assert_allclose([pred.mean[0], pred.var[0], pred.prob[0]], [0.0, 7.0, 0.5], rtol=0, atol=1e-12)


def test_repr_and_frozen(moons):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X), y)
    pred = gpc_predict(fit, rbf_kernel(X[:3], X), np.ones(3))
    assert isinstance(pred, GPCPrediction)
    assert repr(pred).startswith("GPCPrediction(prob=[") and "method='probit'" in repr(pred)
    with pytest.raises(AttributeError):
        pred.prob = None


K3 = rbf_kernel(np.array([[0.0], [1.0], [2.0]]))
FIT3 = gpc_laplace(K3, np.array([0, 1, 1]))


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: gpc_predict("fit", K3, np.ones(3)), TypeError, r"fit must be a GPCLaplace .* or a GPCEP .* got str"),
        (lambda: gpc_predict(FIT3, np.ones((2, 4)), np.ones(2)), ValueError,
         r"K_star must have shape \(m, 3\) .* got shape \(2, 4\)"),
        (lambda: gpc_predict(FIT3, np.ones(3), np.ones(3)), ValueError, r"K_star must be 2-D"),
        (lambda: gpc_predict(FIT3, np.ones((2, 3)), np.ones(3)), ValueError, r"k_star_star must have length 2, got length 3"),
        (lambda: gpc_predict(FIT3, np.ones((2, 3)), -np.ones(2)), ValueError, r"k_star_star must be >= 0"),
        (lambda: gpc_predict(FIT3, np.full((2, 3), np.inf), np.ones(2)), ValueError, r"K_star must contain only finite"),
        (lambda: gpc_predict(FIT3, np.ones((2, 3)), np.ones(2), method="laplace"), ValueError,
         r"method must be one of \('probit', 'quadrature', 'mc', 'plugin'\), got 'laplace'"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
