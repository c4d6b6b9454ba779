"""Smoke test of the benchmarks (bench/): they run, and the compared solvers agree.

Timings are not checked here (machines are shared and noisy); `make bench` reports them.
"""

import pathlib
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def bench_modules():
    sys.path.insert(0, str(BENCH))
    try:
        import bench_gp
        import bench_logistic

        yield bench_logistic, bench_gp
    finally:
        sys.path.remove(str(BENCH))


def test_logistic_benchmark_solvers_agree(bench_modules, capsys):
    bench_logistic, _ = bench_modules
    rows = bench_logistic.compare(n=5_000, d=5, repeats=1)
    assert [r[1] for r in rows] == ["blrlib.irls", "statsmodels Logit (newton)", "sklearn newton-cholesky"]
    assert all(gap < 1e-6 for *_, gap in rows)
    print(bench_logistic.table(rows))
    assert "| n=5,000, d=5 | blrlib.irls |" in capsys.readouterr().out


def test_gp_benchmark_runs_and_reaches_sklearns_optimum(bench_modules, capsys):
    _, bench_gp = bench_modules
    rows = bench_gp.main(n=150, n_large=200, repeats=1, restarts_large=1)
    out = capsys.readouterr().out
    assert len(rows) == 4 and out.count("\n| ") == 5  # header and four rows
    for row in rows[:2]:
        ours, theirs = (float(v) for v in row["lml"].split(" / "))
        assert ours == pytest.approx(theirs, abs=1e-5)
    assert "0 restarts" in rows[2]["task"] and "1 restart " in rows[3]["task"]
