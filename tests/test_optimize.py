"""Gradient ascent and guarded Newton / IRLS (chapters 2-4), against statsmodels and scikit-learn."""

import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from numpy.testing import assert_allclose
from sklearn.linear_model import LogisticRegression

from blrlib import ConvergenceWarning, add_intercept, datasets, gradient, gradient_ascent, hessian, irls, log_posterior
from blrlib import optimize
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
    with pytest.warns(ConvergenceWarning, match=r"max_iter=3 .*largest gradient component .*increase max_iter"):
        fit = gradient_ascent(X, y, max_iter=3)
    assert not fit.converged and fit.n_iter == 3 and fit.history.shape == (3,)
    with pytest.warns(ConvergenceWarning, match=r"max_iter=2 .*Newton decrement .* > tol=1e-10.*increase max_iter"):
        fit = irls(X, y, max_iter=2)
    assert not fit.converged and fit.n_iter == 2


def test_stalled_line_search_is_reported(rng, monkeypatch):
    """If no step rises (a problem too badly scaled for double precision) irls says so."""
    X, y = make_logistic_data(rng)
    monkeypatch.setattr(optimize, "_line_search", lambda *args, **kwargs: None)
    with pytest.warns(ConvergenceWarning, match="no step increased the log posterior.*standardise"):
        fit = irls(X, y)
    assert not fit.converged and fit.n_iter == 0


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
    """The message gives the rank of X itself, and a prior on the dependent columns cures it."""
    X, y = make_logistic_data(rng, n=30, d=3)
    X = np.column_stack([X, X[:, 1]])
    with pytest.raises(ValueError, match=r"X has rank 3 < d = 4: its columns are linearly dependent"):
        irls(X, y)
    # only the unpenalised columns must be independent
    with pytest.raises(ValueError, match=r"zero prior precision \(indices \[0, 1, 3\]\) have rank 2 < 3"):
        irls(X, y, prior_precision=[0.0, 0.0, 1.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        free_copy = irls(X, y, prior_precision=[0.0, 0.0, 1.0, 1.0])
        both_penalised = irls(X, y, prior_precision=[0.0, 1.0, 1.0, 1.0])
    # the penalised copy gives its share to the free one; equal precisions split it evenly
    assert free_copy.converged and abs(free_copy.w[3]) < 1e-12
    assert both_penalised.converged and abs(both_penalised.w[1] - both_penalised.w[3]) < 1e-9


# --- the guarded Newton method -----------------------------------------------------------------


def plain_newton(X, y, lam, w0, n_steps):
    """Newton's method without a safeguard: w <- w - H^-1 g (chapter 3, eq-newton)."""
    path = [np.asarray(w0, dtype=float)]
    for _ in range(n_steps):
        w = path[-1]
        path.append(w - np.linalg.solve(hessian(w, X, y, lam), gradient(w, X, y, lam)))
    return np.array(path)


@pytest.fixture(scope="module")
def spector():
    X, y, _ = datasets.spector()
    return add_intercept(X), y


SPECTOR_START = np.array([0.0, 0.0, 0.3, 0.0])


def test_plain_newton_falls_into_a_two_cycle_on_spector(spector):
    """The example of issue 10: lambda = 1, w0 = (0, 0, 0.3, 0). Plain Newton saturates every
    prediction, after which the step is w <- X^T (y - p) / lambda, and it alternates between
    two points far from the mode for ever."""
    X, y = spector
    path = plain_newton(X, y, 1.0, SPECTOR_START, 40)
    assert_allclose(path[2], [11.0, 37.76, 259.0, 8.0], rtol=0, atol=1e-6)
    assert_allclose(path[3], [-21.0, -61.99, -443.0, -6.0], rtol=0, atol=1e-6)
    assert_allclose(path[-1], path[-3], rtol=0, atol=1e-9)  # period two
    assert np.linalg.norm(path[-1] - path[-2]) > 500
    values = [log_posterior(w, X, y, 1.0) for w in path[-2:]]
    assert max(values) < -1e5  # nowhere near the maximum (about -19.15)


@pytest.mark.parametrize("lam", [1.0, 0.0])
def test_guarded_newton_converges_from_the_two_cycle_start(spector, lam):
    X, y = spector
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = irls(X, y, lam, w0=SPECTOR_START)
    assert fit.converged and fit.n_iter <= 15
    assert np.all(np.diff(fit.history) >= 0)
    if lam == 0:
        ref = sm.Logit(y, X).fit(disp=0, method="newton", tol=1e-14, maxiter=100).params
    else:
        ref = LogisticRegression(C=1 / lam, fit_intercept=False, solver="newton-cholesky", tol=1e-14,
                                 max_iter=1000).fit(X, y).coef_.ravel()
    assert_allclose(fit.w, ref, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0, 100.0, 1e3, 1e5])
@pytest.mark.parametrize("lam", [0.0, 1.0])
def test_guarded_newton_converges_from_random_starts(spector, rng, scale, lam):
    """Every start at every scale reaches the same maximiser, and the log posterior never falls.
    At scale 1e3 and above every prediction is saturated and the Newton matrix is singular in
    double precision, so the bound step takes over."""
    X, y = spector
    reference = irls(X, y, lam).w
    for _ in range(8):
        w0 = scale * rng.standard_normal(4)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fit = irls(X, y, lam, w0=w0)
        assert fit.converged and fit.n_iter <= 60, (w0, fit)
        assert np.all(np.diff(fit.history) >= 0)
        assert fit.history[0] >= log_posterior(w0, X, y, lam)
        assert_allclose(fit.w, reference, rtol=1e-8, atol=1e-9)


def test_saturated_start_is_not_reported_as_rank_deficiency(spector):
    """At w0 = 1e3 * (1, 1, 1, 1) every p(1 - p) underflows to 0 although X has full rank."""
    X, y = spector
    w0 = np.full(4, 1e3)
    assert np.all(hessian(w0, X, y) == 0.0) and np.linalg.matrix_rank(X) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = irls(X, y, w0=w0)
    assert fit.converged
    assert_allclose(fit.w, irls(X, y).w, rtol=1e-9)


@pytest.mark.parametrize("scale", [1.0, 30.0, 1e3])
def test_guarded_newton_random_starts_on_larger_data(rng, scale):
    X, y = make_logistic_data(rng, n=400, d=6, scale=2.0)
    X[:, 2] *= 50.0  # one badly scaled column
    reference = sm.Logit(y, X).fit(disp=0, method="newton", tol=1e-14, maxiter=100).params
    for _ in range(5):
        w0 = scale * rng.standard_normal(6)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fit = irls(X, y, w0=w0)
        assert fit.converged and np.all(np.diff(fit.history) >= 0)
        assert_allclose(fit.w, reference, rtol=1e-7, atol=1e-9)


def test_callback_sees_a_copy_of_every_iterate(spector):
    X, y = spector
    for optimiser, kwargs in [(irls, {}), (gradient_ascent, {"max_iter": 30})]:
        seen = []

        def record(w, t, seen=seen):
            seen.append((t, w))
            w[:] = np.nan  # a copy: spoiling it must not disturb the optimiser

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # gradient ascent needs more steps
            fit = optimiser(X, y, 1.0, callback=record, **kwargs)
            assert [t for t, _ in seen] == list(range(1, fit.n_iter + 1))
            for t in (1, 2, fit.n_iter):
                again = optimiser(X, y, 1.0, **{**kwargs, "max_iter": t})
                assert_allclose(log_posterior(again.w, X, y, 1.0), fit.history[t - 1], rtol=1e-13)
        assert np.all(np.isfinite(fit.w))


def test_callback_must_be_callable(spector):
    with pytest.raises(TypeError, match=r"callback must be a function callback\(w, t\) or None, got int"):
        irls(*spector, callback=3)


# --- per-weight prior precisions --------------------------------------------------------------


@pytest.mark.parametrize("lam", [0.01, 1.0, 30.0])
def test_free_intercept_equals_sklearn_default(rng, lam):
    """prior_precision = [0, lam, ..., lam] is scikit-learn's LogisticRegression(C=1/lam)."""
    X_raw = rng.standard_normal((200, 4)) * [1.0, 3.0, 0.5, 1.0] + 2.0
    y = (rng.random(200) < 1 / (1 + np.exp(-(X_raw @ [1.0, -0.5, 2.0, 0.0] - 3.0)))).astype(int)
    X = add_intercept(X_raw)
    fit = irls(X, y, prior_precision=np.r_[0.0, np.full(4, lam)])
    ref = LogisticRegression(C=1.0 / lam, fit_intercept=True, solver="newton-cholesky", tol=1e-14, max_iter=1000)
    ref.fit(X_raw, y)
    assert fit.converged
    assert_allclose(fit.w, np.r_[ref.intercept_, ref.coef_.ravel()], rtol=1e-8, atol=1e-10)
    ga = gradient_ascent(X, y, prior_precision=np.r_[0.0, np.full(4, lam)], tol=1e-9, max_iter=200_000)
    assert ga.converged
    assert_allclose(ga.w, fit.w, rtol=1e-6, atol=1e-7)


def test_vector_of_equal_precisions_equals_the_scalar(rng):
    X, y = make_logistic_data(rng, n=100, d=4)
    assert_allclose(irls(X, y, np.full(4, 2.5)).w, irls(X, y, 2.5).w, rtol=1e-14, atol=1e-15)


def test_free_intercept_with_a_single_class_has_no_maximiser(rng):
    """All labels 1: with the intercept unpenalised the mode runs off along the intercept."""
    X = add_intercept(rng.standard_normal((30, 2)))
    y = np.ones(30)
    with pytest.warns(ConvergenceWarning, match=r"quasi-separable in the columns with zero prior precision "
                                                r"\(indices \[0\]\).*positive precision on those columns"):
        fit = irls(X, y, prior_precision=[0.0, 1.0, 1.0])
    assert not fit.converged and fit.w[0] > 15
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert irls(X, y, prior_precision=1.0).converged


def test_fit_result_repr(spector_fit):
    text = repr(spector_fit[2])
    assert text.startswith("FitResult(w=[") and "converged=True" in text
