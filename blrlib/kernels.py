r"""Kernel functions: inner products in a feature space, computed without the features.

Book: chapter 7 (kernels and dual ridge regression; the kernel is defined in
equation ``eq-kernel-def`` and the polynomial kernel in ``eq-poly-kernel``) and
chapter 8 (the RBF kernel, equation ``eq-rbf``).

A kernel :math:`k(\mathbf x, \mathbf x')` is a function whose matrix
:math:`K_{ij} = k(\mathbf x_i, \mathbf x'_j)` is symmetric and positive
semi-definite on every finite set of points.  Each function here takes two
input matrices ``X1`` of shape (n, d) and ``X2`` of shape (m, d) and returns the
(n, m) matrix; ``X2=None`` means ``X2 = X1`` and then the result is exactly
symmetric.  Hyperparameters are keyword-only and spelled out: ``lengthscale``
is :math:`\ell` itself, not :math:`\ell^2`.
"""

import numbers

import numpy as np
from scipy.spatial.distance import cdist

from ._validation import as_matrix_pair, check_int, check_nonnegative, check_positive

__all__ = ["rbf_kernel", "linear_kernel", "polynomial_kernel"]


def _squared_distances(X1, X2=None):
    r"""Matrix of squared Euclidean distances :math:`\|\mathbf x_i - \mathbf x'_j\|^2`.

    Formed from the differences themselves (``scipy.spatial.distance``), not from
    the expansion :math:`\|\mathbf x\|^2 + \|\mathbf x'\|^2 - 2\mathbf x^\top\mathbf x'`,
    which cancels catastrophically for nearby points and can even turn negative;
    every entry here is a sum of squares, so it is exact to rounding and never
    below 0.  With ``X2=None`` the result is exactly symmetric with a zero diagonal:
    :math:`(x_{ik} - x_{jk})^2` and :math:`(x_{jk} - x_{ik})^2` are the same floating-point
    number, summed over k in the same order.  (``cdist`` on the full square is about
    three times faster than ``squareform(pdist(...))``, which copies each pair twice.)
    """
    return cdist(X1, X1 if X2 is None else X2, "sqeuclidean")


def _rbf_from_sqdist(D, variance, lengthscale, out=None):
    r"""The RBF kernel (equation ``eq-rbf``) from squared distances: the one place its formula is written.

    :math:`\sigma^2 \exp(-D / 2\ell^2)` elementwise.  :func:`rbf_kernel` and the GP
    classifier's hyperparameter search (which keeps the squared distances and
    recomputes the kernel for each new :math:`(\sigma^2, \ell)`) both call it; ``out``,
    an array of D's shape, receives the result so that the search can reuse one buffer.
    """
    out = np.multiply(-0.5 / lengthscale**2, D, out=out)
    np.exp(out, out=out)
    out *= variance
    return out


def rbf_kernel(X1, X2=None, *, variance=1.0, lengthscale=1.0):
    r"""The radial basis function (squared exponential, Gaussian) kernel.

    .. math:: k(\mathbf x, \mathbf x') = \sigma^2
              \exp\!\Big(-\frac{\|\mathbf x - \mathbf x'\|^2}{2\ell^2}\Big)

    Book: chapter 8, equation ``eq-rbf``.

    Parameters
    ----------
    X1 : array_like of shape (n, d)
    X2 : array_like of shape (m, d), optional
        Defaults to ``X1``.
    variance : float, default 1
        The signal variance :math:`\sigma^2 \ge 0`, the value of :math:`k(\mathbf x, \mathbf x)`.
    lengthscale : float, default 1
        The length scale :math:`\ell > 0` (not :math:`\ell^2`): the distance over
        which the function values decorrelate.

    Returns
    -------
    ndarray of shape (n, m)
        Symmetric positive semi-definite when ``X2`` is omitted.

    Examples
    --------
    >>> K = rbf_kernel(np.array([[0.0], [1.0]]), variance=2.0, lengthscale=1.0)
    >>> K
    array([[2.        , 1.21306132],
           [1.21306132, 2.        ]])
    >>> bool(np.isclose(K[0, 1], 2.0 * np.exp(-0.5)))
    True
    """
    X1, X2 = as_matrix_pair(X1, X2)
    variance = check_nonnegative(variance, "variance")
    lengthscale = check_positive(lengthscale, "lengthscale")
    return _rbf_from_sqdist(_squared_distances(X1, X2), variance, lengthscale)


def _gram(X1, X2):
    """``X1 @ X2.T``, exactly symmetric when ``X2`` is None."""
    if X2 is None:
        G = X1 @ X1.T
        return 0.5 * (G + G.T)
    return X1 @ X2.T


def linear_kernel(X1, X2=None, *, variance=1.0, bias=0.0):
    r"""The linear kernel: a scaled inner product plus a constant.

    .. math:: k(\mathbf x, \mathbf x') = \sigma^2\, \mathbf x^\top \mathbf x' + c

    With ``variance=1`` and ``bias=0`` it is the plain Gram matrix :math:`X_1 X_2^\top`,
    and kernel ridge regression with it reproduces ordinary ridge regression.  It is
    the kernel of the Bayesian linear model :math:`f(\mathbf x) = b + \mathbf w^\top \mathbf x`
    with :math:`\mathbf w \sim \mathcal N(0, \sigma^2 I)` and :math:`b \sim \mathcal N(0, c)`.

    Book: chapter 7, equation ``eq-kernel-def``.

    Parameters
    ----------
    X1 : array_like of shape (n, d)
    X2 : array_like of shape (m, d), optional
        Defaults to ``X1``.
    variance : float, default 1
        :math:`\sigma^2 \ge 0`, the prior variance of each weight.
    bias : float, default 0
        :math:`c \ge 0`, the prior variance of an (implicit) intercept.

    Returns
    -------
    ndarray of shape (n, m)

    Examples
    --------
    >>> X = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> linear_kernel(X)
    array([[ 5., 11.],
           [11., 25.]])
    >>> linear_kernel(X, X[:1], variance=2.0, bias=1.0)
    array([[11.],
           [23.]])
    """
    X1, X2 = as_matrix_pair(X1, X2)
    variance = check_nonnegative(variance, "variance")
    bias = check_nonnegative(bias, "bias")
    return variance * _gram(X1, X2) + bias


def polynomial_kernel(X1, X2=None, *, degree=2, coef0=1.0):
    r"""The polynomial kernel.

    .. math:: k(\mathbf x, \mathbf x') = (\mathbf x^\top \mathbf x' + c)^p

    It is the inner product of all monomials of the inputs up to degree :math:`p`
    (exactly degree :math:`p` when :math:`c = 0`), weighted by binomial coefficients
    and powers of :math:`c`.

    Book: chapter 7, equation ``eq-poly-kernel``.

    Parameters
    ----------
    X1 : array_like of shape (n, d)
    X2 : array_like of shape (m, d), optional
        Defaults to ``X1``.
    degree : int, default 2
        :math:`p \ge 1`.
    coef0 : float, default 1
        :math:`c \ge 0`; a negative :math:`c` would not give a positive
        semi-definite kernel in general, so it is rejected.

    Returns
    -------
    ndarray of shape (n, m)

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0]])
    >>> polynomial_kernel(X, degree=2, coef0=1.0)
    array([[4., 4.],
           [4., 9.]])
    """
    X1, X2 = as_matrix_pair(X1, X2)
    if isinstance(degree, numbers.Real) and not isinstance(degree, numbers.Integral | bool) and float(degree).is_integer():
        degree = int(degree)
    degree = check_int(degree, "degree", minimum=1)
    coef0 = check_nonnegative(coef0, "coef0")
    return (_gram(X1, X2) + coef0) ** degree
