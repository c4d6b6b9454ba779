"""Predictive probabilities (chapter 6): quadrature, probit and Monte Carlo."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.integrate import quad
from scipy.special import expit

from blrlib import (
    add_intercept,
    datasets,
    expected_sigmoid,
    laplace_posterior,
    latent_moments,
    predict_mc,
    predict_plugin,
    predict_probit,
    predict_quadrature,
    probit_kappa,
)

MEANS = np.linspace(-6.0, 6.0, 49)
VARS = np.linspace(0.0, 100.0, 51)


def adaptive_reference(m, v):
    """E[sigmoid(a)], a ~ N(m, v), by scipy's adaptive quadrature (independent of blrlib)."""
    if v == 0:
        return expit(m)
    s = np.sqrt(v)
    f = lambda t: expit(m + s * t) * np.exp(-0.5 * t * t) / np.sqrt(2 * np.pi)  # noqa: E731
    # split at the sigmoid's centre, where the integrand changes fastest for large s
    c = -m / s
    return sum(quad(f, lo, hi, epsabs=1e-15, epsrel=1e-13, limit=400)[0]
               for lo, hi in [(-np.inf, c - 1), (c - 1, c + 1), (c + 1, np.inf)])


@pytest.fixture(scope="module")
def grid_reference():
    M, V = np.meshgrid(MEANS, VARS)
    ref = np.vectorize(adaptive_reference)(M, V)
    return M, V, ref


def test_quadrature_is_exact_to_1e7_for_variances_up_to_100(grid_reference):
    M, V, ref = grid_reference
    err = np.abs(expected_sigmoid(M, V) - ref)
    assert err.max() < 1e-7, err.max()
    assert err.max() < 1e-12  # in fact to rounding error


@pytest.mark.parametrize("var", [1e3, 1e4, 1e6])
def test_quadrature_stays_exact_at_huge_variance(var):
    for m in (-50.0, -3.0, 0.0, 0.7, 40.0):
        assert_allclose(expected_sigmoid(m, var), adaptive_reference(m, var), rtol=0, atol=1e-10)


def test_quadrature_known_values():
    assert expected_sigmoid(0.0, 25.0) == pytest.approx(0.5, abs=1e-15)
    assert_allclose(expected_sigmoid(3.0, 0.0), expit(3.0), rtol=1e-14)
    # symmetry: E[sigma(a)] at -m is 1 - E[sigma(a)] at m
    assert_allclose(expected_sigmoid(-MEANS, 7.0), 1 - expected_sigmoid(MEANS, 7.0), atol=1e-15)


def test_probit_approximation_error_on_the_grid(grid_reference):
    """The probit approximation's worst absolute error over mean in [-6, 6] and
    variance in [0, 100] is 0.0132 (at mean 6, variance about 10); it is exact at
    mean 0 and at variance 0 to within the sigmoid-probit mismatch."""
    M, V, ref = grid_reference
    err = np.abs(expected_sigmoid(M, V, method="probit") - ref)
    assert 0.012 < err.max() < 0.0135, err.max()
    assert_allclose(err[:, MEANS == 0], 0.0, atol=1e-15)
    assert_allclose(err[VARS == 0], 0.0, atol=1e-15)


def test_monte_carlo_within_its_standard_error(grid_reference):
    M, V, ref = grid_reference
    n = 20_000
    mc = expected_sigmoid(M, V, method="mc", n_samples=n, rng=np.random.default_rng(7))
    # the per-point sd of sigma(a) is at most 1/2, so 5 standard errors is 2.5 / sqrt(n)
    assert np.abs(mc - ref).max() < 5 * 0.5 / np.sqrt(n)
    again = expected_sigmoid(M, V, method="mc", n_samples=n, rng=np.random.default_rng(7))
    assert_allclose(mc, again, rtol=0, atol=0)


def test_probit_kappa():
    assert probit_kappa(0.0) == 1.0
    assert_allclose(probit_kappa(np.array([8 / np.pi, 24 / np.pi])), [2**-0.5, 0.5], rtol=1e-15)


@pytest.fixture(scope="module")
def posterior():
    X, y = datasets.two_gaussians(60, seed=3)
    return laplace_posterior(add_intercept(X), y, prior_precision=1.0)


def test_latent_moments_match_dense_formula(posterior, rng):
    Xn = add_intercept(rng.normal(scale=3, size=(20, 2)))
    mean, var = latent_moments(posterior, Xn)
    assert_allclose(mean, Xn @ posterior.mean, rtol=1e-13)
    assert_allclose(var, np.einsum("ij,jk,ik->i", Xn, posterior.cov, Xn), rtol=1e-10)


def test_predictors_agree_where_they_should(posterior, rng):
    Xn = add_intercept(rng.normal(scale=3, size=(50, 2)))
    q = predict_quadrature(posterior, Xn)
    assert np.abs(predict_probit(posterior, Xn) - q).max() < 0.02
    assert np.abs(predict_mc(posterior, Xn, n_samples=40_000, rng=1) - q).max() < 5 * 0.5 / 200
    plug = predict_plugin(posterior, Xn)
    # moderation pulls probabilities towards 1/2 but never across it
    assert np.all(np.abs(q - 0.5) <= np.abs(plug - 0.5) + 1e-15)
    assert np.all((q > 0.5) == (plug > 0.5))
