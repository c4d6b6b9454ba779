r"""Softmax (multinomial logistic) regression: the model, its derivatives and guarded Newton.

Book: chapter 13 ("Many classes").  With K classes each class k has a weight vector
:math:`\mathbf w_k`, the columns of :math:`W \in \mathbb R^{d \times K}`, and

.. math:: p(y = k \mid \mathbf x, W) = \operatorname{softmax}_k(W^\top \mathbf x)
          = \frac{\exp(\mathbf w_k^\top \mathbf x)}{\sum_l \exp(\mathbf w_l^\top \mathbf x)}

(equation ``eq-softmax-model``).  Labels are :math:`y_n \in \{0, \dots, K - 1\}`, one-hot
coded as the rows of :math:`Y \in \{0, 1\}^{n \times K}`.  The prior puts
:math:`\mathcal N(0, \Lambda^{-1})` on every column, :math:`\Lambda = \lambda I` or
:math:`\operatorname{diag}(\lambda_j)` as in chapter 4 (``prior_precision``, a scalar or
one precision per row of W).

Vectors over all the weights are *class-major*: entry ``k * d + j`` is weight j of class
k, i.e. ``W.T.ravel()``.  In that order the Hessian of the log posterior has K x K blocks
of size d x d (equation ``eq-softmax-hessian``),

.. math:: H_{kl} = -X^\top \operatorname{diag}\bigl(p_{nk}(\delta_{kl} - p_{nl})\bigr) X
          - \delta_{kl} \Lambda.

Adding the same vector to every column of W leaves every probability unchanged, so without
a prior the log-likelihood is flat along the d directions :math:`\mathbf v \otimes \mathbf 1_K`
and its Hessian only negative semidefinite: one class is redundant.  :func:`softmax_irls`
solves the Newton system on the complement of that null space, so with
``prior_precision=0`` its iterates stay centred (the columns sum to zero).
"""

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.linalg.blas import dsyrk

from ._validation import (
    _as_float_array,
    _check_finite,
    as_callback,
    as_class_labels,
    as_matrix,
    as_prior_precision,
    check_int,
    check_positive,
)
from .optimize import (
    _ARMIJO,
    _LP_MAX_ENTRIES,
    _MAX_HALVINGS,
    _RESOLUTION,
    _SHORT_STEP,
    _SUSPICIOUS_MARGIN,
    FitResult,
    _free_columns,
    _Outcome,
    _rank_error,
    _Separation,
    _Stop,
    _warn,
)

__all__ = [
    "softmax",
    "log_softmax",
    "softmax_log_likelihood",
    "softmax_log_posterior",
    "softmax_gradient",
    "softmax_hessian",
    "softmax_irls",
]


def _as_activations(A, name="A"):
    A = _as_float_array(A, name)
    if A.ndim == 0:
        raise ValueError(f"{name} must have at least one axis (the classes), got a scalar")
    if A.shape[-1] == 0:
        raise ValueError(f"{name} must have at least one class along its last axis, got shape {A.shape}")
    _check_finite(A, name)
    return A


def _log_softmax(A):
    Z = A - np.max(A, axis=-1, keepdims=True)  # the largest entry of each row becomes 0
    return Z - np.log(np.sum(np.exp(Z), axis=-1, keepdims=True))


def log_softmax(A):
    r"""The log of the softmax over the last axis, :math:`a_k - \log \sum_l e^{a_l}`.

    Stable for every finite ``A``: the row maximum is subtracted first, so no
    exponential overflows and the sum is at least 1.

    Book: chapter 13, equation ``eq-softmax``.

    Parameters
    ----------
    A : array_like of shape (..., K)
        Activations, one per class along the last axis.

    Returns
    -------
    ndarray of shape (..., K)

    Examples
    --------
    >>> log_softmax(np.array([0.0, 0.0]))
    array([-0.69314718, -0.69314718])
    >>> log_softmax(np.array([[1e4, 0.0, -1e4]]))
    array([[     0., -10000., -20000.]])
    """
    return _log_softmax(_as_activations(A))


def softmax(A):
    r"""The softmax over the last axis, :math:`e^{a_k} / \sum_l e^{a_l}`.

    Stable for every finite ``A`` (no overflow at :math:`|a| = 10^4`); each row sums to 1.
    For two classes, :math:`\operatorname{softmax}_1(a_0, a_1) = \sigma(a_1 - a_0)`.

    Book: chapter 13, equation ``eq-softmax``.

    Parameters
    ----------
    A : array_like of shape (..., K)

    Returns
    -------
    ndarray of shape (..., K)

    Examples
    --------
    >>> softmax(np.array([0.0, np.log(3.0)]))
    array([0.25, 0.75])
    >>> softmax(np.array([[1e4, 0.0, -1e4]]))
    array([[1., 0., 0.]])
    """
    return np.exp(_log_softmax(_as_activations(A)))


# ---------------------------------------------------------------------------------------------
# The model on validated input


def _one_hot(y, K):
    Y = np.zeros((y.shape[0], K))
    Y[np.arange(y.shape[0]), y] = 1.0
    return Y


def _lam_column(lam):
    """The prior precision as something that broadcasts against W (d, K)."""
    return lam if np.ndim(lam) == 0 else np.asarray(lam)[:, None]


def _log_likelihood(A, y):
    """Categorical log-likelihood from the activations A = X W (n, K)."""
    return float(np.sum(np.take_along_axis(_log_softmax(A), y[:, None], axis=1)))


def _penalty(W, lam):
    return 0.5 * float(np.sum(_lam_column(lam) * W * W))


def _log_posterior(W, A, y, lam):
    return _log_likelihood(A, y) - _penalty(W, lam)


def _gradient(W, X, Y, P, lam):
    return X.T @ (Y - P) - _lam_column(lam) * W


def _chunk_rows(d, K):
    """Rows per block so that a block of the n x dK matrix M holds about 2^19 numbers."""
    return max(64, (1 << 19) // (d * K))


def _negative_hessian(X, A, lam):
    r"""The negative Hessian of the log posterior, (dK, dK) in class-major order.

    Block (k, l) is :math:`X^\top \operatorname{diag}(p_k(\delta_{kl} - p_l)) X`
    (+ :math:`\Lambda` on the diagonal), formed in one pass over the rows in blocks:

    - the blocks with k != l < K - 1 are those of :math:`-M^\top M` with
      :math:`M = [\operatorname{diag}(p_0) X, \dots, \operatorname{diag}(p_{K-2}) X]`
      (n x d(K-1)), accumulated by one BLAS ``syrk`` (one triangle) per block of rows;
    - the blocks (k, K-1) are :math:`-M^\top \operatorname{diag}(p_{K-1}) X`, one ``gemm``;
    - the diagonal blocks come directly from :math:`p_k (1 - p_k)`, with
      :math:`1 - p_k = -\operatorname{expm1}(\log p_k)` exact even when :math:`p_k \to 1`.

    Every entry is a sum of products of non-negative numbers, so each block keeps its
    relative accuracy at any margin (no difference of large terms; the diagonal blocks
    of :math:`M^\top M` that the ``syrk`` also computes are discarded).  Leaving the last
    class out of M saves :math:`1 - ((K-1)/K)^2` of the largest product's flops.
    """
    n, d = X.shape
    K = A.shape[1]
    R = K - 1  # classes 0..K-2 in M; the last class enters through one product
    dR = d * R
    G = np.zeros((dR, dR), order="F")
    cross = np.zeros((dR, d))
    diag_blocks = [np.zeros((d, d), order="F") for _ in range(K)]
    step = _chunk_rows(d, K)
    buf = np.empty((min(n, step), dR))
    sbuf = np.empty((min(n, step), d))
    for start in range(0, n, step):
        stop = min(start + step, n)
        Xb = X[start:stop]
        logP = _log_softmax(A[start:stop])
        P = np.exp(logP)
        Mb = buf[: stop - start]
        np.multiply(P[:, :R, None], Xb[:, None, :], out=Mb.reshape(stop - start, R, d))
        G = dsyrk(1.0, Mb.T, beta=1.0, c=G, trans=0, lower=0, overwrite_c=1)
        cross += Mb.T @ np.multiply(Xb, P[:, R, None], out=sbuf[: stop - start])
        root = np.sqrt(P * -np.expm1(logP))  # sqrt(p_k (1 - p_k)), stable near p_k = 1
        for k in range(K):
            block = np.multiply(Xb, root[:, k, None], out=sbuf[: stop - start])
            diag_blocks[k] = dsyrk(1.0, block.T, beta=1.0, c=diag_blocks[k], trans=0, lower=0, overwrite_c=1)
    H = np.empty((d * K, d * K))
    H[:dR, :dR] = -(np.triu(G) + np.triu(G, 1).T)
    H[:dR, dR:] = -cross
    H[dR:, :dR] = -cross.T
    lam_vec = np.broadcast_to(np.asarray(lam, dtype=float), (d,))
    for k in range(K):
        D = diag_blocks[k]
        D = np.triu(D) + np.triu(D, 1).T
        D[np.diag_indices(d)] += lam_vec
        H[k * d : (k + 1) * d, k * d : (k + 1) * d] = D
    return H


def _vec(W):
    """Class-major vector of a (d, K) weight matrix: entry k * d + j is W[j, k]."""
    return W.T.ravel()


def _unvec(v, d, K):
    return v.reshape(K, d).T


def _null_projector(free, d, K):
    r"""The projector onto the null directions :math:`\mathbf e_j \otimes \mathbf 1_K`, j free."""
    P = np.zeros((d * K, d * K))
    for j in free:
        idx = j + d * np.arange(K)
        P[np.ix_(idx, idx)] = 1.0 / K
    return P


def _centre_free(W, free):
    """Make the free rows of W sum to zero over the classes (this leaves the posterior unchanged)."""
    if free.size:
        W = W.copy()
        W[free] -= W[free].mean(axis=1, keepdims=True)
    return W


# ---------------------------------------------------------------------------------------------
# Public model functions


def _checked(W, X, y, prior_precision=0.0):
    X = as_matrix(X)
    W = _as_float_array(W, "w")
    d = X.shape[1]
    if W.ndim != 2 or W.shape[0] != d or W.shape[1] < 2:
        raise ValueError(
            f"w must have shape (d, K) = ({d}, K) with one column per class, K >= 2, got shape {W.shape}"
        )
    _check_finite(W, "w")
    y, _ = as_class_labels(y, n=X.shape[0], n_classes=W.shape[1])
    lam = as_prior_precision(prior_precision, d)
    return W, X, y, lam


def softmax_log_likelihood(w, X, y):
    r"""Categorical log-likelihood of softmax regression.

    .. math:: \log p(\mathbf y \mid X, W) = \sum_n \log \operatorname{softmax}_{y_n}(W^\top \mathbf x_n)

    Book: chapter 13, equation ``eq-softmax-loglik``.

    Parameters
    ----------
    w : array_like of shape (d, K)
        One column of weights per class.
    X : array_like of shape (n, d)
    y : array_like of shape (n,), labels 0..K-1

    Examples
    --------
    >>> softmax_log_likelihood(np.zeros((2, 3)), np.eye(2), np.array([0, 2]))
    -2.197...
    """
    W, X, y, _ = _checked(w, X, y)
    return _log_likelihood(X @ W, y)


def softmax_log_posterior(w, X, y, prior_precision=0.0):
    r"""Log-likelihood plus the log Gaussian prior on every column (without its constant).

    .. math:: \log p(\mathbf y \mid X, W) - \frac12 \sum_k \mathbf w_k^\top \Lambda \mathbf w_k

    Book: chapter 13, equation ``eq-softmax-log-posterior``.

    Examples
    --------
    >>> softmax_log_posterior(np.ones((2, 3)), np.eye(2), np.array([0, 2]), 1.0)
    -5.197...
    """
    W, X, y, lam = _checked(w, X, y, prior_precision)
    return _log_posterior(W, X @ W, y, lam)


def softmax_gradient(w, X, y, prior_precision=0.0):
    r"""Gradient of :func:`softmax_log_posterior`, a (d, K) matrix like ``w``.

    .. math:: \nabla_W = X^\top (Y - P) - \Lambda W, \qquad P_{nk} = p(y_n = k \mid \mathbf x_n, W)

    Book: chapter 13, equation ``eq-softmax-loglik``.

    Examples
    --------
    >>> softmax_gradient(np.zeros((2, 2)), np.eye(2), np.array([0, 1]))
    array([[ 0.5, -0.5],
           [-0.5,  0.5]])
    """
    W, X, y, lam = _checked(w, X, y, prior_precision)
    A = X @ W
    return _gradient(W, X, _one_hot(y, W.shape[1]), np.exp(_log_softmax(A)), lam)


def softmax_hessian(w, X, y, prior_precision=0.0):
    r"""Hessian of :func:`softmax_log_posterior`, (dK, dK) in class-major order.

    .. math:: H_{kl} = -X^\top \operatorname{diag}\bigl(p_{nk}(\delta_{kl} - p_{nl})\bigr) X
              - \delta_{kl}\Lambda

    Entry ``(k * d + i, l * d + j)`` is the derivative with respect to ``w[i, k]`` and
    ``w[j, l]``.  Without a prior it is only negative *semi*-definite: the d vectors
    :math:`\mathbf e_j \otimes \mathbf 1_K` are in its null space.

    Book: chapter 13, equation ``eq-softmax-hessian``.

    Examples
    --------
    >>> H = softmax_hessian(np.zeros((1, 3)), np.ones((1, 1)), np.array([0]))
    >>> H.round(4)
    array([[-0.2222,  0.1111,  0.1111],
           [ 0.1111, -0.2222,  0.1111],
           [ 0.1111,  0.1111, -0.2222]])
    >>> bool(np.allclose(H @ np.ones(3), 0.0))   # one class is redundant
    True
    """
    W, X, y, lam = _checked(w, X, y, prior_precision)
    return -_negative_hessian(X, X @ W, lam)


# ---------------------------------------------------------------------------------------------
# Guarded Newton


def _margins(A, y):
    """a_{n, y_n} - max_{k != y_n} a_{nk}: positive where point n is classified correctly."""
    n = A.shape[0]
    own = A[np.arange(n), y]
    others = A.copy()
    others[np.arange(n), y] = -np.inf
    return own - np.max(others, axis=1)


def _quasi_separated(X, y, K):
    """True when some V (not a multiple of 1 in each row) has x_n^T (v_{y_n} - v_k) >= 0 for all n, k.

    The multi-class version of the linear programme in :func:`blrlib.optimize._quasi_separated`:
    maximise the sum of these margins subject to each being >= 0 and -1 <= V <= 1; the
    maximiser does not exist exactly when the optimum is positive.
    """
    from scipy.optimize import linprog

    n, d = X.shape
    if n * d * K > _LP_MAX_ENTRIES:
        return False
    rows = []
    for k in range(K):
        mask = y != k
        Xm, ym = X[mask], y[mask]
        R = np.zeros((Xm.shape[0], K, d))
        R[np.arange(Xm.shape[0]), ym] += Xm
        R[:, k] -= Xm
        rows.append(R.reshape(Xm.shape[0], K * d))
    Z = np.vstack(rows)
    res = linprog(-Z.sum(axis=0), A_ub=-Z, b_ub=np.zeros(Z.shape[0]), bounds=(-1.0, 1.0), method="highs")
    if res.status != 0:  # pragma: no cover - feasible (V = 0) and bounded
        return False
    scale = max(1.0, float(np.max(np.abs(X))))
    return bool(-res.fun > 1e-7 * scale)


def _separation(X, y, A, K, free):
    if free.size == 0:
        return _Separation.NONE
    margins = _margins(A, y)
    if free.size == X.shape[1] and np.all(margins > 0):
        return _Separation.COMPLETE
    if np.max(margins) > _SUSPICIOUS_MARGIN and _quasi_separated(X[:, free], y, K):
        return _Separation.QUASI
    return _Separation.NONE


class _Problem:
    """The validated data of one fit and the pieces every iteration reuses."""

    def __init__(self, X, y, K, lam):
        self.X, self.y, self.K, self.lam = X, y, K, lam
        self.d = X.shape[1]
        self.Y = _one_hot(y, K)
        self.free = _free_columns(lam, self.d)
        self.projector = _null_projector(self.free, self.d, K) if self.free.size else None
        self._bound = None

    def value(self, W, A):
        return _log_posterior(W, A, self.y, self.lam)

    def newton(self, W, A):
        """``(G, delta, decrement)``; delta is None when the Newton matrix cannot be factorised."""
        d, K = self.d, self.K
        G = _gradient(W, self.X, self.Y, np.exp(_log_softmax(A)), self.lam)
        Hn = _negative_hessian(self.X, A, self.lam)
        if self.projector is not None:
            # the null directions e_j (x) 1 of the free rows: the gradient is orthogonal to
            # them, so adding c * projector leaves the solution on their complement
            Hn += (np.trace(Hn) / Hn.shape[0] + 1.0) * self.projector
        g = _vec(G)
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                v = cho_solve(cho_factor(Hn, lower=False, check_finite=False), g, check_finite=False)
        except LinAlgError:
            return G, None, np.inf
        if not np.all(np.isfinite(v)):
            return G, None, np.inf
        return G, _unvec(v, d, K), float(g @ v)

    def bound_direction(self, G):
        r"""Böhning's bound: :math:`-H \preceq \frac12 (I - \mathbf 1\mathbf 1^\top/K) \otimes X^\top X + I \otimes \Lambda`.

        Its inverse applied to G: the part of G whose rows sum to zero is solved with
        :math:`X^\top X / 2 + \Lambda`, the row means with :math:`\Lambda` alone (0 on free rows).
        """
        if self._bound is None:
            B = 0.5 * (self.X.T @ self.X)
            B[np.diag_indices_from(B)] += self.lam
            self._bound = cho_factor(B, lower=False, check_finite=False)
        mean = G.mean(axis=1, keepdims=True)
        delta = cho_solve(self._bound, G - mean, check_finite=False)
        lam = np.broadcast_to(np.asarray(self.lam, dtype=float), (self.d,))
        with np.errstate(divide="ignore", invalid="ignore"):
            row = np.where(lam > 0, mean[:, 0] / lam, 0.0)
        return delta + row[:, None]

    def line_search(self, W, f, delta, slope, expand):
        """Halve from t = 1 until the Armijo condition holds (as ``optimize._line_search``)."""

        def trial(t):
            with np.errstate(over="ignore", invalid="ignore"):
                W_t = W + t * delta
                A_t = self.X @ W_t
                f_t = self.value(W_t, A_t)
            ok = np.isfinite(f_t) and f_t >= f + _ARMIJO * t * slope
            return ok, (t, W_t, A_t, f_t)

        t = 1.0
        for _ in range(_MAX_HALVINGS):
            ok, best = trial(t)
            if ok:
                break
            t *= 0.5
        else:
            return None
        while expand and t < 2.0**_MAX_HALVINGS:
            ok, bigger = trial(2.0 * best[0])
            if not (ok and bigger[3] > best[3]):
                break
            best = bigger
        return best

    def toward_origin(self, W, A, f):
        """The best of c * W, c = 1/2, 1/4, ..., 0, if it beats W (as ``optimize._toward_origin``)."""
        best = None
        for k in range(1, _MAX_HALVINGS + 2):
            c = 0.0 if k == _MAX_HALVINGS + 1 else 2.0**-k
            f_c = self.value(c * W, c * A)
            if best is not None and f_c <= best[3]:
                break
            if f_c > f and (best is None or f_c > best[3]):
                best = (c, c * W, c * A, f_c)
        return best


def _softmax_irls(X, y, K, lam, W, max_iter, tol, callback=None):
    """Guarded Newton for softmax regression on validated input; returns an :class:`_Outcome`.

    The same iteration as :func:`blrlib.optimize._irls` (chapter 3): the Newton direction,
    the bound direction where it fails, Armijo backtracking, the step towards the origin
    when the Newton step had to be cut very short.
    """
    prob = _Problem(X, y, K, lam)
    d, free = prob.d, prob.free
    W = _centre_free(W, free)
    A = X @ W
    f = prob.value(W, A)
    history = []
    stop, decrement = _Stop.MAX_ITER, np.inf
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        if free.size == d and np.all(_margins(A, y) > 0):
            stop = _Stop.SEPARATED
            n_iter -= 1
            break
        G, delta, decrement = prob.newton(W, A)
        if delta is None and free.size:
            error = _rank_error(X, free)
            if error is not None:
                raise error
        if decrement <= tol:
            W = W + delta
            A = X @ W
            f = max(f, prob.value(W, A))
            stop = _Stop.CONVERGED
        else:
            step = None if delta is None else prob.line_search(W, f, delta, decrement, expand=False)
            if step is None or step[0] < _SHORT_STEP:
                if step is None:
                    delta_b = prob.bound_direction(G)
                    step = prob.line_search(W, f, delta_b, float(np.sum(G * delta_b)), expand=True)
                radial = prob.toward_origin(W, A, f)
                if radial is not None and (step is None or radial[3] > step[3]):
                    step = radial
            if step is None:
                n_iter -= 1
                resolved = np.isfinite(decrement) and decrement <= _RESOLUTION * (1.0 + abs(f))
                stop = _Stop.CONVERGED if resolved else _Stop.STALLED
                break
            _, W, A, f = step
        history.append(f)
        if callback is not None:
            callback(W.copy(), n_iter)
        if stop is _Stop.CONVERGED:
            break
    W = _centre_free(W, free)  # remove the round-off that crept along the null directions
    separation = _separation(X, y, A, K, free)
    if separation is not _Separation.NONE:
        stop = _Stop.SEPARATED
    detail = f"Newton decrement {decrement:.3g} > tol={tol:g}"
    if stop is _Stop.STALLED:
        detail = f"{decrement:.3g}"
    fit = FitResult(w=W, n_iter=n_iter, converged=stop is _Stop.CONVERGED, history=np.asarray(history))
    return _Outcome(fit, stop, separation, detail)


def _prepare(X, y, prior_precision, w0, max_iter, tol, callback):
    X = as_matrix(X)
    y, K = as_class_labels(y, n=X.shape[0])
    d = X.shape[1]
    lam = as_prior_precision(prior_precision, d)
    if w0 is None:
        W = np.zeros((d, K))
    else:
        W = _as_float_array(w0, "w0")
        if W.shape != (d, K):
            raise ValueError(f"w0 must have shape (d, K) = ({d}, {K}), got shape {W.shape}")
        _check_finite(W, "w0")
        W = W.copy()
    check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol")
    return X, y, K, lam, W, tol, as_callback(callback)


def softmax_irls(X, y, prior_precision=0.0, *, max_iter=100, tol=1e-10, w0=None, callback=None):
    r"""Maximise the softmax log posterior by guarded Newton steps (multi-class IRLS).

    .. math:: \operatorname{vec}(\Delta_t) = (-H_t)^{-1} \operatorname{vec}(\nabla_{W} \log p(W_t \mid \mathcal D)),
              \qquad W_{t+1} = W_t + \tau_t \Delta_t

    with the Hessian :math:`H` of :func:`softmax_hessian` and the step length
    :math:`\tau_t` found by backtracking from 1 (the Armijo condition of chapter 3), so
    ``history`` never decreases.  All K columns are kept: with a Gaussian prior on every
    column the maximiser is unique.  Without one (``prior_precision=0``, or zero entries)
    the log-likelihood is flat along :math:`W \to W + \mathbf v \mathbf 1^\top` for the
    unpenalised rows; the Newton system is then solved on the complement of those
    directions and the result is centred, so that its columns sum to zero.  Where the
    Newton matrix cannot be factorised (saturated predictions) the step uses Böhning's
    (1992) bound :math:`\frac12 (I - \mathbf 1\mathbf 1^\top/K) \otimes X^\top X + I \otimes \Lambda`.

    One Newton iteration makes one pass over the data: one BLAS ``syrk`` of an
    n x d(K-1) matrix for the off-diagonal blocks of the Hessian, one product for the
    blocks of the last class and K ``syrk`` of n x d for the diagonal ones, then a
    dK x dK Cholesky solve.

    Book: chapter 13, equations ``eq-softmax-newton`` and ``eq-softmax-hessian``; chapter 3
    for the guarded step.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), labels 0..K-1 (K = max(y) + 1 >= 2)
    prior_precision : float or array_like of shape (d,), default 0
        :math:`\lambda \ge 0`, or one precision per row of W (per feature), the same
        for every class.
    max_iter : int, default 100
    tol : float, default 1e-10
        Converged when the Newton decrement :math:`\mathbf g^\top (-H)^{-1} \mathbf g` is
        at most ``tol``; the full step is then taken.
    w0 : array_like of shape (d, K), optional
        Starting weights; zeros by default.
    callback : callable, optional
        ``callback(w, t)`` after each iteration t with a copy of the (d, K) weights.

    Returns
    -------
    FitResult
        ``w`` of shape (d, K).

    Warns
    -----
    ConvergenceWarning
        If ``max_iter`` is reached, or the maximiser does not exist because the classes
        are (quasi-)separable in the columns without a prior.

    Raises
    ------
    ValueError
        If the columns of ``X`` with zero prior precision are linearly dependent.

    Examples
    --------
    >>> x = np.array([-1.0, -0.5, 0.1, 0.4, 1.0, 0.2, -0.8, 0.7])
    >>> X = np.column_stack([np.ones(8), x])
    >>> fit = softmax_irls(X, np.array([0, 1, 0, 2, 2, 1, 2, 0]))
    >>> fit.converged, fit.n_iter, fit.w.shape
    (True, 4, (2, 3))
    >>> bool(np.allclose(fit.w.sum(axis=1), 0.0))   # no prior: centred
    True
    >>> bool(np.all(np.diff(fit.history) >= 0))
    True
    """
    X, y, K, lam, W, tol, callback = _prepare(X, y, prior_precision, w0, max_iter, tol, callback)
    outcome = _softmax_irls(X, y, K, lam, W, max_iter, tol, callback)
    _warn("softmax_irls", outcome, max_iter, lam, X.shape[1])
    return outcome.fit
