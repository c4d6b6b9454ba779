"""Tests of blrlib.softmax_regression: the softmax, the softmax-regression log posterior, its
gradient and Hessian (chapter 13, equations eq-softmax-loglik, eq-softmax-gradient,
eq-softmax-hessian) and the guarded Newton method softmax_irls (eq-softmax-newton)."""

import warnings

import numpy as np
import pytest
import scipy.special
from _helpers import central_difference
from numpy.testing import assert_allclose

from blrlib import (
    ConvergenceWarning,
    add_intercept,
    irls,
    log_softmax,
    sigmoid,
    softmax,
    softmax_gradient,
    softmax_hessian,
    softmax_irls,
    softmax_log_likelihood,
    softmax_log_posterior,
)

sklearn_linear = pytest.importorskip("sklearn.linear_model")


def make_softmax_data(rng, n=150, d=3, K=3, scale=1.0):
    """An intercept column plus standard-normal features; labels drawn from a softmax model."""
    X = add_intercept(rng.standard_normal((n, d - 1)))
    W = scale * rng.standard_normal((d, K))
    P = softmax(X @ W)
    y = (np.cumsum(P, axis=1) > rng.random((n, 1))).argmax(axis=1)
    return X, y


# --- softmax and log_softmax (eq-softmax) -------------------------------------------------------


def test_softmax_matches_scipy_and_sums_to_one(rng):
    A = 5 * rng.standard_normal((20, 4))
    assert_allclose(softmax(A), scipy.special.softmax(A, axis=1), rtol=1e-13)
    assert_allclose(log_softmax(A), scipy.special.log_softmax(A, axis=1), rtol=1e-13, atol=1e-13)
    assert_allclose(softmax(A).sum(axis=1), 1.0, rtol=1e-14)


def test_softmax_is_stable_for_huge_activations():
    A = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4, -1e4], [7e307, 0.0, -7e307]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = softmax(A)
        L = log_softmax(A)
    assert np.all(np.isfinite(P)) and np.all(np.isfinite(L))
    assert_allclose(P[0], [1.0, 0.0, 0.0])
    assert_allclose(P[1], [1 / 3, 1 / 3, 1 / 3])
    assert_allclose(L[0], [0.0, -1e4, -2e4])


def test_two_class_softmax_is_the_sigmoid_of_the_difference(rng):
    a = 30 * rng.standard_normal((50, 2))
    assert_allclose(softmax(a)[:, 1], sigmoid(a[:, 1] - a[:, 0]), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_softmax_rejects_non_finite(bad):
    with pytest.raises(ValueError, match="finite"):
        softmax(np.array([0.0, bad]))


def test_softmax_rejects_a_scalar():
    with pytest.raises(ValueError, match="at least one axis"):
        softmax(1.0)


# --- log posterior, gradient and Hessian against finite differences ---------------------------


def _flat(f, shape):
    return lambda v: f(v.reshape(shape))


@pytest.mark.parametrize("scale", [0.01, 0.3, 1.0, 5.0, 30.0])
@pytest.mark.parametrize("prior", [0.0, 2.0, "vector"])
def test_gradient_matches_finite_differences(rng, scale, prior):
    X, y = make_softmax_data(rng, n=40, d=3, K=4)
    lam = np.array([0.0, 0.5, 3.0]) if prior == "vector" else prior
    W = scale * rng.standard_normal((3, 4))
    f = _flat(lambda V: softmax_log_posterior(V, X, y, lam), W.shape)
    h = 1e-6 * max(1.0, scale)
    numeric = central_difference(f, W.ravel(), h).reshape(W.shape)
    analytic = softmax_gradient(W, X, y, lam)
    assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-6 * max(1.0, scale) ** 2)


@pytest.mark.parametrize("scale", [0.01, 0.3, 1.0, 5.0, 30.0])
@pytest.mark.parametrize("prior", [0.0, 2.0, "vector"])
def test_hessian_matches_finite_differences_of_the_gradient(rng, scale, prior):
    d, K = 3, 4
    X, y = make_softmax_data(rng, n=40, d=d, K=K)
    lam = np.array([0.0, 0.5, 3.0]) if prior == "vector" else prior
    W = scale * rng.standard_normal((d, K))
    H = softmax_hessian(W, X, y, lam)
    h = 1e-5
    numeric = np.empty((d * K, d * K))
    for col in range(d * K):
        k, j = divmod(col, d)  # class-major: entry k * d + j is W[j, k]
        E = np.zeros((d, K))
        E[j, k] = h
        diff = softmax_gradient(W + E, X, y, lam) - softmax_gradient(W - E, X, y, lam)
        numeric[:, col] = (diff / (2 * h)).T.ravel()
    assert_allclose(H, H.T, atol=1e-12)
    assert_allclose(H, numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("margin", [10.0, 30.0, 200.0])
def test_hessian_at_large_margins_keeps_the_tiny_curvature(rng, margin):
    """Saturated predictions: every block, down to curvatures ~ e^-margin, survives round-off.

    Class 2 (the last, from which the code derives the others' cross blocks) saturates too.
    """
    d, K = 2, 3
    X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, -1.0], [1.0, 0.5]])
    y = np.array([0, 1, 2, 2])
    W = margin * np.array([[1.0, 0.0, 0.0], [0.0, 2.0, -2.0]]) / 2
    H = softmax_hessian(W, X, y)
    lp = log_softmax(X @ W)
    P = np.exp(lp)
    for k in range(K):
        for m in range(K):
            c = P[:, k] * -np.expm1(lp[:, k]) if k == m else -P[:, k] * P[:, m]
            direct = -(X.T * c) @ X
            block = H[k * d : (k + 1) * d, m * d : (m + 1) * d]
            assert_allclose(block, direct, rtol=1e-9, atol=1e-9 * np.abs(direct).max() + 1e-300)
    assert np.all(np.diag(H) < 0)


def test_hessian_without_prior_has_the_redundant_class_in_its_null_space(rng):
    d, K = 3, 4
    X, y = make_softmax_data(rng, n=60, d=d, K=K)
    W = rng.standard_normal((d, K))
    H = softmax_hessian(W, X, y)
    for j in range(d):
        v = np.zeros((d, K))
        v[j] = 1.0
        assert_allclose(H @ v.T.ravel(), 0.0, atol=1e-12)
    eig = np.linalg.eigvalsh(H)
    assert np.sum(np.abs(eig) < 1e-10 * np.abs(eig).max()) == d
    assert np.all(eig < 1e-10 * np.abs(eig).max())
    eig_prior = np.linalg.eigvalsh(softmax_hessian(W, X, y, 0.1))
    assert eig_prior.max() <= -0.1 + 1e-10  # a proper prior: negative definite


def test_log_likelihood_invariant_to_adding_a_vector_to_every_column(rng):
    X, y = make_softmax_data(rng)
    W = rng.standard_normal((3, 3))
    v = rng.standard_normal((3, 1))
    assert_allclose(softmax_log_likelihood(W + v, X, y), softmax_log_likelihood(W, X, y), rtol=1e-12)


def test_log_posterior_subtracts_the_prior_of_every_column(rng):
    X, y = make_softmax_data(rng)
    W = rng.standard_normal((3, 3))
    lam = np.array([0.5, 1.0, 2.0])
    expected = softmax_log_likelihood(W, X, y) - 0.5 * np.sum(lam[:, None] * W**2)
    assert_allclose(softmax_log_posterior(W, X, y, lam), expected, rtol=1e-13)


def test_log_likelihood_is_stable_at_huge_margins():
    X = np.array([[1.0], [-1.0]])
    W = np.array([[1e4, -1e4]])
    assert softmax_log_likelihood(W, X, np.array([1, 0])) == pytest.approx(-4e4)
    assert softmax_log_likelihood(W, X, np.array([0, 1])) == pytest.approx(0.0, abs=1e-300)


# --- softmax_irls -----------------------------------------------------------------------------


@pytest.mark.parametrize("lam", [0.3, 1.0, 10.0])
@pytest.mark.parametrize("K", [3, 5])
def test_irls_matches_sklearn_multinomial_with_penalised_intercept(rng, lam, K):
    X, y = make_softmax_data(rng, n=300, d=4, K=K)
    fit = softmax_irls(X, y, lam)
    assert fit.converged
    sk = sklearn_linear.LogisticRegression(
        C=1 / lam, fit_intercept=False, solver="newton-cholesky", tol=1e-12, max_iter=1000
    )
    sk.fit(X, y)
    assert_allclose(fit.w, sk.coef_.T, atol=1e-7)
    assert_allclose(np.abs(softmax_gradient(fit.w, X, y, lam)).max(), 0.0, atol=1e-9)


def test_irls_with_a_free_intercept_matches_sklearn_fit_intercept(rng):
    X, y = make_softmax_data(rng, n=300, d=4, K=4)
    lam = 0.7
    fit = softmax_irls(X, y, np.array([0.0, lam, lam, lam]))
    assert fit.converged
    sk = sklearn_linear.LogisticRegression(
        C=1 / lam, fit_intercept=True, solver="newton-cholesky", tol=1e-12, max_iter=1000
    )
    sk.fit(X[:, 1:], y)
    assert_allclose(fit.w[1:], sk.coef_.T, atol=1e-7)
    intercept = sk.intercept_ - sk.intercept_.mean()  # the free row is centred
    assert_allclose(fit.w[0], intercept, atol=1e-7)
    assert_allclose(fit.w.sum(axis=1), 0.0, atol=1e-12)


def test_maximum_likelihood_matches_statsmodels_mnlogit(rng):
    sm = pytest.importorskip("statsmodels.api")
    X, y = make_softmax_data(rng, n=400, d=3, K=4)
    fit = softmax_irls(X, y)
    assert fit.converged
    assert_allclose(fit.w.sum(axis=1), 0.0, atol=1e-12)  # centred
    res = sm.MNLogit(y, X).fit(method="newton", disp=0, tol=1e-12, maxiter=100)
    # statsmodels: class 0 is the reference, params[:, k-1] = w_k - w_0
    assert_allclose(fit.w[:, 1:] - fit.w[:, [0]], res.params, atol=1e-8)


def test_two_classes_reduce_to_binary_irls(rng):
    X, y = make_softmax_data(rng, n=200, d=3, K=2)
    for lam in [0.0, 0.4, 3.0]:
        fit = softmax_irls(X, y, lam)
        binary = irls(X, y, lam / 2)  # w_1 - w_0 carries the prior precision lam / 2
        assert_allclose(fit.w[:, 1] - fit.w[:, 0], binary.w, atol=1e-9)
        assert_allclose(fit.w[:, 0], -fit.w[:, 1], atol=1e-9)


def test_history_never_decreases_and_converges_from_far_away(rng):
    X, y = make_softmax_data(rng, n=200, d=3, K=4)
    reference = softmax_irls(X, y, 1.0)
    for scale in [10.0, 100.0, 1e4]:
        w0 = scale * rng.standard_normal((3, 4))
        fit = softmax_irls(X, y, 1.0, w0=w0, max_iter=200)
        assert fit.converged
        assert np.all(np.diff(fit.history) >= 0)
        assert_allclose(fit.w, reference.w, atol=1e-7)


def test_maximum_likelihood_from_an_uncentred_start_is_centred(rng):
    X, y = make_softmax_data(rng, n=200, d=3, K=3)
    fit = softmax_irls(X, y, w0=np.ones((3, 3)) + rng.standard_normal((3, 3)))
    assert fit.converged
    assert_allclose(fit.w, softmax_irls(X, y).w, atol=1e-8)
    assert_allclose(fit.w.sum(axis=1), 0.0, atol=1e-12)


def test_callback_sees_every_iterate(rng):
    X, y = make_softmax_data(rng)
    seen = {}
    fit = softmax_irls(X, y, 1.0, callback=lambda w, t: seen.update({t: w}))
    assert sorted(seen) == list(range(1, fit.n_iter + 1))
    assert np.array_equal(seen[fit.n_iter], fit.w)
    assert seen[fit.n_iter].shape == (3, 3)


def test_separable_classes_without_prior_warn_and_stay_finite():
    x = np.array([-3.0, -2.0, -1.5, 0.0, 0.3, 0.5, 2.0, 2.5, 3.0])
    X = add_intercept(x[:, None])
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    with pytest.warns(ConvergenceWarning, match="separable"):
        fit = softmax_irls(X, y)
    assert not fit.converged
    assert np.all(np.isfinite(fit.w))
    assert softmax_irls(X, y, 1.0).converged  # a prior makes the mode exist


def test_one_separable_class_is_quasi_separation():
    x = np.array([-1.0, -0.5, 0.1, 0.4, 1.0, 0.2])
    X = add_intercept(x[:, None])
    with pytest.warns(ConvergenceWarning, match="quasi-separable"):
        fit = softmax_irls(X, np.array([0, 1, 0, 2, 2, 1]))
    assert not fit.converged
    assert np.all(np.isfinite(fit.w))


def test_dependent_free_columns_raise(rng):
    X = rng.standard_normal((30, 2))
    X = np.column_stack([X, X[:, 0] + X[:, 1]])
    y = rng.integers(0, 3, 30)
    with pytest.raises(ValueError, match="linearly dependent"):
        softmax_irls(X, y)
    assert softmax_irls(X, y, 1.0).converged


def test_max_iter_reached_warns(rng):
    X, y = make_softmax_data(rng)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        fit = softmax_irls(X, y, 1.0, max_iter=1)
    assert not fit.converged and fit.n_iter == 1


@pytest.mark.parametrize(
    "labels, error, match",
    [
        ([0, 1, 1.5], ValueError, "class labels"),
        ([0, -1, 1], ValueError, "class labels"),
        ([0, 0, 0], ValueError, "K >= 2"),
        (["a", "b", "c"], TypeError, "class labels"),
        ([0, 1], ValueError, "different lengths"),
        ([[0, 1, 2]], ValueError, "1-D"),
        ([0, np.nan, 1], ValueError, "finite"),
    ],
)
def test_bad_labels_are_rejected(labels, error, match):
    X = np.ones((3, 1))
    with pytest.raises(error, match=match):
        softmax_irls(X, np.array(labels, dtype=object) if isinstance(labels[0], str) else np.array(labels))


def test_bad_weights_and_options_are_rejected(rng):
    X, y = make_softmax_data(rng, n=20)
    with pytest.raises(ValueError, match=r"shape \(d, K\)"):
        softmax_gradient(np.zeros(3), X, y)
    with pytest.raises(ValueError, match="labels 0..1"):
        softmax_log_likelihood(np.zeros((3, 2)), X, y)  # y has labels up to 2
    with pytest.raises(ValueError, match="w0 must have shape"):
        softmax_irls(X, y, w0=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="prior_precision"):
        softmax_irls(X, y, -1.0)
    with pytest.raises(TypeError, match="callback"):
        softmax_irls(X, y, callback=3)
