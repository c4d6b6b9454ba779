r"""A scikit-learn-style Gaussian-process classifier on top of :mod:`blrlib.gp`.

Book: chapter 9.  :class:`GPClassifier` composes the functions of
:mod:`blrlib.gp`: it learns the RBF kernel's variance and length scale by
maximising the Laplace approximation of the log marginal likelihood with its
analytic gradient (Rasmussen & Williams, Algorithm 5.1) under L-BFGS-B, then
predicts with Algorithm 3.2.
"""

import inspect
import warnings

import numpy as np
from scipy.optimize import minimize

from ._validation import as_labels, as_matrix, check_int, check_positive
from .gp import _check_method, _make_fit, _predict, _rbf_lml, _warn_mode
from .kernels import _rbf_from_sqdist, _squared_distances
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
    r"""Gaussian-process classifier with an RBF kernel and the Laplace approximation.

    A scikit-learn-style estimator around :func:`gpc_laplace` and
    :func:`gpc_predict`, with the kernel
    :math:`k(\mathbf x, \mathbf x') = \sigma^2 \exp(-\|\mathbf x - \mathbf x'\|^2 / 2\ell^2)`
    (:func:`~blrlib.rbf_kernel`).  With ``optimize=True`` (the default), ``fit``
    chooses :math:`\sigma^2` and :math:`\ell` by maximising the Laplace log marginal
    likelihood with L-BFGS-B on its analytic gradient
    (:func:`gpc_log_marginal_likelihood`, GPML Algorithm 5.1) in
    :math:`(\log\sigma^2, \log\ell)`, starting from the constructor's values and
    from ``n_restarts`` further seeded starting points; each Newton mode search is
    warm-started from the previous one.

    Book: chapter 9.

    Parameters
    ----------
    variance : float, default 1
        :math:`\sigma^2 > 0`; the fixed value, or the optimiser's first starting point.
    lengthscale : float, default 1
        :math:`\ell > 0`, likewise.
    optimize : bool, default True
        Learn the hyperparameters; ``False`` keeps the constructor's values.
    n_restarts : int, default 2
        Extra optimiser runs, started from :math:`\sigma^2` log-uniform in
        [0.1, 1000] and :math:`\ell` log-uniform in [0.1, 10] times the median distance
        between training points (clipped to the bounds), drawn from
        ``np.random.default_rng(random_state)``.
    random_state : int, default 0
    predict_method : {"probit", "quadrature", "mc", "plugin"}, default "probit"
        How :meth:`predict_proba` averages the sigmoid (see :func:`gpc_predict`).
    variance_bounds, lengthscale_bounds : (float, float), default (1e-5, 1e5)
        Bounds of the hyperparameter search.
    max_iter : int, default 100
        Newton iterations per mode search.
    tol : float, default 1e-10
        Tolerance of each mode search (see :func:`gpc_laplace`).

    Attributes
    ----------
    variance_, lengthscale_ : float
        The hyperparameters used for prediction.
    log_marginal_likelihood_ : float
        The Laplace log marginal likelihood at those hyperparameters.
    laplace_ : GPCLaplace
        The Laplace approximation at the training inputs.
    X_train_ : ndarray of shape (n, d)
    classes_ : ndarray, ``array([0, 1])``
    n_features_in_ : int
    optimize_results_ : list of scipy.optimize.OptimizeResult
        One per starting point (empty when ``optimize=False``).

    Examples
    --------
    >>> from blrlib import datasets
    >>> X, y = datasets.two_moons(60, noise=0.2, seed=0)
    >>> clf = GPClassifier(n_restarts=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape, float(np.mean(clf.predict(X) == y)) > 0.9
    ((2, 2), True)
    """

    def __init__(self, variance=1.0, lengthscale=1.0, *, optimize=True, n_restarts=2, random_state=0,
                 predict_method="probit", variance_bounds=(1e-5, 1e5), lengthscale_bounds=(1e-5, 1e5),
                 max_iter=100, tol=1e-10):
        self.variance = variance
        self.lengthscale = lengthscale
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
        if not isinstance(self.optimize, bool | np.bool_):
            raise TypeError(f"optimize must be True or False, got {type(self.optimize).__name__}")
        n_restarts = check_int(self.n_restarts, "n_restarts", minimum=0)
        random_state = check_int(self.random_state, "random_state", minimum=0)
        _check_method(self.predict_method)
        vb = _check_bounds(self.variance_bounds, "variance_bounds")
        lb = _check_bounds(self.lengthscale_bounds, "lengthscale_bounds")
        max_iter = check_int(self.max_iter, "max_iter")
        tol = check_positive(self.tol, "tol")
        return variance, lengthscale, n_restarts, random_state, vb, lb, max_iter, tol

    def fit(self, X, y):
        """Fit the Laplace approximation, learning the hyperparameters if ``optimize``; return ``self``.

        Parameters
        ----------
        X : array_like of shape (n, d)
        y : array_like of shape (n,), values in {0, 1}; both classes must occur.
        """
        variance, lengthscale, n_restarts, seed, vb, lb, max_iter, tol = self._validated_params()
        X = as_matrix(X)
        y = as_labels(y, n=X.shape[0])
        if y.min() == y.max():
            raise ValueError(
                f"GPClassifier needs both classes in y, got only class {int(y[0])} ({y.shape[0]} labels)"
            )
        D = _squared_distances(X)
        self.optimize_results_ = []
        f0 = None
        if self.optimize:
            variance, lengthscale, f0 = self._optimize(D, y, variance, lengthscale, n_restarts, seed, vb, lb,
                                                       max_iter, tol)
        lml, _, m, K = _rbf_lml(D, y, variance, lengthscale, False, max_iter, tol, f0)
        if not m["converged"]:
            _warn_mode(max_iter)
        self.variance_ = float(variance)
        self.lengthscale_ = float(lengthscale)
        self.log_marginal_likelihood_ = float(lml)
        self.laplace_ = _make_fit(K, y, m)
        self.X_train_ = X
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = X.shape[1]
        return self

    def _optimize(self, D, y, variance, lengthscale, n_restarts, seed, vb, lb, max_iter, tol):
        log_bounds = [(np.log(vb[0]), np.log(vb[1])), (np.log(lb[0]), np.log(lb[1]))]
        lo = np.array([b[0] for b in log_bounds])
        hi = np.array([b[1] for b in log_bounds])
        state = {"last": None, "best": (-np.inf, None, None)}
        ws = {}  # n x n buffers shared by all evaluations of the objective

        def objective(theta):
            f0 = None
            if state["last"] is not None:
                # warm start: the previous mode, moved along its derivative d f_hat / d theta
                # (Alg. 5.1, line 14) when the step in theta is small enough for a linear prediction
                theta_prev, f_prev, df_dtheta = state["last"]
                step = theta - theta_prev
                f0 = f_prev + df_dtheta @ step if np.max(np.abs(step)) <= 0.5 else f_prev
            v, ell = np.exp(theta)
            lml, grad, m, _ = _rbf_lml(D, y, v, ell, True, max_iter, tol, f0, ws)
            state["last"] = (theta.copy(), m["f"], m["df_dtheta"])
            if lml > state["best"][0]:
                state["best"] = (lml, theta.copy(), m["f"])
            return -lml, -grad

        starts = [np.clip(np.log([variance, lengthscale]), lo, hi)]
        if n_restarts:
            rng = np.random.default_rng(seed)
            sub = D[: min(D.shape[0], 500), : min(D.shape[0], 500)]
            dist = np.sqrt(sub[np.triu_indices_from(sub, 1)])
            scale = float(np.median(dist)) if dist.size and np.median(dist) > 0 else 1.0
            for _ in range(n_restarts):
                log_v = rng.uniform(np.log(0.1), np.log(1000.0))
                log_l = np.log(scale) + rng.uniform(np.log(0.1), np.log(10.0))
                starts.append(np.clip([log_v, log_l], lo, hi))
        for theta0 in starts:
            state["last"] = None  # each run starts its mode search afresh
            res = minimize(objective, theta0, jac=True, method="L-BFGS-B", bounds=log_bounds)
            self.optimize_results_.append(res)
        best_lml, best_theta, best_f = state["best"]
        best_res = min(self.optimize_results_, key=lambda r: r.fun)
        if not any(r.success for r in self.optimize_results_):
            warnings.warn(
                f"GPClassifier: L-BFGS-B did not converge from any starting point "
                f"({best_res.message}); the best hyperparameters found are used",
                ConvergenceWarning,
                stacklevel=3,
            )
        variance, lengthscale = np.exp(best_theta)
        return float(variance), float(lengthscale), best_f

    # -- prediction -----------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "laplace_"):
            raise AttributeError("this GPClassifier is not fitted yet; call fit(X, y) first")

    def _prediction(self, X):
        self._check_fitted()
        X = as_matrix(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but GPClassifier was fitted with {self.n_features_in_} features"
            )
        _check_method(self.predict_method)
        K_star = _rbf_from_sqdist(_squared_distances(X, self.X_train_), self.variance_, self.lengthscale_)
        k_ss = np.full(X.shape[0], self.variance_)
        return _predict(self.laplace_, K_star, k_ss, self.predict_method)

    def predict_proba(self, X):
        """Class probabilities, shape (m, 2): columns :math:`p(y=0)` and :math:`p(y=1)`."""
        p = self._prediction(X).prob
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """Labels in {0, 1}: 1 where the latent mean is positive (where :math:`p(y = 1) > 1/2`)."""
        return (self._prediction(X).mean > 0).astype(int)

    def latent_mean_and_variance(self, X):
        """Mean and variance of the latent function at ``X`` (GPML Alg. 3.2, lines 4 and 6)."""
        pred = self._prediction(X)
        return pred.mean, pred.var


def _same(a, b):
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return a is b
