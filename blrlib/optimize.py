r"""Finding the maximum of the log posterior: gradient ascent and Newton / IRLS.

Book: chapter 2 (gradient ascent, equation ``eq-gradient-ascent``) and
chapter 3 (Newton's method as iteratively reweighted least squares,
equations ``eq-newton`` and ``eq-irls``).

Both optimisers return a :class:`FitResult`.  Neither runs forever: each stops
after ``max_iter`` iterations at the latest and says whether it converged.  With
``prior_precision=0`` on linearly separable data the maximum-likelihood weights
are infinite; the optimisers then stop with finite weights, ``converged=False``
and a :class:`ConvergenceWarning` that suggests a prior.  The same holds for
quasi-separable data (some points lie on the separating hyperplane), which a
small linear programme detects when a fit looks suspicious.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.special import expit

from ._validation import as_labels, as_matrix, as_weights, check_int, check_nonnegative, check_positive
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


def _prepare(X, y, prior_precision, w0, max_iter, tol):
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    lam = check_nonnegative(prior_precision, "prior_precision")
    w = np.zeros(X.shape[1]) if w0 is None else as_weights(w0, X.shape[1], name="w0").copy()
    check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol")
    return X, y, lam, w, tol


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


def _warn_not_converged(name, max_iter, separable, detail=""):
    if separable == "quasi":
        msg = (
            f"{name} stopped without converging: the data look quasi-separable (a hyperplane "
            f"puts every training point on its correct side or on the hyperplane itself), so "
            f"the maximum-likelihood weights are infinite and grow without bound along that "
            f"direction. Use a Gaussian prior, e.g. prior_precision=1.0."
        )
    elif separable:
        msg = (
            f"{name} stopped without converging: the data look linearly separable, so the "
            f"maximum-likelihood weights are infinite (the current weights classify every "
            f"training point correctly and grow without bound). Use a Gaussian prior, e.g. "
            f"prior_precision=1.0."
        )
    else:
        msg = f"{name} did not converge in max_iter={max_iter} iterations{detail}; increase max_iter or tol."
    warnings.warn(msg, ConvergenceWarning, stacklevel=3)


def gradient_ascent(X, y, prior_precision=0.0, step_size=None, max_iter=10_000, tol=1e-6, w0=None):
    r"""Maximise the log posterior by gradient ascent with a fixed step.

    .. math:: \mathbf w_{t+1} = \mathbf w_t + \eta\, \nabla_{\mathbf w} \log p(\mathbf w_t \mid \mathcal D)

    Book: chapter 2, equation ``eq-gradient-ascent``.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    prior_precision : float, default 0
    step_size : float, optional
        :math:`\eta`.  The default :math:`1/L` with
        :math:`L = \|X\|_2^2 / 4 + \lambda`, a bound on the curvature, makes every
        step increase the objective.
    max_iter : int, default 10000
    tol : float, default 1e-6
        Converged when :math:`\|\nabla\|_\infty \le` ``tol``.
    w0 : array_like of shape (d,), optional
        Starting weights; zeros by default.

    Returns
    -------
    FitResult

    Examples
    --------
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> fit = gradient_ascent(X, np.array([0, 0, 1, 1]), prior_precision=0.1)
    >>> fit.converged
    True
    """
    X, y, lam, w, tol = _prepare(X, y, prior_precision, w0, max_iter, tol)
    if step_size is None:
        step_size = 1.0 / (np.linalg.norm(X, 2) ** 2 / 4.0 + lam)
    eta = check_positive(step_size, "step_size")
    a = X @ w
    history = []
    g = _gradient(w, X, y, expit(a), lam)
    converged = bool(np.max(np.abs(g)) <= tol)
    diverged = False
    n_iter = 0
    while not converged and n_iter < max_iter:
        with np.errstate(over="ignore", invalid="ignore"):
            w_new = w + eta * g
            a_new = X @ w_new
            value = _log_posterior(w_new, a_new, y, lam)
            g_new = _gradient(w_new, X, y, expit(a_new), lam)
        if not (np.isfinite(value) and np.all(np.isfinite(g_new)) and np.all(np.isfinite(a_new))):
            diverged = True  # keep the last finite iterate
            break
        n_iter += 1
        w, a, g = w_new, a_new, g_new
        history.append(value)
        converged = bool(np.max(np.abs(g)) <= tol)
    separable = lam == 0 and _separates(a, y)
    converged = converged and not separable
    if (not converged and lam == 0 and not separable and not diverged
            and np.max(_signs(y) * a) > _SUSPICIOUS_MARGIN and _quasi_separated(X, y)):
        separable = "quasi"
    if not converged:
        detail = f" (the iterates overflowed: step_size={eta:g} is too large)" if diverged else ""
        _warn_not_converged("gradient_ascent", max_iter, separable, detail)
    return FitResult(w=w, n_iter=n_iter, converged=converged, history=np.asarray(history))


def _newton_direction(X, a, y, w, lam):
    """Solve (X^T S X + lam I) delta = gradient by Cholesky; return delta and the decrement."""
    p, q = expit(a), expit(-a)  # q = 1 - p without cancellation when p is near 1
    g = _gradient(w, X, y, p, lam)
    A = _weighted_gram(X, p * q)
    A[np.diag_indices_from(A)] += lam
    delta = cho_solve(cho_factor(A, lower=False, check_finite=False), g, check_finite=False)
    return delta, float(g @ delta)


def irls(X, y, prior_precision=0.0, max_iter=100, tol=1e-10, w0=None):
    r"""Maximise the log posterior by Newton's method, i.e. iteratively reweighted least squares.

    .. math:: \mathbf w_{t+1} = \mathbf w_t + (X^\top S X + \lambda I)^{-1}
              \left(X^\top(\mathbf y - \mathbf p) - \lambda \mathbf w_t\right)

    Each iteration makes one pass over the data to form :math:`X^\top S X`
    (a symmetric rank-n update) and solves with a Cholesky factor.

    Book: chapter 3, equations ``eq-newton`` and ``eq-irls``; chapter 4 for the prior.

    Parameters
    ----------
    X : array_like of shape (n, d)
    y : array_like of shape (n,), values in {0, 1}
    prior_precision : float, default 0
    max_iter : int, default 100
    tol : float, default 1e-10
        Converged when the Newton decrement
        :math:`\nabla^\top (X^\top S X + \lambda I)^{-1} \nabla`, twice the
        predicted gain of the step, falls below ``tol``.  The step is still taken,
        so the returned weights are one quadratic step better than that.
    w0 : array_like of shape (d,), optional
        Starting weights; zeros by default.

    Returns
    -------
    FitResult

    Warns
    -----
    ConvergenceWarning
        If ``max_iter`` is reached, or, with ``prior_precision=0``, if the data
        are linearly separable (the iteration stops as soon as its weights
        separate the classes, since the likelihood then grows without bound) or
        quasi-separable (the Newton decrement vanishes while the weights run off
        to infinity; checked by a linear programme, for n * d up to 2e6, whenever
        a fitted probability comes within 2e-9 of its label).

    Raises
    ------
    ValueError
        If :math:`X^\top S X` is singular with ``prior_precision=0`` although
        the data are not separable (linearly dependent columns).

    Examples
    --------
    >>> X = np.array([[1.0, -1.0], [1.0, 0.5], [1.0, 1.0], [1.0, -0.2]])
    >>> fit = irls(X, np.array([0, 0, 1, 1]))
    >>> fit.converged, fit.n_iter
    (True, 4)
    """
    X, y, lam, w, tol = _prepare(X, y, prior_precision, w0, max_iter, tol)
    a = X @ w
    history = []
    converged = separable = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        try:
            delta, decrement = _newton_direction(X, a, y, w, lam)
        except LinAlgError:
            if lam == 0 and _separates(a, y):
                separable = True
                n_iter -= 1
                break
            rank = np.linalg.matrix_rank(X)
            raise ValueError(
                f"X^T S X is singular (X has rank {rank} < d = {X.shape[1]} or all weights "
                f"p(1-p) vanished); remove linearly dependent columns or use prior_precision > 0"
            ) from None
        w = w + delta
        a = X @ w
        history.append(_log_posterior(w, a, y, lam))
        if lam == 0 and _separates(a, y):
            separable = True
            break
        if decrement <= tol:
            converged = True
            break
    if lam == 0 and not separable and np.max(_signs(y) * a) > _SUSPICIOUS_MARGIN and _quasi_separated(X, y):
        converged, separable = False, "quasi"  # the decrement vanished while the weights ran off to infinity
    if not converged:
        _warn_not_converged("irls", max_iter, separable)
    return FitResult(w=w, n_iter=n_iter, converged=converged, history=np.asarray(history))
