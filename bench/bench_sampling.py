"""Benchmark: the Polya-Gamma Gibbs sampler with blrlib's PG draws against compiled ones.

``blrlib.gibbs_logistic`` draws its Polya-Gamma variables with blrlib's own NumPy
implementation of Devroye's method.  The reference is the same function, the same
Gibbs loop, with the PG(1, c) draws taken from the ``polyagamma`` package's compiled
C sampler instead (a bench-only dependency; ``polyagamma.random_polyagamma``).
Both runs sample the posterior of the first 300 rows of the breast cancer data, eight
standardised features plus an intercept (d = 9), prior precision 1, four chains of
500 warm-up and 2000 kept draws.  Runs are interleaved (alternating which goes first)
and repeated; the table reports medians of the wall-clock time, of the minimum over
the nine coordinates of the bulk effective sample size, and of their ratio, effective
samples per second, with the ratio blrlib / polyagamma.  It also checks that both
runs reach the same posterior: every mean within 5 Monte Carlo standard errors.

Run from the repository root::

    .venv/bin/python bench/bench_sampling.py             # 5 repeats
    .venv/bin/python bench/bench_sampling.py --repeats 3

or ``from bench_sampling import main; main(repeats=1)``.
"""

import argparse
import os
import platform
import statistics
import time

import numpy as np


def _data(n=300, n_features=8):
    from blrlib import add_intercept, datasets

    X, y, _ = datasets.breast_cancer()
    X, y = X[:n, :n_features], y[:n]
    return add_intercept((X - X.mean(axis=0)) / X.std(axis=0)), y


def _compiled_pg(c, rng):
    from polyagamma import random_polyagamma

    return random_polyagamma(1.0, c, random_state=rng)


def _run(sampler, X, y, seed, n_samples, n_warmup):
    """Time one gibbs_logistic run whose PG draws come from ``sampler`` ("blrlib" or "polyagamma")."""
    from blrlib import gibbs_logistic, sampling

    own = sampling._pg_draws
    if sampler == "polyagamma":
        sampling._pg_draws = _compiled_pg  # gibbs_logistic looks the PG sampler up at call time
    try:
        t0 = time.perf_counter()
        post = gibbs_logistic(X, y, 1.0, n_samples=n_samples, n_warmup=n_warmup, n_chains=4, seed=seed)
        seconds = time.perf_counter() - t0
    finally:
        sampling._pg_draws = own
    return seconds, post


def main(repeats=5, n_samples=2000, n_warmup=500):
    X, y = _data()
    runs = {"blrlib": [], "polyagamma": []}
    posts = {}
    for r in range(repeats):
        order = ["blrlib", "polyagamma"] if r % 2 == 0 else ["polyagamma", "blrlib"]
        for name in order:
            seconds, post = _run(name, X, y, seed=r, n_samples=n_samples, n_warmup=n_warmup)
            ess = float(np.min(post.ess))
            runs[name].append((seconds, ess, ess / seconds))
            posts[name] = post
    a, b = posts["blrlib"], posts["polyagamma"]
    mcse = np.sqrt(np.diag(a.cov) / a.ess + np.diag(b.cov) / b.ess)
    same = bool(np.all(np.abs(a.mean - b.mean) < 5 * mcse))
    med = {k: [statistics.median(col) for col in zip(*v)] for k, v in runs.items()}
    ratios = [x / y for x, y in zip((row[2] for row in runs["blrlib"]), (row[2] for row in runs["polyagamma"]))]
    print(f"breast cancer, n = {X.shape[0]}, d = {X.shape[1]}, prior precision 1, 4 chains x "
          f"({n_warmup} warm-up + {n_samples} draws), {repeats} interleaved repeats; "
          f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}\n")
    print("| PG sampler in the Gibbs loop | median time (s) | median min ESS | median ESS / s | "
          "ESS/s ratio (blrlib / polyagamma) |")
    print("|---|---:|---:|---:|---:|")
    print(f"| blrlib (NumPy, Devroye) | {med['blrlib'][0]:.2f} | {med['blrlib'][1]:.0f} | "
          f"{med['blrlib'][2]:.0f} | {med['blrlib'][2] / med['polyagamma'][2]:.2f} |")
    print(f"| polyagamma (compiled) | {med['polyagamma'][0]:.2f} | {med['polyagamma'][1]:.0f} | "
          f"{med['polyagamma'][2]:.0f} | 1.00 |")
    print(f"\nper-repeat ESS/s ratios: {', '.join(f'{r:.2f}' for r in ratios)}; "
          f"time ratio of the medians (polyagamma / blrlib): "
          f"{med['polyagamma'][0] / med['blrlib'][0]:.2f}; same posterior means: {same}")
    return med, ratios, same


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    main(repeats=args.repeats)
