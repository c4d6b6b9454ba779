r"""Gaussian-process classification by expectation propagation: Rasmussen & Williams Alg. 3.5.

Book: chapter 11.  Expectation propagation (EP; Minka 2001) approximates each likelihood
term :math:`\sigma(s_n f_n)` by an unnormalised Gaussian *site*
:math:`\tilde Z_n \mathcal N(f_n \mid \tilde\nu_n / \tilde\tau_n, 1 / \tilde\tau_n)`, so the
approximate posterior is :math:`q(\mathbf f) = \mathcal N(\boldsymbol\mu, \Sigma)` with
:math:`\Sigma = (K^{-1} + \tilde S)^{-1}`, :math:`\tilde S = \operatorname{diag}(\tilde\tau)`
and :math:`\boldsymbol\mu = \Sigma \tilde{\boldsymbol\nu}`.  A site is updated by removing
it from the marginal :math:`q(f_n) = \mathcal N(\mu_n, \Sigma_{nn})`, which leaves the
*cavity* :math:`\mathcal N(f_n \mid \nu_{-n} / \tau_{-n}, 1/\tau_{-n})` with

.. math:: \tau_{-n} = \Sigma_{nn}^{-1} - \tilde\tau_n, \qquad
          \nu_{-n} = \Sigma_{nn}^{-1} \mu_n - \tilde\nu_n,

multiplying in the true likelihood term (the *tilted* distribution
:math:`\hat p(f_n) \propto \sigma(s_n f_n)\, \mathcal N(f_n \mid \nu_{-n}/\tau_{-n}, 1/\tau_{-n})`)
and choosing the site so that :math:`q(f_n)` gets the tilted mean and variance.  Where
Laplace's method matches the mode and the curvature of the posterior, EP matches its
marginal means and variances.

The logistic likelihood has no closed-form tilted moments (the probit one of GPML has);
they are computed by quadrature (:func:`_tilted_sites`: adaptive Gauss-Hermite for cavities
of standard deviation up to 2.5; for wider ones near the sigmoid's step, the step in
closed form plus a fixed rule for the remainder; a composite Gauss-Legendre rule for the
other wide ones).  Two
schedules reach the same fixed point (the tests check it):

* :func:`_ep_sequential` is Algorithm 3.5 as printed: one site at a time, each update a
  rank-one change of :math:`\Sigma`; :math:`O(n^2)` per site, :math:`O(n^3)` per sweep in
  level-2 BLAS, the readable reference.
* :func:`_ep_parallel` updates all sites at once from the current marginals, with
  Anderson acceleration (and damping where the extrapolation fails).  For n >= 500 it
  first iterates with
  :math:`K \approx V V^\top + D` (:mod:`blrlib._gp_lowrank`), :math:`O(n r^2)` per sweep,
  and then with the exact :math:`K`, so that the fixed point returned is that of the
  exact algorithm.

The log marginal likelihood is GPML equations (3.65), (3.73) and (3.74), computed with
the Cholesky factor of :math:`B = I + \tilde S^{1/2} K \tilde S^{1/2}`, never with
:math:`K^{-1}` or :math:`1/\tilde\tau`; prediction (Alg. 3.6) is in :mod:`blrlib.gp_predict`.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import erfcx, expit, log_expit, ndtr

from ._anderson import Anderson
from ._gp_linalg import cho_solve_B, cholesky_B, log_det_B, symv
from ._gp_lowrank import LowRankEPPosterior, pivoted_cholesky
from ._validation import as_kernel_matrix, as_labels, check_int, check_positive
from .logistic import _signs
from .optimize import ConvergenceWarning
from .predictive import _row_blocks

__all__ = ["GPCEP", "gpc_ep"]

_SCHEDULES = ("parallel", "sequential")
# The low-rank phase of the parallel schedule, for n >= _LOWRANK_MIN_N: a pivoted Cholesky
# factor of rank at most n / _LOWRANK_DIVISOR, stopped when the residual diagonal falls
# below _LOWRANK_RTOL times the largest diagonal of K, is used when its residual is below
# _LOWRANK_USE times it (then the fixed point of the low-rank K is close enough to the
# exact one that a few exact sweeps finish: 1 at 1e-8, about 5 at 1e-5 on two moons).
_LOWRANK_MIN_N = 500
_LOWRANK_DIVISOR = 4
_LOWRANK_RTOL = 1e-13
_LOWRANK_USE = 1e-4
# The tilted moments' quadrature (_tilted_nodes): half-width, in cavity standard deviations,
# of the interval around each tilted mode; equal panels across it; cut points towards the
# sigmoid's singularities (0 and +-2^k, 0.5 to 32); Gauss-Legendre nodes per panel.
_T_TILTED = 9.5
_N_UNIFORM = 8
_CUTS = np.concatenate([[0.0], 2.0 ** np.arange(-1, 6), -(2.0 ** np.arange(-1, 6))])
_GL_NODES = 8
_GL_X, _GL_W = np.polynomial.legendre.leggauss(_GL_NODES)
_GL_LOG_W = np.log(_GL_W)
_N_TILTED_NODES = (_N_UNIFORM + _CUTS.size) * _GL_NODES
# Narrow cavities: adaptive Gauss-Hermite about the tilted mode (_hermite_nodes), with
# the number of nodes by the cavity's standard deviation: (largest sd, nodes) per tier,
# each tier's error measured (docstring of _tilted_sites); wider cavities take the
# composite rule of _tilted_nodes
_HERMITE_TIERS = ((1.0, 32), (1.5, 48), (2.0, 80), (2.5, 120))


def _hermite_rule(size):
    x, w = np.polynomial.hermite.hermgauss(size)
    return x, np.log(w) + x**2


_HERMITE_RULES = {size: _hermite_rule(size) for _, size in _HERMITE_TIERS}
# Wide cavities near the sigmoid's step (_split_sums): in the label's direction x = s f,
# cavity N(mu, v) with standard deviation above 2.5 and -3 sd <= mu <= v / 2; one fixed rule
# in x, Gauss-Legendre panels on [0, 64] mirrored to [-64, 0], finer towards the poles of
# the sigmoid at +-i pi, coarser where the integrands fall like exp(-|x| / 2)
_SPLIT_EDGES = np.array([0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0, 32.0,
                         40.0, 48.0, 56.0, 64.0])
_SPLIT_SD = _HERMITE_TIERS[-1][0]
_SPLIT_BELOW = 3.0  # mu >= -3 sd
_SPLIT_ABOVE = 0.5  # mu <= v / 2


def _split_rule():
    r"""The fixed nodes :math:`x_k` of :func:`_split_sums` and the weights times
    :math:`(r, \sigma', \sigma'')` at them, shape (K, 3), K = 240."""
    a, b = _SPLIT_EDGES[:-1], _SPLIT_EDGES[1:]
    centre, half = 0.5 * (a + b), 0.5 * (b - a)
    x = (centre[:, None] + half[:, None] * _GL_X[None, :]).ravel()
    w = (half[:, None] * _GL_W[None, :]).ravel()
    x, w = np.concatenate([-x[::-1], x]), np.concatenate([w[::-1], w])
    t = np.exp(-np.abs(x))
    small = t / (1.0 + t)  # sigma(-|x|)
    d1 = small * (1.0 - small)  # sigma'(x), even
    d2 = -np.sign(x) * d1 * (1.0 - 2.0 * small)  # sigma''(x) = sigma'(x) (1 - 2 sigma(x))
    r = -np.sign(x) * small  # sigma(x) - step(x), odd
    return x, w[:, None] * np.stack([r, d1, d2], axis=1)


_SPLIT_X, _SPLIT_W = _split_rule()
_SPLIT_POWERS = np.stack([_SPLIT_X, _SPLIT_X * _SPLIT_X])
# Newton steps for the tilted modes (at most; 4 to 8 are taken)
_MODE_MAX_STEPS = 100
# the smallest damping of the parallel updates (see _parallel_sweeps)
_MIN_DAMPING = 1.0 / 64
# Anderson acceleration of the parallel sweeps: sweeps remembered, and the growth of the
# change of the sites (over the smallest so far) at which it is given up for damping
_ACCELERATE = True
_MEMORY = 5
_GIVE_UP = 10.0
# restarts of the extrapolation after it left the domain (a negative site precision)
_MAX_RESTARTS = 3


def _short(v):
    return np.array2string(np.asarray(v), precision=4, separator=", ", threshold=6)


@dataclass(frozen=True)
class GPCEP:
    r"""The EP approximation of a GP classifier's posterior at a fixed kernel (GPML Alg. 3.5).

    Attributes
    ----------
    tau_tilde, nu_tilde : ndarray of shape (n,)
        The site parameters :math:`\tilde\tau_n \ge 0` (precisions) and :math:`\tilde\nu_n`.
    log_marginal_likelihood : float
        The EP estimate :math:`\log Z_\text{EP}` of :math:`\log p(\mathbf y \mid X)`.
    n_sweeps : int
        Sweeps over all sites, the last one being the sweep whose changes fell below ``tol``.
    converged : bool
        Whether the stopping rule was met within ``max_sweeps`` sweeps.
    mean, var : ndarray of shape (n,)
        The marginal means :math:`\mu_n` and variances :math:`\Sigma_{nn}` of
        :math:`q(\mathbf f)` at the training inputs.
    alpha : ndarray of shape (n,)
        :math:`\tilde{\boldsymbol\nu} - \tilde S^{1/2} B^{-1} \tilde S^{1/2} K \tilde{\boldsymbol\nu}`,
        so that :math:`\boldsymbol\mu = K \boldsymbol\alpha` and the predictive mean is
        :math:`\mathbf k_*^\top \boldsymbol\alpha` (Alg. 3.6, lines 5 and 6).
    L : ndarray of shape (n, n)
        Lower Cholesky factor of :math:`B = I + \tilde S^{1/2} K \tilde S^{1/2}`.
    """

    tau_tilde: np.ndarray
    nu_tilde: np.ndarray
    log_marginal_likelihood: float
    n_sweeps: int
    converged: bool
    mean: np.ndarray = field(repr=False)
    var: np.ndarray = field(repr=False)
    alpha: np.ndarray = field(repr=False)
    L: np.ndarray = field(repr=False, compare=False)

    def __repr__(self):
        return (
            f"GPCEP(n={self.tau_tilde.shape[0]}, mean={_short(self.mean)}, "
            f"log_marginal_likelihood={self.log_marginal_likelihood:.8g}, "
            f"n_sweeps={self.n_sweeps}, converged={self.converged})"
        )


@dataclass(frozen=True)
class _Tilted:
    """For each site: log Z_hat (the tilted normaliser) and the site that matches the tilted moments."""

    log_Z: np.ndarray
    tau: np.ndarray
    nu: np.ndarray


@dataclass(frozen=True)
class _Marginals:
    """The marginals of q(f) = N(mean, Sigma) and the pieces of the marginal likelihood and prediction."""

    mean: np.ndarray
    var: np.ndarray
    half_log_det_B: float
    L: np.ndarray | None = None  # None for the low-rank marginals
    alpha: np.ndarray | None = None


def _tilted_mode(m, v, s):
    r"""The mode of each tilted density :math:`\sigma(s f)\, \mathcal N(f \mid m, v)`, by safeguarded Newton.

    :math:`\psi(f) = \log\sigma(s f) - (f - m)^2 / 2v` is strictly concave with
    :math:`\psi'(f) = s\,\sigma(-s f) - (f - m)/v`, positive times :math:`s` at :math:`m`
    and negative times :math:`s` at :math:`m + s v`: the mode lies between them, and
    :math:`\psi''(f) = -\sigma(f)\sigma(-f) - 1/v`.  Newton steps start from the one
    step from :math:`m` (inside the bracket) and shrink the bracket; a step that would
    leave it, or that is not half as long as the step before, is replaced by the
    bracket's midpoint, so the iteration cannot cycle or diverge.  It stops when
    every step is below :math:`10^{-12} (\sqrt v + |m|) + 10^{-14} v` (quadratic convergence:
    3 to 5 steps in the hyperparameter searches of ``bench/bench_ep.py``, at most 27 over
    random cavities with variances :math:`10^{-5}` to :math:`10^6`; the 60 halvings of a
    plain bisection took a sixth of a sweep at n = 150).  The mode only centres the
    quadrature of :func:`_tilted_nodes`, whose error does not depend on where in a
    fraction of :math:`\sqrt v` the centre lies.
    """
    lo, hi = np.minimum(m, m + s * v), np.maximum(m, m + s * v)
    small = 1e-12 * (np.sqrt(v) + np.abs(m)) + 1e-14 * v
    q = expit(-s * m)
    f = m + s * v * q / (1.0 + v * q * (1.0 - q))
    last = hi - lo
    for _ in range(_MODE_MAX_STEPS):
        q = expit(-s * f)
        slope = s * q - (f - m) / v  # psi'(f)
        lo, hi = np.where(slope > 0, f, lo), np.where(slope < 0, f, hi)
        step = slope / (q * (1.0 - q) + 1.0 / v)
        # bisect where Newton leaves the bracket or does not halve the step before
        # (Newton can cycle across the sigmoid's inflection)
        slow = (np.abs(step) > small) & (
            (f + step <= lo) | (f + step >= hi) | (np.abs(step) > 0.5 * last))
        new = np.where(slow, 0.5 * (lo + hi), f + step)
        last = np.abs(new - f)
        f = new
        if np.all(last <= small):
            break
    return f


def _tilted_nodes(f0, sd):
    r"""Composite Gauss-Legendre nodes for the tilted densities: offsets from the modes, log weights.

    Each tilted density :math:`\sigma(s f)\, \mathcal N(f \mid m, v)` is log-concave with
    curvature at least :math:`1/v`, so beyond :math:`9.5` cavity standard deviations from its
    mode :math:`f_0` it has fallen by :math:`e^{-9.5^2/2} \approx 2 \cdot 10^{-20}`: the rule
    covers :math:`[f_0 - 9.5\sqrt v, f_0 + 9.5\sqrt v]`.  Two scales shape the integrand
    there: the Gaussian's :math:`\sqrt v`, resolved by eight equal panels (each at most
    :math:`2.4\sqrt v` wide), and the sigmoid's, whose :math:`\log` has its singularities at
    :math:`f = \pm i\pi, \pm 3i\pi, \dots`, all on the imaginary axis through :math:`f = 0`.
    The panels are cut further at :math:`0` and at :math:`\pm 2^k`, :math:`k = -1, \dots, 5`
    (geometric refinement towards the singularities, 0.5 to 32; beyond 32 the sigmoid
    differs from 0 or 1 by less than :math:`e^{-32}`) where these fall inside the
    interval: a panel :math:`[a, 2a]` has the nearest singularity at least three
    half-widths from its centre (Bernstein ellipse :math:`\rho \ge 3 + \sqrt 8`), so eight
    Gauss-Legendre nodes per panel leave errors near :math:`\rho^{-16} \approx 10^{-12}`,
    whatever :math:`v` is.  Cut points outside the interval are clipped to its ends, where
    they make empty panels (zero weights), so every site has the same number of nodes,
    :math:`(8 + 15) \times 8 = 184`, and the work does not grow with :math:`v`: the
    trapezoid rule this replaces needed :math:`\approx 32\sqrt v` nodes (10,000 at
    :math:`v = 10^5`).  Measured against adaptive quadrature over cavity variances
    :math:`10^{-4}` to :math:`10^4` and means up to :math:`\pm 50`, the tilted
    normaliser, mean and variance agree to better than :math:`10^{-9}` relative
    (``tests/test_gp_ep.py``).

    Returns ``u`` (offsets :math:`f - f_0`, shape (n, K)) and ``log_w`` (log of the
    Gauss-Legendre weights, :math:`-\infty` for empty panels).
    """
    half = _T_TILTED * sd
    uniform = np.linspace(-1.0, 1.0, _N_UNIFORM + 1)[None, :] * half[:, None]
    cuts = np.clip(_CUTS[None, :] - f0[:, None], -half[:, None], half[:, None])
    edges = np.sort(np.concatenate([uniform, cuts], axis=1), axis=1)
    a, b = edges[:, :-1], edges[:, 1:]
    centre, width = 0.5 * (a + b), 0.5 * (b - a)
    u = (centre[:, :, None] + width[:, :, None] * _GL_X[None, None, :]).reshape(sd.size, -1)
    with np.errstate(divide="ignore"):
        log_w = (np.log(width)[:, :, None] + _GL_LOG_W[None, None, :]).reshape(sd.size, -1)
    return u, log_w


def _hermite_nodes(f0, sd, x, log_w):
    r"""Adaptive Gauss-Hermite nodes for narrow cavities: offsets from the modes, log weights.

    The tilted density :math:`\sigma(s f)\, \mathcal N(f \mid m, v)` is
    :math:`e^{\psi(f)}` with :math:`\psi` concave, of curvature
    :math:`c = \sigma(f_0)\sigma(-f_0) + 1/v` at the mode :math:`f_0`.  With
    :math:`f = f_0 + \sqrt{2/c}\, x`, :math:`\int e^{\psi} df = \sqrt{2/c} \int e^{-x^2}
    \big(e^{\psi(f) + x^2}\big) dx`, and the factor in brackets is smooth, analytic in a
    strip of half-width about :math:`\pi \sqrt{c/2}` (the sigmoid's poles at
    :math:`\pm i\pi`), wide when :math:`v` is small: Gauss-Hermite on it converges fast
    (errors in ``tests/test_gp_ep.py`` and in the docstring of :func:`_tilted_sites`).
    Returns the offsets :math:`f - f_0` and the log weights :math:`\log(\sqrt{2/c}\, w_k) +
    x_k^2`, the rule for :math:`\int \cdot\, df` that :func:`_tilted_sums` expects.
    """
    q = expit(-np.abs(f0))
    scale = np.sqrt(2.0 / (q * (1.0 - q) + 1.0 / sd**2))
    return scale[:, None] * x[None, :], np.log(scale)[:, None] + log_w[None, :]


def _tilted_sums(f0, m, v, s, u, log_w):
    """log Z, g, h and the tilted variance of each row from the rule (u, log_w) about its mode."""
    # sigma(-s f) is the small one of sigma(-s f), sigma(s f) at the mode when s f0 >= 0;
    # there both are expit(-|f0|), the centre of the variance below
    use_q, centre = s * f0 >= 0.0, expit(-np.abs(f0))
    x = s[:, None] * (f0[:, None] + u)  # s f at the nodes
    # one exp for sigma(x) and sigma(-x): with t = exp(-|x|), the larger of sigma(+-x)
    # is 1 / (1 + t), the smaller t / (1 + t), each accurate near 0; and
    # sigma(x) = exp(min(x, 0)) / (1 + t), whose first factor joins the log weights
    t = np.exp(-np.abs(x))
    large = 1.0 / (1.0 + t)
    small = t * large
    d = (f0 - m)[:, None] + u  # f - m, without cancellation when m is large
    lw = log_w + np.minimum(x, 0.0) - (0.5 / v[:, None]) * (d * d)
    top = lw.max(axis=1, keepdims=True)
    e = np.exp(lw - top) * large  # the tilted density on the nodes, over exp(top)
    total = e.sum(axis=1)
    log_Z = top[:, 0] + np.log(total) - 0.5 * np.log(2.0 * np.pi * v)

    def mean(a):
        return np.einsum("ij,ij->i", e, a) / total

    # Var[sigma(-s f)] = Var[sigma(s f)], computed from the one that is small at the
    # mode (exact near 0, where 1 - q would have rounded to 1), centred at the mode
    pick = np.where((x >= 0.0) == use_q[:, None], small, large) - centre[:, None]
    mean_pick = mean(pick)
    var_q = mean(pick * pick) - mean_pick**2
    mean_pick += centre
    mean_q = np.where(use_q, mean_pick, 1.0 - mean_pick)  # E[sigma(-s f)]
    g = s * mean_q
    h = var_q - mean(small * large)  # sigma(f) sigma(-f) = t / (1 + t)^2
    mean_u = mean(u)
    return log_Z, g, h, mean(u * u) - mean_u**2


def _split_sums(m, v, s):
    r"""log Z, g and h for wide cavities near the step: the sigmoid as a step plus a remainder.

    In :math:`x = s f` the cavity is :math:`\mathcal N(\mu, v)`, :math:`\mu = s m`, and
    :math:`\sigma(x) = \mathbb 1[x > 0] + r(x)`, with :math:`r(x) = \sigma(x) - \mathbb
    1[x > 0]` odd, :math:`|r(x)| = \sigma(-|x|) < e^{-|x|}`.  So

    .. math:: Z = \Phi(\mu / \sqrt v) + \int r\, \mathcal N, \qquad
              Z' = \int \sigma'\, \mathcal N, \qquad Z'' = \int \sigma''\, \mathcal N

    (derivatives in :math:`\mu`; integrating by parts moves them from the Gaussian onto
    :math:`\sigma`), and :math:`g = s Z'/Z`, :math:`h = Z''/Z - (Z'/Z)^2`.  The step is in
    closed form; :math:`r`, :math:`\sigma'` and :math:`\sigma''` fall like :math:`e^{-|x|}`
    and are the same for every site, so one fixed rule in :math:`x` serves all
    (``_SPLIT_X``, 240 nodes on :math:`[-64, 64]`, split at the jump of :math:`r` at 0): per
    site only :math:`\mathcal N(x_k)/\mathcal N(0) = \exp(\mu x_k / v - x_k^2 / 2v)` is
    evaluated, one exponential per node, and the three sums are one matrix product.  The
    rule is used for standard deviations above 2.5 (the Gaussian factor varies slowly on
    the panels) and :math:`-3\sqrt v \le \mu \le v/2`: then the integrands fall at least
    like :math:`e^{-|x|/2}` on either side of 0 (the cavity times :math:`e^{\mp x}` is a
    Gaussian centred at :math:`\mu \mp v`, on the far side of 0), so the truncation at
    :math:`\pm 64` costs below :math:`e^{-32}` relative, and the tilted variance is not
    much below :math:`v`, so :math:`v + v^2 h` does not cancel.  Other wide cavities (far
    on the wrong side, where the tilted mass sits where the cavity meets :math:`e^{x}`, or
    far on the right side) keep the composite rule of :func:`_tilted_nodes`.  Errors
    against adaptive quadrature in ``tests/test_gp_ep.py``.  For :math:`\mu < 0` everything
    is scaled by :math:`\mathcal N(0 \mid \mu, v)` (the step as
    :math:`\sqrt{v \pi / 2}\, \operatorname{erfcx}(-\mu / \sqrt{2v})`), so tiny
    :math:`Z` do not underflow.
    """
    mu = s * m
    sd = np.sqrt(v)
    # mu x / v - x^2 / 2v at every node, as one product, and its exponential in place
    scaled = np.stack([mu / v, -0.5 / v], axis=1) @ _SPLIT_POWERS
    sums = np.exp(scaled, out=scaled) @ _SPLIT_W  # the integrals of r, sigma', sigma'' over N(0)
    log_N0 = -0.5 * mu * mu / v - 0.5 * np.log(2.0 * np.pi * v)
    negative = mu < 0.0
    # mu < 0: Z / N(0) with the step as a scaled erfc; mu >= 0: Z directly (Z >= 1/4)
    N0 = np.where(negative, 1.0, np.exp(log_N0))
    step = np.where(negative, sd * np.sqrt(0.5 * np.pi) * erfcx(-np.minimum(mu, 0.0) / (sd * np.sqrt(2.0))),
                    ndtr(mu / sd))
    Z = step + N0 * sums[:, 0]
    log_Z = np.log(Z) + np.where(negative, log_N0, 0.0)
    g1 = N0 * sums[:, 1] / Z
    h = N0 * sums[:, 2] / Z - g1 * g1
    return log_Z, s * g1, h, v + v * v * h


def _tilted_sites(cavity_tau, cavity_nu, s):
    r"""Lines 6-7 of Alg. 3.5 for every site: tilted moments by quadrature, and the matching sites.

    With the cavity :math:`\mathcal N(m, v)` and :math:`Z(m) = \int \sigma(s f)\, \mathcal N(f \mid m, v)\, df`,
    the tilted mean and variance are :math:`\hat\mu = m + v g` and
    :math:`\hat\sigma^2 = v + v^2 h` with :math:`g = \partial_m \log Z` and
    :math:`h = \partial^2_m \log Z`, expectations under the tilted distribution:
    :math:`g = s\, E[\sigma(-s f)]` and :math:`h = \operatorname{Var}[\sigma(-s f)] - E[\sigma(f)\sigma(-f)]`.
    The matching site is

    .. math:: \tilde\tau = \hat\sigma^{-2} - v^{-1} = \frac{-h}{1 + v h}, \qquad
              \tilde\nu = \hat\sigma^{-2} \hat\mu - m / v = \tilde\tau \hat\mu + g,

    the first form for weak sites (no cancellation), :math:`\hat\sigma^{-2} - v^{-1}` with
    :math:`\hat\sigma^2` computed directly for strong ones (:math:`\hat\sigma^2 < v / 2`).
    For a log-concave likelihood :math:`-1/v < h < 0`, so :math:`\tilde\tau > 0`.

    The expectations are sums over quadrature nodes about each tilted density's mode
    :math:`f_0` (:func:`_tilted_mode`; the sums are :func:`_tilted_sums`).  A cavity of
    standard deviation at most 2.5 takes adaptive Gauss-Hermite (:func:`_hermite_nodes`,
    scaled by the tilted curvature at the mode) with 32, 48, 80 or 120 nodes for standard
    deviations up to 1, 1.5, 2 and 2.5 (``_HERMITE_TIERS``); a wider one with
    :math:`-3\sqrt v \le s m \le v/2` the step of the sigmoid in closed form and the
    remainder by a fixed 240-node rule (:func:`_split_sums`: one exponential per node, no
    mode; 80 % of the wide cavities of ``bench/bench_ep.py``'s separable search at n = 150);
    the other wide ones the composite Gauss-Legendre rule of :func:`_tilted_nodes`, 184
    nodes whatever the variance.  Each group is in one vectorised pass over its sites.
    Measured against scipy's adaptive
    quadrature (``quad_vec``, relative tolerance 1e-13) on cavity means -50 to 50, both
    labels, 16 variances 1e-4 to 6.25 (352 cavities; both ends of every tier):
    :math:`\log Z` to 2.5e-13, the tilted mean to 2.6e-12 (of the larger of its size and its
    standard deviation), the tilted variance to 4.7e-11 relative (the 184-node rule on the
    same cavities: 6.8e-12, 1.3e-12, 5.8e-12); against the 184-node rule on 3,978 cavities
    with standard deviations up to 2.5: 6.1e-12, 1.4e-12, 4.6e-11 (where they differ most,
    at standard deviation 2.5 and means near -22, it is the 184-node rule that is off, by
    1.3e-10 in the variance, the 120-node Hermite rule by 6e-15).  The Hermite factor
    converges like :math:`\exp(-2 d \sqrt{2K})` for :math:`K` nodes, with
    :math:`d = \pi \sqrt{c/2}` the distance of the sigmoid's poles from the real axis in
    the rule's variable, so the nodes needed grow with the standard deviation (by this
    estimate about 175 at 3, as many as the composite rule's 184).  The weights are formed in
    the log domain, so :math:`Z` may be as small as it likes.  Each node costs two
    exponentials: :math:`t = e^{-|s f|}` (both :math:`\sigma(\pm s f)` are :math:`1/(1+t)`
    and :math:`t/(1+t)`, and :math:`\sigma(s f) = e^{\min(s f, 0)} / (1 + t)`, the first
    factor in the log weight, the second, between 1/2 and 1, outside it) and the
    exponential of the log weight; the expectations are weighted sums (``einsum``), the
    variances as :math:`E[x^2] - E[x]^2` about the value at the mode, where the two terms
    do not cancel.  (With the 184-node rule for every site, at n = 150, on the cavities of
    ``bench/bench_ep.py``'s searches, a call takes 3.2 ms of CPU against 4.9 ms with a
    ``log_expit`` and two ``expit`` per node, centred sums and a bisection for the modes;
    the results agree to 4e-14 relative.)
    """
    v = 1.0 / cavity_tau
    m = cavity_nu * v
    sd = np.sqrt(v)
    log_Z, g, h, var_f = (np.empty_like(m) for _ in range(4))
    # the narrow cavities by adaptive Gauss-Hermite, tier by tier, the wide ones near the
    # step by the split rule, the other wide ones by the composite rule: each group in one
    # vectorised pass
    tier = np.searchsorted([top for top, _ in _HERMITE_TIERS], sd)  # first tier with sd <= top
    mu = s * m
    split = (sd > _SPLIT_SD) & (mu >= -_SPLIT_BELOW * sd) & (mu <= _SPLIT_ABOVE * v)
    tier[split] = -1
    for rows in _row_blocks(int(np.count_nonzero(split)), _SPLIT_X.size):
        i = np.flatnonzero(split)[rows]
        log_Z[i], g[i], h[i], var_f[i] = _split_sums(m[i], v[i], s[i])
    f0 = np.zeros_like(m)
    moded = ~split
    f0[moded] = _tilted_mode(m[moded], v[moded], s[moded])
    for k in range(len(_HERMITE_TIERS) + 1):
        index = np.flatnonzero(tier == k)
        if index.size == 0:
            continue
        size = _HERMITE_TIERS[k][1] if k < len(_HERMITE_TIERS) else _N_TILTED_NODES
        for rows in _row_blocks(index.size, size):
            i = index[rows]
            if k < len(_HERMITE_TIERS):
                u, log_w = _hermite_nodes(f0[i], sd[i], *_HERMITE_RULES[size])
            else:
                u, log_w = _tilted_nodes(f0[i], sd[i])
            log_Z[i], g[i], h[i], var_f[i] = _tilted_sums(f0[i], m[i], v[i], s[i], u, log_w)
    weak = -v * h <= 0.5
    tau = np.where(weak, -h / (1.0 + v * np.where(weak, h, 0.0)), 1.0 / var_f - cavity_tau)
    tau = np.maximum(tau, 0.0)  # > 0 in exact arithmetic; round-off can leave -1e-31 for a site at rest
    mu_hat = m + v * g
    return _Tilted(log_Z=log_Z, tau=tau, nu=tau * mu_hat + g)


def _cavity(marginals, tau, nu):
    """Alg. 3.5, line 5: remove each site from its marginal."""
    cavity_tau = 1.0 / marginals.var - tau
    cavity_nu = marginals.mean / marginals.var - nu
    return cavity_tau, cavity_nu


def _log_marginal_likelihood(tau, nu, marginals, cavity_tau, cavity_nu, log_Z):
    r"""GPML eqs. (3.65), (3.73), (3.74): :math:`\log Z_\text{EP}` of the sites (tau, nu).

    .. math:: \log Z_\text{EP} = \sum_n \log \hat Z_n
              + \tfrac12 \sum_n \log(1 + \tilde\tau_n / \tau_{-n}) - \sum_n \log L_{nn}
              + \tfrac12 \tilde{\boldsymbol\nu}^\top \boldsymbol\mu
              - \tfrac12 \sum_n \frac{\tilde\nu_n^2}{\tilde\tau_n + \tau_{-n}}
              + \tfrac12 \sum_n \frac{\tau_{-n}\mu_{-n} (\tilde\tau_n \mu_{-n} - 2\tilde\nu_n)}
                {\tilde\tau_n + \tau_{-n}},

    with the cavities :math:`\mu_{-n} = \nu_{-n}/\tau_{-n}` of the posterior these sites
    define and :math:`\hat Z_n` their tilted normalisers; no :math:`1/\tilde\tau_n`
    appears, so weak sites are harmless.
    """
    cavity_mean = cavity_nu / cavity_tau
    total = tau + cavity_tau
    return float(
        np.sum(log_Z)
        + 0.5 * np.sum(np.log1p(tau / cavity_tau))
        - marginals.half_log_det_B
        + 0.5 * (nu @ marginals.mean)
        - 0.5 * np.sum(nu**2 / total)
        + 0.5 * np.sum(cavity_tau * cavity_mean * (tau * cavity_mean - 2.0 * nu) / total)
    )


def _dense_marginals(K, tau, nu, work=None):
    r"""Alg. 3.5, lines 10-11: the marginals of :math:`q(\mathbf f)` from the factor of B.

    :math:`L L^\top = B = I + \tilde S^{1/2} K \tilde S^{1/2}`,
    :math:`V = L^{-1} \tilde S^{1/2} K`, :math:`\Sigma = K - V^\top V` (only its diagonal
    is formed here), and :math:`\boldsymbol\mu = K \boldsymbol\alpha` with
    :math:`\boldsymbol\alpha = \tilde{\boldsymbol\nu} - \tilde S^{1/2} B^{-1} \tilde S^{1/2} K
    \tilde{\boldsymbol\nu}`.  Returns the marginals and V.
    """
    s_sqrt = np.sqrt(tau)
    L = cholesky_B(K, s_sqrt, work)
    V = solve_triangular(L, s_sqrt[:, None] * K, lower=True, check_finite=False)
    var = np.diag(K) - np.einsum("ij,ij->j", V, V)
    alpha = nu - s_sqrt * cho_solve_B(L, s_sqrt * symv(K, nu))
    return _Marginals(mean=symv(K, alpha), var=var, half_log_det_B=log_det_B(L), L=L, alpha=alpha), V


def _changes(tau_old, nu_old, tau_new, nu_new):
    """The largest change of the sites, relative to the larger of 1 and the largest site."""
    d_tau = np.max(np.abs(tau_new - tau_old)) / max(1.0, float(np.max(np.abs(tau_new))))
    d_nu = np.max(np.abs(nu_new - nu_old)) / max(1.0, float(np.max(np.abs(nu_new))))
    return float(max(d_tau, d_nu))


@dataclass(frozen=True)
class _EPState:
    """What an EP run hands back: the sites, their marginals (dense), lml and bookkeeping."""

    tau: np.ndarray
    nu: np.ndarray
    marginals: _Marginals
    log_marginal_likelihood: float
    n_sweeps: int
    converged: bool


def _ep_sequential(K, y, max_sweeps=100, tol=1e-8):
    """Alg. 3.5 as printed: sequential site updates, each a rank-one update of Sigma."""
    n = K.shape[0]
    s = _signs(y)
    tau, nu = np.zeros(n), np.zeros(n)  # line 2: the sites start flat,
    Sigma, mu = K.copy(), np.zeros(n)  # so q(f) is the prior
    lml_old = None
    converged = False
    for sweep in range(1, max_sweeps + 1):  # line 3: repeat
        tau_old, nu_old = tau.copy(), nu.copy()
        for i in range(n):  # line 4
            cavity_tau = 1.0 / Sigma[i, i] - tau[i]  # line 5: the cavity
            cavity_nu = mu[i] / Sigma[i, i] - nu[i]
            # line 6: the tilted moments, and the site that matches them
            cavity = np.array([cavity_tau]), np.array([cavity_nu])
            site = _tilted_sites(*cavity, s[i : i + 1])
            d_tau = site.tau[0] - tau[i]  # line 7: the new site
            tau[i], nu[i] = site.tau[0], site.nu[0]
            # line 8: Sigma -= s_i s_i^T / (1/d_tau + Sigma_ii)
            s_i = Sigma[:, i].copy()
            Sigma -= (d_tau / (1.0 + d_tau * s_i[i])) * np.outer(s_i, s_i)
            mu = Sigma @ nu
        # lines 10-11: Sigma and mu afresh from L
        marginals, V = _dense_marginals(K, tau, nu)
        Sigma, mu = K - V.T @ V, marginals.mean
        # line 13: log Z_EP (GPML 3.65, 3.73-3.74)
        cavity_tau, cavity_nu = _cavity(marginals, tau, nu)
        log_Z = _tilted_sites(cavity_tau, cavity_nu, s).log_Z
        lml = _log_marginal_likelihood(tau, nu, marginals, cavity_tau, cavity_nu, log_Z)
        if _changes(tau_old, nu_old, tau, nu) <= tol and lml_old is not None and (
            abs(lml - lml_old) <= tol * max(1.0, abs(lml))
        ):
            converged = True  # line 12: until convergence
            break
        lml_old = lml
    return _EPState(tau, nu, marginals, lml, sweep, converged)


def _parallel_sweeps(marginals_of, s, tau, nu, max_sweeps, tol, lml_old=None):
    r"""Parallel EP: every site updated from the same marginals, Anderson-accelerated.

    ``marginals_of(tau, nu)`` computes the marginals (dense or low rank).  One sweep
    maps the sites :math:`x = (\tilde{\boldsymbol\tau}, \tilde{\boldsymbol\nu})` to the
    sites :math:`G(x)` that match the tilted moments of the cavities of :math:`x` (lines
    5-7 of Alg. 3.5 for all sites at once); EP's fixed point is :math:`x = G(x)`.  The
    next sites are :math:`G(x)` extrapolated by Anderson acceleration over the last
    ``_MEMORY`` sweeps (:class:`blrlib._anderson.Anderson`; an extrapolated point with
    a negative site precision is replaced by :math:`G(x)`, and the extrapolation
    restarts, at most ``_MAX_RESTARTS`` times: on a rank-deficient kernel, where sites
    settle at zero precision, it would otherwise keep leaving the domain and never
    converge).
    Should the extrapolation fail, that is give a cavity without positive precision or
    a change of the sites ``_GIVE_UP`` times the smallest so far, the iteration goes on
    without it, damped: the update is a fraction ``damping`` of the full one, in the
    natural parameters (so site precisions stay >= 0), shrinking (x 0.6, down to 1/64)
    when an update points against the one before (negative cosine: an oscillation) and
    growing back (x 1.3, up to 1) while they agree (cosine above 1/2); a damped step
    whose marginals give a cavity without positive precision is undone and halved.
    Stops when the full update of the sites, :math:`G(x) - x`, and the change of the lml
    are both below ``tol`` (relative), the same test for both iterations, so they stop
    at the same fixed point; ``lml_old`` is the lml of the sweep before (from the
    low-rank phase).  Returns the sites, their marginals, lml, the number of sweeps and
    whether it stopped so.
    """
    marginals = marginals_of(tau, nu)
    damping, previous, last = 1.0, None, None
    anderson = Anderson(_MEMORY) if _ACCELERATE else None  # None once given up
    smallest, restarts = np.inf, 0
    for sweep in range(1, max_sweeps + 1):
        cavity_tau, cavity_nu = _cavity(marginals, tau, nu)  # line 5 for all sites
        valid = np.all(cavity_tau > 0) and np.all(np.isfinite(cavity_nu))
        if last is not None and not valid:
            anderson = None  # overshot: back to the last sites, a damped step
            damping = max(0.5 * damping, _MIN_DAMPING)
            tau, nu, marginals, update = last
            tau, nu = tau + damping * update[0], nu + damping * update[1]
            marginals = marginals_of(tau, nu)
            continue
        site = _tilted_sites(cavity_tau, cavity_nu, s)  # lines 6-7 for all sites
        lml = _log_marginal_likelihood(tau, nu, marginals, cavity_tau, cavity_nu, site.log_Z)
        change = _changes(tau, nu, site.tau, site.nu)
        lml_steady = lml_old is not None and (
            abs(lml - lml_old) <= tol * max(1.0, abs(lml)))
        if change <= tol and lml_steady:
            return tau, nu, marginals, lml, sweep, True
        if anderson is not None and change > _GIVE_UP * smallest:
            anderson = None  # the extrapolation diverges: damped sweeps from here
        smallest = min(smallest, change)
        update = (site.tau - tau, site.nu - nu)
        if anderson is None and previous is not None:
            flat, flat_prev = np.concatenate(update), np.concatenate(previous)
            norms = np.linalg.norm(flat) * np.linalg.norm(flat_prev)
            cosine = (flat @ flat_prev) / (norms + 1e-300)
            if cosine < 0.0:
                damping = max(0.6 * damping, _MIN_DAMPING)
            elif cosine > 0.5:
                damping = min(1.3 * damping, 1.0)
        previous, last, lml_old = update, (tau, nu, marginals, update), lml
        if anderson is None:
            tau = tau + damping * update[0]  # = (1 - damping) tau + damping tau_site
            nu = nu + damping * update[1]
        else:
            x = np.concatenate([tau, nu])
            x = anderson.step(x, np.concatenate([site.tau, site.nu]))
            if np.all(x[: tau.size] >= 0.0) and np.all(np.isfinite(x)):
                tau, nu = x[: tau.size], x[tau.size :]
            else:  # outside the domain: the plain update, and the extrapolation afresh
                tau, nu = site.tau, site.nu
                restarts += 1  # (given up after _MAX_RESTARTS: it keeps leaving the domain)
                anderson = Anderson(_MEMORY) if restarts <= _MAX_RESTARTS else None
        marginals = marginals_of(tau, nu)  # lines 10-11 for the new sites
    return tau, nu, marginals, lml, max_sweeps, False


def _ep_parallel(K, y, max_sweeps=100, tol=1e-8, tau0=None, nu0=None, work=None):
    """Parallel EP, first on a low-rank K (for n >= 500, when K has one), then exact.

    ``tau0`` / ``nu0`` warm-start the sites (the hyperparameter search passes those of
    the previous kernel).  ``work`` (n x n, Fortran-ordered) is a buffer for B and L.
    """
    n = K.shape[0]
    s = _signs(y)
    tau = np.zeros(n) if tau0 is None else tau0.copy()
    nu = np.zeros(n) if nu0 is None else nu0.copy()
    sweeps, lml = 0, None
    if n >= _LOWRANK_MIN_N:
        V, d = pivoted_cholesky(K, n // _LOWRANK_DIVISOR, rtol=_LOWRANK_RTOL)
        if np.max(d) <= _LOWRANK_USE * np.max(np.diag(K)):
            low_rank = LowRankEPPosterior(V, d)
            tau, nu, _, lml, sweeps, _ = _parallel_sweeps(low_rank.marginals, s, tau, nu, max_sweeps, tol)
    tau, nu, marginals, lml, more, converged = _parallel_sweeps(
        lambda tau, nu: _dense_marginals(K, tau, nu, work)[0], s, tau, nu, max(max_sweeps - sweeps, 1), tol, lml)
    return _EPState(tau, nu, marginals, lml, sweeps + more, converged)


def _as_fit(state):
    return GPCEP(
        tau_tilde=state.tau,
        nu_tilde=state.nu,
        log_marginal_likelihood=float(state.log_marginal_likelihood),
        n_sweeps=int(state.n_sweeps),
        converged=bool(state.converged),
        mean=state.marginals.mean,
        var=state.marginals.var,
        alpha=state.marginals.alpha,
        L=state.marginals.L,
    )


def _ep_from(K, y, max_sweeps, tol, tau0=None, nu0=None):
    """Parallel EP from the sites (tau0, nu0), or from flat sites if they are None or
    if EP from them does not converge within ``max_sweeps``; a GPCEP, and a warning if
    neither converges.

    ``GPClassifier`` starts its final fit from the sites of the search's best
    evaluation, made at the same kernel (to a looser tolerance during the search).
    """
    state = None
    if tau0 is not None:
        state = _ep_parallel(K, y, max_sweeps, tol, tau0, nu0)
    if state is None or not state.converged:
        state = _ep_parallel(K, y, max_sweeps, tol)
    if not state.converged:
        _warn_ep(max_sweeps, stacklevel=4)
    return _as_fit(state)


def _warn_ep(max_sweeps, stacklevel=3):
    warnings.warn(
        f"gpc_ep: expectation propagation did not converge in max_sweeps={max_sweeps} sweeps; "
        f"increase max_sweeps",
        ConvergenceWarning,
        stacklevel=stacklevel,
    )


def gpc_ep(K, y, *, max_sweeps=100, tol=1e-8, schedule="parallel"):
    r"""Expectation propagation for GP classification with the logistic likelihood (GPML Alg. 3.5).

    Each sweep updates every site :math:`(\tilde\tau_n, \tilde\nu_n)`: remove it from the
    marginal :math:`q(f_n)` (the cavity), compute the mean and variance of the tilted
    distribution :math:`\sigma(s_n f_n) \times \text{cavity}` by quadrature, and choose the
    site that gives :math:`q(f_n)` those moments.  At the fixed point,

    .. math:: \log Z_\text{EP} = \sum_n \log \hat Z_n
              + \tfrac12 \sum_n \log\Big(1 + \frac{\tilde\tau_n}{\tau_{-n}}\Big)
              - \sum_n \log L_{nn} + \dots

    (GPML eqs. 3.65, 3.73, 3.74; the full expression is in the source, ``_log_marginal_likelihood``)
    estimates the log marginal likelihood.  EP's latent means and variances are those of
    the tilted distributions at the fixed point, and on the book's data they lie much
    closer to the exact posterior (elliptical slice sampling) than Laplace's mode and
    curvature (chapter 11; ``tests/test_gp_elliptical.py``).

    A data set with one class is a valid input, as for :func:`~blrlib.gpc_laplace`.

    Book: chapter 11.

    Parameters
    ----------
    K : array_like of shape (n, n)
        The prior covariance (kernel matrix) of the latent values at the training inputs.
    y : array_like of shape (n,), values in {0, 1}
    max_sweeps : int, default 100
    tol : float, default 1e-8
        Stop when, from one sweep to the next, no site parameter changes by more than
        ``tol`` times the larger of 1 and the largest site parameter, and the log
        marginal likelihood changes by at most ``tol`` times the larger of 1 and its size.
    schedule : {"parallel", "sequential"}, default "parallel"
        ``"sequential"``: Alg. 3.5 as printed, one site after the other (:math:`O(n^3)`
        per sweep in rank-one updates; for reading and for small n).  ``"parallel"``: all
        sites from the same marginals, Anderson-accelerated (damped where the
        extrapolation fails); for n >= 500 and a
        smooth kernel it iterates first with a low-rank approximation of K and finishes
        with exact sweeps.  Both reach the same fixed point.

    Returns
    -------
    GPCEP

    Warns
    -----
    ConvergenceWarning
        If ``max_sweeps`` sweeps do not meet the stopping rule.

    Examples
    --------
    >>> from blrlib import rbf_kernel
    >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    >>> K, y = rbf_kernel(X, variance=4.0), np.array([0, 0, 1, 1])
    >>> ep = gpc_ep(K, y)
    >>> ep.converged, bool(ep.mean[0] < 0 < ep.mean[-1])
    (True, True)
    >>> round(ep.log_marginal_likelihood, 4)
    -2.4023
    >>> seq = gpc_ep(K, y, schedule="sequential")   # the same fixed point
    >>> bool(np.allclose(seq.tau_tilde, ep.tau_tilde, rtol=1e-7, atol=1e-9))
    True
    """
    K = as_kernel_matrix(K)
    y = as_labels(y, n=K.shape[0], against="K")
    max_sweeps = check_int(max_sweeps, "max_sweeps")
    tol = check_positive(tol, "tol")
    if np.any(np.diag(K) <= 0):
        i = int(np.argmin(np.diag(K)))
        raise ValueError(
            f"gpc_ep needs positive prior variances on the diagonal of K (a cavity has variance at "
            f"most K[n, n]), got K[{i}, {i}] = {K[i, i]:.3g}"
        )
    if schedule not in _SCHEDULES:
        raise ValueError(f"schedule must be one of {_SCHEDULES}, got {schedule!r}")
    state = (_ep_sequential if schedule == "sequential" else _ep_parallel)(K, y, max_sweeps, tol)
    if not state.converged:
        _warn_ep(max_sweeps)
    return _as_fit(state)
