r"""The Laplace approximation for softmax regression and its predictive probabilities.

Book: chapter 13.  As in chapter 5, the posterior over all dK weights is approximated by a
Gaussian at the mode, :math:`\mathcal N(\operatorname{vec} W_\text{MAP}, A^{-1})` with
:math:`A = -H` the negative Hessian of the log posterior (equation ``eq-softmax-laplace``),
in the class-major order of :mod:`blrlib.softmax_regression`.  With a Gaussian prior on every column
all K columns are identifiable and A is positive definite.  Under that Gaussian the K
activations :math:`\mathbf a = W^\top \mathbf x` at a new input are jointly Gaussian, and
the predictive probability :math:`E[\operatorname{softmax}(\mathbf a)]` is a K-dimensional
integral (equation ``eq-softmax-predictive``) with no closed form: Monte Carlo evaluates it,
and two deterministic approximations generalise chapter 6's probit approximation.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import logsumexp

from ._validation import as_class_labels, as_matrix, as_prior_precision, as_rng, check_int
from .optimize import ConvergenceWarning, _free_columns, _Separation, _separation_reason
from .softmax_regression import (
    _log_likelihood,
    _log_softmax,
    _negative_hessian,
    _null_projector,
    _penalty,
    _softmax_irls,
)

__all__ = ["SoftmaxLaplace", "softmax_laplace", "softmax_predict"]


@dataclass(frozen=True)
class SoftmaxLaplace:
    r"""A Gaussian approximation of the posterior of softmax regression.

    Attributes
    ----------
    mean : ndarray of shape (d, K)
        The posterior mode :math:`W_\text{MAP}`, one column per class.
    cov : ndarray of shape (dK, dK)
        :math:`A^{-1}`, indexing ``mean.T.ravel()`` (class-major: entry ``k * d + j`` is
        weight j of class k).  Without a prior on some rows (zero precisions) A is
        singular and ``cov`` is its pseudo-inverse: the covariance of the weights under
        the constraint that those rows sum to zero over the classes.
    log_evidence : float
        The Laplace estimate of :math:`\log p(\mathbf y \mid X)` (:math:`-\infty` when some
        precision is 0).
    n_classes : int
        K.
    prior_precision : float or ndarray of shape (d,)
    """

    mean: np.ndarray
    cov: np.ndarray = field(repr=False)
    log_evidence: float
    n_classes: int
    prior_precision: float = field(repr=False)

    def __repr__(self):
        d, K = self.mean.shape
        return (
            f"SoftmaxLaplace(d={d}, n_classes={K}, log_evidence={self.log_evidence:.6g}, "
            f"mean=<{d}x{K}>, cov=<{d * K}x{d * K}>)"
        )


def softmax_laplace(X, y, prior_precision):
    r"""Fit the Laplace approximation of the softmax-regression posterior.

    The mode comes from the guarded Newton method of :func:`~blrlib.softmax_irls`; the
    covariance is the inverse of the negative Hessian there, and the evidence estimate is

    .. math:: \log p(\mathbf y \mid X) \approx \log p(\mathbf y \mid X, W_\text{MAP})
              - \frac12 \sum_k \mathbf w_k^\top \Lambda \mathbf w_k
              + \frac K2 \log|\Lambda| - \frac12 \log |A|

    (equation ``eq-softmax-evidence``; the prior contributes :math:`\mathcal N(0,
    \Lambda^{-1})` for each of the K columns).  For K = 2 this is the binary Laplace
    approximation of chapter 5 for :math:`\mathbf w_1 - \mathbf w_0` with the prior
    precision halved, and the same evidence.

    Book: chapter 13, equations ``eq-softmax-laplace`` and ``eq-softmax-evidence``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), labels 0..K-1
    prior_precision : float or array_like of shape (d,)
        :math:`\lambda \ge 0` or one precision per feature.  With zeros, ``cov`` is the
        pseudo-inverse (see :class:`SoftmaxLaplace`); with ``prior_precision=0`` its
        reference-class transform gives the classical maximum-likelihood standard errors.

    Returns
    -------
    SoftmaxLaplace

    Raises
    ------
    ValueError
        If the mode does not exist (the classes are separable in the columns without a
        prior) or those columns are linearly dependent.

    Examples
    --------
    >>> x = np.array([-1.0, -0.5, 0.1, 0.4, 1.0, 0.2, -0.8, 0.7])
    >>> X = np.column_stack([np.ones(8), x])
    >>> post = softmax_laplace(X, np.array([0, 1, 0, 2, 2, 1, 2, 0]), 1.0)
    >>> post.mean.shape, post.cov.shape
    ((2, 3), (6, 6))
    >>> round(post.log_evidence, 4)
    -10.6444
    """
    X = as_matrix(X)
    y, K = as_class_labels(y, n=X.shape[0])
    d = X.shape[1]
    lam = as_prior_precision(prior_precision, d)
    outcome = _softmax_irls(X, y, K, lam, np.zeros((d, K)), 100, 1e-10)
    free = _free_columns(lam, d)
    if outcome.separation is not _Separation.NONE:
        reason = _separation_reason(outcome.separation, free, d)
        raise ValueError(f"softmax_laplace needs the posterior mode, which does not exist here: {reason}")
    if not outcome.converged:
        warnings.warn(
            f"softmax_laplace: the search for the posterior mode stopped after {outcome.fit.n_iter} "
            f"guarded Newton steps ({outcome.detail}); the mean and covariance are those of the last iterate",
            ConvergenceWarning,
            stacklevel=2,
        )
    W = outcome.fit.w
    A = _negative_hessian(X, X @ W, lam)
    if free.size:
        # A is singular along e_j (x) 1 for the free rows j; with P the projector onto those
        # directions, (A + cP)^-1 - P / c is the pseudo-inverse of A
        P = _null_projector(free, d, K)
        c = np.trace(A) / A.shape[0] + 1.0
        factor = cho_factor(A + c * P, lower=True)
        cov = cho_solve(factor, np.eye(d * K)) - P / c
        log_evidence = -np.inf
    else:
        factor = cho_factor(A, lower=True)
        cov = cho_solve(factor, np.eye(d * K))
        log_det_A = 2.0 * float(np.sum(np.log(np.diag(factor[0]))))
        log_det_prior = d * np.log(lam) if np.ndim(lam) == 0 else float(np.sum(np.log(lam)))
        log_evidence = _log_likelihood(X @ W, y) - _penalty(W, lam) + 0.5 * K * log_det_prior - 0.5 * log_det_A
    cov = 0.5 * (cov + cov.T)
    return SoftmaxLaplace(mean=W, cov=cov, log_evidence=float(log_evidence), n_classes=K, prior_precision=lam)


# ---------------------------------------------------------------------------------------------
# Prediction

_METHODS = ("mc", "plugin", "probit", "meanfield")
_BLOCK = 4_000_000  # numbers held at once by the Monte Carlo average


def _latent_moments(post, X_new):
    r"""Mean (m, K) and covariance (m, K, K) of :math:`\mathbf a = W^\top \mathbf x` per row of ``X_new``.

    :math:`\Sigma_{kl}(\mathbf x) = \mathbf x^\top C_{kl} \mathbf x` with :math:`C_{kl}` the
    (k, l) block of ``cov`` (equation ``eq-softmax-latent``).
    """
    d, K = post.mean.shape
    C = post.cov.reshape(K, d, K, d)
    mean = X_new @ post.mean
    CX = np.einsum("kilj,mj->mkil", C, X_new)
    cov = np.einsum("mi,mkil->mkl", X_new, CX)
    return mean, 0.5 * (cov + np.swapaxes(cov, 1, 2))


def _gaussian_softmax_mc(mean, cov, n_samples, rng):
    """E[softmax(a)], a ~ N(mean_i, cov_i), by Monte Carlo; the same normal draws for every point."""
    m, K = mean.shape
    vals, vecs = np.linalg.eigh(cov)
    roots = vecs * np.sqrt(np.maximum(vals, 0.0))[:, None, :]  # cov = roots roots^T
    Z = rng.standard_normal((n_samples, K))
    out = np.empty((m, K))
    step = max(1, _BLOCK // (n_samples * K))
    for start in range(0, m, step):
        rows = slice(start, start + step)
        a = mean[rows, None, :] + np.einsum("sk,mlk->msl", Z, roots[rows])
        out[rows] = np.exp(_log_softmax(a)).mean(axis=1)
    return out


def _kappa(var):
    return 1.0 / np.sqrt(1.0 + np.pi * var / 8.0)


def _probit(mean, cov):
    r"""softmax of the means each scaled by :math:`\kappa(\Sigma_{kk})`: chapter 6 applied per class."""
    var = np.diagonal(cov, axis1=1, axis2=2)
    return np.exp(_log_softmax(_kappa(var) * mean))


def _meanfield(mean, cov):
    r"""The pairwise mean-field approximation (Lu et al. 2020), normalised.

    :math:`\operatorname{softmax}_k(\mathbf a) = 1 / \sum_l \exp(-(a_k - a_l))
    = 1 / (2 - K + \sum_{l \ne k} 1/\sigma(a_k - a_l))`; each
    :math:`\sigma(a_k - a_l)` is replaced by its Gaussian average by the probit
    approximation, :math:`\sigma(\kappa(v_{kl}) (\mu_k - \mu_l))` with
    :math:`v_{kl} = \Sigma_{kk} + \Sigma_{ll} - 2\Sigma_{kl}`, the variance of the
    difference; the K results are normalised to sum to 1.  Computed in logs:
    :math:`\log p_k = -\log\bigl(1 + \sum_{l \ne k} (1/\sigma(t_{kl}) - 1)\bigr)`.
    """
    var = np.diagonal(cov, axis1=1, axis2=2)
    v = var[:, :, None] + var[:, None, :] - 2.0 * cov
    t = _kappa(np.maximum(v, 0.0)) * (mean[:, :, None] - mean[:, None, :])
    # 1/sigma(t) - 1 = exp(-t): log p_k = -logsumexp over l of -t_kl (t_kk = 0 gives the 1)
    log_p = -logsumexp(-t, axis=2)
    return np.exp(log_p - logsumexp(log_p, axis=1, keepdims=True))


def softmax_predict(post, X_new, *, method="mc", n_samples=10_000, rng=None):
    r"""Predictive class probabilities :math:`p(y = k \mid \mathbf x, \mathcal D)` under the Laplace posterior.

    The activations :math:`\mathbf a = W^\top \mathbf x` are Gaussian with mean
    :math:`W_\text{MAP}^\top \mathbf x` and covariance :math:`\Sigma_{kl} = \mathbf x^\top
    C_{kl} \mathbf x` (equation ``eq-softmax-latent``); the predictive probabilities are
    :math:`E[\operatorname{softmax}(\mathbf a)]` (equation ``eq-softmax-predictive``).

    Book: chapter 13, equations ``eq-softmax-predictive``, ``eq-softmax-probit`` and
    ``eq-softmax-meanfield``.

    Parameters
    ----------
    post : SoftmaxLaplace
    X_new : array_like of shape (m, d)
    method : {"mc", "plugin", "probit", "meanfield"}, default "mc"
        ``"mc"``: the average of the softmax over ``n_samples`` draws of :math:`\mathbf a`
        (the same standard-normal draws for every point; the reference).  ``"plugin"``:
        :math:`\operatorname{softmax}(W_\text{MAP}^\top \mathbf x)`, ignoring the
        uncertainty.  ``"probit"``: :math:`\operatorname{softmax}_k(\kappa(\Sigma_{kk})
        \mu_k)`, chapter 6's scaling applied to each class separately (ignores the
        correlations).  ``"meanfield"``: the pairwise mean-field approximation of Lu,
        Ineichen and others (2020), which uses the variance of every difference
        :math:`a_k - a_l`; for K = 2 both equal chapter 6's probit approximation of
        :math:`\sigma(a_1 - a_0)`.  The chapter measures both against Monte Carlo.
    n_samples : int, default 10000
    rng : numpy.random.Generator or int, optional
        Seed 0 when omitted, so results repeat.

    Returns
    -------
    ndarray of shape (m, K)
        Rows sum to 1.

    Examples
    --------
    >>> x = np.array([-1.0, -0.5, 0.1, 0.4, 1.0, 0.2, -0.8, 0.7])
    >>> X = np.column_stack([np.ones(8), x])
    >>> post = softmax_laplace(X, np.array([0, 1, 0, 2, 2, 1, 2, 0]), 1.0)
    >>> X_new = np.array([[1.0, 0.0], [1.0, 3.0]])
    >>> softmax_predict(post, X_new, method="plugin").round(3)
    array([[0.365, 0.274, 0.361],
           [0.225, 0.14 , 0.636]])
    >>> softmax_predict(post, X_new).round(3)  # towards 1/K where the variance is large
    array([[0.361, 0.28 , 0.359],
           [0.285, 0.228, 0.487]])
    """
    if not isinstance(post, SoftmaxLaplace):
        raise TypeError(f"post must be a SoftmaxLaplace (from softmax_laplace), got {type(post).__name__}")
    X_new = as_matrix(X_new, "X_new")
    d = post.mean.shape[0]
    if X_new.shape[1] != d:
        raise ValueError(
            f"X_new has {X_new.shape[1]} columns but the posterior is over {d} weights per class "
            f"(did you forget add_intercept?)"
        )
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if method == "plugin":
        return np.exp(_log_softmax(X_new @ post.mean))
    mean, cov = _latent_moments(post, X_new)
    if method == "probit":
        return _probit(mean, cov)
    if method == "meanfield":
        return _meanfield(mean, cov)
    n_samples = check_int(n_samples, "n_samples")
    return _gaussian_softmax_mc(mean, cov, n_samples, as_rng(rng))
