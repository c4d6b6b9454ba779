"""`make bench`: every benchmark, one after the other, tables printed as markdown."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import bench_ep  # noqa: E402
import bench_gp  # noqa: E402
import bench_logistic  # noqa: E402
import bench_multiclass  # noqa: E402
import bench_sampling  # noqa: E402
import bench_sparse  # noqa: E402
import bench_vi  # noqa: E402

if __name__ == "__main__":
    print("## Logistic regression: IRLS\n")
    bench_logistic.main(sys.argv[1:])
    print("\n## Gaussian-process classification\n")
    if "--quick" in sys.argv:
        bench_gp.main(n=300, n_large=600, repeats=1)
    else:
        bench_gp.main()
    print("\n## GPClassifier: EP against Laplace, hyperparameters learned\n")
    if "--quick" in sys.argv:
        bench_ep.main(sizes=(150,), repeats=1)
    else:
        bench_ep.main()
    print("\n## The Polya-Gamma Gibbs sampler\n")
    bench_sampling.main(repeats=1 if "--quick" in sys.argv else 5)
    print("\n## Variational inference against the Laplace fits\n")
    bench_vi.main(sys.argv[1:])
    print("\n## Many classes: softmax regression and multi-class GP classification\n")
    bench_multiclass.main(sys.argv[1:])
    print("\n## Many points: the sparse variational GP classifier\n")
    if "--quick" in sys.argv:
        bench_sparse.main(n=1000, n_large=10_000, sizes=(50, 100))
    else:
        bench_sparse.main()
