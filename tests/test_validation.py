"""Every bad-input case named in DESIGN.md raises with a message naming expected and received."""

import numpy as np
import pytest

import blrlib
from blrlib import add_intercept, datasets

X = add_intercept(np.array([[0.0], [1.0], [2.0], [3.0]]))
Y = np.array([0, 1, 0, 1])
W = np.zeros(2)

FUNCS_WXY = [blrlib.log_likelihood, blrlib.log_posterior, blrlib.gradient, blrlib.hessian]
FITS = [blrlib.irls, blrlib.gradient_ascent, lambda X, y, **kw: blrlib.laplace_posterior(X, y, 1.0, **kw)]


@pytest.mark.parametrize("f", FUNCS_WXY)
@pytest.mark.parametrize(
    "X_bad, y_bad, w_bad, error, match",
    [
        (X, np.array([-1, 1, -1, 1]), W, ValueError, r"labels in \{-1, \+1\}.*\(y \+ 1\) // 2"),
        (X, np.array([0, 1, 2, 1]), W, ValueError, r"labels in \{0, 1\}, got values \{0, 1, 2\}"),
        (X, np.array([0.0, 0.5, 1.0, 1.0]), W, ValueError, r"got values \{0, 0.5, 1\}"),
        (X, np.array([0, 1, 0]), W, ValueError, "X has 4 rows, y has 3 entries"),
        (X, np.array([0, 1, np.nan, 1]), W, ValueError, "y must contain only finite numbers, got nan"),
        (np.where(X == 2.0, np.inf, X), Y, W, ValueError, "X must contain only finite numbers, got inf"),
        (np.where(X == 2.0, np.nan, X), Y, W, ValueError, "X must contain only finite numbers, got nan"),
        (X[:, 1], Y, W, ValueError, r"X must be 2-D .* got ndim=1.*reshape"),
        (X[None], Y, W, ValueError, "X must be 2-D .* got ndim=3"),
        (np.empty((0, 2)), np.array([]), W, ValueError, "X is empty"),
        (X, Y[:, None], W, ValueError, r"y must be 1-D .* got ndim=2"),
        (X, Y, np.zeros(3), ValueError, "w has length 3 but X has 2 columns"),
        (X, Y, np.array([0.0, np.nan]), ValueError, "w must contain only finite numbers"),
        (X, "0101", W, TypeError, "y must be an array of 0/1 labels, got a str"),
        ([["a", "b"]] * 4, Y, W, TypeError, "X must be array-like of numbers"),
    ],
)
def test_bad_data_is_rejected_clearly(f, X_bad, y_bad, w_bad, error, match):
    with pytest.raises(error, match=match):
        f(w_bad, X_bad, y_bad)


@pytest.mark.parametrize("fit", FITS)
def test_fitters_reject_bad_labels_and_shapes(fit):
    with pytest.raises(ValueError, match=r"\{-1, \+1\}"):
        fit(X, 2 * Y - 1)
    with pytest.raises(ValueError, match="different lengths"):
        fit(X, Y[:3])
    with pytest.raises(ValueError, match="X is empty"):
        fit(np.empty((0, 2)), np.array([]))


@pytest.mark.parametrize("f", [blrlib.log_posterior, blrlib.gradient, blrlib.hessian])
def test_negative_prior_precision(f):
    with pytest.raises(ValueError, match="prior_precision must be >= 0, got -1"):
        f(W, X, Y, -1.0)


@pytest.mark.parametrize("fit", [blrlib.irls, blrlib.gradient_ascent])
def test_fitters_reject_bad_settings(fit):
    with pytest.raises(ValueError, match="prior_precision must be >= 0, got -0.5"):
        fit(X, Y, prior_precision=-0.5)
    with pytest.raises(ValueError, match="max_iter must be >= 1, got 0"):
        fit(X, Y, max_iter=0)
    with pytest.raises(TypeError, match="max_iter must be an integer, got float"):
        fit(X, Y, max_iter=10.5)
    with pytest.raises(ValueError, match="tol must be > 0"):
        fit(X, Y, tol=0.0)
    with pytest.raises(ValueError, match="w0 has length 3 but X has 2 columns"):
        fit(X, Y, w0=np.zeros(3))
    with pytest.raises(TypeError, match="prior_precision must be a real number, got str"):
        fit(X, Y, prior_precision="1")


def test_step_size_must_be_positive():
    with pytest.raises(ValueError, match="step_size must be > 0, got -1"):
        blrlib.gradient_ascent(X, Y, step_size=-1.0)


def test_expected_sigmoid_rejects_bad_arguments():
    with pytest.raises(ValueError, match="var must be finite and >= 0, got -1"):
        blrlib.expected_sigmoid(0.0, -1.0)
    with pytest.raises(ValueError, match="method must be one of"):
        blrlib.expected_sigmoid(0.0, 1.0, method="laplace")
    with pytest.raises(ValueError, match="n_samples must be >= 1"):
        blrlib.expected_sigmoid(0.0, 1.0, method="mc", n_samples=0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        blrlib.expected_sigmoid(0.0, 1.0, method="mc", rng="seed")
    with pytest.raises(ValueError, match="var must be finite and >= 0"):
        blrlib.probit_kappa(-2.0)
    with pytest.raises(ValueError, match="mean must be a finite number, got nan"):
        blrlib.expected_sigmoid(np.nan, 1.0)
    with pytest.raises(ValueError, match=r"mean must contain only finite numbers, got inf at index \(1,\)"):
        blrlib.expected_sigmoid([0.0, np.inf], [1.0, 1.0])


def test_prediction_rejects_wrong_inputs():
    post = blrlib.laplace_posterior(X, Y, 1.0)
    with pytest.raises(ValueError, match="X_new has 1 columns but the posterior is over 2 weights.*add_intercept"):
        blrlib.predict_probit(post, np.array([[1.0], [2.0]]))
    with pytest.raises(TypeError, match="post must be a LaplacePosterior"):
        blrlib.predict_quadrature(blrlib.irls(X, Y), X)


def test_logit_rejects_non_probabilities():
    with pytest.raises(ValueError, match="probabilities in \\[0, 1\\], got 1.5"):
        blrlib.logit(np.array([0.2, 1.5]))


def test_dataset_arguments_are_checked():
    with pytest.raises(ValueError, match="prior1 must be in \\(0, 1\\), got 1"):
        datasets.two_gaussians(10, prior1=1.0)
    with pytest.raises(ValueError, match="cov must have shape \\(2, 2\\)"):
        datasets.two_gaussians(10, cov=np.eye(3))
    with pytest.raises(ValueError, match="mean1 must have length 2, got length 3"):
        datasets.two_gaussians(10, mean1=(1.0, 0.0, 0.0))
    with pytest.raises(TypeError, match="n must be an integer"):
        datasets.separable(10.0)


@pytest.mark.parametrize("f", FUNCS_WXY[1:])
@pytest.mark.parametrize(
    "lam, error, match",
    [
        ([1.0, 2.0, 3.0], ValueError, "prior_precision has length 3 but X has 2 columns"),
        ([1.0, -2.0], ValueError, r"prior_precision must be >= 0 in every entry, got -2 at index 1"),
        ([1.0, np.nan], ValueError, "prior_precision must contain only finite numbers, got nan"),
        (np.ones((2, 2)), ValueError, "prior_precision must be a number or a 1-D array of 2 per-weight precisions"),
        (["a", "b"], TypeError, "prior_precision must be array-like of numbers"),
    ],
)
def test_bad_per_weight_prior_precision(f, lam, error, match):
    with pytest.raises(error, match=match):
        f(W, X, Y, lam)


@pytest.mark.parametrize("fit", [blrlib.irls, blrlib.gradient_ascent, blrlib.laplace_posterior])
def test_fitters_reject_bad_per_weight_prior_precision(fit):
    with pytest.raises(ValueError, match="prior_precision has length 3 but X has 2 columns"):
        fit(X, Y, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"got -1 at index 0"):
        fit(X, Y, [-1.0, 1.0])


@pytest.mark.parametrize("fit", [blrlib.irls, blrlib.gradient_ascent])
def test_callback_is_checked(fit):
    with pytest.raises(TypeError, match=r"callback must be a function callback\(w, t\) or None, got str"):
        fit(X, Y, callback="print")


def test_maximize_evidence_rejects_bad_settings():
    with pytest.raises(TypeError, match="searches over a scalar prior_precision"):
        blrlib.maximize_evidence(X, Y, [1.0, 1.0])
    with pytest.raises(ValueError, match="prior_precision must be > 0, got 0"):
        blrlib.maximize_evidence(X, Y, 0.0)
    with pytest.raises(ValueError, match="max_iter must be >= 1, got 0"):
        blrlib.maximize_evidence(X, Y, max_iter=0)
    with pytest.raises(ValueError, match="tol must be > 0"):
        blrlib.maximize_evidence(X, Y, tol=-1.0)
    with pytest.raises(ValueError, match=r"\{-1, \+1\}"):
        blrlib.maximize_evidence(X, 2 * Y - 1)
