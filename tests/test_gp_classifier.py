"""GPClassifier, the scikit-learn-style estimator on top of blrlib.gp (chapter 9; GPML Alg. 5.1 + L-BFGS-B)."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from blrlib import (
    GPCLaplace,
    GPClassifier,
    GPCPrediction,
    datasets,
    expected_sigmoid,
    gpc_laplace,
    gpc_log_marginal_likelihood,
    gpc_predict,
    rbf_kernel,
)


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
    assert_allclose(clf.laplace_.f_hat, fit.f_hat, rtol=0, atol=1e-8)
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
    assert_allclose(clf.laplace_.f_hat, sk.base_estimator_.f_cached, rtol=0, atol=1e-3)


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
    pred = gpc_predict(clf.laplace_, rbf_kernel(X_test, X, variance=clf.variance_, lengthscale=clf.lengthscale_),
                       np.full(len(X_test), clf.variance_))
    assert_allclose(mean, pred.mean, rtol=1e-13, atol=1e-13)
    assert_allclose(var, pred.var, rtol=1e-13, atol=1e-13)
    assert_allclose(proba[:, 1], pred.prob, rtol=1e-13, atol=1e-13)


def test_predict_method_parameter(moons, X_test):
    X, y = moons
    quad = GPClassifier(3.0, 0.5, optimize=False, predict_method="quadrature").fit(X, y)
    mean, var = quad.latent_mean_and_variance(X_test)
    assert_allclose(quad.predict_proba(X_test)[:, 1], expected_sigmoid(mean, var), rtol=0, atol=1e-15)


def test_fixed_hyperparameters_match_gpc_laplace(moons):
    X, y = moons
    clf = GPClassifier(variance=4.0, lengthscale=0.5, optimize=False).fit(X, y)
    fit = gpc_laplace(rbf_kernel(X, variance=4.0, lengthscale=0.5), y)
    assert (clf.variance_, clf.lengthscale_) == (4.0, 0.5)
    assert clf.optimize_results_ == []
    assert_allclose(clf.log_marginal_likelihood_, fit.log_marginal_likelihood, rtol=0, atol=1e-12)
    assert isinstance(clf.laplace_, GPCLaplace)


def test_get_params_round_trip():
    clf = GPClassifier(variance=2.0, lengthscale=0.3, n_restarts=1, predict_method="quadrature")
    params = clf.get_params()
    assert params["variance"] == 2.0 and params["predict_method"] == "quadrature"
    assert GPClassifier(**params).get_params() == params
    assert clf.set_params(lengthscale=0.7) is clf and clf.lengthscale == 0.7
    twin = clone(clf)  # scikit-learn's clone relies on the same protocol
    assert twin.get_params() == clf.get_params() and twin is not clf
    assert repr(clf) == "GPClassifier(variance=2.0, lengthscale=0.7, n_restarts=1, predict_method='quadrature')"


def test_results_are_frozen(moons):
    X, y = moons
    fit = gpc_laplace(rbf_kernel(X), y)
    with pytest.raises(AttributeError):
        fit.f_hat = None
    assert isinstance(gpc_predict(fit, rbf_kernel(X[:2], X), np.ones(2)), GPCPrediction)


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
        (lambda: GPClassifier().fit(np.ones((3, 1)), [1, 1, 1]), ValueError, r"needs both classes in y, got only class 1"),
        (lambda: GPClassifier().fit(np.ones((3, 1)), ["a", "b", "a"]), TypeError, r"y must be an array of 0/1 labels"),
        (lambda: GPClassifier().fit(np.ones(3), Y3), ValueError, r"X must be 2-D"),
        (lambda: GPClassifier().predict(np.ones((3, 1))), AttributeError, r"not fitted yet; call fit\(X, y\) first"),
        (lambda: GPClassifier(optimize=False).fit(np.eye(3), Y3).predict_proba(np.ones((2, 2))), ValueError,
         r"X has 2 features, but GPClassifier was fitted with 3 features"),
        (lambda: GPClassifier().set_params(length_scale=1.0), ValueError, r"invalid parameter 'length_scale'"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
