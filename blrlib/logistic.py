r"""The logistic model: the sigmoid, the log-likelihood and its derivatives.

Book: chapters 1 (the sigmoid and the logit), 2 (likelihood, gradient and Hessian),
3 (Newton's method, which uses the Hessian) and 4 (the Gaussian prior).

Labels are :math:`y_n \in \{0, 1\}`.  The likelihood is written with the signs
:math:`s_n = 2 y_n - 1 \in \{-1, +1\}`, so that
:math:`p(y_n \mid \mathbf x_n, \mathbf w) = \sigma(s_n \mathbf w^\top \mathbf x_n)`
(chapter 1, equation ``eq-signed-likelihood``); ``_signs`` is the one place that
forms them.  The prior is :math:`\mathbf w \sim \mathcal N(0, \lambda^{-1} I)` with
:math:`\lambda` = ``prior_precision``; ``prior_precision=0`` gives maximum likelihood.
``prior_precision`` may also be a vector of per-weight precisions
:math:`(\lambda_1, \dots, \lambda_d)`, the prior :math:`\mathcal N(0, \Lambda^{-1})` with
:math:`\Lambda = \operatorname{diag}(\lambda_j)` (chapter 4); a zero entry leaves its
weight unpenalised, e.g. ``[0, lam, ..., lam]`` for a free intercept.
"""

import numpy as np
from scipy.linalg.blas import dsyrk
from scipy.special import expit, log_expit

from ._validation import as_labels, as_matrix, as_prior_precision, as_probabilities, as_weights

__all__ = [
    "sigmoid",
    "log_sigmoid",
    "logit",
    "add_intercept",
    "log_likelihood",
    "log_posterior",
    "gradient",
    "hessian",
]


def sigmoid(a):
    r"""The logistic sigmoid :math:`\sigma(a) = 1 / (1 + e^{-a})`, elementwise.

    Stable for every finite ``a``: no overflow at :math:`|a| = 10^4`.

    Book: chapter 1, equation ``eq-sigmoid``.

    Parameters
    ----------
    a : array_like
        Activations (log odds).

    Returns
    -------
    ndarray or float
        Probabilities in [0, 1].

    Examples
    --------
    >>> sigmoid(0.0)
    0.5
    >>> sigmoid(np.array([-1e4, 1e4]))
    array([0., 1.])
    """
    return _scalar_or_array(expit(a))


def _scalar_or_array(out):
    """Return 0-d results as Python floats, arrays unchanged."""
    return float(out) if np.ndim(out) == 0 else out


def log_sigmoid(a):
    r"""The log of the sigmoid, :math:`\log \sigma(a) = -\log(1 + e^{-a})`, elementwise.

    Computed directly (``scipy.special.log_expit``), never as ``log(sigmoid(a))``,
    which returns ``-inf`` once :math:`\sigma(a)` underflows (about :math:`a < -745`).

    Book: chapter 2, equation ``eq-loglik``.

    Examples
    --------
    >>> log_sigmoid(0.0)
    -0.6931471805599453
    >>> log_sigmoid(np.array([-1e4, 1e4]))
    array([-10000.,     -0.])
    """
    return _scalar_or_array(log_expit(a))


def logit(p):
    r"""The log odds :math:`\log(p / (1 - p))`, the inverse of :func:`sigmoid`.

    Book: chapter 1, equation ``eq-logit``.

    Parameters
    ----------
    p : array_like
        Probabilities in [0, 1]; 0 and 1 map to ``-inf`` and ``+inf``.

    Examples
    --------
    >>> logit(0.5)
    0.0
    >>> float(logit(sigmoid(3.0)))
    3.0
    """
    arr = as_probabilities(p, "p")
    with np.errstate(divide="ignore"):
        out = np.log(arr) - np.log1p(-arr)
    return out if out.ndim else float(out)


def add_intercept(X):
    """Return ``X`` with a first column of ones (the intercept is ``w[0]``).

    Book: chapter 1, section "Absorbing the intercept".

    Examples
    --------
    >>> add_intercept(np.array([[2.0], [3.0]]))
    array([[1., 2.],
           [1., 3.]])
    """
    X = as_matrix(X)
    return np.hstack([np.ones((X.shape[0], 1)), X])


def _signs(y):
    """The one place where labels in {0, 1} become signs s = 2y - 1 in {-1, +1}."""
    return 2.0 * y - 1.0


def _checked(w, X, y, prior_precision=0.0):
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    w = as_weights(w, X.shape[1])
    lam = as_prior_precision(prior_precision, X.shape[1])
    return w, X, y, lam


def _log_likelihood(a, y):
    """Bernoulli log-likelihood from the activations a = X w."""
    return float(np.sum(log_expit(_signs(y) * a)))


def _penalty(w, lam):
    r"""The prior term :math:`\frac12 \sum_j \lambda_j w_j^2` (scalar or per-weight ``lam``)."""
    return 0.5 * float(np.dot(lam * w, w))


def _log_posterior(w, a, y, lam):
    return _log_likelihood(a, y) - _penalty(w, lam)


def log_likelihood(w, X, y):
    r"""Bernoulli log-likelihood of logistic regression.

    .. math:: \log p(\mathbf y \mid X, \mathbf w)
              = \sum_n \log \sigma(s_n \mathbf w^\top \mathbf x_n),
              \qquad s_n = 2 y_n - 1

    Book: chapter 2, equation ``eq-loglik``.

    Parameters
    ----------
    w : array_like of shape (d,)
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}

    Returns
    -------
    float

    Examples
    --------
    >>> log_likelihood(np.zeros(2), np.eye(2), np.array([0, 1]))
    -1.386...
    """
    w, X, y, _ = _checked(w, X, y)
    return _log_likelihood(X @ w, y)


def log_posterior(w, X, y, prior_precision=0.0):
    r"""Unnormalised log posterior: log-likelihood plus the log Gaussian prior.

    .. math:: \log p(\mathbf y \mid X, \mathbf w) - \frac{\lambda}{2}\|\mathbf w\|^2

    The constant :math:`\tfrac d2 \log(\lambda / 2\pi)` of the prior is left out.  With
    per-weight precisions the prior term is :math:`\frac12 \sum_j \lambda_j w_j^2`
    (chapter 4, the prior :math:`\mathcal N(0, \Lambda^{-1})`).

    Book: chapter 4, equation ``eq-log-posterior``.

    Parameters
    ----------
    w : array_like of shape (d,)
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    prior_precision : float or array_like of shape (d,), default 0
        :math:`\lambda \ge 0`, or one precision :math:`\lambda_j \ge 0` per weight;
        0 gives the log-likelihood.

    Examples
    --------
    >>> log_posterior(np.ones(2), np.eye(2), np.array([0, 1]), prior_precision=2.0)
    -3.626...
    >>> w, X, y = np.ones(2), np.eye(2), np.array([0, 1])
    >>> float(log_posterior(w, X, y, prior_precision=[0.0, 2.0]) - log_posterior(w, X, y))
    -1.0
    """
    w, X, y, lam = _checked(w, X, y, prior_precision)
    return _log_posterior(w, X @ w, y, lam)


def _gradient(w, X, y, p, lam):
    return X.T @ (y - p) - lam * w


def gradient(w, X, y, prior_precision=0.0):
    r"""Gradient of :func:`log_posterior` with respect to ``w``.

    .. math:: \nabla_{\mathbf w} = X^\top (\mathbf y - \mathbf p) - \lambda \mathbf w,
              \qquad p_n = \sigma(\mathbf w^\top \mathbf x_n)

    With per-weight precisions the prior term is :math:`-\Lambda \mathbf w`.

    Book: chapter 2, equation ``eq-gradient`` (and ``eq-map-gradient`` in chapter 4).

    Returns
    -------
    ndarray of shape (d,)

    Examples
    --------
    >>> gradient(np.zeros(2), np.eye(2), np.array([0, 1]))
    array([-0.5,  0.5])
    """
    w, X, y, lam = _checked(w, X, y, prior_precision)
    return _gradient(w, X, y, expit(X @ w), lam)


_GRAM_CHUNK = 8192  # rows per block: a scaled block (8192 x d) stays in cache


def _weighted_gram(X, curv):
    r"""Return :math:`X^\top \operatorname{diag}(c) X` for weights ``curv`` :math:`= c \ge 0`.

    One pass over the data in blocks of rows: each block is scaled by
    :math:`\sqrt{c_n}` into a reused buffer and accumulated with BLAS ``syrk``
    (a symmetric rank-k update, which computes one triangle only, half the
    flops of a general product).  No n-by-n or n-by-d temporary is formed.
    """
    n, d = X.shape
    root = np.sqrt(curv)
    G = np.zeros((d, d), order="F")
    buf = np.empty((min(n, _GRAM_CHUNK), d))
    for start in range(0, n, _GRAM_CHUNK):
        stop = min(start + _GRAM_CHUNK, n)
        block = np.multiply(X[start:stop], root[start:stop, None], out=buf[: stop - start])
        # block.T is Fortran-ordered (d, k): syrk computes G += block.T @ block in place
        G = dsyrk(1.0, block.T, beta=1.0, c=G, trans=0, lower=0, overwrite_c=1)
    return np.triu(G) + np.triu(G, 1).T


def _curvature(a):
    """The curvature (IRLS) weights S_nn = p_n (1 - p_n), stable for large |a|."""
    return expit(a) * expit(-a)


def hessian(w, X, y, prior_precision=0.0):
    r"""Hessian of :func:`log_posterior`: :math:`H = -X^\top S X - \lambda I`.

    With per-weight precisions the prior term is :math:`-\Lambda`.
    :math:`S = \operatorname{diag}(p_n (1 - p_n))` is never built; the product
    is one weighted pass over the rows.  The Hessian does not depend on ``y``
    (which is still validated, so the signature matches :func:`gradient`).

    Book: chapter 2, equation ``eq-hessian`` (and ``eq-map-hessian`` in chapter 4).

    Returns
    -------
    ndarray of shape (d, d), symmetric negative (semi-)definite

    Examples
    --------
    >>> hessian(np.zeros(2), np.eye(2), np.array([0, 1]), prior_precision=1.0)
    array([[-1.25, -0.  ],
           [-0.  , -1.25]])
    """
    w, X, y, lam = _checked(w, X, y, prior_precision)
    H = -_weighted_gram(X, _curvature(X @ w))
    H[np.diag_indices_from(H)] -= lam
    return H
