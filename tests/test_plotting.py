"""The shared figures: they draw what they say, with the book's palette."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from numpy.testing import assert_allclose  # noqa: E402
from scipy.stats import multivariate_normal  # noqa: E402

from blrlib import add_intercept, datasets, laplace_posterior, predict_probit  # noqa: E402
from blrlib import plotting  # noqa: E402


def test_posterior_contours_are_mahalanobis_ellipses():
    mean, cov = np.array([0.5, -1.0]), np.array([[1.0, 0.3], [0.3, 0.5]])
    fig, ax = plt.subplots()
    cs = plotting.plot_posterior_contours(ax, multivariate_normal(mean, cov).logpdf, (-4, 5), (-5, 3), n=301, levels=3)
    assert_allclose(cs.levels, np.exp(-0.5 * np.array([9.0, 4.0, 1.0])))
    # the innermost contour lies at Mahalanobis distance 1
    path = cs.allsegs[-1][0]
    r = np.sqrt(np.einsum("ij,jk,ik->i", path - mean, np.linalg.inv(cov), path - mean))
    assert_allclose(r, 1.0, atol=0.02)
    plt.close(fig)


def test_boundary_probability_contours_and_samples_draw():
    X, y = datasets.two_gaussians(40, seed=2)
    post = laplace_posterior(add_intercept(X), y, 1.0)
    fig, ax = plt.subplots()
    plotting.use_book_style()
    plotting.plot_data(ax, X, y)
    line = plotting.plot_decision_boundary(ax, post.mean)[0]
    x1, x2 = line.get_data()
    assert_allclose(post.mean[0] + post.mean[1] * x1 + post.mean[2] * x2, 0.0, atol=1e-9)
    plotting.plot_probability_contours(ax, lambda P: predict_probit(post, add_intercept(P)), X)
    W = plotting.plot_sampled_boundaries(ax, post, n_boundaries=5, rng=0)
    assert W.shape == (5, 3)
    assert fig.get_facecolor()[:3] == (1.0, 1.0, 1.0)
    plt.close(fig)
