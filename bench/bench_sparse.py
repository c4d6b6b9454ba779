"""Benchmark: the sparse variational GP classifier (``gpc_svgp``) against the exact ``GPClassifier``.

Two moons with noise 0.3 (``datasets.two_moons(n, noise=0.3, seed=0)``), held-out log loss on
2000 test points (``seed=1``).  Rows:

* the exact classifier, ``GPClassifier(1, 1, n_restarts=0)``: Laplace's method with the
  hyperparameters learned by maximising its marginal likelihood (the book's default);
* the exact Laplace fit at those learned hyperparameters, without the search
  (``gpc_laplace`` on the n x n kernel matrix);
* ``gpc_svgp`` with m inducing inputs chosen by k-means (``scipy.cluster.vq.kmeans2``, seeded,
  k-means++ start; its time is included), at the exact fit's learned hyperparameters;
* the same with the hyperparameters learned by ``GPClassifier`` on a random subset of 500
  points instead (that search's time is included), so that no exact fit on all n is needed.

Then a fit at n = 100,000 with 200 inducing inputs (hyperparameters learned on 500 points,
k-means on a random subset of 10,000 points),
with its time and its peak memory: the peak traced by ``tracemalloc`` during the fit (every
NumPy array is traced) and the process's peak resident set size (``ru_maxrss``).

Run from the repository root, with one BLAS thread::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/bench_sparse.py
    ... bench/bench_sparse.py --quick       # n = 1000 and 10,000 instead
    ... bench/bench_sparse.py --large-only  # only the n = 100,000 fit
"""

import argparse
import platform
import resource
import time
import tracemalloc
import warnings

import numpy as np


def _log_loss(p, y):
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def _kmeans(X, m, seed=0, max_points=10_000):
    """k-means centres (k-means++ start, seeded); on a random subset of ``max_points`` rows for larger X."""
    from scipy.cluster.vq import kmeans2

    if X.shape[0] > max_points:
        X = X[np.random.default_rng(seed).choice(X.shape[0], size=max_points, replace=False)]
    Z, _ = kmeans2(X, m, seed=seed, minit="++")
    return Z


def _subset_hyperparameters(X, y, size=500, seed=0):
    from blrlib import GPClassifier

    idx = np.random.default_rng(seed).choice(X.shape[0], size=size, replace=False)
    clf = GPClassifier(1.0, 1.0, n_restarts=0).fit(X[idx], y[idx])
    return clf.variance_, clf.lengthscale_


def _sparse(X, y, m, variance, lengthscale):
    from blrlib import gpc_svgp

    return gpc_svgp(X, y, _kmeans(X, m), variance=variance, lengthscale=lengthscale)


def main(n=4000, n_large=100_000, sizes=(25, 50, 100, 200), n_test=2000, large_only=False):
    from blrlib import GPClassifier, datasets, gpc_laplace, gpc_predict, gpc_svgp_predict, rbf_kernel

    warnings.simplefilter("ignore")
    X, y = datasets.two_moons(n, noise=0.3, seed=0)
    X_test, y_test = datasets.two_moons(n_test, noise=0.3, seed=1)
    print(f"python {platform.python_version()}, numpy {np.__version__}; n = {n}, {n_test} test points\n")
    if large_only:
        return _large(n_large, X_test, y_test)
    print("| method | hyperparameters | fit wall (s) | fit CPU (s) | held-out log loss | minus exact | "
          "exact CPU / this CPU |")
    print("|---|---|---:|---:|---:|---:|---:|")

    exact, wall, cpu = _timed(lambda: GPClassifier(1.0, 1.0, n_restarts=0).fit(X, y))
    var, ls = exact.variance_, exact.lengthscale_
    loss_exact = _log_loss(exact.predict_proba(X_test)[:, 1], y_test)
    cpu_exact = cpu
    hyp = f"learned on all n: variance {var:.3g}, lengthscale {ls:.3g}"
    print(f"| exact GPClassifier (Laplace) | {hyp} | {wall:.2f} | {cpu:.2f} | {loss_exact:.4f} | 0 | 1.0 |")

    def laplace_fixed():
        return gpc_laplace(rbf_kernel(X, variance=var, lengthscale=ls), y)

    fit, wall, cpu = _timed(laplace_fixed)
    K_star = rbf_kernel(X_test, X, variance=var, lengthscale=ls)
    p = gpc_predict(fit, K_star, np.full(n_test, var), method="quadrature").prob
    loss = _log_loss(p, y_test)
    print(f"| exact gpc_laplace, fixed | exact fit's | {wall:.2f} | {cpu:.2f} | {loss:.4f} | "
          f"{loss - loss_exact:+.4f} | {cpu_exact / cpu:.1f} |")

    for m in sizes:
        fit, wall, cpu = _timed(lambda m=m: _sparse(X, y, m, var, ls))
        loss = _log_loss(gpc_svgp_predict(fit, X_test).prob, y_test)
        print(f"| gpc_svgp, m = {m} (k-means) | exact fit's | {wall:.2f} | {cpu:.2f} | {loss:.4f} | "
              f"{loss - loss_exact:+.4f} | {cpu_exact / cpu:.1f} |")

    def subset_then_sparse(m):
        v, l_ = _subset_hyperparameters(X, y)
        return _sparse(X, y, m, v, l_)

    for m in (100, 200):
        fit, wall, cpu = _timed(lambda m=m: subset_then_sparse(m))
        loss = _log_loss(gpc_svgp_predict(fit, X_test).prob, y_test)
        hyp = f"learned on 500 points: variance {fit.variance:.3g}, lengthscale {fit.lengthscale:.3g}"
        print(f"| gpc_svgp, m = {m} (k-means) | {hyp} | {wall:.2f} | {cpu:.2f} | {loss:.4f} | "
              f"{loss - loss_exact:+.4f} | {cpu_exact / cpu:.1f} |")

    _large(n_large, X_test, y_test)


def _large(n_large, X_test, y_test):
    from blrlib import datasets, gpc_svgp, gpc_svgp_predict

    print(f"\nn = {n_large:,}, m = 200 inducing inputs by k-means (on 10,000 of the points), "
          f"hyperparameters learned on 500 points\n")
    XL, yL = datasets.two_moons(n_large, noise=0.3, seed=2)
    (v, l_), wall_h, cpu_h = _timed(lambda: _subset_hyperparameters(XL, yL))
    Z, wall_k, cpu_k = _timed(lambda: _kmeans(XL, 200))
    tracemalloc.start()
    fit, wall_f, cpu_f = _timed(lambda: gpc_svgp(XL, yL, Z, variance=v, lengthscale=l_))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    loss = _log_loss(gpc_svgp_predict(fit, X_test).prob, y_test)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("| step | wall (s) | CPU (s) |")
    print("|---|---:|---:|")
    print(f"| hyperparameters on 500 points | {wall_h:.2f} | {cpu_h:.2f} |")
    print(f"| k-means, 200 centres | {wall_k:.2f} | {cpu_k:.2f} |")
    print(f"| gpc_svgp ({fit.n_iter} iterations, converged={fit.converged}) | {wall_f:.2f} | {cpu_f:.2f} |")
    print(f"| total | {wall_h + wall_k + wall_f:.2f} | {cpu_h + cpu_k + cpu_f:.2f} |")
    nm_mb = n_large * 200 * 8 / 1e6
    print(f"\npeak traced memory during the fit {peak / 1e6:.0f} MB = {peak / 1e6 / nm_mb:.2f} x (n m doubles "
          f"= {nm_mb:.0f} MB; an n x n matrix would be {n_large**2 * 8 / 1e9:.0f} GB); peak RSS of the process "
          f"{rss:.0f} MB; held-out log loss {loss:.4f}; bound {fit.elbo:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 1000 and 10,000")
    parser.add_argument("--large-only", action="store_true", help="only the n = 100,000 fit")
    args = parser.parse_args()
    if args.quick:
        main(n=1000, n_large=10_000, sizes=(50, 100), large_only=args.large_only)
    else:
        main(large_only=args.large_only)
