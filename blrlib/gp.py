r"""Gaussian-process classification with the Laplace approximation.

Book: chapter 9.  A Gaussian process prior :math:`\mathbf f \sim \mathcal N(0, K)` on the
latent function values replaces the Gaussian prior on the weights; the likelihood
is the logistic one of chapter 2, :math:`p(y_n \mid f_n) = \sigma(s_n f_n)` with
:math:`s_n = 2y_n - 1`.  As in chapter 5 the posterior over :math:`\mathbf f` is
approximated by a Gaussian at its mode :math:`\hat{\mathbf f}`, the maximum of

.. math:: \Psi(\mathbf f) = \log p(\mathbf y \mid \mathbf f) - \tfrac12 \mathbf f^\top K^{-1} \mathbf f,

with covariance :math:`(K^{-1} + W)^{-1}`, :math:`W = \operatorname{diag}(p_n(1 - p_n))`.
The code follows Rasmussen & Williams (2006), *Gaussian Processes for Machine
Learning* (GPML): Algorithm 3.1 (the mode by Newton's method and the Laplace
log marginal likelihood), Algorithm 3.2 (prediction) and Algorithm 5.1 (the
gradient of the log marginal likelihood with respect to the kernel
hyperparameters).  Labels are :math:`\{0, 1\}` (GPML writes :math:`t = (y + 1)/2`
for its :math:`\pm 1` labels, so its :math:`\mathbf t` is our :math:`\mathbf y`).

Every linear solve goes through the Cholesky factor :math:`L` of the well-conditioned
matrix :math:`B = I + W^{1/2} K W^{1/2}`, whose eigenvalues lie in
:math:`[1, 1 + \max_n W_{nn} \lambda_\text{max}(K)]`; :math:`K` itself is never
inverted, so a singular kernel matrix is fine.  Diagonal matrices are never formed.  For large n
most Newton steps solve with :math:`B` by preconditioned conjugate gradients instead (see
:func:`gpc_laplace`); the mode, :math:`L` and the marginal likelihood returned are always
those of an exact step.  The estimator built on these functions,
:class:`~blrlib.GPClassifier`, is in :mod:`blrlib.gp_classifier`.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.linalg.blas import ddot, dgemm, dgemv, dsymv
from scipy.linalg.lapack import dpotrf, dpotri
from scipy.special import expit, log_expit

from ._validation import as_kernel_matrix, as_labels, as_matrix, as_vector, check_int, check_positive
from .kernels import _rbf_from_sqdist, _squared_distances
from .logistic import _curvature, _signs
from .optimize import ConvergenceWarning
from .predictive import expected_sigmoid

__all__ = [
    "GPCLaplace",
    "GPCPrediction",
    "gpc_laplace",
    "gpc_predict",
    "gpc_log_marginal_likelihood",
]

_PREDICT_METHODS = ("probit", "quadrature", "mc", "plugin")
_EPS = np.finfo(float).eps


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------
def _short(v):
    return np.array2string(np.asarray(v), precision=4, separator=", ", threshold=6)


@dataclass(frozen=True)
class GPCLaplace:
    r"""The Laplace approximation of a GP classifier's posterior at fixed kernel (GPML Alg. 3.1).

    Attributes
    ----------
    f_hat : ndarray of shape (n,)
        The posterior mode :math:`\hat{\mathbf f}` of the latent function values.
    log_marginal_likelihood : float
        The Laplace estimate :math:`\log q(\mathbf y \mid X) = -\frac12 \mathbf a^\top \hat{\mathbf f}
        + \log p(\mathbf y \mid \hat{\mathbf f}) - \sum_n \log L_{nn}`.
    n_iter : int
        Newton iterations taken.
    converged : bool
        Whether the stopping criterion was met within ``max_iter`` iterations.
    a : ndarray of shape (n,)
        :math:`\mathbf a = K^{-1} \hat{\mathbf f}` as produced by the iteration
        (:math:`\hat{\mathbf f} = K \mathbf a`), the vector Algorithm 3.1 works with.
    grad_log_lik : ndarray of shape (n,)
        :math:`\nabla \log p(\mathbf y \mid \hat{\mathbf f}) = \mathbf y - \hat{\mathbf p}`;
        equals ``a`` at the exact mode.
    W_sqrt : ndarray of shape (n,)
        :math:`W^{1/2}`, the square roots of :math:`\hat p_n (1 - \hat p_n)`.
    L : ndarray of shape (n, n)
        Lower Cholesky factor of :math:`B = I + W^{1/2} K W^{1/2}` at the mode.
    K : ndarray of shape (n, n)
        The kernel matrix the approximation was computed for.
    """

    f_hat: np.ndarray
    log_marginal_likelihood: float
    n_iter: int
    converged: bool
    a: np.ndarray = field(repr=False)
    grad_log_lik: np.ndarray = field(repr=False)
    W_sqrt: np.ndarray = field(repr=False)
    L: np.ndarray = field(repr=False, compare=False)
    K: np.ndarray = field(repr=False, compare=False)

    def __repr__(self):
        return (
            f"GPCLaplace(n={self.f_hat.shape[0]}, f_hat={_short(self.f_hat)}, "
            f"log_marginal_likelihood={self.log_marginal_likelihood:.8g}, "
            f"n_iter={self.n_iter}, converged={self.converged})"
        )


@dataclass(frozen=True)
class GPCPrediction:
    r"""Predictions of a GP classifier at m test points (GPML Alg. 3.2).

    Attributes
    ----------
    prob : ndarray of shape (m,)
        :math:`p(y_* = 1 \mid \mathbf x_*, \mathcal D)` under the chosen approximation.
    mean : ndarray of shape (m,)
        Mean of the latent :math:`f_*` under the Laplace approximation.
    var : ndarray of shape (m,)
        Variance of the latent :math:`f_*`.
    method : str
        How ``prob`` was computed from ``mean`` and ``var``.
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


# --------------------------------------------------------------------------
# The mode: GPML Algorithm 3.1 with a line search
# --------------------------------------------------------------------------
def _psi(a, f, y):
    r""":math:`\Psi = \log p(\mathbf y \mid \mathbf f) - \frac12 \mathbf a^\top \mathbf f`, stable for any f."""
    return float(np.sum(log_expit(_signs(y) * f)) - 0.5 * (a @ f))


def _factor(K, f, work=None, diagonal=False):
    """W^1/2 and the lower Cholesky factor of B = I + W^1/2 K W^1/2 at f (Alg. 3.1, lines 4-5).

    ``work``, an n x n Fortran-ordered array, receives B and then L (LAPACK potrf in
    place), so a caller that factorises repeatedly can reuse one buffer; the L returned
    is then that buffer, valid until the next call with it.  ``diagonal`` says that K
    is diagonal (as the RBF kernel is, to the last bit, for a length scale far below
    the distances between inputs): then so are B and L, and L_nn = sqrt(B_nn), which is
    what potrf computes, is formed directly.
    """
    W = _curvature(f)  # p (1 - p), without cancellation for large |f|
    sW = np.sqrt(W)
    n = K.shape[0]
    if work is None:
        work = np.empty((n, n), order="F")
    if diagonal:
        work.fill(0.0)
        d = np.diag(K) * sW
        d *= sW
        d += 1.0
        work.reshape(-1, order="F")[:: n + 1] = np.sqrt(d)
        return W, sW, work
    # B is symmetric, so writing it row-wise into the C-ordered view work.T fills work with B
    B = work.T
    np.multiply(K, sW[:, None], out=B)
    B *= sW[None, :]
    B.reshape(-1)[:: n + 1] += 1.0
    L, info = dpotrf(work, lower=1, clean=1, overwrite_a=1)
    if info != 0:
        raise ValueError(
            "K must be positive semi-definite: B = I + W^1/2 K W^1/2 is not positive definite "
            f"(LAPACK potrf failed at leading minor {info}); check the kernel matrix"
        )
    return W, sW, L


def _symv(K, v):
    """K @ v for a symmetric K, through SciPy's BLAS ``symv`` (which reads one triangle).

    NumPy and SciPy may each bundle their own OpenBLAS with its own thread pool; the
    Cholesky factorisations run in SciPy's, and a NumPy matrix product in between
    leaves NumPy's threads spinning on the cores the next factorisation needs (about
    doubling its time on a 2-core machine), so the dense products here use SciPy's BLAS
    as well.  ``symv`` reads half the matrix that ``gemv`` reads, and a matrix-vector
    product is limited by memory traffic, so it takes about half the time.  For a
    C-ordered K the triangle read is the one the factorisation of B reads.
    """
    if K.flags.f_contiguous:
        return dsymv(1.0, K, v, lower=1)
    if K.flags.c_contiguous:
        return dsymv(1.0, K.T, v, lower=1)  # K.T is K, in Fortran order
    return K @ v


def _pcg(apply_B, r, precondition, rtol, max_iter):
    """Preconditioned conjugate gradients for B x = r, B symmetric positive definite.

    Stops when the residual norm falls to ``rtol * |r|``; returns ``None`` when
    ``max_iter`` iterations do not get there (the caller then factorises B).
    """
    x = np.zeros_like(r)
    res = r.copy()
    stop = rtol * float(np.sqrt(r @ r))
    if stop == 0.0:
        return x
    z = precondition(res)
    p = z.copy()
    rz = float(res @ z)
    for _ in range(max_iter):
        Bp = apply_B(p)
        alpha = rz / float(p @ Bp)
        x += alpha * p
        res -= alpha * Bp
        if float(np.sqrt(res @ res)) <= stop:
            return x
        z = precondition(res)
        rz_new = float(res @ z)
        p *= rz_new / rz
        p += z
        rz = rz_new
    return None


def _pivoted_cholesky(K, max_rank, rtol=1e-8):
    """Partial Cholesky factorisation of a PSD K with diagonal pivoting: K ~ V V^T + diag(d).

    Each step takes the row with the largest remaining diagonal (the input least
    explained so far), so for a smooth kernel, whose eigenvalues decay fast, a
    rank far below n leaves a small residual K - V V^T; ``d`` is that residual's
    diagonal.  Stops at ``max_rank`` columns or when no diagonal exceeds ``rtol``
    times the largest diagonal of K.  Cost O(n max_rank^2); K is read one row per
    step.  (Harbrecht, Peters and Schneider 2012.)
    """
    n = K.shape[0]
    d = np.diag(K).copy()
    stop = rtol * float(np.max(d))
    V = np.zeros((n, min(n, max_rank)), order="F")
    k = 0
    while k < V.shape[1]:
        i = int(np.argmax(d))
        if d[i] <= stop:
            break
        col = K[i].copy()  # row i = column i of the symmetric K
        if k:
            col = dgemv(-1.0, V[:, :k], V[i, :k], beta=1.0, y=col, overwrite_y=1)
        col /= np.sqrt(d[i])
        V[:, k] = col
        d -= col * col
        d[i] = 0.0
        np.maximum(d, 0.0, out=d)
        k += 1
    return V[:, :k], d


# Conjugate gradients replace the factorisation of B in the Newton steps for n >= _CG_MIN_N,
# with at most n // _CG_ITER_DIVISOR iterations per solve: on the project's machine one
# iteration (a matrix-vector product with K) costs about 1/150 of a factorisation at n = 4000.
_CG_MIN_N = 500
_CG_ITER_DIVISOR = 50
_CG_RTOL = 1e-10
_CG_RANK = 100  # rank of the pivoted Cholesky factor of K in the preconditioner


class _NewtonSteps:
    """Full Newton steps of Alg. 3.1 (lines 4-8) for one kernel matrix K.

    The linear solve with B = I + W^1/2 K W^1/2 in line 7 is done in one of two ways:

    * exactly, with the Cholesky factor L of B at the current f (line 5), an O(n^3)
      factorisation;
    * for n >= 500, first by preconditioned conjugate gradients (PCG), O(n^2) per
      iteration.  The preconditioner is B with K replaced by a low-rank-plus-diagonal
      approximation V V^T + diag(d) (a pivoted Cholesky factor, computed once per
      K), inverted for the current W by the Woodbury identity in O(n r^2).  When
      PCG does not reach its tolerance within n / 50 iterations, B is factorised,
      and the remaining steps for this K are exact.

    Either way the step is a consistent pair (a, f = K a), so Psi is exact; PCG
    only makes the direction slightly inexact.  The mode search confirms
    convergence with an exact step, so the returned mode, its L and the log marginal
    likelihood are those of the exact algorithm.
    """

    def __init__(self, K, y, work, diagonal):
        n = K.shape[0]
        self.K, self.y, self.work, self.diagonal = K, y, work, diagonal
        self.cg_max_iter = 0 if diagonal or n < _CG_MIN_N else n // _CG_ITER_DIVISOR
        if self.cg_max_iter:
            self.V, self.d = _pivoted_cholesky(K, _CG_RANK)
            if self.V.shape[1] == 0:  # no positive diagonal: K is not a kernel matrix, let potrf say so
                self.cg_max_iter = 0
        self.factored = None  # the iterate f at which L = self.work factorises B
        self.n_factorisations = 0

    def factor(self, f):
        self.W, self.sW, self.L = _factor(self.K, f, self.work, self.diagonal)  # lines 4-5
        self.factored = f
        self.n_factorisations += 1

    def _preconditioner(self, W, sW):
        """v -> P^-1 v for P = I + W^1/2 (V V^T + diag(d)) W^1/2 = diag(g) + U U^T, by Woodbury."""
        g = 1.0 + W * self.d
        U = sW[:, None] * self.V
        Ug = U / g[:, None]
        C = dgemm(1.0, U, Ug, trans_a=1)  # U^T diag(g)^-1 U, r x r
        C[np.diag_indices_from(C)] += 1.0
        C_factor = cho_factor(C, lower=True, check_finite=False)

        def apply(v):
            return v / g - dgemv(1.0, Ug, cho_solve(C_factor, dgemv(1.0, Ug, v, trans=1), check_finite=False))

        return apply

    def _cg_solve(self, W, sW, r):
        K = self.K
        x = _pcg(lambda v: v + sW * _symv(K, sW * v), r, self._preconditioner(W, sW), _CG_RTOL, self.cg_max_iter)
        if x is None:
            self.cg_max_iter = 0  # the preconditioner does not suit this K: exact steps from now on
        return x

    def step(self, f, a=None, exact=False):
        """The full Newton step from f: (new a, new f = K a, whether B was solved exactly).

        With ``a = K^-1 f`` given, the step is solved for the increment: with the
        gradient g = y - p - a of Psi, da = g - W^1/2 B^-1 W^1/2 K g (so that
        df = K da = (K^-1 + W)^-1 g), which equals line 7's a minus the current a; its
        right-hand side vanishes at the mode, so the tolerance of conjugate gradients,
        relative to it, tightens as the iteration converges.  Without ``a`` (a warm
        start not consistent with K) it is line 7 itself.
        """
        if exact and self.factored is not f:
            self.factor(f)
        if self.factored is f:
            W, sW = self.W, self.sW
        else:
            W = _curvature(f)  # line 4: p (1 - p), without cancellation for large |f|
            sW = np.sqrt(W)
        if a is None:
            b = W * f + (self.y - expit(f))  # line 6
        else:
            b = (self.y - expit(f)) - a  # the gradient of Psi; line 6's b is W f + a + this
        r = sW * _symv(self.K, b)
        x = None
        if self.factored is not f and self.cg_max_iter:
            x = self._cg_solve(W, sW, r)
        if x is None:
            if self.factored is not f:
                self.factor(f)
            x = cho_solve((self.L, True), r, check_finite=False)
        a_new = b - sW * x  # line 7
        if a is not None:
            a_new += a
        return a_new, _symv(self.K, a_new), self.factored is f  # line 8


def _mode(K, y, max_iter=100, tol=1e-10, f0=None, work=None):
    """Newton's method for the mode of the latent posterior (GPML Alg. 3.1), safeguarded.

    Works with a = K^-1 f alongside f = K a, so Psi never needs K^-1.  Each full
    Newton step is halved until Psi does not decrease (Psi is concave, so the
    Newton direction is an ascent direction and halving succeeds).  At each iterate
    the next Newton step is computed; when it would change neither Psi nor f
    noticeably, the current f is the mode.  Steps may come from conjugate gradients
    (see ``_NewtonSteps``), but that verdict is always confirmed by an exact step with
    the Cholesky factor at the final f, and the L returned is the one at that f, so
    the log marginal likelihood and the gradient are consistent with f_hat.

    A warm start f0 need not be consistent with K (it is typically the mode for a
    nearby kernel): one full Newton step from it gives a consistent pair (a, f),
    kept only if its Psi beats that of f = 0.

    ``work`` (optional, n x n, Fortran-ordered) is the buffer for B and L; the L
    returned lives in it.
    """
    n = K.shape[0]
    a = np.zeros(n)
    f = np.zeros(n)
    psi = -n * np.log(2.0)  # Psi(0)
    n_iter = 0
    k_max = float(np.max(np.diag(K)))
    if work is None:
        work = np.empty((n, n), order="F")  # B and its factor L, overwritten by each factorisation
    diagonal = np.count_nonzero(K) == np.count_nonzero(np.diag(K))
    steps = _NewtonSteps(K, y, work, diagonal)

    if f0 is not None:
        a1, f1, _ = steps.step(f0)  # lines 4-8 from the warm start
        psi1 = _psi(a1, f1, y)
        if psi1 > psi:
            a, f, psi, n_iter = a1, f1, psi1, 1
    converged = confirm = False
    while True:
        a_new, f_new, exact = steps.step(f, a, exact=confirm)  # lines 4-8
        da, df = a_new - a, f_new - f
        psi_new = _psi(a_new, f_new, y)
        gain, step = psi_new - psi, float(np.max(np.abs(df)))
        if gain <= tol * (1.0 + abs(psi)) and (
            step <= tol * (1.0 + float(np.max(np.abs(f))))
            or step <= 16 * _EPS * k_max * float(np.sum(np.abs(a_new)))  # below the round-off of f = K a
        ):
            if exact:
                converged = True  # the next step would change nothing: f is the mode
                break
            confirm = True  # the step came from conjugate gradients: check with the exact one
            continue
        confirm = False
        if n_iter >= max_iter:
            break
        # safeguard: halve the step until Psi does not decrease (up to round-off)
        slack = 1e-12 * (1.0 + abs(psi))
        t, a_t, f_t, psi_t = 1.0, a_new, f_new, psi_new
        for _ in range(60):
            if psi_t >= psi - slack:
                break
            t *= 0.5
            a_t, f_t = a + t * da, f + t * df
            psi_t = _psi(a_t, f_t, y)
        else:  # no step increases Psi: we are at the maximum to round-off
            converged = exact
            if converged:
                break
            confirm = True
            continue
        a, f, psi = a_t, f_t, psi_t
        n_iter += 1
    if steps.factored is not f:  # stopped by max_iter after an inexact step
        steps.factor(f)
    m = _mode_result(a, f, steps.W, steps.sW, steps.L, psi, n_iter, converged, diagonal)
    m["n_factorisations"] = steps.n_factorisations
    return m


def _mode_result(a, f, W, sW, L, psi, n_iter, converged, diagonal=False):
    lml = psi - float(np.sum(np.log(np.diag(L))))  # line 10
    return {"a": a, "f": f, "W": W, "sW": sW, "L": L, "lml": lml, "n_iter": n_iter, "converged": converged,
            "diagonal": bool(diagonal)}


def _make_fit(K, y, m):
    return GPCLaplace(
        f_hat=m["f"],
        log_marginal_likelihood=float(m["lml"]),
        n_iter=int(m["n_iter"]),
        converged=bool(m["converged"]),
        a=m["a"],
        grad_log_lik=y - expit(m["f"]),
        W_sqrt=m["sW"],
        L=m["L"],
        K=K,
    )


def _warn_mode(max_iter):
    warnings.warn(
        f"gpc_laplace: Newton's method did not converge in max_iter={max_iter} iterations; "
        f"increase max_iter",
        ConvergenceWarning,
        stacklevel=3,
    )


def gpc_laplace(K, y, max_iter=100, tol=1e-10, *, f0=None):
    r"""The Laplace approximation for GP classification: mode and log marginal likelihood.

    Newton's method on :math:`\Psi(\mathbf f) = \log p(\mathbf y \mid \mathbf f)
    - \frac12 \mathbf f^\top K^{-1} \mathbf f` as in GPML Algorithm 3.1: with
    :math:`W = \operatorname{diag}(p_n(1 - p_n))`,
    :math:`B = I + W^{1/2} K W^{1/2} = L L^\top`,

    .. math:: \mathbf b = W \mathbf f + \mathbf y - \mathbf p, \qquad
              \mathbf a = \mathbf b - W^{1/2} B^{-1} W^{1/2} K \mathbf b, \qquad
              \mathbf f \leftarrow K \mathbf a,

    where each step is halved until :math:`\Psi` does not decrease, so the iteration
    converges from any start, even for large signal variances where the plain
    Newton step overshoots.  For n >= 500 the solve with :math:`B` is first tried by
    conjugate gradients, preconditioned by :math:`B` with :math:`K` replaced by a
    rank-100 pivoted Cholesky approximation (cheap to invert for each new :math:`W`),
    which for smooth kernels replaces all but one :math:`O(n^3)` factorisation by
    :math:`O(n^2)` matrix-vector products; convergence is always confirmed by an exact
    step with the factor of :math:`B` at the returned mode, so the result is that of the
    exact algorithm.  At the mode,

    .. math:: \log q(\mathbf y \mid X) = -\tfrac12 \mathbf a^\top \hat{\mathbf f}
              + \log p(\mathbf y \mid \hat{\mathbf f}) - \sum_n \log L_{nn}.

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
    """
    K = as_kernel_matrix(K)
    n = K.shape[0]
    y = as_labels(y, n=n, against="K")
    max_iter = check_int(max_iter, "max_iter")
    tol = check_positive(tol, "tol")
    if f0 is not None:
        f0 = as_vector(f0, "f0", length=n)
    m = _mode(K, y, max_iter, tol, f0)
    if not m["converged"]:
        _warn_mode(max_iter)
    return _make_fit(K, y, m)


# --------------------------------------------------------------------------
# Prediction: GPML Algorithm 3.2
# --------------------------------------------------------------------------
def _predict(fit, K_star, k_star_star, method="probit", n_samples=10_000, rng=None):
    mean = K_star @ fit.grad_log_lik  # line 4: k_*^T (y - p)
    v = solve_triangular(fit.L, fit.W_sqrt[:, None] * K_star.T, lower=True, check_finite=False)  # line 5
    var = np.maximum(k_star_star - np.einsum("ij,ij->j", v, v), 0.0)  # line 6, clipped at 0
    if method == "plugin":
        prob = expit(mean)
    else:  # line 7: the average of sigma(f_*) over N(mean, var)
        kwargs = {"n_samples": n_samples, "rng": rng} if method == "mc" else {}
        prob = np.atleast_1d(expected_sigmoid(mean, var, method=method, **kwargs))
    return GPCPrediction(prob=prob, mean=mean, var=var, method=method)


def _check_method(method):
    if method not in _PREDICT_METHODS:
        raise ValueError(f"method must be one of {_PREDICT_METHODS}, got {method!r}")
    return method


def gpc_predict(fit, K_star, k_star_star, method="probit", *, n_samples=10_000, rng=None):
    r"""Predictive probabilities of a GP classifier (GPML Algorithm 3.2).

    Under the Laplace approximation the latent value at a test input is Gaussian with

    .. math:: \mu_* = \mathbf k_*^\top (\mathbf y - \hat{\mathbf p}), \qquad
              \sigma_*^2 = k(\mathbf x_*, \mathbf x_*) - \mathbf v^\top \mathbf v, \quad
              \mathbf v = L^{-1} W^{1/2} \mathbf k_*,

    and :math:`p(y_* = 1) = E[\sigma(f_*)]` is computed from these moments by
    :func:`~blrlib.expected_sigmoid` (chapter 6).

    Book: chapter 9, equations ``eq-gpc-latent-moments`` and ``eq-gpc-predictive``.

    Parameters
    ----------
    fit : GPCLaplace
        From :func:`gpc_laplace`.
    K_star : array_like of shape (m, n)
        ``K_star[i, j] = k(x_star_i, x_j)``, test points against training points.
    k_star_star : array_like of shape (m,)
        The prior variances :math:`k(\mathbf x_*, \mathbf x_*)` of the test points.
    method : {"probit", "quadrature", "mc", "plugin"}, default "probit"
        ``"probit"``: :math:`\sigma(\kappa(\sigma_*^2)\mu_*)` (equation
        ``eq-probit-approx``); ``"quadrature"``: the integral to about 1e-12;
        ``"mc"``: Monte Carlo with ``n_samples`` draws from ``rng``;
        ``"plugin"``: :math:`\sigma(\mu_*)`, ignoring the latent variance.
    n_samples, rng
        Passed to :func:`~blrlib.expected_sigmoid` for ``method="mc"``.

    Returns
    -------
    GPCPrediction

    Examples
    --------
    >>> from blrlib import rbf_kernel
    >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    >>> fit = gpc_laplace(rbf_kernel(X, variance=4.0), np.array([0, 0, 1, 1]))
    >>> X_new = np.array([[0.0], [1.5], [10.0]])
    >>> pred = gpc_predict(fit, rbf_kernel(X_new, X, variance=4.0), np.full(3, 4.0))
    >>> pred.prob.round(3)
    array([0.5 , 0.75, 0.5 ])
    >>> pred.var.round(3)  # far from the data the prior variance returns
    array([2.861, 1.987, 4.   ])
    """
    if not isinstance(fit, GPCLaplace):
        raise TypeError(f"fit must be a GPCLaplace (from gpc_laplace), got {type(fit).__name__}")
    n = fit.f_hat.shape[0]
    K_star = as_matrix(K_star, "K_star")
    if K_star.shape[1] != n:
        raise ValueError(
            f"K_star must have shape (m, {n}) (test points x {n} training points), got shape {K_star.shape}"
        )
    k_star_star = as_vector(k_star_star, "k_star_star", length=K_star.shape[0])
    if np.any(k_star_star < 0):
        raise ValueError(f"k_star_star must be >= 0 (prior variances), got {k_star_star.min():g}")
    method = _check_method(method)
    return _predict(fit, K_star, k_star_star, method, n_samples, rng)


# --------------------------------------------------------------------------
# The gradient of the log marginal likelihood: GPML Algorithm 5.1
# --------------------------------------------------------------------------
def _lml_gradient(K, y, m, dKs, scales=None, overwrite=False):
    r"""Gradient of the Laplace log marginal likelihood for kernel derivatives ``dKs`` (Alg. 5.1).

    B^-1 comes from the Cholesky factor (LAPACK potri, which fills the lower triangle;
    the strict upper one keeps the zeros of L).  R = W^1/2 B^-1 W^1/2 (line 7) is
    never formed: R v = W^1/2 (B^-1 (W^1/2 v)) is a symmetric matrix-vector product,
    and for symmetric C

        tr(R C) = sum_ij B^-1_ij (W^1/2 C W^1/2)_ij
                = 2 sum(tril(B^-1) * M) - diag(B^-1) . diag(M),   M = W^1/2 C W^1/2,

    which for C = K is simply tr(B^-1 (B - I)) = n - tr(B^-1).  The diagonal of the
    posterior covariance, diag((K^-1 + W)^-1) = (1 - diag(B^-1)) / W, enters line 9
    multiplied by W, so no division is needed.  ``dKs`` are symmetric C-ordered
    matrices; the derivative C_j is ``scales[j] * dKs[j]`` (all ones when ``scales``
    is None).  With ``overwrite`` the caller's buffers are scratch: B^-1 is formed in
    L's own memory (when L is Fortran-ordered; ``m["L"]`` is then set to None), and
    the ``dKs`` other than K itself are overwritten.
    """
    sW, L, a = m["sW"], m["L"], m["a"]
    n = K.shape[0]
    if scales is None:
        scales = [1.0] * len(dKs)
    p = expit(m["f"])
    if m.get("diagonal"):  # L, B and B^-1 are diagonal
        B_inv = np.zeros((n, n), order="F")
        inv_diag_L = 1.0 / np.diag(L)
        B_inv.reshape(-1, order="F")[:: n + 1] = inv_diag_L * inv_diag_L
    else:
        overwrite = overwrite and L.flags.f_contiguous
        B_inv, info = dpotri(L, lower=1, overwrite_c=int(overwrite))  # B^-1 in (a copy of) L, Fortran-ordered
        if overwrite:
            m["L"] = None  # its memory now holds B^-1
        if info != 0:  # pragma: no cover - L comes from a successful Cholesky
            raise np.linalg.LinAlgError(f"potri failed with info={info}")
    diag_B_inv = np.diag(B_inv).copy()
    # line 9: s2 = d log q / d f_hat = -1/2 diag((K^-1 + W)^-1) * dW/df, with dW/df = W (1 - 2p);
    # in terms of the third derivative, d^3 log p / df^3 = -W (1 - 2p), this is +1/2 diag(...) * d^3 log p
    s2 = -0.5 * (1.0 - diag_B_inv) * (1.0 - 2.0 * p)
    y_p = y - p
    grad = np.empty(len(dKs))
    df_dtheta = np.empty((n, len(dKs)))
    for j, (C, c) in enumerate(zip(dKs, scales)):  # line 11: C_j = c * C
        s1 = 0.5 * (a @ (c * _symv(C, a)))  # line 12, first term
        b = c * _symv(C, y_p)  # line 13
        s3 = b - _symv(K, sW * dsymv(1.0, B_inv, sW * b, lower=1))  # line 14: (I + K W)^-1 b = d f_hat / d theta_j
        if C is K:
            tr_RC = c * (n - float(np.sum(diag_B_inv)))
        else:
            M = C if overwrite else C.copy()
            M *= sW[:, None]
            M *= sW[None, :]
            # B_inv.T is C-ordered, and sum(B_inv.T * M) = sum(B_inv * M) as M is symmetric
            tr_RC = c * (2.0 * float(ddot(B_inv.T.reshape(-1), M.reshape(-1))) - float(diag_B_inv @ np.diag(M)))
        grad[j] = s1 - 0.5 * tr_RC + s2 @ s3  # lines 12 and 15
        df_dtheta[:, j] = s3
    return grad, df_dtheta


def _rbf_lml(D, y, variance, lengthscale, eval_gradient=True, max_iter=100, tol=1e-10, f0=None, ws=None):
    """Log marginal likelihood (and gradient in log hyperparameters) of the RBF kernel from squared distances.

    ``ws``, optional, is a dict of n x n buffers reused from call to call (by the
    hyperparameter search, which keeps neither K nor L): with it, K, L and K * D are
    computed in those buffers, and with ``eval_gradient`` the L in the result is
    consumed by the gradient (``m["L"]`` is None).
    """
    if ws is None:
        K = _rbf_from_sqdist(D, variance, lengthscale)
        work = K_D = None
    else:
        n = D.shape[0]
        K = ws.get("K")
        if K is None:
            K = ws["K"] = np.empty((n, n))
            ws["L"] = np.empty((n, n), order="F")
            ws["K_D"] = np.empty((n, n))
        # the same operations as _rbf_from_sqdist, in place
        np.multiply(-0.5 / lengthscale**2, D, out=K)
        np.exp(K, out=K)
        np.multiply(variance, K, out=K)
        work, K_D = ws["L"], ws["K_D"]
    m = _mode(K, y, max_iter, tol, f0, work)
    if not eval_gradient:
        return m["lml"], None, m, K
    dK_dlog_variance = K  # d K / d log sigma^2 = K
    K_D = np.multiply(K, D, out=K_D)  # d K / d log l = K * D / l^2, the scale applied inside _lml_gradient
    grad, m["df_dtheta"] = _lml_gradient(K, y, m, [dK_dlog_variance, K_D], [1.0, 1.0 / lengthscale**2],
                                         overwrite=ws is not None)
    return m["lml"], grad, m, K


def gpc_log_marginal_likelihood(X, y, variance, lengthscale, eval_gradient=True, *, max_iter=100, tol=1e-10,
                                init=None):
    r"""Laplace log marginal likelihood of GP classification with the RBF kernel, and its gradient.

    The gradient is taken with respect to :math:`\boldsymbol\theta = (\log\sigma^2, \log\ell)`
    and follows GPML Algorithm 5.1: the explicit part

    .. math:: \frac{\partial \log q}{\partial\theta_j}\Big|_{\hat{\mathbf f}} =
              \tfrac12 \mathbf a^\top C_j \mathbf a - \tfrac12 \operatorname{tr}(R\, C_j),
              \qquad C_j = \frac{\partial K}{\partial\theta_j}, \quad
              R = W^{1/2} B^{-1} W^{1/2},

    plus the implicit part through the mode, which moves as the kernel changes:
    :math:`\sum_n \frac{\partial \log q}{\partial \hat f_n}\frac{\partial \hat f_n}{\partial \theta_j}`
    with :math:`\frac{\partial \log q}{\partial \hat f_n} = -\frac12 [(K^{-1} + W)^{-1}]_{nn}
    \frac{\partial W_{nn}}{\partial \hat f_n}` and
    :math:`\frac{\partial \hat{\mathbf f}}{\partial\theta_j} = (I + K W)^{-1} C_j (\mathbf y - \hat{\mathbf p})`.
    For the RBF kernel :math:`\partial K / \partial \log\sigma^2 = K` and
    :math:`\partial K_{ij} / \partial \log\ell = K_{ij} \|\mathbf x_i - \mathbf x_j\|^2 / \ell^2`.

    Book: chapter 9, equation ``eq-gpc-lml-grad``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    variance : float
        :math:`\sigma^2 > 0`.
    lengthscale : float
        :math:`\ell > 0`.
    eval_gradient : bool, default True
    max_iter, tol
        Passed to the mode search (see :func:`gpc_laplace`).
    init : GPCLaplace, optional
        A previous fit on the same data (for example at nearby hyperparameters) whose
        ``f_hat`` warm-starts Newton's method.

    Returns
    -------
    lml : float
    grad : ndarray of shape (2,)
        :math:`(\partial/\partial\log\sigma^2, \partial/\partial\log\ell)`; only
        when ``eval_gradient`` is true.

    Examples
    --------
    >>> from blrlib import datasets
    >>> X, y = datasets.two_moons(40, noise=0.2, seed=1)
    >>> lml, grad = gpc_log_marginal_likelihood(X, y, variance=2.0, lengthscale=0.5)
    >>> h = 1e-5
    >>> up = gpc_log_marginal_likelihood(X, y, 2.0, 0.5 * np.exp(h), eval_gradient=False)
    >>> down = gpc_log_marginal_likelihood(X, y, 2.0, 0.5 * np.exp(-h), eval_gradient=False)
    >>> bool(abs((up - down) / (2 * h) - grad[1]) < 1e-6)
    True
    """
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    variance = check_positive(variance, "variance")
    lengthscale = check_positive(lengthscale, "lengthscale")
    max_iter = check_int(max_iter, "max_iter")
    tol = check_positive(tol, "tol")
    f0 = None
    if init is not None:
        if not isinstance(init, GPCLaplace):
            raise TypeError(f"init must be a GPCLaplace or None, got {type(init).__name__}")
        if init.f_hat.shape[0] != X.shape[0]:
            raise ValueError(f"init was fitted on {init.f_hat.shape[0]} points but X has {X.shape[0]} rows")
        f0 = init.f_hat
    lml, grad, m, _ = _rbf_lml(_squared_distances(X), y, variance, lengthscale, eval_gradient, max_iter, tol, f0)
    if not m["converged"]:
        _warn_mode(max_iter)
    return (lml, grad) if eval_gradient else lml
