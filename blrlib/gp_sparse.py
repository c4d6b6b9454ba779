r"""Gaussian-process classification for many points: inducing points and random features.

Book: the chapter on many points (``book/14_many_points``).  Exact GP classification
factorises an n x n matrix, :math:`O(n^3)` time and :math:`O(n^2)` memory.  Two ways
around it live here.

*Random Fourier features* (Rahimi & Recht 2007; chapter 8, equation ``eq-ch8-rff``):
:func:`random_fourier_features` maps the inputs to D features whose inner products
approximate the RBF kernel, so that Bayesian logistic regression on them (Part I) is an
approximate GP classifier costing :math:`O(nD^2)`.

*The sparse variational GP* (Hensman, Matthews & Ghahramani 2015; Titsias 2009):
:func:`gpc_svgp` places m inducing values :math:`\mathbf u = f(Z)` at inputs :math:`Z`,
approximates their posterior by a Gaussian :math:`q(\mathbf u) = \mathcal N(\mathbf m,
S)` and lets :math:`\mathbf f \mid \mathbf u` follow the prior.  The evidence lower bound
(equation ``eq-svgp-elbo``)

.. math:: \mathcal L(q) = \sum_{i=1}^n \mathbb E_{\mathcal N(f_i \mid \mu_i, v_i)}
          [\log \sigma(s_i f_i)] - \operatorname{KL}\big(q(\mathbf u) \,\|\, p(\mathbf u)\big)

needs only the marginals of :math:`q(f_i)`, with :math:`\mu_i = \mathbf a_i^\top
\mathbf m` and :math:`v_i = k_{ii} - \mathbf a_i^\top K_{ZZ} \mathbf a_i + \mathbf
a_i^\top S \mathbf a_i`, :math:`\mathbf a_i = K_{ZZ}^{-1} \mathbf k_Z(\mathbf x_i)`: each
expectation is a one-dimensional Gaussian integral (equation ``eq-svgp-ell``), evaluated
by the trapezoid rule of chapter 6 with a step that shrinks with the standard deviation,
so it stays accurate at any latent variance.  Time :math:`O(nm^2)` per iteration, memory
:math:`O(nm)`; no n x n matrix is ever formed.

Internally the inducing values are *whitened*: :math:`\mathbf u = L_Z \mathbf v` with
:math:`L_Z L_Z^\top = K_{ZZ}` and :math:`\mathbf v \sim \mathcal N(0, I)` a priori, and
:math:`q(\mathbf v) = \mathcal N(\mathbf m_v, S_v)` is optimised by natural-gradient
steps in its natural parameters (equation ``eq-svgp-natgrad``), each halved until the
bound does not decrease.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_solve, solve_triangular
from scipy.special import expit, log_expit

from ._validation import as_labels, as_matrix, as_rng, check_int, check_nonnegative, check_positive
from .gp_predict import GPCPrediction
from .kernels import rbf_kernel
from .logistic import _signs
from .optimize import ConvergenceWarning
from .predictive import expected_sigmoid

__all__ = ["GPCSparse", "gpc_svgp", "gpc_svgp_predict", "random_fourier_features"]

# The trapezoid rule in t = (f - mean) / sd on [-_T, _T].  log sigmoid(f) and its two
# derivatives are analytic in the strip |Im f| < pi (the singularities of log(1 + e^-f)
# sit at f = i pi (2k + 1)), i.e. |Im t| < pi / sd; with the step h = _SH / sd the
# discretisation error is of order exp(-2 pi^2 / _SH) ~ 2e-11 relative, and the Gaussian
# tail beyond |t| = 8.5 is below 1e-16.  Points are grouped by their standard deviation
# into levels a factor sqrt(2) apart, each level with the step of its largest sd, so that
# no point uses more than sqrt(2) times the nodes it needs.
_T = 8.5
_H_MAX = 0.5
_SH = 0.8
_BLOCK_VALUES = 2_000_000  # values per block of (points x nodes) or (inducing x points)
_JITTER = 1e-8  # relative to the signal variance, as in chapter 8
_RHO_MIN = 0.5  # the shortest longest step (rho_max) of the natural-gradient iteration


def _short(v):
    return np.array2string(np.asarray(v), precision=4, separator=", ", threshold=6)


# --------------------------------------------------------------------------------------
# Random Fourier features
# --------------------------------------------------------------------------------------
def random_fourier_features(X, n_features, *, lengthscale=1.0, variance=1.0, seed=0):
    r"""Random Fourier features of the RBF kernel (Rahimi & Recht 2007).

    .. math:: z_j(\mathbf x) = \sigma_f \sqrt{2/D}\, \cos(\boldsymbol\omega_j^\top \mathbf x + b_j),
              \qquad \boldsymbol\omega_j \sim \mathcal N(0, \ell^{-2} I), \quad
              b_j \sim \mathcal U(0, 2\pi),

    so that :math:`\mathbb E[\mathbf z(\mathbf x)^\top \mathbf z(\mathbf x')] =
    k(\mathbf x, \mathbf x')` (:func:`~blrlib.rbf_kernel`), with an error of order
    :math:`D^{-1/2}`.  The frequencies and phases come from ``seed`` alone, so training and
    test inputs mapped with the same ``seed`` (and the same number of columns) share
    their features.

    Book: chapter 8, equation ``eq-ch8-rff``; the chapter on many points, equation
    ``eq-svgp-rff-model``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    n_features : int
        D >= 1, the number of features.
    lengthscale : float, default 1
        :math:`\ell > 0` of the RBF kernel.
    variance : float, default 1
        :math:`\sigma_f^2 \ge 0` of the RBF kernel.
    seed : int or numpy.random.Generator, default 0
        Source of the frequencies and phases.

    Returns
    -------
    ndarray of shape (n, n_features)

    Examples
    --------
    >>> from blrlib import rbf_kernel
    >>> X = np.array([[0.0, 0.0], [0.5, -0.5]])
    >>> Phi = random_fourier_features(X, 20_000, lengthscale=1.0, variance=2.0)
    >>> Phi.shape
    (2, 20000)
    >>> bool(np.allclose(Phi @ Phi.T, rbf_kernel(X, variance=2.0), atol=0.05))
    True
    """
    X = as_matrix(X)
    n_features = check_int(n_features, "n_features", minimum=1)
    lengthscale = check_positive(lengthscale, "lengthscale")
    variance = check_nonnegative(variance, "variance")
    rng = as_rng(seed)
    omega = rng.standard_normal((X.shape[1], n_features)) / lengthscale
    phase = rng.uniform(0.0, 2.0 * np.pi, n_features)
    return np.sqrt(2.0 * variance / n_features) * np.cos(X @ omega + phase)


# --------------------------------------------------------------------------------------
# The expected log-likelihood by one-dimensional quadrature
# --------------------------------------------------------------------------------------
def _nodes(sd_max):
    """Trapezoid nodes t on [-_T, _T] and weights h phi(t), for every sd up to ``sd_max``."""
    h = min(_H_MAX, _SH / max(float(sd_max), 1e-300))
    k = np.ceil(_T / h)
    t = np.arange(-k, k + 1) * h
    return t, h * np.exp(-0.5 * t**2) / np.sqrt(2.0 * np.pi)


def _expected_log_lik(mean, var, s):
    r"""The expected log-likelihood and its derivatives, point by point.

    For :math:`f_i \sim \mathcal N(\mu_i, v_i)` and signs :math:`s_i`, returns
    :math:`E_i = \mathbb E[\log\sigma(s_i f_i)]`, :math:`\partial E_i / \partial\mu_i =
    \mathbb E[s_i \sigma(-s_i f_i)]` and :math:`\partial E_i / \partial v_i = \frac12
    \mathbb E[-\sigma(f_i)\sigma(-f_i)]` (Bonnet's and Price's theorems: the mean and
    variance derivatives of a Gaussian average are the averages of the first and half the
    second derivative).  Book: equations ``eq-svgp-ell`` and ``eq-svgp-ell-grad``.
    """
    sd = np.sqrt(var)
    ell, d_mean, d_var = (np.empty(mean.shape) for _ in range(3))
    # level 0: sd <= _SH / _H_MAX; level k: sd in (c 2^((k-1)/2), c 2^(k/2)]
    c = _SH / _H_MAX
    level = np.where(sd <= c, 0, np.ceil(2.0 * np.log2(np.maximum(sd, c) / c))).astype(int)
    for k in np.unique(level):
        idx = np.flatnonzero(level == k)
        t, w = _nodes(c * 2.0 ** (k / 2.0))
        step = max(1, _BLOCK_VALUES // t.size)
        for start in range(0, idx.size, step):
            rows = idx[start : start + step]
            F = mean[rows, None] + sd[rows, None] * t  # latent values at the nodes
            sF = s[rows, None] * F
            ell[rows] = log_expit(sF) @ w
            p_wrong = expit(-sF)  # sigma(-s f)
            d_mean[rows] = s[rows] * (p_wrong @ w)
            d_var[rows] = -0.5 * ((p_wrong * (1.0 - p_wrong)) @ w)
    return ell, d_mean, d_var


# --------------------------------------------------------------------------------------
# The sparse variational GP
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GPCSparse:
    r"""The sparse variational GP classifier (Hensman, Matthews & Ghahramani 2015).

    Attributes
    ----------
    q_mean : ndarray of shape (m,)
        Mean :math:`\mathbf m` of :math:`q(\mathbf u)`, the inducing values :math:`\mathbf u
        = f(Z)`.
    q_cov : ndarray of shape (m, m)
        Covariance :math:`S` of :math:`q(\mathbf u)`.
    elbo : float
        The evidence lower bound ``eq-svgp-elbo`` at ``q``: a lower bound on
        :math:`\log p(\mathbf y \mid X)`.
    n_iter : int
        Natural-gradient iterations taken.
    converged : bool
        Whether the stopping rule was met within ``max_iter`` iterations.
    history : ndarray
        The bound after each iteration (never decreases).
    Z : ndarray of shape (m, d)
        The inducing inputs.
    variance, lengthscale : float
        The RBF kernel's hyperparameters.
    jitter : float
        What was added to the diagonal of :math:`K_{ZZ}` before its Cholesky factorisation.
    L_Z : ndarray of shape (m, m)
        Lower Cholesky factor of :math:`K_{ZZ} + \text{jitter}\, I`.
    whitened_mean : ndarray of shape (m,)
        :math:`\mathbf m_v = L_Z^{-1}\mathbf m`.
    whitened_cov_factor : ndarray of shape (m, m)
        :math:`R` with :math:`R R^\top = S_v = L_Z^{-1} S L_Z^{-\top}`.
    """

    q_mean: np.ndarray
    q_cov: np.ndarray
    elbo: float
    n_iter: int
    converged: bool
    history: np.ndarray = field(repr=False)
    Z: np.ndarray = field(repr=False)
    variance: float = field(repr=False, default=1.0)
    lengthscale: float = field(repr=False, default=1.0)
    jitter: float = field(repr=False, default=0.0)
    L_Z: np.ndarray = field(repr=False, compare=False, default=None)
    whitened_mean: np.ndarray = field(repr=False, compare=False, default=None)
    whitened_cov_factor: np.ndarray = field(repr=False, compare=False, default=None)

    def __repr__(self):
        return (
            f"GPCSparse(m={self.q_mean.shape[0]}, q_mean={_short(self.q_mean)}, "
            f"elbo={self.elbo:.8g}, n_iter={self.n_iter}, converged={self.converged})"
        )


class _Problem:
    r"""The data-dependent pieces of the bound, computed once: :math:`B = L_Z^{-1} K_{ZX}`.

    ``B`` (m x n) is the only array of size nm; every other pass over the data works in
    column blocks of it.  ``k_resid`` holds :math:`k_{ii} - \|\mathbf b_i\|^2 \ge 0`, the
    prior variance of :math:`f_i` that the inducing values do not explain.
    """

    def __init__(self, X, y, Z, variance, lengthscale):
        self.s = _signs(y)
        m, n = Z.shape[0], X.shape[0]
        self.L_Z, self.jitter = _chol_kzz(Z, variance, lengthscale)
        self.B = np.empty((m, n))
        self.blocks = [slice(a, a + max(1, _BLOCK_VALUES // m)) for a in range(0, n, max(1, _BLOCK_VALUES // m))]
        for b in self.blocks:
            K_zx = rbf_kernel(Z, X[b], variance=variance, lengthscale=lengthscale)
            self.B[:, b] = solve_triangular(self.L_Z, K_zx, lower=True)
        self.k_resid = np.maximum(variance - np.einsum("ij,ij->j", self.B, self.B), 0.0)
        self.m = m

    def evaluate(self, L_prec, m_w):
        r"""The bound at :math:`q(\mathbf v) = \mathcal N(\mathbf m_v, (L L^\top)^{-1})`, and what a step needs.

        ``L_prec`` is the lower Cholesky factor of the whitened precision :math:`\Lambda =
        S_v^{-1}`.  Returns the bound, the latent means and variances, and the
        derivatives of the expected log-likelihood with respect to them.
        """
        mu = self.B.T @ m_w
        var = self.k_resid.copy()
        for b in self.blocks:
            C = solve_triangular(L_prec, self.B[:, b], lower=True)  # R^T b_i, R = L^-T
            var[b] += np.einsum("ij,ij->j", C, C)
        ell, g_mu, g_var = _expected_log_lik(mu, var, self.s)
        elbo = float(np.sum(ell)) - _kl_whitened(L_prec, m_w)
        return elbo, mu, g_mu, g_var

    def target(self, mu, g_mu, g_var):
        r"""The natural parameters a full natural-gradient step goes to (``eq-svgp-natgrad``).

        :math:`\Lambda^* = I - 2 B\, \mathrm{diag}(\mathbf g_v) B^\top` and
        :math:`\boldsymbol\theta^* = B(\mathbf g_\mu - 2\, \mathbf g_v \odot \boldsymbol\mu)`;
        :math:`\mathbf g_v \le 0`, so :math:`\Lambda^* \succeq I`.
        """
        prec = np.eye(self.m)
        for b in self.blocks:
            Bb = self.B[:, b]
            prec -= (2.0 * g_var[b] * Bb) @ Bb.T
        prec = 0.5 * (prec + prec.T)
        theta = self.B @ (g_mu - 2.0 * g_var * mu)
        return theta, prec


def _chol_kzz(Z, variance, lengthscale):
    """Cholesky factor of K_ZZ plus a jitter of 1e-8 sigma_f^2, raised tenfold until it succeeds."""
    K = rbf_kernel(Z, variance=variance, lengthscale=lengthscale)
    scale = max(variance, np.finfo(float).tiny)
    jitter = _JITTER * scale
    for _ in range(8):
        try:
            return np.linalg.cholesky(K + jitter * np.eye(K.shape[0])), jitter
        except np.linalg.LinAlgError:
            jitter *= 10.0
    raise np.linalg.LinAlgError(
        f"K_ZZ + jitter I is not positive definite even with jitter {jitter / 10:g}; "
        f"are some inducing inputs duplicated?"
    )


def _kl_whitened(L_prec, m_w):
    r""":math:`\mathrm{KL}(\mathcal N(\mathbf m_v, S_v) \| \mathcal N(0, I))` with :math:`S_v^{-1} = L L^\top`.

    :math:`\frac12(\operatorname{tr} S_v + \mathbf m_v^\top \mathbf m_v - m - \log|S_v|)`,
    equal to :math:`\mathrm{KL}(q(\mathbf u) \| p(\mathbf u))` (equation ``eq-svgp-kl``).
    """
    m = m_w.shape[0]
    L_inv = solve_triangular(L_prec, np.eye(m), lower=True)
    trace = float(np.sum(L_inv**2))
    log_det_s = -2.0 * float(np.sum(np.log(np.diag(L_prec))))
    return 0.5 * (trace + float(m_w @ m_w) - m - log_det_s)


def _elbo_gradients(problem, m_w, S_w):
    r"""The bound and its Euclidean gradients with respect to :math:`\mathbf m_v` and :math:`S_v`.

    .. math:: \nabla_{\mathbf m_v}\mathcal L = B\mathbf g_\mu - \mathbf m_v, \qquad
              \nabla_{S_v}\mathcal L = B\,\mathrm{diag}(\mathbf g_v) B^\top
              - \tfrac12 I + \tfrac12 S_v^{-1}

    (equation ``eq-svgp-grad``).  Used by the tests and the chapter; the optimiser uses
    the natural-gradient form of the same quantities.
    """
    S_inv = cho_solve((np.linalg.cholesky(S_w), True), np.eye(m_w.size))  # the precision itself
    elbo, _, g_mu, g_var = problem.evaluate(np.linalg.cholesky(0.5 * (S_inv + S_inv.T)), m_w)
    grad_m = problem.B @ g_mu - m_w
    grad_S = (problem.B * g_var) @ problem.B.T - 0.5 * np.eye(m_w.size) + 0.5 * S_inv
    return elbo, grad_m, 0.5 * (grad_S + grad_S.T)


def gpc_svgp(X, y, Z, *, variance=1.0, lengthscale=1.0, max_iter=200, tol=1e-8):
    r"""The sparse variational Gaussian-process classifier with fixed inducing inputs.

    Maximises the evidence lower bound (Hensman, Matthews & Ghahramani 2015)

    .. math:: \mathcal L = \sum_i \mathbb E_{q(f_i)}[\log\sigma(s_i f_i)]
              - \mathrm{KL}\big(q(\mathbf u)\,\|\,\mathcal N(0, K_{ZZ})\big)

    over the Gaussian :math:`q(\mathbf u) = \mathcal N(\mathbf m, S)` of the inducing
    values at ``Z``, for the RBF kernel with fixed hyperparameters and the logistic
    likelihood.  Each :math:`\mathbb E_{q(f_i)}` is a one-dimensional Gaussian integral,
    computed by a trapezoid rule whose step shrinks like :math:`1/\sqrt{v_i}`, so the bound
    is accurate to about 1e-10 per point (relative to its size) at any latent variance.  In the whitened
    coordinates :math:`\mathbf v = L_Z^{-1}\mathbf u` each iteration moves the natural
    parameters :math:`(\boldsymbol\theta, \Lambda) = (S_v^{-1}\mathbf m_v, S_v^{-1})`
    a fraction :math:`\rho` of the way to

    .. math:: \Lambda^* = I - 2B\,\mathrm{diag}(\mathbf g_v)B^\top, \qquad
              \boldsymbol\theta^* = B(\mathbf g_\mu - 2\,\mathbf g_v\odot\boldsymbol\mu),
              \qquad B = L_Z^{-1}K_{ZX},

    (a natural-gradient step of length :math:`\rho`; :math:`\mathbf g_\mu, \mathbf g_v` are
    the derivatives of the expected log-likelihood with respect to the latent means and
    variances); :math:`\rho = 1` is tried first and halved until the bound does not
    decrease, so the bound never decreases.  Time :math:`O(nm^2)` per iteration, memory
    :math:`O(nm)`: no n x n matrix is formed.  With ``Z = X`` the bound is that of the
    full Gaussian (variational) approximation of the latent posterior.

    Book: the chapter on many points, equations ``eq-svgp-elbo``, ``eq-svgp-ell`` and
    ``eq-svgp-natgrad``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    Z : array_like of shape (m, d)
        The inducing inputs, held fixed (for example k-means centres of ``X``).
    variance, lengthscale : float, default 1
        :math:`\sigma_f^2 > 0` and :math:`\ell > 0` of the RBF kernel.
    max_iter : int, default 200
    tol : float, default 1e-8
        Converged when a full step would change the bound by at most ``tol * (1 + |L|)``
        and the natural parameters by at most ``sqrt(tol)`` relative to their size.

    Returns
    -------
    GPCSparse

    Warns
    -----
    ConvergenceWarning
        If ``max_iter`` iterations do not meet the stopping rule.

    Examples
    --------
    >>> from blrlib import datasets
    >>> X, y = datasets.two_moons(200, noise=0.3, seed=0)
    >>> fit = gpc_svgp(X, y, X[:20], variance=4.0, lengthscale=0.7)
    >>> fit.converged, fit.q_mean.shape, fit.q_cov.shape
    (True, (20,), (20, 20))
    >>> bool(np.all(np.diff(fit.history) >= 0))
    True
    """
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    Z = as_matrix(Z, "Z")
    if Z.shape[1] != X.shape[1]:
        raise ValueError(
            f"Z must have the same number of columns as X ({X.shape[1]}), got shape {Z.shape}"
        )
    variance = check_positive(variance, "variance")
    lengthscale = check_positive(lengthscale, "lengthscale")
    max_iter = check_int(max_iter, "max_iter")
    tol = check_positive(tol, "tol")

    problem = _Problem(X, y, Z, variance, lengthscale)
    m = Z.shape[0]
    theta, prec = np.zeros(m), np.eye(m)  # start at the prior q(v) = N(0, I)
    L_prec = np.eye(m)
    m_w = np.zeros(m)
    elbo, mu, g_mu, g_var = problem.evaluate(L_prec, m_w)
    history = [elbo]
    # rho_max: the longest step tried.  The fixed point can oscillate (successive steps in
    # opposite directions); a shorter step then converges faster, so rho_max shrinks, and
    # grows back while successive steps agree.
    rho_max = 1.0
    rho, n_iter, converged, last_step = rho_max, 0, False, None
    while True:
        theta_t, prec_t = problem.target(mu, g_mu, g_var)
        change = max(
            float(np.max(np.abs(theta_t - theta))) / (1.0 + float(np.max(np.abs(theta)))),
            float(np.max(np.abs(prec_t - prec))) / (1.0 + float(np.max(np.abs(prec)))),
        )
        if n_iter >= max_iter:
            break
        slack = 1e-12 * (1.0 + abs(elbo))
        for _ in range(40):  # halve rho until the bound does not decrease
            prec_new = (1.0 - rho) * prec + rho * prec_t
            theta_new = (1.0 - rho) * theta + rho * theta_t
            L_new = np.linalg.cholesky(prec_new)
            m_new = cho_solve((L_new, True), theta_new)
            trial = problem.evaluate(L_new, m_new)
            if trial[0] >= elbo - slack:
                break
            rho *= 0.5
        else:  # no step raises the bound: q is the maximum to round-off
            converged = change <= np.sqrt(tol)
            break
        gain = trial[0] - elbo
        theta_old, prec_old = theta, prec
        theta, prec, L_prec, m_w = theta_new, prec_new, L_new, m_new
        elbo, mu, g_mu, g_var = trial
        history.append(elbo)
        n_iter += 1
        if rho == rho_max and gain <= tol * (1.0 + abs(elbo)) and change <= np.sqrt(tol):
            converged = True
            break
        step = np.concatenate([theta_t - theta_old, (prec_t - prec_old).ravel()])
        if last_step is not None:
            cosine = float(step @ last_step) / (np.linalg.norm(step) * np.linalg.norm(last_step) + 1e-300)
            if cosine < 0.0:
                rho_max = max(_RHO_MIN, 0.8 * rho_max)
            elif cosine > 0.5:
                rho_max = min(1.0, rho_max / 0.8)
        last_step = step
        rho = min(rho_max, 2.0 * rho)
    if not converged:
        warnings.warn(
            f"gpc_svgp: the natural-gradient iteration did not converge in max_iter={max_iter} "
            f"iterations; increase max_iter",
            ConvergenceWarning,
            stacklevel=2,
        )
    R = solve_triangular(L_prec, np.eye(m), lower=True).T  # R R^T = Lambda^-1 = S_v
    L_Z = problem.L_Z
    LR = L_Z @ R
    return GPCSparse(
        q_mean=L_Z @ m_w,
        q_cov=LR @ LR.T,
        elbo=float(elbo),
        n_iter=int(n_iter),
        converged=bool(converged),
        history=np.asarray(history),
        Z=Z.copy(),
        variance=variance,
        lengthscale=lengthscale,
        jitter=problem.jitter,
        L_Z=L_Z,
        whitened_mean=m_w,
        whitened_cov_factor=R,
    )


def gpc_svgp_predict(fit, X_new):
    r"""Predictions of the sparse variational GP classifier at new inputs.

    The latent value at :math:`\mathbf x_*` is Gaussian under :math:`q`, with

    .. math:: \mu_* = \mathbf b_*^\top \mathbf m_v, \qquad
              \sigma_*^2 = k(\mathbf x_*, \mathbf x_*) - \|\mathbf b_*\|^2
              + \|R^\top \mathbf b_*\|^2, \qquad \mathbf b_* = L_Z^{-1}\mathbf k_Z(\mathbf x_*),

    (equation ``eq-svgp-predict``), and :math:`p(y_* = 1) = \mathbb E[\sigma(f_*)]` is
    computed from these moments by quadrature (:func:`~blrlib.expected_sigmoid`).

    Parameters
    ----------
    fit : GPCSparse
        From :func:`gpc_svgp`.
    X_new : array_like of shape (k, d)

    Returns
    -------
    GPCPrediction
        ``prob``, ``mean`` and ``var`` of the latent, ``method="quadrature"``.

    Examples
    --------
    >>> from blrlib import datasets
    >>> X, y = datasets.two_moons(200, noise=0.3, seed=0)
    >>> fit = gpc_svgp(X, y, X[:20], variance=4.0, lengthscale=0.7)
    >>> pred = gpc_svgp_predict(fit, np.array([[0.0, 1.0], [1.0, -0.5], [30.0, 30.0]]))
    >>> pred.prob.round(2)
    array([0.15, 0.93, 0.5 ])
    >>> float(pred.var[-1])  # far from the data the prior variance returns
    4.0
    """
    if not isinstance(fit, GPCSparse):
        raise TypeError(f"fit must be a GPCSparse (from gpc_svgp), got {type(fit).__name__}")
    X_new = as_matrix(X_new, "X_new")
    if X_new.shape[1] != fit.Z.shape[1]:
        raise ValueError(
            f"X_new has {X_new.shape[1]} columns but the classifier was fitted on {fit.Z.shape[1]}"
        )
    mean, var = np.empty(X_new.shape[0]), np.empty(X_new.shape[0])
    m = fit.Z.shape[0]
    step = max(1, _BLOCK_VALUES // m)
    for a in range(0, X_new.shape[0], step):
        rows = slice(a, a + step)
        K_zs = rbf_kernel(fit.Z, X_new[rows], variance=fit.variance, lengthscale=fit.lengthscale)
        B = solve_triangular(fit.L_Z, K_zs, lower=True)
        C = fit.whitened_cov_factor.T @ B
        mean[rows] = B.T @ fit.whitened_mean
        var[rows] = np.maximum(fit.variance - np.einsum("ij,ij->j", B, B), 0.0) + np.einsum("ij,ij->j", C, C)
    prob = np.atleast_1d(expected_sigmoid(mean, var, method="quadrature"))
    return GPCPrediction(prob=prob, mean=mean, var=var, method="quadrature")
