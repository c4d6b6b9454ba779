"""scikit-learn is an optional extra (``blrlib[sklearn]``): ``import blrlib`` and the functional API
work without it; the estimators say how to install it (issue 17)."""

import subprocess
import sys
import textwrap

# A meta-path finder that refuses scikit-learn, as if it were not installed.
_BLOCK = textwrap.dedent(
    """
    import sys

    class _NoSklearn:
        def find_spec(self, name, path=None, target=None):
            if name == "sklearn" or name.startswith("sklearn."):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
            return None

    sys.meta_path.insert(0, _NoSklearn())
    """
)


def _run(code):
    return subprocess.run([sys.executable, "-c", _BLOCK + textwrap.dedent(code)], check=False, capture_output=True,
                          text=True, timeout=300)


def test_functional_api_without_sklearn():
    run = _run(
        """
        import numpy as np
        import blrlib
        from blrlib import datasets, laplace_posterior, maximize_evidence, predict_quadrature
        X, y, _ = datasets.spector()
        X1 = blrlib.add_intercept(X)
        post = laplace_posterior(X1, y, maximize_evidence(X1, y).prior_precision)
        assert predict_quadrature(post, X1).shape == (32,)
        assert "sklearn" not in sys.modules
        print("ok")
        """
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"


def test_estimators_say_how_to_install_sklearn():
    for name in ("BayesianLogisticRegression", "GPClassifier"):
        run = _run(
            f"""
            import blrlib
            try:
                blrlib.{name}
            except ImportError as exc:
                print(exc)
            """
        )
        assert run.returncode == 0, run.stderr
        assert f"blrlib.{name} is a scikit-learn estimator and needs scikit-learn: " in run.stdout
        assert "pip install 'blrlib[sklearn]'" in run.stdout
