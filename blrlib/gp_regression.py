r"""Gaussian-process regression: Gaussian conditioning, computed with one Cholesky factor.

Book: chapter 8.  A Gaussian-process prior :math:`\mathbf f \sim \mathcal N(0, K)` on the
function values at the training inputs and Gaussian noise,
:math:`y_n = f_n + \varepsilon_n` with :math:`\varepsilon_n \sim \mathcal N(0, \sigma_n^2)`,
make the targets and the value :math:`f_*` at a test input jointly Gaussian.  Conditioning
on :math:`\mathbf y` gives the posterior of :math:`f_*` in closed form,

.. math:: \mu_* = \mathbf k_*^\top (K + \sigma_n^2 I)^{-1} \mathbf y, \qquad
          \sigma_*^2 = k(\mathbf x_*, \mathbf x_*)
          - \mathbf k_*^\top (K + \sigma_n^2 I)^{-1} \mathbf k_*,

and the evidence is the Gaussian density
:math:`\log p(\mathbf y \mid X) = \log \mathcal N(\mathbf y \mid 0, K + \sigma_n^2 I)`.
The posterior mean is kernel ridge regression (chapter 7) with penalty
:math:`\delta = \sigma_n^2`.

The code is Rasmussen & Williams (2006), *Gaussian Processes for Machine Learning*,
Algorithm 2.1, split at the point where the test inputs enter: :func:`gpr_posterior`
factorises :math:`K + \sigma_n^2 I = L L^\top` once (lines 2-3 and 8), and
:func:`gpr_predict` evaluates the moments at any number of test points (lines 4-6).
No matrix is inverted.
"""

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular

from ._validation import (
    as_kernel_matrix,
    as_targets,
    as_test_kernels,
    check_nonnegative,
)

__all__ = ["GPRPosterior", "GPRPrediction", "gpr_posterior", "gpr_predict"]


def _short(v):
    return np.array2string(np.asarray(v), precision=4, separator=", ", threshold=6)


@dataclass(frozen=True)
class GPRPosterior:
    r"""The GP regression posterior at the training inputs (GPML Alg. 2.1, lines 2-3 and 8).

    Attributes
    ----------
    alpha : ndarray of shape (n,)
        :math:`\boldsymbol\alpha = (K + \sigma_n^2 I)^{-1} \mathbf y`, the dual coefficients:
        the posterior mean at any input is :math:`\mu_* = \mathbf k_*^\top \boldsymbol\alpha`.
    log_marginal_likelihood : float
        :math:`\log p(\mathbf y \mid X) = -\frac12 \mathbf y^\top \boldsymbol\alpha
        - \sum_n \log L_{nn} - \frac n2 \log 2\pi`.
    noise_variance : float
        :math:`\sigma_n^2`.
    L : ndarray of shape (n, n)
        Lower Cholesky factor of :math:`K + \sigma_n^2 I`, for the variances at test points.
    """

    alpha: np.ndarray
    log_marginal_likelihood: float
    noise_variance: float
    L: np.ndarray = field(repr=False, compare=False)

    def __repr__(self):
        return (
            f"GPRPosterior(n={self.alpha.shape[0]}, alpha={_short(self.alpha)}, "
            f"log_marginal_likelihood={self.log_marginal_likelihood:.8g}, "
            f"noise_variance={self.noise_variance:g})"
        )


@dataclass(frozen=True)
class GPRPrediction:
    r"""Posterior moments of the latent function at m test points (GPML Alg. 2.1, lines 4-6).

    Attributes
    ----------
    mean : ndarray of shape (m,)
        :math:`\mu_* = \mathbf k_*^\top \boldsymbol\alpha`.
    var : ndarray of shape (m,)
        :math:`\sigma_*^2 = k(\mathbf x_*, \mathbf x_*) - \mathbf v^\top \mathbf v`,
        :math:`\mathbf v = L^{-1} \mathbf k_*`: the variance of the noise-free
        :math:`f_*` (add :math:`\sigma_n^2` for that of a new target :math:`y_*`).
    """

    mean: np.ndarray
    var: np.ndarray

    def __repr__(self):
        return f"GPRPrediction(mean={_short(self.mean)}, var={_short(self.var)})"


def _cholesky_of(K, noise_variance):
    """Lower Cholesky factor of K + noise_variance I (Alg. 2.1, line 2), or a clear error."""
    A = K.copy()
    A[np.diag_indices_from(A)] += noise_variance
    hint = (
        f"K + noise_variance I is singular or numerically not positive definite with "
        f"noise_variance={noise_variance:g}; use a noise_variance > 0 (or a larger one)"
    )
    try:
        L = cholesky(A, lower=True, overwrite_a=True, check_finite=False)
    except LinAlgError:
        raise ValueError(hint) from None
    d = np.diag(L)
    # (min/max pivot)^2 bounds the condition number from below: refuse what round-off decides
    if d.min() <= 0 or (d.min() / d.max()) ** 2 < K.shape[0] * np.finfo(float).eps:
        raise ValueError(hint)
    return L


def gpr_posterior(K, y, noise_variance):
    r"""Gaussian-process regression at the training inputs: dual coefficients and evidence.

    With :math:`K + \sigma_n^2 I = L L^\top` (GPML Algorithm 2.1),

    .. math:: \boldsymbol\alpha = L^{-\top} (L^{-1} \mathbf y), \qquad
              \log p(\mathbf y \mid X) = -\tfrac12 \mathbf y^\top \boldsymbol\alpha
              - \sum_n \log L_{nn} - \tfrac n2 \log 2\pi,

    the second being :math:`\log \mathcal N(\mathbf y \mid 0, K + \sigma_n^2 I)`, since
    :math:`\tfrac12 \log |K + \sigma_n^2 I| = \sum_n \log L_{nn}`.

    Book: chapter 8 (GP regression; the evidence is equation ``eq-ch8-evidence``).

    Parameters
    ----------
    K : array_like of shape (n, n)
        Prior covariance (kernel matrix) of the function values at the training inputs.
    y : array_like of shape (n,)
        Real-valued targets (no mean is subtracted: the prior mean is 0).
    noise_variance : float
        :math:`\sigma_n^2 \ge 0`.  ``0`` is noise-free interpolation and needs a
        well-conditioned :math:`K`.

    Returns
    -------
    GPRPosterior

    Examples
    --------
    >>> from blrlib import rbf_kernel
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> y = np.array([0.5, 1.0, -0.5])
    >>> post = gpr_posterior(rbf_kernel(X), y, noise_variance=0.1)
    >>> round(post.log_marginal_likelihood, 6)
    -3.347261
    >>> K = rbf_kernel(X) + 0.1 * np.eye(3)   # the same evidence from its definition
    >>> dense = -0.5 * y @ np.linalg.solve(K, y) - 0.5 * np.linalg.slogdet(2 * np.pi * K)[1]
    >>> bool(np.isclose(post.log_marginal_likelihood, dense, rtol=1e-12))
    True
    """
    K = as_kernel_matrix(K)
    n = K.shape[0]
    y = as_targets(y, n, rows_name="K")
    noise_variance = check_nonnegative(noise_variance, "noise_variance")
    L = _cholesky_of(K, noise_variance)  # line 2
    alpha = cho_solve((L, True), y, check_finite=False)  # line 3
    lml = -0.5 * (y @ alpha) - np.sum(np.log(np.diag(L))) - 0.5 * n * np.log(2 * np.pi)  # line 8
    return GPRPosterior(alpha=alpha, log_marginal_likelihood=float(lml), noise_variance=noise_variance, L=L)


def gpr_predict(fit, K_star, k_star_star):
    r"""Posterior mean and variance of the latent function at test points (GPML Alg. 2.1).

    .. math:: \mu_* = \mathbf k_*^\top \boldsymbol\alpha, \qquad
              \sigma_*^2 = k(\mathbf x_*, \mathbf x_*) - \mathbf v^\top \mathbf v, \quad
              \mathbf v = L^{-1} \mathbf k_*.

    The variance is that of :math:`f_*`, without the noise; it is clipped at 0 where
    round-off would make it slightly negative (at a training input with
    :math:`\sigma_n^2 = 0`).

    Book: chapter 8 (GP regression, the posterior mean and variance).

    Parameters
    ----------
    fit : GPRPosterior
        From :func:`gpr_posterior`.
    K_star : array_like of shape (m, n)
        ``K_star[i, j] = k(x_star_i, x_j)``, test points against training points.
    k_star_star : array_like of shape (m,)
        The prior variances :math:`k(\mathbf x_*, \mathbf x_*)` of the test points.

    Returns
    -------
    GPRPrediction

    Examples
    --------
    >>> from blrlib import rbf_kernel
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> post = gpr_posterior(rbf_kernel(X), np.array([0.5, 1.0, -0.5]), noise_variance=0.1)
    >>> X_new = np.array([[1.0], [20.0]])
    >>> pred = gpr_predict(post, rbf_kernel(X_new, X), np.ones(2))
    >>> round(float(pred.mean[0]), 4), abs(float(pred.mean[1])) < 1e-12
    (0.8956, True)
    >>> pred.var.round(4)   # far from the data the prior variance 1 returns
    array([0.0867, 1.    ])
    """
    if not isinstance(fit, GPRPosterior):
        raise TypeError(f"fit must be a GPRPosterior (from gpr_posterior), got {type(fit).__name__}")
    K_star, k_star_star = as_test_kernels(K_star, k_star_star, fit.alpha.shape[0])
    mean = K_star @ fit.alpha  # line 4
    v = solve_triangular(fit.L, K_star.T, lower=True, check_finite=False)  # line 5
    var = np.maximum(k_star_star - np.einsum("ij,ij->j", v, v), 0.0)  # line 6
    return GPRPrediction(mean=mean, var=var)
