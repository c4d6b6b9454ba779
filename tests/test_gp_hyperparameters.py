"""The marginal likelihood of GP classification and its gradient (chapter 9: GPML Alg. 5.1;
chapter 11: GPML eq. 5.27 for EP) against central finite differences over many scales and
against scikit-learn."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from blrlib import (
    ConvergenceWarning,
    datasets,
    gpc_ep,
    gpc_laplace,
    gpc_log_marginal_likelihood,
    rbf_kernel,
)
from blrlib.gp_hyperparameters import _Buffers, _evaluate
from blrlib.kernels import _squared_distances


@pytest.fixture(scope="module")
def small_moons():
    return datasets.two_moons(50, noise=0.3, seed=2)


def central_differences(f, theta, h):
    return np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(len(theta))])


# --- Laplace (Algorithm 5.1) -----------------------------------------------------------------

@pytest.mark.parametrize("variance", [0.1, 1.0, 10.0, 100.0])
@pytest.mark.parametrize("lengthscale", [0.05, 0.2, 1.0, 5.0, 20.0])
def test_laplace_gradient_matches_central_differences(small_moons, variance, lengthscale):
    """A sweep over scales: the implicit term through f_hat matters (scikit-learn issue 31366)."""
    X, y = small_moons
    lml, grad = gpc_log_marginal_likelihood(X, y, variance, lengthscale)

    def f(t):
        return gpc_log_marginal_likelihood(X, y, np.exp(t[0]), np.exp(t[1]), eval_gradient=False, tol=1e-14)

    assert_allclose(grad, central_differences(f, np.log([variance, lengthscale]), 1e-4), rtol=1e-6, atol=1e-6)
    assert lml == pytest.approx(gpc_laplace(rbf_kernel(X, variance=variance, lengthscale=lengthscale), y)
                                .log_marginal_likelihood, abs=1e-9)


def test_laplace_gradient_without_implicit_term_would_be_wrong(small_moons):
    """The explicit part alone (Alg. 5.1 line 12) differs from the finite differences."""
    X, y = small_moons
    _, grad = gpc_log_marginal_likelihood(X, y, 10.0, 0.5)
    K = rbf_kernel(X, variance=10.0, lengthscale=0.5)
    fit = gpc_laplace(K, y)
    W_sqrt = fit.W_sqrt
    B = np.eye(len(y)) + W_sqrt[:, None] * K * W_sqrt[None, :]
    R = W_sqrt[:, None] * np.linalg.solve(B, np.diag(W_sqrt))
    explicit = 0.5 * fit.alpha @ K @ fit.alpha - 0.5 * np.sum(R * K)
    assert abs(explicit - grad[0]) > 1e-3


@pytest.mark.parametrize("variance, lengthscale", [(1.0, 1.0), (10.0, 0.2), (100.0, 5.0), (0.1, 0.05), (5.0, 1e-4)])
def test_laplace_gradient_matches_sklearn(small_moons, variance, lengthscale):
    """(5, 1e-4): K is diagonal to the last bit, and B, L and B^-1 are formed without factorising."""
    X, y = small_moons
    lml, grad = gpc_log_marginal_likelihood(X, y, variance, lengthscale)
    kernel = ConstantKernel(variance) * RBF(lengthscale)  # free hyperparameters, but no optimisation
    sk = GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(X, y).base_estimator_
    sk_lml, sk_grad = sk.log_marginal_likelihood(np.log([variance, lengthscale]), eval_gradient=True)
    assert_allclose(lml, sk_lml, rtol=0, atol=1e-8)
    assert_allclose(grad, sk_grad, rtol=1e-7, atol=1e-8)


def test_laplace_gradient_at_large_n_matches_central_differences(big_moons):
    """n = 600: the mode search takes conjugate-gradient steps; the gradient is still exact."""
    X, y = big_moons
    theta = np.log([5.0, 0.6])
    _, grad = gpc_log_marginal_likelihood(X, y, *np.exp(theta))

    def f(t):
        return gpc_log_marginal_likelihood(X, y, *np.exp(t), eval_gradient=False)

    assert_allclose(grad, central_differences(f, theta, 1e-5), rtol=1e-6, atol=1e-6)


def test_warm_started_lml_matches_cold(small_moons):
    X, y = small_moons
    prev = gpc_laplace(rbf_kernel(X, variance=3.0, lengthscale=0.6), y)
    cold = gpc_log_marginal_likelihood(X, y, 3.3, 0.62)
    warm = gpc_log_marginal_likelihood(X, y, 3.3, 0.62, init=prev)
    assert_allclose(warm[0], cold[0], rtol=0, atol=1e-10)
    assert_allclose(warm[1], cold[1], rtol=1e-8, atol=1e-10)


# --- EP (GPML eq. 5.27) ----------------------------------------------------------------------

@pytest.mark.parametrize("variance", [0.1, 1.0, 10.0, 100.0])
@pytest.mark.parametrize("lengthscale", [0.05, 0.2, 1.0, 5.0])
def test_ep_gradient_matches_central_differences(small_moons, variance, lengthscale):
    """At the fixed point the EP lml is stationary in the sites, so eq. 5.27 is the whole gradient."""
    X, y = small_moons
    lml, grad = gpc_log_marginal_likelihood(X, y, variance, lengthscale, inference="ep", tol=1e-12,
                                            max_iter=1000)

    def f(t):
        return gpc_log_marginal_likelihood(X, y, *np.exp(t), eval_gradient=False, inference="ep", tol=1e-13,
                                           max_iter=1000)

    assert_allclose(grad, central_differences(f, np.log([variance, lengthscale]), 1e-4), rtol=1e-6, atol=1e-6)
    ep = gpc_ep(rbf_kernel(X, variance=variance, lengthscale=lengthscale), y, tol=1e-12, max_sweeps=1000)
    assert lml == pytest.approx(ep.log_marginal_likelihood, abs=1e-9)


def test_ep_gradient_at_large_n_matches_central_differences(big_moons):
    """n = 600: EP iterates first on a low-rank K, then exactly; the gradient is that of the exact lml."""
    X, y = big_moons
    theta = np.log([2.0, 0.9])
    _, grad = gpc_log_marginal_likelihood(X, y, *np.exp(theta), inference="ep", tol=1e-12, max_iter=500)

    def f(t):
        return gpc_log_marginal_likelihood(X, y, *np.exp(t), eval_gradient=False, inference="ep", tol=1e-12,
                                           max_iter=500)

    assert_allclose(grad, central_differences(f, theta, 1e-5), rtol=1e-5, atol=1e-5)


def test_ep_warm_start_from_a_previous_fit(small_moons):
    X, y = small_moons
    prev = gpc_ep(rbf_kernel(X, variance=3.0, lengthscale=0.6), y)
    cold = gpc_log_marginal_likelihood(X, y, 3.3, 0.62, inference="ep")
    warm = gpc_log_marginal_likelihood(X, y, 3.3, 0.62, inference="ep", init=prev)
    assert_allclose(warm[0], cold[0], rtol=0, atol=1e-7)
    assert_allclose(warm[1], cold[1], rtol=1e-5, atol=1e-6)


def test_unconverged_inner_iterations_warn(small_moons):
    X, y = small_moons
    with pytest.warns(ConvergenceWarning, match="did not converge in max_iter=1"):
        gpc_log_marginal_likelihood(X, y, 10.0, 0.5, max_iter=1)
    with pytest.warns(ConvergenceWarning, match="did not converge in max_sweeps=1"):
        gpc_log_marginal_likelihood(X, y, 10.0, 0.5, inference="ep", max_iter=1)


@pytest.mark.parametrize("inference", ["laplace", "ep"])
def test_reused_buffers_give_the_same_evaluation(small_moons, inference):
    """The hyperparameter search evaluates in reused n x n buffers, consumed by the gradient; the
    result equals a fresh evaluation's, at several points in a row (each warm-started from the last)."""
    X, y = small_moons
    D = _squared_distances(X)
    buffers, last = _Buffers(len(y)), None
    for theta in ([0.0, 0.0], [1.0, -0.5], [3.0, -1.0], [2.0, 0.5]):
        theta = np.array(theta)
        last = _evaluate(D, y, theta, inference, 500, 1e-12, last, True, buffers)
        fresh = _evaluate(D, y, theta, inference, 500, 1e-12, None, True, None)
        assert_allclose(last.lml, fresh.lml, rtol=0, atol=1e-10)
        assert_allclose(last.grad, fresh.grad, rtol=1e-8, atol=1e-9)


# --- bad input -------------------------------------------------------------------------------

Y3 = np.array([0, 1, 1])
X3 = np.array([[0.0], [1.0], [2.0]])
FIT3 = gpc_laplace(rbf_kernel(X3), Y3)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: gpc_log_marginal_likelihood(X3, Y3, 1.0, 0.0), ValueError, r"lengthscale must be > 0, got 0"),
        (lambda: gpc_log_marginal_likelihood(X3, Y3, -1.0, 1.0), ValueError, r"variance must be > 0, got -1"),
        (lambda: gpc_log_marginal_likelihood(X3, Y3[:2], 1.0, 1.0), ValueError, r"X and y have different"),
        (lambda: gpc_log_marginal_likelihood(X3[:, 0], Y3, 1.0, 1.0), ValueError, r"X must be 2-D"),
        (lambda: gpc_log_marginal_likelihood(X3, Y3, 1.0, 1.0, inference="vb"), ValueError,
         r"inference must be one of \('laplace', 'ep'\), got 'vb'"),
        (lambda: gpc_log_marginal_likelihood(X3, Y3, 1.0, 1.0, tol=0.0), ValueError, r"tol must be > 0, got 0"),
        (lambda: gpc_log_marginal_likelihood(X3, Y3, 1.0, 1.0, init=FIT3.f_hat), TypeError,
         r"init must be a GPCLaplace or None for inference='laplace', got ndarray"),
        (lambda: gpc_log_marginal_likelihood(X3, Y3, 1.0, 1.0, inference="ep", init=FIT3), TypeError,
         r"init must be a GPCEP or None for inference='ep', got GPCLaplace"),
        (lambda: gpc_log_marginal_likelihood(X3[:2], Y3[:2], 1.0, 1.0, init=FIT3), ValueError,
         r"init was fitted on 3 points but X has 2 rows"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
