"""Choosing lambda by the Laplace evidence (chapter 5): the exact derivative and its maximiser."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import minimize_scalar

from blrlib import ConvergenceWarning, add_intercept, datasets, laplace_posterior, maximize_evidence
from blrlib.evidence import _evidence_and_gradient
from _helpers import make_logistic_data


def spector(standardise):
    X, y, _ = datasets.spector()
    if standardise:
        X = (X - X.mean(0)) / X.std(0)
    return add_intercept(X), y


def breast_cancer():
    """Five standardised columns of the Wisconsin breast-cancer data (569 rows)."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X = data.data[:, [0, 1, 4, 6, 8]]
    return add_intercept((X - X.mean(0)) / X.std(0)), data.target


def synthetic():
    return make_logistic_data(np.random.default_rng(3), n=150, d=5, scale=1.5)


DATA = {"spector raw": lambda: spector(False), "spector standardised": lambda: spector(True),
        "breast cancer": breast_cancer, "synthetic": synthetic}


def log_evidence(X, y, lam):
    return laplace_posterior(X, y, lam).log_evidence


@pytest.mark.parametrize("name", DATA)
@pytest.mark.parametrize("lam", [1e-3, 1e-1, 1.0, 10.0, 1e3, 1e5])
def test_evidence_gradient_matches_central_differences(name, lam):
    """dL/dlambda with the moving mode and curvature, against differences of laplace_posterior
    in t = log(lambda) (Richardson-extrapolated central differences, error O(h^4))."""
    X, y = DATA[name]()
    _, grad, post = _evidence_and_gradient(X, y, lam, np.zeros(X.shape[1]))
    assert post.log_evidence == log_evidence(X, y, lam)

    def central(h):
        t = np.log(lam)
        return (log_evidence(X, y, np.exp(t + h)) - log_evidence(X, y, np.exp(t - h))) / (2 * h)

    fd = (4 * central(5e-4) - central(1e-3)) / 3  # d L / d log(lambda)
    assert_allclose(lam * grad, fd, rtol=1e-6, atol=1e-9)


def test_mackay_term_matters():
    """The last term of the derivative (the curvature moving with the mode) is not negligible:
    without it the derivative is wrong by more than 10% at lambda = 1 on standardised Spector."""
    X, y = spector(True)
    lam = 1.0
    _, grad, post = _evidence_and_gradient(X, y, lam, np.zeros(4))
    m = post.mean
    mackay = -0.5 * m @ m + 0.5 * 4 / lam - 0.5 * np.trace(post.cov)
    assert abs(mackay - grad) > 0.1 * abs(grad)


@pytest.mark.parametrize("name", DATA)
def test_maximiser_against_a_grid_and_a_scalar_optimiser(name):
    X, y = DATA[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = maximize_evidence(X, y)
    assert fit.converged
    t_star = np.log(fit.prior_precision)
    # a fine grid of laplace_posterior(...).log_evidence: the best grid point is a neighbour
    grid = t_star + np.linspace(-1.0, 1.0, 401)
    values = np.array([log_evidence(X, y, np.exp(t)) for t in grid])
    spacing = grid[1] - grid[0]
    assert abs(grid[np.argmax(values)] - t_star) <= spacing
    assert fit.posterior.log_evidence >= values.max() - 1e-12
    # an independent scalar optimiser (bounded Brent on -log evidence in log lambda)
    ref = minimize_scalar(lambda t: -log_evidence(X, y, np.exp(t)), bounds=(t_star - 3, t_star + 3),
                          method="bounded", options={"xatol": 1e-10})
    assert_allclose(fit.prior_precision, np.exp(ref.x), rtol=1e-6)
    # what the result holds
    assert fit.posterior.prior_precision == fit.prior_precision
    assert fit.history.shape == (fit.n_iter,) and fit.history[-1] == fit.posterior.log_evidence
    assert_allclose(fit.posterior.mean, laplace_posterior(X, y, fit.prior_precision).mean, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("start", [1e-4, 1e-2, 1.0, 1e2, 1e5])
def test_every_start_finds_the_same_maximum(start):
    X, y = spector(True)
    reference = maximize_evidence(X, y).prior_precision
    fit = maximize_evidence(X, y, start)
    assert fit.converged and fit.n_iter <= 40
    assert_allclose(fit.prior_precision, reference, rtol=1e-7)


def test_known_values():
    """Raw Spector features (penalised intercept): lambda about 3.3e3, nearly the null model;
    standardised: about 1.29."""
    assert_allclose(maximize_evidence(*spector(False)).prior_precision, 3329.49, rtol=1e-5)
    assert_allclose(maximize_evidence(*spector(True)).prior_precision, 1.28937, rtol=1e-5)


def mackay_fixed_point(X, y, lam=1.0, n_iter=500):
    """MacKay's lambda <- gamma / ||m||^2, gamma = d - lambda tr(Sigma), iterated to its fixed point."""
    for _ in range(n_iter):
        post = laplace_posterior(X, y, lam)
        lam = (X.shape[1] - lam * np.trace(post.cov)) / (post.mean @ post.mean)
    return lam


@pytest.mark.parametrize("name, low, high", [("spector raw", 0.02, 0.06), ("spector standardised", 0.2, 0.4),
                                             ("breast cancer", 0.05, 0.15)])
def test_mackay_fixed_point_is_only_an_approximation(name, low, high):
    """The fixed point misses the exact maximiser by 4% to 31% here, at a lower evidence."""
    X, y = DATA[name]()
    exact = maximize_evidence(X, y)
    approx = mackay_fixed_point(X, y)
    post = laplace_posterior(X, y, approx)
    assert abs(X.shape[1] - approx * np.trace(post.cov) - approx * post.mean @ post.mean) < 1e-8  # a fixed point
    assert low < approx / exact.prior_precision - 1 < high
    assert post.log_evidence < exact.posterior.log_evidence


def test_maximum_at_infinity_is_reported():
    """Labels independent of the feature by construction: the mode is w = 0 for every lambda, and
    the evidence rises towards that of the model with every probability 1/2, n log(1/2)."""
    X = add_intercept(np.array([[-1.0], [1.0], [-1.0], [1.0]]))
    y = np.array([0, 0, 1, 1])
    with pytest.warns(ConvergenceWarning, match="still increases as lambda -> infinity.*no evidence"):
        fit = maximize_evidence(X, y)
    assert not fit.converged and fit.prior_precision > 1e7
    assert np.all(np.diff(fit.history) > 0)
    assert_allclose(fit.posterior.log_evidence, 4 * np.log(0.5), rtol=1e-7)


def test_max_iter_reached_warns():
    X, y = spector(False)
    with pytest.warns(ConvergenceWarning, match="did not converge in max_iter=2 Laplace fits.*increase max_iter"):
        fit = maximize_evidence(X, y, max_iter=2)
    assert not fit.converged and fit.n_iter == 2


def test_repr():
    text = repr(maximize_evidence(*spector(True)))
    assert text.startswith("EvidenceFit(prior_precision=1.28937") and "converged=True" in text
