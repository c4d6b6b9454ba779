r"""A scikit-learn-style Gaussian-process classifier composed of the library's GP functions.

Book: chapters 9 and 11.  :class:`GPClassifier` learns the RBF kernel's variance and
length scale by maximising the log marginal likelihood, Laplace's (Rasmussen &
Williams Alg. 5.1) or EP's (GPML section 5.5.2), with its analytic gradient under
L-BFGS-B (:mod:`blrlib.gp_hyperparameters`), fits :func:`~blrlib.gpc_laplace` or
:func:`~blrlib.gpc_ep` at the learned values, and predicts with
:func:`~blrlib.gpc_predict` (Alg. 3.2 or 3.6).  It is a scikit-learn classifier (``Pipeline``, ``GridSearchCV``,
``cross_val_score``, ``CalibratedClassifierCV``, ``check_estimator``), so it needs
scikit-learn (the extra ``blrlib[sklearn]``).
"""

import inspect
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ._sklearn import as_generator, class_targets
from ._validation import check_int, check_positive
from .gp_ep import _ep_from
from .gp_hyperparameters import (
    _DEFAULT_TOL,
    _INFERENCE,
    _evaluate,
    _learn,
    _median_distance,
    _warn_at_bounds,
)
from .gp_laplace import gpc_laplace
from .gp_multiclass import _latent_moments as _multiclass_moments
from .gp_multiclass import gpc_laplace_multiclass, gpc_predict_multiclass
from .gp_predict import _check_method, gpc_predict
from .kernels import _squared_distances, rbf_kernel
from .optimize import ConvergenceWarning
from .softmax_posterior import _probit as _softmax_probit
from .softmax_regression import _log_softmax

__all__ = ["GPClassifier"]

_AUTO_BOUNDS = (1e-5, 1e5)  # lengthscale_bounds="auto": these times the median distance
_NOT_FITTED = "This %(name)s instance is not fitted yet; call fit(X, y) first"
_MULTICLASS_INFERENCE = ("laplace",)  # the inference methods with a K-class version
_MC_DRAWS = 10_000  # Monte Carlo draws per test point for K > 2 classes


def _check_bounds(bounds, name):
    """(low, high, free): a pair with low <= high, or "fixed"; low == high also holds it fixed."""
    if isinstance(bounds, str):
        if bounds == "fixed":
            return None, None, False
        raise ValueError(f'{name} must be a pair (low, high) or "fixed", got {bounds!r}')
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise TypeError(f'{name} must be a pair (low, high) or "fixed", got {bounds!r}') from None
    lo = check_positive(lo, f"{name}[0]")
    hi = check_positive(hi, f"{name}[1]")
    if not lo <= hi:
        raise ValueError(f"{name} must satisfy low <= high, got ({lo:g}, {hi:g})")
    return lo, hi, lo < hi


def _flat_direction(D, y, theta, j, inference, max_iter, tol, best):
    """Whether the log marginal likelihood is flat around ``theta`` along hyperparameter ``j``:
    within 1e-6 nats when it is halved or doubled (why an optimiser would not move it)."""
    for step in (-np.log(2.0), np.log(2.0)):
        other = theta.copy()
        other[j] += step
        if abs(_evaluate(D, y, other, inference, max_iter, tol, best, False).lml - best.lml) > 1e-6:
            return False
    return True


class GPClassifier(ClassifierMixin, BaseEstimator):
    r"""Gaussian-process classifier with an RBF kernel and the Laplace or EP approximation.

    A scikit-learn classifier composed of :func:`~blrlib.gpc_laplace` (or
    :func:`~blrlib.gpc_ep`) and :func:`~blrlib.gpc_predict`, with the kernel
    :math:`k(\mathbf x, \mathbf x') = \sigma_f^2 \exp(-\|\mathbf x - \mathbf x'\|^2 / 2\ell^2)`
    (:func:`~blrlib.rbf_kernel`).  By default ``fit`` chooses :math:`\sigma_f^2` and
    :math:`\ell` by maximising the approximate log marginal likelihood with L-BFGS-B on its
    analytic gradient (:func:`~blrlib.gpc_log_marginal_likelihood`) in
    :math:`(\log\sigma_f^2, \log\ell)`, starting from the constructor's values and from
    ``n_restarts`` further seeded starting points; each inner iteration (Newton's method or
    EP) is warm-started from the previous one, EP runs to a tolerance of 1e-6 on the
    sites during the search (looser, up to 1e-4, while the gradient is large), and the
    final fit (to ``tol``) starts from the sites of the best evaluation.  A learned
    hyperparameter that ends on a bound of its search gets a ``ConvergenceWarning`` that
    names it, and so does a search that did not move from its start because the marginal
    likelihood is flat there (typically a length scale far from the distances between the
    inputs).  ``*_bounds="fixed"`` holds a
    hyperparameter at the constructor's value.

    Any two labels are accepted (``classes_``; ``classes_[1]`` is the class coded 1).  A data
    set with one class is accepted, as by :func:`~blrlib.gpc_laplace` and
    :func:`~blrlib.gpc_ep`: its one class is coded 1, the posterior is proper and is fitted
    as usual, ``predict`` returns that class and ``predict_proba`` has one column of ones
    (scikit-learn's convention; :meth:`latent_mean_and_variance` gives the model's latent
    values).  Its marginal likelihood, though, has no maximum: it keeps rising as
    :math:`\sigma_f^2` and :math:`\ell` grow, towards :math:`\log\frac12`; so the
    hyperparameters are not learned: the constructor's values are used, with a
    ``ConvergenceWarning`` that says so.

    K > 2 classes (any labels, ``classes_[k]`` coded k; ``inference="laplace"`` only, EP
    raises a ``ValueError``): C = K latent functions with the same GP prior and the softmax
    likelihood, fitted by :func:`~blrlib.gpc_laplace_multiclass` (Rasmussen & Williams
    Alg. 3.3) and predicted by :func:`~blrlib.gpc_predict_multiclass` (Alg. 3.4).  **The
    hyperparameters are then not learned**: the library has the multi-class marginal
    likelihood (``log_marginal_likelihood_``) but not its gradient, so ``variance`` and
    ``lengthscale`` (``"auto"``: the median distance) are used as given, with a
    ``ConvergenceWarning`` that says so when ``optimize=True`` and a hyperparameter is
    free (none with ``optimize=False`` or ``"fixed"`` bounds).  Choose them by
    cross-validation (``GridSearchCV``) or by comparing ``log_marginal_likelihood_``.
    Two classes keep the binary model above.

    Units: with ``lengthscale="auto"`` and ``lengthscale_bounds="auto"`` every length scale
    the search meets is a multiple of the median distance between the training inputs, so
    the predictions do not depend on the units of ``X`` (the same to 1e-6 for ``X`` and
    ``1e8 * X``).  The defaults (start at :math:`\ell = 1`, bounds
    :math:`[10^{-5}, 10^{5}]`) are absolute, as scikit-learn's ``RBF`` kernel's.

    Book: chapter 9 (Laplace), chapter 11 (EP), chapter 13 (K > 2 classes).

    Parameters
    ----------
    variance : float, default 1
        :math:`\sigma_f^2 > 0`; the fixed value, or the optimiser's first starting point.
    lengthscale : float or "auto", default 1
        :math:`\ell > 0`, likewise; ``"auto"`` is the median distance between (up to 500 of)
        the training points.
    inference : {"laplace", "ep"}, default "laplace"
        The approximation of the posterior and of the marginal likelihood (``"laplace"``
        only for K > 2 classes).
    optimize : bool, default True
        Learn the hyperparameters; ``False`` keeps the constructor's values.
    n_restarts : int, default 2
        Extra optimiser runs, started from :math:`\sigma_f^2` log-uniform in
        [0.1, 1000] and :math:`\ell` log-uniform in [0.1, 10] times the median distance
        between training points (clipped to the bounds).
    random_state : None, int, numpy.random.Generator or RandomState, default 0
        The source of the restarts' starting points.
    predict_method : {"quadrature", "probit", "mc", "plugin"}, default "quadrature"
        How :meth:`predict_proba` averages the sigmoid (see :func:`~blrlib.gpc_predict`);
        for K > 2 classes ``"quadrature"`` and ``"mc"`` are Monte Carlo over 10,000 draws
        (see :meth:`predict_proba`).
    variance_bounds : (float, float) or "fixed", default (1e-5, 1e5)
        Bounds of the search; ``"fixed"`` (or equal bounds) holds :math:`\sigma_f^2` at
        ``variance`` (at the bound, for equal bounds), without bound warnings.
    lengthscale_bounds : (float, float), "auto" or "fixed", default (1e-5, 1e5)
        Likewise for :math:`\ell`; ``"auto"`` is (1e-5, 1e5) times the median distance.
    max_iter : int, default 100
        Newton iterations per mode search (Laplace) or sweeps (EP).
    tol : float, optional
        Tolerance of each mode search (default 1e-10, see :func:`~blrlib.gpc_laplace`) or
        EP run (default 1e-8, see :func:`~blrlib.gpc_ep`).

    Attributes
    ----------
    variance_, lengthscale_ : float
        The hyperparameters used for prediction.
    log_marginal_likelihood_ : float
        The approximate log marginal likelihood at those hyperparameters.
    posterior_ : GPCLaplace, GPCEP or GPCLaplaceMulticlass
        The approximation at the training inputs (the last for K > 2 classes).
    X_train_ : ndarray of shape (n, d)
    classes_ : ndarray of shape (K,) (K = 2, or 1 for one class, or more)
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When ``X`` has string column names (a DataFrame).
    n_iter_ : int
        Evaluations of the marginal likelihood (each one a mode search or an EP run) made by
        the hyperparameter search, plus the final fit (1 without a search, and for K > 2).
    optimize_results_ : list of scipy.optimize.OptimizeResult
        One per starting point (empty when nothing is learned).

    Examples
    --------
    >>> from blrlib import datasets
    >>> X, y = datasets.two_moons(60, noise=0.35, seed=0)
    >>> clf = GPClassifier(n_restarts=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape, round(clf.variance_, 1), round(clf.lengthscale_, 2)
    ((2, 2), 25.5, 1.01)
    >>> ep = GPClassifier(inference="ep", n_restarts=0).fit(X, y)
    >>> type(ep.posterior_).__name__, float(ep.score(X, y)) > 0.9
    ('GPCEP', True)
    """

    def __init__(self, variance=1.0, lengthscale=1.0, *, inference="laplace", optimize=True, n_restarts=2,
                 random_state=0, predict_method="quadrature", variance_bounds=(1e-5, 1e5),
                 lengthscale_bounds=(1e-5, 1e5), max_iter=100, tol=None):
        self.variance = variance
        self.lengthscale = lengthscale
        self.inference = inference
        self.optimize = optimize
        self.n_restarts = n_restarts
        self.random_state = random_state
        self.predict_method = predict_method
        self.variance_bounds = variance_bounds
        self.lengthscale_bounds = lengthscale_bounds
        self.max_iter = max_iter
        self.tol = tol

    def __repr__(self, N_CHAR_MAX=700):
        """The constructor call with the parameters that differ from the defaults, in its order."""
        defaults = type(self)().get_params()
        changed = [f"{k}={v!r}" for k, v in self._ordered_params() if not _same(v, defaults.get(k))]
        return f"{type(self).__name__}({', '.join(changed)})"

    def _ordered_params(self):
        params = self.get_params()
        return [(name, params[name]) for name in inspect.signature(type(self).__init__).parameters if name != "self"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # K > 2 classes: RW Alg. 3.3 and 3.4, for the inference methods that have them
        tags.classifier_tags.multi_class = self.inference in _MULTICLASS_INFERENCE
        return tags

    # -- fitting --------------------------------------------------------------
    def _validated_params(self):
        variance = check_positive(self.variance, "variance")
        if not (isinstance(self.lengthscale, str) and self.lengthscale == "auto"):
            check_positive(self.lengthscale, "lengthscale")
        if self.inference not in _INFERENCE:
            raise ValueError(f"inference must be one of {_INFERENCE}, got {self.inference!r}")
        if not isinstance(self.optimize, bool | np.bool_):
            raise TypeError(f"optimize must be True or False, got {type(self.optimize).__name__}")
        n_restarts = check_int(self.n_restarts, "n_restarts", minimum=0)
        rng = as_generator(self.random_state)
        _check_method(self.predict_method)
        max_iter = check_int(self.max_iter, "max_iter")
        tol = _DEFAULT_TOL[self.inference] if self.tol is None else check_positive(self.tol, "tol")
        return variance, n_restarts, rng, max_iter, tol

    def _bounds(self, variance, lengthscale, scale):
        """The search's bounds and which hyperparameters it learns; fixed ones sit at their value."""
        v_lo, v_hi, v_free = _check_bounds(self.variance_bounds, "variance_bounds")
        if isinstance(self.lengthscale_bounds, str) and self.lengthscale_bounds == "auto":
            l_lo, l_hi, l_free = _AUTO_BOUNDS[0] * scale, _AUTO_BOUNDS[1] * scale, True
        else:
            l_lo, l_hi, l_free = _check_bounds(self.lengthscale_bounds, "lengthscale_bounds")
        if not v_free:
            variance = variance if v_lo is None else v_lo
            v_lo = v_hi = variance
        if not l_free:
            lengthscale = lengthscale if l_lo is None else l_lo
            l_lo = l_hi = lengthscale
        return variance, lengthscale, ((v_lo, v_hi), (l_lo, l_hi)), (bool(v_free), bool(l_free))

    def fit(self, X, y):
        """Fit the approximation, learning the hyperparameters if ``optimize``; return ``self``.

        Parameters
        ----------
        X : array_like of shape (n, d)
        y : array_like of shape (n,), labels of any type (one class, two, or more)
        """
        variance, n_restarts, rng, max_iter, tol = self._validated_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        classes, y = class_targets("GPClassifier", y, allow_one_class=True)
        if classes.size > 2 and self.inference not in _MULTICLASS_INFERENCE:
            raise ValueError(
                f"Only binary classification is supported by GPClassifier(inference={self.inference!r}); "
                f"y has {classes.size} classes {classes[:6].tolist()}{' ...' if classes.size > 6 else ''}. "
                f"For K > 2 classes use inference='laplace' (Rasmussen & Williams Alg. 3.3)"
            )
        self.classes_ = classes
        D = _squared_distances(X)
        scale = _median_distance(D)
        lengthscale = scale if isinstance(self.lengthscale, str) else float(self.lengthscale)
        variance, lengthscale, bounds, free = self._bounds(variance, lengthscale, scale)
        self.optimize_results_ = []
        n_evaluations = 0
        best = None
        if classes.size > 2:
            return self._fit_multiclass(X, y, variance, lengthscale, free, max_iter, tol)
        y = y.astype(float)
        if self.optimize and any(free) and self.classes_.size == 1:
            warnings.warn(
                f"GPClassifier: y has only class {self.classes_.tolist()[0]!r} ({y.shape[0]} labels), and then the "
                f"marginal likelihood has no maximum (it rises as variance and lengthscale grow); the "
                f"hyperparameters are not learned: variance={variance:g} and lengthscale={lengthscale:g} are used",
                ConvergenceWarning,
                stacklevel=2,
            )
        elif self.optimize and any(free):
            best, self.optimize_results_, n_evaluations = _learn(
                D, y, (variance, lengthscale), bounds, n_restarts, rng, self.inference, max_iter, tol, free, scale)
            variance, lengthscale = (float(v) for v in np.exp(best.theta))
            _warn_at_bounds(best.theta, bounds, free=free)
            self._warn_if_stuck(D, y, best, free, max_iter, tol, scale)
        K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
        if self.inference == "laplace":
            self.posterior_ = gpc_laplace(K, y, max_iter, tol, f0=None if best is None else best.f)
        else:
            warm = (None, None) if best is None else (best.tau, best.nu)
            self.posterior_ = _ep_from(K, y, max_iter, tol, *warm)
        self.variance_ = variance
        self.lengthscale_ = lengthscale
        self.log_marginal_likelihood_ = self.posterior_.log_marginal_likelihood
        self.X_train_ = X
        self.n_iter_ = n_evaluations + 1
        return self

    def _fit_multiclass(self, X, y, variance, lengthscale, free, max_iter, tol):
        """K > 2 classes: RW Alg. 3.3 at the given hyperparameters (no gradient of the
        multi-class marginal likelihood exists in the library, so they are not learned)."""
        if self.optimize and any(free):
            warnings.warn(
                f"GPClassifier: with {self.classes_.size} classes the hyperparameters are not learned "
                f"(the library has no gradient of the multi-class marginal likelihood); "
                f"variance={variance:g} and lengthscale={lengthscale:g} are used. Choose them by "
                f"cross-validation (GridSearchCV) or log_marginal_likelihood_, start from "
                f'lengthscale="auto", or pass optimize=False to silence this warning',
                ConvergenceWarning,
                stacklevel=3,
            )
        K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
        self.posterior_ = gpc_laplace_multiclass(K, y, max_iter=max_iter, tol=tol)
        self.variance_ = variance
        self.lengthscale_ = lengthscale
        self.log_marginal_likelihood_ = self.posterior_.log_marginal_likelihood
        self.X_train_ = X
        self.n_iter_ = 1
        return self

    def _warn_if_stuck(self, D, y, best, free, max_iter, tol, scale):
        """A ConvergenceWarning for each learned hyperparameter that the best run left where it
        started, on a marginal likelihood that is flat along it."""
        run = max(self.optimize_results_, key=lambda r: -r.fun)
        start = np.zeros(2)
        start[np.asarray(free)] = run.x0
        for j in np.flatnonzero(free):
            if abs(best.theta[j] - start[j]) > 1e-10:
                continue
            if not _flat_direction(D, y, best.theta, j, self.inference, max_iter, tol, best):
                continue
            name = ("variance", "lengthscale")[j]
            warnings.warn(
                f"GPClassifier: the hyperparameter search did not move {name} from its start "
                f"{np.exp(best.theta[j]):.4g}: the log marginal likelihood is flat there (it changes by "
                f"less than 1e-6 when {name} is halved or doubled)."
                + (f" The length scale may not suit the units of X: the median distance between the "
                   f'training points is {scale:.4g}; start there with lengthscale="auto" (and '
                   f'lengthscale_bounds="auto"), or standardise X' if j == 1 else ""),
                ConvergenceWarning,
                stacklevel=3,
            )

    # -- prediction -----------------------------------------------------------
    def _prediction(self, X):
        check_is_fitted(self, msg=_NOT_FITTED)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        K_star = rbf_kernel(X, self.X_train_, variance=self.variance_, lengthscale=self.lengthscale_)
        return gpc_predict(self.posterior_, K_star, np.full(X.shape[0], self.variance_), self.predict_method)

    def _multiclass_moments(self, X):
        check_is_fitted(self, msg=_NOT_FITTED)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        K_star = rbf_kernel(X, self.X_train_, variance=self.variance_, lengthscale=self.lengthscale_)
        return K_star, np.full(X.shape[0], self.variance_)

    def predict_proba(self, X):
        r"""Class probabilities, shape (m, K), columns in the order of ``classes_``: :math:`p(y=0)` and
        :math:`p(y=1)` for the labels coded 0 and 1 (one column of ones after one class).

        K > 2 classes (GPML Alg. 3.4): ``predict_method`` ``"quadrature"`` (the default; no
        K-dimensional quadrature exists) and ``"mc"`` average the softmax over 10,000 draws
        of the latent Gaussian (:func:`~blrlib.gpc_predict_multiclass`, seeded by
        ``random_state``), ``"probit"`` scales each class's latent mean by
        :math:`\kappa` of its variance, ``"plugin"`` is the softmax of the latent mean."""
        check_is_fitted(self, msg=_NOT_FITTED)
        if self.classes_.size > 2:
            K_star, k_star_star = self._multiclass_moments(X)
            if self.predict_method in ("quadrature", "mc"):
                return gpc_predict_multiclass(self.posterior_, K_star, k_star_star, n_samples=_MC_DRAWS,
                                              rng=as_generator(self.random_state)).prob
            mean, cov = _multiclass_moments(self.posterior_, K_star, k_star_star)
            if self.predict_method == "probit":
                return _softmax_probit(mean, cov)
            return np.exp(_log_softmax(mean))
        p = self._prediction(X).prob
        if self.classes_.size == 1:
            return np.ones((p.shape[0], 1))
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """Labels: ``classes_[1]`` where the latent mean is positive (where its probability exceeds 1/2);
        for K > 2 classes the class of largest predictive probability."""
        check_is_fitted(self, msg=_NOT_FITTED)
        if self.classes_.size > 2:
            return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
        positive = self._prediction(X).mean > 0
        if self.classes_.size == 1:
            return np.full(positive.shape[0], self.classes_[0])
        return self.classes_[positive.astype(int)]

    def latent_mean_and_variance(self, X):
        """Mean and variance of the latent function at ``X`` (GPML Alg. 3.2 / 3.6); for K > 2
        classes the mean (m, K) and the covariance (m, K, K) of the K latent values (Alg. 3.4)."""
        check_is_fitted(self, msg=_NOT_FITTED)
        if self.classes_.size > 2:
            return _multiclass_moments(self.posterior_, *self._multiclass_moments(X))
        pred = self._prediction(X)
        return pred.mean, pred.var


def _same(a, b):
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return a is b
