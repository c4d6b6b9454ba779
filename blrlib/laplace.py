r"""The Laplace approximation to the posterior of Bayesian logistic regression.

Book: chapter 5.  Around the posterior mode :math:`\mathbf w_\text{MAP}` the log
posterior is expanded to second order; the gradient term vanishes at the mode, so

.. math:: p(\mathbf w \mid \mathcal D) \approx \mathcal N(\mathbf w_\text{MAP}, A^{-1}),
          \qquad A = X^\top S X + \lambda I

(equation ``eq-laplace-cov``), and the same expansion integrates the joint to the
Laplace estimate of the evidence (equation ``eq-laplace-evidence``).
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from ._validation import as_labels, as_matrix, check_nonnegative
from .logistic import _curvature, _log_likelihood, _weighted_gram
from .optimize import ConvergenceWarning, irls

__all__ = ["LaplacePosterior", "laplace_posterior"]


@dataclass(frozen=True)
class LaplacePosterior:
    r"""A Gaussian approximation :math:`\mathcal N(\text{mean}, \text{cov})` of the posterior.

    Attributes
    ----------
    mean : ndarray of shape (d,)
        The posterior mode :math:`\mathbf w_\text{MAP}`.
    cov : ndarray of shape (d, d)
        :math:`A^{-1}`, the inverse of the negative Hessian of the log posterior at the mode.
    precision : ndarray of shape (d, d)
        :math:`A = X^\top S X + \lambda I`.
    log_evidence : float
        The Laplace estimate of :math:`\log p(\mathbf y \mid X)`.
    prior_precision : float
        :math:`\lambda`.
    """

    mean: np.ndarray
    cov: np.ndarray = field(repr=False)
    precision: np.ndarray = field(repr=False)
    log_evidence: float
    prior_precision: float
    _chol: np.ndarray = field(repr=False, compare=False)

    def __repr__(self):
        m = np.array2string(self.mean, precision=4, separator=", ", threshold=8)
        sd = np.array2string(np.sqrt(np.diag(self.cov)), precision=4, separator=", ", threshold=8)
        return (
            f"LaplacePosterior(mean={m}, sd={sd}, log_evidence={self.log_evidence:.6g}, "
            f"prior_precision={self.prior_precision:g})"
        )


def laplace_posterior(X, y, prior_precision):
    r"""Fit the Laplace approximation of the posterior under the prior :math:`\mathcal N(0, \lambda^{-1} I)`.

    The mode is found by :func:`~blrlib.irls`.  The evidence estimate is

    .. math:: \log p(\mathbf y \mid X) \approx \log p(\mathbf y \mid X, \mathbf w_\text{MAP})
              - \frac{\lambda}{2}\|\mathbf w_\text{MAP}\|^2 + \frac d2 \log \lambda
              - \frac12 \log |A|

    Book: chapter 5, equations ``eq-laplace-cov`` and ``eq-laplace-evidence``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    prior_precision : float
        :math:`\lambda \ge 0`.  :math:`\lambda = 0` means maximum likelihood (a flat,
        improper prior): ``mean`` is then the maximum-likelihood estimate, ``cov`` the
        inverse observed information (the classical asymptotic covariance, whose
        diagonal gives the usual standard errors), and ``log_evidence`` is
        :math:`-\infty`, the limit of the formula above, which falls like
        :math:`\frac d2 \log\lambda` as :math:`\lambda \to 0`.

    Returns
    -------
    LaplacePosterior

    Raises
    ------
    ValueError
        With ``prior_precision=0`` on separable data, where the maximum-likelihood
        estimate does not exist.

    Examples
    --------
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> post = laplace_posterior(X, np.array([0, 0, 1, 1]), prior_precision=1.0)
    >>> np.allclose(post.cov @ post.precision, np.eye(2))
    True
    """
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    lam = check_nonnegative(prior_precision, "prior_precision")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            fit = irls(X, y, prior_precision=lam)
    except ConvergenceWarning as exc:
        if lam > 0:
            raise
        raise ValueError(
            f"laplace_posterior with prior_precision=0 needs the maximum-likelihood estimate, "
            f"which does not exist here: {exc}"
        ) from None
    w = fit.w
    a = X @ w
    A = _weighted_gram(X, _curvature(a))
    A[np.diag_indices_from(A)] += lam
    c, lower = cho_factor(A, lower=True)
    L = np.tril(c)
    cov = cho_solve((c, lower), np.eye(A.shape[0]))
    cov = 0.5 * (cov + cov.T)
    d = X.shape[1]
    log_det_A = 2.0 * np.sum(np.log(np.diag(L)))
    if lam == 0:
        log_evidence = -np.inf  # the evidence under N(0, lam^-1 I) vanishes like lam^(d/2)
    else:
        log_evidence = _log_likelihood(a, y) - 0.5 * lam * float(w @ w) + 0.5 * d * np.log(lam) - 0.5 * log_det_A
    return LaplacePosterior(
        mean=w, cov=cov, precision=A, log_evidence=float(log_evidence), prior_precision=lam, _chol=L
    )
