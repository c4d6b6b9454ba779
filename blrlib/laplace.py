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

from ._validation import as_labels, as_matrix, as_prior_precision
from .logistic import _curvature, _log_likelihood, _penalty, _weighted_gram
from .optimize import ConvergenceWarning, _free_columns, _irls, _Separation, _separation_reason

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
    prior_precision : float or ndarray of shape (d,)
        :math:`\lambda`, or the per-weight precisions :math:`\lambda_j`.
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
        if np.ndim(self.prior_precision) == 0:
            lam = f"{self.prior_precision:g}"
        else:
            lam = np.array2string(np.asarray(self.prior_precision), precision=4, separator=", ", threshold=8)
        return (
            f"LaplacePosterior(mean={m}, sd={sd}, log_evidence={self.log_evidence:.6g}, "
            f"prior_precision={lam})"
        )


def laplace_posterior(X, y, prior_precision):
    r"""Fit the Laplace approximation of the posterior under the prior :math:`\mathcal N(0, \lambda^{-1} I)`.

    The mode is found by the guarded Newton method of :func:`~blrlib.irls`.  The
    evidence estimate is

    .. math:: \log p(\mathbf y \mid X) \approx \log p(\mathbf y \mid X, \mathbf w_\text{MAP})
              - \frac{\lambda}{2}\|\mathbf w_\text{MAP}\|^2 + \frac d2 \log \lambda
              - \frac12 \log |A|

    With per-weight precisions :math:`\lambda_j` (the prior
    :math:`\mathcal N(0, \Lambda^{-1})`) the prior terms become
    :math:`-\frac12 \sum_j \lambda_j w_j^2 + \frac12 \sum_j \log \lambda_j` and
    :math:`A = X^\top S X + \Lambda`.

    Book: chapter 5, equations ``eq-laplace-cov`` and ``eq-laplace-evidence``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    prior_precision : float or array_like of shape (d,)
        :math:`\lambda \ge 0`, or one precision :math:`\lambda_j \ge 0` per weight.
        A zero precision is a flat, improper prior on its weight.  With
        :math:`\lambda = 0` everywhere, ``mean`` is the maximum-likelihood estimate and
        ``cov`` the inverse observed information (the classical asymptotic covariance,
        whose diagonal gives the usual standard errors).  ``log_evidence`` is
        :math:`-\infty` whenever some precision is 0: the limit of the formula above,
        which falls like :math:`\frac12 \log\lambda_j` as :math:`\lambda_j \to 0`.

    Returns
    -------
    LaplacePosterior

    Raises
    ------
    ValueError
        If the posterior mode does not exist: the data are separable in the columns
        with zero prior precision (e.g. ``prior_precision=0`` on separable data),
        or those columns are linearly dependent.

    Warns
    -----
    ConvergenceWarning
        If the mode search stops before its tolerance (not seen in practice: the
        guarded Newton method converges from zero for every proper prior); the
        mean and covariance are then those at the last iterate.

    Examples
    --------
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> post = laplace_posterior(X, np.array([0, 0, 1, 1]), prior_precision=1.0)
    >>> np.allclose(post.cov @ post.precision, np.eye(2))
    True
    >>> flat_intercept = laplace_posterior(X, np.array([0, 0, 1, 1]), [0.0, 1.0])
    >>> flat_intercept.log_evidence
    -inf
    """
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    lam = as_prior_precision(prior_precision, X.shape[1])
    return _laplace_at_mode(X, y, lam, _find_mode(X, y, lam, np.zeros(X.shape[1])))


_MODE_MAX_ITER = 100
_MODE_TOL = 1e-10


def _find_mode(X, y, lam, w0):
    """The posterior mode by :func:`~blrlib.optimize._irls`, or a clear error when it does not exist."""
    return _mode_fit(X, y, lam, w0).w


def _mode_fit(X, y, lam, w0):
    """:func:`_find_mode`, returning the whole :class:`~blrlib.FitResult` (for its ``n_iter``)."""
    outcome = _irls(X, y, lam, w0, _MODE_MAX_ITER, _MODE_TOL)
    d = X.shape[1]
    if outcome.separation is not _Separation.NONE:
        free = _free_columns(lam, d)
        mode = "the maximum-likelihood estimate" if free.size == d else "the posterior mode"
        reason = _separation_reason(outcome.separation, free, d)
        raise ValueError(f"laplace_posterior needs {mode}, which does not exist here: {reason}")
    if not outcome.converged:
        warnings.warn(
            f"laplace_posterior: the search for the posterior mode stopped after "
            f"{outcome.fit.n_iter} guarded Newton steps ({outcome.detail}); the mean and "
            f"covariance are those of the last iterate",
            ConvergenceWarning,
            stacklevel=4,
        )
    return outcome.fit


def _laplace_at_mode(X, y, lam, w):
    """The Gaussian approximation and the Laplace evidence at the mode ``w`` (validated input)."""
    a = X @ w
    A = _weighted_gram(X, _curvature(a))
    A[np.diag_indices_from(A)] += lam
    c, lower = cho_factor(A, lower=True)
    L = np.tril(c)
    cov = cho_solve((c, lower), np.eye(A.shape[0]))
    cov = 0.5 * (cov + cov.T)
    log_det_A = 2.0 * np.sum(np.log(np.diag(L)))
    if np.any(np.asarray(lam) == 0):
        log_evidence = -np.inf  # an improper prior: the evidence vanishes like lam_j^(1/2)
    else:
        log_det_prior = X.shape[1] * np.log(lam) if np.ndim(lam) == 0 else float(np.sum(np.log(lam)))
        log_evidence = _log_likelihood(a, y) - _penalty(w, lam) + 0.5 * log_det_prior - 0.5 * log_det_A
    return LaplacePosterior(
        mean=w, cov=cov, precision=A, log_evidence=float(log_evidence), prior_precision=lam, _chol=L
    )
