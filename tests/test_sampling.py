"""The exact posterior by sampling (chapter 10): Polya-Gamma draws, the Gibbs sampler,
the convergence diagnostics, the predictive and the evidence.

Every reference is independent of blrlib: closed forms (checked here against the
series representation of PG(1, c)), the `polyagamma` package's compiled sampler,
ArviZ's diagnostics on the same arrays, and exact posteriors on fine 2-D grids.
"""

import warnings

import arviz as az
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit, log_expit, logsumexp
from scipy.stats import ks_2samp

from blrlib import (
    PosteriorSamples,
    add_intercept,
    datasets,
    effective_sample_size,
    gibbs_logistic,
    log_evidence_is,
    pareto_khat,
    predict_samples,
    sample_polya_gamma,
    split_rhat,
)


# ---------------------------------------------------------------------------------------------
# References for PG(1, c)
# ---------------------------------------------------------------------------------------------
def pg_mean(c):
    c = abs(c)
    return 0.25 if c == 0 else np.tanh(c / 2) / (2 * c)


def pg_var(c):
    c = abs(c)
    if c < 1e-3:
        return 1 / 24 - c**2 / 240  # the series below to O(c^2)
    return (np.sinh(c) - c) / (4 * c**3 * np.cosh(c / 2) ** 2)


def pg_laplace_transform(c, t):
    """E[exp(-t omega)] for omega ~ PG(1, c)."""
    return np.cosh(c / 2) / np.cosh(np.sqrt(c**2 / 4 + t / 2))


@pytest.mark.parametrize("c", [0.0, 0.5, 2.0, 7.0, 30.0])
def test_closed_form_moments_equal_the_infinite_sum_of_gammas(c):
    """PG(1, c) = sum_k g_k / (2 pi^2 ((k - 1/2)^2 + c^2 / (4 pi^2))), g_k ~ Exp(1) iid."""
    K = 2_000_000
    k = np.arange(1, K + 1)
    rate = 2 * np.pi**2 * ((k - 0.5) ** 2 + c**2 / (4 * np.pi**2))
    tail = 1 / (2 * np.pi**2 * K)  # sum over k > K by the midpoint rule, error O(K^-3)
    assert_allclose(np.sum(1 / rate) + tail, pg_mean(c), rtol=1e-10)
    assert_allclose(np.sum(1 / rate**2), pg_var(c), rtol=1e-10)


C_GRID = [0.0, 1e-4, 0.3, 1.0, 2.0, 3.1, 3.125, 3.15, 4.0, 7.0, 15.0, 40.0, 200.0, -2.5]


@pytest.mark.parametrize("c", C_GRID)
def test_polya_gamma_mean_variance_and_laplace_transform(c):
    n = 200_000
    omega = sample_polya_gamma(np.full(n, c), rng=np.random.default_rng(abs(hash(c)) % 2**32))
    assert omega.shape == (n,) and np.all(omega > 0)
    m, v = pg_mean(c), pg_var(c)
    assert abs(omega.mean() - m) < 4.5 * np.sqrt(v / n)
    # the variance estimate's standard error from the sample's own fourth central moment
    mu4 = np.mean((omega - omega.mean()) ** 4)
    assert abs(omega.var() - v) < 4.5 * np.sqrt((mu4 - v**2) / n)
    for t in (0.3 * 4 / m, 3.0 / m):  # probe the bulk and the left tail
        e = np.exp(-t * omega)
        assert abs(e.mean() - pg_laplace_transform(c, t)) < 4.5 * e.std() / np.sqrt(n)


@pytest.mark.parametrize("c", [0.0, 1.0, 3.125, 5.0, 50.0])
def test_polya_gamma_agrees_with_the_polyagamma_package(c):
    from polyagamma import random_polyagamma

    n = 60_000
    ours = sample_polya_gamma(np.full(n, c), rng=np.random.default_rng(3))
    ref = random_polyagamma(1.0, c, size=n, random_state=np.random.default_rng(4))
    assert ks_2samp(ours, ref).pvalue > 1e-3


def test_polya_gamma_shapes_signs_and_seeds():
    c = np.array([[0.0, 1.0, -1.0], [2.5, -7.0, 100.0]])
    a = sample_polya_gamma(c, rng=5)
    assert a.shape == (2, 3)
    assert_array_equal(a, sample_polya_gamma(c, rng=np.random.default_rng(5)))
    assert not np.array_equal(a, sample_polya_gamma(c, rng=6))
    assert isinstance(sample_polya_gamma(1.5, rng=0), float)
    # the law depends on |c| only
    pos = sample_polya_gamma(np.full(40_000, 2.0), rng=1)
    neg = sample_polya_gamma(np.full(40_000, -2.0), rng=2)
    assert ks_2samp(pos, neg).pvalue > 1e-3


@pytest.mark.parametrize("bad", [np.nan, np.inf, [1.0, np.nan]])
def test_polya_gamma_rejects_non_finite_c(bad):
    with pytest.raises(ValueError, match="c must"):
        sample_polya_gamma(bad, rng=0)
    with pytest.raises(TypeError, match="c must be array-like"):
        sample_polya_gamma("1.0", rng=0)
    with pytest.raises(TypeError, match="rng"):
        sample_polya_gamma(1.0, rng="seed")


# ---------------------------------------------------------------------------------------------
# R-hat and ESS against ArviZ
# ---------------------------------------------------------------------------------------------
def _diagnostic_arrays():
    rng = np.random.default_rng(8)
    iid = rng.standard_normal((4, 1000))
    ar = np.zeros((3, 1201))  # odd length: the split drops the middle draw
    for t in range(1, ar.shape[1]):
        ar[:, t] = 0.95 * ar[:, t - 1] + rng.standard_normal(3)
    shifted = rng.standard_normal((4, 400)) + np.array([[0.0], [0.0], [0.0], [0.8]])
    spread = rng.standard_normal((4, 400)) * np.array([[1.0], [1.0], [1.0], [3.0]])  # folded R-hat
    ties = rng.integers(0, 4, size=(2, 300)).astype(float)  # many tied ranks
    antithetic = np.cumsum(rng.standard_normal((4, 500)) * (-1.0) ** np.arange(500), axis=1)
    heavy = rng.standard_t(1.5, size=(4, 800))
    trend = rng.standard_normal((2, 500)) + np.linspace(0, 2, 500)
    return {
        "iid": iid,
        "ar": ar,
        "shifted": shifted,
        "spread": spread,
        "ties": ties,
        "antithetic": antithetic,
        "heavy": heavy,
        "trend": trend,
    }


@pytest.mark.parametrize("name", list(_diagnostic_arrays()))
def test_rhat_and_ess_equal_arviz(name):
    x = _diagnostic_arrays()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref_rhat = float(az.rhat(x))
        ref_ess = float(az.ess(x, method="bulk"))
    assert_allclose(split_rhat(x), ref_rhat, rtol=1e-12)
    assert_allclose(effective_sample_size(x), ref_ess, rtol=1e-10)


def test_rhat_and_ess_over_several_coordinates_equal_arviz():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 300, 3)).cumsum(axis=1) * 0.1 + rng.standard_normal((4, 300, 3))
    ds = az.convert_to_dataset(x)
    assert_allclose(split_rhat(x), az.rhat(ds)["x"].values, rtol=1e-12)
    assert_allclose(effective_sample_size(x), az.ess(ds, method="bulk")["x"].values, rtol=1e-10)


@pytest.mark.parametrize("kind", ["bulk", "tail", "mean"])
@pytest.mark.parametrize("name", list(_diagnostic_arrays()))
def test_ess_of_each_kind_equals_arviz(name, kind):
    x = _diagnostic_arrays()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = float(az.ess(x, method=kind))
    assert_allclose(effective_sample_size(x, kind=kind), ref, rtol=1e-10)


def test_ess_kinds_over_several_coordinates_equal_arviz_and_differ_where_they_should():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 300, 3)).cumsum(axis=1) * 0.1 + rng.standard_normal((4, 300, 3))
    ds = az.convert_to_dataset(x)
    for kind in ("bulk", "tail", "mean"):
        ref = az.ess(ds, method=kind)["x"].values
        assert_allclose(effective_sample_size(x, kind=kind), ref, rtol=1e-10)
    assert_array_equal(effective_sample_size(x), effective_sample_size(x, kind="bulk"))
    # heavy tails: the mean's ESS (of the raw draws) and the bulk ESS (of their ranks)
    # differ, and for independent draws both are near the number of draws
    heavy = rng.standard_t(2.5, size=(4, 1000))
    assert 3000 < effective_sample_size(heavy, kind="mean") < 5500
    assert 3000 < effective_sample_size(heavy) < 5500
    # an AR(1) chain with coefficient phi has ESS = N (1 - phi) / (1 + phi) for its mean
    phi, ar = 0.8, np.zeros((8, 5000))
    for t in range(1, ar.shape[1]):
        ar[:, t] = phi * ar[:, t - 1] + rng.standard_normal(8)
    assert_allclose(effective_sample_size(ar, kind="mean"), ar.size * (1 - phi) / (1 + phi), rtol=0.1)


def test_ess_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match='kind must be "bulk", "tail" or "mean", got \'median\''):
        effective_sample_size(np.zeros((2, 10)), kind="median")


def test_ess_tail_and_mean_of_constant_draws():
    const = np.ones((4, 100))
    assert effective_sample_size(const, kind="tail") == 400
    assert effective_sample_size(const, kind="mean") == 400


# ---------------------------------------------------------------------------------------------
# Pareto k-hat against ArviZ and against weights with a known tail
# ---------------------------------------------------------------------------------------------
def _log_weight_sets():
    rng = np.random.default_rng(13)
    return {
        "lognormal": rng.standard_normal(20_000),
        "pareto 0.8": -0.8 * np.log(rng.random(20_000)),
        "pareto 0.3, 5000": -0.3 * np.log(rng.random(5000)),
        "wide lognormal, 100": 3 * rng.standard_normal(100),
        "student t, 1000": rng.standard_t(3, size=1000),
        "bounded": np.log(rng.random(4000)),
        "ties": np.repeat(rng.standard_normal(500), 4),
        "shifted": rng.standard_normal(3000) + 800.0,
    }


@pytest.mark.parametrize("name", list(_log_weight_sets()))
@pytest.mark.parametrize("r_eff", [1.0, 0.3])
def test_pareto_khat_equals_arviz(name, r_eff):
    lw = _log_weight_sets()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = float(az.psislw(lw.copy(), reff=r_eff)[1])
    assert_allclose(pareto_khat(lw, r_eff=r_eff), ref, rtol=1e-12)


@pytest.mark.parametrize("shape", [-0.3, 0.2, 0.5, 0.7, 1.0])
def test_pareto_khat_recovers_the_shape_of_a_generalized_pareto_tail(shape):
    from scipy.stats import genpareto

    # the fit uses the largest 3 sqrt(S) = 671 weights: sd(k-hat) about (1 + k) / sqrt(671),
    # at most 0.06, so the mean of 8 replicates is within 0.07 (3.5 of its sd)
    rng = np.random.default_rng(14)
    ks = [pareto_khat(np.log1p(genpareto.rvs(shape, size=50_000, random_state=rng)))
          for _ in range(8)]  # weights 1 + r > 0 with a generalized Pareto tail
    assert abs(np.mean(ks) - shape) < 0.07


def test_pareto_khat_edge_cases_and_bad_input():
    assert pareto_khat(np.arange(10.0)) == np.inf  # a tail of 2: too short to fit
    assert np.isfinite(pareto_khat(np.random.default_rng(15).standard_normal(30)))
    for bad, err, match in [
        (np.zeros((2, 10)), ValueError, "log_weights must have shape"),
        (np.zeros(1), ValueError, "at least 2 weights"),
        (np.array([0.0, np.nan, 1.0]), ValueError, "finite"),
        ("abc", TypeError, "log_weights must be array-like"),
    ]:
        with pytest.raises(err, match=match):
            pareto_khat(bad)
    with pytest.raises(ValueError, match="r_eff must be > 0"):
        pareto_khat(np.zeros(100), r_eff=0.0)


def test_diagnostics_flag_unmixed_chains():
    rng = np.random.default_rng(10)
    good = rng.standard_normal((4, 1000))
    stuck = good + np.array([[0.0], [0.0], [0.0], [2.0]])
    assert split_rhat(good) < 1.01
    assert split_rhat(stuck) > 1.1
    assert effective_sample_size(stuck) < 0.2 * effective_sample_size(good)


def test_diagnostics_of_constant_draws_and_a_single_chain():
    const = np.ones((4, 100))
    assert np.isnan(split_rhat(const))
    assert effective_sample_size(const) == 400
    one = np.random.default_rng(11).standard_normal((1, 400))
    assert 0.98 < split_rhat(one) < 1.05  # defined from the two halves (ArviZ gives NaN)


@pytest.mark.parametrize(
    "bad, err, match",
    [
        (np.zeros(10), ValueError, "draws must have shape"),
        (np.zeros((2, 3)), ValueError, "at least 4 draws"),
        (np.full((2, 10), np.nan), ValueError, "finite"),
        ("abc", TypeError, "draws must be array-like"),
    ],
)
def test_diagnostics_reject_bad_input(bad, err, match):
    for f in (split_rhat, effective_sample_size):
        with pytest.raises(err, match=match):
            f(bad)


# ---------------------------------------------------------------------------------------------
# The Gibbs sampler against exact 2-D grid posteriors
# ---------------------------------------------------------------------------------------------
def log_joint(W, X, y, lam):
    """log p(y | X, w) + log N(w | 0, diag(lam)^-1) for each row of W (flat entries: no term)."""
    loglik = log_expit((2 * y - 1)[:, None] * (X @ W.T)).sum(axis=0)
    pos = lam > 0
    logprior = -0.5 * (W[:, pos] ** 2) @ lam[pos] + 0.5 * np.sum(np.log(lam[pos] / (2 * np.pi)))
    return loglik + logprior


def grid_posterior(X, y, lam, n=401):
    """Exact posterior moments, predictive and log evidence of a 2-D posterior on a grid.

    A coarse pass finds where the log density is within 40 nats of its maximum; the fine
    grid covers that box (the density at its edges is below e^-40 of the peak).
    """
    lam = np.broadcast_to(np.asarray(lam, dtype=float), (2,))

    def box(lo, hi, m):
        axes = [np.linspace(lo[i], hi[i], m) for i in range(2)]
        W = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 2)
        return axes, W, log_joint(W, X, y, lam)

    axes, W, lp = box([-40.0, -40.0], [40.0, 40.0], 401)
    keep = W[lp > lp.max() - 40]
    step = axes[0][1] - axes[0][0]
    lo, hi = keep.min(axis=0) - step, keep.max(axis=0) + step
    assert np.all(lo > -40) and np.all(hi < 40), "posterior mass reaches the coarse box's edge"
    axes, W, lp = box(lo, hi, n)
    cell = (axes[0][1] - axes[0][0]) * (axes[1][1] - axes[1][0])
    p = np.exp(lp - lp.max())
    p /= p.sum()
    mean = p @ W
    cov = (W - mean).T @ ((W - mean) * p[:, None])
    return {
        "mean": mean,
        "sd": np.sqrt(np.diag(cov)),
        "W": W,
        "p": p,
        "log_evidence": logsumexp(lp) + np.log(cell),
    }


def _separable_tiny():
    x = np.array([-2.0, -1.2, -0.5, 0.4, 1.1, 2.3])
    return add_intercept(x[:, None]), np.array([0, 0, 0, 1, 1, 1.0])


def _standardised(x):
    return add_intercept(((x - x.mean()) / x.std())[:, None])


def _grid_cases():
    Xs, ys, _ = datasets.spector()
    Xi, yi, _ = datasets.iris_versicolor_virginica()
    x8 = np.array([-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0])
    y8 = np.array([0, 0, 1, 0, 1, 0, 1, 1.0])
    Xb, yb, _ = datasets.breast_cancer()
    return {
        "spector GPA, lambda 1": (_standardised(Xs[:, 0]), ys, 1.0),
        "iris petal width, free intercept": (_standardised(Xi[:, 3]), yi, np.array([0.0, 0.5])),
        "eight points, lambda 0.1 (skewed)": (add_intercept(x8[:, None]), y8, 0.1),
        "separable, lambda 1": (*_separable_tiny(), 1.0),
        "breast cancer 60 rows, lambda (0.2, 3)": (_standardised(Xb[:60, 7]), yb[:60], np.array([0.2, 3.0])),
        "spector PSI, flat prior (maximum likelihood)": (add_intercept(Xs[:, 2:3]), ys, 0.0),
    }


@pytest.mark.parametrize("name", list(_grid_cases()))
def test_gibbs_matches_the_exact_grid_posterior(name):
    X, y, lam = _grid_cases()[name]
    ref = grid_posterior(X, y, lam)
    post = gibbs_logistic(X, y, lam, n_samples=3000, n_warmup=300, n_chains=4, seed=1)
    assert post.w.shape == (4, 3000, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = az.convert_to_dataset(post.w)
        ess = az.ess(ds, method="bulk")["x"].values
        rhat = az.rhat(ds)["x"].values
    assert np.all(rhat < 1.01) and np.all(ess > 800)
    sd_hat = np.sqrt(np.diag(post.cov))
    # Monte Carlo standard errors: sd / sqrt(ESS) for the mean, about sd / sqrt(2 ESS) for the sd
    assert np.all(np.abs(post.mean - ref["mean"]) < 4.5 * ref["sd"] / np.sqrt(ess)), (post.mean, ref["mean"])
    assert np.all(np.abs(sd_hat / ref["sd"] - 1) < 4.5 / np.sqrt(2 * ess)), (sd_hat, ref["sd"])
    # the predictive at points inside and beyond the data
    X_new = add_intercept(np.array([[-3.0], [-0.7], [0.0], [0.6], [2.5]]))
    exact = expit(X_new @ ref["W"].T) @ ref["p"]
    spread = np.sqrt(expit(X_new @ ref["W"].T) ** 2 @ ref["p"] - exact**2)
    assert np.all(np.abs(predict_samples(post, X_new) - exact) < 4.5 * spread / np.sqrt(ess.min()) + 1e-12)


def test_gibbs_result_fields_and_reproducibility():
    X, y, lam = _grid_cases()["eight points, lambda 0.1 (skewed)"]
    a = gibbs_logistic(X, y, lam, n_samples=200, n_warmup=50, n_chains=3, seed=4)
    b = gibbs_logistic(X, y, lam, n_samples=200, n_warmup=50, n_chains=3, seed=4)
    c = gibbs_logistic(X, y, lam, n_samples=200, n_warmup=50, n_chains=3, seed=5)
    assert isinstance(a, PosteriorSamples)
    assert_array_equal(a.w, b.w)
    assert not np.array_equal(a.w, c.w)
    pooled = a.w.reshape(-1, 2)
    assert_allclose(a.mean, pooled.mean(axis=0), rtol=1e-12)
    assert_allclose(a.cov, np.cov(pooled.T), rtol=1e-12)
    assert_allclose(a.rhat, split_rhat(a.w), rtol=1e-12)
    assert_allclose(a.ess, effective_sample_size(a.w), rtol=1e-12)
    assert a.prior_precision == 0.1 and a.n_warmup == 50
    assert "PosteriorSamples(mean=" in repr(a) and "max_rhat" in repr(a)
    # a Generator works as the seed, and the scalar and the vector prior are the same prior
    d = gibbs_logistic(X, y, [0.1, 0.1], n_samples=200, n_warmup=50, n_chains=3, seed=np.random.default_rng(4))
    assert_array_equal(a.w, d.w)
    assert_array_equal(d.prior_precision, [0.1, 0.1])


def test_gibbs_warmup_zero_keeps_the_dispersed_starts():
    X, y, lam = _grid_cases()["spector GPA, lambda 1"]
    post = gibbs_logistic(X, y, lam, n_samples=10, n_warmup=0, n_chains=4, seed=2)
    rng = np.random.default_rng(2)
    starts = rng.uniform(-2.0, 2.0, size=(4, 2))
    assert post.w.shape == (4, 10, 2)
    # the first kept draw is one Gibbs step away from each chain's own start, not a copy of it
    assert not np.allclose(post.w[:, 0], starts)
    assert np.ptp(post.w[:, 0, 1]) > 0


def test_gibbs_on_more_weights_agrees_with_importance_sampling_moments():
    """d = 4 (too many for a grid): Gibbs means and sds against self-normalised importance
    sampling from a Student-t around the mode found by scipy, 4e5 draws."""
    from scipy.optimize import minimize
    from scipy.stats import multivariate_t

    X, y, _ = datasets.spector()
    Xs = add_intercept((X - X.mean(axis=0)) / X.std(axis=0))
    lam = np.full(4, 0.5)
    post = gibbs_logistic(Xs, y, lam, n_samples=3000, n_warmup=300, seed=7)
    mode = minimize(lambda w: -log_joint(w[None, :], Xs, y, lam)[0], np.zeros(4), method="BFGS").x
    p = expit(Xs @ mode)
    precision = (Xs.T * (p * (1 - p))) @ Xs + np.diag(lam)
    proposal = multivariate_t(mode, 2.0 * np.linalg.inv(precision), df=5)
    W = proposal.rvs(400_000, random_state=np.random.default_rng(12))
    log_w = log_joint(W, Xs, y, lam) - proposal.logpdf(W)
    r = np.exp(log_w - log_w.max())
    r /= r.sum()
    ref_mean = r @ W
    ref_sd = np.sqrt(r @ (W - ref_mean) ** 2)
    n_is = 1 / np.sum(r**2)
    assert n_is > 50_000  # effective importance draws
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ess = az.ess(az.convert_to_dataset(post.w), method="bulk")["x"].values
    assert np.all(np.abs(post.mean - ref_mean) < 4.5 * ref_sd * np.sqrt(1 / ess + 1 / n_is))
    sd_hat = np.sqrt(np.diag(post.cov))
    assert np.all(np.abs(sd_hat / ref_sd - 1) < 4.5 * np.sqrt(1 / (2 * ess) + 1 / n_is))


# ---------------------------------------------------------------------------------------------
# Improper posteriors and bad input
# ---------------------------------------------------------------------------------------------
def test_gibbs_refuses_improper_posteriors():
    X, y = _separable_tiny()
    with pytest.raises(ValueError, match="posterior is improper.*separable"):
        gibbs_logistic(X, y, 0.0, n_samples=10)
    with pytest.raises(ValueError, match="posterior is improper.*separable"):
        gibbs_logistic(X, y, [1.0, 0.0], n_samples=10)  # the slope alone separates
    # one class only: a free intercept runs off to infinity (quasi-separation by the intercept)
    with pytest.raises(ValueError, match=r"improper.*the weights \[0\]"):
        gibbs_logistic(X, np.ones(6), [0.0, 1.0], n_samples=10)
    # duplicated columns under a flat prior: the likelihood is constant along w1 - w2
    Xs, ys, _ = datasets.spector()
    Xd = add_intercept(np.column_stack([Xs[:, 0], Xs[:, 0]]))
    with pytest.raises(ValueError, match="improper.*linearly dependent"):
        gibbs_logistic(Xd, ys, 0.0, n_samples=10)
    # with a prior on the duplicated weights the same data are fine
    assert np.all(np.isfinite(gibbs_logistic(Xd, ys, [0.0, 1.0, 1.0], n_samples=10, n_warmup=5).w))


def test_gibbs_accepts_a_flat_prior_on_separable_weights_only_when_proper():
    X, y = _separable_tiny()
    # intercept free, slope penalised: proper (the intercept alone does not separate)
    post = gibbs_logistic(X, y, [0.0, 1.0], n_samples=50, n_warmup=10, n_chains=2)
    assert np.all(np.isfinite(post.w))


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"n_samples": 0}, ValueError, "n_samples must be >= 1"),
        ({"n_samples": 3}, ValueError, "n_samples must be >= 4"),
        ({"n_samples": 10.5}, TypeError, "n_samples must be an integer"),
        ({"n_samples": "100"}, TypeError, "n_samples must be an integer"),
        ({"n_chains": 0}, ValueError, "n_chains must be >= 1"),
        ({"n_chains": 2.0}, TypeError, "n_chains must be an integer"),
        ({"n_warmup": -1}, ValueError, "n_warmup must be >= 0"),
        ({"n_warmup": 1.5}, TypeError, "n_warmup must be an integer"),
        ({"seed": "zero"}, TypeError, "seed must be an int"),
        ({"prior_precision": -1.0}, ValueError, "prior_precision must be >= 0"),
        ({"prior_precision": [1.0, 1.0, 1.0]}, ValueError, "has length 3 but X has 2 columns"),
        ({"prior_precision": [1.0, np.nan]}, ValueError, "prior_precision must contain only finite"),
        ({"prior_precision": True}, TypeError, "prior_precision"),
    ],
)
def test_gibbs_rejects_bad_arguments(kwargs, err, match):
    X, y, _ = _grid_cases()["spector GPA, lambda 1"]
    args = {"prior_precision": 1.0, "n_samples": 10, **kwargs}
    with pytest.raises(err, match=match):
        gibbs_logistic(X, y, **args)


def test_sampling_functions_reject_bad_data():
    X, y, _ = _grid_cases()["spector GPA, lambda 1"]
    for f in (gibbs_logistic, log_evidence_is):
        with pytest.raises(ValueError, match="labels in"):
            f(X, 2 * y - 1, 1.0)
        with pytest.raises(ValueError, match=r"y must contain labels in \{0, 1\}"):
            f(X, y + 0.5, 1.0)
        Xn = X.copy()
        Xn[3, 1] = np.nan
        with pytest.raises(ValueError, match="X must contain only finite"):
            f(Xn, y, 1.0)
        with pytest.raises(ValueError, match="different lengths"):
            f(X, y[:-1], 1.0)
    post = gibbs_logistic(X, y, 1.0, n_samples=10, n_warmup=0, n_chains=1)
    with pytest.raises(ValueError, match="X_new has 3 columns"):
        predict_samples(post, np.ones((2, 3)))
    with pytest.raises(TypeError, match="PosteriorSamples"):
        predict_samples(post.w, X)
    with pytest.raises(ValueError, match="n_samples must be >= 2"):
        log_evidence_is(X, y, 1.0, n_samples=1)


# ---------------------------------------------------------------------------------------------
# The predictive and the evidence
# ---------------------------------------------------------------------------------------------
def test_predict_samples_is_the_average_sigmoid_over_all_draws():
    X, y, lam = _grid_cases()["eight points, lambda 0.1 (skewed)"]
    post = gibbs_logistic(X, y, lam, n_samples=500, n_warmup=50, n_chains=2, seed=3)
    X_new = add_intercept(np.linspace(-4, 4, 9)[:, None])
    by_hand = np.mean([expit(X_new @ w) for w in post.w.reshape(-1, 2)], axis=0)
    assert_allclose(predict_samples(post, X_new), by_hand, rtol=1e-12)
    # many rows: the chunked evaluation gives the same numbers
    many = np.tile(X_new, (1000, 1))
    assert_allclose(predict_samples(post, many), np.tile(by_hand, 1000), rtol=1e-12)


@pytest.mark.parametrize(
    "name",
    [
        "spector GPA, lambda 1",
        "eight points, lambda 0.1 (skewed)",
        "separable, lambda 1",
        "breast cancer 60 rows, lambda (0.2, 3)",
    ],
)
def test_importance_sampling_evidence_matches_the_grid_integral(name):
    X, y, lam = _grid_cases()[name]
    ref = grid_posterior(X, y, lam)["log_evidence"]
    # the grid is converged: a coarser grid gives the same value
    assert abs(grid_posterior(X, y, lam, n=301)["log_evidence"] - ref) < 1e-8
    log_z, se = log_evidence_is(X, y, lam, n_samples=100_000, seed=2)
    assert 0 < se < 0.005
    assert abs(log_z - ref) < 4.5 * se


def test_importance_sampling_evidence_properties():
    X, y, lam = _grid_cases()["eight points, lambda 0.1 (skewed)"]
    a = log_evidence_is(X, y, lam, n_samples=5000, seed=3)
    assert a == log_evidence_is(X, y, lam, n_samples=5000, seed=3)
    assert a != log_evidence_is(X, y, lam, n_samples=5000, seed=4)
    assert log_evidence_is(X, y, [0.1, 0.1], n_samples=5000, seed=3) == a
    # an improper prior has evidence zero
    assert log_evidence_is(X, y, [0.0, 1.0]) == (-np.inf, 0.0)
    # more draws, smaller standard error (about 1 / sqrt(T))
    big = log_evidence_is(X, y, lam, n_samples=80_000, seed=3)
    assert 2.5 < a[1] / big[1] < 6
    # return_khat adds the Pareto k-hat and changes nothing else
    with_k = log_evidence_is(X, y, lam, n_samples=5000, seed=3, return_khat=True)
    assert with_k[:2] == a and len(with_k) == 3 and with_k[2] < 0.5
    assert np.isnan(log_evidence_is(X, y, [0.0, 1.0], return_khat=True)[2])


def test_importance_sampling_khat_is_the_tail_shape_of_its_weights():
    """k-hat of the returned weights, rebuilt from the same draws, and it flags a bad proposal."""
    X, y = _separable_tiny()
    lam, T = 0.5, 20_000
    log_z, se, khat = log_evidence_is(X, y, lam, n_samples=T, seed=4, return_khat=True)
    # the same draws as the function (same seed, same order): the Student-t proposal
    from blrlib import laplace_posterior

    post = laplace_posterior(X, y, lam)
    rng = np.random.default_rng(4)
    L = np.linalg.cholesky(post.cov)
    z, g = rng.standard_normal((T, 2)), rng.chisquare(5, size=T)
    W = post.mean + (z @ L.T) / np.sqrt(g / 5)[:, None]
    from scipy.stats import multivariate_t

    log_q = multivariate_t(loc=post.mean, shape=post.cov, df=5).logpdf(W)
    log_w = log_joint(W, X, y, np.full(2, lam)) - log_q
    assert_allclose(logsumexp(log_w) - np.log(T), log_z, rtol=1e-10)
    assert_allclose(pareto_khat(log_w), khat, rtol=1e-8)
    # as the prior weakens on separable data the posterior runs off along the separating
    # direction, away from the Laplace proposal, and k-hat rises past 0.5
    Xs, ys = datasets.separable(20, seed=0)
    ks = [log_evidence_is(add_intercept(Xs), ys, lam_k, n_samples=T, seed=4, return_khat=True)[2]
          for lam_k in (1.0, 0.01, 0.001, 0.0003)]
    assert ks[0] < 0.3 and ks[0] < ks[1] < ks[2] < ks[3] and ks[3] > 0.7


# --------------------------------------------------------------------------------------
# The evidence with a proposal of the caller's choice
# --------------------------------------------------------------------------------------
def _exact_moments(X, y, lam):
    ref = grid_posterior(X, y, lam)
    centred = ref["W"] - ref["mean"]
    return ref, (centred.T * ref["p"]) @ centred


@pytest.mark.parametrize(
    "name",
    [
        "spector GPA, lambda 1",
        "eight points, lambda 0.1 (skewed)",
        "separable, lambda 1",
    ],
)
def test_custom_proposal_matches_the_grid_integral_in_two_dimensions(name):
    X, y, lam = _grid_cases()[name]
    ref, cov = _exact_moments(X, y, lam)
    # a proposal that is not Laplace's: the exact mean moved by half a standard
    # deviation, with twice the exact covariance as its scale
    mean = ref["mean"] + 0.5 * ref["sd"]
    log_z, se, khat = log_evidence_is(
        X, y, lam, n_samples=40_000, seed=5, return_khat=True, proposal=(mean, 2 * cov)
    )
    assert 0 < se < 0.01 and khat < 0.7
    assert abs(log_z - ref["log_evidence"]) < 4 * se


def test_custom_proposal_matches_quadrature_in_one_dimension():
    from scipy.integrate import quad

    x = np.array([-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0])
    y = np.array([0, 0, 1, 0, 1, 0, 1, 1.0])
    s = 2 * y - 1
    for lam in (0.05, 1.0):

        def joint(w):  # likelihood times the N(0, 1/lam) prior
            return np.exp(log_expit(s * x * w).sum() - 0.5 * lam * w * w) * np.sqrt(
                lam / (2 * np.pi)
            )

        exact = np.log(quad(joint, -np.inf, np.inf, epsabs=0, epsrel=1e-12)[0])
        for proposal, df in [
            (([0.3], [[4.0]]), 5),
            (([1.0], [[1.5]]), 3.5),
            (([0.8], [[2.0]]), np.inf),
        ]:
            log_z, se, khat = log_evidence_is(
                x[:, None],
                y,
                lam,
                n_samples=40_000,
                seed=6,
                return_khat=True,
                proposal=proposal,
                df=df,
            )
            assert 0 < se < 0.01 and khat < 0.7, (lam, proposal, df)
            assert abs(log_z - exact) < 4 * se, (lam, proposal, df, log_z, exact, se)


def test_laplace_as_an_explicit_proposal_reproduces_the_default():
    from blrlib import laplace_posterior

    for name in ("spector GPA, lambda 1", "breast cancer 60 rows, lambda (0.2, 3)"):
        X, y, lam = _grid_cases()[name]
        post = laplace_posterior(X, y, lam)
        kw = dict(n_samples=5000, seed=7, return_khat=True)
        default = log_evidence_is(X, y, lam, **kw)
        for pair in ((post.mean, post.cov), (list(post.mean), post.cov.tolist())):
            assert log_evidence_is(X, y, lam, proposal=pair, df=5, **kw) == default
        # ... and any other proposal gives other numbers
        moved = (post.mean + 0.1, post.cov)
        assert log_evidence_is(X, y, lam, proposal=moved, **kw)[:2] != default[:2]


@pytest.mark.parametrize("df", [2.5, np.inf])
def test_custom_proposal_weights_are_the_target_over_the_proposal_density(df):
    """Rebuilt from the same draws with scipy's densities: the proposal asked for."""
    from scipy.stats import multivariate_normal, multivariate_t

    X, y, lam = _grid_cases()["eight points, lambda 0.1 (skewed)"]
    mean, cov, T = np.array([0.4, 1.1]), np.array([[2.0, 0.6], [0.6, 1.0]]), 3000
    log_z, se, khat = log_evidence_is(
        X, y, lam, n_samples=T, seed=8, return_khat=True, proposal=(mean, cov), df=df
    )
    rng = np.random.default_rng(8)
    z = rng.standard_normal((T, 2)) @ np.linalg.cholesky(cov).T
    if np.isinf(df):
        W, q = mean + z, multivariate_normal(mean, cov)
    else:
        W, q = (
            mean + z / np.sqrt(rng.chisquare(df, size=T) / df)[:, None],
            multivariate_t(mean, cov, df=df),
        )
    log_w = log_joint(W, X, y, np.full(2, lam)) - q.logpdf(W)
    assert_allclose(logsumexp(log_w) - np.log(T), log_z, rtol=1e-10)
    r = np.exp(log_w - log_w.max())
    assert_allclose(r.std(ddof=1) / (np.sqrt(T) * r.mean()), se, rtol=1e-8)
    assert_allclose(pareto_khat(log_w), khat, rtol=1e-8)


def test_gaussian_proposal_has_the_heavier_weight_tail():
    """Gaussian tails (df = inf) give a larger k-hat than df = 5 at the same centre."""
    X, y, lam = _grid_cases()["eight points, lambda 0.1 (skewed)"]
    ref, cov = _exact_moments(X, y, lam)
    # at the exact moments of a skewed posterior the Gaussian misses its long tail
    kw = dict(n_samples=30_000, seed=3, return_khat=True, proposal=(ref["mean"], cov))
    gauss, student = (
        log_evidence_is(X, y, lam, df=np.inf, **kw),
        log_evidence_is(X, y, lam, **kw),
    )
    assert gauss[2] > 1.0 and student[2] < 0.5
    assert abs(student[0] - ref["log_evidence"]) < 4 * student[1]
    # on separable data with weak priors the posterior runs off along the separating
    # direction; a Gaussian at Laplace's fit does worse than the default Student-t there
    from blrlib import laplace_posterior

    Xs, ys = datasets.separable(20, seed=0)
    Xs = add_intercept(Xs)
    for lam_k in (1.0, 0.1, 0.01):
        post = laplace_posterior(Xs, ys, lam_k)
        kw = dict(n_samples=20_000, seed=4, return_khat=True)
        k_gauss = log_evidence_is(
            Xs, ys, lam_k, proposal=(post.mean, post.cov), df=np.inf, **kw
        )[2]
        k_student = log_evidence_is(Xs, ys, lam_k, **kw)[2]
        assert k_gauss > k_student + 0.3 and k_gauss > 0.5, lam_k


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (
            {"proposal": np.zeros(2)},
            TypeError,
            r"pair \(mean, cov\) or None, got ndarray",
        ),
        (
            {"proposal": (np.zeros(2),)},
            TypeError,
            r"pair \(mean, cov\) or None, got length 1",
        ),
        (
            {"proposal": (np.zeros(3), np.eye(2))},
            ValueError,
            "proposal mean must have length 2, got length 3",
        ),
        (
            {"proposal": (np.zeros((2, 1)), np.eye(2))},
            ValueError,
            "proposal mean must be 1-D",
        ),
        (
            {"proposal": ([0.0, np.nan], np.eye(2))},
            ValueError,
            "proposal mean must contain only finite",
        ),
        (
            {"proposal": (np.zeros(2), np.eye(3))},
            ValueError,
            r"proposal cov must have shape \(2, 2\), got shape \(3, 3\)",
        ),
        (
            {"proposal": (np.zeros(2), np.ones((2, 3)))},
            ValueError,
            "proposal cov must be square",
        ),
        (
            {"proposal": (np.zeros(2), np.ones(2))},
            ValueError,
            "proposal cov must be a 2-D square matrix",
        ),
        (
            {"proposal": (np.zeros(2), [[1.0, np.inf], [np.inf, 1.0]])},
            ValueError,
            "proposal cov must contain only finite",
        ),
        (
            {"proposal": (np.zeros(2), [[1.0, 0.5], [0.0, 1.0]])},
            ValueError,
            "proposal cov must be symmetric",
        ),
        (
            {"proposal": (np.zeros(2), [[1.0, 2.0], [2.0, 1.0]])},
            ValueError,
            r"positive definite, .*eigenvalue -1",
        ),
        (
            {"proposal": (np.zeros(2), np.zeros((2, 2)))},
            ValueError,
            "symmetric positive definite",
        ),
        ({"df": 0.0}, ValueError, "df must be > 0, got 0"),
        ({"df": -np.inf}, ValueError, "df must be finite, got -inf"),
        ({"df": np.nan}, ValueError, "df must be finite, got nan"),
        ({"df": True}, TypeError, "df must be a real number, got bool"),
        ({"df": "5"}, TypeError, "df must be a real number, got str"),
    ],
)
def test_log_evidence_is_rejects_bad_proposals(kwargs, err, match):
    X, y, _ = _grid_cases()["spector GPA, lambda 1"]
    with pytest.raises(err, match=match):
        log_evidence_is(X, y, 1.0, n_samples=10, **kwargs)
    # checked before the improper-prior shortcut as well
    with pytest.raises(err, match=match):
        log_evidence_is(X, y, [0.0, 1.0], n_samples=10, **kwargs)
