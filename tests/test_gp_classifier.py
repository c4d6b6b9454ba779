"""GPClassifier, the scikit-learn-style estimator composed of the GP functions (chapters 9 and 11;
GPML Alg. 5.1 and eq. 5.27 under L-BFGS-B)."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import log_expit, logsumexp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from blrlib import (
    GPCEP,
    ConvergenceWarning,
    GPCLaplace,
    GPClassifier,
    datasets,
    expected_sigmoid,
    gpc_ep,
    gpc_laplace,
    gpc_laplace_multiclass,
    gpc_log_marginal_likelihood,
    gpc_predict,
    gpc_predict_multiclass,
    rbf_kernel,
)
from _helpers import check_multiclass_pipeline
from blrlib.gp_hyperparameters import _warn_at_bounds

# --- the estimator ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    "data",
    [
        lambda: datasets.two_moons(100, noise=0.25, seed=1),
        lambda: datasets.two_gaussians(100, seed=3),
    ],
    ids=["two_moons", "two_gaussians"],
)
def test_classifier_reaches_sklearn_marginal_likelihood(data):
    X, y = data()
    clf = GPClassifier(n_restarts=2, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn's own ConvergenceWarnings at bounds
        sk = GaussianProcessClassifier(kernel=ConstantKernel(1.0) * RBF(1.0), n_restarts_optimizer=2,
                                       random_state=0).fit(X, y)
    assert clf.log_marginal_likelihood_ >= sk.log_marginal_likelihood_value_ - 1e-6
    # the stored lml is that of the stored hyperparameters
    fit = gpc_laplace(rbf_kernel(X, variance=clf.variance_, lengthscale=clf.lengthscale_), y)
    assert_allclose(clf.log_marginal_likelihood_, fit.log_marginal_likelihood, rtol=0, atol=1e-8)
    assert_allclose(clf.posterior_.f_hat, fit.f_hat, rtol=0, atol=1e-8)
    # at an interior optimum the gradient vanishes
    _, grad = gpc_log_marginal_likelihood(X, y, clf.variance_, clf.lengthscale_)
    assert np.max(np.abs(grad)) < 1e-3


def test_classifier_at_large_n_matches_sklearn(big_moons):
    """With n >= 500 every mode search takes conjugate-gradient steps: same optimum as scikit-learn."""
    X, y = big_moons
    clf = GPClassifier(n_restarts=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = GaussianProcessClassifier(kernel=ConstantKernel(1.0, (1e-5, 1e5)) * RBF(1.0, (1e-5, 1e5)),
                                       n_restarts_optimizer=0).fit(X, y)
    assert clf.log_marginal_likelihood_ >= sk.log_marginal_likelihood_value_ - 1e-6
    variance, lengthscale = np.exp(sk.kernel_.theta)
    assert_allclose([clf.variance_, clf.lengthscale_], [variance, lengthscale], rtol=1e-3)
    assert_allclose(clf.posterior_.f_hat, sk.base_estimator_.f_cached, rtol=0, atol=1e-3)


def test_predict_proba_and_predict(moons, X_test):
    X, y = moons
    clf = GPClassifier(n_restarts=0).fit(X, y)
    proba = clf.predict_proba(X_test)
    assert proba.shape == (len(X_test), 2)
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    labels = clf.predict(X_test)
    assert set(np.unique(labels)) <= {0, 1}
    assert np.array_equal(labels, (proba[:, 1] > 0.5).astype(int))
    assert np.mean(clf.predict(X) == y) > 0.9
    mean, var = clf.latent_mean_and_variance(X_test)
    pred = gpc_predict(clf.posterior_, rbf_kernel(X_test, X, variance=clf.variance_, lengthscale=clf.lengthscale_),
                       np.full(len(X_test), clf.variance_), method="quadrature")
    assert_allclose(mean, pred.mean, rtol=1e-13, atol=1e-13)
    assert_allclose(var, pred.var, rtol=1e-13, atol=1e-13)
    assert_allclose(proba[:, 1], pred.prob, rtol=1e-13, atol=1e-13)


def test_predict_method_parameter(moons, X_test):
    """The default is quadrature (the exact Gaussian average); the others are available."""
    X, y = moons
    clf = GPClassifier(3.0, 0.5, optimize=False).fit(X, y)
    assert clf.predict_method == "quadrature"
    mean, var = clf.latent_mean_and_variance(X_test)
    assert_allclose(clf.predict_proba(X_test)[:, 1], expected_sigmoid(mean, var), rtol=0, atol=1e-15)
    probit = clf.set_params(predict_method="probit").predict_proba(X_test)[:, 1]
    assert_allclose(probit, expected_sigmoid(mean, var, method="probit"), rtol=0, atol=1e-15)


def test_fixed_hyperparameters_match_gpc_laplace(moons):
    X, y = moons
    clf = GPClassifier(variance=4.0, lengthscale=0.5, optimize=False).fit(X, y)
    fit = gpc_laplace(rbf_kernel(X, variance=4.0, lengthscale=0.5), y)
    assert (clf.variance_, clf.lengthscale_) == (4.0, 0.5)
    assert clf.optimize_results_ == []
    assert_allclose(clf.log_marginal_likelihood_, fit.log_marginal_likelihood, rtol=0, atol=1e-12)
    assert isinstance(clf.posterior_, GPCLaplace)
    ep = GPClassifier(variance=4.0, lengthscale=0.5, optimize=False, inference="ep").fit(X, y)
    ep_fit = gpc_ep(rbf_kernel(X, variance=4.0, lengthscale=0.5), y)
    assert isinstance(ep.posterior_, GPCEP)
    assert_allclose(ep.log_marginal_likelihood_, ep_fit.log_marginal_likelihood, rtol=0, atol=1e-12)


def test_get_params_round_trip():
    clf = GPClassifier(variance=2.0, lengthscale=0.3, n_restarts=1, predict_method="quadrature")
    params = clf.get_params()
    assert params["variance"] == 2.0 and params["predict_method"] == "quadrature"
    assert GPClassifier(**params).get_params() == params
    assert clf.set_params(lengthscale=0.7) is clf and clf.lengthscale == 0.7
    twin = clone(clf)  # scikit-learn's clone relies on the same protocol
    assert twin.get_params() == clf.get_params() and twin is not clf
    assert repr(clf) == "GPClassifier(variance=2.0, lengthscale=0.7, n_restarts=1)"
    assert repr(clf.set_params(inference="ep")) == "GPClassifier(variance=2.0, lengthscale=0.7, inference='ep', n_restarts=1)"


def test_hyperparameter_on_its_bound_warns_with_its_name(moons):
    """A length scale bounded far below its optimum ends on the bound: the warning names it."""
    X, y = moons
    with pytest.warns(ConvergenceWarning, match=r"learned lengthscale .* upper bound 0.05 of lengthscale_bounds"):
        clf = GPClassifier(lengthscale=0.02, n_restarts=0, lengthscale_bounds=(0.01, 0.05)).fit(X, y)
    assert clf.lengthscale_ == pytest.approx(0.05, rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # an interior optimum: no warning
        GPClassifier(n_restarts=0).fit(X, y)


@pytest.mark.parametrize(
    ("variance", "lengthscale", "warned"),
    [
        (0.214, 99_999.8, ["lengthscale"]),  # where L-BFGS-B stopped on chapter 11's trap
        (1e-5 * (1 + 5e-5), 1.0, ["variance"]),
        (0.214, 99_000.0, []),  # 1 % inside: an interior value
        (2232.0, 19.8, []),
    ],
)
def test_bound_warning_allows_for_where_the_optimiser_stops(variance, lengthscale, warned):
    """L-BFGS-B stops short of an active bound (by 2e-6 in log space on the breast cancer
    data of chapter 11), which a tolerance of 1e-6 missed: GPClassifier stayed silent there."""
    theta = np.log([variance, lengthscale])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _warn_at_bounds(theta, [(1e-5, 1e5), (1e-5, 1e5)])
    assert [str(w.message).split()[3] for w in caught] == warned
    assert all(w.category is ConvergenceWarning and "bound" in str(w.message) for w in caught)


@pytest.mark.parametrize("inference", ["laplace", "ep"])
def test_one_class(inference):
    """One class is accepted as by gpc_laplace / gpc_ep and fitted as they fit it; its marginal
    likelihood has no maximum, so the hyperparameters are kept, with a warning that says why."""
    X = np.array([[-1.0], [0.0], [0.5], [2.0]])
    y = np.ones(4)
    fit = (gpc_laplace if inference == "laplace" else gpc_ep)(rbf_kernel(X, variance=3.0, lengthscale=0.8), y)
    fixed = GPClassifier(3.0, 0.8, optimize=False, inference=inference).fit(X, y)
    with pytest.warns(ConvergenceWarning, match=r"y has only class 1.0 \(4 labels\), and then the marginal "
                                                 r"likelihood has no maximum.*variance=3 and lengthscale=0.8 are used"):
        learned = GPClassifier(3.0, 0.8, inference=inference).fit(X, y)
    for clf in (fixed, learned):
        assert (clf.variance_, clf.lengthscale_) == (3.0, 0.8) and clf.optimize_results_ == []
        assert_allclose(clf.log_marginal_likelihood_, fit.log_marginal_likelihood, rtol=0, atol=1e-12)
        # scikit-learn's convention for one class (issue 17): that class, with probability 1
        assert np.all(clf.predict(X) == 1) and np.all(clf.predict_proba(X) == 1.0)
        assert np.all(clf.latent_mean_and_variance(X)[0] > 0)
    # the claim: towards a constant latent function the exact marginal likelihood E[prod sigma(f_n)]
    # (Monte Carlo over the prior, standard error about 0.002) only rises, towards log 1/2
    rng = np.random.default_rng(0)
    log_evidence = []
    for v in (1.0, 10.0, 100.0, 1000.0):
        L = np.linalg.cholesky(rbf_kernel(X, variance=v, lengthscale=10 * v) + 1e-9 * v * np.eye(4))
        log_lik = np.sum(log_expit(rng.standard_normal((200_000, 4)) @ L.T), axis=1)
        log_evidence.append(logsumexp(log_lik) - np.log(log_lik.size))
    assert np.all(np.diff(log_evidence) > 0.05) and log_evidence[-1] < np.log(0.5)


def test_ep_classifier_reaches_its_optimum(moons):
    """inference="ep": the learned hyperparameters maximise the EP lml (zero gradient, above a grid),
    and the fit and the predictions are gpc_ep's and gpc_predict's there."""
    X, y = moons
    clf = GPClassifier(inference="ep", n_restarts=0).fit(X, y)
    lml, grad = gpc_log_marginal_likelihood(X, y, clf.variance_, clf.lengthscale_, inference="ep", tol=1e-12)
    assert np.max(np.abs(grad)) < 1e-3
    assert_allclose(clf.log_marginal_likelihood_, lml, rtol=0, atol=1e-6)
    for dv in (0.8, 1.25):
        for dl in (0.8, 1.25):
            other = gpc_log_marginal_likelihood(X, y, clf.variance_ * dv, clf.lengthscale_ * dl,
                                                eval_gradient=False, inference="ep")
            assert other < clf.log_marginal_likelihood_
    laplace = GPClassifier(n_restarts=0).fit(X, y)
    assert not np.isclose(clf.variance_, laplace.variance_, rtol=1e-2)  # a different objective
    ep = gpc_ep(rbf_kernel(X, variance=clf.variance_, lengthscale=clf.lengthscale_), y)
    X_new = X[:7] + 0.1
    pred = gpc_predict(ep, rbf_kernel(X_new, X, variance=clf.variance_, lengthscale=clf.lengthscale_),
                       np.full(7, clf.variance_), method="quadrature")
    assert_allclose(clf.predict_proba(X_new)[:, 1], pred.prob, rtol=0, atol=1e-7)


@pytest.mark.parametrize("data", ["two moons", "separable"])
def test_fast_ep_search_agrees_with_the_plain_one(monkeypatch, data):
    """The EP search's shortcuts (Anderson-accelerated sweeps, sites to 1e-6 during
    the search and looser far from the optimum, the final fit warm-started) leave the
    learned hyperparameters and the predictions those of the plain search (damped
    sweeps, every EP run to tol, the final one from flat sites); on the separable data
    the variance runs to its bound 1e5 in both.

    L-BFGS-B stops when the lml changes by less than about 2.2e-9 of its size (its
    default ftol), here 5e-8 nats: along a direction that flat the hyperparameters are
    determined to a few 1e-4 only (the variance on two moons: 35.5794 to 35.5891 in
    different runs of the fast search, 35.5892 by the plain one, the lml at most 4.5e-8
    lower), which the test allows.  The predictions move with them: on the separable data
    the length scale is 5.77069 after the search with the tolerance loosened far from the
    optimum, 5.77051 with 1e-6 throughout and 5.77031 by the plain search (the lml 5.2e-9
    and 1.3e-9 below the plain one's, L-BFGS-B's ftol there being 1.4e-8 nats), and one
    predicted probability 1.03e-5 from the plain one's; the test allows 3e-5."""
    from blrlib import gp_classifier, gp_ep, gp_hyperparameters

    if data == "two moons":
        X, y = datasets.two_moons(60, noise=0.3, seed=0)
    else:
        X, y = datasets.separable(60, seed=0)[:2]
    X_new = np.random.default_rng(3).uniform(-2.0, 2.0, size=(25, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the variance's bound
        fast = GPClassifier(inference="ep", n_restarts=0).fit(X, y)
        monkeypatch.setattr(gp_ep, "_ACCELERATE", False)
        full = {"laplace": 0.0, "ep": 0.0}
        monkeypatch.setattr(gp_hyperparameters, "_SEARCH_TOL", full)
        monkeypatch.setattr(gp_hyperparameters, "_LOOSEST_TOL", full)

        def cold(K, y, max_sweeps, tol, *warm):
            return gpc_ep(K, y, max_sweeps=max_sweeps, tol=tol)

        monkeypatch.setattr(gp_classifier, "_ep_from", cold)
        plain = GPClassifier(inference="ep", n_restarts=0).fit(X, y)
    assert fast.posterior_.converged and plain.posterior_.converged
    learned = [fast.variance_, fast.lengthscale_]
    assert_allclose(learned, [plain.variance_, plain.lengthscale_], rtol=1e-3)
    lml = fast.log_marginal_likelihood_
    assert_allclose(lml, plain.log_marginal_likelihood_, rtol=0, atol=1e-7)
    p = fast.predict_proba(X_new)
    assert_allclose(p, plain.predict_proba(X_new), rtol=0, atol=3e-5)
    if data == "separable":
        assert fast.variance_ == pytest.approx(1e5) == plain.variance_


def test_ep_search_tolerance_follows_the_projected_gradient(monkeypatch):
    """During the EP search each evaluation runs to 1e-4 times the largest entry of the
    previous evaluation's projected gradient, clipped to [1e-6, 1e-4]: the first one to
    1e-6, those far from the optimum to 1e-4, those at the end to 1e-6 again; with the
    variance at its bound (separable data) its gradient, which points out of the box,
    does not count.  The search still ends where the one at 1e-6 throughout ends."""
    from blrlib import gp_hyperparameters

    X, y = datasets.separable(60, seed=0)[:2]
    calls = []
    evaluate = gp_hyperparameters._evaluate

    def record(D, y, theta, inference, max_iter, tol, warm=None, eval_gradient=True, buffers=None):
        result = evaluate(D, y, theta, inference, max_iter, tol, warm, eval_gradient, buffers)
        if buffers is not None:  # the search's evaluations
            calls.append((tol, result))
        return result

    monkeypatch.setattr(gp_hyperparameters, "_evaluate", record)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the variance's bound
        fast = GPClassifier(inference="ep", n_restarts=0).fit(X, y)
        searched = list(calls)
        monkeypatch.setattr(gp_hyperparameters, "_LOOSEST_TOL", {"laplace": 0.0, "ep": 0.0})
        calls.clear()
        tight = GPClassifier(inference="ep", n_restarts=0).fit(X, y)
    assert {tol for tol, _ in calls} == {1e-6}
    tols = [tol for tol, _ in searched]
    assert tols[0] == 1e-6 and max(tols) == 1e-4 and tols[-1] < 1e-5
    at_bound = 0
    for (tol, _), (_, previous) in zip(searched[1:], searched[:-1]):
        grad = previous.grad.copy()
        if previous.theta[0] == np.log(1e5):
            assert grad[0] > 1e-3  # would loosen the tolerance, but points out of the box
            grad[0], at_bound = 0.0, at_bound + 1
        assert tol == pytest.approx(np.clip(1e-4 * np.max(np.abs(grad)), 1e-6, 1e-4), rel=1e-12)
    assert at_bound >= 2
    assert fast.variance_ == pytest.approx(1e5) == tight.variance_
    assert_allclose(fast.lengthscale_, tight.lengthscale_, rtol=1e-4)
    assert_allclose(fast.log_marginal_likelihood_, tight.log_marginal_likelihood_, rtol=0, atol=1e-8)


# --- bad input -------------------------------------------------------------------------------

Y3 = np.array([0, 1, 1])


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: GPClassifier(lengthscale=-1.0).fit(np.ones((3, 1)), Y3), ValueError, r"lengthscale must be > 0, got -1"),
        (lambda: GPClassifier(variance=0.0).fit(np.ones((3, 1)), Y3), ValueError, r"variance must be > 0, got 0"),
        (lambda: GPClassifier(n_restarts=-1).fit(np.ones((3, 1)), Y3), ValueError, r"n_restarts must be >= 0, got -1"),
        (lambda: GPClassifier(predict_method="exact").fit(np.ones((3, 1)), Y3), ValueError, r"method must be one of"),
        (lambda: GPClassifier(lengthscale_bounds=(2.0, 1.0)).fit(np.ones((3, 1)), Y3), ValueError,
         r"lengthscale_bounds must satisfy low <= high, got \(2, 1\)"),
        (lambda: GPClassifier(inference="vb").fit(np.ones((3, 1)), Y3), ValueError,
         r"inference must be one of \('laplace', 'ep'\), got 'vb'"),
        (lambda: GPClassifier(tol=0.0).fit(np.ones((3, 1)), Y3), ValueError, r"tol must be > 0, got 0"),
        (lambda: GPClassifier(variance_bounds=(1.0,)).fit(np.ones((3, 1)), Y3), TypeError,
         r"variance_bounds must be a pair \(low, high\) or \"fixed\""),
        # scikit-learn's validation since issue 17: its messages, NotFittedError (an AttributeError)
        (lambda: GPClassifier().fit(np.ones((3, 1)), [0.5, 1.5, 0.2]), ValueError, r"Unknown label type"),
        (lambda: GPClassifier(inference="ep").fit(np.ones((3, 1)), [0, 1, 2]), ValueError,
         (r"Only binary classification is supported by GPClassifier\(inference='ep'\); y has 3 classes "
          r"\[0, 1, 2\]. For K > 2 classes use inference='laplace'")),
        (lambda: GPClassifier().fit(np.ones(3), Y3), ValueError, r"Expected 2D array, got 1D array"),
        (lambda: GPClassifier().fit(np.ones((3, 1)) * 1j, Y3), ValueError, r"Complex data not supported"),
        (lambda: GPClassifier().predict(np.ones((3, 1))), NotFittedError, r"not fitted yet; call fit\(X, y\) first"),
        (lambda: GPClassifier(optimize=False).fit(np.eye(3), Y3).predict_proba(np.ones((2, 2))), ValueError,
         r"X has 2 features, but GPClassifier is expecting 3 features"),
        (lambda: GPClassifier().set_params(length_scale=1.0), ValueError, r"Invalid parameter 'length_scale'"),
        (lambda: GPClassifier(random_state="seed").fit(np.ones((3, 1)), Y3), TypeError,
         r"random_state must be None, an int seed, a numpy.random.Generator or a numpy.random.RandomState"),
        (lambda: GPClassifier(variance_bounds="free").fit(np.ones((3, 1)), Y3), ValueError,
         r'variance_bounds must be a pair \(low, high\) or "fixed", got \'free\''),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- a scikit-learn classifier (issue 17) ---------------------------------------------------

@parametrize_with_checks(
    [GPClassifier(), GPClassifier(inference="ep", n_restarts=0, variance_bounds=(1e-2, 1e2))]
)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # hyperparameters at bounds on the checks' data
        check(estimator)


@pytest.fixture(scope="module")
def small_moons():
    return datasets.two_moons(60, noise=0.3, seed=2)


def test_pipeline_grid_search_cross_val_calibration_clone(small_moons):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = small_moons
    pipe = make_pipeline(StandardScaler(), GPClassifier(n_restarts=0))
    assert pipe.fit(X, y).score(X, y) > 0.9
    assert pipe.predict(X).shape == (60,)
    scores = cross_val_score(pipe, X, y, cv=3)
    by_hand = [clone(pipe).fit(X[tr], y[tr]).score(X[te], y[te]) for tr, te in StratifiedKFold(3).split(X, y)]
    assert_allclose(scores, by_hand, rtol=0, atol=0) and np.mean(scores) > 0.75
    grid = {"gpclassifier__n_restarts": [0, 1]}
    for scoring in (None, "neg_log_loss"):
        search = GridSearchCV(pipe, grid, cv=3, scoring=scoring).fit(X, y)
        assert np.isfinite(search.best_score_), scoring
        assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    cal = CalibratedClassifierCV(GPClassifier(n_restarts=0), cv=3).fit(X, y)
    assert cal.predict_proba(X).shape == (60, 2)
    twin = clone(GPClassifier(3.0, inference="ep"))
    assert twin.get_params()["variance"] == 3.0 and twin.get_params()["inference"] == "ep"


def test_multiclass_pipeline_grid_search_cross_val():
    """K = 3 (iris): the Laplace multi-class classifier (hyperparameters not learned for
    K > 2, so held fixed and chosen by GridSearchCV) behind a StandardScaler."""
    clf = GPClassifier(1.0, 1.5, optimize=False)
    scores = check_multiclass_pipeline(clf, {"lengthscale": [0.5, 1.5]})
    assert np.mean(scores) > 0.9


def test_pandas_feature_names(small_moons):
    import pandas as pd

    X, y = small_moons
    df = pd.DataFrame(X, columns=["a", "b"])
    clf = GPClassifier(n_restarts=0).fit(df, y)
    assert clf.feature_names_in_.tolist() == ["a", "b"] and clf.n_features_in_ == 2
    assert_allclose(clf.predict_proba(df), GPClassifier(n_restarts=0).fit(X, y).predict_proba(X), rtol=1e-12)
    with pytest.raises(ValueError, match="Feature names must be in the same order as they were in fit"):
        clf.predict_proba(df[["b", "a"]])


@pytest.mark.parametrize("labels", [("no", "yes"), (-1, 1), (1, 2)])
def test_any_two_labels(small_moons, labels):
    X, y = small_moons
    coded = np.where(y == 1, labels[1], labels[0])
    ref = GPClassifier(n_restarts=0).fit(X, y)
    clf = GPClassifier(n_restarts=0).fit(X, coded)
    assert clf.classes_.tolist() == list(labels)
    assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-12)
    assert np.array_equal(clf.predict(X), np.where(ref.predict(X) == 1, labels[1], labels[0]))
    assert clf.score(X, coded) == ref.score(X, y) == np.mean(ref.predict(X) == y)


def test_n_iter_and_random_state(small_moons):
    X, y = small_moons
    clf = GPClassifier(n_restarts=1).fit(X, y)
    assert clf.n_iter_ == sum(r.nfev for r in clf.optimize_results_) + 1
    assert GPClassifier(optimize=False).fit(X, y).n_iter_ == 1
    fitted = {}
    for name, state in [("int", 3), ("generator", np.random.default_rng(3)), ("legacy", np.random.RandomState(3)),
                        ("none", None)]:
        fitted[name] = GPClassifier(n_restarts=1, random_state=state).fit(X, y)
    # an int seed and a Generator seeded alike draw the same restarts
    assert [r.x.tolist() for r in fitted["int"].optimize_results_] == \
        [r.x.tolist() for r in fitted["generator"].optimize_results_]
    for clf in fitted.values():  # every start reaches the same optimum on two moons
        assert_allclose(clf.log_marginal_likelihood_, fitted["int"].log_marginal_likelihood_, atol=1e-6)


def test_fixed_hyperparameter_without_bound_warnings(small_moons):
    X, y = small_moons
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fixed = GPClassifier(variance=4.0, variance_bounds="fixed", n_restarts=1).fit(X, y)
        equal = GPClassifier(variance=4.0, variance_bounds=(4.0, 4.0), n_restarts=1).fit(X, y)
        both = GPClassifier(2.0, 0.5, variance_bounds="fixed", lengthscale_bounds="fixed").fit(X, y)
    assert fixed.variance_ == 4.0 and equal.variance_ == 4.0
    assert_allclose(fixed.lengthscale_, equal.lengthscale_, rtol=1e-10)
    # the length scale maximises the marginal likelihood at variance 4
    _, grad = gpc_log_marginal_likelihood(X, y, 4.0, fixed.lengthscale_)
    assert abs(grad[1]) < 1e-3 and abs(grad[0]) > 1e-2
    assert (both.variance_, both.lengthscale_, both.optimize_results_, both.n_iter_) == (2.0, 0.5, [], 1)


@pytest.mark.parametrize("inference", ["laplace", "ep"])
def test_predictions_do_not_depend_on_units(small_moons, inference):
    """lengthscale="auto" and lengthscale_bounds="auto" work in multiples of the median distance."""
    X, y = small_moons
    X_new = X[:15] + 0.05
    auto = {"lengthscale": "auto", "lengthscale_bounds": "auto", "inference": inference, "n_restarts": 1}
    base = GPClassifier(**auto).fit(X, y)
    for factor in (1e-4, 1e8):
        scaled = GPClassifier(**auto).fit(factor * X, y)
        assert_allclose(scaled.predict_proba(factor * X_new), base.predict_proba(X_new), rtol=0, atol=1e-6)
        assert_allclose(scaled.lengthscale_ / factor, base.lengthscale_, rtol=1e-5)
        assert_allclose(scaled.variance_, base.variance_, rtol=1e-5)


def test_warns_when_the_search_does_not_move(small_moons):
    """Inputs in large units with the default start at lengthscale 1: every pair of points looks
    unrelated, the marginal likelihood is flat, L-BFGS-B stops where it began, and says so now."""
    X, y = small_moons
    with pytest.warns(ConvergenceWarning, match=r"did not move lengthscale from its start 1: .* the median "
                                                 r"distance between the training points is 1\.\d+e\+08"):
        clf = GPClassifier(n_restarts=0).fit(1e8 * X, y)
    assert clf.lengthscale_ == 1.0
    with warnings.catch_warnings():  # started at its optimum, it does not move either: no warning
        warnings.simplefilter("error", ConvergenceWarning)
        ref = GPClassifier(n_restarts=0).fit(X, y)
        again = GPClassifier(ref.variance_, ref.lengthscale_, n_restarts=0).fit(X, y)
    assert_allclose(again.log_marginal_likelihood_, ref.log_marginal_likelihood_, atol=1e-8)


# --- K > 2 classes (issue 19): RW Alg. 3.3 and 3.4 ---------------------------------------------


@pytest.fixture(scope="module")
def three_blobs():
    rng = np.random.default_rng(7)
    centres = np.array([[-1.5, 0.0], [1.5, 0.0], [0.0, 2.0]])
    y = np.repeat([0, 1, 2], 25)
    return centres[y] + rng.normal(scale=0.9, size=(75, 2)), y


@pytest.mark.parametrize("variance, lengthscale", [(1.0, 1.0), (4.0, 0.5), (20.0, 3.0)])
def test_multiclass_is_gpc_laplace_multiclass(three_blobs, variance, lengthscale):
    X, y = three_blobs
    labels = np.array(["a", "b", "c"])[y]
    clf = GPClassifier(variance, lengthscale, optimize=False, random_state=5).fit(X, labels)
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
    fit = gpc_laplace_multiclass(K, y)
    assert clf.classes_.tolist() == ["a", "b", "c"] and clf.n_iter_ == 1
    assert_allclose(clf.posterior_.f_hat, fit.f_hat, rtol=1e-12, atol=1e-12)
    assert_allclose(clf.log_marginal_likelihood_, fit.log_marginal_likelihood, rtol=1e-12)
    X_new = np.random.default_rng(1).normal(scale=2.0, size=(40, 2))
    K_star = rbf_kernel(X_new, X, variance=variance, lengthscale=lengthscale)
    pred = gpc_predict_multiclass(fit, K_star, np.full(40, variance), rng=np.random.default_rng(5))
    proba = clf.predict_proba(X_new)
    assert_allclose(proba, pred.prob, rtol=0, atol=1e-12)
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert clf.predict(X_new).tolist() == clf.classes_[np.argmax(proba, axis=1)].tolist()
    mean, cov = clf.latent_mean_and_variance(X_new)
    assert_allclose(mean, pred.mean, rtol=1e-12, atol=1e-12)
    assert_allclose(cov, pred.cov, rtol=1e-12, atol=1e-12)
    # the deterministic predictives: softmax of the mean, and of the means scaled per class
    kappa = 1 / np.sqrt(1 + np.pi * np.diagonal(cov, axis1=1, axis2=2) / 8)
    for method, a in (("plugin", mean), ("probit", kappa * mean)):
        expected = np.exp(a - logsumexp(a, axis=1, keepdims=True))
        assert_allclose(clf.set_params(predict_method=method).predict_proba(X_new), expected, rtol=1e-12)
    assert clf.set_params(predict_method="mc").score(X, labels) > 0.8


def test_multiclass_hyperparameters_are_fixed_and_say_so(three_blobs):
    X, y = three_blobs
    with pytest.warns(ConvergenceWarning, match="with 3 classes the hyperparameters are not learned"):
        clf = GPClassifier(2.0, "auto").fit(X, y + 10)
    assert clf.variance_ == 2.0 and clf.optimize_results_ == []
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    assert_allclose(clf.lengthscale_, np.median(np.sqrt(D[np.triu_indices(75, 1)])), rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # fixed on purpose: no warning
        GPClassifier(optimize=False).fit(X, y)
        GPClassifier(variance_bounds="fixed", lengthscale_bounds="fixed").fit(X, y)
    # two classes keep the binary model and its hyperparameter search
    binary = GPClassifier(n_restarts=0).fit(X[y < 2], y[y < 2])
    assert isinstance(binary.posterior_, GPCLaplace) and binary.n_iter_ > 1


def test_multiclass_against_sklearn_one_vs_rest(three_blobs):
    # the joint softmax model and scikit-learn's one-vs-rest GP classifier at the same kernel
    # agree on the labels of most held-out points and on the training accuracy
    X, y = three_blobs
    rng = np.random.default_rng(3)
    X_test = rng.normal(scale=1.8, size=(200, 2)) + [0.0, 0.7]
    ours = GPClassifier(4.0, 1.0, optimize=False).fit(X, y)
    kernel = ConstantKernel(4.0, "fixed") * RBF(1.0, "fixed")
    theirs = GaussianProcessClassifier(kernel, optimizer=None).fit(X, y)
    agree = np.mean(ours.predict(X_test) == theirs.predict(X_test))
    assert agree > 0.9
    assert abs(ours.score(X, y) - theirs.score(X, y)) < 0.05
