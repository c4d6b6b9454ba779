r"""Predictive probabilities: averaging the sigmoid over the posterior.

Book: chapter 6.  Under a Gaussian posterior the activation
:math:`a = \mathbf w^\top \mathbf x` is Gaussian with mean :math:`\mu_a` and
variance :math:`\sigma_a^2` (equation ``eq-latent-moments``), and the predictive
probability is the one-dimensional integral

.. math:: p(y = 1 \mid \mathbf x, \mathcal D) \approx
          \int \sigma(a)\, \mathcal N(a \mid \mu_a, \sigma_a^2)\, da

(equation ``eq-predictive``), which has no closed form.  :func:`expected_sigmoid`
evaluates it three ways: by quadrature (the book's reference), by the probit
approximation and by Monte Carlo.  Chapter 9 reuses it for GP classification.
"""

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import expit

from ._validation import _as_float_array, _check_finite, as_matrix, as_rng, check_int

__all__ = [
    "latent_moments",
    "expected_sigmoid",
    "probit_kappa",
    "predict_plugin",
    "predict_probit",
    "predict_mc",
    "predict_quadrature",
]

_METHODS = ("quadrature", "probit", "mc")


def probit_kappa(var):
    r"""The probit scaling :math:`\kappa(\sigma^2) = (1 + \pi \sigma^2 / 8)^{-1/2}`.

    Book: chapter 6, equation ``eq-probit-kappa``.

    Examples
    --------
    >>> probit_kappa(0.0)
    1.0
    >>> round(float(probit_kappa(8 / np.pi)), 6) == round(2 ** -0.5, 6)
    True
    """
    var = _as_float_array(var, "var")
    if np.any(var < 0) or not np.all(np.isfinite(var)):
        raise ValueError(f"var must be finite and >= 0, got {var[(var < 0) | ~np.isfinite(var)].ravel()[0]}")
    out = 1.0 / np.sqrt(1.0 + np.pi * var / 8.0)
    return out if out.ndim else float(out)


# Trapezoid rule in t = (a - mean) / sd on [-T, T].  For an integrand that is
# analytic in a strip |Im t| < c the error decays like exp(-2 pi c / h).  The
# sigmoid has poles at a = i pi (2k + 1), so c = pi / sd, and the step
# h = min(_H_MAX, _SH / sd) keeps the error below 1e-13 for any variance; the
# Gaussian tail beyond T = 8.5 is below 1e-16.
_T = 8.5
_H_MAX = 0.5
_SH = 0.6
# Gaussian averages are evaluated in blocks of rows holding about this many values
# (32 MB), however many points and nodes there are.
_BLOCK = 4_000_000


def _quadrature_rule(sd_max, t_max=_T):
    """Trapezoid nodes ``t`` on [-t_max, t_max] and weights h phi(t) for E[g(mean + sd t)], t ~ N(0, 1).

    The step suits every sd up to ``sd_max`` (see the comment above).  A caller whose
    integrand moves the mass of the Gaussian (the tilted distributions of expectation
    propagation) widens ``t_max``.
    """
    h = min(_H_MAX, _SH / max(float(sd_max), 1e-300))
    t = np.arange(-np.ceil(t_max / h), np.ceil(t_max / h) + 1) * h
    return t, h * np.exp(-0.5 * t**2) / np.sqrt(2.0 * np.pi)


def _row_blocks(n_rows, n_nodes):
    """Slices of ``range(n_rows)`` whose blocks hold about ``_BLOCK`` node values each."""
    step = max(1, _BLOCK // max(n_nodes, 1))
    return [slice(start, start + step) for start in range(0, n_rows, step)]


def _gaussian_average(g, mean, sd, t, weights):
    r"""The weighted sums :math:`\sum_k w_k\, g(\mu_i + s_i t_k)` for every pair :math:`(\mu_i, s_i)`.

    One routine for both ways the book averages over a Gaussian: quadrature (``t``
    and ``weights`` from :func:`_quadrature_rule`) and Monte Carlo (``t`` standard
    normal draws, ``weights`` all :math:`1/T`).  ``g`` maps an array of activations
    elementwise; ``mean`` and ``sd`` are 1-D.  Rows are processed in blocks, so memory
    stays bounded.
    """
    out = np.empty(mean.shape)
    for rows in _row_blocks(mean.size, t.size):
        out[rows] = g(mean[rows, None] + sd[rows, None] * t[None, :]) @ weights
    return out


def expected_sigmoid(mean, var, method="quadrature", n_samples=10_000, rng=None):
    r"""The Gaussian expectation of the sigmoid, :math:`E[\sigma(a)]` for :math:`a \sim \mathcal N(\mu, \sigma^2)`.

    Book: chapter 6, equations ``eq-predictive`` (the integral) and
    ``eq-probit-approx`` (its probit approximation).

    Parameters
    ----------
    mean, var : array_like
        :math:`\mu` and :math:`\sigma^2 \ge 0`, broadcast against each other.
    method : {"quadrature", "probit", "mc"}
        ``"quadrature"``: the trapezoid rule in the standardised variable, with a
        step that shrinks as :math:`\sigma` grows; accurate to about 1e-12 for any
        variance (the book's exact reference).  ``"probit"``:
        :math:`\sigma(\kappa(\sigma^2)\mu)`.  ``"mc"``: the average of
        :math:`\sigma(a^{(s)})` over ``n_samples`` draws.
    n_samples : int, default 10000
        Monte Carlo draws (``method="mc"`` only).
    rng : numpy.random.Generator or int, optional
        Source of the Monte Carlo draws; seed 0 when omitted, so results repeat.

    Returns
    -------
    ndarray or float
        Probabilities with the broadcast shape of ``mean`` and ``var``.

    Examples
    --------
    >>> expected_sigmoid(0.0, 4.0)
    0.5
    >>> round(float(expected_sigmoid(2.0, 0.0)), 12) == round(float(1 / (1 + np.exp(-2.0))), 12)
    True
    >>> p = expected_sigmoid(1.0, 3.0, method="probit")
    >>> round(p, 4), round(p - expected_sigmoid(1.0, 3.0), 4)  # probit: 0.0036 too high
    (0.6632, 0.0036)
    """
    mean = _as_float_array(mean, "mean")
    var = _as_float_array(var, "var")
    _check_finite(mean, "mean")
    if not np.all(np.isfinite(var)) or np.any(var < 0):
        raise ValueError(f"var must be finite and >= 0, got {var[~np.isfinite(var) | (var < 0)].ravel()[0]}")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    mean, var = np.broadcast_arrays(mean, var)
    shape = mean.shape
    mean, sd = mean.ravel(), np.sqrt(var.ravel())
    if method == "probit":
        out = expit(probit_kappa(var.ravel()) * mean)
    elif method == "mc":
        n_samples = check_int(n_samples, "n_samples")
        z = as_rng(rng).standard_normal(n_samples)
        out = _gaussian_average(expit, mean, sd, z, np.full(n_samples, 1.0 / n_samples))
    else:
        out = _gaussian_average(expit, mean, sd, *_quadrature_rule(np.max(sd, initial=0.0)))
    out = out.reshape(shape)
    return out if out.ndim else float(out)


def _check_post(post):
    from .laplace import LaplacePosterior

    if not isinstance(post, LaplacePosterior):
        raise TypeError(f"post must be a LaplacePosterior (from laplace_posterior), got {type(post).__name__}")


def _check_new(post, X_new):
    X_new = as_matrix(X_new, "X_new")
    d = post.mean.shape[0]
    if X_new.shape[1] != d:
        raise ValueError(
            f"X_new has {X_new.shape[1]} columns but the posterior is over {d} weights "
            f"(did you forget add_intercept?)"
        )
    return X_new


def latent_moments(post, X_new):
    r"""Mean and variance of the activation :math:`a = \mathbf w^\top \mathbf x` under the posterior.

    .. math:: \mu_a = \mathbf m^\top \mathbf x, \qquad
              \sigma_a^2 = \mathbf x^\top \Sigma \mathbf x = \|L^{-1} \mathbf x\|^2

    with :math:`A = L L^\top` the Cholesky factor of the posterior precision.

    Book: chapter 6, equation ``eq-latent-moments``.

    Parameters
    ----------
    post : LaplacePosterior
    X_new : array_like of shape (m, d)

    Returns
    -------
    mean, var : ndarray of shape (m,)

    Examples
    --------
    >>> from blrlib import laplace_posterior
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> post = laplace_posterior(X, np.array([0, 0, 1, 1]), prior_precision=1.0)
    >>> X_new = np.array([[1.0, 0.0], [1.0, 3.0]])
    >>> mean, var = latent_moments(post, X_new)
    >>> mean.round(4), var.round(4)  # the variance grows away from the data
    (array([-0.0157,  1.2324]), array([0.507, 6.173]))
    """
    _check_post(post)
    X_new = _check_new(post, X_new)
    v = solve_triangular(post._chol, X_new.T, lower=True, check_finite=False)
    return X_new @ post.mean, np.sum(v * v, axis=0)


def predict_plugin(post, X_new):
    r"""Plug-in prediction :math:`\sigma(\mathbf w_\text{MAP}^\top \mathbf x)`, ignoring uncertainty.

    Book: chapter 6, equation ``eq-plugin``.

    Parameters
    ----------
    post : LaplacePosterior
        From :func:`~blrlib.laplace_posterior`.
    X_new : array_like of shape (m, d)
        Inputs with the same columns as the training ``X`` (including the intercept column).

    Returns
    -------
    ndarray of shape (m,)
        :math:`p(y = 1 \mid \mathbf x, \mathcal D)` for each row of ``X_new``.

    Examples
    --------
    >>> from blrlib import laplace_posterior
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> post = laplace_posterior(X, np.array([0, 0, 1, 1]), prior_precision=1.0)
    >>> X_new = np.array([[1.0, 0.0], [1.0, 3.0]])
    >>> predict_plugin(post, X_new).round(4)
    array([0.4961, 0.7742])
    """
    _check_post(post)
    return expit(_check_new(post, X_new) @ post.mean)


def predict_probit(post, X_new):
    r"""Predictive probability by the probit approximation :math:`\sigma(\kappa(\sigma_a^2)\mu_a)`.

    Book: chapter 6, equation ``eq-probit-approx``.

    Parameters
    ----------
    post : LaplacePosterior
        From :func:`~blrlib.laplace_posterior`.
    X_new : array_like of shape (m, d)
        Inputs with the same columns as the training ``X`` (including the intercept column).

    Returns
    -------
    ndarray of shape (m,)
        :math:`p(y = 1 \mid \mathbf x, \mathcal D)` for each row of ``X_new``.

    Examples
    --------
    >>> from blrlib import laplace_posterior
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> post = laplace_posterior(X, np.array([0, 0, 1, 1]), prior_precision=1.0)
    >>> X_new = np.array([[1.0, 0.0], [1.0, 3.0]])
    >>> predict_probit(post, X_new).round(4)  # pulled towards 1/2 where the variance is large
    array([0.4964, 0.6606])
    """
    return expected_sigmoid(*latent_moments(post, X_new), method="probit")


def predict_mc(post, X_new, n_samples=10_000, rng=None):
    r"""Predictive probability by Monte Carlo over the Laplace posterior.

    Draws ``n_samples`` activations per point from :math:`\mathcal N(\mu_a, \sigma_a^2)`;
    the same standard-normal draws serve every point.

    Book: chapter 6, equation ``eq-predictive-mc``.

    Parameters
    ----------
    post : LaplacePosterior
        From :func:`~blrlib.laplace_posterior`.
    X_new : array_like of shape (m, d)
        Inputs with the same columns as the training ``X`` (including the intercept column).
    n_samples : int, default 10000
    rng : numpy.random.Generator, optional
        The source of the draws; a fixed seed by default, so results repeat.

    Returns
    -------
    ndarray of shape (m,)
        :math:`p(y = 1 \mid \mathbf x, \mathcal D)` for each row of ``X_new``.

    Examples
    --------
    >>> from blrlib import laplace_posterior
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> post = laplace_posterior(X, np.array([0, 0, 1, 1]), prior_precision=1.0)
    >>> X_new = np.array([[1.0, 0.0], [1.0, 3.0]])
    >>> predict_mc(post, X_new, rng=np.random.default_rng(0)).round(4)
    array([0.4976, 0.6597])
    """
    return expected_sigmoid(*latent_moments(post, X_new), method="mc", n_samples=n_samples, rng=rng)


def predict_quadrature(post, X_new):
    r"""Predictive probability by quadrature, the reference the other approximations are measured against.

    Book: chapter 6, equation ``eq-predictive``.

    Parameters
    ----------
    post : LaplacePosterior
        From :func:`~blrlib.laplace_posterior`.
    X_new : array_like of shape (m, d)
        Inputs with the same columns as the training ``X`` (including the intercept column).

    Returns
    -------
    ndarray of shape (m,)
        :math:`p(y = 1 \mid \mathbf x, \mathcal D)` for each row of ``X_new``.

    Examples
    --------
    >>> from blrlib import laplace_posterior
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> post = laplace_posterior(X, np.array([0, 0, 1, 1]), prior_precision=1.0)
    >>> X_new = np.array([[1.0, 0.0], [1.0, 3.0]])
    >>> predict_quadrature(post, X_new).round(4)
    array([0.4965, 0.6578])
    """
    return expected_sigmoid(*latent_moments(post, X_new), method="quadrature")
