"""`make bench`: every benchmark, one after the other, tables printed as markdown."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import bench_logistic  # noqa: E402

if __name__ == "__main__":
    print("## Logistic regression: IRLS\n")
    bench_logistic.main(sys.argv[1:])
    try:
        import bench_gp
    except ImportError as exc:  # the GP benchmark lands with the GP half of blrlib
        print(f"\n(GP benchmark not available: {exc})")
    else:
        print("\n## Gaussian-process classification\n")
        if "--quick" in sys.argv:
            bench_gp.main(n=300, n_large=600, repeats=1)
        else:
            bench_gp.main()
