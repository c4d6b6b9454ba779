r"""The exact posterior of Bayesian logistic regression, by sampling.

Book: chapter 10.  Polson, Scott & Windle (2013) showed that the logistic
likelihood is a scale mixture of Gaussians in the activation,

.. math:: \frac{(e^{a})^{y}}{1 + e^{a}} = \frac12\, e^{\kappa a}
          \int_0^\infty e^{-\omega a^2 / 2}\, p(\omega)\, d\omega,
          \qquad \kappa = y - \tfrac12,\quad \omega \sim \mathrm{PG}(1, 0)

(equation ``eq-pg-identity``), so that, given Polya-Gamma variables
:math:`\omega_n`, the weights have a Gaussian conditional (``eq-pg-w-given-omega``)
and, given the weights, each :math:`\omega_n \sim \mathrm{PG}(1, \mathbf x_n^\top
\mathbf w)` (``eq-pg-omega-given-w``).  Alternating the two draws is a Gibbs
sampler whose draws come from the exact posterior, with no tuning.

The module holds

* :func:`sample_polya_gamma`, Devroye's alternating-series sampler of PG(1, c);
* :func:`gibbs_logistic`, the Gibbs sampler, returning :class:`PosteriorSamples`;
* :func:`split_rhat` and :func:`effective_sample_size`, the rank-normalised
  convergence diagnostics of Vehtari et al. (2021), as ArviZ computes them;
* :func:`predict_samples`, the exact posterior predictive from the draws;
* :func:`log_evidence_is`, the log evidence by importance sampling, and
  :func:`pareto_khat`, the tail diagnostic of its weights (Vehtari et al. 2024).
"""

from dataclasses import dataclass, field

import numpy as np
from scipy.fft import irfft, next_fast_len, rfft
from scipy.special import expit, gammaln, log_expit, logsumexp, ndtr, ndtri
from scipy.stats import rankdata

from ._validation import (
    _as_float_array,
    _check_finite,
    as_labels,
    as_matrix,
    as_prior_precision,
    as_gaussian_scale,
    as_rng,
    check_chain_counts,
    check_degrees_of_freedom,
    check_int,
    check_positive,
)
from .laplace import laplace_posterior
from .logistic import _signs

__all__ = [
    "PosteriorSamples",
    "sample_polya_gamma",
    "gibbs_logistic",
    "predict_samples",
    "split_rhat",
    "effective_sample_size",
    "log_evidence_is",
    "pareto_khat",
]


# ---------------------------------------------------------------------------
# Polya-Gamma draws: Devroye's alternating-series method for J*(1, z)
# ---------------------------------------------------------------------------
# PG(1, c) = J*(1, z) / 4 with z = |c| / 2 (Polson, Scott & Windle 2013, section 4).  The
# density of J*(1, z) is cosh(z) exp(-z^2 x / 2) sum_n (-1)^n a_n(x), where the a_n(x) have
# one closed form for x <= t and another for x > t, and on each side they decrease in n
# (Devroye 2009).  So the n = 0 term, times the tilt exp(-z^2 x / 2), is an envelope:
#   right of t:  (pi / 2) exp(-K x),  K = pi^2 / 8 + z^2 / 2, a shifted exponential;
#   left of t:   2 exp(-z) IG(x | 1 / z, 1), an inverse-Gaussian density,
# and the alternating partial sums decide acceptance exactly, usually after one term.
# Devroye's t = 0.64 makes the acceptance rate at least 0.9991 for every z.
#
# The left piece needs a truncated inverse Gaussian, itself drawn by rejection.  Instead
# of a loop inside a loop, each proposal below comes from a slightly larger envelope that
# is easy to draw from, and all rejections happen in one loop (the same method, arranged
# to vectorise over z):
#   z >= 1/t: the whole IG(1/z, 1) density (mass 2 exp(-z)); a draw beyond t is rejected;
#   z <  1/t: the untilted Levy density x^{-3/2} exp(-1/(2x)) on (0, t], drawn exactly as
#             1 / N^2 with N a standard normal beyond 1/sqrt(t) (mass 4 Phi(-1/sqrt(t)));
#             a draw is accepted with probability equal to the tilt exp(-z^2 x / 2).
# Every proposal is accepted with probability at least 0.72.
_TRUNC = 0.64
_PI2 = np.pi**2
_PHI_TAIL = float(ndtr(-1.0 / np.sqrt(_TRUNC)))  # Phi(-1/sqrt(t))
_LOG_LEVY_MASS = float(np.log(4.0 * _PHI_TAIL))


@dataclass(frozen=True)
class _Envelope:
    """Per-z constants of the envelope (one entry per z; see the comment above)."""

    z: np.ndarray
    K: np.ndarray  # pi^2 / 8 + z^2 / 2, the rate of the right piece
    levy: np.ndarray  # True where the left piece is the Levy law (z < 1/t), else IG(1/z, 1)
    p_right: np.ndarray  # probability of proposing from the right piece

    @classmethod
    def of(cls, z):
        K = 0.125 * _PI2 + 0.5 * z * z
        levy = z < 1.0 / _TRUNC
        log_left = np.where(levy, _LOG_LEVY_MASS, np.log(2.0) - z)
        # the right piece's share of the envelope: p / (p + left mass), p = pi / (2K) exp(-K t)
        p_right = expit(np.log(0.5 * np.pi) - np.log(K) - K * _TRUNC - log_left)
        return cls(z, K, levy, p_right)

    def take(self, idx):
        return _Envelope(self.z[idx], self.K[idx], self.levy[idx], self.p_right[idx])


def _propose(env, rng):
    """One proposal from the envelope for each z; returns (x, passed the envelope's own test)."""
    u = rng.random((3, env.z.size))
    right = u[0] < env.p_right
    x = _TRUNC + rng.standard_exponential(env.z.size) / env.K  # right piece: t + Exp(K)
    ok = right.copy()  # right-piece proposals need only the series test
    i = np.flatnonzero(~right & env.levy)
    # Levy on (0, t] as 1 / N^2 with N beyond 1/sqrt(t) (1 - u in (0, 1]: N is finite),
    # accepted with probability the tilt exp(-z^2 x / 2)
    xi = 1.0 / ndtri((1.0 - u[1, i]) * _PHI_TAIL) ** 2
    x[i] = xi
    ok[i] = u[2, i] <= np.exp(-0.5 * env.z[i] ** 2 * xi)
    i = np.flatnonzero(~right & ~env.levy)
    # IG(mu, 1) by Michael, Schucany & Haas (1976): the smaller root of their quadratic,
    # computed stably, or with probability x / (mu + x) the larger one, mu^2 / x;
    # accepted if below t
    mu = 1.0 / env.z[i]
    half = 0.5 * mu * rng.standard_normal(i.size) ** 2
    xi = mu / (1.0 + half + np.sqrt(half * (2.0 + half)))
    xi = np.where(u[1, i] * (mu + xi) > mu, mu * mu / xi, xi)
    x[i] = xi
    ok[i] = xi < _TRUNC
    return x, ok


def _series_accepts(x, u):
    """Devroye's alternating-series test: is u * a_0(x) <= sum_n (-1)^n a_n(x)?

    The ratios a_n / a_0 are (2n + 1) exp(-n (n + 1) g) with g = 2 / x for x <= t and
    g = pi^2 x / 2 for x > t.  The partial sums alternate around the density: after an odd
    n they lie below it (u at or under them accepts), after an even n above it (u over
    them rejects).
    """
    g = np.where(x <= _TRUNC, 2.0 / x, 0.5 * _PI2 * x)
    partial = 1.0 - 3.0 * np.exp(-2.0 * g)  # n = 1
    accepted = u <= partial
    todo = np.flatnonzero(~accepted)
    n = 1
    while todo.size:  # rare: fewer than 1 in 1000 draws get here
        n += 1
        partial[todo] += (2 * n + 1) * np.exp(-n * (n + 1) * g[todo])
        todo = todo[u[todo] <= partial[todo]]  # the others are rejected
        n += 1
        partial[todo] -= (2 * n + 1) * np.exp(-n * (n + 1) * g[todo])
        done = u[todo] <= partial[todo]
        accepted[todo[done]] = True
        todo = todo[~done]
    return accepted


def _jstar(z, rng):
    """Draws of J*(1, z) for a 1-D array z >= 0 (Devroye's method, vectorised over z)."""
    env = _Envelope.of(z)
    x, ok = _propose(env, rng)
    ok &= _series_accepts(x, rng.random(z.size))
    out = x  # accepted in the first round: about nine in ten
    todo = np.flatnonzero(~ok)
    copies = 4
    while todo.size:
        # the few z still without a draw get several proposals each; the first accepted wins
        x, ok = _propose(env.take(np.repeat(todo, copies)), rng)
        ok &= _series_accepts(x, rng.random(x.size))
        ok, x = ok.reshape(-1, copies), x.reshape(-1, copies)
        first = ok.argmax(axis=1)
        rows = np.arange(todo.size)
        got = ok[rows, first]
        out[todo[got]] = x[rows, first][got]
        todo = todo[~got]
        copies = min(4 * copies, 64)
    return out


def _pg_draws(c, rng):
    """PG(1, c) draws for an array c of any shape (trusted input; the Gibbs sampler's kernel)."""
    z = 0.5 * np.abs(np.ravel(c))
    return 0.25 * _jstar(z, rng).reshape(np.shape(c))


def sample_polya_gamma(c, rng=None):
    r"""Draws from the Polya-Gamma distribution :math:`\mathrm{PG}(1, c)`, elementwise over ``c``.

    :math:`\omega \sim \mathrm{PG}(1, c)` has the Laplace transform
    :math:`E[e^{-t\omega}] = \cosh(c/2) / \cosh\sqrt{c^2/4 + t/2}`, mean
    :math:`\tanh(c/2)/(2c)` (1/4 at c = 0) and, equivalently, is the infinite sum
    :math:`\frac{1}{2\pi^2}\sum_{k\ge1} g_k / ((k - \frac12)^2 + c^2/(4\pi^2))` of
    independent :math:`g_k \sim \text{Exp}(1)`.  The draws use Devroye's exact
    alternating-series method for :math:`J^*(1, |c|/2) = 4\,\mathrm{PG}(1, c)`, as
    Polson, Scott & Windle (2013) do, vectorised over the elements of ``c``.

    Book: chapter 10, equation ``eq-pg-omega-given-w``.

    Parameters
    ----------
    c : array_like of any shape
        Tilting parameters (finite reals; the law depends on :math:`|c|` only).
    rng : numpy.random.Generator, int or None
        The random generator, or a seed for one (None means seed 0).

    Returns
    -------
    ndarray of the shape of ``c`` (a float when ``c`` is a scalar)

    Examples
    --------
    >>> omega = sample_polya_gamma(np.full(200_000, 2.0), rng=1)
    >>> bool(abs(omega.mean() - np.tanh(1.0) / 4.0) < 1e-3)
    True
    """
    c = _as_float_array(c, "c")
    _check_finite(c, "c")
    out = _pg_draws(c, as_rng(rng))
    return out if out.ndim else float(out)


# ---------------------------------------------------------------------------
# The Gibbs sampler
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PosteriorSamples:
    r"""Draws from the exact posterior :math:`p(\mathbf w \mid \mathcal D)`.

    Attributes
    ----------
    w : ndarray of shape (n_chains, n_samples, d)
        The draws :math:`\mathbf w^{(t)}` of each chain, after the warm-up.
    mean : ndarray of shape (d,)
        The posterior mean estimated from all chains.
    cov : ndarray of shape (d, d)
        The posterior covariance estimated from all chains (divisor: number of draws - 1).
    rhat : ndarray of shape (d,)
        Rank-normalised split :math:`\hat R` of each coordinate (:func:`split_rhat`).
    ess : ndarray of shape (d,)
        Bulk effective sample size of each coordinate (:func:`effective_sample_size`).
    prior_precision : float or ndarray of shape (d,)
        :math:`\lambda` (or the per-weight :math:`\lambda_j`).
    n_warmup : int
        Draws discarded at the start of each chain.
    """

    w: np.ndarray = field(repr=False)
    mean: np.ndarray
    cov: np.ndarray = field(repr=False)
    rhat: np.ndarray
    ess: np.ndarray
    prior_precision: float | np.ndarray
    n_warmup: int

    def __repr__(self):
        m = np.array2string(self.mean, precision=4, separator=", ", threshold=8)
        sd = np.array2string(np.sqrt(np.diag(self.cov)), precision=4, separator=", ", threshold=8)
        n_chains, n_samples, _ = self.w.shape
        return (
            f"PosteriorSamples(mean={m}, sd={sd}, n_chains={n_chains}, n_samples={n_samples}, "
            f"max_rhat={np.max(self.rhat):.4f}, min_ess={np.min(self.ess):.0f})"
        )


def _check_proper(X, y, lam):
    """Raise unless the posterior under the per-weight prior precisions ``lam`` is proper.

    With a flat prior (lambda_j = 0) on the weights in F, the posterior is improper
    exactly when some v != 0 supported on F has s_n x_n^T v >= 0 for every n: along v
    the likelihood never decreases and the flat prior does not decay.  Such a v is a
    null direction of X_F (rank test) or a (quasi-)separating direction, found by the
    linear programme max sum_n s_n x_n^T v, s_n x_n^T v >= 0, -1 <= v <= 1 (Konis 2007),
    whose optimum is positive exactly then.
    """
    flat = np.flatnonzero(lam == 0)
    if flat.size == 0:
        return
    from scipy.optimize import linprog

    Z = _signs(y)[:, None] * X[:, flat]
    names = "every weight" if flat.size == X.shape[1] else f"the weights {flat.tolist()}"
    if np.linalg.matrix_rank(Z) < flat.size:
        raise ValueError(
            f"the posterior is improper: with prior_precision 0 (a flat prior) on {names}, the "
            f"columns of X under that flat prior are linearly dependent, so the likelihood is "
            f"constant along a direction the prior does not penalise. Use prior_precision > 0."
        )
    res = linprog(-Z.sum(axis=0), A_ub=-Z, b_ub=np.zeros(X.shape[0]), bounds=(-1.0, 1.0), method="highs")
    if res.status == 0 and -res.fun > 1e-9 * max(1.0, float(np.abs(Z).sum())):
        raise ValueError(
            f"the posterior is improper: with prior_precision 0 (a flat prior) on {names}, the "
            f"data are (quasi-)separable by those weights, so the likelihood never decreases "
            f"along a separating direction and the posterior cannot be normalised. "
            f"Use prior_precision > 0."
        )


def _gibbs_chains(X, y, lam, w_start, n_iter, rng, draw_pg):
    """Run the Polya-Gamma Gibbs sampler for all chains at once; return (n_iter, n_chains, d).

    ``draw_pg(c, rng)`` draws PG(1, c) elementwise (the benchmark swaps in a compiled sampler).
    """
    n_chains, d = w_start.shape
    Xt = np.ascontiguousarray(X.T)
    Xt_kappa = Xt @ (y - 0.5)  # X^T kappa, kappa_n = y_n - 1/2
    diag = np.arange(d)
    draws = np.empty((n_iter, n_chains, d))
    w = w_start
    for t in range(n_iter):
        omega = draw_pg(w @ Xt, rng)  # omega_n ~ PG(1, x_n^T w), equation eq-pg-omega-given-w
        A = (Xt * omega[:, None, :]) @ X  # A = X^T Omega X + Lambda, equation eq-pg-w-given-omega
        A[:, diag, diag] += lam
        L = np.linalg.cholesky(A)
        # w = A^{-1} X^T kappa + L^{-T} eps with A = L L^T: forward, then backward substitution
        v = np.linalg.solve(L, np.broadcast_to(Xt_kappa, (n_chains, d))[..., None])
        eps = rng.standard_normal((n_chains, d, 1))
        w = np.linalg.solve(np.swapaxes(L, 1, 2), v + eps)[..., 0]
        draws[t] = w
    return draws


def _as_seed(seed):
    try:
        return as_rng(seed)
    except TypeError:
        raise TypeError(f"seed must be an int or a numpy.random.Generator, got {type(seed).__name__}") from None


def gibbs_logistic(X, y, prior_precision, *, n_samples=2000, n_warmup=500, n_chains=4, seed=0):
    r"""Draw from the exact posterior of Bayesian logistic regression by Polya-Gamma Gibbs sampling.

    The prior is :math:`\mathbf w \sim \mathcal N(\mathbf 0, \Lambda^{-1})`,
    :math:`\Lambda = \operatorname{diag}(\lambda_j)`.  Each iteration draws

    .. math:: \omega_n \mid \mathbf w \sim \mathrm{PG}(1, \mathbf x_n^\top \mathbf w),
              \qquad
              \mathbf w \mid \boldsymbol\omega \sim \mathcal N\big(A^{-1} X^\top
              \boldsymbol\kappa,\ A^{-1}\big),\quad A = X^\top \Omega X + \Lambda

    with :math:`\kappa_n = y_n - \frac12` and :math:`\Omega = \operatorname{diag}(\omega_n)`
    (Polson, Scott & Windle 2013).  Every chain starts from its own uniform draw on
    :math:`[-2, 2]^d`, runs ``n_warmup`` iterations that are discarded, then keeps
    ``n_samples``; all chains advance together.

    Book: chapter 10, equations ``eq-pg-w-given-omega`` and ``eq-pg-omega-given-w``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    prior_precision : float or array_like of shape (d,)
        :math:`\lambda \ge 0`, or one :math:`\lambda_j \ge 0` per weight; a 0 is a flat
        prior on that weight (so ``[0, lam, ..., lam]`` leaves the intercept free).
    n_samples : int, default 2000
        Draws kept per chain (at least 4).
    n_warmup : int, default 500
        Draws discarded per chain (0 keeps everything, e.g. to plot the start).
    n_chains : int, default 4
    seed : int or numpy.random.Generator, default 0

    Returns
    -------
    PosteriorSamples

    Raises
    ------
    ValueError
        When a flat prior (a zero precision) meets data that leave the posterior
        improper: (quasi-)separable data, or linearly dependent columns, under the
        flat weights.

    Examples
    --------
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> post = gibbs_logistic(X, [0, 0, 1, 1], 1.0, n_samples=500, n_chains=2, seed=3)
    >>> post.w.shape, bool(np.all(post.rhat < 1.05))
    ((2, 500, 2), True)
    """
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    lam_given = as_prior_precision(prior_precision, X.shape[1])
    lam = np.broadcast_to(lam_given, (X.shape[1],))  # one precision per weight
    n_samples, n_warmup, n_chains = check_chain_counts(n_samples, n_warmup, n_chains)
    rng = _as_seed(seed)
    _check_proper(X, y, lam)
    w_start = rng.uniform(-2.0, 2.0, size=(n_chains, X.shape[1]))
    draws = _gibbs_chains(X, y, lam, w_start, n_warmup + n_samples, rng, _pg_draws)
    w = np.ascontiguousarray(np.swapaxes(draws[n_warmup:], 0, 1))  # (n_chains, n_samples, d)
    pooled = w.reshape(-1, w.shape[2])
    return PosteriorSamples(
        w=w,
        mean=pooled.mean(axis=0),
        cov=np.atleast_2d(np.cov(pooled, rowvar=False)),
        rhat=_rhat_all(w),
        ess=_ess_all(w),
        prior_precision=lam_given,
        n_warmup=n_warmup,
    )


def predict_samples(samples, X_new):
    r"""The exact posterior predictive :math:`p(y = 1 \mid \mathbf x, \mathcal D)` from posterior draws.

    .. math:: p(y = 1 \mid \mathbf x, \mathcal D) = \int \sigma(\mathbf w^\top \mathbf x)\,
              p(\mathbf w \mid \mathcal D)\, d\mathbf w
              \approx \frac1T \sum_{t=1}^T \sigma(\mathbf x^\top \mathbf w^{(t)})

    averaged over the draws of every chain.

    Book: chapter 10, equation ``eq-predictive-exact``.

    Parameters
    ----------
    samples : PosteriorSamples
    X_new : array_like of shape (m, d)

    Returns
    -------
    ndarray of shape (m,)

    Examples
    --------
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> post = gibbs_logistic(X, [0, 0, 1, 1], 1.0, n_samples=400, n_chains=2)
    >>> p = predict_samples(post, [[1.0, 0.0], [1.0, 3.0]])
    >>> bool(0 < p[0] < p[1] < 1)
    True
    """
    if not isinstance(samples, PosteriorSamples):
        raise TypeError(f"samples must be a PosteriorSamples from gibbs_logistic, got {type(samples).__name__}")
    X_new = as_matrix(X_new, "X_new")
    W = samples.w.reshape(-1, samples.w.shape[2])
    if X_new.shape[1] != W.shape[1]:
        raise ValueError(f"X_new has {X_new.shape[1]} columns but the samples have d = {W.shape[1]} weights")
    out = np.empty(X_new.shape[0])
    chunk = max(1, 4_000_000 // W.shape[0])  # bound the (rows, draws) block in memory
    for start in range(0, X_new.shape[0], chunk):
        rows = slice(start, start + chunk)
        out[rows] = expit(X_new[rows] @ W.T).mean(axis=1)
    return out


# ---------------------------------------------------------------------------
# Convergence diagnostics (Vehtari, Gelman, Simpson, Carpenter & Buerkner 2021)
# ---------------------------------------------------------------------------
def _as_draws(draws):
    """Return draws as a float array (n_chains, n_samples, k) and whether k was absent."""
    arr = _as_float_array(draws, "draws")
    if arr.ndim not in (2, 3):
        raise ValueError(
            f"draws must have shape (n_chains, n_samples) or (n_chains, n_samples, k), got ndim={arr.ndim}"
        )
    if arr.shape[1] < 4:
        raise ValueError(
            f"draws must hold at least 4 draws per chain (two halves of at least two), got {arr.shape[1]}"
        )
    _check_finite(arr, "draws")
    return (arr[..., None], True) if arr.ndim == 2 else (arr, False)


def _split_halves(x):
    """(chains, n) -> (2 chains, n // 2): each chain's first and last halves (the middle draw of
    an odd-length chain is dropped)."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half :]])


def _rank_normalise(x):
    """Normal scores of the pooled ranks: Phi^{-1}((r - 3/8) / (S + 1/4)), ties averaged (Blom)."""
    r = rankdata(x, method="average", axis=None).reshape(x.shape)
    return ndtri((r - 0.375) / (x.size + 0.25))


def _is_constant(x):
    return float(np.max(x) - np.min(x)) < np.finfo(float).resolution


def _rhat_of(z):
    """The classic potential scale reduction for (chains, n) draws (Gelman et al., BDA3 11.4)."""
    n = z.shape[1]
    between = n * np.var(z.mean(axis=1), ddof=1)
    within = np.mean(np.var(z, axis=1, ddof=1))
    return float(np.sqrt((between / within + n - 1) / n))


def _rhat_one(x):
    if _is_constant(x):
        return np.nan
    split = _split_halves(x)
    bulk = _rhat_of(_rank_normalise(split))
    folded = np.abs(split - np.median(split))
    tail = np.nan if _is_constant(folded) else _rhat_of(_rank_normalise(folded))
    return max(bulk, tail) if np.isfinite(tail) else bulk


def _autocovariance(x):
    """Biased autocovariance of each row at every lag (1/n normalisation), by FFT."""
    n = x.shape[1]
    centred = x - x.mean(axis=1, keepdims=True)
    f = rfft(centred, n=next_fast_len(2 * n), axis=1)
    return irfft(f * np.conj(f), n=next_fast_len(2 * n), axis=1)[:, :n] / n


def _ess_of(z):
    """Effective sample size of (chains, n) draws with Geyer's initial monotone sequence."""
    m, n = z.shape
    acov = _autocovariance(z)
    within = np.mean(acov[:, 0]) * n / (n - 1.0)  # mean of the chains' unbiased variances
    var_plus = within * (n - 1.0) / n + (np.var(z.mean(axis=1), ddof=1) if m > 1 else 0.0)
    rho = 1.0 - (within - acov.mean(axis=0)) / var_plus  # combined autocorrelation, eq. (10)
    # Geyer's initial positive sequence: sum pairs rho_{2k} + rho_{2k+1} while positive.
    kept = np.zeros(n)
    kept[0], kept[1] = 1.0, rho[1]
    t = 1
    even, odd = 1.0, rho[1]
    while t < n - 3 and even + odd > 0:
        even, odd = rho[t + 1], rho[t + 2]
        if even + odd >= 0:
            kept[t + 1], kept[t + 2] = even, odd
        t += 2
    last = t - 2
    if even > 0:
        kept[last + 1] = even
    # Geyer's initial monotone sequence: the pair sums must not increase.
    for t in range(1, last - 1, 2):
        if kept[t + 1] + kept[t + 2] > kept[t - 1] + kept[t]:
            kept[t + 1] = kept[t + 2] = 0.5 * (kept[t - 1] + kept[t])
    tau = -1.0 + 2.0 * np.sum(kept[: last + 1]) + np.sum(kept[last + 1 : last + 2])
    total = m * n
    return total / max(tau, 1.0 / np.log10(total))


def _ess_split(x):
    """ESS of the split halves of (chains, n) values as they are (all equal: their number)."""
    split = _split_halves(x)
    if _is_constant(split):
        return float(split.size)
    return float(_ess_of(split))


def _ess_one(x, kind="bulk"):
    """ESS of one coordinate's (chains, n) draws: "bulk", "tail" or "mean" (see
    :func:`effective_sample_size`)."""
    if kind == "mean":  # the draws themselves
        return _ess_split(x)
    if kind == "tail":  # the indicators of the 5 % and 95 % quantiles; the smaller ESS
        q05, q95 = np.quantile(x, [0.05, 0.95])
        return min(_ess_split((x <= q05).astype(float)), _ess_split((x <= q95).astype(float)))
    split = _split_halves(x)  # bulk: the normal scores of the ranks
    if _is_constant(split):
        return float(split.size)
    return float(_ess_of(_rank_normalise(split)))


def _rhat_all(w):
    return np.array([_rhat_one(w[:, :, j]) for j in range(w.shape[2])])


def _ess_all(w, kind="bulk"):
    return np.array([_ess_one(w[:, :, j], kind) for j in range(w.shape[2])])


def split_rhat(draws):
    r"""Rank-normalised split :math:`\hat R` (Vehtari et al. 2021), as ArviZ's ``rhat`` computes it.

    Each chain is split into halves; the pooled draws are replaced by the normal
    scores of their ranks, and :math:`\hat R = \sqrt{(\hat V / W)}` compares the
    pooled variance :math:`\hat V = \frac{n-1}{n} W + B / n` with the mean within-half
    variance :math:`W`.  The result is the larger of this bulk value and the same
    computed on the folded draws :math:`|w - \operatorname{median}(w)|` (which catches
    chains that differ in spread).  Values above 1.01 say the chains have not mixed.

    Book: chapter 10, equation ``eq-rhat``.

    Parameters
    ----------
    draws : array_like of shape (n_chains, n_samples) or (n_chains, n_samples, k)
        At least 4 draws per chain.  Unlike ArviZ (which returns NaN for a single
        chain) one chain is accepted: its two halves are compared.

    Returns
    -------
    float, or ndarray of shape (k,)
        NaN for a coordinate whose draws are all equal.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> mixed = rng.standard_normal((4, 1000))
    >>> stuck = mixed + np.array([[0.0], [0.0], [0.0], [3.0]])  # one chain elsewhere
    >>> bool(split_rhat(mixed) < 1.01), bool(split_rhat(stuck) > 1.1)
    (True, True)
    """
    arr, single = _as_draws(draws)
    out = _rhat_all(arr)
    return float(out[0]) if single else out


def effective_sample_size(draws, kind="bulk"):
    r"""Effective sample size (Vehtari et al. 2021), as ArviZ's ``ess(method=kind)`` computes it.

    Each chain is split into halves as in :func:`split_rhat`; the combined
    autocorrelation :math:`\hat\rho_t` of the halves is summed with Geyer's initial
    monotone sequence, and :math:`\text{ESS} = MN / \hat\tau`,
    :math:`\hat\tau = -1 + 2\sum_t \hat\rho_t` (at least :math:`1/\log_{10}(MN)`).
    ``kind`` says of what:

    * ``"bulk"`` (the default): of the normal scores of the pooled ranks, so heavy
      tails do not matter; it says how well the centre of the distribution is explored;
    * ``"tail"``: the smaller of the ESS of the indicators
      :math:`[w \le q_{0.05}]` and :math:`[w \le q_{0.95}]` (the pooled 5 % and 95 %
      quantiles); it says how well the tails are explored;
    * ``"mean"``: of the draws themselves, without ranks; it is the one that gives the
      Monte Carlo standard error of a raw mean, :math:`\operatorname{sd} / \sqrt{\text{ESS}}`
      (equation ``eq-mcse``).

    Book: chapter 10, equations ``eq-ess`` and ``eq-mcse``.

    Parameters
    ----------
    draws : array_like of shape (n_chains, n_samples) or (n_chains, n_samples, k)
    kind : {"bulk", "tail", "mean"}, default "bulk"

    Returns
    -------
    float, or ndarray of shape (k,)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> independent = rng.standard_normal((4, 1000))
    >>> ar = np.zeros((4, 1000))  # AR(1) with coefficient 0.9: ESS about 4000 / 19
    >>> for t in range(1, 1000):
    ...     ar[:, t] = 0.9 * ar[:, t - 1] + rng.standard_normal(4)
    >>> bool(3000 < effective_sample_size(independent) < 5000)
    True
    >>> bool(100 < effective_sample_size(ar) < 350)
    True
    >>> bool(100 < effective_sample_size(ar, kind="mean") < 350)
    True
    """
    if kind not in ("bulk", "tail", "mean"):
        raise ValueError(f'kind must be "bulk", "tail" or "mean", got {kind!r}')
    arr, single = _as_draws(draws)
    out = _ess_all(arr, kind)
    return float(out[0]) if single else out


# ---------------------------------------------------------------------------
# The evidence by importance sampling, and its tail diagnostic
# ---------------------------------------------------------------------------
_IS_DF = 5  # default degrees of freedom of the Student-t proposal


def _gpd_shape(x):
    r"""Shape :math:`\hat k` of a generalized Pareto fit to sorted exceedances ``x > 0``.

    Zhang & Stephens (2009): the profile likelihood of :math:`\theta = k / \sigma` is
    averaged over a grid of ``m = 30 + floor(sqrt(n))`` values built from the largest
    value and the first quartile; :math:`\hat k` is the mean of
    :math:`\log(1 - \theta x)` at that average, then shrunk towards 1/2 by a weak prior
    worth 10 observations (Vehtari et al. 2024, appendix; what ArviZ and ``loo`` report).
    """
    n = x.size
    m = 30 + int(np.sqrt(n))
    j = np.arange(1, m + 1)
    quartile = x[int(n / 4 + 0.5) - 1]
    theta = 1.0 / x[-1] + (1.0 - np.sqrt(m / (j - 0.5))) / (3.0 * quartile)
    k = np.log1p(-theta[:, None] * x).mean(axis=1)  # minus Zhang & Stephens' k at each theta
    profile = n * (np.log(-theta / k) - k - 1.0)  # profile log likelihood of each theta
    weights = np.exp(profile - logsumexp(profile))  # 1 / sum_i exp(l_i - l_j), no overflow
    keep = weights >= 10 * np.finfo(float).eps
    weights = weights[keep] / weights[keep].sum()
    theta_hat = np.sum(theta[keep] * weights)
    k_hat = np.log1p(-theta_hat * x).mean()
    return float((n * k_hat + 10 * 0.5) / (n + 10))


def pareto_khat(log_weights, *, r_eff=1.0):
    r"""Pareto :math:`\hat k`, the tail diagnostic of importance sampling (Vehtari et al. 2024).

    The largest :math:`M = \lceil \min(S / 5,\ 3\sqrt{S / r_\text{eff}}) \rceil` of the
    :math:`S` importance weights are fitted, above the next largest weight
    :math:`u`, by a generalized Pareto distribution,
    :math:`P(r - u > x \mid r > u) = (1 + k x / \sigma)^{-1/k}`; its shape
    :math:`k` says how heavy the tail of the weights is.  Their moments of order below
    :math:`1/k` are finite, the others infinite, so for :math:`k \ge 1/2` their variance is
    infinite and the usual standard error means nothing.  In practice
    (Vehtari et al. 2024): :math:`\hat k \le \min(1 - 1/\log_{10} S,\ 0.7)` and the
    estimate is reliable; above 0.7 it is not, whatever its standard error says.  The
    fit is Zhang & Stephens' (2009) with the weak prior of Vehtari et al., as
    ``arviz.psislw`` and R's ``loo`` compute it.

    Book: chapter 10, equation ``eq-evidence-is``.

    Parameters
    ----------
    log_weights : array_like of shape (S,)
        Log importance weights (any additive constant), finite.
    r_eff : float, default 1.0
        Relative efficiency ESS / S of the draws (1 for independent draws); it only
        sets the size of the tail.

    Returns
    -------
    float
        :math:`\hat k`; ``inf`` when the tail holds fewer than 5 distinct weights (too
        few draws to fit it).

    Examples
    --------
    Weights with a Pareto tail of shape 0.8 (for which importance sampling fails):

    >>> rng = np.random.default_rng(0)
    >>> heavy = -0.8 * np.log(rng.random(20_000))  # log of r = U^-0.8
    >>> round(pareto_khat(heavy), 1)
    0.8
    >>> bool(pareto_khat(rng.standard_normal(20_000)) < 0.5)  # lognormal weights
    True
    """
    lw = _as_float_array(log_weights, "log_weights")
    if lw.ndim != 1:
        raise ValueError(f"log_weights must have shape (S,), got ndim={lw.ndim}")
    if lw.size < 2:
        raise ValueError(f"log_weights must hold at least 2 weights, got {lw.size}")
    _check_finite(lw, "log_weights")
    r_eff = check_positive(r_eff, "r_eff")
    x = np.sort(lw - lw.max())
    n_tail = int(np.ceil(min(lw.size / 5.0, 3.0 * np.sqrt(lw.size / r_eff))))
    cutoff = max(x[max(lw.size - n_tail - 1, 0)], np.log(np.finfo(float).tiny))
    tail = x[x > cutoff]
    if tail.size <= 4:
        return np.inf
    return _gpd_shape(np.exp(tail) - np.exp(cutoff))


def log_evidence_is(
    X,
    y,
    prior_precision,
    *,
    n_samples=100_000,
    seed=0,
    return_khat=False,
    proposal=None,
    df=_IS_DF,
):
    r"""The log evidence :math:`\log p(\mathbf y \mid X)` by importance sampling.

    .. math:: p(\mathbf y \mid X) = \int p(\mathbf y \mid X, \mathbf w)\, p(\mathbf w)\,
              d\mathbf w \approx \frac1T \sum_{t=1}^T
              \frac{p(\mathbf y \mid X, \mathbf w^{(t)})\, p(\mathbf w^{(t)})}{q(\mathbf w^{(t)})},
              \qquad \mathbf w^{(t)} \sim q

    with :math:`q` a multivariate Student-t (by default 5 degrees of freedom) centred
    at the Laplace mode with the Laplace covariance as its scale matrix.  Its tails are
    heavier than the posterior's, so the weights are bounded and the estimate has
    finite variance.  The standard error is the delta-method one,
    :math:`\operatorname{sd}(r) / (\sqrt T\, \bar r)` for the weights :math:`r`.
    Finite variance in theory is not enough in practice: where the posterior is far
    from the proposal, the few largest weights decide the sum and the standard error
    itself is unreliable.  ``return_khat=True`` adds the Pareto :math:`\hat k` of the
    weights (:func:`pareto_khat`): the estimate and its standard error can be trusted
    for :math:`\hat k \le 0.7` (better below 0.5), not above.

    Where the Laplace fit is a poor centre (a skewed posterior, as in GP classification
    with a large signal variance), ``proposal=(mean, cov)`` centres the Student-t at
    another approximation's mean with its covariance as the scale matrix, for instance
    EP's (chapters 11 and 12); ``df=np.inf`` makes the proposal Gaussian, whose light
    tails can leave the weights with infinite variance.

    Book: chapter 10, equation ``eq-evidence-is``; chapters 11 and 12 use ``proposal``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    prior_precision : float or array_like of shape (d,)
        With any zero entry the prior is improper and the evidence is 0:
        ``(-inf, 0.0)`` is returned, as for the Laplace estimate.
    n_samples : int, default 100_000
    seed : int or numpy.random.Generator, default 0
    return_khat : bool, default False
        Also return the Pareto :math:`\hat k` of the importance weights.
    proposal : None or (array_like of shape (d,), array_like of shape (d, d))
        The proposal's centre and scale matrix (symmetric positive definite; for
        ``df > 2`` the proposal's covariance is ``cov * df / (df - 2)``).  ``None``,
        the default, takes the Laplace fit's mode and covariance; passing them
        explicitly gives the same draws and the same numbers.
    df : float > 0 or numpy.inf, default 5
        Degrees of freedom of the Student-t proposal; ``inf`` draws from the Gaussian
        :math:`\mathcal N(\text{mean}, \text{cov})`.

    Returns
    -------
    (float, float) or (float, float, float)
        The log evidence estimate and its standard error, and with
        ``return_khat=True`` the Pareto :math:`\hat k` of the weights (NaN for an
        improper prior, where no weights are drawn).

    Examples
    --------
    One observation: by symmetry of the prior, p(y = 1) = E[sigmoid(x^T w)] = 1/2.

    >>> log_z, se = log_evidence_is([[1.0, 0.3]], [1], 1.0, n_samples=20_000)
    >>> bool(se < 0.01), bool(abs(log_z - np.log(0.5)) < 4 * se)
    (True, True)
    >>> _, _, khat = log_evidence_is([[1.0, 0.3]], [1], 1.0, n_samples=20_000,
    ...                              return_khat=True)
    >>> bool(khat < 0.5)
    True

    The prior itself as a Gaussian proposal: the weights are the likelihoods.

    >>> log_z, se, khat = log_evidence_is([[1.0, 0.3]], [1], 1.0, n_samples=20_000,
    ...                                   proposal=([0, 0], np.eye(2)), df=np.inf,
    ...                                   return_khat=True)
    >>> bool(abs(log_z - np.log(0.5)) < 4 * se), bool(khat < 0.5)
    (True, True)
    """
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    d = X.shape[1]
    lam = as_prior_precision(prior_precision, d)
    n_samples = check_int(n_samples, "n_samples", minimum=2)
    rng = _as_seed(seed)
    nu = check_degrees_of_freedom(df)
    if proposal is not None:
        mean, L = as_gaussian_scale(proposal, d)
    if np.any(lam == 0):
        return (-np.inf, 0.0, np.nan) if return_khat else (-np.inf, 0.0)
    if proposal is None:
        post = laplace_posterior(X, y, lam)
        mean, L = post.mean, np.linalg.cholesky(post.cov)
    lam = np.broadcast_to(lam, (d,))
    log_det_scale = 2.0 * np.sum(np.log(np.diag(L)))
    log_prior_norm = 0.5 * np.sum(np.log(lam)) - 0.5 * d * np.log(2.0 * np.pi)
    s = _signs(y)
    log_w = np.empty(n_samples)
    chunk = max(1, 2_000_000 // X.shape[0])  # bound the (draws, rows) block in memory
    for start in range(0, n_samples, chunk):
        m = min(chunk, n_samples - start)
        z = rng.standard_normal((m, d))
        if np.isinf(nu):  # Gaussian draws; maha = (w - mean)^T cov^{-1} (w - mean)
            w = mean + z @ L.T
            maha = np.sum(z * z, axis=1)
            log_q = -0.5 * (d * np.log(2.0 * np.pi) + log_det_scale + maha)
        else:  # multivariate t draws: a Gaussian over the root of a chi-square / nu
            g = rng.chisquare(nu, size=m)
            w = mean + (z @ L.T) / np.sqrt(g / nu)[:, None]
            maha = np.sum(z * z, axis=1) * nu / g
            log_q = (
                gammaln(0.5 * (nu + d)) - gammaln(0.5 * nu)
                - 0.5 * d * np.log(nu * np.pi) - 0.5 * log_det_scale
                - 0.5 * (nu + d) * np.log1p(maha / nu)
            )
        log_lik = log_expit(s * (w @ X.T)).sum(axis=1)
        log_prior = log_prior_norm - 0.5 * (w * w) @ lam
        log_w[start : start + m] = log_lik + log_prior - log_q
    log_z = float(logsumexp(log_w) - np.log(n_samples))
    r = np.exp(log_w - log_w.max())
    se = float(np.std(r, ddof=1) / (np.sqrt(n_samples) * np.mean(r)))
    return (log_z, se, pareto_khat(log_w)) if return_khat else (log_z, se)
