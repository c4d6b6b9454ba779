"""The Jaakkola-Jordan bound for Bayesian logistic regression (chapter 12).

References independent of blrlib's algebra: the tangent bound evaluated pointwise, the
bound's integral over w by quadrature (scipy.integrate in one dimension, a fine grid in
two), the exact evidence and posterior by quadrature, importance sampling and long
Polya-Gamma Gibbs runs, and central finite differences over several scales.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import integrate
from scipy.special import expit, log_expit, logsumexp

from blrlib import (
    ConvergenceWarning,
    VariationalPosterior,
    add_intercept,
    datasets,
    gibbs_logistic,
    laplace_posterior,
    log_evidence_is,
    vi_logistic,
)
from blrlib import variational as vi


def tangent_bound(z, xi):
    """log sigma(xi) + (z - xi)/2 - lambda(xi) (z^2 - xi^2), with lambda from tanh directly."""
    lam = np.tanh(xi / 2) / (4 * xi)
    return log_expit(xi) + (z - xi) / 2 - lam * (z**2 - xi**2)


def one_d_data(n=12, seed=3):
    """A single weight, no intercept: x_n of both signs, labels from a logistic model."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.5, size=n)
    y = (rng.random(n) < expit(0.8 * x)).astype(float)
    return x[:, None], y


def two_d_data(n=15, seed=5):
    X, y = datasets.two_gaussians(n, mean0=(-0.6,), mean1=(0.6,), cov=[[1.0]], seed=seed)
    return add_intercept(X), y


def bound_state(X, y, lam, xi):
    lam_vec = np.broadcast_to(np.asarray(lam, float), (X.shape[1],))
    b = X.T @ (y - 0.5)
    return vi._evaluate(X, b, lam_vec, float(np.sum(np.log(lam_vec[lam_vec > 0]))), np.asarray(xi, float))


# ---------------------------------------------------------------------------------------------
# The tangent bound and lambda(xi)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("xi", [1e-6, 1e-3, 0.3, 1.0, 4.0, 30.0, 700.0, 1e4])
def test_tangent_bound_lies_below_log_sigmoid_and_touches_at_plus_minus_xi(xi):
    z = np.concatenate([np.linspace(-3 * xi - 5, 3 * xi + 5, 2001), [xi, -xi]])
    lam = float(vi._jj_lambda(np.array([xi]))[0])
    bound = log_expit(xi) + (z - xi) / 2 - lam * (z**2 - xi**2)
    gap = log_expit(z) - bound
    assert np.all(gap >= -1e-12 * (1 + np.abs(z)))
    assert_allclose(gap[-2:], 0.0, atol=1e-12 * (1 + xi))
    if xi >= 1e-3:
        assert_allclose(lam, np.tanh(xi / 2) / (4 * xi), rtol=1e-14)


def test_lambda_and_its_derivative_against_finite_differences():
    xi = np.concatenate([np.geomspace(1e-4, 5e2, 40), -np.geomspace(1e-2, 50, 5), [0.0]])
    assert_allclose(vi._jj_lambda(xi), vi._jj_lambda(-xi), rtol=0, atol=0)  # even
    assert_allclose(vi._jj_lambda(np.array([0.0, 1e-5])), [0.125, 0.125 - 1e-10 / 96], rtol=1e-15)
    for x in xi[xi != 0]:
        h = max(1e-4 * abs(x), 1e-3)
        fd = (vi._jj_lambda(np.array([x + h])) - vi._jj_lambda(np.array([x - h])))[0] / (2 * h)
        an = vi._jj_lambda_prime(np.array([x]))[0]
        assert_allclose(an, fd, rtol=1e-6, atol=1e-12), x
    # the two pieces of _tangent_pieces against the direct formulas
    x = np.geomspace(1e-3, 800, 50)
    lam, terms = vi._tangent_pieces(x)
    assert_allclose(lam, np.tanh(x / 2) / (4 * x), rtol=1e-14)
    assert_allclose(terms, np.sum(log_expit(x) - x / 2 + np.tanh(x / 2) * x / 4), rtol=1e-13)


# ---------------------------------------------------------------------------------------------
# The bound L(xi): its value against direct expectations and quadrature, its gradient
# ---------------------------------------------------------------------------------------------
def direct_bound(X, y, lam, xi, m, S):
    """E_q[log h(w, xi)] + E_q[log p(w)] + H[q] for q = N(m, S), written out term by term."""
    s = 2 * y - 1
    a_mean = X @ m
    a_sq = np.einsum("ij,jk,ik->i", X, S, X) + a_mean**2
    lam_xi = np.tanh(xi / 2) / (4 * xi)
    e_log_h = np.sum(log_expit(xi) + (s * a_mean - xi) / 2 - lam_xi * (a_sq - xi**2))
    d = X.shape[1]
    lam_vec = np.broadcast_to(lam, (d,))
    e_log_prior = np.sum(0.5 * np.log(lam_vec / (2 * np.pi)) - 0.5 * lam_vec * (m**2 + np.diag(S)))
    entropy = 0.5 * np.linalg.slogdet(2 * np.pi * np.e * S)[1]
    return e_log_h + e_log_prior + entropy


@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0, 100.0])
def test_bound_equals_the_expectations_written_out_and_q_maximises_them(scale, rng):
    """L(xi) = max over q of E_q[log h] + E_q[log p] + H[q], attained at eq-vi-jj-q."""
    X, y = two_d_data(30)
    X = X * np.array([1.0, scale])
    xi = rng.uniform(0.2, 3.0, size=len(y)) * scale
    st = bound_state(X, y, 0.7, xi)
    S = np.linalg.inv(st.chol @ st.chol.T)
    assert_allclose(st.bound, direct_bound(X, y, 0.7, xi, st.mean, S), rtol=1e-10)
    # any other Gaussian gives less
    for _ in range(5):
        dm = 0.05 * rng.standard_normal(2) * np.sqrt(np.diag(S))
        B = 0.05 * rng.standard_normal((2, 2))
        S2 = (np.eye(2) + B) @ S @ (np.eye(2) + B).T
        assert direct_bound(X, y, 0.7, xi, st.mean + dm, S2) < st.bound
    # the EM image of xi is sqrt(E_q[a^2])
    assert_allclose(st.xi_next**2, np.einsum("ij,jk,ik->i", X, S, X) + (X @ st.mean) ** 2, rtol=1e-10)


@pytest.mark.parametrize("scale", [0.3, 1.0, 5.0, 50.0])
def test_gradient_of_the_bound_in_xi_against_central_differences(scale, rng):
    r"""dL/dxi_n = lambda'(xi_n) (xi_n^2 - E_q[a_n^2]) (the envelope theorem), large margins included."""
    X, y = two_d_data(12)
    X = X * scale
    xi = rng.uniform(0.5, 2.0, size=len(y)) * scale
    st = bound_state(X, y, 1.0, xi)
    grad = vi._jj_lambda_prime(xi) * (xi**2 - st.xi_next**2)
    for n in range(len(y)):
        h = 1e-5 * xi[n]
        up, down = xi.copy(), xi.copy()
        up[n] += h
        down[n] -= h
        fd = (bound_state(X, y, 1.0, up).bound - bound_state(X, y, 1.0, down).bound) / (2 * h)
        assert_allclose(grad[n], fd, rtol=2e-5, atol=1e-7 * (1 + abs(st.bound)) / h)
    # at the returned fixed point the gradient vanishes
    q = vi_logistic(X, y, 1.0)
    st = bound_state(X, y, 1.0, q.xi)
    assert np.max(np.abs(vi._jj_lambda_prime(q.xi) * (q.xi**2 - st.xi_next**2))) < 1e-8


@pytest.mark.parametrize("scale", [0.5, 2.0, 8.0])
def test_bound_equals_the_integral_of_the_bounded_joint_in_one_dimension(scale):
    """L(xi) = log of int prod_n h(w, xi_n) N(w; 0, 1/lam) dw, by scipy.integrate.quad."""
    X, y = one_d_data(10)
    X = X * scale
    s = 2 * y - 1
    lam = 0.5
    for xi in (np.full(len(y), 0.7 * scale), np.abs(X[:, 0]) * 1.3 + 0.1):
        st = bound_state(X, y, lam, xi)
        sd = 1.0 / np.sqrt(st.chol[0, 0] ** 2)

        def log_joint(w):
            return np.sum(tangent_bound(s * X[:, 0] * w, xi)) - 0.5 * lam * w**2 + 0.5 * np.log(lam / (2 * np.pi))

        peak = log_joint(st.mean[0])
        val, err = integrate.quad(lambda w: np.exp(log_joint(w) - peak), st.mean[0] - 40 * sd,
                                  st.mean[0] + 40 * sd, epsabs=0, epsrel=1e-13, limit=200)
        assert_allclose(st.bound, peak + np.log(val), rtol=1e-11, atol=1e-10)


def grid_log_integrals(X, y, lam, xi, centre, sd, half_width=12.0, n=401):
    """(log int bound-joint, log int exact joint) over a fine 2-D grid (Simpson weights)."""
    s = 2 * y - 1
    axes = [np.linspace(c - half_width * t, c + half_width * t, n) for c, t in zip(centre, sd)]
    W = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 2)
    A = s[:, None] * (X @ W.T)
    log_prior = np.sum(0.5 * np.log(lam / (2 * np.pi)) - 0.5 * lam * W**2, axis=1)
    simpson = np.ones(n)
    simpson[1:-1:2], simpson[2:-1:2] = 4.0, 2.0
    log_w = np.log(np.outer(simpson, simpson).ravel() / 9.0) + np.log(
        (axes[0][1] - axes[0][0]) * (axes[1][1] - axes[1][0]))
    bound = logsumexp(tangent_bound(A, xi[:, None]).sum(axis=0) + log_prior + log_w)
    exact = logsumexp(log_expit(A).sum(axis=0) + log_prior + log_w)
    return bound, exact


@pytest.mark.parametrize("n, lam", [(8, 1.0), (15, 0.3), (40, 0.05)])
def test_elbo_against_two_dimensional_quadrature_and_below_the_exact_evidence(n, lam):
    X, y = two_d_data(n)
    q = vi_logistic(X, y, lam)
    sd = np.sqrt(np.diag(laplace_posterior(X, y, lam).cov))
    bound, exact = grid_log_integrals(X, y, lam, q.xi, q.mean, sd)
    assert_allclose(q.elbo, bound, rtol=0, atol=1e-8)
    assert q.elbo < exact
    # and the grid is converged
    coarse = grid_log_integrals(X, y, lam, q.xi, q.mean, sd, n=301)
    assert abs(coarse[1] - exact) < 1e-9


def test_elbo_below_the_exact_evidence_in_one_dimension():
    for seed in range(4):
        X, y = one_d_data(8 + 6 * seed, seed=seed)
        s = 2 * y - 1
        for lam in (0.1, 1.0, 10.0):
            q = vi_logistic(X, y, lam)

            def joint(w):
                return np.exp(np.sum(log_expit(s * X[:, 0] * w)) - 0.5 * lam * w**2) * np.sqrt(lam / (2 * np.pi))

            exact = np.log(integrate.quad(joint, -60, 60, points=[0.0], limit=400, epsabs=0, epsrel=1e-12)[0])
            assert q.elbo < exact, (seed, lam)
            assert exact - q.elbo < 3.0  # a bound, and not a useless one


def test_elbo_below_the_importance_sampled_evidence_on_spector():
    X, y, _ = datasets.spector()
    X = add_intercept((X - X.mean(axis=0)) / X.std(axis=0))
    for lam in (1.0, 0.1):
        q = vi_logistic(X, y, lam)
        log_z, se = log_evidence_is(X, y, lam, n_samples=200_000, seed=1)
        assert se < 0.02
        assert q.elbo < log_z - 5 * se, (lam, q.elbo, log_z, se)
        # and below the Laplace estimate as well on this small data set
        assert q.elbo < laplace_posterior(X, y, lam).log_evidence


# ---------------------------------------------------------------------------------------------
# q(w) against the exact posterior
# ---------------------------------------------------------------------------------------------
def test_q_against_the_exact_one_dimensional_posterior():
    """Measured on these data (n = 40, lambda = 1, the exact moments by quadrature): the JJ
    mean is 0.136 exact sds below the exact mean and its sd 0.685 of the exact sd (the
    bound is tight only at z = +-xi, so q is too narrow)."""
    X, y = one_d_data(40, seed=8)
    s = 2 * y - 1
    q = vi_logistic(X, y, 1.0)

    def log_post(w):
        return np.sum(log_expit(s * X[:, 0] * w)) - 0.5 * w**2

    peak = log_post(q.mean[0])
    moments = [integrate.quad(lambda w, k=k: w**k * np.exp(log_post(w) - peak), -30, 30, limit=400,
                              epsabs=0, epsrel=1e-12)[0] for k in range(3)]
    mean = moments[1] / moments[0]
    sd = np.sqrt(moments[2] / moments[0] - mean**2)
    assert 0.12 * sd < mean - q.mean[0] < 0.15 * sd
    assert 0.67 < np.sqrt(q.cov[0, 0]) / sd < 0.70


def test_q_against_long_gibbs_runs_on_spector():
    """Measured: means 0.07 to 0.15 posterior sds from the exact ones, sds 0.838 to 0.851 of
    the exact ones (Laplace: 0.94 to 0.96); with ESS > 10,000 the Monte Carlo errors are
    about 0.01 sds for the means and 0.7 % for the sds."""
    X, y, _ = datasets.spector()
    X = add_intercept((X - X.mean(axis=0)) / X.std(axis=0))
    q = vi_logistic(X, y, 1.0)
    exact = gibbs_logistic(X, y, 1.0, n_samples=5000, n_warmup=500, n_chains=4, seed=2)
    assert np.max(exact.rhat) < 1.01 and np.min(exact.ess) > 5000
    sd = np.sqrt(np.diag(exact.cov))
    assert np.max(np.abs(q.mean - exact.mean) / sd) < 0.2
    ratio = np.sqrt(np.diag(q.cov)) / sd
    assert np.all((0.81 < ratio) & (ratio < 0.88)), ratio


# ---------------------------------------------------------------------------------------------
# The iteration
# ---------------------------------------------------------------------------------------------
def split_data(name):
    X, y, _ = getattr(datasets, name)()
    rows = np.random.default_rng(0).permutation(len(y))[: min(300, len(y) // 2)]
    X = X[rows]
    return add_intercept((X - X.mean(axis=0)) / X.std(axis=0)), y[rows]


@pytest.mark.parametrize("name", ["iris_versicolor_virginica", "spector", "breast_cancer"])
@pytest.mark.parametrize("lam", [1.0, 0.01])
def test_accelerated_iteration_reaches_the_plain_em_fixed_point(name, lam):
    X, y = split_data(name)
    q = vi_logistic(X, y, lam)
    # (the full 30 breast-cancer features with lambda = 0.01 take about 140 iterations;
    # plain EM 5,600)
    assert q.converged and q.n_iter < (200 if X.shape[1] > 20 else 60)
    assert np.all(np.diff(q.history) >= 0) and q.history.size == q.n_iter
    assert q.history[-1] == q.elbo
    cur, n_plain, converged, history = vi._fit(X, y, lam, 20_000, 1e-12, accelerate=False)
    assert converged and np.all(np.diff(history) >= 0)
    assert_allclose(q.elbo, cur.bound, rtol=1e-11)
    assert_allclose(q.mean, cur.mean, rtol=1e-6, atol=1e-7 * np.max(np.abs(cur.mean)))


def test_plain_em_is_slow_on_iris_where_the_acceleration_is_not():
    X_ir, y_ir, _ = datasets.iris_versicolor_virginica()
    rows = np.random.default_rng(0).permutation(100)[:50]  # chapter 10's iris training set
    X_tr = X_ir[rows]
    X = add_intercept((X_tr - X_tr.mean(axis=0)) / X_tr.std(axis=0))
    q = vi_logistic(X, y_ir[rows], 0.01)
    _, n_plain, converged, _ = vi._fit(X, y_ir[rows], 0.01, 5000, 1e-10, accelerate=False)
    assert converged and n_plain > 1000 and q.n_iter < 40


def test_result_fields_repr_and_covariance():
    X, y = two_d_data(20)
    q = vi_logistic(X, y, np.array([0.5, 2.0]))
    assert isinstance(q, VariationalPosterior)
    assert q.mean.shape == (2,) and q.cov.shape == (2, 2) and q.xi.shape == (20,)
    assert np.all(q.xi >= 0)
    lam_xi = np.tanh(q.xi / 2) / (4 * q.xi)
    precision = np.diag([0.5, 2.0]) + 2 * (X * lam_xi[:, None]).T @ X
    assert_allclose(q.cov, np.linalg.inv(precision), rtol=1e-10)
    assert_allclose(q.mean, q.cov @ X.T @ (y - 0.5), rtol=1e-10)
    assert "VariationalPosterior(mean=" in repr(q) and "elbo=" in repr(q)
    # a per-weight prior equals the scalar one when all entries agree
    assert_allclose(vi_logistic(X, y, [1.0, 1.0]).elbo, vi_logistic(X, y, 1.0).elbo, rtol=1e-13)


def test_flat_prior_entry_gives_minus_infinity_and_a_finite_history():
    X, y = two_d_data(40)
    q = vi_logistic(X, y, [0.0, 1.0])
    assert q.elbo == -np.inf and np.all(np.isfinite(q.history)) and np.all(np.diff(q.history) >= 0)
    assert q.converged and np.all(np.isfinite(q.mean))


@pytest.mark.parametrize("free", [[0], [1], [0, 1]])
def test_flat_prior_entry_is_the_limit_of_a_proper_prior(free):
    # a zero precision is a flat prior of unit density: the bound under N(0, 1/eps) on
    # those weights plus (1/2) log(2 pi / eps) each tends to the flat bound as eps -> 0,
    # and q (mean, cov) to the flat one
    X, y = two_d_data(40)
    lam = np.array([0.7, 1.3])
    flat = lam.copy()
    flat[free] = 0.0
    post, bound = vi._vi_logistic(X, y, flat, 500, 1e-12)
    assert post.converged and post.elbo == -np.inf and post.history[-1] == bound
    for eps in (1e-6, 1e-8, 1e-10):
        proper = lam.copy()
        proper[free] = eps
        q = vi_logistic(X, y, proper, tol=1e-12)
        limit = q.elbo + 0.5 * len(free) * np.log(2.0 * np.pi / eps)
        assert abs(limit - bound) < 100 * eps + 1e-9
        assert_allclose(q.mean, post.mean, atol=1e3 * eps + 1e-9)
        assert_allclose(q.cov, post.cov, atol=1e3 * eps + 1e-9)
    # q with the flat entry is Bishop's update with that prior precision 0
    lam_xi = vi._jj_lambda(post.xi)
    precision = np.diag(flat) + 2 * (X * lam_xi[:, None]).T @ X
    assert_allclose(post.cov, np.linalg.inv(precision), rtol=1e-9)
    assert_allclose(post.mean, post.cov @ X.T @ (y - 0.5), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("scale", [0.03, 1.0, 30.0])
def test_bound_derivative_in_lambda_is_finite_differences(scale):
    # the profile bound max_xi L(xi, lambda) over log(lambda), intercept flat: its
    # derivative (the envelope theorem, _BoundSearch) against central differences
    X, y = two_d_data(50)
    X[:, 1:] *= scale
    P = np.array([False, True])
    rho = np.linalg.norm(X, 2) ** 2 / 4
    for t in np.log(rho) + np.array([-6.0, -1.0, 0.0, 2.0]):
        h = vi._BoundSearch(X, y, P, 2000, 1e-13, "test").evaluate(t)
        step = 1e-4
        up = vi._vi_logistic(X, y, np.where(P, np.exp(t + step), 0.0), 2000, 1e-13)[1]
        down = vi._vi_logistic(X, y, np.where(P, np.exp(t - step), 0.0), 2000, 1e-13)[1]
        assert_allclose(h, (up - down) / (2 * step), rtol=1e-5, atol=1e-7)


def test_not_converging_warns_and_says_so():
    X, y = two_d_data(30)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        q = vi_logistic(X, y, 0.01, max_iter=2)
    assert not q.converged and q.n_iter == 2 and q.history.size == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vi_logistic(X, y, 0.01)


def test_large_margins_stay_finite():
    X, y = datasets.separable(40, margin=0.5, seed=1)
    X = add_intercept(X) * 100.0
    q = vi_logistic(X, y, 1.0)
    assert q.converged and np.isfinite(q.elbo) and np.all(np.isfinite(q.cov))
    assert np.all(np.diff(q.history) >= 0)


@pytest.mark.parametrize(
    "args, err, match",
    [
        ((np.ones((4, 2)), [0, 1, 2, 1], 1.0), ValueError, r"labels in \{0, 1\}"),
        ((np.ones((4, 2)), [0, 1, 1], 1.0), ValueError, "different lengths"),
        ((np.ones(4), [0, 1, 1, 0], 1.0), ValueError, "2-D"),
        ((np.ones((4, 2)), [0, 1, 1, 0], -1.0), ValueError, "prior_precision must be >= 0"),
        ((np.ones((4, 2)), [0, 1, 1, 0], [1.0, 1.0, 1.0]), ValueError, "length 3 but X has 2"),
        (([[np.nan, 1.0]], [1], 1.0), ValueError, "finite"),
        ((np.ones((4, 2)), [0, 1, 1, 0], "1"), TypeError, "real number"),
    ],
)
def test_bad_input_is_rejected(args, err, match):
    with pytest.raises(err, match=match):
        vi_logistic(*args)


def test_bad_options_are_rejected():
    X, y = two_d_data(10)
    with pytest.raises(ValueError, match="max_iter must be >= 1"):
        vi_logistic(X, y, 1.0, max_iter=0)
    with pytest.raises(TypeError, match="max_iter must be an integer"):
        vi_logistic(X, y, 1.0, max_iter=2.5)
    with pytest.raises(ValueError, match="tol must be > 0"):
        vi_logistic(X, y, 1.0, tol=0.0)
