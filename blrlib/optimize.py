r"""Finding the maximum of the log posterior: gradient ascent and guarded Newton / IRLS.

Book: chapter 2 (gradient ascent, equation ``eq-gradient-ascent``) and
chapter 3 (Newton's method as iteratively reweighted least squares,
equations ``eq-newton`` and ``eq-irls``, with the backtracking line search of
equation ``eq-ch3-armijo``).

Both optimisers return a :class:`FitResult`.  Neither runs forever: each stops
after ``max_iter`` iterations at the latest and says whether it converged.  When
the maximiser does not exist because the data are separable in the columns that
have no prior (every column when ``prior_precision=0``), the optimisers stop with
finite weights, ``converged=False`` and a :class:`ConvergenceWarning` that suggests
a prior.  Quasi-separation (some points lie on the separating hyperplane) is
decided by a small linear programme when a fit looks suspicious.

The private :func:`_irls` and :func:`_gradient_ascent` return the fit together with
an explicit :class:`_Outcome` (why the iteration stopped, and whether the data are
separated); the public functions turn an unsuccessful outcome into a warning, and
:func:`~blrlib.laplace_posterior` turns it into its own error or warning.
"""

import enum
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.special import expit

from ._validation import (
    as_callback,
    as_labels,
    as_matrix,
    as_prior_precision,
    as_weights,
    check_int,
    check_positive,
)
from .logistic import _gradient, _log_posterior, _signs, _weighted_gram

__all__ = ["ConvergenceWarning", "FitResult", "gradient_ascent", "irls"]


class ConvergenceWarning(UserWarning):
    """An iteration stopped without converging (for example on separable data without a prior)."""


@dataclass(frozen=True)
class FitResult:
    """The outcome of an optimiser.

    Attributes
    ----------
    w : ndarray of shape (d,)
        The final weights.
    n_iter : int
        Number of iterations taken.
    converged : bool
        Whether the stopping criterion was met before ``max_iter``.
    history : ndarray of shape (n_iter,)
        The log posterior after each iteration (``history[t - 1]`` after iteration
        t); empty when the starting point already met the stopping rule.
    """

    w: np.ndarray
    n_iter: int
    converged: bool
    history: np.ndarray = field(repr=False)

    def __repr__(self):
        w = np.array2string(self.w, precision=4, separator=", ", threshold=8)
        last = f", log_posterior={self.history[-1]:.6g}" if len(self.history) else ""
        return f"FitResult(w={w}, n_iter={self.n_iter}, converged={self.converged}{last})"


class _Separation(enum.Enum):
    """Whether the data leave the maximiser undefined, decided after a fit."""

    NONE = "none"  # the maximiser exists (or the fit gave no reason to doubt it)
    COMPLETE = "complete"  # the final weights put every point strictly on its correct side
    QUASI = "quasi"  # some v != 0 has s_n x_n^T v >= 0 for all n (linear programme)


class _Stop(enum.Enum):
    """Why an iteration stopped."""

    CONVERGED = "converged"
    MAX_ITER = "max_iter"
    SEPARATED = "separated"  # see the _Separation value
    OVERFLOW = "overflow"  # gradient ascent: the iterates overflowed (step too large)
    STALLED = "stalled"  # guarded Newton: no step increased the log posterior


@dataclass(frozen=True)
class _Outcome:
    """A fit with the explicit reason it stopped (the status the public functions report)."""

    fit: FitResult
    stop: _Stop
    separation: _Separation
    detail: str = ""  # the last stopping quantity, for messages

    @property
    def converged(self):
        return self.stop is _Stop.CONVERGED


def _prepare(X, y, prior_precision, w0, max_iter, tol, callback):
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    lam = as_prior_precision(prior_precision, X.shape[1])
    w = np.zeros(X.shape[1]) if w0 is None else as_weights(w0, X.shape[1], name="w0").copy()
    check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol")
    return X, y, lam, w, tol, as_callback(callback)


def _free_columns(lam, d):
    """Indices of the weights with zero prior precision (a flat prior on them)."""
    if np.ndim(lam) == 0:
        return np.arange(d) if lam == 0 else np.arange(0)
    return np.flatnonzero(np.asarray(lam) == 0)


def _describe_columns(free, d):
    if free.size == d:
        return ""
    return f" in the columns with zero prior precision (indices {free.tolist()})"


def _separates(a, y):
    """True when every training point lies strictly on its correct side."""
    return bool(np.all(_signs(y) * a > 0))


# A fitted margin s_n a_n above this puts p_n within 2e-9 of its label.  When IRLS stops on
# quasi-separable data, the points it separates have margins of about -log(tol) = 23 (their
# share of the Newton decrement is about exp(-margin)), so a larger margin calls for the
# linear programme below.  It is skipped for data sets larger than _LP_MAX_ENTRIES = n * d
# (about a second of HiGHS here; 200,000 x 20 would take 4 s).
_SUSPICIOUS_MARGIN = 20.0
_LP_MAX_ENTRIES = 2_000_000


def _quasi_separated(X, y):
    """True when some v != 0 has s_n x_n^T v >= 0 for every n, with some inequality strict.

    Then (complete or quasi-complete separation) the log-likelihood keeps increasing
    along v and the maximum-likelihood estimate does not exist (Albert and Anderson
    1984).  Decided by the linear programme max sum_n s_n x_n^T v subject to
    s_n x_n^T v >= 0 and -1 <= v_j <= 1, whose optimum is 0 exactly when no such v
    exists (Konis 2007).  Returns False without deciding for more than
    ``_LP_MAX_ENTRIES`` entries in X.
    """
    from scipy.optimize import linprog  # only needed in this rare check

    if X.size > _LP_MAX_ENTRIES:
        return False
    Z = _signs(y)[:, None] * X
    res = linprog(-Z.sum(axis=0), A_ub=-Z, b_ub=np.zeros(X.shape[0]), bounds=(-1.0, 1.0), method="highs")
    if res.status != 0:  # pragma: no cover - the programme is feasible (v = 0) and bounded
        return False
    scale = max(1.0, float(np.max(np.abs(X))))
    return bool(-res.fun > 1e-7 * scale)


def _separation(X, y, a, lam, free):
    """The one post-check of both optimisers: do the data leave the maximiser undefined?

    Only the columns with zero prior precision (``free``) can run off to infinity: a
    Gaussian prior on every weight makes the log posterior coercive, so its maximum
    exists.  With no prior at all, final weights that separate the data strictly
    settle it at once; otherwise, when some fitted probability is within 2e-9 of its
    label, the linear programme of :func:`_quasi_separated` on the free columns decides.
    """
    if free.size == 0:
        return _Separation.NONE
    if free.size == X.shape[1] and _separates(a, y):
        return _Separation.COMPLETE
    if np.max(_signs(y) * a) > _SUSPICIOUS_MARGIN and _quasi_separated(X[:, free], y):
        return _Separation.QUASI
    return _Separation.NONE


def _separation_reason(separation, free, d):
    """Why the maximiser does not exist, and what to do, for a separated outcome."""
    prior = "e.g. prior_precision=1.0" if free.size == d else "a positive precision on those columns"
    if separation is _Separation.COMPLETE:
        return (
            f"the data look linearly separable, so the maximum-likelihood weights are infinite "
            f"(the current weights classify every training point correctly and grow without "
            f"bound). Use a Gaussian prior, {prior}."
        )
    return (
        f"the data look quasi-separable{_describe_columns(free, d)} (a hyperplane puts every "
        f"training point on its correct side or on the hyperplane itself), so the maximiser "
        f"does not exist and the weights grow without bound along that direction. Use a "
        f"Gaussian prior, {prior}."
    )


def _message(name, outcome, max_iter, free, d):
    """The ConvergenceWarning text for an outcome that is not CONVERGED."""
    if outcome.separation is not _Separation.NONE:
        return f"{name} stopped without converging: {_separation_reason(outcome.separation, free, d)}"
    if outcome.stop is _Stop.OVERFLOW:
        return f"{name} stopped: the iterates overflowed ({outcome.detail} is too large); use a smaller step_size."
    if outcome.stop is _Stop.STALLED:
        return (
            f"{name} stopped after {outcome.fit.n_iter} iterations: no step increased the log "
            f"posterior although the Newton decrement is {outcome.detail}; the problem is too "
            f"badly scaled for double precision (standardise the features)."
        )
    return f"{name} did not converge in max_iter={max_iter} iterations ({outcome.detail}); increase max_iter."


def _warn(name, outcome, max_iter, lam, d):
    if not outcome.converged:
        msg = _message(name, outcome, max_iter, _free_columns(lam, d), d)
        warnings.warn(msg, ConvergenceWarning, stacklevel=3)


# ---------------------------------------------------------------------------------------------
# Gradient ascent (chapter 2)


def _gradient_ascent(X, y, lam, w, eta, max_iter, tol, callback):
    """Fixed-step gradient ascent from ``w`` on validated input; returns an :class:`_Outcome`."""
    a = X @ w
    history = []
    g = _gradient(w, X, y, expit(a), lam)
    converged = bool(np.max(np.abs(g)) <= tol)
    overflow = False
    n_iter = 0
    while not converged and n_iter < max_iter:
        with np.errstate(over="ignore", invalid="ignore"):
            w_new = w + eta * g
            a_new = X @ w_new
            value = _log_posterior(w_new, a_new, y, lam)
            g_new = _gradient(w_new, X, y, expit(a_new), lam)
        if not (np.isfinite(value) and np.all(np.isfinite(g_new)) and np.all(np.isfinite(a_new))):
            overflow = True  # keep the last finite iterate
            break
        n_iter += 1
        w, a, g = w_new, a_new, g_new
        history.append(value)
        if callback is not None:
            callback(w.copy(), n_iter)
        converged = bool(np.max(np.abs(g)) <= tol)
    free = _free_columns(lam, X.shape[1])
    separation = _Separation.NONE if overflow else _separation(X, y, a, lam, free)
    if separation is not _Separation.NONE:
        stop = _Stop.SEPARATED
    elif overflow:
        stop = _Stop.OVERFLOW
    elif converged:
        stop = _Stop.CONVERGED
    else:
        stop = _Stop.MAX_ITER
    detail = f"step_size={eta:g}" if overflow else f"largest gradient component {np.max(np.abs(g)):.3g} > tol={tol:g}"
    fit = FitResult(w=w, n_iter=n_iter, converged=stop is _Stop.CONVERGED, history=np.asarray(history))
    return _Outcome(fit, stop, separation, detail)


def gradient_ascent(X, y, prior_precision=0.0, step_size=None, max_iter=10_000, tol=1e-6, w0=None, callback=None):
    r"""Maximise the log posterior by gradient ascent with a fixed step.

    .. math:: \mathbf w_{t+1} = \mathbf w_t + \eta\, \nabla_{\mathbf w} \log p(\mathbf w_t \mid \mathcal D)

    Book: chapter 2, equation ``eq-gradient-ascent``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    prior_precision : float or array_like of shape (d,), default 0
        :math:`\lambda \ge 0`, or one precision per weight.
    step_size : float, optional
        :math:`\eta`.  The default :math:`1/\rho` with
        :math:`\rho = \|X\|_2^2 / 4 + \max_j \lambda_j`, a bound on the curvature
        (chapter 2, equation ``eq-ch2-lipschitz``), makes every step increase the
        objective.
    max_iter : int, default 10000
    tol : float, default 1e-6
        Converged when :math:`\|\nabla\|_\infty \le` ``tol``.
    w0 : array_like of shape (d,), optional
        Starting weights; zeros by default.
    callback : callable, optional
        ``callback(w, t)`` is called after each iteration ``t = 1, 2, ...`` with a
        copy of the weights :math:`\mathbf w_t`.

    Returns
    -------
    FitResult

    Warns
    -----
    ConvergenceWarning
        If ``max_iter`` is reached, if the iterates overflow (a step size far too
        large), or if the data are separable in the columns without a prior.

    Examples
    --------
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> fit = gradient_ascent(X, np.array([0, 0, 1, 1]), prior_precision=0.1)
    >>> fit.converged
    True
    >>> iterates = {}
    >>> fit = gradient_ascent(X, np.array([0, 0, 1, 1]), prior_precision=0.1,
    ...                       callback=lambda w, t: iterates.update({t: w}))
    >>> len(iterates) == fit.n_iter and np.array_equal(iterates[fit.n_iter], fit.w)
    True
    """
    X, y, lam, w, tol, callback = _prepare(X, y, prior_precision, w0, max_iter, tol, callback)
    if step_size is None:
        step_size = 1.0 / (np.linalg.norm(X, 2) ** 2 / 4.0 + float(np.max(lam)))
    eta = check_positive(step_size, "step_size")
    outcome = _gradient_ascent(X, y, lam, w, eta, max_iter, tol, callback)
    _warn("gradient_ascent", outcome, max_iter, lam, X.shape[1])
    return outcome.fit


# ---------------------------------------------------------------------------------------------
# Guarded Newton / IRLS (chapter 3)

# Armijo constant of the backtracking line search: accept the step t * delta when the log
# posterior rises by at least _ARMIJO * t * (g^T delta).  Newton's full step passes near the
# maximum (any constant below 1/2 keeps the quadratic convergence).
_ARMIJO = 1e-4
_MAX_HALVINGS = 60
# Below this decrement relative to |log posterior| a failed line search is a rounding effect:
# the predicted gain is then smaller than the error of summing n log-likelihood terms.
_RESOLUTION = 1e-9
# A Newton step cut below this length means the quadratic model is far off (saturated
# predictions); the iteration then also tries the step towards the origin.
_SHORT_STEP = 2.0**-10


def _newton_direction(X, a, y, w, lam):
    """Solve (X^T S X + Lambda) delta = gradient by Cholesky.

    Returns ``(g, delta, decrement)``; ``delta`` is None when the matrix is singular
    to working precision (linearly dependent columns, or curvature weights p(1-p)
    that underflowed because the predictions saturated) or the solve overflows.
    """
    p = expit(a)
    g = _gradient(w, X, y, p, lam)
    A = _weighted_gram(X, p * expit(-a))  # expit(-a) = 1 - p without cancellation near p = 1
    A[np.diag_indices_from(A)] += lam
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            delta = cho_solve(cho_factor(A, lower=False, check_finite=False), g, check_finite=False)
    except LinAlgError:
        return g, None, np.inf
    if not np.all(np.isfinite(delta)):
        return g, None, np.inf
    return g, delta, float(g @ delta)


class _BoundStep:
    r"""Fallback direction from the global curvature bound :math:`B = X^\top X/4 + \Lambda`.

    :math:`B` dominates the negative Hessian everywhere (every :math:`S_{nn} \le 1/4`),
    so :math:`\mathbf w + B^{-1}\mathbf g` maximises a quadratic lower bound of the
    log posterior and always increases it (Bohning's bound).  Used where the Newton
    matrix is singular because the predictions saturated; factorised once, on demand.
    """

    def __init__(self, X, lam):
        self.X, self.lam, self._factor = X, lam, None

    def direction(self, g):
        if self._factor is None:
            B = 0.25 * _weighted_gram(self.X, np.ones(self.X.shape[0]))
            B[np.diag_indices_from(B)] += self.lam
            self._factor = cho_factor(B, lower=False, check_finite=False)
        return cho_solve(self._factor, g, check_finite=False)


def _rank_error(X, free):
    """The error for a singular Newton matrix when the free columns of X are dependent, else None."""
    rank = int(np.linalg.matrix_rank(X[:, free]))
    if rank == free.size:
        return None
    if free.size == X.shape[1]:
        what = f"X has rank {rank} < d = {X.shape[1]}: its columns are linearly dependent"
    else:
        what = (
            f"the columns of X with zero prior precision (indices {free.tolist()}) have rank "
            f"{rank} < {free.size}: they are linearly dependent"
        )
    return ValueError(
        f"{what}, so the maximiser is not unique; remove the dependent columns or give "
        f"those weights a positive prior precision"
    )


def _line_search(X, y, lam, w, f, delta, slope, expand):
    """Step length for ``w + t * delta``: halve from t = 1 until the Armijo condition holds.

    With ``expand`` (the bound direction, whose unit step always rises) the length is
    doubled while the log posterior keeps rising.  Returns ``(t, w_new, a_new, f_new)``,
    or None when no tried step rises by the Armijo margin.
    """

    def trial(t):
        with np.errstate(over="ignore", invalid="ignore"):
            w_t = w + t * delta
            a_t = X @ w_t
            f_t = _log_posterior(w_t, a_t, y, lam)
        ok = np.isfinite(f_t) and f_t >= f + _ARMIJO * t * slope
        return ok, (t, w_t, a_t, f_t)

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


def _toward_origin(y, lam, w, a, f):
    """The best of the points ``c * w``, c = 1/2, 1/4, ..., 2^-60 and 0, if it beats ``w``.

    A line search along the ascent direction -w: the log posterior is concave along the
    ray, so the scan stops once it falls again.  Far out, where the predictions are
    saturated and the log-likelihood is nearly piecewise linear, one such step brings the
    activations back to a scale where Newton's quadratic model holds.  Returns
    ``(c, w_new, a_new, f_new)`` or None; costs O(n) per point (``a = X w`` is rescaled).
    """
    best = None
    for k in range(1, _MAX_HALVINGS + 2):
        c = 0.0 if k == _MAX_HALVINGS + 1 else 2.0**-k
        f_c = _log_posterior(c * w, c * a, y, lam)
        if best is not None and f_c <= best[3]:
            break
        if f_c > f and (best is None or f_c > best[3]):
            best = (c, c * w, c * a, f_c)
    return best


def _irls(X, y, lam, w, max_iter, tol, callback=None):
    """Guarded Newton iteration from ``w`` on validated input; returns an :class:`_Outcome`.

    Each iteration: the Newton direction (chapter 3, ``eq-newton``); if it cannot be
    computed, the bound direction of :class:`_BoundStep`; then a backtracking line
    search on the log posterior (``eq-ch3-armijo``), so the log posterior never
    decreases.  Converged when the Newton decrement is at most ``tol``.
    """
    d = X.shape[1]
    free = _free_columns(lam, d)
    bound = _BoundStep(X, lam)
    a = X @ w
    f = _log_posterior(w, a, y, lam)
    history = []
    stop, decrement = _Stop.MAX_ITER, np.inf
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        if free.size == d and _separates(a, y):
            stop = _Stop.SEPARATED
            n_iter -= 1
            break
        g, delta, decrement = _newton_direction(X, a, y, w, lam)
        if delta is None:
            error = _rank_error(X, free) if free.size else None
            if error is not None:
                raise error
        if decrement <= tol:
            # converged: the full Newton step is one quadratic step better and is always
            # taken.  Its gain, decrement / 2, can be below the rounding error of the log
            # posterior (a sum of n terms); a value that rounding shows lower than the last
            # one is then not recorded, so that the history never decreases.
            w = w + delta
            a = X @ w
            f = max(f, _log_posterior(w, a, y, lam))
            stop = _Stop.CONVERGED
        else:
            step = None if delta is None else _line_search(X, y, lam, w, f, delta, decrement, expand=False)
            if step is None or step[0] < _SHORT_STEP:
                # far from the maximum: where Newton fails (a singular matrix, no acceptable
                # length) the bound step; and a step towards the origin when that rises more
                # than a Newton step that had to be cut very short
                if step is None:
                    delta_b = bound.direction(g)
                    step = _line_search(X, y, lam, w, f, delta_b, float(g @ delta_b), expand=True)
                radial = _toward_origin(y, lam, w, a, f)
                if radial is not None and (step is None or radial[3] > step[3]):
                    step = radial
            if step is None:
                # nothing rises by the Armijo margin: at the resolution of double precision
                # this is convergence, otherwise the problem is too badly scaled
                n_iter -= 1
                resolved = np.isfinite(decrement) and decrement <= _RESOLUTION * (1.0 + abs(f))
                stop = _Stop.CONVERGED if resolved else _Stop.STALLED
                break
            _, w, a, f = step
        history.append(f)
        if callback is not None:
            callback(w.copy(), n_iter)
        if stop is _Stop.CONVERGED:
            break
    separation = _separation(X, y, a, lam, free)
    if separation is not _Separation.NONE:
        stop = _Stop.SEPARATED
    detail = f"Newton decrement {decrement:.3g} > tol={tol:g}"
    if stop is _Stop.STALLED:
        detail = f"{decrement:.3g}"
    fit = FitResult(w=w, n_iter=n_iter, converged=stop is _Stop.CONVERGED, history=np.asarray(history))
    return _Outcome(fit, stop, separation, detail)


def irls(X, y, prior_precision=0.0, max_iter=100, tol=1e-10, w0=None, callback=None):
    r"""Maximise the log posterior by guarded Newton steps, i.e. iteratively reweighted least squares.

    .. math:: \boldsymbol\delta_t = (X^\top S_t X + \lambda I)^{-1}
              \left(X^\top(\mathbf y - \mathbf p_t) - \lambda \mathbf w_t\right),
              \qquad \mathbf w_{t+1} = \mathbf w_t + \tau_t \boldsymbol\delta_t

    The step length :math:`\tau_t` is found by backtracking: starting from the
    full Newton step :math:`\tau = 1`, it is halved until the log posterior rises by
    at least :math:`10^{-4}\,\tau\, \mathbf g_t^\top \boldsymbol\delta_t` (the Armijo
    condition).  Near the maximum the full step passes, so the convergence stays
    quadratic; far from it the halving prevents the overshooting that makes plain
    Newton cycle or diverge.  The log posterior therefore never decreases and the
    iteration converges from every start whenever the maximiser exists.  Where the
    Newton matrix is singular because the predictions have saturated, the step
    uses the global curvature bound :math:`X^\top X/4 + \lambda I` instead; and
    when the Newton step must be cut below :math:`2^{-10}` or fails, the best point
    :math:`c\,\mathbf w_t`, :math:`c = 2^{-k}`, is taken instead if it is higher
    (from a start far out, where every prediction is saturated, this brings the
    weights back in one step).

    Each Newton iteration makes one pass over the data to form :math:`X^\top S X`
    (a symmetric rank-n update) and solves with a Cholesky factor.

    Book: chapter 3, equations ``eq-newton``, ``eq-irls`` and ``eq-ch3-armijo``;
    chapter 4 for the prior.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    prior_precision : float or array_like of shape (d,), default 0
        :math:`\lambda \ge 0`, or one precision :math:`\lambda_j \ge 0` per weight
        (the matrix :math:`\Lambda = \operatorname{diag}(\lambda_j)` replaces
        :math:`\lambda I`); a zero entry leaves its weight without a prior.
    max_iter : int, default 100
    tol : float, default 1e-10
        Converged when the Newton decrement
        :math:`\mathbf g_t^\top (X^\top S_t X + \lambda I)^{-1} \mathbf g_t`, twice the
        predicted gain of the step, falls below ``tol``.  The full step is still
        taken, so the returned weights are one quadratic step better than that.
        (Its gain may be smaller than the rounding error of the log posterior;
        ``history[-1]`` then repeats the previous value rather than show a
        rounding-level decrease.)
    w0 : array_like of shape (d,), optional
        Starting weights; zeros by default.
    callback : callable, optional
        ``callback(w, t)`` is called after each iteration ``t = 1, 2, ...`` with a
        copy of the weights :math:`\mathbf w_t`.

    Returns
    -------
    FitResult

    Warns
    -----
    ConvergenceWarning
        If ``max_iter`` is reached, or if the maximiser does not exist because the
        data are separable in the columns with zero prior precision (all columns
        when ``prior_precision=0``): linearly separable (the iteration stops as
        soon as its weights separate the classes) or quasi-separable (checked by a
        linear programme, for n * d up to 2e6, whenever a fitted probability comes
        within 2e-9 of its label).

    Raises
    ------
    ValueError
        If the columns of ``X`` with zero prior precision are linearly dependent
        (then the maximiser is not unique); the message gives the rank of those
        columns.

    Examples
    --------
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> fit = irls(X, np.array([0, 0, 1, 1]))
    >>> fit.converged, fit.n_iter
    (True, 4)
    >>> bool(np.all(np.diff(fit.history) >= 0))
    True
    """
    X, y, lam, w, tol, callback = _prepare(X, y, prior_precision, w0, max_iter, tol, callback)
    outcome = _irls(X, y, lam, w, max_iter, tol, callback)
    _warn("irls", outcome, max_iter, lam, X.shape[1])
    return outcome.fit
