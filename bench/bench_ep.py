"""Benchmark: ``GPClassifier(inference="ep")`` against ``GPClassifier(inference="laplace")``.

Issue 17's target: the EP fit, hyperparameters learned as ``GPClassifier`` learns them,
within 10x the Laplace fit on the same data, at n = 150 and n = 1000, including data on
which the signal variance runs to its upper bound.  Two data sets per size:

* ``two_moons(n, noise=0.3, seed=0)``: the hyperparameters end inside their bounds;
* ``separable(n, seed=0)``: linearly separable, so the EP marginal likelihood keeps rising
  with the signal variance, which ends at its bound 1e5 (the slow case of issue 17).

Both fits start from variance 1 and length scale 1 with no restarts (``n_restarts=0``) and
the default bounds (1e-5, 1e5); each row checks the learned hyperparameters and marginal
likelihood it reports.  Runs of the two methods are interleaved and repeated; the table
reports the medians of the CPU time of the process (``time.process_time``, one BLAS thread
through threadpoolctl) and of the wall-clock time, and the ratio EP / Laplace of the CPU
medians, all from the same run.

Run from the repository root, with one thread::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/bench_ep.py
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/bench_ep.py --sizes 150 --repeats 3
"""

import argparse
import os
import statistics
import time
import warnings


def _data(name, n):
    from blrlib import datasets

    if name == "two moons":
        return datasets.two_moons(n, noise=0.3, seed=0)
    return datasets.separable(n, seed=0)[:2]


def _fit(inference, X, y):
    from blrlib import GPClassifier

    clf = GPClassifier(1.0, 1.0, inference=inference, n_restarts=0, random_state=0)
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the separable data put the variance on its bound
        clf.fit(X, y)
    return time.perf_counter() - t0, time.process_time() - c0, clf


def main(sizes=(150, 1000), repeats=3, repeats_large=1, data=("two moons", "separable")):
    """Print a markdown table; return its rows as dicts."""
    from threadpoolctl import threadpool_limits

    import blrlib  # noqa: F401  load BLAS before limiting its threads

    rows = []
    with threadpool_limits(limits=1):
        for n in sizes:
            for name in data:
                X, y = _data(name, n)
                runs = {"laplace": [], "ep": []}
                fits = {}
                for r in range(repeats if n <= 200 else repeats_large):
                    order = ["laplace", "ep"] if r % 2 == 0 else ["ep", "laplace"]
                    for inference in order:
                        wall, cpu, fits[inference] = _fit(inference, X, y)
                        runs[inference].append((wall, cpu))
                med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                       for k, v in runs.items()}
                rows.append({"data": name, "n": n, "median": med, "runs": runs, "fits": fits,
                             "ratio": med["ep"][1] / med["laplace"][1]})
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nGPClassifier fit, EP against Laplace (one BLAS thread, no restarts; medians of "
          f"{repeats} interleaved repeats at n <= 200, {repeats_large} above; load average at "
          f"the end {load:.1f})\n")
    print("| data | n | Laplace CPU (s) | EP CPU (s) | EP / Laplace (CPU) | Laplace wall (s) | EP wall (s) "
          "| learned variance, length scale (Laplace; EP) | log ML (Laplace; EP) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        lap, ep = r["fits"]["laplace"], r["fits"]["ep"]
        (lw, lc), (ew, ec) = r["median"]["laplace"], r["median"]["ep"]
        print(f"| {r['data']} | {r['n']} | {lc:.3f} | {ec:.3f} | {r['ratio']:.1f} | {lw:.3f} | {ew:.3f} | "
              f"{lap.variance_:.4g}, {lap.lengthscale_:.4g}; {ep.variance_:.4g}, {ep.lengthscale_:.4g} | "
              f"{lap.log_marginal_likelihood_:.6f}; {ep.log_marginal_likelihood_:.6f} |")
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[150, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--repeats-large", type=int, default=1)
    args = parser.parse_args()
    result = main(tuple(args.sizes), args.repeats, args.repeats_large)
    for r in result:
        print(f"<!-- {r['data']}, n = {r['n']}: runs (wall, CPU) {r['runs']} -->")
