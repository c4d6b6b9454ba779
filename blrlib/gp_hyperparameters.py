r"""Learning the RBF kernel's hyperparameters by maximising the marginal likelihood.

Book: chapter 9 (Laplace, Rasmussen & Williams Alg. 5.1) and chapter 11 (EP, GPML
section 5.5.2).  With :math:`\boldsymbol\theta = (\log\sigma_f^2, \log\ell)` and
:math:`C_j = \partial K / \partial\theta_j` (for the RBF kernel :math:`C_1 = K` and
:math:`(C_2)_{ij} = K_{ij} \|\mathbf x_i - \mathbf x_j\|^2 / \ell^2`):

* Laplace (Alg. 5.1): the approximate marginal likelihood depends on
  :math:`\boldsymbol\theta` directly and through the mode :math:`\hat{\mathbf f}`, which
  moves with the kernel:

  .. math:: \frac{\partial \log q}{\partial\theta_j} =
            \tfrac12 \boldsymbol\alpha^\top C_j \boldsymbol\alpha - \tfrac12 \operatorname{tr}(R\, C_j)
            + \sum_n \frac{\partial \log q}{\partial \hat f_n} \frac{\partial \hat f_n}{\partial \theta_j},
            \qquad R = W^{1/2} B^{-1} W^{1/2};

* EP (GPML eq. 5.27): at a fixed point the log marginal likelihood is stationary in the
  site parameters, so only the explicit part remains,
  :math:`\frac12 \mathbf b^\top C_j \mathbf b - \frac12 \operatorname{tr}(R\, C_j)` with
  :math:`R = \tilde S^{1/2} B^{-1} \tilde S^{1/2}` and
  :math:`\mathbf b = (I - R K) \tilde{\boldsymbol\nu}`.

:func:`gpc_log_marginal_likelihood` evaluates either; :func:`_learn` maximises it with
L-BFGS-B for :class:`~blrlib.GPClassifier`, warm-starting each evaluation from the last.
"""

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from ._gp_linalg import inverse_B, symv, trace_R_C
from ._validation import as_labels, as_matrix, check_int, check_positive
from .gp_ep import GPCEP, _ep_parallel, _warn_ep
from .gp_laplace import GPCLaplace, _posterior_mode, _warn_mode
from .kernels import _rbf_from_sqdist, _squared_distances
from .optimize import ConvergenceWarning

__all__ = ["gpc_log_marginal_likelihood"]

_INFERENCE = ("laplace", "ep")
_DEFAULT_TOL = {"laplace": 1e-10, "ep": 1e-8}
_NAMES = ("variance", "lengthscale")
_SEARCH_TOL = {"laplace": 0.0, "ep": 1e-6}
# EP's tolerance during the search, evaluation by evaluation: _TOL_PER_GRADIENT times the
# largest entry of the previous evaluation's projected gradient, between _SEARCH_TOL and
# _LOOSEST_TOL (far from the optimum the optimiser needs the gradient's direction only)
_LOOSEST_TOL = {"laplace": 0.0, "ep": 1e-4}
_TOL_PER_GRADIENT = 1e-4


def _laplace_gradient(K, y, mode, dK_dtheta, overwrite=False):
    r"""Alg. 5.1, lines 7-16: the gradient of the Laplace log marginal likelihood.

    ``mode`` is the result of the mode search (Alg. 3.1) for K; ``dK_dtheta`` the
    symmetric, C-ordered derivative matrices :math:`C_j`.  :math:`R` is never formed:
    :math:`B^{-1}` comes from the factor :math:`L` (LAPACK ``potri``), and
    :math:`\operatorname{tr}(R\,C)` and :math:`R\mathbf v = W^{1/2} B^{-1} W^{1/2} \mathbf v`
    are computed from it; for :math:`C = K`,
    :math:`\operatorname{tr}(R K) = \operatorname{tr}(B^{-1}(B - I)) = n - \operatorname{tr} B^{-1}`.
    The posterior variances enter line 9 times :math:`W`, as
    :math:`W_{nn} [(K^{-1} + W)^{-1}]_{nn} = 1 - (B^{-1})_{nn}`.

    With ``overwrite`` the caller's buffers are scratch: :math:`B^{-1}` is formed in the
    memory of ``mode.L`` (which is then gone) and the :math:`C_j` other than K are
    overwritten.  Returns the gradient and :math:`\partial\hat{\mathbf f}/\partial\theta_j`
    (the columns of an n x 2 array), with which the next mode search starts.
    """
    n = K.shape[0]
    W_sqrt = np.sqrt(mode.W)
    p = expit(mode.f)
    B_inv = inverse_B(mode.L, overwrite)  # line 7: R = W^1/2 B^-1 W^1/2, through B^-1
    diag_B_inv = np.diag(B_inv).copy()
    # line 9: s2 = d log q / d f_hat = -1/2 diag((K^-1 + W)^-1) dW/df, with dW/df = W (1 - 2p)
    # (= -grad^3 log p(y | f)); the first factor times W is 1 - diag(B^-1)
    s2 = -0.5 * (1.0 - diag_B_inv) * (1.0 - 2.0 * p)
    grad = np.empty(len(dK_dtheta))
    df_dtheta = np.empty((n, len(dK_dtheta)))
    for j, C in enumerate(dK_dtheta):  # lines 10-11
        b = symv(C, y - p)  # line 13: b = C grad log p(y | f_hat)
        s3 = b - symv(K, W_sqrt * symv(B_inv, W_sqrt * b))  # line 14: (I + K W)^-1 b = d f_hat / d theta_j
        quadratic = 0.5 * (mode.alpha @ symv(C, mode.alpha))  # before the trace, which may overwrite C
        trace = n - float(np.sum(diag_B_inv)) if C is K else trace_R_C(B_inv, W_sqrt, C, overwrite)
        grad[j] = quadratic - 0.5 * trace + s2 @ s3  # lines 12 and 15
        df_dtheta[:, j] = s3
    return grad, df_dtheta


def _ep_gradient(K, state, dK_dtheta, overwrite=False):
    r"""GPML eq. (5.27): the gradient of the EP log marginal likelihood at a fixed point.

    :math:`\frac12 \mathbf b^\top C_j \mathbf b - \frac12 \operatorname{tr}(R\, C_j)` with
    :math:`\mathbf b = (I - R K)\tilde{\boldsymbol\nu}` (the ``alpha`` of the EP fit, so
    that :math:`\boldsymbol\mu = K \mathbf b`) and :math:`R = \tilde S^{1/2} B^{-1} \tilde S^{1/2}`;
    the traces as for Laplace.  ``overwrite`` as in :func:`_laplace_gradient`.
    """
    n = K.shape[0]
    S_sqrt = np.sqrt(state.tau)
    b = state.marginals.alpha
    B_inv = inverse_B(state.marginals.L, overwrite)
    grad = np.empty(len(dK_dtheta))
    for j, C in enumerate(dK_dtheta):
        quadratic = 0.5 * (b @ symv(C, b))  # before the trace, which may overwrite C
        trace = n - float(np.sum(np.diag(B_inv))) if C is K else trace_R_C(B_inv, S_sqrt, C, overwrite)
        grad[j] = quadratic - 0.5 * trace
    return grad


class _Buffers:
    """Three n x n arrays reused by every evaluation of a hyperparameter search: K, L, dK/dlog l."""

    def __init__(self, n):
        self.K = np.empty((n, n))
        self.L = np.empty((n, n), order="F")
        self.dK = np.empty((n, n))


@dataclass(frozen=True)
class _Evaluation:
    """The log marginal likelihood at theta, its gradient, and where the next evaluation starts."""

    theta: np.ndarray
    lml: float
    grad: np.ndarray | None
    converged: bool
    f: np.ndarray | None = None  # Laplace: the mode and d f_hat / d theta
    df_dtheta: np.ndarray | None = None
    tau: np.ndarray | None = None  # EP: the sites
    nu: np.ndarray | None = None


def _evaluate(D, y, theta, inference, max_iter, tol, warm=None, eval_gradient=True, buffers=None):
    r"""The log marginal likelihood of the RBF kernel at :math:`\theta = (\log\sigma_f^2, \log\ell)`.

    ``warm`` is the previous :class:`_Evaluation` (or None): Laplace starts its mode
    search from the previous mode moved along :math:`\partial\hat{\mathbf f}/\partial\theta`
    (Alg. 5.1, line 14) when the step in theta is small, EP from the previous sites.  With
    ``buffers`` the matrices live in reused memory, and the factor is consumed by the
    gradient.
    """
    variance, lengthscale = np.exp(theta)
    K = _rbf_from_sqdist(D, variance, lengthscale, out=None if buffers is None else buffers.K)
    work = None if buffers is None else buffers.L
    if eval_gradient:  # d K / d log sigma^2 = K and d K / d log l = K * D / l^2
        dK = np.multiply(K, D, out=None if buffers is None else buffers.dK)
        dK *= 1.0 / lengthscale**2
        dK_dtheta = [K, dK]
    if inference == "laplace":
        f0 = None
        if warm is not None:
            step = theta - warm.theta
            f0 = warm.f + warm.df_dtheta @ step if np.max(np.abs(step)) <= 0.5 else warm.f
        mode = _posterior_mode(K, y, max_iter, tol, f0, work)
        grad = df_dtheta = None
        if eval_gradient:
            grad, df_dtheta = _laplace_gradient(K, y, mode, dK_dtheta, overwrite=buffers is not None)
        return _Evaluation(theta=theta, lml=float(mode.log_marginal_likelihood), grad=grad,
                           converged=mode.converged, f=mode.f, df_dtheta=df_dtheta)
    state = _ep_parallel(K, y, max_iter, tol, None if warm is None else warm.tau,
                         None if warm is None else warm.nu, work)
    grad = _ep_gradient(K, state, dK_dtheta, overwrite=buffers is not None) if eval_gradient else None
    return _Evaluation(theta=theta, lml=float(state.log_marginal_likelihood), grad=grad,
                       converged=state.converged, tau=state.tau, nu=state.nu)


def gpc_log_marginal_likelihood(X, y, variance, lengthscale, eval_gradient=True, *, inference="laplace",
                                max_iter=100, tol=None, init=None):
    r"""Log marginal likelihood of GP classification with the RBF kernel, and its gradient.

    The gradient is taken with respect to :math:`\boldsymbol\theta = (\log\sigma_f^2, \log\ell)`.
    For ``inference="laplace"`` it follows GPML Algorithm 5.1: the explicit part

    .. math:: \frac{\partial \log q}{\partial\theta_j}\Big|_{\hat{\mathbf f}} =
              \tfrac12 \boldsymbol\alpha^\top C_j \boldsymbol\alpha - \tfrac12 \operatorname{tr}(R\, C_j),
              \qquad C_j = \frac{\partial K}{\partial\theta_j}, \quad
              R = W^{1/2} B^{-1} W^{1/2},

    plus the implicit part through the mode, which moves as the kernel changes:
    :math:`\sum_n \frac{\partial \log q}{\partial \hat f_n}\frac{\partial \hat f_n}{\partial \theta_j}`
    with :math:`\frac{\partial \log q}{\partial \hat f_n} = -\frac12 [(K^{-1} + W)^{-1}]_{nn}
    \frac{\partial W_{nn}}{\partial \hat f_n}` and
    :math:`\frac{\partial \hat{\mathbf f}}{\partial\theta_j} = (I + K W)^{-1} C_j (\mathbf y - \hat{\mathbf p})`.
    For ``inference="ep"`` it is GPML eq. (5.27), exact at the EP fixed point (the
    implicit part vanishes there).  For the RBF kernel :math:`\partial K / \partial \log\sigma^2 = K`
    and :math:`\partial K_{ij} / \partial \log\ell = K_{ij} \|\mathbf x_i - \mathbf x_j\|^2 / \ell^2`.

    Book: chapter 9, equation ``eq-gpc-lml-grad`` (Laplace); chapter 11 (EP).

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    variance : float
        :math:`\sigma_f^2 > 0`.
    lengthscale : float
        :math:`\ell > 0`.
    eval_gradient : bool, default True
    inference : {"laplace", "ep"}, default "laplace"
    max_iter : int, default 100
        Newton iterations (Laplace) or sweeps (EP).
    tol : float, optional
        Tolerance of the mode search (default 1e-10, see :func:`~blrlib.gpc_laplace`) or of
        EP (default 1e-8, see :func:`~blrlib.gpc_ep`).  The EP gradient is exact at the fixed
        point only: for finite differences use a small ``tol``.
    init : GPCLaplace or GPCEP, optional
        A previous fit on the same data (for example at nearby hyperparameters) whose mode
        (Laplace) or sites (EP) are the starting point.

    Returns
    -------
    lml : float
    grad : ndarray of shape (2,)
        :math:`(\partial/\partial\log\sigma_f^2, \partial/\partial\log\ell)`; only
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
    >>> lml_ep, grad_ep = gpc_log_marginal_likelihood(X, y, 2.0, 0.5, inference="ep")
    >>> round(lml, 4), round(lml_ep, 4)   # the Laplace and the EP estimate
    (-18.2, -18.0857)
    """
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    variance = check_positive(variance, "variance")
    lengthscale = check_positive(lengthscale, "lengthscale")
    if inference not in _INFERENCE:
        raise ValueError(f"inference must be one of {_INFERENCE}, got {inference!r}")
    max_iter = check_int(max_iter, "max_iter")
    tol = _DEFAULT_TOL[inference] if tol is None else check_positive(tol, "tol")
    warm = None
    if init is not None:
        expected = GPCLaplace if inference == "laplace" else GPCEP
        if not isinstance(init, expected):
            raise TypeError(f"init must be a {expected.__name__} or None for inference={inference!r}, "
                            f"got {type(init).__name__}")
        if init.alpha.shape[0] != X.shape[0]:
            raise ValueError(f"init was fitted on {init.alpha.shape[0]} points but X has {X.shape[0]} rows")
        if inference == "laplace":  # the mode itself, not moved: its kernel is not known
            warm = _Evaluation(theta=np.zeros(2), lml=np.nan, grad=None, converged=True, f=init.f_hat,
                               df_dtheta=np.zeros((X.shape[0], 2)))
        else:
            warm = _Evaluation(theta=np.zeros(2), lml=np.nan, grad=None, converged=True, tau=init.tau_tilde,
                               nu=init.nu_tilde)
    D = _squared_distances(X)
    result = _evaluate(D, y, np.log([variance, lengthscale]), inference, max_iter, tol, warm, eval_gradient)
    if not result.converged:
        (_warn_mode if inference == "laplace" else _warn_ep)(max_iter)
    return (result.lml, result.grad) if eval_gradient else result.lml


def _median_distance(D):
    """The median distance between (up to 500 of) the training points, 1 if that is 0."""
    m = min(D.shape[0], 500)
    sub = D[:m, :m]
    dist = np.sqrt(sub[np.triu_indices_from(sub, 1)])
    median = float(np.median(dist)) if dist.size else 0.0
    return median if median > 0 else 1.0


def _learn(D, y, start, bounds, n_restarts, rng, inference, max_iter, tol, free=(True, True), scale=None):
    r"""Maximise the log marginal likelihood over :math:`(\log\sigma_f^2, \log\ell)` by L-BFGS-B.

    ``start`` is the first starting point (variance, lengthscale); ``n_restarts`` more
    are drawn from the generator ``rng``: :math:`\sigma_f^2` log-uniform in
    [0.1, 1000] and :math:`\ell` log-uniform in [0.1, 10] times ``scale`` (by default the
    median distance between (up to 500) training points), clipped to the bounds.  A
    hyperparameter whose entry of ``free`` is false stays at its start value (the search
    runs over the others only).  EP runs to ``max(tol, 1e-6)`` during the search
    (``_SEARCH_TOL``), or looser far from the optimum: to :math:`10^{-4}` times the
    largest entry of the previous evaluation's projected gradient (the gradient with the
    entries that push against an active bound set to zero), at most to :math:`10^{-4}`
    (``_TOL_PER_GRADIENT``, ``_LOOSEST_TOL``); the first evaluation of each run and those
    near the optimum (or at a bound) keep ``max(tol, 1e-6)``.  On ``bench/bench_ep.py``'s
    data at n = 150 this took 83 sweeps instead of 103 (two moons) and 180 instead of 217
    (separable), in as many evaluations, the learned values within 2e-5 relative and the
    log marginal likelihoods within 1e-9.  Returns the best evaluation (without gradient
    buffers), the optimiser's results, one per start, and the number of evaluations.
    """
    free = np.asarray(free, dtype=bool)
    log_bounds = [(np.log(lo), np.log(hi)) for lo, hi in bounds]
    lo, hi = np.array(log_bounds).T
    buffers = _Buffers(D.shape[0])
    best = None
    last = None
    n_evaluations = 0
    theta = np.clip(np.log(start), lo, hi)  # the fixed entries keep these values
    search_tol = max(tol, _SEARCH_TOL[inference])
    loosest = max(search_tol, _LOOSEST_TOL[inference])

    def objective(x):
        nonlocal best, last, n_evaluations
        theta_x = theta.copy()
        theta_x[free] = x
        eval_tol = search_tol
        if last is not None and loosest > search_tol:
            eval_tol = min(loosest, max(search_tol, _TOL_PER_GRADIENT * _projected(last, lo, hi, free)))
        last = _evaluate(D, y, theta_x, inference, max_iter, eval_tol, last, True, buffers)
        n_evaluations += 1
        if best is None or last.lml > best.lml:
            best = last
        return -last.lml, -last.grad[free]

    starts = [theta[free]]
    if n_restarts:
        scale = _median_distance(D) if scale is None else scale
        for _ in range(n_restarts):
            log_v = rng.uniform(np.log(0.1), np.log(1000.0))
            log_l = np.log(scale) + rng.uniform(np.log(0.1), np.log(10.0))
            starts.append(np.clip([log_v, log_l], lo, hi)[free])
    results = []
    free_bounds = [b for b, f in zip(log_bounds, free) if f]
    for theta0 in starts:
        last = None  # each run starts its inner iterations afresh
        result = minimize(objective, theta0, jac=True, method="L-BFGS-B", bounds=free_bounds)
        result.x0 = theta0  # where this run started (GPClassifier warns when it did not move)
        results.append(result)
    if not any(r.success for r in results):
        message = min(results, key=lambda r: r.fun).message
        warnings.warn(
            f"GPClassifier: L-BFGS-B did not converge from any starting point ({message}); "
            f"the best hyperparameters found are used",
            ConvergenceWarning,
            stacklevel=3,
        )
    return best, results, n_evaluations


def _projected(evaluation, lo, hi, free):
    """The largest entry of the lml's gradient over the free hyperparameters, without the
    entries at a bound that point out of the box (L-BFGS-B's projected gradient)."""
    grad, theta = evaluation.grad.copy(), evaluation.theta
    grad[(theta <= lo) & (grad < 0)] = 0.0
    grad[(theta >= hi) & (grad > 0)] = 0.0
    return float(np.max(np.abs(grad[free]), initial=0.0))


_AT_BOUND = 1e-4  # log-space distance that counts as "on the bound"


def _warn_at_bounds(theta, bounds, stacklevel=3, free=(True, True)):
    """A ConvergenceWarning for each learned hyperparameter that ended on a bound of its search.

    "On a bound" is within 1e-4 in log space (0.01 %): L-BFGS-B stops short of an active bound
    by more than 1e-6 (a length scale of 99 999.8 at the bound 1e5 on chapter 11's breast cancer
    data), and scikit-learn's test, ``np.isclose`` on the log bounds, is about as wide there.
    A hyperparameter held fixed (``free`` false) is not warned about."""
    for name, value, (lo, hi), learned in zip(_NAMES, np.exp(theta), bounds, free):
        if not learned:  # held fixed: its bounds are not a search's
            continue
        for side, bound in (("lower", lo), ("upper", hi)):
            if abs(np.log(value) - np.log(bound)) <= _AT_BOUND:
                warnings.warn(
                    f"GPClassifier: the learned {name} {value:.4g} is at the {side} bound {bound:g} of "
                    f"{name}_bounds; the marginal likelihood still rises beyond it. Widen {name}_bounds "
                    f"or hold {name} fixed ({name}_bounds=\"fixed\")",
                    ConvergenceWarning,
                    stacklevel=stacklevel,
                )
