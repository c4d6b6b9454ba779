r"""The exact posterior of GP classification by elliptical slice sampling.

Book: chapter 11.  Laplace's method and EP replace the posterior
:math:`p(\mathbf f \mid \mathbf y) \propto \mathcal N(\mathbf f \mid 0, K) \prod_n \sigma(s_n f_n)`
by a Gaussian; sampling it measures how good that is.  Elliptical slice sampling
(Murray, Adams & MacKay 2010) suits a Gaussian prior times any likelihood and has no
step size to tune.  From the current :math:`\mathbf f` it draws an auxiliary
:math:`\boldsymbol\nu \sim \mathcal N(0, K)` and a level :math:`\log p(\mathbf y \mid \mathbf f) + \log u`,
:math:`u \sim U(0, 1)`, for the log-likelihood :math:`\log p(\mathbf y \mid \mathbf f) = \sum_n \log\sigma(s_n f_n)`,
and moves along the ellipse

.. math:: \mathbf f' = \mathbf f \cos\eta + \boldsymbol\nu \sin\eta,

which passes through :math:`\mathbf f` (at the angle :math:`\eta = 0`) and on which the prior
density of the pair is constant: it proposes a random angle, and shrinks the bracket
of angles towards 0 until :math:`\log p(\mathbf y \mid \mathbf f')` is above the level.  Each update leaves the
posterior invariant and always moves.

The predictive (:func:`gpc_predict_samples`) conditions :math:`f_*` on each draw of
:math:`\mathbf f` under the prior, a Gaussian, and averages :math:`\sigma(f_*)` over it by
quadrature: no approximation beyond the Monte Carlo average over the draws.

Prior draws and the conditioning use the eigendecomposition :math:`K = U \Lambda U^\top`,
keeping the eigenvalues above :math:`10^{-12} \lambda_\text{max}`: a kernel matrix is
typically singular to rounding (chapter 8), and the dropped directions have prior
standard deviations below :math:`10^{-6} \sqrt{\lambda_\text{max}}`.
"""

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import eigh
from scipy.special import log_expit

from ._validation import (
    as_kernel_matrix,
    as_labels,
    as_rng,
    as_test_kernels,
    check_chain_counts,
)
from .gp_predict import GPCPrediction
from .logistic import _signs
from .predictive import expected_sigmoid
from .sampling import effective_sample_size, split_rhat

__all__ = ["GPCSamples", "gpc_elliptical_slice", "gpc_predict_samples"]

_EIG_RTOL = 1e-12  # eigenvalues of K below this times the largest are dropped (see above)
_BLOCK = 256  # auxiliary draws nu ~ N(0, K) made at once, as one matrix product


def _short(v):
    return np.array2string(np.asarray(v), precision=4, separator=", ", threshold=6)


@dataclass(frozen=True)
class GPCSamples:
    r"""Draws of the latent posterior of GP classification (elliptical slice sampling).

    Attributes
    ----------
    f : ndarray of shape (n_chains, n_samples, n)
        The draws :math:`\mathbf f^{(t)}` of the latent values at the training inputs.
    mean, var : ndarray of shape (n,)
        Their posterior mean and variance, pooled over chains.
    rhat : ndarray of shape (n,)
        Rank-normalised split :math:`\hat R` of each latent value (:func:`~blrlib.split_rhat`).
    ess : ndarray of shape (n,)
        Bulk effective sample size of each latent value (:func:`~blrlib.effective_sample_size`).
    n_warmup : int
        Draws discarded at the start of each chain.
    """

    f: np.ndarray = field(repr=False)
    mean: np.ndarray
    var: np.ndarray = field(repr=False)
    rhat: np.ndarray = field(repr=False)
    ess: np.ndarray = field(repr=False)
    n_warmup: int

    def __repr__(self):
        n_chains, n_samples, n = self.f.shape
        return (
            f"GPCSamples(n={n}, mean={_short(self.mean)}, n_chains={n_chains}, n_samples={n_samples}, "
            f"max_rhat={np.max(self.rhat):.4f}, min_ess={np.min(self.ess):.0f})"
        )


def _prior_factor(K):
    """U_r and Lambda_r of K = U Lambda U^T, eigenvalues above _EIG_RTOL times the largest."""
    lam, U = eigh(K, check_finite=False)
    keep = lam > _EIG_RTOL * lam[-1]
    return U[:, keep], lam[keep]


def _elliptical_slice_chain(A, s, f, n_iter, rng):
    """Murray, Adams & MacKay (2010), Figure 2: ``n_iter`` updates from ``f``; A A^T = K."""
    def log_lik(f):
        return float(np.sum(log_expit(s * f)))

    draws = np.empty((n_iter, f.shape[0]))
    ll = log_lik(f)
    for start in range(0, n_iter, _BLOCK):
        nus = rng.standard_normal((min(_BLOCK, n_iter - start), A.shape[1])) @ A.T
        for t, nu in enumerate(nus, start):  # 1. the ellipse: nu ~ N(0, K)
            level = ll + np.log(rng.random())  # 2. the log-likelihood level
            angle = rng.uniform(0.0, 2.0 * np.pi)  # 3. a first angle, and the bracket around it
            lo, hi = angle - 2.0 * np.pi, angle
            while True:
                proposal = f * np.cos(angle) + nu * np.sin(angle)  # 4. the point on the ellipse
                ll_new = log_lik(proposal)
                if ll_new > level:  # 5-6. accept
                    break
                if angle < 0.0:  # 8. shrink the bracket towards angle = 0 (the current f) ...
                    lo = angle
                else:
                    hi = angle
                angle = rng.uniform(lo, hi)  # 9. ... and try again inside it
            f, ll = proposal, ll_new
            draws[t] = f
    return draws


def gpc_elliptical_slice(K, y, *, n_samples=2000, n_warmup=500, n_chains=4, seed=0):
    r"""Draw from the exact latent posterior of GP classification by elliptical slice sampling.

    The target is :math:`p(\mathbf f \mid \mathbf y) \propto \mathcal N(\mathbf f \mid 0, K)
    \prod_n \sigma(s_n f_n)`.  Each chain starts from its own draw of the prior, runs
    ``n_warmup`` updates that are discarded and keeps ``n_samples``; each update is one
    elliptical slice step (Murray, Adams & MacKay 2010), which moves :math:`\mathbf f` along
    the ellipse through it and a fresh prior draw :math:`\boldsymbol\nu`,
    :math:`\mathbf f \cos\eta + \boldsymbol\nu \sin\eta`, to a point above a random
    likelihood level.  All draws come from ``np.random.default_rng(seed)``, chain after
    chain, so a seed gives the same draws on every run.

    Book: chapter 11.

    Parameters
    ----------
    K : array_like of shape (n, n)
        The prior covariance (kernel matrix) of the latent values at the training inputs.
    y : array_like of shape (n,), values in {0, 1}
    n_samples : int, default 2000
        Draws kept per chain (at least 4).
    n_warmup : int, default 500
        Draws discarded per chain.
    n_chains : int, default 4
    seed : int or numpy.random.Generator, default 0

    Returns
    -------
    GPCSamples

    Examples
    --------
    >>> from blrlib import gpc_ep, rbf_kernel
    >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    >>> K, y = rbf_kernel(X, variance=4.0), np.array([0, 0, 1, 1])
    >>> samples = gpc_elliptical_slice(K, y, n_samples=1000, seed=1)
    >>> samples.f.shape, bool(np.all(samples.rhat < 1.05))
    ((4, 1000, 4), True)
    >>> ep = gpc_ep(K, y)   # EP's means lie within 4 Monte Carlo standard errors
    >>> mcse = np.sqrt(samples.var / samples.ess)
    >>> bool(np.all(np.abs(samples.mean - ep.mean) < 4 * mcse))
    True
    """
    K = as_kernel_matrix(K)
    y = as_labels(y, n=K.shape[0], against="K")
    n_samples, n_warmup, n_chains = check_chain_counts(n_samples, n_warmup, n_chains)
    try:
        rng = as_rng(seed)
    except TypeError:
        raise TypeError(f"seed must be an int or a numpy.random.Generator, got {type(seed).__name__}") from None
    U, lam = _prior_factor(K)
    A = U * np.sqrt(lam)  # A A^T = K (up to the dropped directions)
    s = _signs(y)
    f = np.empty((n_chains, n_samples, K.shape[0]))
    for c in range(n_chains):
        start = A @ rng.standard_normal(A.shape[1])  # each chain from its own prior draw
        f[c] = _elliptical_slice_chain(A, s, start, n_warmup + n_samples, rng)[n_warmup:]
    pooled = f.reshape(-1, f.shape[2])
    return GPCSamples(f=f, mean=pooled.mean(axis=0), var=pooled.var(axis=0, ddof=1), rhat=split_rhat(f),
                      ess=effective_sample_size(f), n_warmup=n_warmup)


def gpc_predict_samples(samples, K, K_star, k_star_star):
    r"""The exact predictive of GP classification from latent posterior draws.

    Under the prior, :math:`f_*` given :math:`\mathbf f` is Gaussian,

    .. math:: f_* \mid \mathbf f \sim \mathcal N\big(\mathbf k_*^\top K^{-1} \mathbf f,\;
              k(\mathbf x_*, \mathbf x_*) - \mathbf k_*^\top K^{-1} \mathbf k_*\big),

    so for each draw :math:`\mathbf f^{(t)}` the probability
    :math:`E[\sigma(f_*) \mid \mathbf f^{(t)}]` is a one-dimensional Gaussian average, computed
    by quadrature (:func:`~blrlib.expected_sigmoid`); ``prob`` is its mean over all draws.
    ``mean`` and ``var`` are the posterior mean and variance of :math:`f_*` (the variance
    by the law of total variance).  :math:`K^{-1}` is applied through the eigendecomposition
    of :math:`K` used by the sampler, in which the draws lie.

    Book: chapter 11.

    Parameters
    ----------
    samples : GPCSamples
        From :func:`gpc_elliptical_slice` with the same ``K``.
    K : array_like of shape (n, n)
    K_star : array_like of shape (m, n)
        ``K_star[i, j] = k(x_star_i, x_j)``.
    k_star_star : array_like of shape (m,)
        The prior variances of the test points.

    Returns
    -------
    GPCPrediction
        ``method`` is ``"samples"``.

    Examples
    --------
    >>> from blrlib import rbf_kernel
    >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    >>> K = rbf_kernel(X, variance=4.0)
    >>> samples = gpc_elliptical_slice(K, np.array([0, 0, 1, 1]), n_samples=500, seed=1)
    >>> X_new = np.array([[0.0], [1.5], [10.0]])
    >>> K_star = rbf_kernel(X_new, X, variance=4.0)
    >>> pred = gpc_predict_samples(samples, K, K_star, np.full(3, 4.0))
    >>> bool(abs(pred.prob[0] - 0.5) < 0.05 and pred.prob[1] > 0.7)
    True
    >>> round(float(pred.prob[2]), 6)   # far from the data: the prior, N(0, 4)
    0.5
    """
    if not isinstance(samples, GPCSamples):
        raise TypeError(f"samples must be a GPCSamples (from gpc_elliptical_slice), got {type(samples).__name__}")
    K = as_kernel_matrix(K)
    n = samples.f.shape[2]
    if K.shape[0] != n:
        raise ValueError(f"K must be the {n} x {n} kernel matrix the samples were drawn with, got shape {K.shape}")
    K_star, k_star_star = as_test_kernels(K_star, k_star_star, n)
    U, lam = _prior_factor(K)
    C = (K_star @ U) / np.sqrt(lam)  # k_*^T U Lambda^-1/2, so k_*^T K^-1 k_* = |C_i|^2
    var = np.maximum(k_star_star - np.einsum("ij,ij->i", C, C), 0.0)
    M = (U / lam) @ (U.T @ K_star.T)  # K^-1 K_*^T: the conditional means are f^(t) . M
    draws = samples.f.reshape(-1, n)
    prob = np.zeros(K_star.shape[0])
    first = np.zeros(K_star.shape[0])
    second = np.zeros(K_star.shape[0])
    for start in range(0, draws.shape[0], _BLOCK):
        means = draws[start : start + _BLOCK] @ M  # (block, m)
        prob += np.sum(expected_sigmoid(means, var[None, :]), axis=0)
        first += means.sum(axis=0)
        second += np.sum(means**2, axis=0)
    T = draws.shape[0]
    mean = first / T
    return GPCPrediction(prob=prob / T, mean=mean, var=var + np.maximum(second / T - mean**2, 0.0),
                         method="samples")
