r"""Bayesian logistic regression as a scikit-learn classifier.

Book: chapters 4 to 6 and 10.  :class:`BayesianLogisticRegression` composes what the
chapters build by hand: the prior :math:`\mathcal N(\mathbf 0, \lambda^{-1} I)` on the
coefficients (chapter 4), the Laplace approximation of the posterior and of the evidence
(chapter 5, :func:`~blrlib.laplace_posterior`), :math:`\lambda` chosen by maximising the
evidence (:func:`~blrlib.maximize_evidence`), the predictive probabilities that average
the sigmoid over the posterior (chapter 6, :func:`~blrlib.expected_sigmoid`) and, with
``inference="gibbs"``, draws from the exact posterior (chapter 10,
:func:`~blrlib.gibbs_logistic`) or, with ``inference="vi"``, the Gaussian of the
Jaakkola-Jordan bound (:func:`~blrlib.vi_logistic`).

Each kind of inference is one small function from the design matrix, the 0/1 labels and
the mask of penalised weights to a :class:`_Posterior` (the prior precision used, mean,
covariance, log evidence, iteration count, the functional API's result); ``_INFERENCE``
maps the names to them.  Needs scikit-learn (the extra
``blrlib[sklearn]``).
"""

import numbers
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize_scalar
from scipy.special import expit, ndtri
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ._sklearn import as_generator, class_targets
from ._validation import as_prior_precision, check_int, check_positive
from .evidence import _SPAN as _EVIDENCE_SPAN
from .evidence import _maximize_evidence, _partly_flat_log_evidence
from .laplace import _laplace_at_mode, _mode_fit
from .optimize import ConvergenceWarning, _free_columns, _Separation, _separation_reason
from .predictive import expected_sigmoid
from .sampling import gibbs_logistic, predict_samples
from .softmax_posterior import SoftmaxLaplace, softmax_predict
from .softmax_regression import _log_likelihood as _softmax_log_likelihood
from .softmax_regression import _negative_hessian, _null_projector, _softmax_irls
from .softmax_regression import _penalty as _softmax_penalty
from .variational import _maximize_bound, _vi_logistic

__all__ = ["BayesianLogisticRegression"]

_PREDICT_METHODS = ("quadrature", "probit", "mc", "plugin", "meanfield")
# K > 2: the K-dimensional average has no quadrature; the default and "mc" are Monte Carlo
_SOFTMAX_METHOD = {"quadrature": "mc", "mc": "mc", "probit": "probit", "plugin": "plugin", "meanfield": "meanfield"}
_MC_DRAWS = 10_000  # draws per point of predict_method="mc"
_RHAT_MAX = 1.01
_VI_MAX_ITER, _VI_TOL = 500, 1e-10  # vi_logistic's defaults


@dataclass(frozen=True)
class _Posterior:
    """What an inference function hands back: the prior precision used (the scalar or the
    vector on the coefficients), the posterior mean and covariance of all the weights
    (intercept first), the log evidence it reports, its iteration count and the functional
    API's result (``posterior_``)."""

    lam: object
    mean: np.ndarray
    cov: np.ndarray
    log_evidence: float
    n_iter: int
    result: object = field(repr=False)


def _laplace_choice(X, y, penalised, est):
    """lambda (given, or maximising the Laplace evidence) and the Laplace fit there (chapter 5)."""
    d = int(np.sum(penalised))
    if isinstance(est.prior_precision, str):  # "evidence"
        search = _maximize_evidence(X, y, 1.0, est.max_iter, est.tol,
                                    penalised=penalised if est.fit_intercept else None, stacklevel=5)
        return search.prior_precision, search.posterior, search.n_iter + 1
    lam = as_prior_precision(est.prior_precision, d)
    lam_all = np.zeros(X.shape[1])
    lam_all[penalised] = lam
    mode = _mode_fit(X, y, lam_all, np.zeros(X.shape[1]))
    post = _laplace_at_mode(X, y, lam_all, mode.w)
    post = replace(post, log_evidence=_partly_flat_log_evidence(X, y, post, penalised))
    return lam, post, max(mode.n_iter, 1)


def _fit_laplace(X, y, penalised, est, rng):
    """The Laplace approximation (chapter 5): mode and inverse negative Hessian."""
    lam, post, n_iter = _laplace_choice(X, y, penalised, est)
    return _Posterior(lam=lam, mean=post.mean, cov=post.cov, log_evidence=float(post.log_evidence),
                      n_iter=n_iter, result=post)


def _fit_gibbs(X, y, penalised, est, rng):
    """The exact posterior by Polya-Gamma Gibbs sampling (chapter 10); moments of the draws.

    lambda is the Laplace choice; the log evidence reported is the Laplace one there."""
    lam, post, _ = _laplace_choice(X, y, penalised, est)
    lam_all = np.zeros(X.shape[1])
    lam_all[penalised] = lam
    samples = gibbs_logistic(X, y, lam_all, n_samples=est.n_samples, n_warmup=est.n_warmup,
                             n_chains=est.n_chains, seed=rng)
    worst = float(np.max(samples.rhat))
    if worst > _RHAT_MAX:
        warnings.warn(
            f"BayesianLogisticRegression(inference='gibbs'): the largest split R-hat is {worst:.4f} "
            f"> {_RHAT_MAX}; the chains have not mixed: increase n_warmup and n_samples",
            ConvergenceWarning,
            stacklevel=4,
        )
    return _Posterior(lam=lam, mean=samples.mean, cov=samples.cov, log_evidence=float(post.log_evidence),
                      n_iter=est.n_warmup + est.n_samples, result=samples)


def _fit_vi(X, y, penalised, est, rng):
    """The Jaakkola-Jordan variational Gaussian (:func:`~blrlib.vi_logistic`); its bound is
    the log evidence reported, and ``"evidence"`` maximises the bound over lambda."""
    name = "BayesianLogisticRegression(inference='vi')"
    if isinstance(est.prior_precision, str):  # "evidence": the lambda of the largest bound
        lam, post, bound, n_fits, _ = _maximize_bound(X, y, penalised, 1.0, est.max_iter, est.tol,
                                                      _VI_MAX_ITER, _VI_TOL, stacklevel=5, name=name)
        return _Posterior(lam=lam, mean=post.mean, cov=post.cov, log_evidence=bound, n_iter=n_fits + 1,
                          result=post)
    lam = as_prior_precision(est.prior_precision, int(np.sum(penalised)))
    lam_all = np.zeros(X.shape[1])
    lam_all[penalised] = lam
    post, bound = _vi_logistic(X, y, lam_all, _VI_MAX_ITER, _VI_TOL, stacklevel=5, name=name)
    if np.any(lam_all[penalised] == 0):  # an improper prior on a coefficient: no evidence
        bound = -np.inf
    return _Posterior(lam=lam, mean=post.mean, cov=post.cov, log_evidence=bound, n_iter=max(post.n_iter, 1),
                      result=post)


_INFERENCE = {"laplace": _fit_laplace, "gibbs": _fit_gibbs, "vi": _fit_vi}
_HOW = {
    "laplace": ("Laplace approximation", "log evidence (Laplace)"),
    "gibbs": ("Polya-Gamma Gibbs sampling", "log evidence (Laplace)"),
    "vi": ("variational Gaussian (Jaakkola-Jordan bound)", "ELBO (Jaakkola-Jordan bound)"),
}

# -- K > 2 classes: softmax regression (chapter 13) ----------------------------------------


def _softmax_laplace_at(X, y, K, lam_all, W0):
    """The Laplace approximation of softmax regression from a warm start ``W0`` (as
    :func:`~blrlib.softmax_laplace`, which starts at 0), with the evidence of a flat prior of
    unit density on the rows of zero precision (see :func:`_fit_softmax`)."""
    d = X.shape[1]
    outcome = _softmax_irls(X, y, K, lam_all, W0, 100, 1e-10)
    free = _free_columns(lam_all, d)
    if outcome.separation is not _Separation.NONE:
        reason = _separation_reason(outcome.separation, free, d)
        raise ValueError(f"BayesianLogisticRegression needs the posterior mode, which does not exist here: {reason}")
    if not outcome.converged:
        warnings.warn(
            f"BayesianLogisticRegression: the search for the softmax posterior mode stopped after "
            f"{outcome.fit.n_iter} guarded Newton steps ({outcome.detail})",
            ConvergenceWarning,
            stacklevel=5,
        )
    W = outcome.fit.w
    A = _negative_hessian(X, X @ W, lam_all)
    # A is singular exactly along e_j (x) 1 for the free rows j (P projects onto them): the
    # pseudo-inverse is (A + cP)^-1 - P/c, and the product of A's other eigenvalues
    # |A + cP| / c^(number of free rows)
    P = _null_projector(free, d, K) if free.size else np.zeros_like(A)
    c = np.trace(A) / A.shape[0] + 1.0
    factor = cho_factor(A + c * P, lower=True)
    cov = cho_solve(factor, np.eye(d * K)) - P / c
    log_pdet_A = 2.0 * float(np.sum(np.log(np.diag(factor[0])))) - free.size * np.log(c)
    penalised = np.ones(d, dtype=bool)
    penalised[free] = False
    log_evidence = (_softmax_log_likelihood(X @ W, y) - _softmax_penalty(W, lam_all)
                    + 0.5 * K * float(np.sum(np.log(lam_all[penalised])))
                    + 0.5 * free.size * (K - 1) * np.log(2.0 * np.pi) - 0.5 * log_pdet_A)
    post = SoftmaxLaplace(mean=W, cov=0.5 * (cov + cov.T), log_evidence=float(log_evidence), n_classes=K,
                          prior_precision=lam_all)
    return post, outcome.fit.n_iter


def _softmax_evidence_search(X, y, K, penalised, est):
    r"""The scalar :math:`\lambda` on the penalised rows that maximises the softmax Laplace
    evidence: uphill from :math:`\lambda = 1` in :math:`t = \log\lambda` with doubling steps
    until the evidence falls, then Brent's bounded search inside that bracket to 1e-6 in
    :math:`t`; each fit warm-started at the previous mode.  Range and warnings as
    :func:`~blrlib.maximize_evidence`."""
    rho = max(np.linalg.norm(X, 2) ** 2 / 4.0, np.finfo(float).tiny)
    t_min, t_max = np.log(rho) - _EVIDENCE_SPAN, np.log(rho) + _EVIDENCE_SPAN
    warm = [np.zeros((X.shape[1], K))]
    fits = {}

    def value(t):
        t = float(np.clip(t, t_min, t_max))
        if t not in fits:
            post, _ = _softmax_laplace_at(X, y, K, np.where(penalised, np.exp(t), 0.0), warm[0])
            warm[0] = post.mean
            fits[t] = post
        return fits[t].log_evidence

    t = float(np.clip(0.0, t_min, t_max))
    up = float(np.clip(t + 1.0, t_min, t_max))
    direction = 1.0 if value(up) > value(t) else -1.0
    behind, cur = (t, up) if direction > 0 else (up, t)  # cur: the best point so far
    step, edge, bracketed, ahead = 1.0, None, False, cur
    while len(fits) < est.max_iter:
        ahead = float(np.clip(cur + direction * step, t_min, t_max))
        if ahead == cur:
            edge = "infinity" if direction > 0 else "zero"
            break
        if value(ahead) <= value(cur):
            bracketed = True
            break
        behind, cur, step = cur, ahead, 2.0 * step
    if edge is None and not bracketed:
        converged = False
    elif edge is None:
        lo, hi = sorted((behind, ahead))
        best = minimize_scalar(lambda s: -value(s), bounds=(lo, hi), method="bounded",
                               options={"xatol": 1e-6, "maxiter": max(est.max_iter - len(fits), 1)})
        cur = max(fits, key=lambda s: fits[s].log_evidence)
        converged = bool(best.success)
    else:
        warnings.warn(
            f"BayesianLogisticRegression: the softmax Laplace log evidence still increases as lambda -> {edge} "
            f"(stopped at the end of the search range, lambda = {np.exp(cur):.3g})",
            ConvergenceWarning,
            stacklevel=4,
        )
        converged = False
    if edge is None and not converged:
        warnings.warn(
            f"BayesianLogisticRegression: the search for the lambda of the largest softmax evidence "
            f"did not converge in max_iter={est.max_iter} Laplace fits; increase max_iter",
            ConvergenceWarning,
            stacklevel=4,
        )
    return float(np.exp(cur)), fits[cur], len(fits)


def _fit_softmax(X, y, K, penalised, est, rng):
    r"""The Laplace approximation of softmax regression (chapter 13) over all K columns.

    The rows of zero precision (the intercepts) have a flat prior; the likelihood does not
    change when the same number is added to all K entries of such a row, so the posterior
    lives on the subspace where they sum to zero and the evidence integrates them over
    it with unit density:

    .. math:: \log p(\mathbf y \mid X) \approx \log p(\mathbf y \mid X, W)
              - \tfrac12 \sum_k \mathbf w_k^\top \Lambda \mathbf w_k
              + \tfrac K2 \sum_{j \in P} \log\lambda_j
              + \tfrac{d_0 (K - 1)}{2} \log 2\pi - \tfrac12 \log \operatorname{pdet} A

    (:math:`d_0` free rows, pdet the product of the non-zero eigenvalues): the limit of
    :func:`~blrlib.softmax_laplace`'s evidence with :math:`\mathcal N(0, \varepsilon^{-1})`
    on each free weight, minus :math:`\frac{d_0(K-1)}2 \log(\varepsilon / 2\pi)`.
    """
    d = X.shape[1]
    if isinstance(est.prior_precision, str):  # "evidence"
        lam, post, n_fits = _softmax_evidence_search(X, y, K, penalised, est)
        n_iter = n_fits
    else:
        lam = as_prior_precision(est.prior_precision, int(np.sum(penalised)))
        lam_all = np.zeros(d)
        lam_all[penalised] = lam
        post, n_iter = _softmax_laplace_at(X, y, K, lam_all, np.zeros((d, K)))
        if np.any(lam_all[penalised] == 0):
            post = replace(post, log_evidence=-np.inf)
    return _Posterior(lam=lam, mean=post.mean, cov=post.cov, log_evidence=float(post.log_evidence),
                      n_iter=max(n_iter, 1), result=post)


_INFERENCE_MULTICLASS = {"laplace": _fit_softmax}


class BayesianLogisticRegression(ClassifierMixin, BaseEstimator):
    r"""Bayesian logistic regression: a Gaussian prior, the posterior, moderated predictions.

    The model of the book with scikit-learn's conventions: any two labels (``classes_[1]``
    is the class coded 1) or more (softmax regression, below), an intercept with a flat prior (unpenalised, as scikit-learn's
    ``LogisticRegression`` leaves it) and the prior
    :math:`\mathcal N(\mathbf 0, \lambda^{-1} I)` on the coefficients.  ``fit`` finds the
    posterior (Laplace approximation, or draws of the exact posterior), ``predict_proba``
    averages the sigmoid over it (chapter 6), and ``summary`` prints posterior means,
    standard deviations and credible intervals as a statistician reads them.

    With ``prior_precision="evidence"`` (the default) :math:`\lambda` maximises the Laplace
    estimate of the evidence exactly (as :func:`~blrlib.maximize_evidence`, to 1e-8 in
    :math:`\log\lambda`).  With an intercept, the evidence is that of a flat prior of unit
    density on it: the Laplace approximation of
    :math:`\log \int p(\mathbf y \mid X, \mathbf w)\, \mathcal N(\mathbf w_{1:d} \mid \mathbf 0,
    \lambda^{-1} I)\, d\mathbf w`, which is the book's formula (``eq-laplace-evidence``) over
    the :math:`d` coefficients plus :math:`\frac12 \log 2\pi` (an improper prior makes the
    evidence depend on this choice of unit; it does not change the maximising :math:`\lambda`).

    K > 2 classes (any labels; ``classes_[k]`` is the class coded k) are fitted by softmax
    regression with the Laplace approximation (chapter 13; ``inference="laplace"`` only,
    the other methods raise a ``ValueError``): the prior
    :math:`\mathcal N(\mathbf 0, \lambda^{-1} I)` on each of the K coefficient vectors,
    the K intercepts flat, so that the mode is scikit-learn's multinomial
    ``LogisticRegression`` with ``C = 1/lambda``.  The likelihood does not change when the
    same number is added to every intercept: the intercepts of the mode sum to zero, and
    ``coef_cov_`` is the covariance under that constraint (the pseudo-inverse of the
    negative Hessian, as :func:`~blrlib.softmax_laplace` gives it).  The evidence integrates
    the intercepts with unit density over the subspace where they sum to zero: the limit of
    :func:`~blrlib.softmax_laplace`'s evidence with :math:`\mathcal N(0, \varepsilon^{-1})`
    on each intercept minus :math:`\frac{K-1}{2} \log(\varepsilon / 2\pi)`.  With
    ``"evidence"``, :math:`\lambda` maximises it (doubling steps uphill in
    :math:`\log\lambda` from :math:`\lambda = 1`, then Brent's search in the bracket, to
    1e-6 in :math:`\log\lambda`: the softmax evidence has no derivative in the library).

    Book: chapter 5 (``eq-laplace-cov``, ``eq-laplace-evidence``), chapter 6
    (``eq-predictive``), chapter 10 (``inference="gibbs"``), chapter 12
    (``inference="vi"``), chapter 13 (K > 2 classes: ``eq-softmax-laplace``,
    ``eq-softmax-evidence``, ``eq-softmax-predictive``).

    Parameters
    ----------
    prior_precision : "evidence", float or array_like of shape (d,), default "evidence"
        :math:`\lambda \ge 0` on the coefficients (one per feature for an array), or
        ``"evidence"`` to choose the scalar :math:`\lambda` that maximises the Laplace
        evidence (the bound for ``inference="vi"``).  ``0`` is maximum likelihood (the posterior is then the classical
        asymptotic normal distribution, ``coef_cov_`` the inverse observed information).
    fit_intercept : bool, default True
        Add an intercept with a flat prior.  ``False`` fits through the origin with the prior
        on every weight (then ``intercept_`` is 0).
    inference : {"laplace", "gibbs", "vi"}, default "laplace"
        ``"laplace"``: the Gaussian at the posterior mode (chapter 5).  ``"gibbs"``: Polya-Gamma
        Gibbs sampling of the exact posterior (chapter 10) at the same :math:`\lambda`;
        ``coef_`` and ``coef_cov_`` are then the mean and covariance of the draws.
        ``"vi"``: the Gaussian :math:`q` of the Jaakkola-Jordan bound
        (:func:`~blrlib.vi_logistic`, chapter 12), the intercept's prior precision 0;
        ``coef_`` and ``coef_cov_`` are its mean and covariance, ``log_evidence_`` is the
        bound (the ELBO), and ``prior_precision="evidence"`` chooses the :math:`\lambda`
        that maximises the bound (over :math:`\boldsymbol\xi` and :math:`\lambda`
        jointly: the search of :func:`~blrlib.maximize_evidence` on the exact derivative
        of the bound in :math:`\lambda`, to 1e-8 in :math:`\log\lambda`).
    predict_method : {"quadrature", "probit", "mc", "plugin", "meanfield"}, default "quadrature"
        How ``predict_proba`` averages the sigmoid over the Gaussian posterior of the
        activation (:func:`~blrlib.expected_sigmoid`; ``"plugin"`` is
        :math:`\sigma(\mathbf x^\top \mathbf m)`; ``"meanfield"`` is ``"probit"`` for two
        classes).  With ``inference="gibbs"`` the average over the draws
        (:func:`~blrlib.predict_samples`) is used whatever this says.  For K > 2 classes the
        method of :func:`~blrlib.softmax_predict`, where ``"quadrature"`` (no K-dimensional
        quadrature exists) and ``"mc"`` are its Monte Carlo average (10,000 draws).
    n_samples, n_warmup, n_chains : int, default 2000, 500, 4
        Draws kept and discarded per chain, and chains, for ``inference="gibbs"``.
    random_state : None, int, numpy.random.Generator or RandomState, default 0
        Seeds the Gibbs chains and the Monte Carlo draws of ``predict_proba``.
    max_iter : int, default 100
        Laplace (or variational) fits the evidence search may make.
    tol : float, default 1e-8
        Tolerance of the evidence search in :math:`\log\lambda`.

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
    coef_ : ndarray of shape (1, d), or (K, d) for K > 2 classes
        Posterior mean of the coefficients (the mode for ``"laplace"``); for K > 2 one row
        per class, as scikit-learn's multinomial ``LogisticRegression``.
    intercept_ : ndarray of shape (1,), or (K,) for K > 2 classes
    coef_cov_ : ndarray of shape (d + 1, d + 1), or (d, d) without an intercept
        Posterior covariance of (intercept, coefficients), the intercept first.  For K > 2
        classes, shape (K (d + 1), K (d + 1)) (or (K d, K d)) in class-major order: entry
        ``k * (d + 1) + j`` is weight j of class k (j = 0 the intercept), the order of
        :func:`~blrlib.softmax_laplace`'s ``cov``.
    prior_precision_ : float or ndarray of shape (d,)
        :math:`\lambda` used (chosen by the evidence or given).
    log_evidence_ : float
        The Laplace log evidence at ``prior_precision_`` (:math:`-\infty` when some
        :math:`\lambda_j = 0`); for ``inference="vi"`` the Jaakkola-Jordan lower bound on
        the log evidence (the ELBO, Bishop 2006 eq. 10.164) at the optimal
        :math:`\boldsymbol\xi`, with the same flat prior of unit density on the intercept
        (the limit of the bound under :math:`\mathcal N(0, \varepsilon^{-1})` on it plus
        :math:`\frac12\log(2\pi/\varepsilon)`).
    n_iter_ : int
        Laplace fits of the evidence search (each one a guarded Newton search), or the
        Newton iterations at a fixed :math:`\lambda`; for ``"gibbs"``, the iterations of each
        chain (warm-up and kept draws); for ``"vi"``, the variational fits of the search
        over :math:`\lambda`, or the iterations of the bound at a fixed :math:`\lambda`.
    posterior_ : LaplacePosterior, PosteriorSamples, VariationalPosterior or SoftmaxLaplace
        The functional API's result over the columns (1, X) (or X without an intercept); a
        ``SoftmaxLaplace`` for K > 2 classes, whose ``log_evidence`` is ``log_evidence_``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When ``X`` has string column names (a DataFrame).

    Examples
    --------
    >>> from blrlib import datasets
    >>> X, y, names = datasets.spector()
    >>> mle = BayesianLogisticRegression(prior_precision=0).fit(X, y)
    >>> mle.intercept_.round(3), mle.coef_.round(3)   # statsmodels' Logit on the same data
    (array([-13.021]), array([[2.826, 0.095, 2.379]]))
    >>> clf = BayesianLogisticRegression().fit(X, y)  # lambda by the evidence
    >>> round(clf.prior_precision_, 4), clf.predict_proba(X[:2]).shape
    (0.3284, (2, 2))
    >>> print(clf.summary())
    Bayesian logistic regression: Laplace approximation
    n = 32, intercept with a flat prior
    prior precision on the coefficients = 0.328392 (maximises the evidence)
    log evidence (Laplace) = -18.3415
    <BLANKLINE>
                       mean         sd     [0.025     0.975]
    intercept       -9.9292     3.7523   -17.2837    -2.5748
    x1               1.8701     0.9021     0.1021     3.6380
    x2               0.1119     0.1301    -0.1432     0.3669
    x3               1.6849     0.8046     0.1079     3.2619

    Three classes: softmax regression, the mode that of scikit-learn's multinomial
    ``LogisticRegression(C=1/lambda)``.

    >>> from sklearn.datasets import load_iris
    >>> X3, y3 = load_iris(return_X_y=True)
    >>> iris = BayesianLogisticRegression(1.0).fit(X3, y3)
    >>> iris.coef_.shape, iris.intercept_.shape, iris.coef_cov_.shape
    ((3, 4), (3,), (15, 15))
    >>> iris.predict_proba(X3[[0, 60, 120]]).round(2)
    array([[0.97, 0.03, 0.  ],
           [0.09, 0.9 , 0.01],
           [0.  , 0.03, 0.97]])
    """

    def __init__(self, prior_precision="evidence", *, fit_intercept=True, inference="laplace",
                 predict_method="quadrature", n_samples=2000, n_warmup=500, n_chains=4, random_state=0,
                 max_iter=100, tol=1e-8):
        self.prior_precision = prior_precision
        self.fit_intercept = fit_intercept
        self.inference = inference
        self.predict_method = predict_method
        self.n_samples = n_samples
        self.n_warmup = n_warmup
        self.n_chains = n_chains
        self.random_state = random_state
        self.max_iter = max_iter
        self.tol = tol

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # K > 2 classes: softmax regression, for the inference methods that have it
        tags.classifier_tags.multi_class = self.inference in _INFERENCE_MULTICLASS
        return tags

    # -- fitting --------------------------------------------------------------------------
    def _check_params(self):
        if self.inference not in _INFERENCE:
            raise ValueError(f"inference must be one of {tuple(_INFERENCE)}, got {self.inference!r}")
        if self.predict_method not in _PREDICT_METHODS:
            raise ValueError(f"predict_method must be one of {_PREDICT_METHODS}, got {self.predict_method!r}")
        if not isinstance(self.fit_intercept, bool | np.bool_):
            raise TypeError(f"fit_intercept must be True or False, got {type(self.fit_intercept).__name__}")
        if isinstance(self.prior_precision, str) and self.prior_precision != "evidence":
            raise ValueError(f"prior_precision must be 'evidence', a number >= 0 or an array of them, "
                             f"got {self.prior_precision!r}")
        check_int(self.max_iter, "max_iter")
        check_positive(self.tol, "tol")
        if self.inference == "gibbs":
            check_int(self.n_samples, "n_samples")
            check_int(self.n_warmup, "n_warmup", minimum=0)
            check_int(self.n_chains, "n_chains")

    def _design(self, X):
        return np.column_stack([np.ones(X.shape[0]), X]) if self.fit_intercept else X

    def fit(self, X, y):
        """Fit the posterior (choosing :math:`\\lambda` by the evidence if asked); return ``self``.

        Parameters
        ----------
        X : array_like of shape (n, d)
        y : array_like of shape (n,), two or more distinct labels of any type
        """
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        classes, codes = class_targets("BayesianLogisticRegression", y)
        K = classes.size
        if K > 2 and self.inference not in _INFERENCE_MULTICLASS:
            raise ValueError(
                f"Only binary classification is supported by "
                f"BayesianLogisticRegression(inference={self.inference!r}); y has "
                f"{K} classes {classes[:6].tolist()}{' ...' if K > 6 else ''}. For K > 2 classes use "
                f"inference={next(iter(_INFERENCE_MULTICLASS))!r} (softmax regression)"
            )
        self.classes_ = classes
        X1 = self._design(X)
        d = X.shape[1]
        penalised = np.r_[False, np.ones(d, dtype=bool)] if self.fit_intercept else np.ones(d, dtype=bool)
        rng = as_generator(self.random_state)
        if K == 2:
            fit = _INFERENCE[self.inference](X1, codes.astype(float), penalised, self, rng)
        else:
            fit = _INFERENCE_MULTICLASS[self.inference](X1, codes, K, penalised, self, rng)
        self.posterior_ = fit.result
        self.prior_precision_ = fit.lam if np.ndim(fit.lam) == 0 else np.array(fit.lam)
        self.log_evidence_ = float(fit.log_evidence)
        self.coef_cov_ = fit.cov
        first = X1.shape[1] - d  # 1 with an intercept
        if K == 2:
            self.coef_ = fit.mean[None, first:]
            self.intercept_ = fit.mean[:1].copy() if self.fit_intercept else np.zeros(1)
        else:  # fit.mean is (d + 1, K), the intercepts in the first row
            self.coef_ = fit.mean[first:].T.copy()
            self.intercept_ = fit.mean[0].copy() if self.fit_intercept else np.zeros(K)
        self.n_iter_ = int(fit.n_iter)
        self._weights = fit.mean if K == 2 else fit.mean.T.ravel()  # the order of coef_cov_
        self._n_train = X.shape[0]
        return self

    # -- prediction -------------------------------------------------------------------------
    def _activation_moments(self, X1):
        mean = X1 @ self._weights
        var = np.maximum(np.einsum("ij,jk,ik->i", X1, self.coef_cov_, X1), 0.0)
        return mean, var

    def predict_proba(self, X):
        r"""Class probabilities, shape (m, K), columns in the order of ``classes_``.

        Two classes: :math:`p(y = \text{classes\_}[1] \mid \mathbf x, \mathcal D)`,
        averaged over the posterior by ``predict_method`` (chapter 6), or over the Gibbs
        draws.  K > 2: :func:`~blrlib.softmax_predict` with ``predict_method`` (chapter 13;
        ``"quadrature"`` and ``"mc"`` are its Monte Carlo average over 10,000 draws from
        ``random_state``).
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        X1 = self._design(X)
        if self.classes_.size > 2:
            return softmax_predict(self.posterior_, X1, method=_SOFTMAX_METHOD[self.predict_method],
                                   n_samples=_MC_DRAWS, rng=as_generator(self.random_state))
        if self.inference == "gibbs":
            p = predict_samples(self.posterior_, X1)
        else:
            mean, var = self._activation_moments(X1)
            if self.predict_method == "plugin":
                p = expit(mean)
            else:  # for two classes the mean-field approximation is the probit one
                method = "probit" if self.predict_method == "meanfield" else self.predict_method
                p = expected_sigmoid(mean, var, method=method, n_samples=_MC_DRAWS,
                                     rng=as_generator(self.random_state))
        p = np.atleast_1d(p)
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """The class of largest predictive probability (two classes: ``classes_[1]`` where it
        exceeds 1/2)."""
        proba = self.predict_proba(X)
        if self.classes_.size > 2:
            return self.classes_[np.argmax(proba, axis=1)]
        return self.classes_[(proba[:, 1] > 0.5).astype(int)]

    # -- the posterior as a statistician reads it ----------------------------------------------
    def _names(self):
        names = (list(self.feature_names_in_) if hasattr(self, "feature_names_in_")
                 else [f"x{j + 1}" for j in range(self.n_features_in_)])
        names = (["intercept"] if self.fit_intercept else []) + [str(n) for n in names]
        if self.classes_.size > 2:  # class-major, as coef_cov_
            return [f"{name} [{c}]" for c in self.classes_ for name in names]
        return names

    def credible_interval(self, level=0.95):
        r"""Central credible intervals of the weights, shape (d + 1, 2), the intercept first
        (K > 2 classes: shape (K (d + 1), 2), in the class-major order of ``coef_cov_``).

        Under the Laplace posterior :math:`m_j \pm z\, \sigma_j` with
        :math:`z = \Phi^{-1}((1 + \text{level}) / 2)`; for Gibbs draws the empirical
        :math:`(1 \mp \text{level}) / 2` quantiles of the pooled draws.
        """
        check_is_fitted(self)
        if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
            raise ValueError(f"level must be a number strictly between 0 and 1, got {level!r}")
        if self.inference == "gibbs":
            draws = self.posterior_.w.reshape(-1, self._weights.shape[0])
            return np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0).T
        half = ndtri(0.5 + level / 2) * np.sqrt(np.diag(self.coef_cov_))
        return np.column_stack([self._weights - half, self._weights + half])

    def summary(self, level=0.95):
        """A table of posterior mean, standard deviation and credible interval per weight.

        Returns a string (``print(clf.summary())``), one row per weight in the order of
        ``coef_cov_``, headed by the model, :math:`\\lambda` and the log evidence.
        """
        check_is_fitted(self)
        interval = self.credible_interval(level)
        sd = np.sqrt(np.diag(self.coef_cov_))
        how, evidence = _HOW[self.inference]
        if self.classes_.size > 2:
            how = f"softmax regression, {self.classes_.size} classes, {how}"
        chosen = ((" (maximises the bound)" if self.inference == "vi" else " (maximises the evidence)")
                  if isinstance(self.prior_precision, str) else "")
        lam = (f"{self.prior_precision_:.6g}" if np.ndim(self.prior_precision_) == 0
               else np.array2string(self.prior_precision_, precision=4, separator=", ", threshold=6))
        lo, hi = f"{(1 - level) / 2:.3g}", f"{(1 + level) / 2:.3g}"
        names = self._names()
        width = max(12, *(len(n) for n in names))
        lines = [
            f"Bayesian logistic regression: {how}",
            f"n = {self._n_train}"
            + (", intercept with a flat prior" if self.fit_intercept else ", no intercept"),
            f"prior precision on the coefficients = {lam}{chosen}",
            f"{evidence} = {self.log_evidence_:.6g}",
            "",
            f"{'':{width}s} {'mean':>10s} {'sd':>10s} {'[' + lo:>10s} {hi + ']':>10s}",
        ]
        for name, m, s, (a, b) in zip(names, self._weights, sd, interval):
            lines.append(f"{name:{width}s} {m:10.4f} {s:10.4f} {a:10.4f} {b:10.4f}")
        return "\n".join(lines)
