r"""Predictions of a GP classifier: Rasmussen & Williams Alg. 3.2 (Laplace) and Alg. 3.6 (EP).

Book: chapters 9 and 11.  Both approximations make the latent posterior Gaussian,
:math:`q(\mathbf f) = \mathcal N(\boldsymbol\mu, \Sigma)`, so the latent value
:math:`f_*` at a test input, jointly Gaussian with :math:`\mathbf f` under the prior, is
Gaussian too, with mean and variance

.. math:: \mu_* = \mathbf k_*^\top \boldsymbol\alpha, \qquad
          \sigma_*^2 = k(\mathbf x_*, \mathbf x_*)
          - \mathbf k_*^\top S^{1/2} B^{-1} S^{1/2} \mathbf k_*,
          \qquad B = I + S^{1/2} K S^{1/2},

where :math:`S = W` and :math:`\boldsymbol\alpha = \mathbf y - \hat{\mathbf p}` for
Laplace's method (Alg. 3.2) and :math:`S = \tilde S` and :math:`\boldsymbol\alpha =
\tilde{\boldsymbol\nu} - \tilde S^{1/2} B^{-1} \tilde S^{1/2} K \tilde{\boldsymbol\nu}` for EP
(Alg. 3.6).  The probability :math:`p(y_* = 1) = E[\sigma(f_*)]` is then the Gaussian
average of chapter 6 (:func:`~blrlib.expected_sigmoid`).
"""

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from ._gp_linalg import latent_moments
from ._validation import as_test_kernels
from .gp_ep import GPCEP
from .gp_laplace import GPCLaplace
from .gp_vi import GPCVariational
from .predictive import expected_sigmoid

__all__ = ["GPCPrediction", "gpc_predict"]

_PREDICT_METHODS = ("probit", "quadrature", "mc", "plugin")


def _short(v):
    return np.array2string(np.asarray(v), precision=4, separator=", ", threshold=6)


@dataclass(frozen=True)
class GPCPrediction:
    r"""Predictions of a GP classifier at m test points.

    Attributes
    ----------
    prob : ndarray of shape (m,)
        :math:`p(y_* = 1 \mid \mathbf x_*, \mathcal D)` under the chosen approximation.
    mean : ndarray of shape (m,)
        Mean :math:`\mu_*` of the latent :math:`f_*` (for samples: the posterior mean,
        averaged over the draws).
    var : ndarray of shape (m,)
        Variance :math:`\sigma_*^2` of the latent :math:`f_*`.
    method : str
        How ``prob`` was computed from the latent distribution.
    """

    prob: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    method: str = "probit"

    def __repr__(self):
        return (
            f"GPCPrediction(prob={_short(self.prob)}, mean={_short(self.mean)}, "
            f"var={_short(self.var)}, method={self.method!r})"
        )


def _check_method(method):
    if method not in _PREDICT_METHODS:
        raise ValueError(f"method must be one of {_PREDICT_METHODS}, got {method!r}")
    return method


def _predict(fit, K_star, k_star_star, method="quadrature", n_samples=10_000, rng=None):
    """Alg. 3.2 / 3.6 for validated input."""
    if isinstance(fit, GPCLaplace):
        # Alg. 3.2, lines 4-6: mean k_*^T grad log p(y | f_hat), v = L \ (W^1/2 k_*)
        mean, var = latent_moments(fit.grad_log_lik, fit.W_sqrt, fit.L, K_star, k_star_star)
    elif isinstance(fit, GPCVariational):
        # the same with Lambda of the variational Gaussian for S and its alpha (m = K alpha)
        mean, var = latent_moments(fit.alpha, np.sqrt(fit.lam), fit.L, K_star, k_star_star)
    else:
        # Alg. 3.6, lines 4-7: mean k_*^T (nu_tilde - z), v = L \ (S_tilde^1/2 k_*)
        mean, var = latent_moments(fit.alpha, np.sqrt(fit.tau_tilde), fit.L, K_star, k_star_star)
    if method == "plugin":
        prob = expit(mean)
    else:  # Alg. 3.2 line 7 / Alg. 3.6 line 8: the average of sigma(f_*) over N(mean, var)
        kwargs = {"n_samples": n_samples, "rng": rng} if method == "mc" else {}
        prob = np.atleast_1d(expected_sigmoid(mean, var, method=method, **kwargs))
    return GPCPrediction(prob=prob, mean=mean, var=var, method=method)


def gpc_predict(fit, K_star, k_star_star, method="probit", *, n_samples=10_000, rng=None):
    r"""Predictive probabilities of a GP classifier (GPML Alg. 3.2 for Laplace, Alg. 3.6 for EP).

    The latent value at a test input is Gaussian under either approximation, with

    .. math:: \mu_* = \mathbf k_*^\top \boldsymbol\alpha, \qquad
              \sigma_*^2 = k(\mathbf x_*, \mathbf x_*) - \mathbf v^\top \mathbf v, \quad
              \mathbf v = L^{-1} S^{1/2} \mathbf k_*

    (:math:`S = W`, :math:`\boldsymbol\alpha = \mathbf y - \hat{\mathbf p}` for Laplace;
    :math:`S = \tilde S` and the EP :math:`\boldsymbol\alpha` for EP), and
    :math:`p(y_* = 1) = E[\sigma(f_*)]` is computed from these moments by
    :func:`~blrlib.expected_sigmoid` (chapter 6).

    Book: chapter 9, equations ``eq-gpc-latent-moments`` and ``eq-gpc-predictive``
    (Laplace); chapter 11 (EP); chapter 12 (the variational Gaussian).

    Parameters
    ----------
    fit : GPCLaplace, GPCEP or GPCVariational
        From :func:`~blrlib.gpc_laplace`, :func:`~blrlib.gpc_ep` or :func:`~blrlib.gpc_vi`
        (for which :math:`S = \Lambda` and :math:`\mathbf m = K\boldsymbol\alpha`, as for EP).
    K_star : array_like of shape (m, n)
        ``K_star[i, j] = k(x_star_i, x_j)``, test points against training points.
    k_star_star : array_like of shape (m,)
        The prior variances :math:`k(\mathbf x_*, \mathbf x_*)` of the test points.
    method : {"probit", "quadrature", "mc", "plugin"}, default "probit"
        ``"probit"``: :math:`\sigma(\kappa(\sigma_*^2)\mu_*)` (equation ``eq-probit-approx``);
        ``"quadrature"``: the integral to about 1e-12 (what :class:`~blrlib.GPClassifier`
        uses by default); ``"mc"``: Monte Carlo with ``n_samples`` draws from ``rng``; ``"plugin"``:
        :math:`\sigma(\mu_*)`, ignoring the latent variance.
    n_samples, rng
        Passed to :func:`~blrlib.expected_sigmoid` for ``method="mc"``.

    Returns
    -------
    GPCPrediction

    Examples
    --------
    >>> from blrlib import gpc_laplace, rbf_kernel
    >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    >>> fit = gpc_laplace(rbf_kernel(X, variance=4.0), np.array([0, 0, 1, 1]))
    >>> X_new = np.array([[0.0], [1.5], [10.0]])
    >>> pred = gpc_predict(fit, rbf_kernel(X_new, X, variance=4.0), np.full(3, 4.0))
    >>> pred.prob.round(3)
    array([0.5 , 0.75, 0.5 ])
    >>> pred.var.round(3)  # far from the data the prior variance returns
    array([2.861, 1.987, 4.   ])
    """
    if not isinstance(fit, GPCLaplace | GPCEP | GPCVariational):
        raise TypeError(
            f"fit must be a GPCLaplace (from gpc_laplace) or a GPCEP (from gpc_ep) or a GPCVariational "
            f"(from gpc_vi), got {type(fit).__name__}"
        )
    n = fit.alpha.shape[0]
    K_star, k_star_star = as_test_kernels(K_star, k_star_star, n)
    method = _check_method(method)
    return _predict(fit, K_star, k_star_star, method, n_samples, rng)
