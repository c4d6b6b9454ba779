"""The Laplace approximation for GP classification (chapter 9; GPML Alg. 3.1) against scikit-learn
and dense textbook formulas."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit, log_expit
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from blrlib import ConvergenceWarning, GPCLaplace, datasets, gpc_laplace, rbf_kernel
from blrlib.gp_laplace import _newton_step

VARIANCES = [1.0, 10.0, 100.0, 1000.0]
LENGTHSCALES = [0.3, 1.0, 3.0]


def sklearn_mode(X, y, variance, lengthscale):
    """scikit-learn's Laplace fit at fixed hyperparameters: its mode and log marginal likelihood."""
    kernel = ConstantKernel(variance, "fixed") * RBF(lengthscale, "fixed")
    sk = GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(X, y).base_estimator_
    return sk.f_cached, sk.log_marginal_likelihood_value_


def reference_lml(K, y, f):
    """Laplace log marginal likelihood at f from dense linear algebra (independent of Alg. 3.1)."""
    p = expit(f)
    W = p * (1 - p)
    a = np.linalg.solve(K, f)
    _, logdet = np.linalg.slogdet(np.eye(len(y)) + K * W[None, :])  # |I + K W| = |B|
    return np.sum(log_expit((2 * y - 1) * f)) - 0.5 * a @ f - 0.5 * logdet


# --- the mode and the marginal likelihood ----------------------------------------------------

@pytest.mark.parametrize("variance", VARIANCES)
@pytest.mark.parametrize("lengthscale", LENGTHSCALES)
def test_mode_and_lml_match_sklearn(moons, variance, lengthscale):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X, variance=variance, lengthscale=lengthscale), y)
    f_sk, lml_sk = sklearn_mode(X, y, variance, lengthscale)
    assert fit.converged
    assert_allclose(fit.f_hat, f_sk, rtol=0, atol=1e-8)
    assert_allclose(fit.log_marginal_likelihood, lml_sk, rtol=0, atol=1e-8)


@pytest.mark.parametrize("variance", [0.1, 1.0, 100.0, 1e4, 1e5])
@pytest.mark.parametrize("lengthscale", [0.1, 1.0, 10.0])
def test_mode_is_stationary_and_lml_matches_dense_formula(moons, variance, lengthscale):
    """f_hat = K (y - p) at the mode (chapter 9, eq-gpc-mode), and the lml equals its dense definition."""
    X, y = moons
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
    fit = gpc_laplace(K, y)
    assert fit.converged
    # f_hat = K (y - p): exact up to the round-off of a product with K, relative to ||K||_inf
    residual = K @ (y - expit(fit.f_hat)) - fit.f_hat
    assert np.max(np.abs(residual)) <= 1e-10 * np.abs(K).sum(axis=1).max()
    assert_allclose(fit.alpha, fit.grad_log_lik, rtol=0, atol=1e-9)  # alpha = K^-1 f_hat = y - p
    assert_allclose(fit.grad_log_lik, y - expit(fit.f_hat), rtol=0, atol=0)
    assert_allclose(np.tril(fit.L) @ np.tril(fit.L).T, np.eye(len(y)) + np.outer(fit.W_sqrt, fit.W_sqrt) * K,
                    rtol=0, atol=1e-12 * (1 + variance))
    assert np.all(np.triu(fit.L, 1) == 0)
    if np.linalg.cond(K) < 1e10:  # K well enough conditioned for the dense formula's solve
        assert_allclose(fit.log_marginal_likelihood, reference_lml(K, y, fit.f_hat), rtol=1e-9, atol=1e-8)


@pytest.mark.parametrize("variance, lengthscale", [(1.0, 1.0), (50.0, 0.3), (1e4, 2.0)])
def test_newton_step_is_algorithm_3_1(moons, variance, lengthscale):
    """The readable step (lines 4-8) equals the Newton step f + (K^-1 + W)^-1 grad Psi, formed densely."""
    X, y = moons
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale) + 1e-6 * variance * np.eye(len(y))
    f = np.random.default_rng(0).normal(scale=2.0, size=len(y))
    step = _newton_step(K, y, f)
    p = expit(f)
    K_inv = np.linalg.inv(K)
    newton = f + np.linalg.solve(K_inv + np.diag(p * (1 - p)), y - p - K_inv @ f)
    assert_allclose(step.f, newton, rtol=0, atol=1e-6 * np.max(np.abs(newton)))
    assert_allclose(K @ step.alpha, step.f, rtol=0, atol=1e-10 * variance * len(y))


def plain_newton_psi(K, y, n_steps):
    """Psi(f) = log p(y | f) - f^T K^-1 f / 2 along GPML Alg. 3.1 without any safeguard."""
    f, values = np.zeros(len(y)), []
    for _ in range(n_steps):
        p = expit(f)
        W_sqrt = np.sqrt(p * (1 - p))
        b = p * (1 - p) * f + y - p
        L = np.linalg.cholesky(np.eye(len(y)) + W_sqrt[:, None] * K * W_sqrt[None, :])
        a = b - W_sqrt * np.linalg.solve(L.T, np.linalg.solve(L, W_sqrt * (K @ b)))
        f = K @ a
        values.append(np.sum(log_expit((2 * y - 1) * f)) - 0.5 * a @ f)
    return np.array(values)


def test_large_variance_needs_the_line_search(moons):
    """Plain Newton (GPML Alg. 3.1 without a safeguard) overshoots at huge signal variance: Psi
    falls by 0.07 at step 13 (from -0.0075 to -0.078); the safeguarded search reaches the maximum."""
    X, y = moons
    K = rbf_kernel(X, variance=1e8, lengthscale=0.5)
    plain = plain_newton_psi(K, y, 40)
    assert np.min(np.diff(plain)) < -0.05
    fit = gpc_laplace(K, y)
    assert fit.converged and np.all(np.isfinite(fit.f_hat))
    psi_hat = np.sum(log_expit((2 * y - 1) * fit.f_hat)) - 0.5 * fit.alpha @ fit.f_hat
    assert psi_hat >= plain.max() - 1e-9


def test_warm_start_gives_the_same_mode_in_fewer_iterations(moons):
    X, y = moons
    prev = gpc_laplace(rbf_kernel(X, variance=10.0, lengthscale=0.9), y)
    K = rbf_kernel(X, variance=10.5, lengthscale=0.95)
    cold = gpc_laplace(K, y)
    warm = gpc_laplace(K, y, f0=prev.f_hat)
    assert warm.n_iter < cold.n_iter
    assert_allclose(warm.f_hat, cold.f_hat, rtol=0, atol=1e-9)
    assert_allclose(warm.log_marginal_likelihood, cold.log_marginal_likelihood, rtol=0, atol=1e-10)
    # a useless warm start (worse than f = 0) is discarded
    bad = gpc_laplace(K, y, f0=np.where(y == 1, -50.0, 50.0))
    assert_allclose(bad.f_hat, cold.f_hat, rtol=0, atol=1e-9)


def test_diagonal_kernel_matrix(moons):
    """A length scale far below the distances makes K diagonal; the shortcut for it gives sklearn's answer."""
    X, y = moons
    K = rbf_kernel(X, variance=7.0, lengthscale=1e-4)
    assert np.count_nonzero(K - np.diag(np.diag(K))) == 0
    fit = gpc_laplace(K, y)
    f_sk, lml_sk = sklearn_mode(X, y, 7.0, 1e-4)
    assert_allclose(fit.f_hat, f_sk, rtol=0, atol=1e-8)
    assert_allclose(fit.log_marginal_likelihood, lml_sk, rtol=0, atol=1e-8)
    assert_allclose(np.diag(fit.L) ** 2, 1 + 7.0 * fit.W_sqrt**2, rtol=1e-14)


def test_singular_kernel_matrix_is_fine():
    """K need not be invertible: duplicated inputs give a singular K."""
    X = np.array([[0.0], [0.0], [1.0], [2.0], [2.0]])
    y = np.array([0, 0, 1, 1, 1])
    fit = gpc_laplace(rbf_kernel(X, variance=5.0), y)
    assert fit.converged and fit.f_hat[0] == pytest.approx(fit.f_hat[1], abs=1e-12)


@pytest.mark.parametrize("label", [0, 1])
def test_one_class_is_a_proper_posterior(label):
    """One class: the posterior is proper, so the mode is finite and on that class's side; for one
    point it solves f = k (1 - sigma(f)) and the lml is Psi(f_hat) - log(1 + k W) / 2."""
    X = np.array([[-1.0], [0.0], [0.5], [2.0]])
    y = np.full(4, label)
    K = rbf_kernel(X, variance=3.0, lengthscale=0.8)
    fit = gpc_laplace(K, y)
    assert fit.converged and np.all(np.isfinite(fit.f_hat))
    assert np.all(np.sign(fit.f_hat) == (1 if label else -1))
    # one point: Psi(f) = log sigma(f) - f^2 / (2 k) has its maximum where f = k (1 - sigma(f))
    one = gpc_laplace(np.array([[3.0]]), np.array([1]))
    assert_allclose(one.f_hat[0], 3.0 * (1 - expit(one.f_hat[0])), rtol=1e-9)  # tol = 1e-10 on the step
    assert_allclose(one.log_marginal_likelihood,
                    log_expit(one.f_hat[0]) - one.f_hat[0] ** 2 / 6 - 0.5 * np.log1p(3.0 * expit(one.f_hat[0])
                                                                                       * expit(-one.f_hat[0])),
                    rtol=1e-12)


def test_max_iter_warns():
    X, y = datasets.two_moons(30, noise=0.2, seed=0)
    with pytest.warns(ConvergenceWarning, match=r"did not converge in max_iter=1 iterations"):
        fit = gpc_laplace(rbf_kernel(X, variance=10.0), y, max_iter=1)
    assert not fit.converged


def test_repr_is_readable_and_frozen(moons):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X), y)
    assert isinstance(fit, GPCLaplace)
    text = repr(fit)
    assert text.startswith("GPCLaplace(n=80, f_hat=[") and "log_marginal_likelihood=" in text
    assert "converged=True" in text and len(text) < 300
    with pytest.raises(AttributeError):
        fit.f_hat = None


# --- bad input -------------------------------------------------------------------------------

K3 = rbf_kernel(np.array([[0.0], [1.0], [2.0]]))
Y3 = np.array([0, 1, 1])


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: gpc_laplace(np.ones((3, 2)), Y3), ValueError, r"K must be square with shape \(n, n\), got shape \(3, 2\)"),
        (lambda: gpc_laplace(np.ones(3), Y3), ValueError, r"K must be a 2-D square matrix .* got ndim=1"),
        (lambda: gpc_laplace(np.where(np.eye(3) > 0, np.nan, 0.1), Y3), ValueError, r"K must contain only finite"),
        (lambda: gpc_laplace(np.array([[1.0, 0.5, 0], [0, 1, 0], [0, 0, 1]]), Y3), ValueError, r"K must be symmetric"),
        (lambda: gpc_laplace(np.array([[1.0, 10.0], [10.0, 1.0]]), [0, 1]), ValueError,
         r"K must be positive semi-definite"),
        (lambda: gpc_laplace(-np.eye(600), np.arange(600) % 2), ValueError,
         r"K must be positive semi-definite, so its diagonal must be >= 0, got K\[0, 0\] = -1"),
        (lambda: gpc_laplace(K3, [0, 1]), ValueError, r"K and y have different lengths: K has 3 rows, y has 2"),
        (lambda: gpc_laplace(K3, [-1, 1, 1]), ValueError, r"labels in \{-1, \+1\}; convert them"),
        (lambda: gpc_laplace(K3, [0, 2, 1]), ValueError, r"y must contain labels in \{0, 1\}, got values \{0, 1, 2\}"),
        (lambda: gpc_laplace(K3, [0, np.nan, 1]), ValueError, r"y must contain only finite numbers"),
        (lambda: gpc_laplace(K3, Y3, max_iter=0), ValueError, r"max_iter must be >= 1, got 0"),
        (lambda: gpc_laplace(K3, Y3, max_iter=2.5), TypeError, r"max_iter must be an integer, got float"),
        (lambda: gpc_laplace(K3, Y3, tol=-1.0), ValueError, r"tol must be > 0, got -1"),
        (lambda: gpc_laplace(K3, Y3, f0=np.zeros(2)), ValueError, r"f0 must have length 3, got length 2"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
