"""Benchmark: many classes. softmax_irls against scikit-learn's multinomial newton-cholesky, and
gpc_laplace_multiclass against three binary gpc_laplace fits (one-vs-rest).

Run with `make bench` (or `python bench/bench_multiclass.py [--quick]`).  Both comparisons run
interleaved, several times, on the same data, with BLAS pinned to one thread (threadpoolctl);
the tables report medians and ratios measured in the same run.  Every softmax fit is checked
to reach scikit-learn's weights.

Targets (issue 19): softmax_irls at n = 1e5, d = 20, K = 10 no slower than scikit-learn;
gpc_laplace_multiclass at n = 1000, C = 3 within 3x the time of three binary gpc_laplace fits.
"""

import statistics
import sys
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

import blrlib


def softmax_data(n, d, K, seed=0):
    """An intercept column plus d - 1 standard-normal features; labels from a softmax model."""
    rng = np.random.default_rng(seed)
    X = blrlib.add_intercept(rng.standard_normal((n, d - 1)))
    W = rng.standard_normal((d, K)) / np.sqrt(d / 4)
    P = blrlib.softmax(X @ W)
    y = (np.cumsum(P, axis=1) > rng.random((n, 1))).argmax(axis=1)
    return X, y


def gp_data(n, seed=0):
    """Three overlapping classes in the plane; the RBF kernel with variance 2, length scale 1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    centres = np.array([[-1.0, 0.0], [1.0, 0.0], [0.0, 1.5]])
    y = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(-1) + rng.normal(0, 0.5, (n, 3)), axis=1)
    return blrlib.rbf_kernel(X, variance=2.0, lengthscale=1.0), y


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def fit_softmax(X, y, lam):
    fit = blrlib.softmax_irls(X, y, lam)
    assert fit.converged
    return fit.w


def fit_sklearn(X, y, lam):
    model = LogisticRegression(C=1 / lam, fit_intercept=False, solver="newton-cholesky", tol=1e-8, max_iter=100)
    return model.fit(X, y).coef_.T


def compare_softmax(n=100_000, d=20, K=10, lam=1.0, repeats=3):
    X, y = softmax_data(n, d, K)
    solvers = {"blrlib.softmax_irls": fit_softmax, "sklearn newton-cholesky (multinomial)": fit_sklearn}
    times = {name: [] for name in solvers}
    weights = {}
    for _ in range(repeats):
        for name, fn in solvers.items():
            t, w = timed(fn, X, y, lam)
            times[name].append(t)
            weights[name] = w
    base = statistics.median(times["blrlib.softmax_irls"])
    rows = []
    for name in solvers:
        med = statistics.median(times[name])
        gap = float(np.max(np.abs(weights[name] - weights["blrlib.softmax_irls"])))
        rows.append((f"n={n:,}, d={d}, K={K}, lambda={lam:g}", name, med, med / base, gap))
    return rows


def one_vs_rest(K, y):
    return [blrlib.gpc_laplace(K, (y == c).astype(float)) for c in range(int(y.max()) + 1)]


def compare_gp(n=1000, repeats=3):
    K, y = gp_data(n)
    solvers = {"blrlib.gpc_laplace_multiclass": blrlib.gpc_laplace_multiclass,
               "3 x blrlib.gpc_laplace (one-vs-rest)": one_vs_rest}
    times = {name: [] for name in solvers}
    for _ in range(repeats):
        for name, fn in solvers.items():
            t, fit = timed(fn, K, y)
            times[name].append(t)
    fit = blrlib.gpc_laplace_multiclass(K, y)
    assert fit.converged
    base = statistics.median(times["3 x blrlib.gpc_laplace (one-vs-rest)"])
    return [(f"n={n}, C=3", name, statistics.median(times[name]), statistics.median(times[name]) / base,
             fit.n_iter if name.startswith("blrlib.gpc_laplace_multi") else "-") for name in solvers]


def main(argv=()):
    quick = "--quick" in argv
    with threadpool_limits(limits=1):
        rows = compare_softmax(n=20_000 if quick else 100_000, repeats=1 if quick else 3)
        gp_rows = compare_gp(n=500 if quick else 1000, repeats=1 if quick else 3)
    print("| data | solver | median time (s) | time / softmax_irls | max abs weight difference |")
    print("|---|---|---:|---:|---:|")
    for data, name, med, ratio, gap in rows:
        print(f"| {data} | {name} | {med:.3f} | {ratio:.2f} | {gap:.1e} |")
    print()
    print("| data | solver | median time (s) | time / three binary fits | Newton iterations |")
    print("|---|---|---:|---:|---:|")
    for data, name, med, ratio, it in gp_rows:
        print(f"| {data} | {name} | {med:.3f} | {ratio:.2f} | {it} |")
    print(f"\nsoftmax_irls / scikit-learn = {1 / rows[1][3]:.2f} (target <= 1); "
          f"gpc_laplace_multiclass / three gpc_laplace = {gp_rows[0][3]:.2f} (target <= 3)")


if __name__ == "__main__":
    main(sys.argv[1:])
