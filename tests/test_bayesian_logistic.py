"""BayesianLogisticRegression, the scikit-learn classifier of chapters 5, 6 and 10: scikit-learn's
estimator checks, statsmodels' Logit, the functional API it composes, the evidence it maximises."""

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from numpy.testing import assert_allclose
from scipy.special import ndtri
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from blrlib import (
    BayesianLogisticRegression,
    add_intercept,
    datasets,
    expected_sigmoid,
    gibbs_logistic,
    irls,
    laplace_posterior,
    log_evidence_is,
    maximize_evidence,
    predict_mc,
    predict_plugin,
    predict_probit,
    predict_quadrature,
    vi_logistic,
)
from blrlib.variational import _vi_logistic


@parametrize_with_checks([BayesianLogisticRegression(), BayesianLogisticRegression(inference="vi")])
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        # the checks' random data often carry no evidence for any weight (or need none):
        # maximize_evidence says so with a ConvergenceWarning, as it should
        warnings.simplefilter("ignore")
        check(estimator)


@pytest.fixture(scope="module")
def spector():
    X, y, _ = datasets.spector()
    return X, y


@pytest.fixture(scope="module")
def gaussians():
    return datasets.two_gaussians(120, seed=5)


def test_prior_precision_zero_is_statsmodels_logit(spector):
    X, y = spector
    clf = BayesianLogisticRegression(prior_precision=0).fit(X, y)
    res = sm.Logit(y, sm.add_constant(X)).fit(disp=0, method="newton", tol=1e-12)
    assert_allclose(np.r_[clf.intercept_, clf.coef_[0]], res.params, rtol=1e-8)
    assert_allclose(np.sqrt(np.diag(clf.coef_cov_)), res.bse, rtol=1e-8)
    assert_allclose(clf.coef_cov_, res.cov_params(), rtol=1e-7)
    assert clf.log_evidence_ == -np.inf  # an improper prior on every weight
    # the credible interval of a flat prior is statsmodels' Wald interval
    assert_allclose(clf.credible_interval(0.95), res.conf_int(0.05), rtol=1e-7)


@pytest.mark.parametrize("lam", [1e-3, 0.3, 7.0])
def test_fixed_lambda_is_the_functional_api(spector, lam):
    X, y = spector
    X1 = add_intercept(X)
    lam_vec = np.r_[0.0, np.full(X.shape[1], lam)]
    clf = BayesianLogisticRegression(prior_precision=lam).fit(X, y)
    fit = irls(X1, y, lam_vec)
    post = laplace_posterior(X1, y, lam_vec)
    assert_allclose(np.r_[clf.intercept_, clf.coef_[0]], fit.w, rtol=1e-9, atol=1e-12)
    assert_allclose(clf.coef_cov_, post.cov, rtol=1e-9)
    assert clf.n_iter_ == fit.n_iter
    X_new = np.random.default_rng(0).normal(X.mean(0), X.std(0), size=(25, X.shape[1]))
    predictive = {"quadrature": predict_quadrature, "probit": predict_probit, "plugin": predict_plugin,
                  "mc": lambda p, Z: predict_mc(p, Z, rng=np.random.default_rng(0))}
    for method, func in predictive.items():
        proba = clf.set_params(predict_method=method).predict_proba(X_new)
        assert_allclose(proba[:, 1], func(post, add_intercept(X_new)), rtol=0, atol=1e-12)
        assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    # without an intercept a scalar lambda is the book's prior N(0, lambda^-1 I) on every weight
    plain = BayesianLogisticRegression(lam, fit_intercept=False).fit(X1, y)
    book = laplace_posterior(X1, y, lam)
    assert_allclose(plain.coef_[0], book.mean, rtol=1e-9, atol=1e-12)
    assert_allclose(plain.coef_cov_, book.cov, rtol=1e-9)
    assert_allclose(plain.log_evidence_, book.log_evidence, rtol=0, atol=1e-10)
    assert plain.intercept_.tolist() == [0.0]
    # a vector of per-coefficient precisions
    per = np.array([0.5, 2.0, 1e-2])
    vec = BayesianLogisticRegression(per).fit(X, y)
    assert_allclose(vec.coef_cov_, laplace_posterior(X1, y, np.r_[0.0, per]).cov, rtol=1e-9)


@pytest.mark.parametrize("lam", [1e-2, 0.3, 7.0])
def test_flat_intercept_evidence_is_the_limit_of_a_proper_prior(spector, lam):
    """The contract's evidence with an intercept: a flat prior of unit density on it, the
    limit of N(0, 1/eps) divided by that prior's density at 0, sqrt(eps / 2 pi)."""
    X, y = spector
    X1 = add_intercept(X)
    clf = BayesianLogisticRegression(prior_precision=lam).fit(X, y)
    for eps in (1e-6, 1e-8):
        proper = laplace_posterior(X1, y, np.r_[eps, np.full(3, lam)]).log_evidence
        assert_allclose(clf.log_evidence_, proper - 0.5 * np.log(eps / (2 * np.pi)), rtol=0, atol=500 * eps + 1e-9)


def test_evidence_lambda_is_the_maximiser(spector, gaussians):
    for X, y in (spector, gaussians):
        clf = BayesianLogisticRegression().fit(X, y)
        lam = clf.prior_precision_
        h = 1e-3

        def evidence(t, X=X, y=y):
            return BayesianLogisticRegression(prior_precision=float(np.exp(t))).fit(X, y).log_evidence_

        t = np.log(lam)
        up, mid, down = evidence(t + h), evidence(t), evidence(t - h)
        assert_allclose(mid, clf.log_evidence_, rtol=0, atol=1e-10)
        slope = (up - down) / (2 * h)
        curvature = (up - 2 * mid + down) / h**2
        assert curvature < 0 and abs(slope) < 1e-6 * max(1.0, abs(curvature))
        assert mid > max(evidence(t + 0.1), evidence(t - 0.1))


def test_evidence_without_intercept_is_maximize_evidence(spector):
    X, y = spector
    X1 = add_intercept(X)
    clf = BayesianLogisticRegression(fit_intercept=False).fit(X1, y)
    fit = maximize_evidence(X1, y)
    assert_allclose(clf.prior_precision_, fit.prior_precision, rtol=1e-12)
    assert_allclose(clf.log_evidence_, fit.posterior.log_evidence, rtol=1e-12)
    assert clf.n_iter_ == fit.n_iter + 1


def test_gibbs_is_gibbs_logistic(spector):
    X, y = spector
    clf = BayesianLogisticRegression(0.3, inference="gibbs", n_samples=300, n_warmup=100, n_chains=2,
                                     random_state=4).fit(X, y)
    draws = gibbs_logistic(add_intercept(X), y, np.r_[0.0, np.full(3, 0.3)], n_samples=300, n_warmup=100,
                           n_chains=2, seed=np.random.default_rng(4))
    assert_allclose(np.r_[clf.intercept_, clf.coef_[0]], draws.mean, rtol=1e-12)
    assert_allclose(clf.coef_cov_, draws.cov, rtol=1e-12)
    pooled = draws.w.reshape(-1, 4)
    assert_allclose(clf.credible_interval(0.9), np.quantile(pooled, [0.05, 0.95], axis=0).T, rtol=1e-12)
    p = 1 / (1 + np.exp(-(add_intercept(X[:5]) @ pooled.T)))
    assert_allclose(clf.predict_proba(X[:5])[:, 1], p.mean(axis=1), rtol=1e-12)
    assert clf.n_iter_ == 400
    assert "Gibbs" in clf.summary()


@pytest.mark.parametrize("lam", [1e-2, 0.3, 7.0])
def test_vi_is_vi_logistic(spector, lam):
    X, y = spector
    X1 = add_intercept(X)
    lam_vec = np.r_[0.0, np.full(X.shape[1], lam)]
    clf = BayesianLogisticRegression(lam, inference="vi").fit(X, y)
    q = vi_logistic(X1, y, lam_vec)
    assert q.converged and clf.posterior_.converged
    assert_allclose(np.r_[clf.intercept_, clf.coef_[0]], q.mean, rtol=1e-12, atol=1e-14)
    assert_allclose(clf.coef_cov_, q.cov, rtol=1e-12)
    assert clf.n_iter_ == q.n_iter and clf.prior_precision_ == lam
    # log_evidence_ is the bound with a flat prior of unit density on the intercept: the
    # limit of the bound under N(0, 1/eps) on it plus (1/2) log(2 pi / eps)
    for eps in (1e-6, 1e-8):
        proper = vi_logistic(X1, y, np.r_[eps, np.full(3, lam)]).elbo
        assert_allclose(clf.log_evidence_, proper + 0.5 * np.log(2 * np.pi / eps), rtol=0,
                        atol=500 * eps + 1e-8)
    # the predictive is chapter 6's, over the Gaussian q
    X_new = np.random.default_rng(1).normal(X.mean(0), X.std(0), size=(20, X.shape[1]))
    mean, var = add_intercept(X_new) @ q.mean, np.einsum("ij,jk,ik->i", add_intercept(X_new), q.cov,
                                                         add_intercept(X_new))
    for method in ("quadrature", "probit"):
        proba = clf.set_params(predict_method=method).predict_proba(X_new)[:, 1]
        assert_allclose(proba, expected_sigmoid(mean, var, method=method), rtol=0, atol=1e-12)
    assert "Jaakkola-Jordan" in clf.summary() and "ELBO" in clf.summary()
    # without an intercept: vi_logistic with the prior on every weight, its elbo
    plain = BayesianLogisticRegression(lam, fit_intercept=False, inference="vi").fit(X1, y)
    q = vi_logistic(X1, y, lam)
    assert_allclose(plain.coef_[0], q.mean, rtol=1e-12, atol=1e-14)
    assert_allclose(plain.log_evidence_, q.elbo, rtol=1e-13)


@pytest.mark.parametrize("lam", [1e-2, 0.3, 7.0])
def test_vi_bound_is_below_the_evidence(spector, lam):
    # the ELBO bounds log p(y | X) from below: against the importance-sampling evidence
    # (a proper prior on every weight; with the flat intercept as the limit of N(0, 1/eps))
    X, y = spector
    X1 = add_intercept(X)
    plain = BayesianLogisticRegression(lam, fit_intercept=False, inference="vi").fit(X1, y)
    exact, se = log_evidence_is(X1, y, lam, n_samples=50_000)
    assert plain.log_evidence_ < exact - 5 * se
    clf = BayesianLogisticRegression(lam, inference="vi").fit(X, y)
    eps = 1e-8
    exact, se = log_evidence_is(X1, y, np.r_[eps, np.full(3, lam)], n_samples=50_000)
    assert clf.log_evidence_ < exact + 0.5 * np.log(2 * np.pi / eps) - 5 * se
    # and, on these data, below the Laplace estimate too
    assert clf.log_evidence_ < BayesianLogisticRegression(lam).fit(X, y).log_evidence_


def test_vi_evidence_lambda_maximises_the_bound(spector, gaussians):
    for X, y in (spector, gaussians):
        clf = BayesianLogisticRegression(inference="vi").fit(X, y)
        lam = clf.prior_precision_
        X1 = add_intercept(X)

        def bound(t, X1=X1, y=y):
            return _vi_logistic(X1, y, np.r_[0.0, np.full(X1.shape[1] - 1, np.exp(t))], 2000, 1e-13)[1]

        t, h = np.log(lam), 1e-3
        up, mid, down = bound(t + h), bound(t), bound(t - h)
        assert_allclose(mid, clf.log_evidence_, rtol=0, atol=1e-9)
        slope, curvature = (up - down) / (2 * h), (up - 2 * mid + down) / h**2
        assert curvature < 0 and abs(slope) < 1e-5 * max(1.0, abs(curvature))
        assert mid > max(bound(t + 0.1), bound(t - 0.1))
        # the bound's lambda is close to the Laplace evidence's on these data
        laplace = BayesianLogisticRegression().fit(X, y)
        assert abs(np.log(lam / laplace.prior_precision_)) < 0.5
        assert clf.log_evidence_ < laplace.log_evidence_ + 1e-9


def test_credible_interval_and_summary(spector):
    X, y = spector
    df = pd.DataFrame(X, columns=["GPA", "TUCE", "PSI"])
    clf = BayesianLogisticRegression().fit(df, y)
    sd = np.sqrt(np.diag(clf.coef_cov_))
    mean = np.r_[clf.intercept_, clf.coef_[0]]
    for level in (0.5, 0.95, 0.99):
        z = ndtri(0.5 + level / 2)
        assert_allclose(clf.credible_interval(level), np.column_stack([mean - z * sd, mean + z * sd]), rtol=1e-12)
    text = clf.summary(level=0.9).splitlines()
    assert "maximises the evidence" in text[1] and "[0.05" in text[4] and "0.95]" in text[4]
    rows = {line.split()[0]: [float(v) for v in line.split()[1:]] for line in text[5:]}
    assert list(rows) == ["intercept", "GPA", "TUCE", "PSI"]
    table = np.array(list(rows.values()))
    assert_allclose(table[:, 0], mean, atol=5e-5)
    assert_allclose(table[:, 1], sd, atol=5e-5)
    assert_allclose(table[:, 2:], clf.credible_interval(0.9), atol=5e-5)
    with pytest.raises(ValueError, match="level must be a number strictly between 0 and 1, got 95"):
        clf.credible_interval(95)


@pytest.mark.parametrize("labels", [("no", "yes"), (-1, 1), (1, 2), (False, True)])
def test_any_two_labels(spector, labels):
    X, y = spector
    coded = np.where(y == 1, labels[1], labels[0])
    ref = BayesianLogisticRegression().fit(X, y)
    clf = BayesianLogisticRegression().fit(X, coded)
    assert clf.classes_.tolist() == list(labels)
    assert_allclose(clf.coef_, ref.coef_, rtol=1e-12)
    assert np.array_equal(clf.predict(X), np.where(ref.predict(X) == 1, labels[1], labels[0]))
    assert clf.score(X, coded) == ref.score(X, y)


def test_not_fitted_and_bad_input(spector):
    X, y = spector
    clf = BayesianLogisticRegression()
    for method in ("predict", "predict_proba"):
        with pytest.raises(NotFittedError):
            getattr(clf, method)(X)
    for method in ("credible_interval", "summary"):
        with pytest.raises(NotFittedError):
            getattr(clf, method)()
    with pytest.raises(ValueError, match=r"Only binary classification is supported. .* y has 3 classes \[0, 1, 2\]"):
        clf.fit(X, np.arange(32) % 3)
    with pytest.raises(ValueError, match=r"needs two classes to fit; y has one class \('a' only\)"):
        clf.fit(X, ["a"] * 32)
    with pytest.raises(ValueError, match=r"prior_precision must be 'evidence'.*got 'mackay'"):
        BayesianLogisticRegression("mackay").fit(X, y)
    with pytest.raises(ValueError, match=r"prior_precision must be >= 0, got -1"):
        BayesianLogisticRegression(-1.0).fit(X, y)
    with pytest.raises(ValueError, match=r"inference must be one of \('laplace', 'gibbs', 'vi'\), got 'nuts'"):
        BayesianLogisticRegression(inference="nuts").fit(X, y)
    with pytest.raises(ValueError, match=r"predict_method must be one of"):
        BayesianLogisticRegression(predict_method="exact").fit(X, y)
    with pytest.raises(ValueError, match=r"maximum-likelihood estimate, which does not exist"):
        BayesianLogisticRegression(0).fit(np.r_[-2.0, -1.0, 1.0, 2.0][:, None], [0, 0, 1, 1])
