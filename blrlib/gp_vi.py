r"""Gaussian-process classification by the variational Gaussian (KL) method.

Among all Gaussians
:math:`q(\mathbf f) = \mathcal N(\mathbf m, \Sigma)` the method picks the one that
maximises the evidence lower bound

.. math:: \mathcal L(q) = \sum_n E_{q(f_n)}[\log\sigma(s_n f_n)]
          - \operatorname{KL}\big(q(\mathbf f) \,\|\, \mathcal N(\mathbf 0, K)\big)
          \le \log p(\mathbf y \mid X)

(book: chapter 12, equation ``eq-vi-gp-elbo``; Opper & Archambeau 2009, Nickisch &
Rasmussen 2008).  At
its maximum :math:`\mathbf m = K\boldsymbol\alpha` and
:math:`\Sigma = (K^{-1} + \Lambda)^{-1}`, :math:`\Lambda = \operatorname{diag}(\lambda_n)`,
with :math:`\alpha_n = \partial \bar\ell_n / \partial m_n` and
:math:`\lambda_n = -2\,\partial \bar\ell_n / \partial v_n`, where
:math:`\bar\ell_n(m_n, v_n) = E_{\mathcal N(f_n \mid m_n, v_n)}[\log\sigma(s_n f_n)]`
(the fixed-point conditions, chapter 12, equation ``eq-vi-gp-fixed-point``, where
:math:`\lambda_n` is written :math:`\tilde\tau_n`): :math:`2n` numbers describe the optimum.  This is
the form of the expectation-propagation posterior (chapter 11), Gaussian sites
:math:`(\tilde\tau_n, \tilde\nu_n) = (\lambda_n, \alpha_n + \lambda_n m_n)` times the
prior, so the marginals, the factor of :math:`B = I + \Lambda^{1/2} K \Lambda^{1/2}` and
prediction (Alg. 3.6) are shared with :mod:`blrlib.gp_ep`.

In the sites the bound is

.. math:: \mathcal L = \sum_n \bar\ell_n(m_n, v_n)
          - \tfrac12 \Big(\mathbf m^\top(\tilde{\boldsymbol\nu} - \tilde\tau \circ \mathbf m)
          - \sum_n \tilde\tau_n v_n + \log|B|\Big),

since :math:`\operatorname{tr}(K^{-1}\Sigma) = n - \sum_n \tilde\tau_n \Sigma_{nn}`,
:math:`K^{-1}\mathbf m = \tilde{\boldsymbol\nu} - \tilde\tau \circ \mathbf m` and
:math:`|K| / |\Sigma| = |B|`: no inverse of :math:`K` is needed.  It is maximised by
natural-gradient steps (Khan & Lin's conjugate-computation VI): the sites move a
fraction :math:`\rho` of the way to :math:`(-2\,\partial_v \bar\ell,\,
\partial_m \bar\ell - 2 m\, \partial_v \bar\ell)` at the current marginals, and
:math:`\rho` is halved until the bound does not decrease.

The expected log-likelihood :math:`\bar\ell` is computed by one-dimensional quadrature
that stays accurate at any latent variance (:func:`_expected_log_lik`); Gauss-Hermite
rules lose accuracy when :math:`\sqrt{v}` is much larger than the width (about 1) of
the bend of :math:`\log\sigma`.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, log_expit, ndtr

from ._anderson import Anderson
from ._gp_lowrank import LowRankEPPosterior, pivoted_cholesky
from ._validation import as_kernel_matrix, as_labels, check_int, check_positive
from .gp_ep import _LOWRANK_DIVISOR, _LOWRANK_MIN_N, _LOWRANK_RTOL, _LOWRANK_USE, _dense_marginals
from .logistic import _signs
from .optimize import ConvergenceWarning

__all__ = ["GPCVariational", "gpc_vi"]

# Composite Gauss-Legendre rule of _expected_log_lik: _PANELS panels of _NODES nodes on
# the half-line u = |f| in [0, _U_MAX], cut to within _T_MAX standard deviations of |m|.
_PANELS = 6
_NODES = 16
_U_MAX = 42.0  # log(1 + e^-u) < 6e-19 beyond
_T_MAX = 10.0  # the Gaussian density has fallen by e^-50 there
_MIN_STEP = 2.0**-20  # the smallest fraction of a natural-gradient step that is tried
_BLOCK = 4096  # latent values per block of quadrature
_MEMORY = 10  # iterates remembered by the Anderson extrapolation of the sites


def _short(v):
    return np.array2string(np.asarray(v), precision=4, separator=", ", threshold=6)


@dataclass(frozen=True)
class GPCVariational:
    r"""The variational Gaussian approximation of a GP classifier's posterior at a fixed kernel.

    Attributes
    ----------
    mean, var : ndarray of shape (n,)
        The marginal means :math:`m_n` and variances :math:`\Sigma_{nn}` of :math:`q(\mathbf f)`.
    elbo : float
        The evidence lower bound at :math:`q`,
        :math:`\le \log p(\mathbf y \mid X)`.
    n_iter : int
        Natural-gradient iterations taken.
    converged : bool
        Whether the stopping rule was met within ``max_iter`` iterations.
    alpha : ndarray of shape (n,)
        :math:`\boldsymbol\alpha` with :math:`\mathbf m = K \boldsymbol\alpha` (the
        predictive mean is :math:`\mathbf k_*^\top \boldsymbol\alpha`).
    lam : ndarray of shape (n,)
        :math:`\lambda_n \ge 0`, :math:`\Sigma = (K^{-1} + \operatorname{diag}(\lambda))^{-1}`.
    L : ndarray of shape (n, n)
        Lower Cholesky factor of :math:`B = I + \Lambda^{1/2} K \Lambda^{1/2}`.
    """

    mean: np.ndarray
    var: np.ndarray = field(repr=False)
    elbo: float
    n_iter: int
    converged: bool
    alpha: np.ndarray = field(repr=False)
    lam: np.ndarray = field(repr=False)
    L: np.ndarray = field(repr=False, compare=False)

    def __repr__(self):
        return (
            f"GPCVariational(n={self.mean.shape[0]}, mean={_short(self.mean)}, "
            f"elbo={self.elbo:.8g}, n_iter={self.n_iter}, converged={self.converged})"
        )


def _legendre_panels():
    """Gauss-Legendre nodes and weights on [0, 1], repeated over _PANELS equal panels."""
    x, w = np.polynomial.legendre.leggauss(_NODES)
    x, w = 0.5 * (x + 1.0), 0.5 * w
    starts = np.arange(_PANELS) / _PANELS
    return (starts[:, None] + x[None, :] / _PANELS).ravel(), np.tile(w / _PANELS, _PANELS)


_X01, _W01 = _legendre_panels()


def _expected_log_lik(m, v, s):
    r""":math:`\bar\ell = E[\log\sigma(s f)]`, :math:`\partial_m \bar\ell` and :math:`\partial_v \bar\ell`
    for :math:`f \sim \mathcal N(m, v)`, elementwise.

    The log-sigmoid is split into its two asymptotes and a remainder that is even in
    :math:`f`, bounded and decays like :math:`e^{-|f|}`:

    .. math:: \log\sigma(z) = \min(z, 0) - \log(1 + e^{-|z|}).

    The Gaussian average of :math:`\min(z, 0)`, :math:`z = s f \sim \mathcal N(\mu, v)`,
    :math:`\mu = s m`, is :math:`\mu\,\Phi(-\mu/\sqrt v) - \sqrt v\,\phi(\mu/\sqrt v)`.  The
    remainder is integrated over :math:`u = |f|` against the folded density
    :math:`\phi_v(u - m) + \phi_v(u + m)`, on :math:`[0, 42]` cut to within 10 standard
    deviations of :math:`|m|`, by a composite Gauss-Legendre rule (6 panels of 16
    nodes): the folded integrand is analytic on :math:`u \ge 0` (the kink of the
    remainder at 0 is the fold), its scales are 1 (the remainder) and :math:`\sqrt v` (the
    density), and each panel is at most 7 wide or 3.4 standard deviations.  The
    derivatives are :math:`\partial_m \bar\ell = s\,E[\sigma(-s f)]` and
    :math:`\partial_v \bar\ell = -\frac12 E[\sigma(f)\sigma(-f)]` (Gaussian integration by
    parts), split the same way: :math:`\sigma(-z) = [z < 0] + \operatorname{sign}(z)\,
    \sigma(-|z|)`.  Accurate to about 1e-12 (the tests compare with
    ``scipy.integrate.quad`` for :math:`v` up to 1e6).
    """
    m, v, s = (np.asarray(a, dtype=float) for a in (m, v, s))
    sd = np.sqrt(v)
    mu = s * m
    r = mu / sd
    # the asymptotes in closed form
    phi = np.exp(-0.5 * r**2) / np.sqrt(2.0 * np.pi)
    value = mu * ndtr(-r) - sd * phi
    below = ndtr(-r)  # P(z < 0)
    # the remainders, over u = |f| >= 0
    centre = np.abs(m)
    lo = np.clip(centre - _T_MAX * sd, 0.0, _U_MAX)
    hi = np.clip(centre + _T_MAX * sd, 0.0, _U_MAX)
    width = hi - lo
    rem_value, rem_sign, rem_curv = (np.empty_like(m) for _ in range(3))
    for start in range(0, m.size, _BLOCK):
        rows = slice(start, start + _BLOCK)
        u = lo[rows, None] + width[rows, None] * _X01[None, :]
        w = width[rows, None] * _W01[None, :]
        sd_r, m_r = sd[rows, None], m[rows, None]
        norm = 1.0 / (np.sqrt(2.0 * np.pi) * sd_r)
        plus = norm * np.exp(-0.5 * ((u - m_r) / sd_r) ** 2)  # density at f = +u
        minus = norm * np.exp(-0.5 * ((u + m_r) / sd_r) ** 2)  # and at f = -u
        e = np.exp(-u)
        tail = e / (1.0 + e)  # sigma(-|f|)
        rem_value[rows] = -np.sum(w * np.log1p(e) * (plus + minus), axis=1)
        rem_sign[rows] = np.sum(w * tail * (plus - minus), axis=1)  # E[sign(f) sigma(-|f|)]
        rem_curv[rows] = np.sum(w * tail * (1.0 - tail) * (plus + minus), axis=1)
    value = value + rem_value
    grad_m = s * below + rem_sign  # s E[sigma(-s f)] = s P(sf < 0) + E[sign(f) sigma(-|f|)]
    grad_v = -0.5 * rem_curv
    return value, grad_m, grad_v


@dataclass(frozen=True)
class _Point:
    """Sites, their marginals and the bound there."""

    tau: np.ndarray
    nu: np.ndarray
    marginals: object
    elbo: float
    grad_m: np.ndarray
    grad_v: np.ndarray


def _at(marginals_of, s, tau, nu):
    r"""The marginals of the sites (tau, nu) and the evidence lower bound there."""
    marg = marginals_of(tau, nu)
    ell, grad_m, grad_v = _expected_log_lik(marg.mean, marg.var, s)
    # KL(q || p) = (m^T K^-1 m - sum tau v + log|B|) / 2 with K^-1 m = nu - tau m
    kl = 0.5 * (marg.mean @ (nu - tau * marg.mean) - tau @ marg.var) + marg.half_log_det_B
    return _Point(tau, nu, marg, float(np.sum(ell) - kl), grad_m, grad_v)


def _natural_gradient_ascent(marginals_of, s, tau, nu, max_iter, tol):
    """Natural-gradient (CVI) steps on the sites, Anderson-accelerated, until the full step changes nothing.

    Each iteration first tries the Anderson extrapolation of the full steps so far and
    keeps it if the bound does not decrease there; otherwise it takes the natural-gradient
    step, a fraction ``rho`` of the full one, halved until the bound does not decrease.
    Returns the last point, the iterations taken and whether the stopping rule was met:
    the full step from it changes no site by more than ``tol`` (relative to the larger of
    1 and the largest site), i.e. the point satisfies the fixed-point conditions to ``tol``.
    """
    n = tau.size
    cur = _at(marginals_of, s, tau, nu)
    rho, anderson = 1.0, Anderson(_MEMORY)
    for it in range(1, max_iter + 1):
        tau_full = -2.0 * cur.grad_v  # the fixed-point conditions as sites
        nu_full = cur.grad_m + tau_full * cur.marginals.mean
        d_tau, d_nu = tau_full - cur.tau, nu_full - cur.nu
        change = max(
            float(np.max(np.abs(d_tau))) / max(1.0, float(np.max(np.abs(tau_full)))),
            float(np.max(np.abs(d_nu))) / max(1.0, float(np.max(np.abs(nu_full)))),
        )
        if change <= tol:
            return cur, it - 1, True
        nxt = None
        full = np.concatenate([tau_full, nu_full])
        guess = anderson.step(np.concatenate([cur.tau, cur.nu]), full)
        if guess is not full:  # an extrapolation (the first step returns the full step itself)
            trial = _at(marginals_of, s, np.maximum(guess[:n], 0.0), guess[n:])
            if trial.elbo >= cur.elbo:
                nxt = trial
        if nxt is None:
            while True:
                nxt = _at(marginals_of, s, cur.tau + rho * d_tau, cur.nu + rho * d_nu)
                if nxt.elbo >= cur.elbo or rho <= _MIN_STEP:
                    break
                rho *= 0.5
        if nxt.elbo < cur.elbo:  # no fraction of the step raises the bound: the maximum to round-off
            return cur, it, change <= np.sqrt(tol)
        cur = nxt
        rho = min(1.0, 2.0 * rho)
    return cur, max_iter, False


def _fit(K, y, max_iter, tol):
    """The low-rank phase (n >= 500 and a K with a good pivoted Cholesky factor), then exact."""
    n = K.shape[0]
    s = _signs(y)
    tau, nu = np.zeros(n), np.zeros(n)
    used = 0
    if n >= _LOWRANK_MIN_N:
        V, d = pivoted_cholesky(K, n // _LOWRANK_DIVISOR, rtol=_LOWRANK_RTOL)
        if np.max(d) <= _LOWRANK_USE * np.max(np.diag(K)):
            point, used, _ = _natural_gradient_ascent(LowRankEPPosterior(V, d).marginals, s, tau, nu,
                                                      max_iter, tol)
            tau, nu = point.tau, point.nu
    # a fresh factor per evaluation: a rejected step must not overwrite the L of the point kept
    point, more, converged = _natural_gradient_ascent(
        lambda t, v: _dense_marginals(K, t, v)[0], s, tau, nu, max(max_iter - used, 1), tol)
    return point, used + more, converged


def _elbo_and_gradient(K, y, alpha, lam):
    r"""The bound in Opper & Archambeau's parameters and its gradient (dense, for the tests).

    With :math:`\mathbf m = K\boldsymbol\alpha`, :math:`\Sigma = (K^{-1} + \Lambda)^{-1}`:

    .. math:: \frac{\partial\mathcal L}{\partial\boldsymbol\alpha} = K(\mathbf g - \boldsymbol\alpha),
              \qquad \frac{\partial\mathcal L}{\partial\lambda_n}
              = \tfrac12 \sum_k \Sigma_{nk}^2 (-2 h_k - \lambda_k),

    :math:`g_k = \partial_m \bar\ell_k`, :math:`h_k = \partial_v \bar\ell_k`.
    """
    s = _signs(y)
    m = K @ alpha
    point = _at(lambda t, v: _dense_marginals(K, t, v)[0], s, lam, alpha + lam * m)
    marg, V = _dense_marginals(K, lam, alpha + lam * m)
    Sigma = K - V.T @ V
    grad_alpha = K @ (point.grad_m - alpha)
    grad_lam = 0.5 * (Sigma**2) @ (-2.0 * point.grad_v - lam)
    return point.elbo, grad_alpha, grad_lam


def gpc_vi(K, y, *, max_iter=200, tol=1e-8):
    r"""The variational Gaussian approximation for GP classification with the logistic likelihood.

    Maximises the evidence lower bound over Gaussians
    :math:`q(\mathbf f) = \mathcal N(\mathbf m, \Sigma)`, in the parametrisation of Opper &
    Archambeau (2009), :math:`\mathbf m = K\boldsymbol\alpha`,
    :math:`\Sigma = (K^{-1} + \Lambda)^{-1}`, by damped natural-gradient steps (the bound
    never decreases).  The expected log-likelihood of each latent value is computed by
    one-dimensional quadrature accurate to about 1e-12 at any variance.  For n >= 500 and
    a smooth kernel, the steps first use a low-rank approximation of K (as
    :func:`~blrlib.gpc_ep` does) and then the exact one, so the optimum returned is that of
    the exact K.

    Book: chapter 12, equations ``eq-vi-gp-elbo`` (the bound) and ``eq-vi-gp-fixed-point``
    (the conditions at its maximum; ``lam`` holds the :math:`\tilde\tau_n`).

    Reference: Opper and Archambeau (2009); Nickisch and Rasmussen (2008).

    Parameters
    ----------
    K : array_like of shape (n, n)
        The prior covariance (kernel matrix) of the latent values; positive diagonal.
    y : array_like of shape (n,), values in {0, 1}
    max_iter : int, default 200
    tol : float, default 1e-8
        Stop when the full natural-gradient step would change no :math:`\lambda_n` or site
        :math:`\tilde\nu_n = \alpha_n + \lambda_n m_n` by more than ``tol`` times the
        larger of 1 and the largest one (then the fixed-point conditions hold to ``tol``).

    Returns
    -------
    GPCVariational

    Warns
    -----
    ConvergenceWarning
        If ``max_iter`` iterations do not meet the stopping rule.

    Examples
    --------
    >>> from blrlib import gpc_ep, rbf_kernel
    >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    >>> K, y = rbf_kernel(X, variance=4.0), np.array([0, 0, 1, 1])
    >>> q = gpc_vi(K, y)
    >>> q.converged, bool(q.mean[0] < 0 < q.mean[-1])
    (True, True)
    >>> round(q.elbo, 4), round(gpc_ep(K, y).log_marginal_likelihood, 4)
    (-2.4119, -2.4023)
    """
    K = as_kernel_matrix(K)
    y = as_labels(y, n=K.shape[0], against="K")
    max_iter = check_int(max_iter, "max_iter")
    tol = check_positive(tol, "tol")
    if np.any(np.diag(K) <= 0):
        i = int(np.argmin(np.diag(K)))
        raise ValueError(
            f"gpc_vi needs positive prior variances on the diagonal of K, got K[{i}, {i}] = {K[i, i]:.3g}"
        )
    point, n_iter, converged = _fit(K, y, max_iter, tol)
    if not converged:
        warnings.warn(
            f"gpc_vi: the bound did not converge in max_iter={max_iter} iterations; increase max_iter",
            ConvergenceWarning,
            stacklevel=2,
        )
    marg = point.marginals
    return GPCVariational(
        mean=marg.mean,
        var=marg.var,
        elbo=point.elbo,
        n_iter=int(n_iter),
        converged=bool(converged),
        alpha=marg.alpha,
        lam=point.tau,
        L=marg.L,
    )
