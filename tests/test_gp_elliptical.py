"""Elliptical slice sampling of the GP-classification posterior (chapter 11) against exact grid
posteriors, and EP and Laplace measured against its draws."""

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss
from numpy.testing import assert_allclose
from scipy.special import expit, log_expit

from blrlib import (
    GPCSamples,
    datasets,
    gpc_elliptical_slice,
    gpc_ep,
    gpc_laplace,
    gpc_predict,
    gpc_predict_samples,
    rbf_kernel,
)


def gauss_hermite_sigmoid(mean, var, n_nodes=80):
    """E[sigma(a)], a ~ N(mean, var), by Gauss-Hermite quadrature (independent of blrlib)."""
    t, w = hermegauss(n_nodes)
    return expit(np.asarray(mean)[..., None] + np.sqrt(var) * t) @ w / np.sqrt(2 * np.pi)


@pytest.fixture(scope="module")
def two_points():
    """Two latent values with correlated prior and labels 1, 0: the exact posterior on a 2-D grid."""
    X = np.array([[0.0], [1.0]])
    y = np.array([1, 0])
    K = rbf_kernel(X, variance=3.0, lengthscale=1.0)
    x_star = np.array([[0.4]])
    K_star = rbf_kernel(x_star, X, variance=3.0, lengthscale=1.0)
    grid = np.linspace(-12.0, 12.0, 481)
    F1, F2 = np.meshgrid(grid, grid, indexing="ij")
    F = np.stack([F1.ravel(), F2.ravel()], axis=1)
    K_inv = np.linalg.inv(K)
    log_post = log_expit(F[:, 0]) + log_expit(-F[:, 1]) - 0.5 * np.einsum("ij,jk,ik->i", F, K_inv, F)
    weight = np.exp(log_post - log_post.max())
    weight /= weight.sum()  # the trapezoid weights are uniform here: the density is ~0 on the border
    mean = weight @ F
    var = weight @ (F - mean) ** 2
    cond_mean = F @ (K_inv @ K_star[0])
    cond_var = 3.0 - K_star[0] @ K_inv @ K_star[0]
    prob = weight @ gauss_hermite_sigmoid(cond_mean, cond_var)
    return K, y, K_star, mean, var, prob


def test_draws_match_the_exact_posterior(two_points):
    K, y, K_star, mean, var, prob = two_points
    samples = gpc_elliptical_slice(K, y, n_samples=5000, seed=3)
    assert samples.f.shape == (4, 5000, 2) and np.all(samples.rhat < 1.01) and np.all(samples.ess > 1000)
    mcse = np.sqrt(var / samples.ess)
    assert np.all(np.abs(samples.mean - mean) < 4 * mcse)
    assert_allclose(samples.var, var, rtol=0.1)
    pred = gpc_predict_samples(samples, K, K_star, np.array([3.0]))
    assert abs(pred.prob[0] - prob) < 0.01
    assert pred.method == "samples"


def test_predictive_is_the_average_of_the_conditional_averages(two_points):
    """prob, mean and var of gpc_predict_samples against a dense recomputation from the same draws."""
    K, y, K_star, *_ = two_points
    samples = gpc_elliptical_slice(K, y, n_samples=300, n_chains=2, seed=4)
    k_ss = np.array([3.0])
    pred = gpc_predict_samples(samples, K, K_star, k_ss)
    draws = samples.f.reshape(-1, 2)
    cond_mean = draws @ np.linalg.solve(K, K_star[0])
    cond_var = 3.0 - K_star[0] @ np.linalg.solve(K, K_star[0])
    assert_allclose(pred.prob[0], np.mean(gauss_hermite_sigmoid(cond_mean, cond_var)), rtol=1e-10)
    assert_allclose(pred.mean[0], cond_mean.mean(), rtol=1e-10)
    assert_allclose(pred.var[0], cond_var + cond_mean.var(), rtol=1e-9)


def test_one_point_posterior_mean():
    """One observation y = 1 with prior variance 4: E[f | y] by 1-D quadrature."""
    f = np.linspace(-30, 30, 60001)
    dens = np.exp(log_expit(f) - f**2 / 8)
    exact = np.sum(f * dens) / np.sum(dens)
    samples = gpc_elliptical_slice(np.array([[4.0]]), np.array([1]), n_samples=5000, seed=0)
    sd = np.sqrt(samples.var[0])
    assert abs(samples.mean[0] - exact) < 4 * sd / np.sqrt(samples.ess[0])


def test_every_draw_is_reproducible_from_its_seed(two_points):
    K, y, *_ = two_points
    a = gpc_elliptical_slice(K, y, n_samples=50, n_warmup=10, n_chains=2, seed=11)
    b = gpc_elliptical_slice(K, y, n_samples=50, n_warmup=10, n_chains=2, seed=11)
    c = gpc_elliptical_slice(K, y, n_samples=50, n_warmup=10, n_chains=2, seed=12)
    d = gpc_elliptical_slice(K, y, n_samples=50, n_warmup=10, n_chains=2, seed=np.random.default_rng(11))
    assert np.array_equal(a.f, b.f) and np.array_equal(a.f, d.f) and not np.array_equal(a.f, c.f)
    # chains start from different prior draws
    assert not np.allclose(a.f[0, 0], a.f[1, 0])


def test_singular_kernel_matrix():
    """Duplicated inputs: K is singular, the draws keep f_1 = f_2 exactly up to rounding."""
    X = np.array([[0.0], [0.0], [1.5]])
    samples = gpc_elliptical_slice(rbf_kernel(X, variance=2.0), np.array([1, 1, 0]), n_samples=200, seed=0)
    assert np.max(np.abs(samples.f[..., 0] - samples.f[..., 1])) < 1e-10


@pytest.fixture(scope="module")
def moons_truth():
    X, y = datasets.two_moons(40, noise=0.3, seed=3)
    K = rbf_kernel(X, variance=10.0, lengthscale=0.8)
    X_test = np.random.default_rng(2).uniform(-1.5, 2.5, size=(100, 2))
    K_star = rbf_kernel(X_test, X, variance=10.0, lengthscale=0.8)
    k_ss = np.full(100, 10.0)
    samples = gpc_elliptical_slice(K, y, n_samples=4000, seed=0)
    return K, y, K_star, k_ss, samples


def test_ep_is_close_to_the_truth_and_closer_than_laplace(moons_truth):
    """Kuss & Rasmussen (2005) on our data: EP's latent means lie within 0.2 posterior standard
    deviations of the sampled truth (Monte Carlo error below 0.05 sd), Laplace's mode as far as
    0.48 sd; EP's predictive is within 0.04 of the exact one, Laplace's off by more than twice that."""
    K, y, K_star, k_ss, samples = moons_truth
    assert np.all(samples.rhat < 1.05)
    sd = np.sqrt(samples.var)
    assert np.max(np.sqrt(samples.var / samples.ess) / sd) < 0.06
    ep, la = gpc_ep(K, y), gpc_laplace(K, y)
    ep_err = np.max(np.abs(ep.mean - samples.mean) / sd)
    la_err = np.max(np.abs(la.f_hat - samples.mean) / sd)
    assert ep_err < 0.2 and la_err > 2 * ep_err
    assert np.all(np.abs(np.sqrt(ep.var) / sd - 1) < 0.15)  # and its variances within 15 %
    exact = gpc_predict_samples(samples, K, K_star, k_ss).prob
    ep_pred = np.max(np.abs(gpc_predict(ep, K_star, k_ss, method="quadrature").prob - exact))
    la_pred = np.max(np.abs(gpc_predict(la, K_star, k_ss, method="quadrature").prob - exact))
    assert ep_pred < 0.04 and la_pred > 2 * ep_pred


def test_result_repr_and_frozen(two_points):
    K, y, *_ = two_points
    samples = gpc_elliptical_slice(K, y, n_samples=20, n_warmup=5, n_chains=2, seed=0)
    assert isinstance(samples, GPCSamples) and samples.n_warmup == 5
    text = repr(samples)
    assert text.startswith("GPCSamples(n=2, mean=[") and "n_chains=2, n_samples=20, max_rhat=" in text
    with pytest.raises(AttributeError):
        samples.f = None


K3 = rbf_kernel(np.array([[0.0], [1.0], [2.0]]))
Y3 = np.array([0, 1, 1])
S3 = gpc_elliptical_slice(K3, Y3, n_samples=10, n_warmup=2, n_chains=1, seed=0)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: gpc_elliptical_slice(K3, Y3, n_samples=3), ValueError, r"n_samples must be >= 4 .* got 3"),
        (lambda: gpc_elliptical_slice(K3, Y3, n_samples=0), ValueError, r"n_samples must be >= 1, got 0"),
        (lambda: gpc_elliptical_slice(K3, Y3, n_samples=100.0), TypeError, r"n_samples must be an integer, got float"),
        (lambda: gpc_elliptical_slice(K3, Y3, n_warmup=-1), ValueError, r"n_warmup must be >= 0, got -1"),
        (lambda: gpc_elliptical_slice(K3, Y3, n_warmup=1.5), TypeError, r"n_warmup must be an integer"),
        (lambda: gpc_elliptical_slice(K3, Y3, n_chains=0), ValueError, r"n_chains must be >= 1, got 0"),
        (lambda: gpc_elliptical_slice(K3, Y3, n_chains="4"), TypeError, r"n_chains must be an integer, got str"),
        (lambda: gpc_elliptical_slice(K3, Y3, seed="a"), TypeError, r"seed must be an int or a numpy.random.Generator"),
        (lambda: gpc_elliptical_slice(K3, [0, 2, 1]), ValueError, r"y must contain labels in \{0, 1\}"),
        (lambda: gpc_elliptical_slice(K3, [0, np.nan, 1]), ValueError, r"y must contain only finite"),
        (lambda: gpc_elliptical_slice(K3, [0, 1]), ValueError, r"K and y have different lengths"),
        (lambda: gpc_elliptical_slice(np.ones((3, 2)), Y3), ValueError, r"K must be square"),
        (lambda: gpc_predict_samples("s", K3, np.ones((1, 3)), np.ones(1)), TypeError,
         r"samples must be a GPCSamples .* got str"),
        (lambda: gpc_predict_samples(S3, np.eye(2), np.ones((1, 3)), np.ones(1)), ValueError,
         r"K must be the 3 x 3 kernel matrix the samples were drawn with, got shape \(2, 2\)"),
        (lambda: gpc_predict_samples(S3, K3, np.ones((1, 2)), np.ones(1)), ValueError, r"K_star must have shape \(m, 3\)"),
        (lambda: gpc_predict_samples(S3, K3, np.ones((1, 3)), -np.ones(1)), ValueError, r"k_star_star must be >= 0"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
