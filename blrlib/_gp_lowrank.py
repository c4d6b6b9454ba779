r"""Fast paths for large n: a kernel matrix as low rank plus diagonal, :math:`K \approx V V^\top + D`.

The textbook algorithms of chapters 9 and 11 factorise an n x n matrix at every step
(:math:`O(n^3)`).  For a smooth kernel the eigenvalues of :math:`K` decay fast, so a
pivoted Cholesky factor :math:`V` of rank :math:`r \ll n` plus the diagonal :math:`D` of
what it leaves out reproduces :math:`K` closely, and that structure is cheap to invert
(the Woodbury identity, :math:`O(n r^2)`).  Two algorithms use it, and both confirm
their answer with the exact, dense computation, so what they return is that of the
textbook algorithm (the tests check it):

* Newton's method for the Laplace mode (Alg. 3.1): :class:`CGNewtonSteps` solves the
  linear system of each Newton step by conjugate gradients, preconditioned with
  :math:`B` built from :math:`V V^\top + D` in place of :math:`K`; only matrix-vector
  products with the exact :math:`K` are needed, :math:`O(n^2)` each.  The mode search
  in :mod:`blrlib.gp_laplace` confirms convergence with an exact step.
* Expectation propagation (Alg. 3.5, in parallel form): :class:`LowRankEPPosterior`
  gives the marginals of the EP posterior for :math:`K \approx V V^\top + D` in
  :math:`O(n r^2)`; :mod:`blrlib.gp_ep` iterates with it to that approximate fixed point
  and then polishes with exact sweeps.
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.linalg.blas import dgemm, dgemv
from scipy.special import expit

from ._gp_linalg import symv

# Conjugate gradients replace the factorisation of B in the Newton steps for n >= CG_MIN_N,
# with at most n // CG_ITER_DIVISOR iterations per solve: on the project's machine one
# iteration (a matrix-vector product with K) costs about 1/150 of a factorisation at n = 4000.
CG_MIN_N = 500
CG_ITER_DIVISOR = 50
CG_RTOL = 1e-10
CG_RANK = 100  # rank of the pivoted Cholesky factor of K in the preconditioner


def pivoted_cholesky(K, max_rank, rtol=1e-8):
    """Partial Cholesky factorisation of a PSD K with diagonal pivoting: K ~ V V^T + diag(d).

    Each step takes the row with the largest remaining diagonal (the input least
    explained so far), so for a smooth kernel a rank far below n leaves a small residual
    K - V V^T; ``d`` is that residual's diagonal, and since the residual is PSD its
    entries are bounded by ``sqrt(d_i d_j)``.  Stops at ``max_rank`` columns or when no
    diagonal exceeds ``rtol`` times the largest diagonal of K.  Cost O(n max_rank^2); K
    is read one row per step.  (Harbrecht, Peters and Schneider 2012.)
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


def pcg(apply_A, r, precondition, rtol, max_iter):
    """Preconditioned conjugate gradients for A x = r, A symmetric positive definite.

    Stops when the residual norm falls to ``rtol * |r|``; returns ``None`` when
    ``max_iter`` iterations do not get there (the caller then factorises).
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
        Ap = apply_A(p)
        step = rz / float(p @ Ap)
        x += step * p
        res -= step * Ap
        if float(np.sqrt(res @ res)) <= stop:
            return x
        z = precondition(res)
        rz_new = float(res @ z)
        p *= rz_new / rz
        p += z
        rz = rz_new
    return None


def woodbury_preconditioner(V, d, W):
    r"""``v -> P^{-1} v`` for :math:`P = I + W^{1/2} (V V^\top + D) W^{1/2} = G + U U^\top`.

    :math:`G = \operatorname{diag}(1 + W d)`, :math:`U = W^{1/2} V`; by the Woodbury identity
    :math:`P^{-1} = G^{-1} - G^{-1} U (I + U^\top G^{-1} U)^{-1} U^\top G^{-1}`, an r x r
    factorisation and :math:`O(n r)` per application.
    """
    g = 1.0 + W * d
    U = np.sqrt(W)[:, None] * V
    Ug = U / g[:, None]
    C = dgemm(1.0, U, Ug, trans_a=1)  # U^T G^-1 U, r x r
    C[np.diag_indices_from(C)] += 1.0
    C_factor = cho_factor(C, lower=True, check_finite=False)

    def apply(v):
        return v / g - dgemv(1.0, Ug, cho_solve(C_factor, dgemv(1.0, Ug, v, trans=1), check_finite=False))

    return apply


class CGNewtonSteps:
    """Newton steps of Alg. 3.1 (lines 4-8) with the solve by B done by preconditioned CG.

    Built once per kernel matrix (the pivoted Cholesky factor of K is the expensive
    part, O(n r^2)).  :meth:`step` returns the same step as the exact one up to the CG
    tolerance, or ``None`` when CG does not converge within n / 50 iterations (for very
    short length scales, where K is far from low rank); after a failure every later call
    returns ``None`` at once, so the caller switches to exact steps for this K.
    """

    def __init__(self, K, y):
        n = K.shape[0]
        self.K, self.y = K, y
        self.max_iter = n // CG_ITER_DIVISOR
        self.V, self.d = pivoted_cholesky(K, CG_RANK)
        if self.V.shape[1] == 0:  # no positive diagonal: not a kernel matrix, let potrf say so
            self.max_iter = 0

    def step(self, f, alpha, W):
        r"""The full Newton step from ``f`` (with ``alpha`` = K^-1 f): new (alpha, f), or None.

        Written for the increment: with the gradient :math:`\mathbf g = \mathbf y - \mathbf p
        - \boldsymbol\alpha` of :math:`\Psi`, line 7 is :math:`\boldsymbol\alpha + \mathbf g -
        W^{1/2} B^{-1} W^{1/2} K \mathbf g`.  The right-hand side :math:`W^{1/2} K \mathbf g`
        vanishes at the mode, so the CG tolerance, relative to it, tightens as the iteration
        converges.  ``alpha=None`` (a warm start not consistent with K) solves line 7 as
        printed, with :math:`\mathbf b = W \mathbf f + \mathbf y - \mathbf p`.
        """
        if not self.max_iter:
            return None
        sW = np.sqrt(W)
        g = (self.y - expit(f)) - alpha if alpha is not None else W * f + (self.y - expit(f))
        K = self.K
        x = pcg(lambda v: v + sW * symv(K, sW * v), sW * symv(K, g),
                woodbury_preconditioner(self.V, self.d, W), CG_RTOL, self.max_iter)
        if x is None:
            self.max_iter = 0  # the preconditioner does not suit this K: exact steps from now on
            return None
        alpha_new = g - sW * x
        if alpha is not None:
            alpha_new += alpha
        return alpha_new, symv(K, alpha_new)


@dataclass(frozen=True)
class LowRankMarginals:
    """Marginals of the EP posterior for K ~ V V^T + diag(d), and its log determinant."""

    mean: np.ndarray
    var: np.ndarray
    half_log_det_B: float


class LowRankEPPosterior:
    r"""The EP posterior :math:`(\tilde K^{-1} + \tilde S)^{-1}` for :math:`\tilde K = V V^\top + D`.

    With :math:`\Gamma = I + D \tilde S` (diagonal, :math:`\ge I`),

    .. math:: (\tilde K^{-1} + \tilde S)^{-1} = D \Gamma^{-1}
              + \Gamma^{-1} V (I_r + V^\top \tilde S \Gamma^{-1} V)^{-1} V^\top \Gamma^{-1},

    (the Woodbury identity applied twice), a sum of two positive semi-definite terms, so
    the marginal variances need no subtraction; :math:`\tilde K` has the exact diagonal of
    :math:`K`.  Every matrix inverted has eigenvalues at least 1, for any
    :math:`\tilde\tau \ge 0` and :math:`d \ge 0` (pivot rows have :math:`d_n = 0`).  The
    determinant lemma gives :math:`\log|I + \tilde S^{1/2} \tilde K \tilde S^{1/2}| =
    \log|\Gamma| + \log|I_r + V^\top \tilde S \Gamma^{-1} V|`.  Cost :math:`O(n r^2)`.
    """

    def __init__(self, V, d):
        self.V, self.d = V, d

    def marginals(self, tau, nu):
        gamma = 1.0 + self.d * tau
        V_g = self.V / gamma[:, None]  # Gamma^-1 V
        C = dgemm(1.0, self.V, tau[:, None] * V_g, trans_a=1)  # V^T S Gamma^-1 V
        C[np.diag_indices_from(C)] += 1.0
        R = cho_factor(C, lower=True, check_finite=False)[0]
        Z = solve_triangular(R, V_g.T, lower=True, check_finite=False).T  # Gamma^-1 V R^-T
        var = self.d / gamma + np.einsum("ij,ij->i", Z, Z)
        mean = (self.d / gamma) * nu + Z @ (Z.T @ nu)
        half_log_det = 0.5 * float(np.sum(np.log(gamma))) + float(np.sum(np.log(np.diag(R))))
        return LowRankMarginals(mean=mean, var=var, half_log_det_B=half_log_det)
