"""blrlib: the library of the Bayesian logistic regression course book.

A flat public API; each function's docstring names the chapter and equation
that define it.  ``blrlib.datasets`` holds the data sets and
``blrlib.plotting`` (the only module that imports matplotlib) the shared figures.
"""

from . import datasets
from .evidence import EvidenceFit, maximize_evidence
from .gp_elliptical import GPCSamples, gpc_elliptical_slice, gpc_predict_samples
from .gp_ep import GPCEP, gpc_ep
from .gp_gibbs import gibbs_gpc
from .gp_hyperparameters import gpc_log_marginal_likelihood
from .gp_laplace import GPCLaplace, gpc_laplace
from .gp_multiclass import (
    GPCLaplaceMulticlass,
    GPCMulticlassPrediction,
    gpc_laplace_multiclass,
    gpc_predict_multiclass,
)
from .gp_predict import GPCPrediction, gpc_predict
from .gp_sparse import GPCSparse, gpc_svgp, gpc_svgp_predict, random_fourier_features
from .gp_vi import GPCVariational, gpc_vi
from .gp_regression import GPRPosterior, GPRPrediction, gpr_posterior, gpr_predict
from .kernels import linear_kernel, polynomial_kernel, rbf_kernel
from .laplace import LaplacePosterior, laplace_posterior
from .logistic import (
    add_intercept,
    gradient,
    hessian,
    log_likelihood,
    log_posterior,
    log_sigmoid,
    logit,
    sigmoid,
)
from .optimize import ConvergenceWarning, FitResult, gradient_ascent, irls
from .predictive import (
    expected_sigmoid,
    latent_moments,
    predict_mc,
    predict_plugin,
    predict_probit,
    predict_quadrature,
    probit_kappa,
)
from .ridge import kernel_ridge, ridge_primal
from .softmax_regression import (
    log_softmax,
    softmax,
    softmax_gradient,
    softmax_hessian,
    softmax_irls,
    softmax_log_likelihood,
    softmax_log_posterior,
)
from .softmax_posterior import SoftmaxLaplace, softmax_laplace, softmax_predict
from .sampling import (
    PosteriorSamples,
    effective_sample_size,
    gibbs_logistic,
    log_evidence_is,
    pareto_khat,
    predict_samples,
    sample_polya_gamma,
    split_rhat,
)
from .variational import VariationalPosterior, vi_logistic

__version__ = "0.1.0"


# The scikit-learn estimators need scikit-learn (the extra ``blrlib[sklearn]``); they are
# imported on first use, so that the functional API needs only numpy and scipy.
_ESTIMATORS = {"BayesianLogisticRegression": ".bayesian_logistic", "GPClassifier": ".gp_classifier"}


def __getattr__(name):
    """Import ``blrlib.plotting`` (and with it matplotlib) and the scikit-learn estimators
    (and with them scikit-learn) on first use only."""
    import importlib

    if name == "plotting":
        return importlib.import_module(".plotting", __name__)
    if name in _ESTIMATORS:
        try:
            module = importlib.import_module(_ESTIMATORS[name], __name__)
        except ImportError as exc:
            raise ImportError(
                f"blrlib.{name} is a scikit-learn estimator and needs scikit-learn: "
                f"pip install 'blrlib[sklearn]' ({exc})"
            ) from exc
        return getattr(module, name)
    raise AttributeError(f"module 'blrlib' has no attribute {name!r}")


__all__ = [
    "BayesianLogisticRegression",
    "ConvergenceWarning",
    "EvidenceFit",
    "FitResult",
    "GPCEP",
    "GPCLaplace",
    "GPCLaplaceMulticlass",
    "GPCMulticlassPrediction",
    "GPCPrediction",
    "GPCSamples",
    "GPCSparse",
    "GPCVariational",
    "GPClassifier",
    "GPRPosterior",
    "GPRPrediction",
    "LaplacePosterior",
    "PosteriorSamples",
    "VariationalPosterior",
    "add_intercept",
    "datasets",
    "effective_sample_size",
    "expected_sigmoid",
    "gpc_elliptical_slice",
    "gpc_ep",
    "gpc_laplace",
    "gpc_laplace_multiclass",
    "gpc_predict_multiclass",
    "gpc_log_marginal_likelihood",
    "gpc_predict",
    "gpc_predict_samples",
    "gpc_svgp",
    "gpc_svgp_predict",
    "gpc_vi",
    "gpr_posterior",
    "gpr_predict",
    "gradient",
    "gibbs_gpc",
    "gibbs_logistic",
    "gradient_ascent",
    "hessian",
    "irls",
    "kernel_ridge",
    "laplace_posterior",
    "latent_moments",
    "linear_kernel",
    "log_evidence_is",
    "log_likelihood",
    "log_posterior",
    "log_sigmoid",
    "logit",
    "maximize_evidence",
    "pareto_khat",
    "polynomial_kernel",
    "predict_mc",
    "predict_plugin",
    "predict_probit",
    "predict_quadrature",
    "predict_samples",
    "probit_kappa",
    "random_fourier_features",
    "rbf_kernel",
    "ridge_primal",
    "SoftmaxLaplace",
    "log_softmax",
    "sample_polya_gamma",
    "sigmoid",
    "softmax",
    "softmax_gradient",
    "softmax_hessian",
    "softmax_irls",
    "softmax_laplace",
    "softmax_log_likelihood",
    "softmax_log_posterior",
    "softmax_predict",
    "split_rhat",
    "vi_logistic",
]
