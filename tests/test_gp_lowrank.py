"""The fast paths for large n (blrlib._gp_lowrank): each part against its dense definition, and the
algorithms that use them against their exact, dense counterparts."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from blrlib import ConvergenceWarning, _gp_lowrank, gp_laplace, gpc_laplace, rbf_kernel
from blrlib._gp_lowrank import (
    LowRankEPPosterior,
    pcg,
    pivoted_cholesky,
    woodbury_preconditioner,
)
from blrlib.gp_laplace import _posterior_mode


def test_pivoted_cholesky_is_exact_at_full_rank():
    X = np.random.default_rng(0).normal(size=(60, 3))
    K = rbf_kernel(X, variance=2.0, lengthscale=0.7)
    V, d = pivoted_cholesky(K, max_rank=60, rtol=0.0)
    assert_allclose(V @ V.T + np.diag(d), K, rtol=0, atol=1e-12)
    assert np.all(d >= 0) and np.max(d) < 1e-12


def test_pivoted_cholesky_truncated():
    """The residual K - V V^T is PSD with diagonal d; the first pivot is the largest diagonal."""
    X = np.random.default_rng(1).normal(size=(80, 2))
    K = rbf_kernel(X, variance=1.0, lengthscale=0.5) + np.diag(np.linspace(0.0, 1.0, 80))
    V, d = pivoted_cholesky(K, max_rank=15)
    assert V.shape == (80, 15)
    residual = K - V @ V.T
    assert_allclose(np.diag(residual), d, rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(residual).min() > -1e-10
    i0 = int(np.argmax(np.diag(K)))
    assert_allclose(V[:, 0], K[:, i0] / np.sqrt(K[i0, i0]), rtol=1e-14)
    # a kernel of rank 2 stops after two columns
    V2, d2 = pivoted_cholesky(X @ X.T, max_rank=50)
    assert V2.shape == (80, 2) and np.max(d2) < 1e-10


def test_pcg_solves_and_reports_failure():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(50, 50))
    B = A @ A.T + np.eye(50)
    r = rng.normal(size=50)
    x = pcg(lambda v: B @ v, r, lambda v: v / np.diag(B), 1e-12, 200)
    assert_allclose(B @ x, r, rtol=0, atol=1e-9)
    assert pcg(lambda v: B @ v, r, lambda v: v.copy(), 1e-12, 3) is None
    assert np.all(pcg(lambda v: B @ v, np.zeros(50), lambda v: v, 1e-12, 3) == 0)


def test_woodbury_preconditioner_inverts_its_matrix(big_moons):
    X, y = big_moons
    K = rbf_kernel(X, variance=3.0, lengthscale=0.8)
    V, d = pivoted_cholesky(K, 100)
    W = np.random.default_rng(4).uniform(0.0, 0.25, size=len(y))
    P = np.diag(1.0 + W * d) + (np.sqrt(W)[:, None] * V) @ (np.sqrt(W)[:, None] * V).T
    v = np.random.default_rng(5).normal(size=len(y))
    assert_allclose(woodbury_preconditioner(V, d, W)(P @ v), v, rtol=0, atol=1e-12)


@pytest.mark.parametrize("zero_sites", [False, True])
def test_low_rank_ep_marginals_equal_dense_ones(zero_sites):
    """The marginals of (K~^-1 + S)^-1 for K~ = V V^T + D, and log|I + S^1/2 K~ S^1/2| / 2, densely."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(70, 2))
    V, d = pivoted_cholesky(rbf_kernel(X, variance=4.0, lengthscale=0.6), max_rank=20)
    K_tilde = V @ V.T + np.diag(d)
    tau = rng.uniform(0.0, 2.0, size=70)
    if zero_sites:
        tau[::3] = 0.0  # flat sites, as EP starts
    nu = rng.normal(size=70)
    m = LowRankEPPosterior(V, d).marginals(tau, nu)
    # Sigma = K~ - K~ S^1/2 B^-1 S^1/2 K~, with no inverse of K~ (which is singular where d = 0)
    s = np.sqrt(tau)
    B = np.eye(70) + s[:, None] * K_tilde * s[None, :]
    Sigma = K_tilde - (K_tilde * s) @ np.linalg.solve(B, s[:, None] * K_tilde)
    assert_allclose(m.var, np.diag(Sigma), rtol=1e-10, atol=1e-12)
    assert_allclose(m.mean, Sigma @ nu, rtol=1e-10, atol=1e-11)
    assert_allclose(m.half_log_det_B, 0.5 * np.linalg.slogdet(B)[1], rtol=1e-12)


# --- Newton steps by preconditioned conjugate gradients (Alg. 3.1 for n >= 500) ---------------

def exact_only(monkeypatch):
    monkeypatch.setattr(gp_laplace, "CG_MIN_N", 10**9)


@pytest.mark.parametrize("variance, lengthscale", [(1.0, 1.0), (100.0, 0.5), (1e4, 2.0), (10.0, 0.2), (10.0, 0.05)])
def test_conjugate_gradient_steps_give_the_exact_mode(big_moons, monkeypatch, variance, lengthscale):
    """The mode, the lml and L are those of exact Newton steps, in fewer factorisations."""
    X, y = big_moons
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
    fast = _posterior_mode(K, y)
    exact_only(monkeypatch)
    slow = _posterior_mode(K, y)
    assert fast.converged and slow.converged
    assert_allclose(fast.f, slow.f, rtol=0, atol=1e-9 * (1 + np.max(np.abs(slow.f))))
    assert_allclose(fast.log_marginal_likelihood, slow.log_marginal_likelihood, rtol=1e-12, atol=1e-9)
    assert_allclose(np.diag(fast.L @ fast.L.T), 1.0 + fast.W * np.diag(K), rtol=1e-12)
    assert fast.n_factorisations <= slow.n_factorisations
    if lengthscale >= 0.5:  # a smooth kernel: the preconditioner is good, one factorisation confirms the mode
        assert fast.n_factorisations == 1 < slow.n_factorisations


def test_conjugate_gradient_mode_matches_sklearn(big_moons):
    X, y = big_moons
    fit = gpc_laplace(rbf_kernel(X, variance=20.0, lengthscale=0.7), y)
    kernel = ConstantKernel(20.0, "fixed") * RBF(0.7, "fixed")
    sk = GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(X, y).base_estimator_
    assert_allclose(fit.f_hat, sk.f_cached, rtol=0, atol=1e-8)
    assert_allclose(fit.log_marginal_likelihood, sk.log_marginal_likelihood_value_, rtol=0, atol=1e-8)


def test_conjugate_gradient_failure_falls_back_to_factorising(big_moons, monkeypatch):
    X, y = big_moons
    K = rbf_kernel(X, variance=10.0, lengthscale=0.8)
    reference = gpc_laplace(K, y)
    monkeypatch.setattr(_gp_lowrank, "CG_ITER_DIVISOR", len(y))  # one CG iteration allowed: always fails
    mode = _posterior_mode(K, y)
    assert mode.converged and mode.n_factorisations == mode.n_iter + 1  # exact steps after the failure
    assert_allclose(mode.f, reference.f_hat, rtol=0, atol=1e-9)


def test_conjugate_gradient_max_iter_still_factorises_at_the_last_iterate(big_moons):
    X, y = big_moons
    K = rbf_kernel(X, variance=10.0, lengthscale=0.8)
    with pytest.warns(ConvergenceWarning):
        fit = gpc_laplace(K, y, max_iter=1)
    assert fit.n_iter == 1 and not fit.converged
    assert_allclose(np.diag(fit.L @ fit.L.T), 1.0 + fit.W_sqrt**2 * np.diag(K), rtol=1e-12)
    assert_allclose(fit.W_sqrt**2, expit(fit.f_hat) * expit(-fit.f_hat), rtol=1e-12)
