"""Gaussian-process classification with the Laplace approximation (chapter 9; GPML Algs. 3.1, 3.2, 5.1)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit, log_expit
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from blrlib import gp
from blrlib import (
    ConvergenceWarning,
    datasets,
    expected_sigmoid,
    gpc_laplace,
    gpc_log_marginal_likelihood,
    gpc_predict,
    rbf_kernel,
)

VARIANCES = [1.0, 10.0, 100.0, 1000.0]
LENGTHSCALES = [0.3, 1.0, 3.0]


def sklearn_fixed(X, y, variance, lengthscale):
    kernel = ConstantKernel(variance, "fixed") * RBF(lengthscale, "fixed")
    return GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(X, y)


def reference_lml(K, y, f):
    """Laplace log marginal likelihood at f from dense linear algebra (independent of Alg. 3.1)."""
    p = expit(f)
    W = p * (1 - p)
    a = np.linalg.solve(K, f)
    _, logdet = np.linalg.slogdet(np.eye(len(y)) + K * W[None, :])  # |I + K W| = |B|
    return np.sum(log_expit((2 * y - 1) * f)) - 0.5 * a @ f - 0.5 * logdet


# --- the mode and the marginal likelihood (Algorithm 3.1) ---------------------------------

@pytest.mark.parametrize("variance", VARIANCES)
@pytest.mark.parametrize("lengthscale", LENGTHSCALES)
def test_mode_and_lml_match_sklearn(moons, variance, lengthscale):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X, variance=variance, lengthscale=lengthscale), y)
    sk = sklearn_fixed(X, y, variance, lengthscale).base_estimator_
    assert fit.converged
    assert_allclose(fit.f_hat, sk.f_cached, rtol=0, atol=1e-8)
    assert_allclose(fit.log_marginal_likelihood, sk.log_marginal_likelihood_value_, rtol=0, atol=1e-8)


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
    assert_allclose(fit.a, fit.grad_log_lik, rtol=0, atol=1e-9)  # a = K^-1 f_hat = y - p
    assert_allclose(fit.grad_log_lik, y - expit(fit.f_hat), rtol=0, atol=0)
    assert_allclose(np.diag(fit.L @ fit.L.T), 1.0 + fit.W_sqrt**2 * np.diag(K), rtol=1e-12)
    if np.linalg.cond(K) < 1e10:  # K well enough conditioned for the dense formula's solve
        assert_allclose(fit.log_marginal_likelihood, reference_lml(K, y, fit.f_hat), rtol=1e-9, atol=1e-8)


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
    psi_hat = np.sum(log_expit((2 * y - 1) * fit.f_hat)) - 0.5 * fit.a @ fit.f_hat
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


def test_singular_kernel_matrix_is_fine():
    """K need not be invertible: duplicated inputs give a singular K."""
    X = np.array([[0.0], [0.0], [1.0], [2.0], [2.0]])
    y = np.array([0, 0, 1, 1, 1])
    fit = gpc_laplace(rbf_kernel(X, variance=5.0), y)
    assert fit.converged and fit.f_hat[0] == pytest.approx(fit.f_hat[1], abs=1e-12)


def test_max_iter_warns():
    X, y = datasets.two_moons(30, noise=0.2, seed=0)
    with pytest.warns(ConvergenceWarning, match=r"did not converge in max_iter=1 iterations"):
        fit = gpc_laplace(rbf_kernel(X, variance=10.0), y, max_iter=1)
    assert not fit.converged


def test_repr_is_readable(moons):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X), y)
    text = repr(fit)
    assert text.startswith("GPCLaplace(n=80, f_hat=[") and "log_marginal_likelihood=" in text
    assert "converged=True" in text and len(text) < 300
    pred = gpc_predict(fit, rbf_kernel(X[:3], X), np.ones(3))
    assert repr(pred).startswith("GPCPrediction(prob=[") and "method='probit'" in repr(pred)


# --- large n: Newton steps by preconditioned conjugate gradients -----------------------------

def exact_only(monkeypatch):
    monkeypatch.setattr(gp, "_CG_MIN_N", 10**9)


def test_pivoted_cholesky_is_exact_at_full_rank():
    X = np.random.default_rng(0).normal(size=(60, 3))
    K = rbf_kernel(X, variance=2.0, lengthscale=0.7)
    V, d = gp._pivoted_cholesky(K, max_rank=60, rtol=0.0)
    assert_allclose(V @ V.T + np.diag(d), K, rtol=0, atol=1e-12)
    assert np.all(d >= 0) and np.max(d) < 1e-12


def test_pivoted_cholesky_truncated():
    """The residual K - V V^T is PSD with diagonal d; the first pivot is the largest diagonal."""
    X = np.random.default_rng(1).normal(size=(80, 2))
    K = rbf_kernel(X, variance=1.0, lengthscale=0.5) + np.diag(np.linspace(0.0, 1.0, 80))
    V, d = gp._pivoted_cholesky(K, max_rank=15)
    assert V.shape == (80, 15)
    residual = K - V @ V.T
    assert_allclose(np.diag(residual), d, rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(residual).min() > -1e-10
    i0 = int(np.argmax(np.diag(K)))
    assert_allclose(V[:, 0], K[:, i0] / np.sqrt(K[i0, i0]), rtol=1e-14)
    # a kernel of rank 2 stops after two columns
    V2, d2 = gp._pivoted_cholesky(X @ X.T, max_rank=50)
    assert V2.shape == (80, 2) and np.max(d2) < 1e-10


def test_pcg_solves_and_reports_failure():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(50, 50))
    B = A @ A.T + np.eye(50)
    r = rng.normal(size=50)
    x = gp._pcg(lambda v: B @ v, r, lambda v: v / np.diag(B), 1e-12, 200)
    assert_allclose(B @ x, r, rtol=0, atol=1e-9)
    assert gp._pcg(lambda v: B @ v, r, lambda v: v.copy(), 1e-12, 3) is None
    assert np.all(gp._pcg(lambda v: B @ v, np.zeros(50), lambda v: v, 1e-12, 3) == 0)


def test_woodbury_preconditioner_inverts_its_matrix(big_moons):
    X, y = big_moons
    K = rbf_kernel(X, variance=3.0, lengthscale=0.8)
    steps = gp._NewtonSteps(K, y, np.empty(K.shape, order="F"), diagonal=False)
    W = np.random.default_rng(4).uniform(0.0, 0.25, size=len(y))
    P = np.diag(1.0 + W * steps.d) + (np.sqrt(W)[:, None] * steps.V) @ (np.sqrt(W)[:, None] * steps.V).T
    v = np.random.default_rng(5).normal(size=len(y))
    assert_allclose(steps._preconditioner(W, np.sqrt(W))(P @ v), v, rtol=0, atol=1e-12)


@pytest.mark.parametrize("variance, lengthscale", [(1.0, 1.0), (100.0, 0.5), (1e4, 2.0), (10.0, 0.2), (10.0, 0.05)])
def test_conjugate_gradient_steps_give_the_exact_mode(big_moons, monkeypatch, variance, lengthscale):
    """The mode, the lml and L are those of exact Newton steps, in fewer factorisations."""
    X, y = big_moons
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
    fast = gp._mode(K, y)
    exact_only(monkeypatch)
    slow = gp._mode(K, y)
    assert fast["converged"] and slow["converged"]
    assert_allclose(fast["f"], slow["f"], rtol=0, atol=1e-9 * (1 + np.max(np.abs(slow["f"]))))
    assert_allclose(fast["lml"], slow["lml"], rtol=1e-12, atol=1e-9)
    assert_allclose(np.diag(fast["L"] @ fast["L"].T), 1.0 + fast["W"] * np.diag(K), rtol=1e-12)
    assert fast["n_factorisations"] <= slow["n_factorisations"]
    if lengthscale >= 0.5:  # a smooth kernel: the preconditioner is good, one factorisation confirms the mode
        assert fast["n_factorisations"] == 1 < slow["n_factorisations"]


def test_conjugate_gradient_mode_matches_sklearn(big_moons):
    X, y = big_moons
    fit = gpc_laplace(rbf_kernel(X, variance=20.0, lengthscale=0.7), y)
    sk = sklearn_fixed(X, y, 20.0, 0.7).base_estimator_
    assert_allclose(fit.f_hat, sk.f_cached, rtol=0, atol=1e-8)
    assert_allclose(fit.log_marginal_likelihood, sk.log_marginal_likelihood_value_, rtol=0, atol=1e-8)


def test_conjugate_gradient_failure_falls_back_to_factorising(big_moons, monkeypatch):
    X, y = big_moons
    K = rbf_kernel(X, variance=10.0, lengthscale=0.8)
    reference = gpc_laplace(K, y)
    monkeypatch.setattr(gp, "_CG_ITER_DIVISOR", len(y))  # one CG iteration allowed: always fails
    m = gp._mode(K, y)
    assert m["converged"] and m["n_factorisations"] == m["n_iter"] + 1  # exact steps after the failure
    assert_allclose(m["f"], reference.f_hat, rtol=0, atol=1e-9)


def test_conjugate_gradient_max_iter_still_factorises_at_the_last_iterate(big_moons):
    X, y = big_moons
    K = rbf_kernel(X, variance=10.0, lengthscale=0.8)
    with pytest.warns(ConvergenceWarning):
        fit = gpc_laplace(K, y, max_iter=1)
    assert fit.n_iter == 1 and not fit.converged
    assert_allclose(np.diag(fit.L @ fit.L.T), 1.0 + fit.W_sqrt**2 * np.diag(K), rtol=1e-12)
    assert_allclose(fit.W_sqrt**2, expit(fit.f_hat) * expit(-fit.f_hat), rtol=1e-12)


def test_lml_gradient_at_large_n_matches_central_differences(big_moons):
    X, y = big_moons
    theta = np.log([5.0, 0.6])
    _, grad = gpc_log_marginal_likelihood(X, y, *np.exp(theta))
    h = 1e-5
    for j in range(2):
        e = np.zeros(2)
        e[j] = h
        up = gpc_log_marginal_likelihood(X, y, *np.exp(theta + e), eval_gradient=False)
        down = gpc_log_marginal_likelihood(X, y, *np.exp(theta - e), eval_gradient=False)
        assert abs((up - down) / (2 * h) - grad[j]) <= 1e-6 * (1 + abs(grad[j]))


# --- prediction (Algorithm 3.2) --------------------------------------------------------------

@pytest.mark.parametrize("variance", VARIANCES)
@pytest.mark.parametrize("lengthscale", LENGTHSCALES)
def test_latent_moments_match_sklearn(moons, X_test, variance, lengthscale):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X, variance=variance, lengthscale=lengthscale), y)
    pred = gpc_predict(fit, rbf_kernel(X_test, X, variance=variance, lengthscale=lengthscale),
                       np.full(len(X_test), variance))
    mean, var = sklearn_fixed(X, y, variance, lengthscale).latent_mean_and_variance(X_test)
    assert_allclose(pred.mean, mean, rtol=1e-8, atol=1e-8)
    assert_allclose(pred.var, np.maximum(var, 0), rtol=1e-8, atol=1e-8)


def test_latent_variance_equals_dense_formula(moons, X_test):
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


@pytest.mark.parametrize("method", ["probit", "quadrature", "mc"])
def test_probabilities_use_expected_sigmoid(moons, X_test, method):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X, variance=50.0), y)
    pred = gpc_predict(fit, rbf_kernel(X_test, X, variance=50.0), np.full(len(X_test), 50.0), method=method)
    assert_allclose(pred.prob, expected_sigmoid(pred.mean, pred.var, method=method), rtol=0, atol=1e-15)
    assert np.all((pred.prob >= 0) & (pred.prob <= 1)) and pred.method == method


def test_plugin_ignores_the_variance(moons, X_test):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X, variance=50.0), y)
    Ks = rbf_kernel(X_test, X, variance=50.0)
    plug = gpc_predict(fit, Ks, np.full(len(X_test), 50.0), method="plugin")
    probit = gpc_predict(fit, Ks, np.full(len(X_test), 50.0))
    assert_allclose(plug.prob, expit(plug.mean), rtol=0, atol=0)
    # averaging over the latent uncertainty pulls probabilities towards 1/2
    assert np.all(np.abs(probit.prob - 0.5) <= np.abs(plug.prob - 0.5) + 1e-15)


def test_quadrature_and_probit_are_close(moons, X_test):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X, variance=5.0), y)
    Ks, kss = rbf_kernel(X_test, X, variance=5.0), np.full(len(X_test), 5.0)
    quad = gpc_predict(fit, Ks, kss, method="quadrature").prob
    assert_allclose(gpc_predict(fit, Ks, kss, method="probit").prob, quad, rtol=0, atol=0.02)


# --- the gradient of the marginal likelihood (Algorithm 5.1) ---------------------------------

@pytest.fixture(scope="module")
def small_moons():
    return datasets.two_moons(50, noise=0.3, seed=2)


@pytest.mark.parametrize("variance", [0.1, 1.0, 10.0, 100.0])
@pytest.mark.parametrize("lengthscale", [0.05, 0.2, 1.0, 5.0, 20.0])
def test_lml_gradient_matches_central_differences(small_moons, variance, lengthscale):
    """A sweep over scales: the implicit term through f_hat matters (scikit-learn issue 31366)."""
    X, y = small_moons
    lml, grad = gpc_log_marginal_likelihood(X, y, variance, lengthscale)
    theta, h = np.log([variance, lengthscale]), 1e-4

    def f(t):
        return gpc_log_marginal_likelihood(X, y, np.exp(t[0]), np.exp(t[1]), eval_gradient=False, tol=1e-14)

    fd = np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(2)])
    assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)
    assert lml == pytest.approx(gpc_laplace(rbf_kernel(X, variance=variance, lengthscale=lengthscale), y)
                                .log_marginal_likelihood, abs=1e-9)


def test_lml_gradient_without_implicit_term_would_be_wrong(small_moons):
    """The explicit part alone (Alg. 5.1 line 12) differs from the finite differences."""
    X, y = small_moons
    _, grad = gpc_log_marginal_likelihood(X, y, 10.0, 0.5)
    K = rbf_kernel(X, variance=10.0, lengthscale=0.5)
    fit = gpc_laplace(K, y)
    W_sqrt = fit.W_sqrt
    B = np.eye(len(y)) + W_sqrt[:, None] * K * W_sqrt[None, :]
    R = W_sqrt[:, None] * np.linalg.solve(B, np.diag(W_sqrt))
    explicit = 0.5 * fit.a @ K @ fit.a - 0.5 * np.sum(R * K)
    assert abs(explicit - grad[0]) > 1e-3


@pytest.mark.parametrize("variance, lengthscale", [(1.0, 1.0), (10.0, 0.2), (100.0, 5.0), (0.1, 0.05)])
def test_lml_gradient_matches_sklearn(small_moons, variance, lengthscale):
    X, y = small_moons
    lml, grad = gpc_log_marginal_likelihood(X, y, variance, lengthscale)
    kernel = ConstantKernel(variance) * RBF(lengthscale)  # free hyperparameters, but no optimisation
    sk = GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(X, y).base_estimator_
    sk_lml, sk_grad = sk.log_marginal_likelihood(np.log([variance, lengthscale]), eval_gradient=True)
    assert_allclose(lml, sk_lml, rtol=0, atol=1e-8)
    assert_allclose(grad, sk_grad, rtol=1e-7, atol=1e-8)


def test_warm_started_lml_matches_cold(small_moons):
    X, y = small_moons
    prev = gpc_laplace(rbf_kernel(X, variance=3.0, lengthscale=0.6), y)
    cold = gpc_log_marginal_likelihood(X, y, 3.3, 0.62)
    warm = gpc_log_marginal_likelihood(X, y, 3.3, 0.62, init=prev)
    assert_allclose(warm[0], cold[0], rtol=0, atol=1e-10)
    assert_allclose(warm[1], cold[1], rtol=1e-8, atol=1e-10)


# --- bad input -------------------------------------------------------------------------------

K3 = rbf_kernel(np.array([[0.0], [1.0], [2.0]]))
Y3 = np.array([0, 1, 1])
FIT3 = gpc_laplace(K3, Y3)


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
        (lambda: gpc_laplace(K3, Y3, max_iter=0), ValueError, r"max_iter must be >= 1, got 0"),
        (lambda: gpc_laplace(K3, Y3, tol=-1.0), ValueError, r"tol must be > 0, got -1"),
        (lambda: gpc_laplace(K3, Y3, f0=np.zeros(2)), ValueError, r"f0 must have length 3, got length 2"),
        (lambda: gpc_predict("fit", K3, np.ones(3)), TypeError, r"fit must be a GPCLaplace .* got str"),
        (lambda: gpc_predict(FIT3, np.ones((2, 4)), np.ones(2)), ValueError,
         r"K_star must have shape \(m, 3\) .* got shape \(2, 4\)"),
        (lambda: gpc_predict(FIT3, np.ones((2, 3)), np.ones(3)), ValueError, r"k_star_star must have length 2, got length 3"),
        (lambda: gpc_predict(FIT3, np.ones((2, 3)), -np.ones(2)), ValueError, r"k_star_star must be >= 0"),
        (lambda: gpc_predict(FIT3, np.ones((2, 3)), np.ones(2), method="laplace"), ValueError,
         r"method must be one of \('probit', 'quadrature', 'mc', 'plugin'\), got 'laplace'"),
        (lambda: gpc_log_marginal_likelihood(np.ones((3, 1)), Y3, 1.0, 0.0), ValueError, r"lengthscale must be > 0, got 0"),
        (lambda: gpc_log_marginal_likelihood(np.ones((3, 1)), Y3, -1.0, 1.0), ValueError, r"variance must be > 0, got -1"),
        (lambda: gpc_log_marginal_likelihood(np.ones((3, 1)), Y3[:2], 1.0, 1.0), ValueError, r"X and y have different"),
        (lambda: gpc_log_marginal_likelihood(np.ones((3, 1)), Y3, 1.0, 1.0, init=FIT3.f_hat), TypeError,
         r"init must be a GPCLaplace or None, got ndarray"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
