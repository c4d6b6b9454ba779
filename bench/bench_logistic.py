"""Benchmark: blrlib.irls against statsmodels Logit (Newton) and scikit-learn newton-cholesky.

Run with `make bench` (or `python bench/bench_logistic.py`).  The three fits run
interleaved, several times, on the same data; the table reports median times and
the ratio of each reference's median to irls's, measured in the same run, since
absolute seconds on a shared machine mean little.  Every fit is also checked to
reach the same maximum-likelihood weights.
"""

import statistics
import sys
import time
import warnings

import numpy as np
import statsmodels.api as sm
from sklearn.linear_model import LogisticRegression

import blrlib


def make_data(n, d, seed=0):
    """An intercept column plus d - 1 standard-normal features; labels from a logistic model."""
    rng = np.random.default_rng(seed)
    X = blrlib.add_intercept(rng.standard_normal((n, d - 1)))
    w = rng.standard_normal(d) / np.sqrt(d / 4)
    y = (rng.random(n) < blrlib.sigmoid(X @ w)).astype(float)
    return X, y


def fit_irls(X, y):
    fit = blrlib.irls(X, y)
    assert fit.converged
    return fit.w


def fit_statsmodels(X, y):
    return sm.Logit(y, X).fit(disp=0, method="newton", tol=1e-8, maxiter=100).params


def fit_sklearn(X, y):
    model = LogisticRegression(C=np.inf, fit_intercept=False, solver="newton-cholesky", tol=1e-8, max_iter=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return model.fit(X, y).coef_.ravel()


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def compare(n=200_000, d=20, repeats=5):
    """Interleaved timings of the three solvers; returns rows for the table."""
    X, y = make_data(n, d)
    solvers = {"blrlib.irls": fit_irls, "statsmodels Logit (newton)": fit_statsmodels,
               "sklearn newton-cholesky": fit_sklearn}
    times = {name: [] for name in solvers}
    weights = {}
    for _ in range(repeats):
        for name, fn in solvers.items():
            t, w = timed(fn, X, y)
            times[name].append(t)
            weights[name] = np.asarray(w)
    base = statistics.median(times["blrlib.irls"])
    rows = []
    for name in solvers:
        med = statistics.median(times[name])
        gap = np.max(np.abs(weights[name] - weights["blrlib.irls"]))
        rows.append((f"n={n:,}, d={d}", name, med, med / base, gap))
    return rows


def large(n=1_000_000, d=50, repeats=3):
    X, y = make_data(n, d, seed=1)
    times = [timed(fit_irls, X, y)[0] for _ in range(repeats)]
    med = statistics.median(times)
    return [(f"n={n:,}, d={d}", "blrlib.irls", med, 1.0, 0.0)]


def table(rows):
    lines = ["| data | solver | median time (s) | time / irls | max abs weight difference vs irls |",
             "|---|---|---:|---:|---:|"]
    for data, name, med, ratio, gap in rows:
        lines.append(f"| {data} | {name} | {med:.3f} | {ratio:.2f} | {gap:.1e} |")
    return "\n".join(lines)


def main(argv=()):
    quick = "--quick" in argv
    rows = compare(n=20_000 if quick else 200_000, repeats=2 if quick else 5)
    rows += large(n=100_000 if quick else 1_000_000, repeats=1 if quick else 3)
    print(table(rows))
    sm_ratio = rows[1][3]
    sk_ratio = rows[2][3]
    print(f"\nirls / statsmodels = {1 / sm_ratio:.2f} (target <= 0.5); "
          f"irls / scikit-learn = {1 / sk_ratio:.2f} (target <= 1); "
          f"n=1e6, d=50 irls: {rows[3][2]:.1f} s (target < 15 s)")


if __name__ == "__main__":
    main(sys.argv[1:])
