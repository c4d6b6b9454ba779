r"""The exact posterior of GP classification by Polya-Gamma Gibbs sampling.

Book: chapter 12, section "The exact references".  Write the latent values through a
square root of the kernel matrix, :math:`\mathbf f = A\mathbf v` with :math:`A A^\top = K`
and :math:`\mathbf v \sim \mathcal N(\mathbf 0, I)`.  Then GP classification is Bayesian
logistic regression with the design matrix :math:`A` and the prior precision 1, and the
Polya-Gamma augmentation of chapter 10 (equations ``eq-pg-w-given-omega`` and
``eq-pg-omega-given-w``) gives a Gibbs sampler with nothing to tune:

.. math:: \omega_n \mid \mathbf f \sim \mathrm{PG}(1, f_n), \qquad
          \mathbf v \mid \boldsymbol\omega \sim \mathcal N\big(P^{-1} A^\top\boldsymbol\kappa,
          \ P^{-1}\big), \quad P = I + A^\top \Omega A,

with :math:`\kappa_n = y_n - \frac12`; equivalently :math:`\mathbf f \mid \boldsymbol\omega`
is Gaussian with precision :math:`K^{-1} + \Omega`.  Where the signal variance is large,
elliptical slice sampling (:func:`~blrlib.gpc_elliptical_slice`) proposes from the prior
and moves in small steps; the Gibbs sampler draws all of :math:`\mathbf f` from an exact
conditional at every step and mixes several times faster per draw on the book's data.

:math:`A = U\Lambda^{1/2}` comes from the eigendecomposition of :math:`K` that the
elliptical slice sampler uses (eigenvalues below :math:`10^{-12}` times the largest are
dropped), so the two samplers target the same distribution and
:func:`~blrlib.gpc_predict_samples` accepts the draws of either.
"""

import numpy as np
from scipy.linalg import solve_triangular

from ._validation import as_kernel_matrix, as_labels, check_chain_counts
from .gp_elliptical import GPCSamples, _prior_factor
from .sampling import _as_seed, _pg_draws, effective_sample_size, split_rhat

__all__ = ["gibbs_gpc"]


def _gibbs_gpc_chains(A, kappa, v, n_iter, rng):
    """``n_iter`` Gibbs updates of the whitened latents ``v`` (n_chains, r), all chains together.

    Returns the draws of f = A v, shape (n_iter, n_chains, n).
    """
    r = A.shape[1]
    At = np.ascontiguousarray(A.T)
    At_kappa = At @ kappa
    diag = np.arange(r)
    draws = np.empty((n_iter, v.shape[0], A.shape[0]))
    f = v @ At
    for t in range(n_iter):
        omega = _pg_draws(f, rng)  # omega_n ~ PG(1, f_n), every chain at once
        B = np.sqrt(omega)[:, :, None] * A  # Omega^1/2 A
        P = np.swapaxes(B, 1, 2) @ B  # P = I + A^T Omega A, the precision of v given omega
        P[:, diag, diag] += 1.0
        R = np.linalg.cholesky(P)  # P = R R^T
        eps = rng.standard_normal(v.shape)
        for c in range(v.shape[0]):
            # v = P^-1 A^T kappa + R^-T eps = R^-T (R^-1 A^T kappa + eps), covariance P^-1
            u = solve_triangular(R[c], At_kappa, lower=True, check_finite=False)
            v[c] = solve_triangular(R[c], u + eps[c], lower=True, trans="T", check_finite=False)
        f = v @ At
        draws[t] = f
    return draws


def gibbs_gpc(K, y, *, n_samples=2000, n_warmup=500, n_chains=4, seed=0):
    r"""Draw from the exact latent posterior of GP classification by Polya-Gamma Gibbs sampling.

    The target is :math:`p(\mathbf f \mid \mathbf y) \propto \mathcal N(\mathbf f \mid 0, K)
    \prod_n \sigma(s_n f_n)`, the same as :func:`~blrlib.gpc_elliptical_slice`'s.  Each
    iteration draws every :math:`\omega_n \sim \mathrm{PG}(1, f_n)` and then the whole
    :math:`\mathbf f` from its Gaussian conditional, precision :math:`K^{-1} + \Omega`,
    computed in the whitened coordinates :math:`\mathbf f = A\mathbf v`, :math:`AA^\top = K`
    (Polson, Scott & Windle 2013).  Each chain starts from its own draw of the prior, runs
    ``n_warmup`` iterations that are discarded and keeps ``n_samples``.  An iteration costs
    :math:`O(n r^2)` for the :math:`r \le n` kept eigenvalues of :math:`K`.

    Book: chapter 12 (the exact references), with the conditionals of chapter 10,
    equations ``eq-pg-w-given-omega`` and ``eq-pg-omega-given-w``.

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
        As :func:`~blrlib.gpc_elliptical_slice` returns, so that
        :func:`~blrlib.gpc_predict_samples` accepts it.

    Examples
    --------
    >>> from blrlib import gpc_ep, rbf_kernel
    >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    >>> K, y = rbf_kernel(X, variance=4.0), np.array([0, 0, 1, 1])
    >>> samples = gibbs_gpc(K, y, n_samples=1000, seed=1)
    >>> samples.f.shape, bool(np.all(samples.rhat < 1.01))
    ((4, 1000, 4), True)
    >>> ep = gpc_ep(K, y)   # EP's means lie within 4 Monte Carlo standard errors
    >>> mcse = np.sqrt(samples.var / samples.ess)
    >>> bool(np.all(np.abs(samples.mean - ep.mean) < 4 * mcse))
    True
    """
    K = as_kernel_matrix(K)
    y = as_labels(y, n=K.shape[0], against="K")
    n_samples, n_warmup, n_chains = check_chain_counts(n_samples, n_warmup, n_chains)
    rng = _as_seed(seed)
    U, lam = _prior_factor(K)
    A = U * np.sqrt(lam)  # A A^T = K (up to the dropped directions)
    kappa = y - 0.5
    v0 = rng.standard_normal((n_chains, A.shape[1]))  # each chain from its own prior draw
    draws = _gibbs_gpc_chains(A, kappa, v0, n_warmup + n_samples, rng)
    f = np.ascontiguousarray(np.swapaxes(draws[n_warmup:], 0, 1))  # (n_chains, n_samples, n)
    pooled = f.reshape(-1, f.shape[2])
    return GPCSamples(f=f, mean=pooled.mean(axis=0), var=pooled.var(axis=0, ddof=1), rhat=split_rhat(f),
                      ess=effective_sample_size(f), n_warmup=n_warmup)
