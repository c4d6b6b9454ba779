"""Tests of blrlib.softmax_posterior: the Laplace approximation of softmax regression
(chapter 13, eq-softmax-laplace, eq-softmax-evidence) and its predictive probabilities
(eq-softmax-predictive, eq-softmax-probit, eq-softmax-meanfield)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import logsumexp
from test_softmax_regression import make_softmax_data

from blrlib import (
    SoftmaxLaplace,
    laplace_posterior,
    predict_probit,
    predict_quadrature,
    softmax,
    softmax_hessian,
    softmax_irls,
    softmax_laplace,
    softmax_log_likelihood,
    softmax_predict,
)


def _reference_transform(d, K):
    """T with T vec(W) = vec of the differences w_k - w_0, k = 1..K-1 (class-major)."""
    T = np.zeros((d * (K - 1), d * K))
    for k in range(1, K):
        T[(k - 1) * d : k * d, k * d : (k + 1) * d] = np.eye(d)
        T[(k - 1) * d : k * d, :d] = -np.eye(d)
    return T


@pytest.mark.parametrize("lam", [0.5, 2.0, np.array([0.3, 1.0, 4.0])])
def test_cov_is_the_inverse_negative_hessian_at_the_mode(rng, lam):
    X, y = make_softmax_data(rng, n=120, d=3, K=4)
    post = softmax_laplace(X, y, lam)
    assert post.n_classes == 4 and post.mean.shape == (3, 4) and post.cov.shape == (12, 12)
    assert_allclose(post.mean, softmax_irls(X, y, lam).w, atol=1e-10)
    A = -softmax_hessian(post.mean, X, y, lam)
    assert_allclose(post.cov @ A, np.eye(12), atol=1e-9)
    assert np.all(np.linalg.eigvalsh(post.cov) > 0)


@pytest.mark.parametrize("lam", [0.2, 1.0, 8.0])
def test_two_classes_reduce_to_the_binary_laplace_approximation(rng, lam):
    X, y = make_softmax_data(rng, n=100, d=3, K=2)
    post = softmax_laplace(X, y, lam)
    binary = laplace_posterior(X, y, lam / 2)
    assert_allclose(post.log_evidence, binary.log_evidence, rtol=1e-10)
    T = _reference_transform(3, 2)
    assert_allclose(T @ post.mean.T.ravel(), binary.mean, atol=1e-9)
    assert_allclose(T @ post.cov @ T.T, binary.cov, rtol=1e-8, atol=1e-12)


def test_maximum_likelihood_standard_errors_match_statsmodels(rng):
    sm = pytest.importorskip("statsmodels.api")
    d, K = 3, 4
    X, y = make_softmax_data(rng, n=400, d=d, K=K)
    post = softmax_laplace(X, y, 0.0)
    assert post.log_evidence == -np.inf
    res = sm.MNLogit(y, X).fit(method="newton", disp=0, tol=1e-12, maxiter=100)
    T = _reference_transform(d, K)
    cov_ref = T @ post.cov @ T.T  # covariance of w_k - w_0, statsmodels' parameters
    # statsmodels orders its parameters feature within class, as we do: (k-1) * d + j
    assert_allclose(cov_ref, res.cov_params(), rtol=1e-7, atol=1e-12)
    se = np.sqrt(np.diag(cov_ref)).reshape(K - 1, d).T
    assert_allclose(se, res.bse, rtol=1e-7)


def test_a_free_intercept_gives_the_pseudo_inverse(rng):
    d, K = 3, 3
    X, y = make_softmax_data(rng, n=150, d=d, K=K)
    lam = np.array([0.0, 1.0, 1.0])
    post = softmax_laplace(X, y, lam)
    A = -softmax_hessian(post.mean, X, y, lam)
    assert_allclose(A @ post.cov @ A, A, atol=1e-9)
    assert_allclose(post.cov @ A @ post.cov, post.cov, atol=1e-9)
    null = np.zeros((d, K))
    null[0] = 1.0
    assert_allclose(post.cov @ null.T.ravel(), 0.0, atol=1e-10)
    assert post.log_evidence == -np.inf


def test_log_evidence_agrees_with_importance_sampling(rng):
    """With n = 300 points the posterior is close to Gaussian: the Laplace evidence is close
    to the exact one, estimated here by importance sampling from a widened Laplace Gaussian."""
    d, K, lam = 2, 3, 1.0
    X, y = make_softmax_data(rng, n=300, d=d, K=K)
    post = softmax_laplace(X, y, lam)
    S = 1.2**2 * post.cov
    L = np.linalg.cholesky(S)
    draws = post.mean.T.ravel() + rng.standard_normal((20_000, d * K)) @ L.T
    log_q = -0.5 * np.sum(np.linalg.solve(L, (draws - post.mean.T.ravel()).T) ** 2, axis=0)
    log_q -= 0.5 * (d * K * np.log(2 * np.pi)) + np.sum(np.log(np.diag(L)))
    log_prior = -0.5 * lam * np.sum(draws**2, axis=1) + 0.5 * d * K * np.log(lam / (2 * np.pi))
    A = np.swapaxes(draws.reshape(-1, K, d) @ X.T, 1, 2)  # (draws, n, K)
    log_lik = np.sum(np.take_along_axis(A, y[None, :, None], axis=2)[..., 0], axis=1)
    log_lik -= np.sum(logsumexp(A, axis=2), axis=1)
    v = draws[0]
    assert_allclose(log_lik[0], softmax_log_likelihood(v.reshape(K, d).T, X, y), rtol=1e-12)
    log_w = log_lik + log_prior - log_q
    exact = logsumexp(log_w) - np.log(log_w.size)
    assert abs(post.log_evidence - exact) < 0.05
    assert abs(post.log_evidence - exact) > 1e-4  # the Laplace estimate is not exact


def test_separable_data_without_prior_raise(rng):
    x = np.array([-3.0, -2.0, -1.5, 0.0, 0.3, 0.5, 2.0, 2.5, 3.0])
    X = np.column_stack([np.ones(9), x])
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    with pytest.raises(ValueError, match="does not exist"):
        softmax_laplace(X, y, 0.0)
    assert np.isfinite(softmax_laplace(X, y, 1.0).log_evidence)


def test_repr_is_short(rng):
    X, y = make_softmax_data(rng, n=50)
    text = repr(softmax_laplace(X, y, 1.0))
    assert text.startswith("SoftmaxLaplace(d=3, n_classes=3") and len(text) < 150


# --- softmax_predict ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(5)
    X, y = make_softmax_data(rng, n=40, d=3, K=4, scale=1.5)
    post = softmax_laplace(X, y, 0.5)
    X_new = np.column_stack([np.ones(30), 2.5 * rng.standard_normal((30, 2))])
    return post, X_new


@pytest.mark.parametrize("method", ["mc", "plugin", "probit", "meanfield"])
def test_predictions_are_probabilities(fitted, method):
    post, X_new = fitted
    P = softmax_predict(post, X_new, method=method)
    assert P.shape == (30, 4)
    assert np.all(P >= 0)
    assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)


def test_plugin_is_the_softmax_at_the_mode(fitted):
    post, X_new = fitted
    assert_allclose(softmax_predict(post, X_new, method="plugin"), softmax(X_new @ post.mean), rtol=1e-14)


def test_monte_carlo_matches_sampling_the_weights(fitted):
    """An independent implementation: draw whole weight matrices from N(mean, cov)."""
    post, X_new = fitted
    d, K = post.mean.shape
    rng = np.random.default_rng(11)
    draws = rng.multivariate_normal(post.mean.T.ravel(), post.cov, size=40_000)
    W = draws.reshape(-1, K, d)  # class-major
    expected = softmax(np.einsum("skd,md->smk", W, X_new)).mean(axis=0)
    got = softmax_predict(post, X_new, n_samples=40_000, rng=3)
    assert_allclose(got, expected, atol=0.01)
    assert_allclose(softmax_predict(post, X_new, rng=3), softmax_predict(post, X_new, rng=3))


def test_deterministic_approximations_measured_against_monte_carlo(fitted):
    post, X_new = fitted
    exact = softmax_predict(post, X_new, n_samples=200_000, rng=1)
    err = {m: np.abs(softmax_predict(post, X_new, method=m) - exact).max() for m in ("plugin", "probit", "meanfield")}
    # measured: plugin 0.21, probit 0.11, meanfield 0.048 (largest absolute errors)
    assert err["meanfield"] < 0.06 and err["probit"] < 0.12
    assert err["meanfield"] < err["probit"] < err["plugin"]
    assert err["plugin"] > 0.15  # the data are few: the uncertainty matters here


def test_two_classes_meanfield_and_probit_are_chapter_6_probit(rng):
    X, y = make_softmax_data(rng, n=60, d=3, K=2)
    post = softmax_laplace(X, y, 1.0)
    binary = laplace_posterior(X, y, 0.5)
    X_new = np.column_stack([np.ones(10), 2 * rng.standard_normal((10, 2))])
    expected = predict_probit(binary, X_new)
    assert_allclose(softmax_predict(post, X_new, method="meanfield")[:, 1], expected, rtol=1e-9)
    exact = predict_quadrature(binary, X_new)
    assert_allclose(softmax_predict(post, X_new, n_samples=100_000)[:, 1], exact, atol=0.005)


def test_bad_input_is_rejected(fitted):
    post, X_new = fitted
    with pytest.raises(TypeError, match="SoftmaxLaplace"):
        softmax_predict("post", X_new)
    with pytest.raises(ValueError, match="add_intercept"):
        softmax_predict(post, X_new[:, 1:])
    with pytest.raises(ValueError, match="method"):
        softmax_predict(post, X_new, method="laplace")
    with pytest.raises(ValueError, match="n_samples"):
        softmax_predict(post, X_new, n_samples=0)
    assert isinstance(post, SoftmaxLaplace)
