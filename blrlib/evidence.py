r"""Choosing the prior precision by maximising the Laplace evidence.

Book: chapter 5.  The Laplace estimate of the log evidence (equation
``eq-laplace-evidence``),

.. math:: \mathcal L(\lambda) = \log p(\mathbf y \mid X, \mathbf m)
          - \frac{\lambda}{2}\|\mathbf m\|^2 + \frac d2 \log\lambda - \frac12 \log|A|,
          \qquad A = X^\top S X + \lambda I ,

depends on :math:`\lambda` directly and through the mode :math:`\mathbf m(\lambda)`
and the curvature weights :math:`S(\mathbf m)`.  Differentiating the optimality
condition :math:`X^\top(\mathbf y - \mathbf p) - \lambda \mathbf m = \mathbf 0` gives
:math:`d\mathbf m / d\lambda = -A^{-1}\mathbf m`, and with
:math:`\Sigma = A^{-1}`, :math:`v_n = \mathbf x_n^\top \Sigma \mathbf x_n` the exact derivative is

.. math:: \frac{d\mathcal L}{d\lambda} = -\frac12 \|\mathbf m\|^2 + \frac{d}{2\lambda}
          - \frac12 \operatorname{tr}\Sigma
          - \frac12 \sum_n v_n\, S_{nn} (1 - 2 p_n)\, \mathbf x_n^\top \frac{d\mathbf m}{d\lambda}

(the first term needs no derivative of the mode because the gradient of the log
posterior vanishes there).  MacKay's fixed
point :math:`\lambda \leftarrow \gamma / \|\mathbf m\|^2`, :math:`\gamma = d - \lambda
\operatorname{tr}\Sigma`, sets the first three terms to zero and drops the last one,
the change of the curvature with the mode; :func:`maximize_evidence` keeps it and
finds the exact maximiser.
"""

import warnings
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import expit

from ._validation import as_labels, as_matrix, check_int, check_positive
from .laplace import LaplacePosterior, _find_mode, _laplace_at_mode
from .logistic import _log_likelihood, _penalty
from .optimize import ConvergenceWarning

__all__ = ["EvidenceFit", "maximize_evidence"]


@dataclass(frozen=True)
class EvidenceFit:
    r"""The prior precision that maximises the Laplace evidence, and the posterior there.

    Attributes
    ----------
    prior_precision : float
        :math:`\lambda` at the maximum (the last iterate when not converged).
    posterior : LaplacePosterior
        The Laplace approximation at that :math:`\lambda`.
    n_iter : int
        Number of evidence evaluations after the start (each one a Laplace fit).
    converged : bool
        Whether the search met its tolerance before ``max_iter``, at an interior maximum.
    history : ndarray of shape (n_iter,)
        The Laplace log evidence at the iterate of each iteration.
    """

    prior_precision: float
    posterior: LaplacePosterior = field(repr=False)
    n_iter: int
    converged: bool
    history: np.ndarray = field(repr=False)

    def __repr__(self):
        return (
            f"EvidenceFit(prior_precision={self.prior_precision:.6g}, "
            f"log_evidence={self.posterior.log_evidence:.6g}, n_iter={self.n_iter}, "
            f"converged={self.converged})"
        )


def _evidence_and_gradient(X, y, lam, w0, penalised=None):
    r"""The Laplace log evidence, its exact derivative in :math:`\lambda`, and the posterior.

    ``lam`` is a scalar > 0 and ``w0`` the start of the mode search (a warm start).
    The derivative is the one in the module docstring (chapter 5).

    ``penalised`` (a boolean mask over the columns, or None for all) puts the prior
    :math:`\mathcal N(0, \lambda^{-1})` on the masked weights only and a flat prior of
    unit density on the others (an unpenalised intercept, as
    :class:`~blrlib.BayesianLogisticRegression` fits it).  Then :math:`A = X^\top S X +
    \lambda P` with :math:`P` the diagonal of the mask, the evidence is the Laplace
    estimate of :math:`\int p(\mathbf y \mid X, \mathbf w) \prod_{j \in P}
    \mathcal N(w_j \mid 0, \lambda^{-1})\, d\mathbf w`, which is the formula above with
    :math:`d` the number of penalised weights plus :math:`\frac{d_0}{2}\log 2\pi` for the
    :math:`d_0` free ones (their Gaussian integral is not cancelled by a prior
    normaliser), and in the derivative :math:`\|\mathbf m\|^2 \to \mathbf m^\top P
    \mathbf m`, :math:`\operatorname{tr}\Sigma \to \operatorname{tr}(P\Sigma)`,
    :math:`d\mathbf m / d\lambda = -\Sigma P \mathbf m`.
    """
    if penalised is None:
        post = _laplace_at_mode(X, y, lam, _find_mode(X, y, lam, w0))
        P = np.ones(X.shape[1])
    else:
        P = np.asarray(penalised, dtype=float)
        post = _laplace_at_mode(X, y, lam * P, _find_mode(X, y, lam * P, w0))
        post = replace(post, log_evidence=_partly_flat_log_evidence(X, y, post, penalised))
    m, Sigma = post.mean, post.cov
    a = X @ m
    p = expit(a)
    curv = p * expit(-a)
    V = solve_triangular(post._chol, X.T, lower=True, check_finite=False)
    v = np.einsum("ij,ij->j", V, V)  # v_n = x_n^T Sigma x_n
    dm = -Sigma @ (P * m)  # d m / d lambda
    d_logdet_A = float(np.sum(P * np.diag(Sigma))) + float(np.sum(v * curv * (1.0 - 2.0 * p) * (X @ dm)))
    grad = -0.5 * float(m @ (P * m)) + 0.5 * float(np.sum(P)) / lam - 0.5 * d_logdet_A
    return post.log_evidence, grad, post


def _partly_flat_log_evidence(X, y, post, penalised):
    r"""The Laplace log evidence of ``post`` with a flat prior of unit density on the weights
    that ``penalised`` (a boolean mask) leaves out, and ``post.prior_precision`` on the others.

    .. math:: \log p(\mathbf y \mid X, \mathbf m) - \tfrac12 \sum_{j \in P} \lambda_j m_j^2
              + \tfrac12 \sum_{j \in P} \log\lambda_j + \tfrac{d_0}{2} \log 2\pi
              - \tfrac12 \log|A|

    with :math:`d_0` free weights: the limit of the evidence under a prior
    :math:`\mathcal N(0, \varepsilon^{-1})` on each free weight, divided by that prior's
    density at 0, :math:`(\varepsilon / 2\pi)^{1/2}`, as :math:`\varepsilon \to 0`.
    :math:`-\infty` when a penalised weight has precision 0.
    """
    P = np.asarray(penalised, dtype=bool)
    lam = np.broadcast_to(np.asarray(post.prior_precision, dtype=float), P.shape)
    if np.any(lam[P] == 0):
        return -np.inf
    log_det_A = 2.0 * np.sum(np.log(np.diag(post._chol)))
    value = (_log_likelihood(X @ post.mean, y) - _penalty(post.mean, lam * P) + 0.5 * np.sum(np.log(lam[P]))
             + 0.5 * np.sum(~P) * np.log(2.0 * np.pi) - 0.5 * log_det_A)
    return float(value)


# The search runs over t = log(lambda) inside [log(rho) - _SPAN, log(rho) + _SPAN], with
# rho = ||X||_2^2 / 4 the largest curvature the likelihood can have: far above rho the prior
# swamps the data (the evidence tends to that of w = 0), far below it the prior is negligible.
_SPAN = np.log(1e8)


def maximize_evidence(X, y, prior_precision=1.0, *, max_iter=100, tol=1e-8):
    r"""The prior precision :math:`\lambda` that maximises the Laplace log evidence.

    Searches in :math:`t = \log\lambda` for a zero of the exact derivative
    :math:`\lambda\, d\mathcal L / d\lambda` (derived in the module docstring),
    which accounts for the mode and its curvature moving with :math:`\lambda`.  From the start it steps in the uphill direction
    with doubling steps until the derivative changes sign, then narrows the
    bracket by secant steps, falling back to bisection whenever the bracket fails to
    halve in two steps.  Each iteration is one Laplace fit, warm-started at the
    previous mode.

    Book: chapter 5, equation ``eq-laplace-evidence`` and the choice of :math:`\lambda`.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    prior_precision : float, default 1.0
        The starting value, > 0.  The search finds the maximum uphill from it (the
        Laplace evidence need not be unimodal in general; it is on the book's data).
    max_iter : int, default 100
        At most this many Laplace fits after the start.
    tol : float, default 1e-8
        Converged when a step changes :math:`\log\lambda` by at most ``tol``, i.e. the
        relative change of :math:`\lambda` is below about ``tol``.

    Returns
    -------
    EvidenceFit

    Warns
    -----
    ConvergenceWarning
        If ``max_iter`` is reached, or if the evidence still rises at the end of the
        search range :math:`[10^{-8}\rho, 10^{8}\rho]`, :math:`\rho = \|X\|_2^2/4`.
        As :math:`\lambda \to \infty` the mode tends to :math:`\mathbf 0` and the
        evidence to :math:`n \log\frac12`, that of a model with every probability
        1/2: an evidence still rising there says the features carry no evidence for
        any non-zero weight.  As :math:`\lambda \to 0` the evidence falls like
        :math:`\frac d2 \log\lambda` whenever the maximum-likelihood estimate exists,
        so a maximum at :math:`\lambda \to 0` is not found on such data.  The result
        then holds the end of the range, with ``converged=False``.

    Examples
    --------
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2], [1.0, 2.0]])
    >>> fit = maximize_evidence(X, np.array([0, 0, 1, 1, 1]))
    >>> fit.converged
    True
    >>> from blrlib import laplace_posterior
    >>> lam = fit.prior_precision
    >>> nearby = [laplace_posterior(X, [0, 0, 1, 1, 1], lam * f).log_evidence
    ...           for f in (0.99, 1.01)]
    >>> bool(fit.posterior.log_evidence >= max(nearby))
    True
    """
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    if np.ndim(prior_precision) != 0:
        raise TypeError(
            f"maximize_evidence searches over a scalar prior_precision; got an array of shape "
            f"{np.shape(prior_precision)} as the start"
        )
    lam0 = check_positive(prior_precision, "prior_precision")
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol")
    return _maximize_evidence(X, y, lam0, max_iter, tol)


def _maximize_evidence(X, y, lam0, max_iter, tol, penalised=None, stacklevel=3, search=None,
                       what=("maximize_evidence", "the Laplace log evidence", "Laplace fits")):
    r"""The search of :func:`maximize_evidence` on validated input; ``penalised`` as in
    :func:`_evidence_and_gradient`.

    ``search`` replaces the Laplace evaluations by another objective of :math:`\lambda`
    with the same interface as :class:`_Search` (``evaluate(t)`` returning the derivative
    in :math:`t = \log\lambda`, ``last_two``, ``current``, ``n_iter``, ``history``);
    ``what`` names the caller, the objective and its evaluations in the warnings.
    """
    rho = max(np.linalg.norm(X, 2) ** 2 / 4.0, np.finfo(float).tiny)
    t_min, t_max = np.log(rho) - _SPAN, np.log(rho) + _SPAN
    caller, objective, evaluations = what
    if search is None:
        search = _Search(X, y, np.zeros(X.shape[1]), penalised)
    t = float(np.clip(np.log(lam0), t_min, t_max))
    h = search.evaluate(t)
    converged, at_bound = h == 0.0, None
    lo = hi = None  # bracket: h(lo) > 0 > h(hi)
    # phase 1: doubling steps uphill until the derivative changes sign
    step = 1.0
    while not converged and search.n_iter < max_iter:
        if h > 0:
            lo = t
        else:
            hi = t
        if lo is not None and hi is not None:
            break
        bound = t_max if h > 0 else t_min
        if t == bound:
            at_bound = "infinity" if h > 0 else "zero"
            break
        t = float(np.clip(t + np.sign(h) * step, t_min, t_max))
        h = search.evaluate(t)
        converged = h == 0.0
        step *= 2.0
    # phase 2: secant steps inside the bracket, bisection when the bracket does not halve
    widths = []
    while not converged and at_bound is None and search.n_iter < max_iter:
        t_a, h_a, t_b, h_b = search.last_two()
        width = hi - lo
        candidate = t_b - h_b * (t_b - t_a) / (h_b - h_a) if h_b != h_a else np.nan
        slow = len(widths) >= 2 and width > 0.5 * widths[-2]
        if not (min(lo, hi) < candidate < max(lo, hi)) or slow:
            candidate = 0.5 * (lo + hi)
        widths.append(width)
        h = search.evaluate(candidate)
        if h > 0:
            lo = candidate
        else:
            hi = candidate
        converged = h == 0.0 or abs(candidate - t_b) <= tol or abs(hi - lo) <= tol
    if at_bound is not None:
        warnings.warn(
            f"{caller}: {objective} still increases as lambda -> {at_bound} "
            f"(stopped at the end of the search range, lambda = {np.exp(t):.3g}). "
            + (
                "As lambda grows the mode tends to w = 0 and the evidence to that of a model "
                "with every probability 1/2: the data give no evidence for non-zero weights."
                if at_bound == "infinity"
                else "The evidence rising as lambda -> 0 means the prior is not needed to fit "
                "the data; check whether the maximum-likelihood estimate exists."
            ),
            ConvergenceWarning,
            stacklevel=stacklevel,
        )
    elif not converged:
        warnings.warn(
            f"{caller} did not converge in max_iter={max_iter} {evaluations} "
            f"(bracket for log lambda: [{min(lo, hi) if lo is not None and hi is not None else t:.6g}, "
            f"{max(lo, hi) if lo is not None and hi is not None else t:.6g}]); increase max_iter.",
            ConvergenceWarning,
            stacklevel=stacklevel,
        )
    lam, post = search.current
    return EvidenceFit(
        prior_precision=lam,
        posterior=post,
        n_iter=search.n_iter,
        converged=bool(converged),
        history=np.asarray(search.history),
    )


class _Search:
    """The evaluations of the search: log evidence and derivative in t = log(lambda), warm starts."""

    def __init__(self, X, y, w0, penalised=None):
        self.X, self.y, self.w = X, y, w0
        self.penalised = penalised
        self.points = []  # (t, h) of every evaluation, the start included
        self.history = []  # log evidence after each iteration (the start excluded)
        self.current = None

    @property
    def n_iter(self):
        return len(self.history)

    def evaluate(self, t):
        lam = float(np.exp(t))
        value, grad, post = _evidence_and_gradient(self.X, self.y, lam, self.w, self.penalised)
        self.w = post.mean
        h = lam * grad  # d L / d log(lambda)
        if self.points:
            self.history.append(value)
        self.points.append((t, h))
        self.current = (lam, post)
        return h

    def last_two(self):
        (t_a, h_a), (t_b, h_b) = self.points[-2:]
        return t_a, h_a, t_b, h_b
