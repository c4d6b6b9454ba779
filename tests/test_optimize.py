"""Gradient ascent and IRLS (chapters 2-4), against statsmodels and scikit-learn."""

import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from numpy.testing import assert_allclose
from sklearn.linear_model import LogisticRegression

from blrlib import ConvergenceWarning, add_intercept, datasets, gradient, gradient_ascent, hessian, irls, log_posterior
from _helpers import make_logistic_data

# Greene, Econometric Analysis (7th ed.), logit model for the Spector & Mazzeo data,
# as printed (coefficient, standard error).  Order: constant, GPA, TUCE, PSI.
GREENE_COEF = np.array([-13.021, 2.826, 0.095, 2.379])
GREENE_SE = np.array([4.931, 1.263, 0.142, 1.065])


@pytest.fixture(scope="module")
def spector_fit():
    X, y, _ = datasets.spector()
    Xi = add_intercept(X)
    return Xi, y, irls(Xi, y)


def test_spector_mle_equals_statsmodels(spector_fit):
    Xi, y, fit = spector_fit
    ref = sm.Logit(y, Xi).fit(disp=0, method="newton", tol=1e-14, maxiter=100)
    se = np.sqrt(np.diag(np.linalg.inv(-hessian(fit.w, Xi, y))))
    assert fit.converged and fit.n_iter <= 10
    assert_allclose(fit.w, ref.params, rtol=1e-7, atol=1e-9)
    assert_allclose(se, ref.bse, rtol=1e-7, atol=1e-9)
    assert_allclose(fit.history[-1], ref.llf, rtol=1e-12)


def test_spector_mle_equals_published_values(spector_fit):
    Xi, y, fit = spector_fit
    se = np.sqrt(np.diag(np.linalg.inv(-hessian(fit.w, Xi, y))))
    assert_allclose(fit.w, GREENE_COEF, rtol=0, atol=0.0005 + 1e-12)
    assert_allclose(se, GREENE_SE, rtol=0, atol=0.0005 + 1e-12)


def test_irls_history_never_decreases_and_converges_quadratically(rng):
    X, y = make_logistic_data(rng, n=500, d=6, scale=1.5)
    fit = irls(X, y)
    assert fit.converged
    assert np.all(np.diff(fit.history) >= -1e-12)
    # quadratic convergence: the gap to the optimum at least squares (up to a constant) each step
    gaps = fit.history[-1] - fit.history[:-1]
    gaps = gaps[gaps > 1e-13]
    ratios = np.log(gaps[1:]) / np.log(gaps[:-1])
    assert ratios[-1] > 1.6, gaps


@pytest.mark.parametrize("prior_precision", [0.0, 0.5, 10.0])
def test_gradient_ascent_and_irls_reach_the_same_optimum(rng, prior_precision):
    X, y = make_logistic_data(rng, n=200, d=4)
    ga = gradient_ascent(X, y, prior_precision, tol=1e-10, max_iter=100_000)
    nt = irls(X, y, prior_precision)
    assert ga.converged and nt.converged
    assert_allclose(ga.w, nt.w, rtol=1e-7, atol=1e-8)
    assert np.all(np.diff(ga.history) >= -1e-12)  # the default step 1/L never goes downhill
    assert np.max(np.abs(gradient(nt.w, X, y, prior_precision))) < 1e-10


@pytest.mark.parametrize("lam", [0.01, 1.0, 30.0])
def test_map_equals_sklearn_with_explicit_ones_column(rng, lam):
    X, y = make_logistic_data(rng, n=150, d=4)
    fit = irls(X, y, prior_precision=lam)
    ref = LogisticRegression(C=1.0 / lam, fit_intercept=False, solver="newton-cholesky", tol=1e-14, max_iter=1000)
    ref.fit(X, y)
    assert_allclose(fit.w, ref.coef_.ravel(), rtol=1e-8, atol=1e-10)


def test_separable_data_without_prior_stops_with_warning():
    X, y = datasets.separable(40, seed=1)
    Xi = add_intercept(X)
    with pytest.warns(ConvergenceWarning, match="separable.*prior"):
        fit = irls(Xi, y)
    assert not fit.converged
    assert np.all(np.isfinite(fit.w)) and fit.n_iter < 100
    with pytest.warns(ConvergenceWarning, match="separable"):
        ga = gradient_ascent(Xi, y, max_iter=500)
    assert not ga.converged and np.all(np.isfinite(ga.w))


def quasi_separable():
    """Classes split at x = 0 except for two tied points there, one of each class."""
    x = np.r_[np.linspace(-3, -0.1, 15), 0.0, 0.0, np.linspace(0.1, 3, 15)]
    y = np.r_[np.zeros(15), 0, 1, np.ones(15)].astype(int)
    return add_intercept(x[:, None]), y


def test_quasi_separable_data_without_prior_stops_with_warning():
    """No finite MLE although no hyperplane separates strictly (quasi-complete separation)."""
    X, y = quasi_separable()
    with pytest.warns(ConvergenceWarning, match="quasi-separable.*prior"):
        fit = irls(X, y)
    assert not fit.converged and np.all(np.isfinite(fit.w)) and abs(fit.w[1]) > 50
    with pytest.warns(ConvergenceWarning, match="quasi-separable.*prior"):
        ga = gradient_ascent(X, y, max_iter=500)
    assert not ga.converged
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert irls(X, y, prior_precision=0.1).converged


def test_binary_feature_that_predicts_one_class_is_quasi_separation(rng):
    """A dummy that is 1 only for y = 1 drives its own weight to infinity."""
    x = rng.normal(size=100)
    y = (rng.random(100) < 0.5).astype(int)
    dummy = ((y == 1) & (rng.random(100) < 0.3)).astype(float)
    with pytest.warns(ConvergenceWarning, match="quasi-separable"):
        fit = irls(add_intercept(np.column_stack([x, dummy])), y)
    assert not fit.converged and fit.w[2] > 10


def test_confident_outlier_is_not_mistaken_for_separation(rng):
    """A fitted probability within 2e-9 of its label triggers the check, which then clears it."""
    x = rng.normal(size=200)
    y = (rng.random(200) < 1 / (1 + np.exp(-2 * x))).astype(int)
    x[0], y[0] = 40.0, 1
    X = add_intercept(x[:, None])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = irls(X, y)
    assert fit.converged and np.max((2 * y - 1) * (X @ fit.w)) > 30


def test_separable_data_with_prior_converges():
    X, y = datasets.separable(40, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = irls(add_intercept(X), y, prior_precision=1.0)
    assert fit.converged


def test_max_iter_reached_warns(rng):
    X, y = make_logistic_data(rng)
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        fit = gradient_ascent(X, y, max_iter=3)
    assert not fit.converged and fit.n_iter == 3 and fit.history.shape == (3,)


@pytest.mark.parametrize("optimiser", [irls, gradient_ascent])
def test_history_holds_the_log_posterior_after_each_iteration(rng, optimiser):
    """FitResult.history[t - 1] is the log posterior after iteration t (the API contract)."""
    X, y = make_logistic_data(rng, n=60, d=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # gradient ascent needs more than 50 steps
        full = optimiser(X, y, prior_precision=0.5, max_iter=50)
        assert full.history.shape == (full.n_iter,)
        for t in (1, 2, 3):
            partial = optimiser(X, y, prior_precision=0.5, max_iter=t)
            assert partial.n_iter == t
            assert_allclose(full.history[t - 1], log_posterior(partial.w, X, y, 0.5), rtol=1e-13)
    # started at the optimum, gradient ascent takes no step: empty history, no last value in the repr
    again = gradient_ascent(X, y, 0.5, w0=irls(X, y, 0.5).w, tol=1e-6)
    assert again.converged and again.n_iter == 0 and again.history.shape == (0,)
    assert "log_posterior" not in repr(again)


def test_too_large_step_is_reported(rng):
    X, y = make_logistic_data(rng, n=40, d=3, scale=3.0)
    with pytest.warns(ConvergenceWarning):
        fit = gradient_ascent(100 * X, y, step_size=1e6, max_iter=200, prior_precision=1.0)
    assert np.all(np.isfinite(fit.w)) and not fit.converged


def test_collinear_columns_give_a_clear_error(rng):
    X, y = make_logistic_data(rng, n=30, d=3)
    X = np.column_stack([X, X[:, 1]])
    with pytest.raises(ValueError, match="singular|rank"):
        irls(X, y)


def test_fit_result_repr(spector_fit):
    text = repr(spector_fit[2])
    assert text.startswith("FitResult(w=[") and "converged=True" in text
