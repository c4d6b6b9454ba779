r"""A scikit-learn-style Gaussian-process classifier composed of the library's GP functions.

Book: chapters 9 and 11.  :class:`GPClassifier` learns the RBF kernel's variance and
length scale by maximising the log marginal likelihood, Laplace's (Rasmussen &
Williams Alg. 5.1) or EP's (GPML section 5.5.2), with its analytic gradient under
L-BFGS-B (:mod:`blrlib.gp_hyperparameters`), fits :func:`~blrlib.gpc_laplace` or
:func:`~blrlib.gpc_ep` at the learned values, and predicts with
:func:`~blrlib.gpc_predict` (Alg. 3.2 or 3.6).
"""

import inspect
import warnings

import numpy as np

from ._validation import as_labels, as_matrix, check_int, check_positive
from .gp_ep import gpc_ep
from .gp_hyperparameters import _DEFAULT_TOL, _INFERENCE, _learn, _warn_at_bounds
from .gp_laplace import gpc_laplace
from .gp_predict import _check_method, gpc_predict
from .kernels import _squared_distances, rbf_kernel
from .optimize import ConvergenceWarning

__all__ = ["GPClassifier"]


def _check_bounds(bounds, name):
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair (low, high), got {bounds!r}") from None
    lo = check_positive(lo, f"{name}[0]")
    hi = check_positive(hi, f"{name}[1]")
    if not lo <= hi:
        raise ValueError(f"{name} must satisfy low <= high, got ({lo:g}, {hi:g})")
    return lo, hi


class GPClassifier:
    r"""Gaussian-process classifier with an RBF kernel and the Laplace or EP approximation.

    A scikit-learn-style estimator composed of :func:`~blrlib.gpc_laplace` (or
    :func:`~blrlib.gpc_ep`) and :func:`~blrlib.gpc_predict`, with the kernel
    :math:`k(\mathbf x, \mathbf x') = \sigma_f^2 \exp(-\|\mathbf x - \mathbf x'\|^2 / 2\ell^2)`
    (:func:`~blrlib.rbf_kernel`).  With ``optimize=True`` (the default), ``fit`` chooses
    :math:`\sigma_f^2` and :math:`\ell` by maximising the approximate log marginal
    likelihood with L-BFGS-B on its analytic gradient
    (:func:`~blrlib.gpc_log_marginal_likelihood`) in :math:`(\log\sigma_f^2, \log\ell)`,
    starting from the constructor's values and from ``n_restarts`` further seeded
    starting points; each inner iteration (Newton's method or EP) is warm-started from
    the previous one.  A hyperparameter that ends on a bound of its search gets a
    ``ConvergenceWarning`` that names it.

    A data set with one class is accepted, as by :func:`~blrlib.gpc_laplace` and
    :func:`~blrlib.gpc_ep`: the posterior is proper, and it is fitted and predicts as
    usual.  Its marginal likelihood, though, has no maximum: it keeps rising as
    :math:`\sigma_f^2` and :math:`\ell` grow, towards :math:`\log\frac12` (a latent
    function that is constant, and on that class's side with prior probability 1/2); the
    Laplace and EP approximations of it can show a spurious maximum far out.  So with
    ``optimize=True`` the hyperparameters are not learned: the constructor's values are
    used, with a ``ConvergenceWarning`` that says so.

    Book: chapter 9 (Laplace) and chapter 11 (EP).

    Parameters
    ----------
    variance : float, default 1
        :math:`\sigma_f^2 > 0`; the fixed value, or the optimiser's first starting point.
    lengthscale : float, default 1
        :math:`\ell > 0`, likewise.
    inference : {"laplace", "ep"}, default "laplace"
        The approximation of the posterior and of the marginal likelihood.
    optimize : bool, default True
        Learn the hyperparameters; ``False`` keeps the constructor's values.
    n_restarts : int, default 2
        Extra optimiser runs, started from :math:`\sigma_f^2` log-uniform in
        [0.1, 1000] and :math:`\ell` log-uniform in [0.1, 10] times the median distance
        between training points (clipped to the bounds), drawn from
        ``np.random.default_rng(random_state)``.
    random_state : int, default 0
    predict_method : {"quadrature", "probit", "mc", "plugin"}, default "quadrature"
        How :meth:`predict_proba` averages the sigmoid (see :func:`~blrlib.gpc_predict`).
    variance_bounds, lengthscale_bounds : (float, float), default (1e-5, 1e5)
        Bounds of the hyperparameter search.
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
    posterior_ : GPCLaplace or GPCEP
        The approximation at the training inputs.
    X_train_ : ndarray of shape (n, d)
    classes_ : ndarray, ``array([0, 1])``
    n_features_in_ : int
    optimize_results_ : list of scipy.optimize.OptimizeResult
        One per starting point (empty when ``optimize=False``).

    Examples
    --------
    >>> from blrlib import datasets
    >>> X, y = datasets.two_moons(60, noise=0.35, seed=0)
    >>> clf = GPClassifier(n_restarts=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape, round(clf.variance_, 1), round(clf.lengthscale_, 2)
    ((2, 2), 25.5, 1.01)
    >>> ep = GPClassifier(inference="ep", n_restarts=0).fit(X, y)
    >>> type(ep.posterior_).__name__, float(np.mean(ep.predict(X) == y)) > 0.9
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

    # -- scikit-learn's parameter protocol ---------------------------------
    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep=True):
        """The constructor's parameters as a dict (scikit-learn protocol)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor parameters by name and return ``self`` (scikit-learn protocol)."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for GPClassifier; valid parameters are {valid}")
            setattr(self, name, value)
        return self

    def __repr__(self):
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if not _same(v, defaults.get(k))]
        return f"GPClassifier({', '.join(changed)})"

    # -- fitting --------------------------------------------------------------
    def _validated_params(self):
        variance = check_positive(self.variance, "variance")
        lengthscale = check_positive(self.lengthscale, "lengthscale")
        if self.inference not in _INFERENCE:
            raise ValueError(f"inference must be one of {_INFERENCE}, got {self.inference!r}")
        if not isinstance(self.optimize, bool | np.bool_):
            raise TypeError(f"optimize must be True or False, got {type(self.optimize).__name__}")
        n_restarts = check_int(self.n_restarts, "n_restarts", minimum=0)
        random_state = check_int(self.random_state, "random_state", minimum=0)
        _check_method(self.predict_method)
        bounds = (_check_bounds(self.variance_bounds, "variance_bounds"),
                  _check_bounds(self.lengthscale_bounds, "lengthscale_bounds"))
        max_iter = check_int(self.max_iter, "max_iter")
        tol = _DEFAULT_TOL[self.inference] if self.tol is None else check_positive(self.tol, "tol")
        return variance, lengthscale, n_restarts, random_state, bounds, max_iter, tol

    def fit(self, X, y):
        """Fit the approximation, learning the hyperparameters if ``optimize``; return ``self``.

        Parameters
        ----------
        X : array_like of shape (n, d)
        y : array_like of shape (n,), values in {0, 1}
        """
        variance, lengthscale, n_restarts, seed, bounds, max_iter, tol = self._validated_params()
        X = as_matrix(X)
        y = as_labels(y, n=X.shape[0])
        self.optimize_results_ = []
        best = None
        if self.optimize and y.min() == y.max():
            warnings.warn(
                f"GPClassifier: y has only class {int(y[0])} ({y.shape[0]} labels), and then the marginal "
                f"likelihood has no maximum (it rises as variance and lengthscale grow); the hyperparameters "
                f"are not learned: variance={variance:g} and lengthscale={lengthscale:g} are used",
                ConvergenceWarning,
                stacklevel=2,
            )
        elif self.optimize:
            best, self.optimize_results_ = _learn(_squared_distances(X), y, (variance, lengthscale), bounds,
                                                  n_restarts, seed, self.inference, max_iter, tol)
            variance, lengthscale = (float(v) for v in np.exp(best.theta))
            _warn_at_bounds(best.theta, bounds)
        K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
        if self.inference == "laplace":
            self.posterior_ = gpc_laplace(K, y, max_iter, tol, f0=None if best is None else best.f)
        else:
            self.posterior_ = gpc_ep(K, y, max_sweeps=max_iter, tol=tol)
        self.variance_ = variance
        self.lengthscale_ = lengthscale
        self.log_marginal_likelihood_ = self.posterior_.log_marginal_likelihood
        self.X_train_ = X
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = X.shape[1]
        return self

    # -- prediction -----------------------------------------------------------
    def _prediction(self, X):
        if not hasattr(self, "posterior_"):
            raise AttributeError("this GPClassifier is not fitted yet; call fit(X, y) first")
        X = as_matrix(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but GPClassifier was fitted with {self.n_features_in_} features"
            )
        K_star = rbf_kernel(X, self.X_train_, variance=self.variance_, lengthscale=self.lengthscale_)
        return gpc_predict(self.posterior_, K_star, np.full(X.shape[0], self.variance_), self.predict_method)

    def predict_proba(self, X):
        """Class probabilities, shape (m, 2): columns :math:`p(y=0)` and :math:`p(y=1)`."""
        p = self._prediction(X).prob
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """Labels in {0, 1}: 1 where the latent mean is positive (where :math:`p(y = 1) > 1/2`)."""
        return (self._prediction(X).mean > 0).astype(int)

    def latent_mean_and_variance(self, X):
        """Mean and variance of the latent function at ``X`` (GPML Alg. 3.2 / 3.6)."""
        pred = self._prediction(X)
        return pred.mean, pred.var


def _same(a, b):
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return a is b
