"""Kernel functions (chapter 7, eq-kernel-def and eq-poly-kernel; chapter 8, eq-rbf)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.metrics.pairwise import polynomial_kernel as sk_polynomial_kernel

from blrlib import linear_kernel, polynomial_kernel, rbf_kernel

KERNELS = {
    "rbf": lambda X1, X2=None: rbf_kernel(X1, X2, variance=2.5, lengthscale=0.7),
    "rbf_small_l": lambda X1, X2=None: rbf_kernel(X1, X2, variance=100.0, lengthscale=0.05),
    "linear": lambda X1, X2=None: linear_kernel(X1, X2, variance=0.5, bias=2.0),
    "poly2": lambda X1, X2=None: polynomial_kernel(X1, X2, degree=2, coef0=1.0),
    "poly3": lambda X1, X2=None: polynomial_kernel(X1, X2, degree=3, coef0=0.0),
}


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("d", [1, 3, 10])
def test_symmetric_and_psd(rng, name, d):
    """A kernel matrix is symmetric positive semi-definite (chapter 7, eq-kernel-def)."""
    X = rng.standard_normal((40, d))
    K = KERNELS[name](X)
    assert K.shape == (40, 40)
    assert np.array_equal(K, K.T)
    eig = np.linalg.eigvalsh(K)
    assert eig.min() >= -1e-10 * max(1.0, np.abs(eig).max())


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_cross_matrix_matches_square(rng, name):
    X1, X2 = rng.standard_normal((7, 2)), rng.standard_normal((5, 2))
    K = KERNELS[name](np.vstack([X1, X2]))
    assert_allclose(KERNELS[name](X1, X2), K[:7, 7:], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variance", [0.1, 1.0, 10.0, 1000.0])
@pytest.mark.parametrize("lengthscale", [0.05, 0.3, 1.0, 3.0, 20.0])
def test_rbf_equals_sklearn(rng, variance, lengthscale):
    """eq-rbf equals scikit-learn's ConstantKernel * RBF (whose length_scale is also l)."""
    X1, X2 = rng.standard_normal((30, 3)), rng.standard_normal((20, 3))
    sk = ConstantKernel(variance) * RBF(lengthscale)
    assert_allclose(rbf_kernel(X1, X2, variance=variance, lengthscale=lengthscale), sk(X1, X2),
                    rtol=1e-12, atol=1e-14 * variance)
    assert_allclose(rbf_kernel(X1, variance=variance, lengthscale=lengthscale), sk(X1),
                    rtol=1e-12, atol=1e-14 * variance)


def test_rbf_definition_and_diagonal(rng):
    X1, X2 = rng.standard_normal((4, 2)), rng.standard_normal((3, 2))
    K = rbf_kernel(X1, X2, variance=3.0, lengthscale=0.8)
    for i in range(4):
        for j in range(3):
            r2 = np.sum((X1[i] - X2[j]) ** 2)
            assert_allclose(K[i, j], 3.0 * np.exp(-r2 / (2 * 0.8**2)), rtol=1e-13)
    assert_allclose(np.diag(rbf_kernel(X1, variance=3.0)), 3.0, rtol=0, atol=0)


def test_rbf_nearby_points_are_accurate():
    """Squared distances of nearby points far from the origin do not cancel or go negative."""
    X = np.array([[1e8, 1e8], [1e8 + 1e-3, 1e8]])
    K = rbf_kernel(X, lengthscale=1e-3)
    r = X[1, 0] - X[0, 0]  # the distance of the stored inputs (exact: Sterbenz), 1e-3 to 2e-6
    assert_allclose(K[0, 1], np.exp(-0.5 * (r / 1e-3) ** 2), rtol=1e-14)
    assert_allclose(K[0, 1], np.exp(-0.5), rtol=1e-5)
    assert np.all(K <= 1.0)


def test_linear_and_polynomial_definitions(rng):
    X1, X2 = rng.standard_normal((6, 4)), rng.standard_normal((5, 4))
    assert_allclose(linear_kernel(X1, X2), X1 @ X2.T, rtol=1e-13, atol=1e-13)
    assert_allclose(linear_kernel(X1, X2, variance=2.0, bias=0.5), 2.0 * X1 @ X2.T + 0.5, rtol=1e-13, atol=1e-13)
    assert_allclose(polynomial_kernel(X1, X2, degree=3, coef0=0.5), (X1 @ X2.T + 0.5) ** 3, rtol=1e-13, atol=1e-13)
    # scikit-learn's polynomial kernel is (gamma x.x' + coef0)^degree
    assert_allclose(polynomial_kernel(X1, X2, degree=3, coef0=0.5),
                    sk_polynomial_kernel(X1, X2, degree=3, gamma=1.0, coef0=0.5), rtol=1e-12, atol=1e-12)


def test_polynomial_is_feature_inner_product(rng):
    """(x.x' + 1)^2 is the inner product of the features (1, sqrt2 x1, sqrt2 x2, x1^2, x2^2, sqrt2 x1 x2)."""
    X = rng.standard_normal((8, 2))
    s = np.sqrt(2.0)
    Phi = np.column_stack([np.ones(8), s * X[:, 0], s * X[:, 1], X[:, 0] ** 2, X[:, 1] ** 2, s * X[:, 0] * X[:, 1]])
    assert_allclose(polynomial_kernel(X, degree=2, coef0=1.0), Phi @ Phi.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: rbf_kernel(np.ones(3)), ValueError, r"X1 must be 2-D .* got ndim=1"),
        (lambda: rbf_kernel(np.ones((3, 2)), np.ones((2, 3))), ValueError, r"same number of columns, got 2 and 3"),
        (lambda: rbf_kernel(np.array([[np.nan, 1.0]])), ValueError, r"X1 must contain only finite numbers"),
        (lambda: rbf_kernel(np.ones((3, 2)), lengthscale=0.0), ValueError, r"lengthscale must be > 0, got 0"),
        (lambda: rbf_kernel(np.ones((3, 2)), lengthscale=-1.0), ValueError, r"lengthscale must be > 0, got -1"),
        (lambda: rbf_kernel(np.ones((3, 2)), variance=-1.0), ValueError, r"variance must be >= 0, got -1"),
        (lambda: rbf_kernel(np.ones((3, 2)), variance="big"), TypeError, r"variance must be a real number, got str"),
        (lambda: rbf_kernel(np.ones((0, 2))), ValueError, r"X1 is empty"),
        (lambda: rbf_kernel("abc"), TypeError, r"X1 must be array-like of numbers"),
        (lambda: linear_kernel(np.ones((3, 2)), bias=-0.5), ValueError, r"bias must be >= 0, got -0.5"),
        (lambda: polynomial_kernel(np.ones((3, 2)), degree=0), ValueError, r"degree must be >= 1, got 0"),
        (lambda: polynomial_kernel(np.ones((3, 2)), degree=1.5), TypeError, r"degree must be an integer, got float"),
        (lambda: polynomial_kernel(np.ones((3, 2)), coef0=-1.0), ValueError, r"coef0 must be >= 0, got -1"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
