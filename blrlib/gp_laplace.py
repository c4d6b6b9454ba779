r"""Gaussian-process classification with the Laplace approximation: Rasmussen & Williams Alg. 3.1.

Book: chapter 9.  A Gaussian-process prior :math:`\mathbf f \sim \mathcal N(0, K)` on the
latent function values replaces the Gaussian prior on the weights; the likelihood is the
logistic one of chapter 2, :math:`p(y_n \mid f_n) = \sigma(s_n f_n)` with
:math:`s_n = 2y_n - 1`.  As in chapter 5 the posterior over :math:`\mathbf f` is
approximated by a Gaussian at its mode :math:`\hat{\mathbf f}`, the maximum of

.. math:: \Psi(\mathbf f) = \log p(\mathbf y \mid \mathbf f) - \tfrac12 \mathbf f^\top K^{-1} \mathbf f,

with covariance :math:`(K^{-1} + W)^{-1}`, :math:`W = \operatorname{diag}(p_n(1 - p_n))`.

The code follows Rasmussen & Williams (2006), *Gaussian Processes for Machine Learning*
(GPML), Algorithm 3.1; the comments name its lines.  :func:`_newton_step` is lines 4-8
(one Newton step, solved with the Cholesky factor :math:`L` of
:math:`B = I + W^{1/2} K W^{1/2}`, never with :math:`K^{-1}`), and :func:`_posterior_mode`
is the loop around it (lines 2-10) with one safeguard the book omits: a step that would
lower :math:`\Psi` is halved.  Labels are :math:`\{0, 1\}`; GPML's :math:`\mathbf t =
(\mathbf y + 1)/2` for its :math:`\pm 1` labels is our :math:`\mathbf y`.

For n >= 500 the Newton steps are first tried with conjugate gradients
(:mod:`blrlib._gp_lowrank`), which need only products with :math:`K`; convergence is
always confirmed by an exact step, so the mode, :math:`L` and the marginal likelihood
returned are those of the textbook algorithm.  Prediction (Alg. 3.2) is in
:mod:`blrlib.gp_predict`, the gradient of the marginal likelihood (Alg. 5.1) in
:mod:`blrlib.gp_hyperparameters`.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, log_expit

from ._gp_linalg import cho_solve_B, cholesky_B, log_det_B, symv
from ._gp_lowrank import CG_MIN_N, CGNewtonSteps
from ._validation import (
    as_kernel_matrix,
    as_labels,
    as_vector,
    check_int,
    check_positive,
)
from .logistic import _curvature, _signs
from .optimize import ConvergenceWarning

__all__ = ["GPCLaplace", "gpc_laplace"]

_EPS = np.finfo(float).eps


def _short(v):
    return np.array2string(np.asarray(v), precision=4, separator=", ", threshold=6)


@dataclass(frozen=True)
class GPCLaplace:
    r"""The Laplace approximation of a GP classifier's posterior at a fixed kernel (GPML Alg. 3.1).

    Attributes
    ----------
    f_hat : ndarray of shape (n,)
        The posterior mode :math:`\hat{\mathbf f}` of the latent function values.
    log_marginal_likelihood : float
        The Laplace estimate :math:`\log q(\mathbf y \mid X) = -\frac12 \boldsymbol\alpha^\top
        \hat{\mathbf f} + \log p(\mathbf y \mid \hat{\mathbf f}) - \sum_n \log L_{nn}`.
    n_iter : int
        Newton iterations taken.
    converged : bool
        Whether the stopping criterion was met within ``max_iter`` iterations.
    alpha : ndarray of shape (n,)
        :math:`\boldsymbol\alpha = K^{-1} \hat{\mathbf f}` as the iteration produces it
        (:math:`\hat{\mathbf f} = K \boldsymbol\alpha`; Alg. 3.1's :math:`\mathbf a`).
    grad_log_lik : ndarray of shape (n,)
        :math:`\nabla \log p(\mathbf y \mid \hat{\mathbf f}) = \mathbf y - \hat{\mathbf p}`;
        equals ``alpha`` at the exact mode (chapter 9, equation ``eq-gpc-mode``).
    W_sqrt : ndarray of shape (n,)
        :math:`W^{1/2}`, the square roots of :math:`\hat p_n (1 - \hat p_n)`.
    L : ndarray of shape (n, n)
        Lower Cholesky factor of :math:`B = I + W^{1/2} K W^{1/2}` at the mode.
    """

    f_hat: np.ndarray
    log_marginal_likelihood: float
    n_iter: int
    converged: bool
    alpha: np.ndarray = field(repr=False)
    grad_log_lik: np.ndarray = field(repr=False)
    W_sqrt: np.ndarray = field(repr=False)
    L: np.ndarray = field(repr=False, compare=False)

    def __repr__(self):
        return (
            f"GPCLaplace(n={self.f_hat.shape[0]}, f_hat={_short(self.f_hat)}, "
            f"log_marginal_likelihood={self.log_marginal_likelihood:.8g}, "
            f"n_iter={self.n_iter}, converged={self.converged})"
        )


@dataclass(frozen=True)
class _Step:
    """A full Newton step: the new pair (alpha, f = K alpha), and L at its start if exact."""

    alpha: np.ndarray
    f: np.ndarray
    L: np.ndarray | None


@dataclass(frozen=True)
class _Mode:
    """Where the mode search ends; what the marginal likelihood, its gradient and prediction need."""

    f: np.ndarray  # the mode f_hat
    alpha: np.ndarray  # K^-1 f_hat, as the iteration produces it
    W: np.ndarray  # p (1 - p) at f_hat
    L: np.ndarray  # lower Cholesky factor of B at f_hat
    log_marginal_likelihood: float
    n_iter: int
    converged: bool
    n_factorisations: int


def _psi(alpha, f, y):
    r""":math:`\Psi = \log p(\mathbf y \mid \mathbf f) - \frac12 \boldsymbol\alpha^\top \mathbf f` (Alg. 3.1, line 10)."""
    return float(np.sum(log_expit(_signs(y) * f)) - 0.5 * (alpha @ f))


def _newton_step(K, y, f, work=None):
    """Alg. 3.1, lines 4-8: the full Newton step from f, and the factor of B at f."""
    W = _curvature(f)  # line 4: W = -grad grad log p(y | f) = diag(p (1 - p))
    W_sqrt = np.sqrt(W)
    L = cholesky_B(K, W_sqrt, work)  # line 5: L L^T = B = I + W^1/2 K W^1/2
    b = W * f + (y - expit(f))  # line 6: b = W f + grad log p(y | f)
    # line 7: a = b - W^1/2 B^-1 W^1/2 K b
    alpha = b - W_sqrt * cho_solve_B(L, W_sqrt * symv(K, b))
    return _Step(alpha=alpha, f=symv(K, alpha), L=L)  # line 8: f = K a


def _posterior_mode(K, y, max_iter=100, tol=1e-10, f0=None, work=None):
    """Alg. 3.1, lines 2-10: Newton's method for the mode of Psi, with step halving.

    Each iterate is a consistent pair (alpha, f = K alpha), so Psi never needs K^-1.
    From the current f the full Newton step is computed (lines 4-8); when it would
    change neither Psi nor f noticeably, f is the mode.  Otherwise the step is halved
    until Psi does not decrease (Psi is concave, so the Newton direction is an ascent
    direction and halving succeeds) and taken.

    For n >= 500 the step is first computed by conjugate gradients (``CGNewtonSteps``),
    but a verdict of convergence is always confirmed by the exact step, whose factor L
    at the final f is the one returned.  ``f0`` is a warm start, typically the mode for
    a nearby kernel; it need not be consistent with K: one full step from it gives a
    consistent pair, kept only if its Psi beats that of f = 0.  ``work`` (n x n,
    Fortran-ordered, optional) is the buffer for B and L; the L returned lives in it.
    """
    n = K.shape[0]
    fast = CGNewtonSteps(K, y) if n >= CG_MIN_N else None
    if work is None:
        work = np.empty((n, n), order="F")
    n_factorisations = 0
    factored_at = None  # the f at which `work` holds the factor L of B

    def step_from(f, alpha, exact):
        nonlocal n_factorisations, factored_at
        if fast is not None and not exact:
            cg = fast.step(f, alpha, _curvature(f))
            if cg is not None:
                return _Step(alpha=cg[0], f=cg[1], L=None)
        n_factorisations += 1
        factored_at = f
        return _newton_step(K, y, f, work)  # with alpha given it is still line 7 as printed

    alpha, f = np.zeros(n), np.zeros(n)  # line 2: initialisation f = 0
    psi = _psi(alpha, f, y)
    n_iter = 0
    if f0 is not None:
        start = step_from(f0, None, exact=False)
        if _psi(start.alpha, start.f, y) > psi:
            alpha, f, psi, n_iter = start.alpha, start.f, _psi(start.alpha, start.f, y), 1
    k_max = float(np.max(np.diag(K)))
    converged = confirm = False
    while True:  # line 3: repeat
        step = step_from(f, alpha, exact=confirm)  # lines 4-8
        psi_new = _psi(step.alpha, step.f, y)  # line 9: objective
        d_alpha, d_f = step.alpha - alpha, step.f - f
        largest = float(np.max(np.abs(d_f)))
        if psi_new - psi <= tol * (1.0 + abs(psi)) and (
            largest <= tol * (1.0 + float(np.max(np.abs(f))))
            or largest <= 16 * _EPS * k_max * float(np.sum(np.abs(step.alpha)))  # round-off of K a
        ):
            if step.L is not None:
                converged = True  # line 9: until convergence; the exact step would change nothing
                break
            confirm = True  # the step came from conjugate gradients: check with the exact one
            continue
        confirm = False
        if n_iter >= max_iter:
            break
        t, alpha_t, f_t, psi_t = 1.0, step.alpha, step.f, psi_new  # halve until Psi does not drop
        slack = 1e-12 * (1.0 + abs(psi))
        for _ in range(60):
            if psi_t >= psi - slack:
                break
            t *= 0.5
            alpha_t, f_t = alpha + t * d_alpha, f + t * d_f
            psi_t = _psi(alpha_t, f_t, y)
        else:  # no step raises Psi: f is the maximum to round-off
            if step.L is not None:
                converged = True
                break
            confirm = True
            continue
        alpha, f, psi = alpha_t, f_t, psi_t
        n_iter += 1
    if factored_at is not f:  # stopped by max_iter after a step from elsewhere
        cholesky_B(K, np.sqrt(_curvature(f)), work)
        n_factorisations += 1
    lml = psi - log_det_B(work)  # line 10: log q(y | X) = Psi(f_hat) - sum log L_nn
    return _Mode(f=f, alpha=alpha, W=_curvature(f), L=work, log_marginal_likelihood=lml, n_iter=n_iter,
                 converged=converged, n_factorisations=n_factorisations)


def _warn_mode(max_iter, stacklevel=3):
    warnings.warn(
        f"gpc_laplace: Newton's method did not converge in max_iter={max_iter} iterations; "
        f"increase max_iter",
        ConvergenceWarning,
        stacklevel=stacklevel,
    )


def _as_fit(mode, y):
    """The public result from the mode search's."""
    return GPCLaplace(
        f_hat=mode.f,
        log_marginal_likelihood=float(mode.log_marginal_likelihood),
        n_iter=int(mode.n_iter),
        converged=bool(mode.converged),
        alpha=mode.alpha,
        grad_log_lik=y - expit(mode.f),
        W_sqrt=np.sqrt(mode.W),
        L=mode.L,
    )


def gpc_laplace(K, y, max_iter=100, tol=1e-10, *, f0=None):
    r"""The Laplace approximation for GP classification: mode and log marginal likelihood.

    Newton's method on :math:`\Psi(\mathbf f) = \log p(\mathbf y \mid \mathbf f)
    - \frac12 \mathbf f^\top K^{-1} \mathbf f` as in GPML Algorithm 3.1: with
    :math:`W = \operatorname{diag}(p_n(1 - p_n))`,
    :math:`B = I + W^{1/2} K W^{1/2} = L L^\top`,

    .. math:: \mathbf b = W \mathbf f + \mathbf y - \mathbf p, \qquad
              \boldsymbol\alpha = \mathbf b - W^{1/2} B^{-1} W^{1/2} K \mathbf b, \qquad
              \mathbf f \leftarrow K \boldsymbol\alpha,

    where each step is halved until :math:`\Psi` does not decrease, so the iteration
    converges from any start, even for large signal variances where the plain Newton
    step overshoots.  For n >= 500 the solve with :math:`B` is first tried by conjugate
    gradients, preconditioned by :math:`B` with :math:`K` replaced by a rank-100 pivoted
    Cholesky approximation, which for smooth kernels replaces all but one
    :math:`O(n^3)` factorisation by :math:`O(n^2)` products; convergence is always
    confirmed by an exact step, so the result is that of the exact algorithm.  At the mode,

    .. math:: \log q(\mathbf y \mid X) = -\tfrac12 \boldsymbol\alpha^\top \hat{\mathbf f}
              + \log p(\mathbf y \mid \hat{\mathbf f}) - \sum_n \log L_{nn}.

    A data set with one class is a valid input: the Gaussian prior keeps the posterior
    proper, and the mode is finite (every :math:`\hat f_n` on that class's side).

    Book: chapter 9, equations ``eq-gpc-newton`` and ``eq-gpc-lml``.

    Parameters
    ----------
    K : array_like of shape (n, n)
        The prior covariance (kernel matrix) of the latent values at the training
        inputs; symmetric positive semi-definite (it need not be invertible).
    y : array_like of shape (n,), values in {0, 1}
    max_iter : int, default 100
    tol : float, default 1e-10
        Converged when the next Newton step would raise :math:`\Psi` by at most
        ``tol * (1 + |Psi|)`` and move no latent value by more than
        ``tol * (1 + max|f|)``; the current iterate is then returned with
        the Cholesky factor at that very point.
    f0 : array_like of shape (n,), optional
        Warm start, e.g. the ``f_hat`` of a fit with a nearby kernel: the first
        Newton step starts from it, and its result is kept only when it gives a
        higher :math:`\Psi` than :math:`\mathbf f = 0`.

    Returns
    -------
    GPCLaplace

    Warns
    -----
    ConvergenceWarning
        If ``max_iter`` iterations do not reach the tolerance.

    Examples
    --------
    >>> from blrlib import rbf_kernel
    >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    >>> fit = gpc_laplace(rbf_kernel(X, variance=4.0), np.array([0, 0, 1, 1]))
    >>> fit.converged, bool(fit.f_hat[0] < 0 < fit.f_hat[-1])
    (True, True)
    >>> round(fit.log_marginal_likelihood, 4)
    -2.483
    >>> bool(np.allclose(fit.alpha, fit.grad_log_lik))   # K^-1 f_hat = y - p at the mode
    True
    """
    K = as_kernel_matrix(K)
    n = K.shape[0]
    y = as_labels(y, n=n, against="K")
    max_iter = check_int(max_iter, "max_iter")
    tol = check_positive(tol, "tol")
    if f0 is not None:
        f0 = as_vector(f0, "f0", length=n)
    mode = _posterior_mode(K, y, max_iter, tol, f0)
    if not mode.converged:
        _warn_mode(max_iter)
    return _as_fit(mode, y)
