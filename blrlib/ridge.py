r"""Ridge regression in its primal and dual (kernel) forms.

Book: chapter 7.  Ridge regression minimises
:math:`\|\mathbf y - X\mathbf w\|^2 + \delta \|\mathbf w\|^2`; its solution can be
written in the primal form (equation ``eq-ridge-primal``), a :math:`d \times d`
solve, or in the dual form (equation ``eq-ridge-dual``), an :math:`n \times n` solve
that touches the inputs only through the inner products :math:`K = X X^\top`.
Replacing :math:`K` by any kernel matrix gives kernel ridge regression.

Both systems are symmetric positive definite for :math:`\delta > 0` and are solved
by a Cholesky factorisation (``cho_factor`` / ``cho_solve``), never an inverse.
The targets ``y`` are real numbers here (regression), not labels.
"""

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from ._validation import as_kernel_matrix, as_matrix, as_targets, check_nonnegative

__all__ = ["ridge_primal", "kernel_ridge"]


def _solve_spd(A, b, penalty, what):
    """Solve ``A x = b`` for symmetric positive (semi-)definite ``A`` by Cholesky.

    Raises a ValueError that suggests a larger penalty when ``A`` is singular or
    so ill-conditioned that the solution would be meaningless.
    """
    hint = (
        f"{what} is singular or numerically not positive definite with penalty={penalty:g}; "
        f"use a penalty > 0 (or a larger one)"
    )
    try:
        c, lower = cho_factor(A, lower=True, check_finite=False)
    except LinAlgError:
        raise ValueError(hint) from None
    d = np.abs(np.diag(c))
    # the squared ratio of the Cholesky pivots bounds the condition number from below
    if d.min() == 0 or (d.min() / d.max()) ** 2 < A.shape[0] * np.finfo(float).eps:
        raise ValueError(hint)
    return cho_solve((c, lower), b, check_finite=False)


def ridge_primal(X, y, penalty):
    r"""Ridge regression weights in the primal form.

    .. math:: \mathbf w = (X^\top X + \delta I)^{-1} X^\top \mathbf y

    Predictions at new inputs are ``X_new @ w``.  No intercept is added; use
    :func:`~blrlib.add_intercept` if you want one (it is then penalised too).

    Book: chapter 7, equation ``eq-ridge-primal``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,)
        Real-valued targets.
    penalty : float
        :math:`\delta \ge 0`.  ``penalty=0`` is least squares and needs
        :math:`X^\top X` to be non-singular.

    Returns
    -------
    w : ndarray of shape (d,)

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> ridge_primal(X, np.array([1.0, 2.0, 3.0]), penalty=0.0)
    array([1., 2.])
    >>> ridge_primal(X, np.array([1.0, 2.0, 3.0]), penalty=1.0)
    array([0.875, 1.375])
    """
    X = as_matrix(X)
    y = as_targets(y, X.shape[0])
    penalty = check_nonnegative(penalty, "penalty")
    A = X.T @ X
    A[np.diag_indices_from(A)] += penalty
    return _solve_spd(A, X.T @ y, penalty, "X^T X + penalty I")


def kernel_ridge(K, y, penalty):
    r"""Kernel ridge regression coefficients (the dual form of ridge regression).

    .. math:: \boldsymbol\alpha = (K + \delta I)^{-1} \mathbf y

    Predictions at new inputs are ``K_new @ alpha`` with
    ``K_new[i, j] = k(x_new_i, x_j)`` of shape (m, n).  With the linear kernel
    :math:`K = X X^\top` they equal the primal predictions
    :math:`X_\text{new} \mathbf w` of :func:`ridge_primal`, since
    :math:`\mathbf w = X^\top \boldsymbol\alpha`.

    Book: chapter 7, equation ``eq-ridge-dual``.

    Parameters
    ----------
    K : array_like of shape (n, n)
        A symmetric positive semi-definite kernel matrix of the training inputs.
    y : array_like of shape (n,)
        Real-valued targets.
    penalty : float
        :math:`\delta \ge 0`.  ``penalty=0`` is kernel interpolation and needs
        :math:`K` to be non-singular.

    Returns
    -------
    alpha : ndarray of shape (n,)

    Examples
    --------
    >>> from blrlib import linear_kernel
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> y = np.array([1.0, 2.0, 3.0])
    >>> alpha = kernel_ridge(linear_kernel(X), y, penalty=1.0)
    >>> X.T @ alpha
    array([0.875, 1.375])
    """
    K = as_kernel_matrix(K)
    y = as_targets(y, K.shape[0], rows_name="K")
    penalty = check_nonnegative(penalty, "penalty")
    A = K.copy()
    A[np.diag_indices_from(A)] += penalty
    return _solve_spd(A, y, penalty, "K + penalty I")
