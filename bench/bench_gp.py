"""Benchmark: GP classification with blrlib.GPClassifier against scikit-learn, and EP against Laplace.

Compares fit + predict_proba of ``blrlib.GPClassifier`` and
``sklearn.gaussian_process.GaussianProcessClassifier`` with the same kernel
(``ConstantKernel * RBF``, both hyperparameters learned in log space between
1e-5 and 1e5, starting from variance 1 and length scale 1, no restarts) on the
two-moons data, and with the optimiser switched off for both.  Runs of the two
libraries are interleaved and repeated; the table reports medians and the ratio
blrlib / scikit-learn, for wall-clock time and for the CPU time of the process
(all threads; the fairer measure on a shared machine).  The last rows time
blrlib's fit alone on a larger data set, without restarts and with
``GPClassifier``'s default of two.

The EP rows time ``gpc_ep`` (the parallel schedule: low-rank sweeps, then exact ones)
against ``gpc_laplace`` at the same kernel matrix (two moons, n = 1000, variance 1,
length scale 1), interleaved, and compare its log marginal likelihood with that of the
plain textbook EP (Alg. 3.5 as printed, ``schedule="sequential"``), run once.

Run from the repository root::

    .venv/bin/python bench/bench_gp.py               # n = 1000 (3 repeats) and 4000
    .venv/bin/python bench/bench_gp.py --threads 1   # pin BLAS to one thread (needs threadpoolctl)
    .venv/bin/python bench/bench_gp.py --ep-only     # the EP rows only

or ``from bench_gp import main; main(n=300, n_large=600, repeats=1)``.
"""

import argparse
import contextlib
import os
import platform
import statistics
import time
import warnings

import numpy as np


def _sklearn_gpc(optimize):
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    kernel = ConstantKernel(1.0, (1e-5, 1e5)) * RBF(1.0, (1e-5, 1e5))
    return GaussianProcessClassifier(kernel=kernel, n_restarts_optimizer=0, random_state=0,
                                     optimizer="fmin_l_bfgs_b" if optimize else None)


def _blrlib_gpc(optimize, n_restarts=0):
    from blrlib import GPClassifier

    return GPClassifier(1.0, 1.0, optimize=optimize, n_restarts=n_restarts, random_state=0)


def _lml(model):
    return getattr(model, "log_marginal_likelihood_", None) or model.log_marginal_likelihood_value_


def _time_fit_predict(make, X, y, X_test):
    """Wall-clock and CPU seconds (all threads of this process) of fit + predict_proba."""
    model = make()
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns when a hyperparameter hits a bound
        model.fit(X, y)
        if X_test is not None:
            model.predict_proba(X_test)
    return (time.perf_counter() - t0, time.process_time() - c0), _lml(model)


def _compare(n, optimize, repeats, n_test=1000):
    from blrlib import datasets

    X, y = datasets.two_moons(n, noise=0.3, seed=0)
    X_test = np.random.default_rng(1).uniform(-1.5, 2.5, size=(n_test, 2))
    times = {"blrlib": [], "sklearn": []}
    lml = {}
    for r in range(repeats):  # interleaved, alternating which library goes first
        order = [("blrlib", _blrlib_gpc), ("sklearn", _sklearn_gpc)]
        for name, make in order if r % 2 == 0 else order[::-1]:
            t, value = _time_fit_predict(lambda make=make: make(optimize), X, y, X_test)
            times[name].append(t)
            lml[name] = value
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}
    return med, lml, times


def _time_large(n, repeats, n_restarts=0):
    from blrlib import datasets

    X, y = datasets.two_moons(n, noise=0.3, seed=0)
    runs = [_time_fit_predict(lambda: _blrlib_gpc(True, n_restarts), X, y, None) for _ in range(repeats)]
    times = [t for t, _ in runs]
    med = (statistics.median(w for w, _ in times), statistics.median(c for _, c in times))
    return med, runs[-1][1], times


def ep_vs_laplace(n=1000, repeats=5, textbook=True):
    """gpc_ep against gpc_laplace on the same K, interleaved; the textbook EP's lml once."""
    from blrlib import datasets, gpc_ep, gpc_laplace, rbf_kernel

    X, y = datasets.two_moons(n, noise=0.3, seed=0)
    K = rbf_kernel(X, variance=1.0, lengthscale=1.0)
    times = {"laplace": [], "ep": []}
    fits = {}
    for r in range(repeats):  # interleaved, alternating which goes first
        order = [("laplace", gpc_laplace), ("ep", gpc_ep)]
        for name, fit in order if r % 2 == 0 else order[::-1]:
            t0, c0 = time.perf_counter(), time.process_time()
            fits[name] = fit(K, y)
            times[name].append((time.perf_counter() - t0, time.process_time() - c0))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}
    plain = None
    if textbook:
        t0 = time.perf_counter()
        plain = gpc_ep(K, y, schedule="sequential")
        plain_time = time.perf_counter() - t0
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",) * 3
    print(f"\nEP against Laplace (two moons, n = {n}, variance 1, length scale 1; {repeats} interleaved repeats, "
          f"medians; load average at the end {load[0]:.1f})\n")
    print("| function | wall (s) | CPU (s) | wall / gpc_laplace | sweeps or iterations | log marginal likelihood |")
    print("|---|---:|---:|---:|---:|---|")
    lw = med["laplace"][0]
    print(f"| gpc_laplace | {lw:.3f} | {med['laplace'][1]:.3f} | 1.00 | {fits['laplace'].n_iter} | "
          f"{fits['laplace'].log_marginal_likelihood:.9f} |")
    ep = fits["ep"]
    print(f"| gpc_ep (parallel) | {med['ep'][0]:.3f} | {med['ep'][1]:.3f} | {med['ep'][0] / lw:.2f} | {ep.n_sweeps} | "
          f"{ep.log_marginal_likelihood:.9f} |")
    if plain is not None:
        gap = abs(plain.log_marginal_likelihood - ep.log_marginal_likelihood)
        print(f"| gpc_ep(schedule='sequential'), the textbook Alg. 3.5, run once | {plain_time:.1f} | - | "
              f"{plain_time / lw:.0f} | {plain.n_sweeps} | {plain.log_marginal_likelihood:.9f} (gap {gap:.1e}) |")
    return {"median": med, "runs": times, "ep": ep, "textbook": plain}


def main(n=1000, n_large=4000, repeats=3, repeats_large=1, threads=None, restarts_large=2, ep=True):
    """Run the benchmark and print a markdown table; return the rows as dicts."""
    limits = contextlib.nullcontext()
    if threads is not None:
        import scipy.linalg  # noqa: F401  load every BLAS first: threadpoolctl limits only loaded ones
        import sklearn.gaussian_process  # noqa: F401

        import blrlib  # noqa: F401

        limits = _threads(threads)
    rows = []
    with limits:
        for optimize in (True, False):
            med, lml, times = _compare(n, optimize, repeats)
            rows.append({
                "task": f"fit + predict_proba ({n} test points), n = {n}, optimiser {'on' if optimize else 'off'}",
                "blrlib": med["blrlib"], "sklearn": med["sklearn"],
                "lml": f"{lml['blrlib']:.6f} / {lml['sklearn']:.6f}",
                "runs": times,
            })
        if n_large:
            # no restarts (scikit-learn's default, and the target's setting), then the
            # GPClassifier default of two more seeded starting points
            for n_restarts in sorted({0, restarts_large}):
                med, value, times = _time_large(n_large, repeats_large if n_restarts == 0 else 1, n_restarts)
                rows.append({
                    "task": f"fit, n = {n_large}, optimiser on, {n_restarts} restart{'' if n_restarts == 1 else 's'} "
                            f"(blrlib only)",
                    "blrlib": med, "sklearn": None,
                    "lml": f"{value:.6f} / -",
                    "runs": {"blrlib": times},
                })
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",) * 3
    print(f"\nGP classification benchmark ({platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, BLAS threads: {threads or 'default'}, "
          f"load average at the end {load[0]:.1f}; {repeats} interleaved repeats, medians)\n")
    print("| task | blrlib wall (s) | sklearn wall (s) | ratio wall | blrlib CPU (s) | sklearn CPU (s) "
          "| ratio CPU | log marginal likelihood (blrlib / sklearn) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        (bw, bc), sk = r["blrlib"], r["sklearn"]
        if sk is None:
            cells = f"{bw:.2f} | - | - | {bc:.2f} | - | -"
        else:
            sw, sc = sk
            cells = f"{bw:.2f} | {sw:.2f} | {bw / sw:.2f} | {bc:.2f} | {sc:.2f} | {bc / sc:.2f}"
        print(f"| {r['task']} | {cells} | {r['lml']} |")
    if ep:
        with contextlib.nullcontext() if threads is None else _threads(threads):
            ep_vs_laplace(n)
    return rows


def _threads(n):
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=n)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--n-large", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--repeats-large", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--restarts-large", type=int, default=2,
                        help="also time the large fit with this many restarts (0: skip)")
    parser.add_argument("--ep-only", action="store_true", help="only the rows of gpc_ep against gpc_laplace")
    args = parser.parse_args()
    if args.ep_only:
        result = ep_vs_laplace(args.n)
        print(f"<!-- runs {result['runs']} -->")
    else:
        rows = main(args.n, args.n_large, args.repeats, args.repeats_large, args.threads, args.restarts_large)
        for r in rows:
            print(f"<!-- {r['task']}: runs {r['runs']} -->")
