"""Input checks for blrlib's public functions.

The checks that more than one entry point needs live here: arrays and their shapes,
labels, weight vectors, scalars and per-weight prior precisions, probabilities,
integers, callbacks, random generators, kernel matrices, degrees of freedom and the
(centre, scale matrix) pairs of proposal distributions.  Public functions call
them before any computation, so that bad input meets the same clear message wherever
it enters; the message names what was expected and what arrived.  Internal helpers
trust their inputs.

Two kinds of error are raised elsewhere, in the same style: conditions that only
the computation can discover (a singular matrix met while solving, as in
:func:`~blrlib.irls` or :func:`~blrlib.ridge_primal`; a posterior mode that does not
exist, as in :func:`~blrlib.laplace_posterior`), and checks of one function's own
options (a ``method`` name, the type of a fitted result, the shape of ``cov`` in
:func:`~blrlib.datasets.two_gaussians`, the hyperparameter bounds of
:class:`~blrlib.GPClassifier`).
"""

import numbers

import numpy as np

__all__ = [
    "as_matrix",
    "as_labels",
    "as_class_labels",
    "as_weights",
    "as_vector",
    "check_nonnegative",
    "check_positive",
    "as_targets",
    "as_kernel_matrix",
    "as_matrix_pair",
    "as_test_kernels",
    "check_int",
    "as_rng",
    "as_prior_precision",
    "as_probabilities",
    "as_callback",
    "as_gaussian_scale",
    "check_degrees_of_freedom",
]


def _describe(x):
    """Short description of a value for error messages."""
    arr = np.asarray(x)
    return f"{type(x).__name__} with shape {arr.shape} and dtype {arr.dtype}"


def _as_float_array(x, name):
    if isinstance(x, str | bytes):
        raise TypeError(f"{name} must be array-like of numbers, got a {type(x).__name__}")
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be array-like of numbers, got {type(x).__name__}: {exc}") from None
    return arr


def _check_finite(arr, name):
    if not np.all(np.isfinite(arr)):
        if arr.ndim == 0:
            raise ValueError(f"{name} must be a finite number, got {arr[()]}")
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"{name} must contain only finite numbers, got {arr[tuple(bad)]} at index {tuple(int(i) for i in bad)}"
        )


def as_matrix(X, name="X"):
    """Return ``X`` as a finite float array of shape (n, d) with n, d >= 1."""
    arr = _as_float_array(X, name)
    if arr.ndim != 2:
        hint = " (use X.reshape(-1, 1) for a single feature)" if arr.ndim == 1 else ""
        raise ValueError(f"{name} must be 2-D with shape (n, d), got ndim={arr.ndim} and shape {arr.shape}{hint}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: expected at least one row, got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has no columns: expected shape (n, d) with d >= 1, got {arr.shape}")
    _check_finite(arr, name)
    return arr


def as_vector(x, name, length=None):
    """Return ``x`` as a finite 1-D float array, optionally of a given length."""
    arr = _as_float_array(x, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got ndim={arr.ndim} and shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} must have length {length}, got length {arr.shape[0]}")
    _check_finite(arr, name)
    return arr


def _label_vector(y, n, name, against, expected):
    """``y`` as a finite 1-D float array of ``n`` labels (booleans as 0/1), or a clear error
    naming ``expected`` (what kind of labels the caller takes)."""
    if isinstance(y, str | bytes):
        raise TypeError(f"{name} must be an array of {expected}, got a {type(y).__name__}")
    raw = np.asarray(y)
    if raw.dtype == bool:
        raw = raw.astype(float)
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of {expected}, got {_describe(y)}")
    arr = raw.astype(float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D with shape (n,), got ndim={arr.ndim} and shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: expected at least one label")
    _check_finite(arr, name)
    if n is not None and arr.shape[0] != n:
        raise ValueError(
            f"{against} and {name} have different lengths: {against} has {n} rows, {name} has {arr.shape[0]} entries"
        )
    return arr


def as_labels(y, n=None, name="y", against="X"):
    """Return labels as a float array of 0s and 1s, of length ``n`` if given.

    ``against`` names the array whose ``n`` rows the labels must match (``X``, or
    ``K`` for a kernel matrix).

    Labels must be in {0, 1}.  Labels in {-1, +1} are rejected with a hint,
    because silently mapping them would hide a modelling mistake.
    """
    arr = _label_vector(y, n, name, against, "0/1 labels")
    values = np.unique(arr)
    if not np.all(np.isin(values, (0.0, 1.0))):
        shown = ", ".join(f"{v:g}" for v in values[:6]) + (", ..." if values.size > 6 else "")
        if np.all(np.isin(values, (-1.0, 1.0))):
            raise ValueError(
                f"{name} must contain labels in {{0, 1}}, got labels in {{-1, +1}}; "
                f"convert them with y01 = (y + 1) // 2"
            )
        raise ValueError(f"{name} must contain labels in {{0, 1}}, got values {{{shown}}}")
    return arr


def as_class_labels(y, n=None, name="y", against="X", n_classes=None):
    """Return ``(labels, K)``: class labels 0..K-1 as an int array, and K >= 2.

    The labels of the multi-class functions (chapter 13): integers (or floats with
    integer values) from 0 to K - 1.  K, the number of classes, is ``n_classes`` when
    given (e.g. the columns of a weight matrix) and otherwise one more than the largest
    label.  ``against`` names the array whose ``n`` rows they must match.
    """
    arr = _label_vector(y, n, name, against, "class labels 0..K-1")
    bad = (arr < 0) | (arr != np.round(arr))
    if np.any(bad):
        values = np.unique(arr[bad])
        shown = ", ".join(f"{v:g}" for v in values[:6]) + (", ..." if values.size > 6 else "")
        raise ValueError(f"{name} must contain class labels 0, 1, ..., K-1 (integers >= 0), got values {{{shown}}}")
    labels = arr.astype(np.intp)
    if n_classes is not None:
        if int(labels.max()) >= n_classes:
            raise ValueError(
                f"{name} must contain class labels 0..{n_classes - 1} ({n_classes} classes), "
                f"got the label {int(labels.max())}"
            )
        return labels, n_classes
    n_classes = int(labels.max()) + 1
    if n_classes < 2:
        raise ValueError(f"{name} must contain class labels 0..K-1 with K >= 2, got only the label 0")
    return labels, n_classes


def as_weights(w, d, name="w"):
    """Return a weight vector of length ``d`` matching the columns of X."""
    arr = _as_float_array(w, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D with shape ({d},), got ndim={arr.ndim} and shape {arr.shape}")
    if arr.shape[0] != d:
        raise ValueError(f"{name} has length {arr.shape[0]} but X has {d} columns; they must match")
    _check_finite(arr, name)
    return arr


def _as_scalar(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real | np.ndarray):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    arr = np.asarray(value, dtype=float)
    if arr.ndim != 0:
        raise TypeError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    value = float(arr)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def check_nonnegative(value, name):
    """Return ``value`` as a float, raising unless it is a finite number >= 0."""
    value = _as_scalar(value, name)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value:g}")
    return value


def check_positive(value, name):
    """Return ``value`` as a float, raising unless it is a finite number > 0."""
    value = _as_scalar(value, name)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value:g}")
    return value


def as_prior_precision(value, d, name="prior_precision"):
    r"""Return the prior precision as a float >= 0, or as a length-``d`` array of entries >= 0.

    A scalar :math:`\lambda` is the prior :math:`\mathcal N(0, \lambda^{-1} I)`; a vector
    :math:`(\lambda_1, \dots, \lambda_d)` is :math:`\mathcal N(0, \Lambda^{-1})` with
    :math:`\Lambda = \operatorname{diag}(\lambda_j)`, one precision per column of ``X``.
    A zero entry puts a flat prior on its weight.  A vector comes back as a read-only copy.
    """
    if np.ndim(value) == 0:
        return check_nonnegative(value, name)
    arr = _as_float_array(value, name)
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a number or a 1-D array of {d} per-weight precisions, "
            f"got ndim={arr.ndim} and shape {arr.shape}"
        )
    if arr.shape[0] != d:
        raise ValueError(f"{name} has length {arr.shape[0]} but X has {d} columns; give one precision per column")
    _check_finite(arr, name)
    if np.any(arr < 0):
        j = int(np.argmax(arr < 0))
        raise ValueError(f"{name} must be >= 0 in every entry, got {arr[j]:g} at index {j}")
    arr = arr.copy()
    arr.flags.writeable = False
    return arr


def as_probabilities(p, name="p"):
    """Return ``p`` as a float array (0-d for a scalar) of values in [0, 1]."""
    arr = _as_float_array(p, name)
    bad = np.isnan(arr) | (arr < 0) | (arr > 1)
    if np.any(bad):
        raise ValueError(f"{name} must hold probabilities in [0, 1], got {arr[bad].ravel()[0]}")
    return arr


def as_callback(callback, name="callback"):
    """Return ``callback`` unchanged if it is None or callable, else raise a TypeError."""
    if callback is not None and not callable(callback):
        raise TypeError(f"{name} must be a function callback(w, t) or None, got {type(callback).__name__}")
    return callback


def check_int(value, name, minimum=1):
    """Return ``value`` as an int, raising unless it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_chain_counts(n_samples, n_warmup, n_chains):
    """The sample, warm-up and chain counts of an MCMC run (``gibbs_logistic``,
    ``gpc_elliptical_slice``); ``n_samples`` >= 4 so that split R-hat has two halves of at
    least two draws."""
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    if n_samples < 4:
        raise ValueError(
            f"n_samples must be >= 4 (split R-hat needs two halves of at least two draws), got {n_samples}"
        )
    n_warmup = check_int(n_warmup, "n_warmup", minimum=0)
    n_chains = check_int(n_chains, "n_chains", minimum=1)
    return n_samples, n_warmup, n_chains


def as_rng(rng):
    """Return a ``numpy.random.Generator`` from a Generator, an int seed or None (seed 0)."""
    if rng is None:
        return np.random.default_rng(0)
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"rng must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}")


def as_targets(y, n, name="y", rows_name="X"):
    """Return real-valued regression targets as a finite 1-D float array of length ``n``."""
    arr = _as_float_array(y, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D with shape (n,), got ndim={arr.ndim} and shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(
            f"{rows_name} and {name} have different lengths: {rows_name} has {n} rows, {name} has {arr.shape[0]} entries"
        )
    _check_finite(arr, name)
    return arr


def as_kernel_matrix(K, name="K", rtol=1e-8):
    """Return ``K`` as a finite, square, symmetric float array of shape (n, n) with n >= 1.

    Symmetry is checked up to ``rtol`` times the largest absolute entry, so that
    round-off in a kernel computed elsewhere is accepted.  Positive
    semi-definiteness would cost a factorisation; its cheap necessary condition,
    a diagonal k(x, x) >= 0, is checked.
    """
    arr = _as_float_array(K, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D square matrix of shape (n, n), got ndim={arr.ndim} and shape {arr.shape}")
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be square with shape (n, n), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: expected shape (n, n) with n >= 1, got {arr.shape}")
    _check_finite(arr, name)
    scale = float(np.max(np.abs(arr)))
    asym = float(np.max(np.abs(arr - arr.T)))
    if asym > rtol * scale:
        raise ValueError(
            f"{name} must be symmetric, got max |{name} - {name}.T| = {asym:.3g} "
            f"(largest entry {scale:.3g})"
        )
    diag = np.diag(arr)
    if np.any(diag < 0):
        i = int(np.argmin(diag))
        raise ValueError(
            f"{name} must be positive semi-definite, so its diagonal must be >= 0, "
            f"got {name}[{i}, {i}] = {diag[i]:.3g}"
        )
    return arr


def as_matrix_pair(X1, X2, names=("X1", "X2")):
    """Validate two input matrices that must share their number of columns.

    ``X2=None`` means ``X2 = X1``; the second return value is then ``None``.
    """
    X1 = as_matrix(X1, names[0])
    if X2 is None:
        return X1, None
    X2 = as_matrix(X2, names[1])
    if X2.shape[1] != X1.shape[1]:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same number of columns, "
            f"got {X1.shape[1]} and {X2.shape[1]}"
        )
    return X1, X2


def as_test_kernels(K_star, k_star_star, n):
    """Validate the kernel values of m test points against ``n`` training points.

    ``K_star`` (m, n) holds k(x*_i, x_j), ``k_star_star`` (m,) the prior variances
    k(x*_i, x*_i) >= 0.
    """
    K_star = as_matrix(K_star, "K_star")
    if K_star.shape[1] != n:
        raise ValueError(
            f"K_star must have shape (m, {n}) (test points x {n} training points), got shape {K_star.shape}"
        )
    k_star_star = as_vector(k_star_star, "k_star_star", length=K_star.shape[0])
    if np.any(k_star_star < 0):
        raise ValueError(f"k_star_star must be >= 0 (prior variances), got {k_star_star.min():g}")
    return K_star, k_star_star


def check_degrees_of_freedom(value, name="df"):
    """Return ``value`` as a float > 0; ``inf`` (a Gaussian's limit) is allowed."""
    is_real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if is_real and value == np.inf:
        return np.inf
    return check_positive(value, name)


def as_gaussian_scale(pair, d, name="proposal"):
    """Validate a pair ``(mean, cov)`` of a centre (d,) and an SPD scale matrix (d, d).

    Returns the centre as a float array and the lower Cholesky factor of ``cov``;
    ``cov`` itself is factorised as given (no symmetrisation), so that a pair taken
    from a fitted result gives the factor that the fit's own matrix gives.
    """
    if not isinstance(pair, tuple | list) or len(pair) != 2:
        is_seq = isinstance(pair, tuple | list)
        got = f"length {len(pair)}" if is_seq else type(pair).__name__
        raise TypeError(f"{name} must be a pair (mean, cov) or None, got {got}")
    mean = as_vector(pair[0], f"{name} mean", length=d)
    cov = as_kernel_matrix(pair[1], f"{name} cov")
    if cov.shape != (d, d):
        raise ValueError(
            f"{name} cov must have shape ({d}, {d}), got shape {cov.shape}"
        )
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"{name} cov must be symmetric positive definite, got a matrix whose "
            f"Cholesky factorisation fails (smallest eigenvalue "
            f"{np.linalg.eigvalsh(cov)[0]:.3g})"
        ) from None
    return mean, chol
