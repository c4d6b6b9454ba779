"""Polya-Gamma Gibbs sampling of the GP-classification posterior (chapter 12) against exact
quadrature in one and two dimensions and against elliptical slice sampling."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.integrate import quad
from scipy.special import expit, log_expit

from blrlib import (
    GPCSamples,
    datasets,
    gibbs_gpc,
    gpc_elliptical_slice,
    gpc_predict_samples,
    rbf_kernel,
)


@pytest.mark.parametrize("k, label", [(0.5, 1), (4.0, 0), (50.0, 1)])
def test_one_latent_value_matches_quadrature(k, label):
    """n = 1: p(f | y) is N(f | 0, k) sigma(s f), whose moments quad computes."""
    s = 2 * label - 1
    def dens(f):
        return np.exp(-0.5 * f * f / k + log_expit(s * f))
    z = quad(dens, -np.inf, np.inf)[0]
    mean = quad(lambda f: f * dens(f), -np.inf, np.inf)[0] / z
    var = quad(lambda f: (f - mean) ** 2 * dens(f), -np.inf, np.inf)[0] / z
    samples = gibbs_gpc(np.array([[k]]), np.array([label]), n_samples=1500, n_warmup=50, seed=2)
    assert samples.f.shape == (4, 1500, 1)
    assert samples.rhat[0] < 1.01 and samples.ess[0] > 1500
    assert abs(samples.mean[0] - mean) < 4 * np.sqrt(var / samples.ess[0])
    assert_allclose(samples.var[0], var, rtol=0.1)


def test_two_correlated_values_match_a_grid():
    X = np.array([[0.0], [1.0]])
    y = np.array([1, 0])
    K = rbf_kernel(X, variance=3.0, lengthscale=1.0)
    grid = np.linspace(-12.0, 12.0, 481)
    F1, F2 = np.meshgrid(grid, grid, indexing="ij")
    F = np.stack([F1.ravel(), F2.ravel()], axis=1)
    K_inv = np.linalg.inv(K)
    log_post = log_expit(F[:, 0]) + log_expit(-F[:, 1]) - 0.5 * np.einsum("ij,jk,ik->i", F, K_inv, F)
    weight = np.exp(log_post - log_post.max())
    weight /= weight.sum()
    mean = weight @ F
    var = weight @ (F - mean) ** 2
    cov01 = weight @ ((F[:, 0] - mean[0]) * (F[:, 1] - mean[1]))
    samples = gibbs_gpc(K, y, n_samples=2500, n_warmup=100, seed=3)
    assert np.all(samples.rhat < 1.01) and np.all(samples.ess > 1500)
    assert np.all(np.abs(samples.mean - mean) < 4 * np.sqrt(var / samples.ess))
    assert_allclose(samples.var, var, rtol=0.08)
    pooled = samples.f.reshape(-1, 2)
    assert abs(np.cov(pooled.T)[0, 1] - cov01) < 0.08 * np.sqrt(var[0] * var[1])
    # the exact predictive of a test point from these draws
    x_star = np.array([[0.4]])
    K_star = rbf_kernel(x_star, X, variance=3.0, lengthscale=1.0)
    cond_mean = F @ (K_inv @ K_star[0])
    cond_var = 3.0 - K_star[0] @ K_inv @ K_star[0]
    t, w = np.polynomial.hermite_e.hermegauss(80)
    p_grid = expit(cond_mean[:, None] + np.sqrt(cond_var) * t) @ w / np.sqrt(2 * np.pi)
    pred = gpc_predict_samples(samples, K, K_star, np.array([3.0]))
    assert abs(pred.prob[0] - weight @ p_grid) < 0.01


def test_agrees_with_elliptical_slice_where_both_converge():
    X, y = datasets.two_moons(30, noise=0.25, seed=4)
    K = rbf_kernel(X, variance=4.0, lengthscale=1.0)
    gibbs = gibbs_gpc(K, y, n_samples=1000, n_warmup=100, seed=5)
    ess = gpc_elliptical_slice(K, y, n_samples=4000, n_warmup=300, seed=6)
    for s in (gibbs, ess):
        assert isinstance(s, GPCSamples) and np.all(s.rhat < 1.01) and np.min(s.ess) > 400
    se = np.sqrt(gibbs.var / gibbs.ess + ess.var / ess.ess)
    z = (gibbs.mean - ess.mean) / se
    assert np.max(np.abs(z)) < 4.5 and abs(np.mean(z)) < 4 / np.sqrt(len(z))
    assert_allclose(np.sqrt(gibbs.var), np.sqrt(ess.var), rtol=0.12)


def test_mixes_faster_than_elliptical_slice_at_a_large_signal_variance():
    X, y = datasets.two_moons(40, noise=0.25, seed=1)
    K = rbf_kernel(X, variance=30.0, lengthscale=1.0)
    gibbs = gibbs_gpc(K, y, n_samples=600, n_warmup=200, seed=1)
    ess = gpc_elliptical_slice(K, y, n_samples=600, n_warmup=200, seed=1)
    assert np.min(gibbs.ess) > 3 * np.min(ess.ess)


def test_seeded_and_validated():
    K = rbf_kernel(np.array([[0.0], [1.0], [2.5]]), variance=2.0)
    y = np.array([0, 1, 1])
    a = gibbs_gpc(K, y, n_samples=20, n_warmup=5, n_chains=2, seed=7)
    b = gibbs_gpc(K, y, n_samples=20, n_warmup=5, n_chains=2, seed=np.random.default_rng(7))
    assert_allclose(a.f, b.f)
    assert a.f.shape == (2, 20, 3) and a.n_warmup == 5
    assert "GPCSamples(" in repr(a)
    with pytest.raises(ValueError, match="y"):
        gibbs_gpc(K, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="n_samples"):
        gibbs_gpc(K, y, n_samples=2)
    with pytest.raises(ValueError):
        gibbs_gpc(K[:2], y)
    with pytest.raises(TypeError, match="seed"):
        gibbs_gpc(K, y, seed="zero")
