"""The Laplace approximation (chapter 5): covariance and evidence."""

import numpy as np
import pytest
import statsmodels.api as sm
from numpy.testing import assert_allclose
from scipy.special import logsumexp

from blrlib import ConvergenceWarning, add_intercept, datasets, hessian, irls, laplace, laplace_posterior, log_likelihood


def test_laplace_mean_is_map_and_cov_is_inverse_negative_hessian(rng):
    X, y = datasets.two_gaussians(80, seed=5)
    Xi = add_intercept(X)
    post = laplace_posterior(Xi, y, prior_precision=0.5)
    assert_allclose(post.mean, irls(Xi, y, prior_precision=0.5).w, rtol=1e-12)
    H = hessian(post.mean, Xi, y, prior_precision=0.5)
    assert_allclose(post.precision, -H, rtol=1e-12)
    assert_allclose(post.cov, np.linalg.inv(-H), rtol=1e-10)
    assert_allclose(post.cov, post.cov.T, rtol=0, atol=0)


def grid_log_evidence(X, y, lam, half_width=8.0, n=301):
    """log p(y | X) by integrating likelihood x prior over a fine 2-D grid.

    The grid is centred on the MAP and spans +-half_width posterior standard deviations.
    """
    post = laplace_posterior(X, y, lam)
    sd = np.sqrt(np.diag(post.cov))
    axes = [np.linspace(m - half_width * s, m + half_width * s, n) for m, s in zip(post.mean, sd)]
    W1, W2 = np.meshgrid(*axes, indexing="ij")
    W = np.column_stack([W1.ravel(), W2.ravel()])
    A = X @ W.T  # (n_data, n_grid)
    from scipy.special import log_expit

    loglik = log_expit((2 * y - 1)[:, None] * A).sum(axis=0)
    lam = np.broadcast_to(lam, (2,))  # a scalar or one precision per weight
    logprior = np.sum(0.5 * np.log(lam / (2 * np.pi)) - 0.5 * lam * W**2, axis=1)
    cell = (axes[0][1] - axes[0][0]) * (axes[1][1] - axes[1][0])
    return logsumexp(loglik + logprior) + np.log(cell), post


@pytest.mark.parametrize("n, gap_bound", [(10, 0.04), (40, 0.04), (200, 0.012)])
def test_log_evidence_against_grid_integration(n, gap_bound):
    """Laplace vs a fine grid for a 2-D posterior (intercept and one feature, lambda = 1).

    Measured gaps, Laplace minus grid: -0.021 at n = 10 (log evidence -6.60),
    -0.020 at n = 40 (-20.84) and -0.0069 at n = 200 (-108.53).  The Laplace
    estimate is slightly low and the gap shrinks as the posterior becomes Gaussian.
    """
    X, y = datasets.two_gaussians(n, mean0=(-0.5,), mean1=(0.5,), cov=[[1.0]], seed=11)
    Xi = add_intercept(X)
    exact, post = grid_log_evidence(Xi, y, lam=1.0)
    gap = abs(post.log_evidence - exact)
    assert gap < gap_bound, gap
    # the grid itself is converged: halving its resolution changes it by far less than the gap
    coarse, _ = grid_log_evidence(Xi, y, lam=1.0, n=201)
    assert abs(coarse - exact) < 1e-6


def test_log_evidence_formula_independently():
    X, y, _ = datasets.spector()
    Xi = add_intercept((X - X.mean(0)) / X.std(0))
    lam = 2.0
    post = laplace_posterior(Xi, y, lam)
    d = Xi.shape[1]
    m = post.mean
    # log p(y|m) + log N(m | 0, I/lam) + d/2 log(2 pi) - 1/2 log det A
    expected = (log_likelihood(m, Xi, y) + 0.5 * d * np.log(lam / (2 * np.pi)) - 0.5 * lam * m @ m
                + 0.5 * d * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(post.precision)[1])
    assert_allclose(post.log_evidence, expected, rtol=1e-12)


def test_zero_prior_precision_is_maximum_likelihood():
    """prior_precision=0: the MLE with the classical covariance (statsmodels), and evidence -inf."""
    X, y, _ = datasets.spector()
    Xi = add_intercept(X)
    post = laplace_posterior(Xi, y, 0.0)
    ref = sm.Logit(y, Xi).fit(disp=0, method="newton", tol=1e-12)
    assert_allclose(post.mean, ref.params, rtol=1e-7)
    assert_allclose(post.cov, ref.cov_params(), rtol=1e-6)
    assert post.log_evidence == -np.inf and "log_evidence=-inf" in repr(post)
    # the limit: the evidence falls like (d/2) log lambda as lambda -> 0
    small = [laplace_posterior(Xi, y, lam).log_evidence for lam in (1e-6, 1e-8, 1e-10)]
    assert_allclose(np.diff(small), 0.5 * Xi.shape[1] * np.log(1e-2), rtol=1e-3)


def test_zero_prior_precision_on_separable_data_is_an_error():
    X, y = datasets.separable(30, seed=2)
    with pytest.raises(ValueError, match="needs the maximum-likelihood estimate, which does not exist here: "
                                         "the data look linearly separable"):
        laplace_posterior(add_intercept(X), y, 0.0)


def test_negative_prior_precision_is_an_error():
    X, y = datasets.two_gaussians(20, seed=1)
    with pytest.raises(ValueError, match="prior_precision must be >= 0, got -1"):
        laplace_posterior(add_intercept(X), y, -1.0)


def test_repr_is_readable():
    X, y = datasets.two_gaussians(20, seed=1)
    text = repr(laplace_posterior(add_intercept(X), y, 1.0))
    assert text.startswith("LaplacePosterior(mean=[") and "log_evidence=" in text


def test_per_weight_precisions_against_grid_integration():
    """N(0, diag(1/0.3, 1/2)) prior: the Laplace evidence is as close to the exact one as for a scalar."""
    X, y = datasets.two_gaussians(40, mean0=(-0.5,), mean1=(0.5,), cov=[[1.0]], seed=11)
    Xi = add_intercept(X)
    lam = np.array([0.3, 2.0])
    exact, post = grid_log_evidence(Xi, y, lam)
    assert abs(post.log_evidence - exact) < 0.04
    m = post.mean
    expected = (log_likelihood(m, Xi, y) - 0.5 * np.sum(lam * m**2) + 0.5 * np.sum(np.log(lam))
                - 0.5 * np.linalg.slogdet(post.precision)[1])
    assert_allclose(post.log_evidence, expected, rtol=1e-12)
    assert_allclose(post.precision, -hessian(m, Xi, y, lam), rtol=1e-12)
    assert "prior_precision=[0.3, 2. ]" in repr(post)


def test_free_intercept_posterior():
    """A zero precision on the intercept: the mode is scikit-learn's fit, the evidence is -inf."""
    from sklearn.linear_model import LogisticRegression

    X, y, _ = datasets.spector()
    Z = (X - X.mean(0)) / X.std(0)
    post = laplace_posterior(add_intercept(Z), y, [0.0, 2.0, 2.0, 2.0])
    ref = LogisticRegression(C=0.5, solver="newton-cholesky", tol=1e-14, max_iter=1000).fit(Z, y)
    assert_allclose(post.mean, np.r_[ref.intercept_, ref.coef_.ravel()], rtol=1e-8, atol=1e-10)
    assert post.log_evidence == -np.inf
    assert_allclose(post.cov @ post.precision, np.eye(4), atol=1e-10)


def test_free_intercept_with_one_class_has_no_mode():
    X = add_intercept(np.linspace(-1, 1, 12)[:, None])
    with pytest.raises(ValueError, match=r"needs the posterior mode, which does not exist here: the data look "
                                         r"quasi-separable in the columns with zero prior precision \(indices \[0\]\)"):
        laplace_posterior(X, np.ones(12), [0.0, 1.0])


def test_unconverged_mode_search_warns_without_max_iter_advice(monkeypatch):
    """laplace_posterior has no max_iter argument, so its warning must not suggest one."""
    X, y, _ = datasets.spector()
    monkeypatch.setattr(laplace, "_MODE_MAX_ITER", 1)
    with pytest.warns(ConvergenceWarning, match="stopped after 1 guarded Newton steps") as record:
        laplace_posterior(add_intercept(X), y, 1.0)
    assert "max_iter" not in str(record[0].message)

