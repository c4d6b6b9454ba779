r"""Dense linear algebra shared by the GP-classification algorithms.

Laplace's method (chapter 9) and expectation propagation (chapter 11) both solve with the
well-conditioned matrix :math:`B = I + S^{1/2} K S^{1/2}` for a diagonal :math:`S \ge 0`
(:math:`W`, the curvature of the log-likelihood at the mode, or :math:`\tilde S`, the
site precisions of EP), whose eigenvalues lie in :math:`[1, 1 + \max_n S_{nn}
\lambda_\text{max}(K)]`; :math:`K` itself is never inverted.  This module holds the few
operations they share: the Cholesky factor of :math:`B`, :math:`B^{-1}` from it, the
trace :math:`\operatorname{tr}(R\,C)` with :math:`R = S^{1/2} B^{-1} S^{1/2}` that the
gradients of the marginal likelihood need, the latent moments at test points, and a
symmetric matrix-vector product.

Why SciPy's BLAS for products with K: NumPy and SciPy may each bundle their own
OpenBLAS with its own thread pool.  The factorisations run in SciPy's; a NumPy product
in between leaves NumPy's threads spinning on the cores the next factorisation needs
(about doubling its time on a 2-core machine).  ``symv`` also reads one triangle of K,
half the memory traffic of a general product.
"""

import numpy as np
from scipy.linalg import solve_triangular
from scipy.linalg.blas import ddot, dsymv
from scipy.linalg.lapack import dpotrf, dpotri


def _is_diagonal(A):
    """Whether the square A is diagonal, to the last bit.

    The RBF kernel is, for a length scale far below the distances between inputs (which
    the hyperparameter search may try): then the O(n^3) factorisations are skipped.  The
    check costs one pass over A.
    """
    return np.count_nonzero(A) == np.count_nonzero(np.diag(A))


def symv(K, v):
    """``K @ v`` for a symmetric K, by BLAS ``symv`` (one triangle read)."""
    if K.flags.f_contiguous:
        return dsymv(1.0, K, v, lower=1)
    if K.flags.c_contiguous:
        return dsymv(1.0, K.T, v, lower=1)  # K.T is K, in Fortran order
    return K @ v


def cholesky_B(K, s_sqrt, work=None):
    r"""The lower Cholesky factor :math:`L` of :math:`B = I + S^{1/2} K S^{1/2}`.

    ``s_sqrt`` holds the diagonal of :math:`S^{1/2}`.  ``work``, an n x n Fortran-ordered
    array, receives B and then L (LAPACK ``potrf`` in place), so a caller that factorises
    repeatedly reuses one buffer; the L returned is then that buffer, valid until the next
    call with it.  Its strict upper triangle is zero (``trace_R_C`` relies on that).
    """
    n = K.shape[0]
    if work is None:
        work = np.empty((n, n), order="F")
    if _is_diagonal(K):  # then so are B and L, with L_nn = sqrt(B_nn), what potrf would compute
        work.fill(0.0)
        work.reshape(-1, order="F")[:: n + 1] = np.sqrt(1.0 + s_sqrt * np.diag(K) * s_sqrt)
        return work
    B = work.T  # B is symmetric: writing it row-wise into the C-ordered view fills work with B
    np.multiply(K, s_sqrt[:, None], out=B)
    B *= s_sqrt[None, :]
    B.reshape(-1)[:: n + 1] += 1.0
    L, info = dpotrf(work, lower=1, clean=1, overwrite_a=1)
    if info != 0:
        raise ValueError(
            "K must be positive semi-definite: B = I + S^1/2 K S^1/2 is not positive definite "
            f"(LAPACK potrf failed at leading minor {info}); check the kernel matrix"
        )
    return L


def cho_solve_B(L, r):
    """Solve B x = r with the lower factor L of B (two triangular solves)."""
    z = solve_triangular(L, r, lower=True, check_finite=False)
    return solve_triangular(L, z, lower=True, trans="T", check_finite=False)


def log_det_B(L):
    """log |B| / 2 = sum_n log L_nn."""
    return float(np.sum(np.log(np.diag(L))))


def inverse_B(L, overwrite=False):
    r""":math:`B^{-1}` from its lower factor (LAPACK ``potri``), lower triangle only, Fortran-ordered.

    With ``overwrite`` and a Fortran-ordered L, :math:`B^{-1}` is formed in L's own
    memory (L is then gone): the hyperparameter search, which keeps no factor, saves an
    n x n buffer that way.
    """
    overwrite = overwrite and L.flags.f_contiguous
    if _is_diagonal(L):
        B_inv = L if overwrite else np.array(L, order="F")
        B_inv.reshape(-1, order="F")[:: L.shape[0] + 1] = 1.0 / np.diag(L) ** 2
        return B_inv
    B_inv, info = dpotri(L, lower=1, overwrite_c=int(overwrite))
    if info != 0:  # pragma: no cover - L comes from a successful Cholesky factorisation
        raise np.linalg.LinAlgError(f"potri failed with info={info}")
    return B_inv


def trace_R_C(B_inv, s_sqrt, C, overwrite=False):
    r""":math:`\operatorname{tr}(R\,C)` for :math:`R = S^{1/2} B^{-1} S^{1/2}` and a symmetric C.

    .. math:: \operatorname{tr}(R\,C) = \sum_{ij} (B^{-1})_{ij} M_{ij}
              = 2 \sum_{i \ge j} (B^{-1})_{ij} M_{ij} - \sum_i (B^{-1})_{ii} M_{ii},
              \qquad M = S^{1/2} C S^{1/2},

    which reads only the lower triangle of ``B_inv`` (all that ``potri`` fills; its
    strict upper triangle keeps the zeros of L).  C must be C-ordered; with ``overwrite``
    it is scaled into M in place.
    """
    M = C if overwrite else C.copy()
    M *= s_sqrt[:, None]
    M *= s_sqrt[None, :]
    # B_inv.T is C-ordered with B_inv's lower triangle in its upper one; M is symmetric
    full = 2.0 * float(ddot(B_inv.T.reshape(-1), M.reshape(-1)))
    return full - float(np.diag(B_inv) @ np.diag(M))


def latent_moments(alpha, s_sqrt, L, K_star, k_star_star):
    r"""Mean and variance of :math:`f_*` at test points (Alg. 3.2, lines 4-6; Alg. 3.6, lines 4-7).

    .. math:: \mu_* = \mathbf k_*^\top \boldsymbol\alpha, \qquad
              \sigma_*^2 = k(\mathbf x_*, \mathbf x_*) - \mathbf v^\top \mathbf v,
              \quad \mathbf v = L^{-1} S^{1/2} \mathbf k_*

    with :math:`\boldsymbol\alpha = \nabla \log p(\mathbf y \mid \hat{\mathbf f})` and
    :math:`S = W` for the Laplace approximation, and :math:`\boldsymbol\alpha = \tilde{\boldsymbol\nu}
    - S^{1/2} B^{-1} S^{1/2} K \tilde{\boldsymbol\nu}` and :math:`S = \tilde S` for EP.  The
    variance is clipped at 0, where round-off could make it slightly negative.
    """
    mean = K_star @ alpha
    v = solve_triangular(L, s_sqrt[:, None] * K_star.T, lower=True, check_finite=False)
    var = np.maximum(k_star_star - np.einsum("ij,ij->j", v, v), 0.0)
    return mean, var
