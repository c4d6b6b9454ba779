"""Helpers shared by the library tests (imported as `from _helpers import ...`)."""

import numpy as np


def central_difference(f, x, h):
    """Central finite-difference gradient of a scalar function f at x."""
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def make_logistic_data(rng, n=60, d=3, scale=1.0):
    """Features with an intercept column and labels drawn from a logistic model."""
    from blrlib import add_intercept, sigmoid

    X = add_intercept(rng.standard_normal((n, d - 1)))
    w = scale * rng.standard_normal(d)
    y = (rng.random(n) < sigmoid(X @ w)).astype(float)
    return X, y


def check_multiclass_pipeline(estimator, grid):
    """An estimator behind a StandardScaler on iris (3 classes, string labels) in a
    Pipeline, cross_val_score and GridSearchCV (with and without scoring=).

    The pipeline's predictions are those of scaling by hand and fitting a clone; its
    cross-validation scores are those of the same folds by hand.  ``grid`` maps the
    estimator's parameters (without the pipeline's prefix) to values.  Returns the
    cross-validation scores.
    """
    from numpy.testing import assert_allclose, assert_array_equal
    from sklearn.base import clone
    from sklearn.datasets import load_iris
    from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    pipe = make_pipeline(StandardScaler(), clone(estimator)).fit(X, labels)
    Z = StandardScaler().fit_transform(X)
    by_hand = clone(estimator).fit(Z, labels)
    assert pipe.classes_.tolist() == ["setosa", "versicolor", "virginica"]
    assert_array_equal(pipe.predict(X), by_hand.predict(Z))
    assert_allclose(pipe.predict_proba(X), by_hand.predict_proba(Z), rtol=0, atol=1e-12)
    assert pipe.predict_proba(X).shape == (150, 3) and pipe.score(X, labels) > 0.9
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(pipe, X, labels, cv=folds)
    manual = []
    for train, test in folds.split(X, labels):
        scaler = StandardScaler().fit(X[train])
        fit = clone(estimator).fit(scaler.transform(X[train]), labels[train])
        manual.append(fit.score(scaler.transform(X[test]), labels[test]))
    assert_allclose(scores, manual, rtol=0, atol=0)
    name = pipe.steps[-1][0]
    param_grid = {f"{name}__{key}": values for key, values in grid.items()}
    for scoring in (None, "neg_log_loss"):
        search = GridSearchCV(pipe, param_grid, cv=folds, scoring=scoring)
        search.fit(X, labels)
        assert np.all(np.isfinite(search.cv_results_["mean_test_score"])), scoring
        assert np.isfinite(search.best_score_)
        assert search.best_estimator_.predict(X[::50]).tolist() == labels[::50].tolist()
    return scores
