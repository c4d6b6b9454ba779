r"""Multi-class Gaussian-process classification with the Laplace approximation: RW Alg. 3.3 and 3.4.

Book: chapter 13.  Each of the C classes has a latent function with the same GP prior,
:math:`\mathbf f^c \sim \mathcal N(0, K)` independently, and the likelihood is the softmax
of the C latent values at each input.  The mode :math:`\hat{\mathbf f}` of

.. math:: \Psi(\mathbf f) = \mathbf y^\top \mathbf f - \sum_i \log \sum_c \exp f_i^c
          - \tfrac12 \mathbf f^\top \mathcal K^{-1} \mathbf f

(:math:`\mathbf f` stacks the classes, :math:`\mathcal K` = blockdiag(K, ..., K)) is found by
Newton's method.  The negative Hessian of the log-likelihood is
:math:`W = D - \Pi \Pi^\top` with :math:`D = \operatorname{diag}(\boldsymbol\pi)` and
:math:`\Pi` the C diagonal blocks :math:`\operatorname{diag}(\boldsymbol\pi^c)` stacked: it
couples the classes at each input, and is singular (one class is redundant, as in softmax
regression).  Rasmussen & Williams (2006), section 3.5, solve with it through the matrix
inversion lemma, so that only n x n matrices appear: for each class the Cholesky factor of
:math:`B_c = I + D_c^{1/2} K D_c^{1/2}` and :math:`E_c = D_c^{1/2} B_c^{-1} D_c^{1/2}`, and
the Cholesky factor M of :math:`\sum_c E_c`.  The nC x nC matrices are never formed.

The code follows their Algorithm 3.3 (mode and marginal likelihood) and 3.4 (prediction);
the comments name its lines.  As in :mod:`blrlib.gp_laplace`, a Newton step that would lower
:math:`\Psi` is halved.  Labels are 0..C-1; RW's one-hot :math:`\mathbf y` is ``Y`` here.
The latent values are stored as (n, C) arrays, column c being :math:`\mathbf f^c`.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import solve_triangular
from scipy.linalg.blas import dsymm, dsymv
from scipy.linalg.lapack import dpotrf

from ._gp_linalg import cholesky_B, inverse_B, log_det_B
from ._gp_lowrank import CG_MIN_N
from ._gp_multiclass_cg import CGMulticlassSteps
from ._validation import as_class_labels, as_kernel_matrix, as_rng, as_test_kernels, check_int, check_positive
from .optimize import ConvergenceWarning
from .softmax_posterior import _gaussian_softmax_mc
from .softmax_regression import _log_softmax, _one_hot

__all__ = ["GPCLaplaceMulticlass", "GPCMulticlassPrediction", "gpc_laplace_multiclass", "gpc_predict_multiclass"]

_EPS = np.finfo(float).eps


def _short(v):
    return np.array2string(np.asarray(v), precision=4, separator=", ", threshold=6)


@dataclass(frozen=True)
class GPCLaplaceMulticlass:
    r"""The Laplace approximation of a multi-class GP classifier (GPML Alg. 3.3).

    Attributes
    ----------
    f_hat : ndarray of shape (n, C)
        The posterior mode, column c the latent values of class c.
    log_marginal_likelihood : float
        :math:`\log q(\mathbf y \mid X) = -\frac12 \mathbf a^\top \hat{\mathbf f}
        + \mathbf y^\top \hat{\mathbf f} - \sum_i \log \sum_c \exp \hat f_i^c
        - \sum_c \sum_i \log (L_c)_{ii} - \sum_i \log M_{ii}`.
    n_iter : int
    converged : bool
    grad_log_lik : ndarray of shape (n, C)
        :math:`\mathbf y - \hat{\boldsymbol\pi}`; equals :math:`K^{-1} \hat{\mathbf f}^c`
        column by column at the mode.
    E : ndarray of shape (C, n, n)
        :math:`E_c = D_c^{1/2} B_c^{-1} D_c^{1/2}` at the mode; symmetric, and only the upper
        triangle of ``E[c]`` (the lower of ``E[c].T``) is filled.
    M : ndarray of shape (n, n)
        Lower Cholesky factor of :math:`\sum_c E_c`.
    """

    f_hat: np.ndarray
    log_marginal_likelihood: float
    n_iter: int
    converged: bool
    grad_log_lik: np.ndarray = field(repr=False)
    E: np.ndarray = field(repr=False, compare=False)
    M: np.ndarray = field(repr=False, compare=False)

    def __repr__(self):
        n, C = self.f_hat.shape
        return (
            f"GPCLaplaceMulticlass(n={n}, C={C}, log_marginal_likelihood={self.log_marginal_likelihood:.8g}, "
            f"n_iter={self.n_iter}, converged={self.converged})"
        )


@dataclass(frozen=True)
class GPCMulticlassPrediction:
    r"""Predictions of a multi-class GP classifier at m test points (GPML Alg. 3.4).

    Attributes
    ----------
    prob : ndarray of shape (m, C)
        :math:`p(y_* = c \mid \mathbf x_*, \mathcal D)` by Monte Carlo over the latent Gaussian.
    mean : ndarray of shape (m, C)
        Mean of the latent :math:`\mathbf f_*`.
    cov : ndarray of shape (m, C, C)
        Covariance of :math:`\mathbf f_*`: the classes are correlated a posteriori.
    """

    prob: np.ndarray
    mean: np.ndarray
    cov: np.ndarray = field(repr=False)

    def __repr__(self):
        return f"GPCMulticlassPrediction(prob={_short(self.prob)}, mean={_short(self.mean)})"


@dataclass(frozen=True)
class _Step:
    """The full Newton step from f, and the factors at f (its start)."""

    a: np.ndarray  # (n, C)
    f: np.ndarray  # K a
    E: np.ndarray  # (C, n, n)
    M: np.ndarray  # lower factor of sum_c E_c
    log_det: float  # sum_c sum_i log (L_c)_ii + sum_i log M_ii = log|I + K W| / 2


def _psi(a, f, Y):
    r""":math:`\Psi = \mathbf y^\top \mathbf f - \sum_i \log\sum_c \exp f_i^c - \frac12 \mathbf a^\top \mathbf f` (Alg. 3.3, line 11)."""
    return float(np.sum(Y * _log_softmax(f)) - 0.5 * np.sum(a * f))


def _newton_step(K, Y, f):
    """Alg. 3.3, lines 4-10: the full Newton step from f and the factors at f.

    The symmetric matrices E_c and their sum are kept as their lower triangles
    (Fortran-ordered, as LAPACK leaves them) and used through symmetric BLAS products.
    """
    n, C = f.shape
    pi = np.exp(_log_softmax(f))  # line 4: pi = softmax of f at each input
    E = np.empty((C, n, n), order="C")
    E_sum = np.zeros((n, n), order="F")
    log_det = 0.0
    for c in range(C):  # line 5
        d_sqrt = np.sqrt(pi[:, c])
        L = cholesky_B(K, d_sqrt)  # line 6: L = chol(I_n + D_c^1/2 K D_c^1/2)
        log_det += log_det_B(L)  # line 8: z_c = sum_i log L_ii
        E_c = inverse_B(L, overwrite=True)  # lower triangle of B_c^-1, in L's memory
        E_c *= d_sqrt[:, None]
        E_c *= d_sqrt[None, :]  # line 7: E_c = D^1/2 L^-T L^-1 D^1/2 (lower triangle)
        E_sum += E_c
        E[c].T[...] = E_c  # E[c].T is Fortran-ordered: a plain copy of the lower triangle
    M, info = dpotrf(E_sum, lower=1, clean=1, overwrite_a=1)  # line 9: M = chol(sum_c E_c)
    if info != 0:  # pragma: no cover - sum_c E_c is positive definite
        raise np.linalg.LinAlgError(f"Cholesky factorisation of sum_c E_c failed (info={info})")
    log_det += float(np.sum(np.log(np.diag(M))))
    # line 10: b = (D - Pi Pi^T) f + y - pi, input by input
    b = pi * f - pi * np.sum(pi * f, axis=1, keepdims=True) + Y - pi
    Kb = K @ b
    c_vec = np.column_stack([_E_times(E[c], Kb[:, c]) for c in range(C)])  # c = E K b
    s = solve_triangular(M, np.sum(c_vec, axis=1), lower=True, check_finite=False)
    s = solve_triangular(M, s, lower=True, trans="T", check_finite=False)  # M^T \ (M \ R^T c)
    a = b - c_vec + np.column_stack([_E_times(E[c], s) for c in range(C)])  # a = b - c + E R M^T \ (M \ R^T c)
    return _Step(a=a, f=K @ a, E=E, M=M, log_det=log_det)  # f = K a


def _E_times(E_c, v):
    """E_c v for E_c stored as ``E[c]``: its upper triangle holds the matrix (the lower of E[c].T)."""
    return dsymv(1.0, E_c.T, v, lower=1)


def _posterior_mode(K, Y, max_iter, tol):
    """Alg. 3.3, lines 2-12: Newton's method with step halving on Psi (as ``gp_laplace._posterior_mode``).

    For n >= 500 the steps are first computed by conjugate gradients
    (:class:`~blrlib._gp_multiclass_cg.CGMulticlassSteps`, products with K only); a verdict
    of convergence is always confirmed by the exact step, whose factors at the final f are
    the ones returned.
    """
    n, C = Y.shape
    fast = CGMulticlassSteps(K, Y) if n >= CG_MIN_N else None
    a, f = np.zeros((n, C)), np.zeros((n, C))  # line 2: f = 0
    psi = _psi(a, f, Y)
    k_max = float(np.max(np.diag(K)))
    n_iter, converged, confirm = 0, False, False
    while True:  # line 3: repeat
        step = None
        if fast is not None and not confirm:
            cg = fast.step(a, f, np.exp(_log_softmax(f)))
            if cg is not None:
                step = _Step(a=cg[0], f=cg[1], E=None, M=None, log_det=np.nan)
        if step is None:
            step = _newton_step(K, Y, f)
        psi_new = _psi(step.a, step.f, Y)  # line 11: objective
        d_a, d_f = step.a - a, step.f - f
        largest = float(np.max(np.abs(d_f)))
        if psi_new - psi <= tol * (1.0 + abs(psi)) and (
            largest <= tol * (1.0 + float(np.max(np.abs(f))))
            or largest <= 16 * _EPS * k_max * float(np.max(np.sum(np.abs(step.a), axis=0)))
        ):
            if step.E is not None:
                converged = True  # line 12: until convergence (the step would change nothing)
                break
            confirm = True  # the step came from conjugate gradients: check with the exact one
            continue
        confirm = False
        if n_iter >= max_iter:
            break
        t, a_t, f_t, psi_t = 1.0, step.a, step.f, psi_new
        slack = 1e-12 * (1.0 + abs(psi))
        for _ in range(60):  # halve until Psi does not drop
            if psi_t >= psi - slack:
                break
            t *= 0.5
            a_t, f_t = a + t * d_a, f + t * d_f
            psi_t = _psi(a_t, f_t, Y)
        else:  # no step raises Psi: f is the maximum to round-off
            if step.E is not None:
                converged = True
                break
            fast = None  # conjugate gradients cannot resolve it: exact steps from now on
            continue
        a, f, psi = a_t, f_t, psi_t
        n_iter += 1
    if step.E is None:
        step = _newton_step(K, Y, f)  # the factors at the returned f
    return a, f, psi, step, n_iter, converged


def gpc_laplace_multiclass(K, y, *, max_iter=100, tol=1e-10):
    r"""The Laplace approximation for multi-class GP classification (Rasmussen & Williams Alg. 3.3).

    One kernel matrix K is shared by the C latent functions.  Each Newton step

    .. math:: \mathbf f_\text{new} = (\mathcal K^{-1} + W)^{-1} (W \mathbf f + \mathbf y - \boldsymbol\pi)

    is computed with n x n matrices only (C Cholesky factorisations of
    :math:`B_c = I + D_c^{1/2} K D_c^{1/2}` and one of :math:`\sum_c E_c`), and at the mode

    .. math:: \log q(\mathbf y \mid X) = \Psi(\hat{\mathbf f}) - \tfrac12 \log |I + \mathcal K W|,
              \qquad \tfrac12 \log|I + \mathcal K W| = \sum_c \sum_i \log (L_c)_{ii} + \sum_i \log M_{ii}

    (equations ``eq-softmax-gp-newton`` and ``eq-softmax-gp-lml``).  For C = 2 the fit is
    the binary :func:`~blrlib.gpc_laplace` for :math:`f^1 - f^0` with the kernel 2K, with the
    same marginal likelihood.

    Book: chapter 13.

    Parameters
    ----------
    K : array_like of shape (n, n)
        The prior covariance of each class's latent values at the training inputs.
    y : array_like of shape (n,), labels 0..C-1 (C = max(y) + 1 >= 2)
    max_iter : int, default 100
    tol : float, default 1e-10
        Converged when the next Newton step would raise :math:`\Psi` by at most
        ``tol * (1 + |Psi|)`` and move no latent value by more than ``tol * (1 + max|f|)``.

    Returns
    -------
    GPCLaplaceMulticlass

    Warns
    -----
    ConvergenceWarning
        If ``max_iter`` iterations do not reach the tolerance.

    Examples
    --------
    >>> from blrlib import rbf_kernel
    >>> X = np.array([[-2.0], [-1.5], [0.0], [0.3], [1.8], [2.0]])
    >>> labels = np.array([0, 0, 1, 1, 2, 2])
    >>> fit = gpc_laplace_multiclass(rbf_kernel(X, variance=4.0), labels)
    >>> fit.converged, fit.f_hat.shape
    (True, (6, 3))
    >>> bool(np.all(fit.f_hat.argmax(axis=1) == [0, 0, 1, 1, 2, 2]))
    True
    >>> round(fit.log_marginal_likelihood, 4)
    -5.2275
    """
    K = as_kernel_matrix(K)
    n = K.shape[0]
    y, C = as_class_labels(y, n=n, against="K")
    max_iter = check_int(max_iter, "max_iter")
    tol = check_positive(tol, "tol")
    Y = _one_hot(y, C)
    a, f, psi, step, n_iter, converged = _posterior_mode(K, Y, max_iter, tol)
    if not converged:
        warnings.warn(
            f"gpc_laplace_multiclass did not converge in max_iter={max_iter} Newton iterations; "
            f"increase max_iter",
            ConvergenceWarning,
            stacklevel=2,
        )
    pi = np.exp(_log_softmax(f))
    return GPCLaplaceMulticlass(
        f_hat=f,
        log_marginal_likelihood=psi - step.log_det,  # line 13
        n_iter=n_iter,
        converged=converged,
        grad_log_lik=Y - pi,
        E=step.E,
        M=step.M,
    )


def _latent_moments(fit, K_star, k_star_star):
    """Alg. 3.4, lines 4-10 for all test points at once: mean (m, C) and cov (m, C, C)."""
    mean = K_star @ fit.grad_log_lik  # line 5: mu_*^c = (y^c - pi^c)^T k_*
    C = mean.shape[1]
    EK = np.stack([dsymm(1.0, E_c.T, K_star.T, lower=1) for E_c in fit.E])  # line 6: b = E_c k_*
    V = solve_triangular(fit.M, EK.transpose(1, 0, 2).reshape(K_star.shape[1], -1), lower=True, check_finite=False)
    V = V.reshape(-1, C, K_star.shape[0])  # M^-1 E_c k_* for every class and point
    cov = np.einsum("icm,idm->mcd", V, V)  # line 7-8: k_*^T E_c (sum E)^-1 E_c' k_*
    quad = np.einsum("mi,cim->mc", K_star, EK)  # k_*^T E_c k_*
    idx = np.arange(C)
    cov[:, idx, idx] += k_star_star[:, None] - quad  # line 9: + k(x_*, x_*) - b^T k_*
    return mean, cov


def gpc_predict_multiclass(fit, K_star, k_star_star, *, n_samples=10_000, rng=None):
    r"""Predictive class probabilities of a multi-class GP classifier (Rasmussen & Williams Alg. 3.4).

    Under the Laplace approximation the latent vector :math:`\mathbf f_*` at a test input
    is Gaussian with

    .. math:: \mu_*^c = (\mathbf y^c - \hat{\boldsymbol\pi}^c)^\top \mathbf k_*, \qquad
              \Sigma_{*,cc'} = \delta_{cc'}\bigl(k(\mathbf x_*, \mathbf x_*) - \mathbf k_*^\top E_c \mathbf k_*\bigr)
              + \mathbf k_*^\top E_c \Bigl(\sum_l E_l\Bigr)^{-1} E_{c'} \mathbf k_*

    (equation ``eq-softmax-gp-predict``), and the probabilities
    :math:`E[\operatorname{softmax}(\mathbf f_*)]` are averaged by Monte Carlo.

    Book: chapter 13.

    Parameters
    ----------
    fit : GPCLaplaceMulticlass
    K_star : array_like of shape (m, n)
        Kernel values between the test and the training inputs.
    k_star_star : array_like of shape (m,)
        Prior variances at the test inputs.
    n_samples : int, default 10000
        Monte Carlo draws of :math:`\mathbf f_*` per test point (the same standard-normal
        draws for every point).
    rng : numpy.random.Generator or int, optional
        Seed 0 when omitted, so results repeat.

    Returns
    -------
    GPCMulticlassPrediction

    Examples
    --------
    >>> from blrlib import rbf_kernel
    >>> X = np.array([[-2.0], [-1.5], [0.0], [0.3], [1.8], [2.0]])
    >>> labels = np.array([0, 0, 1, 1, 2, 2])
    >>> fit = gpc_laplace_multiclass(rbf_kernel(X, variance=4.0), labels)
    >>> X_new = np.array([[-2.0], [0.1], [10.0]])
    >>> K_new = rbf_kernel(X_new, X, variance=4.0)
    >>> pred = gpc_predict_multiclass(fit, K_new, np.full(3, 4.0))
    >>> pred.prob.round(2)  # far from the data (last row): about 1/3 for every class
    array([[0.68, 0.16, 0.16],
           [0.17, 0.66, 0.17],
           [0.34, 0.33, 0.33]])
    >>> pred.cov.shape
    (3, 3, 3)
    """
    if not isinstance(fit, GPCLaplaceMulticlass):
        raise TypeError(f"fit must be a GPCLaplaceMulticlass (from gpc_laplace_multiclass), got {type(fit).__name__}")
    K_star, k_star_star = as_test_kernels(K_star, k_star_star, fit.f_hat.shape[0])
    n_samples = check_int(n_samples, "n_samples")
    mean, cov = _latent_moments(fit, K_star, k_star_star)
    prob = _gaussian_softmax_mc(mean, cov, n_samples, as_rng(rng))
    return GPCMulticlassPrediction(prob=prob, mean=mean, cov=cov)
