"""Ridge regression, primal and dual (chapter 7, eq-ridge-primal and eq-ridge-dual)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge

from blrlib import kernel_ridge, linear_kernel, polynomial_kernel, rbf_kernel, ridge_primal


def regression_data(rng, n=50, d=3):
    X = rng.standard_normal((n, d))
    y = np.sin(X @ rng.standard_normal(d)) + 0.1 * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize("penalty", [0.0, 1e-3, 1.0, 100.0])
def test_primal_solves_normal_equations(rng, penalty):
    """eq-ridge-primal: (X^T X + lambda I) w = X^T y, and it matches scikit-learn's Ridge."""
    X, y = regression_data(rng)
    w = ridge_primal(X, y, penalty)
    assert_allclose((X.T @ X + penalty * np.eye(3)) @ w, X.T @ y, rtol=1e-10, atol=1e-10)
    sk = Ridge(alpha=penalty, fit_intercept=False, solver="cholesky").fit(X, y)
    assert_allclose(w, sk.coef_, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("penalty", [1e-3, 0.1, 1.0, 100.0])
@pytest.mark.parametrize("n, d", [(50, 3), (10, 30)])
def test_primal_and_dual_predictions_agree(rng, penalty, n, d):
    """eq-ridge-primal and eq-ridge-dual with K = X X^T give the same predictions (and w = X^T alpha)."""
    X, y = regression_data(rng, n, d)
    X_new = rng.standard_normal((20, d))
    w = ridge_primal(X, y, penalty)
    alpha = kernel_ridge(linear_kernel(X), y, penalty)
    assert_allclose(X.T @ alpha, w, rtol=1e-8, atol=1e-10)
    assert_allclose(linear_kernel(X_new, X) @ alpha, X_new @ w, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("penalty", [1e-3, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("lengthscale", [0.3, 1.0, 3.0])
def test_kernel_ridge_rbf_equals_sklearn(rng, penalty, lengthscale):
    """Kernel ridge with the RBF kernel equals sklearn's KernelRidge(kernel="rbf", gamma=1/(2 l^2))."""
    X, y = regression_data(rng)
    X_new = rng.standard_normal((25, 3))
    alpha = kernel_ridge(rbf_kernel(X, lengthscale=lengthscale), y, penalty)
    ours = rbf_kernel(X_new, X, lengthscale=lengthscale) @ alpha
    sk = KernelRidge(alpha=penalty, kernel="rbf", gamma=1.0 / (2.0 * lengthscale**2)).fit(X, y)
    assert_allclose(ours, sk.predict(X_new), rtol=1e-7, atol=1e-9)
    assert_allclose(alpha, sk.dual_coef_, rtol=1e-7, atol=1e-9)


def test_kernel_ridge_polynomial_equals_sklearn(rng):
    X, y = regression_data(rng)
    X_new = rng.standard_normal((10, 3))
    alpha = kernel_ridge(polynomial_kernel(X, degree=3, coef0=1.0), y, 0.5)
    sk = KernelRidge(alpha=0.5, kernel="poly", degree=3, gamma=1.0, coef0=1.0).fit(X, y)
    assert_allclose(polynomial_kernel(X_new, X, degree=3, coef0=1.0) @ alpha, sk.predict(X_new),
                    rtol=1e-7, atol=1e-8)


def test_zero_penalty_interpolates(rng):
    """penalty=0 with a non-singular K interpolates the training targets."""
    X, y = regression_data(rng, n=15)
    K = rbf_kernel(X, lengthscale=0.5)
    assert_allclose(K @ kernel_ridge(K, y, 0.0), y, rtol=0, atol=1e-8)


def test_singular_systems_need_a_penalty(rng):
    X = rng.standard_normal((10, 3))
    X_dup = np.column_stack([X, X[:, 0]])  # rank 3 with 4 columns
    y = rng.standard_normal(10)
    with pytest.raises(ValueError, match=r"X\^T X \+ penalty I is singular .* use a penalty > 0"):
        ridge_primal(X_dup, y, 0.0)
    assert np.all(np.isfinite(ridge_primal(X_dup, y, 1e-3)))
    with pytest.raises(ValueError, match=r"K \+ penalty I is singular .* use a penalty > 0"):
        kernel_ridge(linear_kernel(X), y, 0.0)  # a 10 x 10 matrix of rank 3
    assert np.all(np.isfinite(kernel_ridge(linear_kernel(X), y, 1e-3)))


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: ridge_primal(np.ones((3, 2)), np.ones(4), 1.0), ValueError,
         r"X and y have different lengths: X has 3 rows, y has 4 entries"),
        (lambda: ridge_primal(np.ones((3, 2)), np.ones(3), -1.0), ValueError, r"penalty must be >= 0, got -1"),
        (lambda: ridge_primal(np.ones((3, 2)), np.array([1.0, np.inf, 0.0]), 1.0), ValueError,
         r"y must contain only finite numbers"),
        (lambda: ridge_primal(np.ones(3), np.ones(3), 1.0), ValueError, r"X must be 2-D"),
        (lambda: ridge_primal(np.ones((3, 2)), np.ones((3, 1)), 1.0), ValueError, r"y must be 1-D .* got ndim=2"),
        (lambda: kernel_ridge(np.ones((3, 2)), np.ones(3), 1.0), ValueError, r"K must be square .* got shape \(3, 2\)"),
        (lambda: kernel_ridge(np.array([[1.0, 0.5], [0.0, 1.0]]), np.ones(2), 1.0), ValueError,
         r"K must be symmetric"),
        (lambda: kernel_ridge(np.array([[1.0, np.nan], [np.nan, 1.0]]), np.ones(2), 1.0), ValueError,
         r"K must contain only finite numbers"),
        (lambda: kernel_ridge(np.eye(3), np.ones(2), 1.0), ValueError,
         r"K and y have different lengths: K has 3 rows, y has 2 entries"),
        (lambda: kernel_ridge(np.diag([1.0, -2.0, 1.0]), np.ones(3), 0.1), ValueError,
         r"K must be positive semi-definite, so its diagonal must be >= 0, got K\[1, 1\] = -2"),
        (lambda: kernel_ridge(np.eye(3), np.ones(3), -0.1), ValueError, r"penalty must be >= 0, got -0.1"),
        (lambda: kernel_ridge(np.eye(3), np.ones(3), None), TypeError, r"penalty must be a real number, got NoneType"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
