"""Expectation propagation for GP classification (chapter 11; GPML Alg. 3.5) against a plain
dense textbook implementation written here, with the tilted moments by scipy's adaptive
quadrature and the marginal likelihood from GPML eq. (3.65) as printed."""

import warnings
from dataclasses import replace

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.integrate import quad_vec
from scipy.special import log_expit
from scipy.stats import norm

from blrlib import (
    GPCEP,
    ConvergenceWarning,
    add_intercept,
    datasets,
    gp_ep,
    gpc_ep,
    gpc_laplace,
    rbf_kernel,
)
from blrlib._gp_lowrank import pivoted_cholesky
from blrlib.gp_ep import (
    _HERMITE_RULES,
    _HERMITE_TIERS,
    _hermite_nodes,
    _split_sums,
    _tilted_mode,
    _tilted_nodes,
    _tilted_sites,
    _tilted_sums,
)


def tilted_moments(m, v, s):
    """Z, mean and variance of sigma(s f) N(f | m, v) by adaptive quadrature (independent of blrlib).

    One adaptive integration (scipy's quad_vec) of (1, f - m, (f - m)^2) times the tilted
    density, over m -+ (12 sd + v): the tilt moves the mass by at most v.
    """
    sd = np.sqrt(v)
    lo, hi = m - 12 * sd - v, m + 12 * sd + v

    def integrand(f):
        weight = np.exp(log_expit(s * f) + norm.logpdf(f, m, sd))
        return weight * np.array([1.0, f - m, (f - m) ** 2])

    points = [0.0] if lo < 0 < hi else None
    (Z, first, second), _ = quad_vec(integrand, lo, hi, epsabs=0, epsrel=1e-13, points=points, limit=2000)
    shift = first / Z
    return Z, m + shift, second / Z - shift**2


def textbook_ep(K, y, tol=1e-11, max_sweeps=200):
    """GPML Alg. 3.5 with dense matrices throughout, and log Z_EP by eq. (3.65) term by term."""
    n = len(y)
    s = 2 * y - 1
    tau, nu = np.zeros(n), np.zeros(n)
    Sigma, mu = K.copy(), np.zeros(n)
    for _ in range(max_sweeps):
        tau_old = tau.copy()
        for i in range(n):
            tau_c = 1 / Sigma[i, i] - tau[i]
            nu_c = mu[i] / Sigma[i, i] - nu[i]
            _, mean, var = tilted_moments(nu_c / tau_c, 1 / tau_c, s[i])
            d_tau = 1 / var - tau_c - tau[i]
            tau[i] += d_tau
            nu[i] = mean / var - nu_c
            s_i = Sigma[:, i].copy()
            Sigma -= np.outer(s_i, s_i) * d_tau / (1 + d_tau * Sigma[i, i])  # = s s^T / (1/d_tau + Sigma_ii)
            mu = Sigma @ nu
        Sigma = K - K @ np.linalg.solve(K + np.diag(1 / tau), K)  # (K^-1 + S~)^-1 without K^-1
        mu = Sigma @ nu
        if np.max(np.abs(tau - tau_old)) < tol:
            break
    # eq. (3.65) with the cavities of the final posterior
    tau_c = 1 / np.diag(Sigma) - tau
    nu_c = mu / np.diag(Sigma) - nu
    mu_c, var_c = nu_c / tau_c, 1 / tau_c
    log_Z_hat = np.array([np.log(tilted_moments(mu_c[i], var_c[i], s[i])[0]) for i in range(n)])
    site_mean, site_var = nu / tau, 1 / tau
    C = K + np.diag(site_var)
    lml = (-0.5 * np.linalg.slogdet(C)[1] - 0.5 * site_mean @ np.linalg.solve(C, site_mean)
           + np.sum(log_Z_hat + 0.5 * np.log(var_c + site_var) + (mu_c - site_mean) ** 2 / (2 * (var_c + site_var))))
    return tau, nu, mu, np.diag(Sigma), lml


SETTINGS = [(1.0, 1.0), (10.0, 0.5), (100.0, 2.0)]


@pytest.fixture(scope="module")
def textbook():
    """The textbook EP on 12 two-moons points at three kernels, computed once for both schedules."""
    X, y = datasets.two_moons(12, noise=0.3, seed=5)
    out = {}
    for variance, lengthscale in SETTINGS:
        K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
        out[variance, lengthscale] = K, y, textbook_ep(K, y)
    return out


@pytest.mark.parametrize("variance, lengthscale", SETTINGS)
@pytest.mark.parametrize("schedule", ["parallel", "sequential"])
def test_ep_matches_textbook_ep(textbook, variance, lengthscale, schedule):
    K, y, (tau, nu, mu, var, lml) = textbook[variance, lengthscale]
    ep = gpc_ep(K, y, tol=1e-11, schedule=schedule, max_sweeps=500)
    assert ep.converged
    assert_allclose(ep.tau_tilde, tau, rtol=1e-8, atol=1e-10)
    assert_allclose(ep.nu_tilde, nu, rtol=1e-8, atol=1e-10 * np.max(np.abs(nu)))
    assert_allclose(ep.mean, mu, rtol=1e-8, atol=1e-9 * np.max(np.abs(mu)))
    assert_allclose(ep.var, var, rtol=1e-8, atol=0)
    assert_allclose(ep.log_marginal_likelihood, lml, rtol=0, atol=1e-9)
    assert_allclose(K @ ep.alpha, ep.mean, rtol=1e-10, atol=1e-10 * variance)


@pytest.mark.parametrize("s", [1.0, -1.0])
@pytest.mark.parametrize("m", [-40.0, -6.0, -0.5, 0.0, 2.0, 30.0])
@pytest.mark.parametrize("v", [1e-4, 0.3, 4.0, 100.0, 1e4])
def test_tilted_sites_match_adaptive_quadrature(m, v, s):
    """log Z_hat and the matching site over weak and strong sites, either side, any width."""
    site = _tilted_sites(np.array([1 / v]), np.array([m / v]), np.array([s]))
    Z, mean, var = tilted_moments(m, v, s)
    assert_allclose(site.log_Z[0], np.log(Z), rtol=1e-11, atol=1e-11)
    tau = 1 / var - 1 / v
    assert site.tau[0] > 0
    assert_allclose(site.tau[0], tau, rtol=1e-7 if v < 1e3 else 1e-5, atol=1e-12 / v)
    # the site times the cavity has the tilted mean
    assert_allclose((site.nu[0] + m / v) / (site.tau[0] + 1 / v), mean, rtol=1e-10, atol=1e-10 * np.sqrt(v))


@pytest.mark.parametrize("v", np.logspace(-4, 4, 9))
def test_tilted_moments_on_a_grid_of_cavities(v):
    """The zeroth, first and second tilted moments to 1e-7 relative (measured: 2e-10 at worst)
    against adaptive quadrature, cavity variances 1e-4 to 1e4, cavity means -50 to 50, both labels:
    neither the Gauss-Hermite tiers (variances up to 6.25) nor the fixed-size composite rule of
    _tilted_nodes (wider cavities) has a regime where it is short of nodes."""
    means = np.array([-50.0, -20.0, -6.0, -1.0, -0.1, 0.0, 0.3, 2.0, 7.0, 25.0, 50.0])
    m = np.concatenate([means, means])
    s = np.concatenate([np.ones(means.size), -np.ones(means.size)])
    site = _tilted_sites(np.full(m.size, 1 / v), m / v, s)  # all cavities in one vectorised call
    var_q = 1 / (site.tau + 1 / v)  # q(f) = cavity times site: its mean and variance
    mean_q = var_q * (site.nu + m / v)
    for i in range(m.size):
        Z, mean, var = tilted_moments(m[i], v, s[i])
        assert_allclose(site.log_Z[i], np.log(Z), rtol=1e-7, atol=1e-7)  # Z to 1e-7 relative
        assert abs(mean_q[i] - mean) <= 1e-7 * max(abs(mean), np.sqrt(var)), (m[i], s[i])
        assert_allclose(var_q[i], var, rtol=1e-7)


HERMITE_MEANS = np.array([-50.0, -20.0, -6.0, -1.0, -0.1, 0.0, 0.3, 2.0, 7.0, 25.0, 50.0])


@pytest.mark.parametrize("v", [1e-4, 1e-2, 0.3, 1.0, 1.2, 2.25, 3.0, 4.0, 5.0, 6.25])
def test_hermite_tiers_match_adaptive_quadrature(v):
    """The cavities of the Gauss-Hermite tiers (standard deviation up to 2.5, both ends of every
    tier): Z to 1e-11 relative, the tilted mean to 1e-11 of max(|mean|, sd) and the variance to
    1e-10 relative against scipy's adaptive quadrature (measured: 2.5e-13, 2.6e-12, 4.7e-11),
    cavity means -50 to 50, both labels, and the two far tails of the sigmoid."""
    m = np.concatenate([HERMITE_MEANS, HERMITE_MEANS])
    s = np.concatenate([np.ones(HERMITE_MEANS.size), -np.ones(HERMITE_MEANS.size)])
    site = _tilted_sites(np.full(m.size, 1 / v), m / v, s)
    var_q = 1 / (site.tau + 1 / v)
    mean_q = var_q * (site.nu + m / v)
    for i in range(m.size):
        Z, mean, var = tilted_moments(m[i], v, s[i])
        assert_allclose(site.log_Z[i], np.log(Z), rtol=0, atol=1e-11)
        assert abs(mean_q[i] - mean) <= 1e-11 * max(abs(mean), np.sqrt(var)), (m[i], s[i])
        assert_allclose(var_q[i], var, rtol=1e-10)


@pytest.mark.parametrize("tier", range(len(_HERMITE_TIERS)))
def test_tilted_rules_agree_across_each_tier_boundary(tier, monkeypatch):
    """At the largest standard deviation of each tier, its Gauss-Hermite rule and the rule of the
    next tier (more nodes, or the composite rule after the last) give log Z, g, h and the tilted
    variance equal to 1e-10 (3e-10 for the composite rule's variance; the switch between them
    is continuous to that accuracy), and
    _tilted_sites uses the first just below the boundary and the second just above it."""
    top, size = _HERMITE_TIERS[tier]
    m = np.concatenate([np.linspace(-50, 50, 41), np.linspace(-50, 50, 41)])
    s = np.concatenate([np.ones(41), -np.ones(41)])
    v = np.full(m.size, top**2)
    f0 = _tilted_mode(m, v, s)
    sd = np.sqrt(v)
    rule = _tilted_sums(f0, m, v, s, *_hermite_nodes(f0, sd, *_HERMITE_RULES[size]))
    if tier + 1 < len(_HERMITE_TIERS):
        following = _hermite_nodes(f0, sd, *_HERMITE_RULES[_HERMITE_TIERS[tier + 1][1]])
    else:
        following = _tilted_nodes(f0, sd)
    other = _tilted_sums(f0, m, v, s, *following)
    log_Z, g, h, var = rule
    assert_allclose(log_Z, other[0], rtol=0, atol=1e-10)
    assert_allclose(g, other[1], rtol=1e-10, atol=1e-14)
    assert_allclose(h, other[2], rtol=1e-9, atol=1e-10 * np.max(np.abs(h)))
    # (the composite rule is the less accurate one: its variances are off by up to 1.3e-10
    # relative against scipy's quadrature at sd = 2.5, the 120-node Hermite rule's by 6e-15)
    assert_allclose(var, other[3], rtol=1e-10 if tier + 1 < len(_HERMITE_TIERS) else 3e-10)
    # which rule _tilted_sites takes on either side of the boundary: the sizes it asks for
    sizes = []

    def recording(f0, sd, x, log_w):
        sizes.append(x.size)
        return _hermite_nodes(f0, sd, x, log_w)

    monkeypatch.setattr(gp_ep, "_hermite_nodes", recording)
    following_size = _HERMITE_TIERS[tier + 1][1] if tier + 1 < len(_HERMITE_TIERS) else None
    for factor, expected, used in [(1 - 1e-12, rule, size), (1 + 1e-12, other, following_size)]:
        sizes.clear()
        w = v * factor
        site = _tilted_sites(1 / w, m / w, s)
        assert sizes == ([used] if used else [])
        assert_allclose(site.log_Z, expected[0], rtol=1e-12, atol=1e-12)


def wide_tilted_moments(m, v, s):
    """log Z, mean and variance of sigma(s f) N(f | m, v) by adaptive quadrature with break points
    at 0, +-2^k (the sigmoid's scale, where a wide cavity's integration would not look) and every
    cavity standard deviation within 12 of m (independent of blrlib)."""
    sd = np.sqrt(v)
    lo, hi = min(m - 12 * sd - v, -70.0), max(m + 12 * sd + v, 70.0)

    def integrand(f):
        weight = np.exp(log_expit(s * f) + norm.logpdf(f, m, sd))
        return weight * np.array([1.0, f - m, (f - m) ** 2])

    scale = 2.0 ** np.arange(-1, 7)
    points = np.concatenate([[0.0], scale, -scale, m + sd * np.arange(-12, 13)])
    points = sorted({p for p in points if lo < p < hi})
    (Z, first, second), _ = quad_vec(integrand, lo, hi, epsabs=0, epsrel=1e-14, points=points, limit=5000)
    shift = first / Z
    return np.log(Z), m + shift, second / Z - shift**2


@pytest.mark.parametrize("v", [6.2501, 169.0, 1000.0, 5000.0, 17000.0])
def test_split_rule_for_wide_cavities_matches_adaptive_quadrature(v, monkeypatch):
    """Wide cavities with -3 sd <= s m <= v / 2 take the step-plus-remainder rule (_split_sums):
    log Z to 2e-12, the tilted mean to 2e-11 of max(|mean|, sd), the variance to 3e-10 relative
    (measured over this grid: 6e-13, 6.3e-12, 1.0e-10 at s m = -3 sd; the composite rule it
    replaces there: 3.2e-11, 3.8e-10, 7.7e-9, at v = 17000), both labels; and only they do."""
    sd = np.sqrt(v)
    mu = np.unique(np.concatenate([np.linspace(-3 * sd, 0, 7), np.linspace(0, v / 2, 9), [-1.0, 0.3, 1.0]]))
    mu = np.concatenate([mu, mu]) * (1 - 1e-9)  # the ends inside despite round-off in m / v
    s = np.concatenate([np.ones(mu.size // 2), -np.ones(mu.size // 2)])
    m = s * mu
    calls = []

    def recording(m, v, s):
        calls.append(m.size)
        return _split_sums(m, v, s)

    monkeypatch.setattr(gp_ep, "_split_sums", recording)
    site = _tilted_sites(np.full(m.size, 1 / v), m / v, s)
    assert calls == [m.size]
    var_q = 1 / (site.tau + 1 / v)
    mean_q = var_q * (site.nu + m / v)
    for i in range(m.size):
        log_Z, mean, var = wide_tilted_moments(m[i], v, s[i])
        assert_allclose(site.log_Z[i], log_Z, rtol=0, atol=2e-12)
        assert abs(mean_q[i] - mean) <= 2e-11 * max(abs(mean), np.sqrt(var)), (m[i], s[i])
        assert_allclose(var_q[i], var, rtol=3e-10)
    # outside the domain (narrow, far on the wrong side, far on the right side) the other rules
    calls.clear()
    outside = np.array([-3.01 * sd, 0.51 * v, 1.0])
    _tilted_sites(np.array([1 / v, 1 / v, 1 / 6.25]), outside / np.array([v, v, 6.25]), np.ones(3))
    assert calls == []


def test_tilted_mode_where_plain_newton_cycles():
    """The safeguarded Newton iteration of _tilted_mode finds the mode of
    sigma(s f) N(f | m, v) (a root of psi'(f) = s sigma(-s f) - (f - m) / v, by brentq)
    on cavities where plain Newton cycles for ever between two points across the
    sigmoid's inflection (the first two: measured, from an EP search), and on random
    cavities with variances 1e-5 to 1e6 and means up to +-1000."""
    from scipy.optimize import brentq
    from scipy.special import expit

    rng = np.random.default_rng(7)
    size = 300
    m = np.concatenate([[7.65727208, -7.1946986, -800.0, 0.0],
                        rng.normal(size=size) * 10 ** rng.uniform(-2, 3, size)])
    v = np.concatenate([[24.25940223, 42.94151169, 1.0, 1e6], 10 ** rng.uniform(-5, 6, size)])
    s = np.concatenate([[-1.0, 1.0, 1.0, -1.0], rng.choice([-1.0, 1.0], size)])
    f = _tilted_mode(m, v, s)
    for i in range(m.size):
        lo, hi = sorted((m[i] - 1e-3 * s[i] * v[i], m[i] + 1.001 * s[i] * v[i]))  # signs
        root = brentq(lambda t: s[i] * expit(-s[i] * t) - (t - m[i]) / v[i], lo, hi,
                      xtol=1e-14, rtol=1e-15)
        assert abs(f[i] - root) <= 1e-9 * (np.sqrt(v[i]) + abs(root)), (m[i], v[i], s[i])


def test_tilted_normaliser_far_on_the_wrong_side():
    """Z_hat = E[sigma(f)] under N(-800, 1) is about exp(-799.5), far below the smallest double."""
    site = _tilted_sites(np.array([1.0]), np.array([-800.0]), np.array([1.0]))
    # sigma(f) = exp(f) (1 + exp(f))^-1 and exp(f) N(f | m, 1) = exp(m + 1/2) N(f | m + 1, 1)
    assert_allclose(site.log_Z[0], -800.0 + 0.5, rtol=1e-12)
    assert np.isfinite(site.tau[0]) and np.isfinite(site.nu[0])


def test_parallel_and_sequential_reach_the_same_fixed_point(moons):
    X, y = moons
    for variance, lengthscale in [(1.0, 0.3), (30.0, 1.0), (1e4, 1.0)]:
        K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
        par = gpc_ep(K, y, tol=1e-10, max_sweeps=300)
        seq = gpc_ep(K, y, tol=1e-10, schedule="sequential")
        assert par.converged and seq.converged
        assert_allclose(par.tau_tilde, seq.tau_tilde, rtol=1e-8, atol=1e-10)
        assert_allclose(par.nu_tilde, seq.nu_tilde, rtol=1e-8, atol=1e-9)
        assert_allclose(par.log_marginal_likelihood, seq.log_marginal_likelihood, rtol=0, atol=1e-9)


def test_damping_tames_the_oscillating_parallel_update(moons):
    """At variance 100 and length scale 3 undamped parallel updates oscillate for ever (each sweep
    changes the sites by as much as their size); the damped schedule converges to the sequential
    fixed point."""
    X, y = moons
    K = rbf_kernel(X, variance=100.0, lengthscale=3.0)
    tau, nu = np.zeros(len(y)), np.zeros(len(y))
    changes = []
    for _ in range(60):
        marginals, _ = gp_ep._dense_marginals(K, tau, nu)
        cavity_tau, cavity_nu = gp_ep._cavity(marginals, tau, nu)
        site = _tilted_sites(cavity_tau, cavity_nu, 2 * y - 1)
        changes.append(gp_ep._changes(tau, nu, site.tau, site.nu))
        tau, nu = site.tau, site.nu
    assert min(changes[-20:]) > 0.5
    par = gpc_ep(K, y, tol=1e-10, max_sweeps=300)
    seq = gpc_ep(K, y, tol=1e-10, schedule="sequential")
    assert par.converged
    assert_allclose(par.log_marginal_likelihood, seq.log_marginal_likelihood, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    "variance, lengthscale", [(1.0, 0.3), (30.0, 1.0), (100.0, 3.0), (1e4, 1.0)]
)
def test_anderson_and_damped_sweeps_reach_the_same_fixed_point(
    moons, monkeypatch, variance, lengthscale
):
    """The Anderson-accelerated sweeps stop at the fixed point of the damped ones (the
    same stopping test), in fewer sweeps where the extrapolation holds (9, 20, 17
    against 12, 26, 25 sweeps); (100, 3) is the kernel where undamped updates
    oscillate.  At variance 1e4 from flat sites the extrapolation overshoots at once
    and the damped sweeps take over (45 sweeps both)."""
    X, y = moons
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
    fast = gpc_ep(K, y, tol=1e-10, max_sweeps=300)
    monkeypatch.setattr(gp_ep, "_ACCELERATE", False)
    damped = gpc_ep(K, y, tol=1e-10, max_sweeps=300)
    assert fast.converged and damped.converged
    if variance < 1e3:
        assert fast.n_sweeps < damped.n_sweeps
    else:
        assert fast.n_sweeps <= damped.n_sweeps
    assert_allclose(fast.tau_tilde, damped.tau_tilde, rtol=1e-8, atol=1e-10)
    assert_allclose(fast.nu_tilde, damped.nu_tilde, rtol=1e-8, atol=1e-9)
    lml = fast.log_marginal_likelihood
    assert_allclose(lml, damped.log_marginal_likelihood, rtol=0, atol=1e-9)


def test_acceleration_never_costs_convergence_on_a_linear_kernel(monkeypatch):
    """Chapter 12's EP for logistic regression: the linear kernel K = X X^T / lambda of
    300 breast-cancer rows and 5 columns has rank 5, and some sites settle at zero
    precision.  The Anderson extrapolation kept leaving the domain there and did not
    converge in 100 sweeps (lml -19,710 against -75.88); its restarts are now limited
    (gp_ep._MAX_RESTARTS), after which the damped sweeps go on."""
    X, y, _ = datasets.breast_cancer()
    rows = np.random.default_rng(0).permutation(len(y))[:300]
    Z = X[rows][:, [1, 4, 7, 8]]
    Z = add_intercept((Z - Z.mean(axis=0)) / Z.std(axis=0))
    K = Z @ Z.T / 0.01
    fast = gpc_ep(K, y[rows])
    monkeypatch.setattr(gp_ep, "_ACCELERATE", False)
    damped = gpc_ep(K, y[rows])
    assert fast.converged and damped.converged
    assert_allclose(fast.log_marginal_likelihood, damped.log_marginal_likelihood, rtol=0, atol=1e-8)
    assert_allclose(fast.nu_tilde, damped.nu_tilde, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("variance, lengthscale", [(3.0, 0.6), (1e4, 2.0)])
def test_warm_started_ep_matches_cold(moons, variance, lengthscale):
    """EP started from the sites of a nearby kernel (as GPClassifier's search and final
    fit start it) reaches the cold start's fixed point, in fewer sweeps."""
    X, y = moons
    near_K = rbf_kernel(X, variance=1.2 * variance, lengthscale=0.95 * lengthscale)
    near = gpc_ep(near_K, y)
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
    cold = gpc_ep(K, y, tol=1e-10, max_sweeps=300)
    warm = gp_ep._ep_from(K, y, 300, 1e-10, near.tau_tilde, near.nu_tilde)
    assert warm.converged and warm.n_sweeps < cold.n_sweeps
    assert_allclose(warm.tau_tilde, cold.tau_tilde, rtol=1e-8, atol=1e-10)
    assert_allclose(warm.nu_tilde, cold.nu_tilde, rtol=1e-8, atol=1e-9)
    assert_allclose(warm.alpha, cold.alpha, rtol=1e-8, atol=1e-9)
    assert_allclose(warm.var, cold.var, rtol=1e-8, atol=1e-12)
    lml = warm.log_marginal_likelihood
    assert_allclose(lml, cold.log_marginal_likelihood, rtol=0, atol=1e-9)


def test_warm_start_that_fails_falls_back_to_a_cold_start(moons, monkeypatch):
    """A warm start that does not converge within max_sweeps is replaced by EP from flat
    sites; when that does not converge either, a ConvergenceWarning."""
    X, y = moons
    K = rbf_kernel(X, variance=3.0, lengthscale=0.6)
    calls = []
    exact = gp_ep._ep_parallel

    def failing_warm(K, y, max_sweeps, tol, tau0=None, nu0=None, work=None):
        calls.append(tau0 is not None)
        state = exact(K, y, max_sweeps, tol, tau0, nu0, work)
        return replace(state, converged=False) if tau0 is not None else state

    monkeypatch.setattr(gp_ep, "_ep_parallel", failing_warm)
    tau0 = np.full(len(y), 0.5)
    fit = gp_ep._ep_from(K, y, 100, 1e-8, tau0, np.zeros(len(y)))
    assert calls == [True, False] and fit.converged
    lml = fit.log_marginal_likelihood
    assert_allclose(lml, gpc_ep(K, y).log_marginal_likelihood, rtol=0, atol=1e-9)
    calls.clear()
    with pytest.warns(ConvergenceWarning, match="max_sweeps=2"):
        fit = gp_ep._ep_from(K, y, 2, 1e-8, tau0, np.zeros(len(y)))
    assert calls == [True, False] and not fit.converged and fit.n_sweeps == 2


@pytest.mark.parametrize("variance, lengthscale", [(1.0, 1.0), (5.0, 0.6)])
def test_low_rank_phase_reaches_the_exact_fixed_point(big_moons, monkeypatch, variance, lengthscale):
    """n = 600: after the low-rank phase (rank about 100 and 150 here) the sites and lml are those of
    exact parallel EP."""
    X, y = big_moons
    K = rbf_kernel(X, variance=variance, lengthscale=lengthscale)
    _, d = pivoted_cholesky(K, len(y) // gp_ep._LOWRANK_DIVISOR, rtol=gp_ep._LOWRANK_RTOL)
    assert np.max(d) <= gp_ep._LOWRANK_USE * variance  # the low-rank phase is used
    fast = gpc_ep(K, y, tol=1e-10, max_sweeps=300)
    monkeypatch.setattr(gp_ep, "_LOWRANK_MIN_N", 10**9)
    exact = gpc_ep(K, y, tol=1e-10, max_sweeps=300)
    assert fast.converged and exact.converged
    assert_allclose(fast.tau_tilde, exact.tau_tilde, rtol=1e-8, atol=1e-9)
    assert_allclose(fast.nu_tilde, exact.nu_tilde, rtol=1e-8, atol=1e-8)
    assert_allclose(fast.log_marginal_likelihood, exact.log_marginal_likelihood, rtol=0, atol=1e-8)


def test_ep_and_laplace_agree_as_the_posterior_becomes_gaussian(moons):
    """As the signal variance shrinks the likelihood is ever more nearly quadratic over the prior,
    and EP and Laplace agree to higher than first order in it (latent means and lml)."""
    X, y = moons
    gaps = []
    for variance in (0.1, 0.01):
        K = rbf_kernel(X, variance=variance)
        ep, la = gpc_ep(K, y), gpc_laplace(K, y)
        gaps.append((np.max(np.abs(ep.mean - la.f_hat)), abs(ep.log_marginal_likelihood - la.log_marginal_likelihood)))
    (mean_1, lml_1), (mean_2, lml_2) = gaps
    assert mean_2 < 0.01 * mean_1 and lml_2 < 0.1 * lml_1


@pytest.mark.parametrize("label", [0, 1])
def test_one_class_is_a_proper_posterior(label):
    X = np.array([[-1.0], [0.0], [0.5], [2.0]])
    K = rbf_kernel(X, variance=3.0, lengthscale=0.8)
    y = np.full(4, label)
    ep = gpc_ep(K, y)
    *_, lml = textbook_ep(K, y)
    assert ep.converged and np.all(np.sign(ep.mean) == (1 if label else -1))
    assert_allclose(ep.log_marginal_likelihood, lml, rtol=0, atol=1e-8)


def test_max_sweeps_warns_and_stops(moons):
    X, y = moons
    with pytest.warns(ConvergenceWarning, match=r"gpc_ep: .* did not converge in max_sweeps=2 sweeps"):
        ep = gpc_ep(rbf_kernel(X, variance=10.0), y, max_sweeps=2)
    assert not ep.converged and ep.n_sweeps == 2
    assert np.all(np.isfinite(ep.mean)) and np.isfinite(ep.log_marginal_likelihood)


def test_result_repr_and_frozen(moons):
    X, y = moons
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ep = gpc_ep(rbf_kernel(X), y)
    assert isinstance(ep, GPCEP)
    text = repr(ep)
    assert text.startswith("GPCEP(n=80, mean=[") and "converged=True" in text and len(text) < 300
    with pytest.raises(AttributeError):
        ep.tau_tilde = None


K3 = rbf_kernel(np.array([[0.0], [1.0], [2.0]]))
Y3 = np.array([0, 1, 1])


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: gpc_ep(np.ones((3, 2)), Y3), ValueError, r"K must be square"),
        (lambda: gpc_ep(K3, [0, 1]), ValueError, r"K and y have different lengths"),
        (lambda: gpc_ep(K3, [0, 2, 1]), ValueError, r"y must contain labels in \{0, 1\}"),
        (lambda: gpc_ep(K3, [-1, 1, 1]), ValueError, r"labels in \{-1, \+1\}"),
        (lambda: gpc_ep(np.diag([1.0, 0.0, 1.0]), Y3), ValueError,
         r"gpc_ep needs positive prior variances on the diagonal of K .* got K\[1, 1\] = 0"),
        (lambda: gpc_ep(K3, Y3, max_sweeps=0), ValueError, r"max_sweeps must be >= 1, got 0"),
        (lambda: gpc_ep(K3, Y3, max_sweeps=1.5), TypeError, r"max_sweeps must be an integer"),
        (lambda: gpc_ep(K3, Y3, tol=0.0), ValueError, r"tol must be > 0, got 0"),
        (lambda: gpc_ep(K3, Y3, schedule="random"), ValueError,
         r"schedule must be one of \('parallel', 'sequential'\), got 'random'"),
        (lambda: gpc_ep(K3, Y3, 50), TypeError, r"positional"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
