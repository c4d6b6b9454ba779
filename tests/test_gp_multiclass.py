"""Tests of blrlib.gp_multiclass: multi-class GP classification with the Laplace approximation
(Rasmussen & Williams Alg. 3.3 and 3.4; chapter 13, eq-softmax-gp-newton, eq-softmax-gp-lml,
eq-softmax-gp-predict), against a dense implementation written here, the binary algorithm
for C = 2, finite differences and exact sampling (elliptical slice sampling)."""

import numpy as np
import pytest
from _helpers import central_difference
from numpy.testing import assert_allclose
from scipy.special import log_softmax as sp_log_softmax
from scipy.special import softmax as sp_softmax

from blrlib import (
    ConvergenceWarning,
    GPCLaplaceMulticlass,
    gpc_laplace,
    gpc_laplace_multiclass,
    gpc_predict,
    gpc_predict_multiclass,
    rbf_kernel,
)


def three_blobs(n, seed=0, spread=0.8):
    rng = np.random.default_rng(seed)
    centres = np.array([[-1.5, 0.0], [1.5, 0.0], [0.0, 2.0]])
    y = np.arange(n) % 3
    X = centres[y] + spread * rng.standard_normal((n, 2))
    return X, y


# --- a dense, straightforward Alg. 3.3: nC x nC matrices (small n only) -------------------------


def dense_laplace(K, y, C, iters=100):
    """Newton on Psi(f) with f stacked class by class, W = D - Pi Pi^T formed explicitly."""
    n = K.shape[0]
    Kbig = np.kron(np.eye(C), K)
    Y = np.zeros((n, C))
    Y[np.arange(n), y] = 1.0
    yv = Y.T.ravel()
    f = np.zeros(n * C)

    def psi(f):
        F = f.reshape(C, n).T
        return float(np.sum(Y * sp_log_softmax(F, axis=1)) - 0.5 * f @ np.linalg.solve(Kbig, f))

    for _ in range(iters):
        F = f.reshape(C, n).T
        pi = sp_softmax(F, axis=1).T.ravel()
        Pi = np.vstack([np.diag(pi[c * n : (c + 1) * n]) for c in range(C)])
        W = np.diag(pi) - Pi @ Pi.T
        rhs = W @ f + yv - pi
        f_new = Kbig @ np.linalg.solve(np.eye(n * C) + W @ Kbig, rhs)  # (K^-1 + W)^-1 rhs
        t = 1.0
        while psi(f + t * (f_new - f)) < psi(f) - 1e-12 and t > 1e-10:
            t /= 2
        f_next = f + t * (f_new - f)
        if np.max(np.abs(f_next - f)) < 1e-13:
            f = f_next
            break
        f = f_next
    F = f.reshape(C, n).T
    pi = sp_softmax(F, axis=1).T.ravel()
    Pi = np.vstack([np.diag(pi[c * n : (c + 1) * n]) for c in range(C)])
    W = np.diag(pi) - Pi @ Pi.T
    sign, logdet = np.linalg.slogdet(np.eye(n * C) + Kbig @ W)
    assert sign > 0
    return F, psi(f) - 0.5 * logdet, W


@pytest.mark.parametrize("C, variance, lengthscale", [(3, 2.0, 1.0), (3, 20.0, 0.7), (4, 5.0, 2.0)])
def test_matches_a_dense_implementation(C, variance, lengthscale):
    X, y = three_blobs(24, seed=C)
    if C == 4:
        y = (np.arange(24) * 7) % 4
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale) + 1e-3 * np.eye(24)
    fit = gpc_laplace_multiclass(K, y)
    F, lml, _ = dense_laplace(K, y, C)
    assert fit.converged
    assert_allclose(fit.f_hat, F, atol=1e-8)
    assert_allclose(fit.log_marginal_likelihood, lml, rtol=1e-9)


def test_mode_satisfies_the_stationarity_condition():
    X, y = three_blobs(40, seed=1)
    K = rbf_kernel(X, variance=3.0)
    fit = gpc_laplace_multiclass(K, y)
    # K^-1 f_hat = y - pi, class by class: f_hat = K (y - pi)
    assert_allclose(fit.f_hat, K @ fit.grad_log_lik, atol=1e-9)
    assert_allclose(fit.grad_log_lik.sum(axis=1), 0.0, atol=1e-12)


@pytest.mark.parametrize("scale", [0.01, 1.0, 10.0, 100.0])
def test_log_likelihood_derivatives_match_finite_differences(scale):
    """The gradient y - pi and the negative Hessian W = D - Pi Pi^T that Alg. 3.3 uses."""
    rng = np.random.default_rng(3)
    n, C = 6, 3
    y = np.array([0, 1, 2, 0, 1, 2])
    Y = np.eye(C)[y]

    def log_lik(f):
        return float(np.sum(Y * sp_log_softmax(f.reshape(C, n).T, axis=1)))

    f = scale * rng.standard_normal(n * C)
    F = f.reshape(C, n).T
    pi = sp_softmax(F, axis=1)
    h = 1e-5 * max(1.0, scale)
    assert_allclose(central_difference(log_lik, f, h), (Y - pi).T.ravel(), atol=1e-7)
    grad = lambda v: (Y - sp_softmax(v.reshape(C, n).T, axis=1)).T.ravel()  # noqa: E731
    H = np.array([central_difference(lambda v, i=i: grad(v)[i], f, 1e-6) for i in range(n * C)])
    pv = pi.T.ravel()
    Pi = np.vstack([np.diag(pv[c * n : (c + 1) * n]) for c in range(C)])
    W = np.diag(pv) - Pi @ Pi.T
    assert_allclose(-H, W, atol=1e-7)


def test_objective_is_stationary_at_the_mode_by_finite_differences():
    X, y = three_blobs(15, seed=2)
    K = rbf_kernel(X, variance=2.0) + 1e-2 * np.eye(15)
    fit = gpc_laplace_multiclass(K, y)
    C, n = 3, 15
    Y = np.eye(C)[y]
    K_inv = np.linalg.inv(K)

    def psi(f):
        F = f.reshape(C, n).T
        return float(np.sum(Y * sp_log_softmax(F, axis=1)) - 0.5 * np.sum(F * (K_inv @ F)))

    g = central_difference(psi, fit.f_hat.T.ravel(), 1e-5)
    assert np.max(np.abs(g)) < 1e-6


def test_two_classes_are_the_binary_classifier_with_twice_the_kernel():
    X, y = three_blobs(30, seed=4)
    y = (y == 1).astype(int)
    K = rbf_kernel(X, variance=1.5)
    fit = gpc_laplace_multiclass(K, y)
    binary = gpc_laplace(2 * K, y)
    assert_allclose(fit.f_hat[:, 1] - fit.f_hat[:, 0], binary.f_hat, atol=1e-8)
    assert_allclose(fit.f_hat[:, 0], -fit.f_hat[:, 1], atol=1e-8)
    assert_allclose(fit.log_marginal_likelihood, binary.log_marginal_likelihood, rtol=1e-10)
    X_new = np.random.default_rng(0).uniform(-3, 3, size=(20, 2))
    K_star = rbf_kernel(X_new, X, variance=1.5)
    pred = gpc_predict_multiclass(fit, K_star, np.full(20, 1.5), n_samples=100_000)
    bpred = gpc_predict(binary, 2 * K_star, np.full(20, 3.0), method="quadrature")
    assert_allclose(pred.mean[:, 1] - pred.mean[:, 0], bpred.mean, atol=1e-8)
    var_diff = pred.cov[:, 1, 1] + pred.cov[:, 0, 0] - 2 * pred.cov[:, 0, 1]
    assert_allclose(var_diff, bpred.var, rtol=1e-8)
    assert_allclose(pred.prob[:, 1], bpred.prob, atol=0.005)


def test_prediction_matches_the_dense_latent_posterior():
    X, y = three_blobs(20, seed=5)
    K = rbf_kernel(X, variance=3.0) + 1e-3 * np.eye(20)
    C, n = 3, 20
    fit = gpc_laplace_multiclass(K, y)
    _, _, W = dense_laplace(K, y, C)
    X_new = np.array([[0.0, 0.0], [3.0, 3.0], [-1.5, 0.2]])
    K_star = rbf_kernel(X_new, X, variance=3.0)
    kss = np.full(3, 3.0)
    pred = gpc_predict_multiclass(fit, K_star, kss)
    Kbig = np.kron(np.eye(C), K)
    Q = np.kron(np.eye(C), K_star)  # (3C, nC): test-by-train, class blocks
    post_cov_f = np.linalg.inv(np.linalg.inv(Kbig) + W)
    Kinv_Q = np.linalg.solve(Kbig, Q.T)
    cov_star = np.kron(np.eye(C), np.diag(kss)) - Q @ Kinv_Q + Kinv_Q.T @ post_cov_f @ Kinv_Q
    mean_star = Q @ np.linalg.solve(Kbig, fit.f_hat.T.ravel())
    for i in range(3):
        idx = i + 3 * np.arange(C)
        assert_allclose(pred.cov[i], cov_star[np.ix_(idx, idx)], atol=1e-7)
        assert_allclose(pred.mean[i], mean_star[idx], atol=1e-7)
    assert_allclose(pred.prob.sum(axis=1), 1.0)


def elliptical_slice(K, y, C, n_samples, n_warmup, seed):
    """Exact draws of the nC latent vector: elliptical slice sampling (Murray et al. 2010)."""
    rng = np.random.default_rng(seed)
    n = K.shape[0]
    L = np.linalg.cholesky(K + 1e-10 * np.eye(n))
    Y = np.eye(C)[y]

    def log_lik(F):
        return float(np.sum(Y * sp_log_softmax(F, axis=1)))

    F = np.zeros((n, C))
    ll = log_lik(F)
    draws = []
    for it in range(n_samples + n_warmup):
        nu = L @ rng.standard_normal((n, C))
        log_u = ll + np.log(rng.random())
        theta = rng.uniform(0, 2 * np.pi)
        lo, hi = theta - 2 * np.pi, theta
        while True:
            prop = F * np.cos(theta) + nu * np.sin(theta)
            ll_prop = log_lik(prop)
            if ll_prop > log_u:
                F, ll = prop, ll_prop
                break
            if theta < 0:
                lo = theta
            else:
                hi = theta
            theta = rng.uniform(lo, hi)
        if it >= n_warmup:
            draws.append(F)
    return np.array(draws)


def test_predictive_probabilities_against_exact_sampling():
    """Laplace against the exact predictive of elliptical slice sampling on 18 points."""
    X, y = three_blobs(18, seed=6, spread=1.0)
    variance, C = 2.0, 3
    K = rbf_kernel(X, variance=variance)
    fit = gpc_laplace_multiclass(K, y)
    X_new = np.array([[0.0, 0.5], [-1.5, 0.0], [1.5, 0.0], [0.0, 2.0], [4.0, -3.0]])
    K_star = rbf_kernel(X_new, X, variance=variance)
    kss = np.full(5, variance)
    laplace = gpc_predict_multiclass(fit, K_star, kss, n_samples=50_000).prob
    draws = elliptical_slice(K, y, C, n_samples=6000, n_warmup=500, seed=1)[::3]
    # f_* | f is Gaussian with mean K_*^T K^-1 f^c and variance k** - K_* K^-1 K_*^T, per class
    A = np.linalg.solve(K + 1e-10 * np.eye(18), K_star.T)
    cond_var = np.maximum(kss - np.einsum("mi,im->m", K_star, A), 0.0)
    rng = np.random.default_rng(2)
    means = np.einsum("im,sic->smc", A, draws)
    noise = rng.standard_normal((means.shape[0], 20, 5, C)) * np.sqrt(cond_var)[None, None, :, None]
    exact = sp_softmax(means[:, None] + noise, axis=3).mean(axis=(0, 1))
    # measured: largest difference 0.040 (the Laplace approximation is not exact)
    assert np.max(np.abs(laplace - exact)) < 0.06
    assert_allclose(laplace[-1], 1 / 3, atol=0.01)  # far away: the prior
    assert np.all(laplace.argmax(axis=1)[1:4] == exact.argmax(axis=1)[1:4])


def test_repr_and_validation():
    X, y = three_blobs(12)
    K = rbf_kernel(X)
    fit = gpc_laplace_multiclass(K, y)
    assert isinstance(fit, GPCLaplaceMulticlass)
    assert repr(fit).startswith("GPCLaplaceMulticlass(n=12, C=3")
    with pytest.raises(ValueError, match="class labels"):
        gpc_laplace_multiclass(K, y + 0.5)
    with pytest.raises(ValueError, match="different lengths"):
        gpc_laplace_multiclass(K, y[:-1])
    with pytest.raises(ValueError, match="symmetric"):
        gpc_laplace_multiclass(K + np.triu(np.ones((12, 12)), 1), y)
    with pytest.raises(TypeError, match="GPCLaplaceMulticlass"):
        gpc_predict_multiclass("fit", K, np.ones(12))
    with pytest.raises(ValueError, match="K_star"):
        gpc_predict_multiclass(fit, K[:, :5], np.ones(12))
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        gpc_laplace_multiclass(K, y, max_iter=1)


@pytest.mark.parametrize("lengthscale", [1.0, 0.05])
def test_conjugate_gradient_steps_give_the_exact_algorithm(monkeypatch, lengthscale):
    """n >= 500 takes the fast path (blrlib._gp_multiclass_cg); the answer is the exact one's.
    With a very short length scale K is far from low rank and the fast path gives way."""
    import blrlib.gp_multiclass as gm

    X, y = three_blobs(600, seed=7)
    K = rbf_kernel(X, variance=2.0, lengthscale=lengthscale)
    fast = gpc_laplace_multiclass(K, y)
    monkeypatch.setattr(gm, "CG_MIN_N", 10**9)
    exact = gpc_laplace_multiclass(K, y)
    assert fast.converged and exact.converged
    assert_allclose(fast.f_hat, exact.f_hat, atol=1e-8)
    assert_allclose(fast.log_marginal_likelihood, exact.log_marginal_likelihood, rtol=1e-12)
    assert_allclose(fast.M, exact.M, atol=1e-10)
