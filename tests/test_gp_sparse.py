"""The sparse variational GP classifier and random Fourier features (the chapter on many points).

The expected log-likelihood against scipy's adaptive quadrature; the gradients of the bound
against central finite differences over several scales; with the inducing inputs equal to the
training inputs, the bound against a dense full-Gaussian variational bound optimised here
independently (and against ``gpc_vi`` when the library has it); predictions against dense
formulas and quadrature; random Fourier features against ``rbf_kernel``.
"""

import tracemalloc
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.integrate import quad
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from scipy.stats import norm

import blrlib
from blrlib import (
    ConvergenceWarning,
    GPCPrediction,
    GPCSparse,
    datasets,
    gpc_svgp,
    gpc_svgp_predict,
    random_fourier_features,
    rbf_kernel,
)
from blrlib.gp_sparse import _elbo_gradients, _expected_log_lik, _Problem


def gauss_average(g, m, v):
    """E[g(f)] for f ~ N(m, v) by scipy's adaptive quadrature, split at the kink near 0."""
    sd = np.sqrt(v)
    lo, hi = m - 12 * sd, m + 12 * sd
    points = [0.0] if lo < 0 < hi else None
    val, _ = quad(lambda f: g(f) * norm.pdf(f, m, sd), lo, hi, points=points, epsabs=1e-14, epsrel=1e-13,
                  limit=500)
    return val


# -- the expected log-likelihood ------------------------------------------------------------------
@pytest.mark.parametrize("s", [1.0, -1.0])
@pytest.mark.parametrize("mean", [-40.0, -3.0, 0.0, 0.7, 25.0])
def test_expected_log_lik_matches_adaptive_quadrature(mean, s):
    variances = np.array([1e-6, 0.01, 1.0, 25.0, 400.0, 1e4])
    means = np.full(variances.size, mean)
    ell, _, _ = _expected_log_lik(means, variances, np.full(variances.size, s))
    for v, got in zip(variances, ell):
        want = gauss_average(lambda f: log_expit(s * f), mean, v)
        assert abs(got - want) <= 1e-9 * (1.0 + abs(want)), (mean, v, got, want)


@pytest.mark.parametrize("mean, var", [(-30.0, 1e-4), (-2.0, 0.5), (0.0, 3.0), (1.5, 90.0), (8.0, 2500.0),
                                       (45.0, 4.0)])
def test_expected_log_lik_derivatives_match_finite_differences(mean, var):
    s = np.array([1.0, -1.0])

    def ell(m, v):
        return _expected_log_lik(np.full(2, m), np.full(2, v), s)[0]

    _, d_mean, d_var = _expected_log_lik(np.full(2, mean), np.full(2, var), s)
    h_m, h_v = 1e-4 * (1.0 + abs(mean)), 1e-4 * var
    fd_mean = (ell(mean + h_m, var) - ell(mean - h_m, var)) / (2 * h_m)
    fd_var = (ell(mean, var + h_v) - ell(mean, var - h_v)) / (2 * h_v)
    rounding = 1e-14 * (1.0 + abs(mean))  # of the expected log-likelihood itself
    assert_allclose(d_mean, fd_mean, rtol=1e-6, atol=1e-9 + rounding / h_m)
    assert_allclose(d_var, fd_var, rtol=1e-5, atol=1e-10 + rounding / h_v)
    # and the derivatives against their own integrals: E[s sigma(-s f)], E[-sigma sigma']/2
    for k, sk in enumerate(s):
        assert_allclose(d_mean[k], gauss_average(lambda f, sk=sk: sk * expit(-sk * f), mean, var), rtol=1e-8,
                        atol=1e-12)
        want = -0.5 * gauss_average(lambda f: expit(f) * expit(-f), mean, var)
        assert_allclose(d_var[k], want, rtol=1e-8, atol=1e-14)


# -- the bound and its gradients ------------------------------------------------------------------
def random_q(rng, m, scale):
    m_w = scale * rng.standard_normal(m)
    A = rng.standard_normal((m, m)) / np.sqrt(m)
    S_w = 0.2 * np.eye(m) + A @ A.T * scale
    return m_w, S_w


@pytest.mark.parametrize("variance, lengthscale, scale", [(1.0, 1.0, 1.0), (0.05, 0.3, 0.1), (50.0, 0.6, 5.0),
                                                          (400.0, 2.0, 20.0)])
def test_elbo_gradients_match_finite_differences(variance, lengthscale, scale):
    rng = np.random.default_rng(3)
    X, y = datasets.two_moons(60, noise=0.3, seed=1)
    Z = X[::6]
    problem = _Problem(X, y, Z, variance, lengthscale)
    m_w, S_w = random_q(rng, Z.shape[0], scale)
    elbo, grad_m, grad_S = _elbo_gradients(problem, m_w, S_w)

    def bound(m_, S_):
        return _elbo_gradients(problem, m_, S_)[0]

    h = 1e-5 * (1.0 + scale)
    for j in range(0, Z.shape[0], 3):
        e = np.zeros_like(m_w)
        e[j] = h
        fd = (bound(m_w + e, S_w) - bound(m_w - e, S_w)) / (2 * h)
        assert_allclose(grad_m[j], fd, rtol=1e-5, atol=1e-6 * (1 + abs(elbo)) / scale)
    for _ in range(4):  # symmetric directions: d/dt L(S + t E) = tr(grad_S E)
        E = rng.standard_normal(S_w.shape)
        E = 0.5 * (E + E.T)
        hS = 1e-4 * scale
        fd = (bound(m_w, S_w + hS * E) - bound(m_w, S_w - hS * E)) / (2 * hS)
        assert_allclose(np.sum(grad_S * E), fd, rtol=1e-5, atol=1e-6 * (1 + abs(elbo)) / scale)


def test_gradients_vanish_at_the_fitted_q():
    X, y = datasets.two_moons(150, noise=0.3, seed=2)
    fit = gpc_svgp(X, y, X[:25], variance=9.0, lengthscale=0.6, tol=1e-12)
    assert fit.converged
    problem = _Problem(X, y, X[:25], 9.0, 0.6)
    R = fit.whitened_cov_factor
    elbo, grad_m, grad_S = _elbo_gradients(problem, fit.whitened_mean, R @ R.T)
    assert_allclose(elbo, fit.elbo, rtol=1e-12)
    assert np.max(np.abs(grad_m)) < 1e-5
    assert np.max(np.abs(grad_S)) < 1e-5


# -- with Z = X, the full variational Gaussian ----------------------------------------------------
GH_T, GH_W = np.polynomial.hermite_e.hermegauss(200)
GH_W = GH_W / np.sqrt(2 * np.pi)


def dense_elbo(mu, Sigma, K, y):
    """The full-Gaussian variational bound, dense: Gauss-Hermite expectations minus the KL to N(0, K)."""
    s = 2 * y - 1
    v = np.diag(Sigma)
    ell = log_expit(s[:, None] * (mu[:, None] + np.sqrt(v)[:, None] * GH_T)) @ GH_W
    n = len(y)
    L = np.linalg.cholesky(K)
    Li_mu = np.linalg.solve(L, mu)
    Li_S = np.linalg.solve(L, np.linalg.solve(L, Sigma).T)
    log_det_K = 2 * np.sum(np.log(np.diag(L)))
    log_det_S = np.linalg.slogdet(Sigma)[1]
    kl = 0.5 * (np.trace(Li_S) + Li_mu @ Li_mu - n + log_det_K - log_det_S)
    return float(np.sum(ell) - kl)


def dense_optimum(K, y):
    """The maximum of the dense bound over all Gaussians, in the form mu = K a, Sigma = (K^-1 + diag(l))^-1
    that its stationary point has (Opper & Archambeau 2009), by L-BFGS on (a, log l)."""
    n = len(y)

    def moments(p):
        a, lam = p[:n], np.exp(p[n:])
        sl = np.sqrt(lam)
        B = np.eye(n) + sl[:, None] * K * sl[None, :]
        KS = K * sl[None, :]
        Sigma = K - KS @ np.linalg.solve(B, KS.T)
        return K @ a, 0.5 * (Sigma + Sigma.T)

    res = minimize(lambda p: -dense_elbo(*moments(p), K, y), np.zeros(2 * n), method="L-BFGS-B",
                   options={"maxiter": 2000, "maxfun": 40000, "ftol": 1e-14, "gtol": 1e-8})
    return -res.fun


def test_with_z_equal_x_the_bound_is_the_full_gaussian_bound():
    X, y = datasets.two_moons(24, noise=0.3, seed=4)
    variance, lengthscale = 3.0, 0.8
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
    fit = gpc_svgp(X, y, X, variance=variance, lengthscale=lengthscale, tol=1e-13, max_iter=500)
    assert fit.converged
    mu, Sigma = fit.q_mean, fit.q_cov
    # the dense bound at q(f) = q(u) is the sparse bound
    assert_allclose(dense_elbo(mu, Sigma, K, y), fit.elbo, rtol=1e-7)
    # q is the stationary point of the dense bound (Opper & Archambeau 2009):
    # mu = K E[d log p / df] and Sigma = (K^-1 + D)^-1, D = diag(E[-d2 log p / df2]), the latter
    # written K - K D^1/2 (I + D^1/2 K D^1/2)^-1 D^1/2 K so that K is never inverted
    s = 2 * y - 1
    F = mu[:, None] + np.sqrt(np.diag(Sigma))[:, None] * GH_T
    g_mu = (s[:, None] * expit(-s[:, None] * F)) @ GH_W
    d_sqrt = np.sqrt((expit(F) * expit(-F)) @ GH_W)
    KD = K * d_sqrt[None, :]
    Sigma_opt = K - KD @ np.linalg.solve(np.eye(24) + d_sqrt[:, None] * KD, KD.T)
    assert_allclose(mu, K @ g_mu, atol=1e-6 * variance)
    assert_allclose(Sigma, Sigma_opt, atol=1e-6 * variance)
    # and its maximum: random perturbations of the mean and the covariance lower it
    rng = np.random.default_rng(0)
    for scale in (1e-3, 1e-2, 1e-1):
        E = rng.standard_normal((24, 24)) * scale
        C = np.linalg.cholesky(Sigma) + np.tril(E)
        assert dense_elbo(mu + scale * rng.standard_normal(24), C @ C.T, K, y) < fit.elbo


def test_with_z_equal_x_no_dense_optimiser_does_better():
    X, y = datasets.two_moons(10, noise=0.3, seed=4)
    variance, lengthscale = 3.0, 0.8
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
    fit = gpc_svgp(X, y, X, variance=variance, lengthscale=lengthscale, tol=1e-13, max_iter=500)
    best = dense_optimum(K, y)
    # equal up to the jitter 1e-8 sigma_f^2 on the diagonal of K_ZZ (about 4e-9 relative here)
    assert fit.elbo >= best - 1e-8 * abs(best)
    assert_allclose(fit.elbo, best, rtol=1e-7)


def test_with_z_equal_x_the_bound_equals_gpc_vi():
    gpc_vi = getattr(blrlib, "gpc_vi", None)
    if gpc_vi is None:
        pytest.skip("blrlib has no gpc_vi on this branch (the full Gaussian is checked densely above)")
    for seed, variance, lengthscale in ((4, 3.0, 0.8), (5, 20.0, 0.5)):
        X, y = datasets.two_moons(40, noise=0.3, seed=seed)
        K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            full = gpc_vi(K, y, tol=1e-12, max_iter=2000)
            fit = gpc_svgp(X, y, X, variance=variance, lengthscale=lengthscale, tol=1e-13, max_iter=1000)
        assert_allclose(fit.elbo, full.elbo, rtol=1e-6)
        assert_allclose(fit.q_mean, full.mean, atol=1e-4 * (1 + np.max(np.abs(full.mean))))
        assert_allclose(np.diag(fit.q_cov), full.var, atol=1e-4 * (1 + np.max(full.var)))


def test_more_inducing_points_never_lower_the_bound():
    X, y = datasets.two_moons(300, noise=0.3, seed=6)
    bounds = [gpc_svgp(X, y, X[:m], variance=10.0, lengthscale=0.6, tol=1e-11).elbo for m in (5, 10, 20, 40, 80)]
    assert np.all(np.diff(bounds) >= -1e-7 * np.abs(bounds[1:])), bounds
    assert bounds[-1] > bounds[0] + 1.0


def test_history_never_decreases_and_large_variances_converge():
    X, y = datasets.two_moons(400, noise=0.3, seed=7)
    for variance, lengthscale in ((0.1, 3.0), (5.0, 0.5), (2000.0, 0.3)):
        fit = gpc_svgp(X, y, X[::10], variance=variance, lengthscale=lengthscale)
        assert fit.converged
        assert np.all(np.diff(fit.history) >= -1e-12 * np.abs(fit.history[1:]))
        assert fit.n_iter == len(fit.history) - 1
        assert np.all(np.linalg.eigvalsh(fit.q_cov) > -1e-10 * variance)


def test_max_iter_stops_with_a_warning():
    X, y = datasets.two_moons(200, noise=0.3, seed=0)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        fit = gpc_svgp(X, y, X[:20], variance=20.0, lengthscale=0.5, max_iter=2)
    assert not fit.converged and fit.n_iter == 2 and np.isfinite(fit.elbo)


def test_memory_is_linear_in_n():
    """n = 40,000, m = 10: an n x n matrix would take 12.8 GB; the fit stays below 40 nm doubles."""
    X, y = datasets.two_moons(40_000, noise=0.3, seed=0)
    Z = X[:10]
    tracemalloc.start()
    fit = gpc_svgp(X, y, Z, variance=4.0, lengthscale=0.8)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert fit.converged
    assert peak < 40 * 40_000 * 10 * 8 + 20e6, peak


# -- prediction -----------------------------------------------------------------------------------
def test_predictions_match_dense_formulas_and_quadrature():
    X, y = datasets.two_moons(120, noise=0.3, seed=8)
    Z = X[:30]
    variance, lengthscale = 6.0, 0.7
    fit = gpc_svgp(X, y, Z, variance=variance, lengthscale=lengthscale, tol=1e-12)
    X_new = np.array([[0.0, 0.5], [1.0, -0.3], [2.5, 2.5], [-1.0, 0.0], [40.0, -3.0]])
    pred = gpc_svgp_predict(fit, X_new)
    assert isinstance(pred, GPCPrediction) and pred.method == "quadrature"
    # the conditional of f* on u under the prior, averaged over q(u), with dense inverses
    Kzz = rbf_kernel(Z, variance=variance, lengthscale=lengthscale) + fit.jitter * np.eye(30)
    Ksz = rbf_kernel(X_new, Z, variance=variance, lengthscale=lengthscale)
    A = Ksz @ np.linalg.inv(Kzz)
    mean = A @ fit.q_mean
    var = variance - np.sum(A * Ksz, axis=1) + np.sum((A @ fit.q_cov) * A, axis=1)
    assert_allclose(pred.mean, mean, rtol=1e-7, atol=1e-8)
    assert_allclose(pred.var, var, rtol=1e-6, atol=1e-8)
    assert_allclose(pred.var[-1], variance, rtol=1e-12)  # far away: the prior
    for p, mu, v in zip(pred.prob, pred.mean, pred.var):
        assert_allclose(p, gauss_average(expit, mu, v), rtol=1e-10, atol=1e-12)


def test_sparse_classifier_is_accurate_on_two_moons():
    X, y = datasets.two_moons(600, noise=0.2, seed=9)
    X_test, y_test = datasets.two_moons(1000, noise=0.2, seed=10)
    fit = gpc_svgp(X, y, X[:40], variance=10.0, lengthscale=0.6)
    pred = gpc_svgp_predict(fit, X_test)
    assert np.mean((pred.prob > 0.5) == y_test) > 0.93


def test_repr_and_frozen():
    X, y = datasets.two_moons(50, noise=0.3, seed=0)
    fit = gpc_svgp(X, y, X[:5])
    assert isinstance(fit, GPCSparse)
    text = repr(fit)
    assert text.startswith("GPCSparse(m=5") and "elbo=" in text and "converged=True" in text
    with pytest.raises(AttributeError):
        fit.elbo = 0.0


# -- bad input ------------------------------------------------------------------------------------
def test_bad_input_is_rejected_clearly():
    X, y = datasets.two_moons(30, noise=0.3, seed=0)
    with pytest.raises(ValueError, match=r"labels in \{0, 1\}"):
        gpc_svgp(X, 2 * y - 1, X[:3])
    with pytest.raises(ValueError, match="same number of columns"):
        gpc_svgp(X, y, X[:3, :1])
    with pytest.raises(ValueError, match="Z must contain only finite"):
        gpc_svgp(X, y, np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="variance must be > 0"):
        gpc_svgp(X, y, X[:3], variance=-1.0)
    with pytest.raises(ValueError, match="lengthscale must be > 0"):
        gpc_svgp(X, y, X[:3], lengthscale=0.0)
    with pytest.raises(ValueError, match="different lengths"):
        gpc_svgp(X, y[:-1], X[:3])
    with pytest.raises(TypeError, match="max_iter must be an integer"):
        gpc_svgp(X, y, X[:3], max_iter=2.5)
    # duplicated inducing inputs are harmless: the jitter keeps K_ZZ positive definite
    assert gpc_svgp(X, y, np.vstack([X[:3], X[:3]])).converged
    fit = gpc_svgp(X, y, X[:3])
    with pytest.raises(TypeError, match="GPCSparse"):
        gpc_svgp_predict("fit", X)
    with pytest.raises(ValueError, match="X_new has 1 columns"):
        gpc_svgp_predict(fit, X[:, :1])


# -- random Fourier features ----------------------------------------------------------------------
def test_random_features_converge_to_the_rbf_kernel_like_one_over_sqrt_d():
    X, _ = datasets.two_moons(40, noise=0.3, seed=0)
    K = rbf_kernel(X, variance=2.5, lengthscale=0.7)
    sizes = (100, 400, 1600, 6400)
    errors = []
    for D in sizes:
        rms = [np.sqrt(np.mean((Phi @ Phi.T - K) ** 2))
               for Phi in (random_fourier_features(X, D, lengthscale=0.7, variance=2.5, seed=s) for s in range(8))]
        errors.append(np.mean(rms))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])  # 4 times the features: half the error
    assert np.all((ratios > 1.6) & (ratios < 2.5)), (errors, ratios)
    scaled = np.array(errors) * np.sqrt(sizes)
    assert scaled.max() / scaled.min() < 1.4, scaled


def test_random_features_definition_and_seed():
    X = np.array([[0.0, 1.0], [2.0, -1.0], [0.5, 0.5]])
    Phi = random_fourier_features(X, 7, lengthscale=0.5, variance=3.0, seed=11)
    rng = np.random.default_rng(11)
    omega = rng.standard_normal((2, 7)) / 0.5
    b = rng.uniform(0, 2 * np.pi, 7)
    assert_allclose(Phi, np.sqrt(2 * 3.0 / 7) * np.cos(X @ omega + b), rtol=1e-14)
    # the same seed maps new inputs with the same frequencies
    assert_allclose(random_fourier_features(X[1:], 7, lengthscale=0.5, variance=3.0, seed=11), Phi[1:])
    assert not np.allclose(random_fourier_features(X, 7, lengthscale=0.5, variance=3.0, seed=12), Phi)
    with pytest.raises(ValueError, match="n_features must be >= 1"):
        random_fourier_features(X, 0)
    with pytest.raises(ValueError, match="lengthscale must be > 0"):
        random_fourier_features(X, 5, lengthscale=-1.0)
    with pytest.raises(ValueError, match="X must be 2-D"):
        random_fourier_features(X[0], 5)
