"""Benchmark: the variational methods against the Laplace fits they are compared with in the book.

* ``vi_logistic`` (the Jaakkola-Jordan bound, Anderson-accelerated EM) against ``irls``
  (the guarded Newton method behind ``laplace_posterior``) on the same data: an intercept
  plus 19 standard-normal features, labels from a logistic model (``bench_logistic.make_data``),
  n = 200,000, both with ``prior_precision=1``.  Target: ``vi_logistic`` within 3x ``irls``.
* ``gpc_vi`` (the variational Gaussian method) against ``gpc_laplace`` at the same kernel
  matrix: two moons, n = 1000, RBF kernel with variance 1 and length scale 1 (the matrix of
  the EP rows of ``bench_gp.py``).  Target: ``gpc_vi`` within 10x ``gpc_laplace``.

BLAS is pinned to one thread (threadpoolctl), the two functions of each pair run
interleaved, and the ratio is that of the medians from the same run, of the CPU time of
the process (``time.process_time``, as in ``bench_ep.py``: on one thread it is the work
done, which other jobs on a shared machine disturb far less than the wall-clock time).

Run from the repository root::

    .venv/bin/python bench/bench_vi.py            # 5 repeats
    .venv/bin/python bench/bench_vi.py --quick    # smaller, 2 repeats
"""

import statistics
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

import blrlib
from bench_logistic import make_data


def _interleaved(pairs, repeats):
    times = {name: [] for name, _ in pairs}
    results = {}
    for _ in range(repeats):
        for name, fn in pairs:
            start = time.process_time()
            results[name] = fn()
            times[name].append(time.process_time() - start)
    return {name: statistics.median(t) for name, t in times.items()}, results


def logistic(n=200_000, d=20, repeats=5):
    X, y = make_data(n, d)
    med, res = _interleaved([("irls", lambda: blrlib.irls(X, y, 1.0)),
                             ("vi_logistic", lambda: blrlib.vi_logistic(X, y, 1.0))], repeats)
    fit, q = res["irls"], res["vi_logistic"]
    assert fit.converged and q.converged
    return [(f"n={n:,}, d={d}", "irls", med["irls"], 1.0, f"{fit.n_iter} Newton iterations"),
            (f"n={n:,}, d={d}", "vi_logistic", med["vi_logistic"], med["vi_logistic"] / med["irls"],
             f"{q.n_iter} iterations; max abs(mean - w_MAP) = {np.max(np.abs(q.mean - fit.w)):.1e}")]


def gp(n=1000, repeats=5):
    X, y = blrlib.datasets.two_moons(n, noise=0.3, seed=0)
    K = blrlib.rbf_kernel(X, variance=1.0, lengthscale=1.0)
    med, res = _interleaved([("gpc_laplace", lambda: blrlib.gpc_laplace(K, y)),
                             ("gpc_vi", lambda: blrlib.gpc_vi(K, y))], repeats)
    la, q = res["gpc_laplace"], res["gpc_vi"]
    assert la.converged and q.converged
    return [(f"two moons, n={n}", "gpc_laplace", med["gpc_laplace"], 1.0,
             f"log q(y) = {la.log_marginal_likelihood:.4f}"),
            (f"two moons, n={n}", "gpc_vi", med["gpc_vi"], med["gpc_vi"] / med["gpc_laplace"],
             f"{q.n_iter} iterations; ELBO = {q.elbo:.4f}")]


def main(argv=()):
    quick = "--quick" in argv
    repeats = 2 if quick else 5
    with threadpool_limits(limits=1):
        rows = logistic(n=20_000 if quick else 200_000, repeats=repeats)
        rows += gp(n=300 if quick else 1000, repeats=repeats)
    print("| data | function | median CPU time (s) | time / Laplace fit | note |")
    print("|---|---|---:|---:|---|")
    for data, name, med, ratio, note in rows:
        print(f"| {data} | {name} | {med:.3f} | {ratio:.2f} | {note} |")
    print(f"\nvi_logistic / irls = {rows[1][3]:.2f} (target <= 3); "
          f"gpc_vi / gpc_laplace = {rows[3][3]:.2f} (target <= 10)")


if __name__ == "__main__":
    main(sys.argv[1:])
