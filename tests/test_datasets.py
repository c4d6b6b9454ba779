"""Data sets: the shipped Spector & Mazzeo CSV and the seeded generators."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from blrlib import add_intercept, datasets, irls


def test_spector_matches_statsmodels_copy():
    import statsmodels.api as sm

    X, y, names = datasets.spector()
    ref = sm.datasets.spector.load_pandas().data
    assert names == ("GPA", "TUCE", "PSI")
    assert_allclose(X, ref[list(names)].to_numpy(), rtol=0, atol=0)
    assert_array_equal(y, ref["GRADE"].to_numpy())


@pytest.mark.parametrize("make", [datasets.two_gaussians, datasets.separable, datasets.two_moons, datasets.circles])
def test_generators_are_seeded_and_labelled_01(make):
    X1, y1 = make(50, seed=4)
    X2, y2 = make(50, seed=4)
    X3, _ = make(50, seed=5)
    assert_array_equal(X1, X2)
    assert_array_equal(y1, y2)
    assert not np.array_equal(X1, X3)
    assert X1.shape[0] == 50 and set(np.unique(y1)) == {0.0, 1.0}


def test_separable_is_separable_with_the_requested_gap():
    X, y = datasets.separable(60, d=3, margin=0.7, seed=2)
    assert X.shape == (60, 3)
    # a hard-margin check: the maximum-likelihood iteration finds a separating w
    import warnings

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        fit = irls(add_intercept(X), y)
    assert np.all((2 * y - 1) * (add_intercept(X) @ fit.w) > 0)


def test_two_gaussians_class_balance_and_means():
    X, y = datasets.two_gaussians(20_000, mean0=(-1.0, 2.0), mean1=(3.0, 0.0), prior1=0.3, seed=0)
    assert abs(y.mean() - 0.3) < 0.01
    assert_allclose(X[y == 1].mean(0), [3.0, 0.0], atol=0.05)
    assert_allclose(X[y == 0].mean(0), [-1.0, 2.0], atol=0.05)


def test_breast_cancer_matches_scikit_learn_copy():
    from sklearn.datasets import load_breast_cancer

    X, y, names = datasets.breast_cancer()
    ref = load_breast_cancer()
    assert X.shape == (569, 30) and y.shape == (569,)
    assert_array_equal(X, ref.data)
    assert_array_equal(y, ref.target)
    assert names == tuple(ref.feature_names)


def test_iris_versicolor_virginica_matches_scikit_learn_copy():
    from sklearn.datasets import load_iris

    X, y, names = datasets.iris_versicolor_virginica()
    ref = load_iris()
    keep = ref.target > 0  # 1 = versicolor, 2 = virginica
    assert X.shape == (100, 4)
    assert_array_equal(X, ref.data[keep])
    assert_array_equal(y, (ref.target[keep] == 2).astype(float))
    assert names == tuple(ref.feature_names)
    assert int(y.sum()) == 50


def test_affairs_matches_statsmodels_copy():
    import statsmodels.api as sm

    X, y, names = datasets.affairs()
    ref = sm.datasets.fair.load_pandas().data
    assert names == tuple(ref.columns[:8]) and ref.columns[8] == "affairs"
    assert_array_equal(X, ref[list(names)].to_numpy())
    assert_array_equal(y, (ref["affairs"].to_numpy() > 0).astype(float))
    assert X.shape == (6366, 8) and int(y.sum()) == 2053


@pytest.mark.parametrize("load", [datasets.breast_cancer, datasets.iris_versicolor_virginica, datasets.affairs])
def test_real_data_loaders_return_fresh_float_arrays(load):
    X, y, _ = load()
    X2, _, _ = load()
    assert X.dtype == float and y.dtype == float and set(np.unique(y)) == {0.0, 1.0}
    X2[0, 0] = -1.0  # a caller editing its copy must not change the next load
    assert_array_equal(load()[0], X)
