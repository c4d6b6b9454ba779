"""Data sets used in the book: four real ones shipped as CSV files, the rest synthetic and seeded.

Book: ``spector`` in chapter 3; ``two_gaussians`` in chapter 1; ``separable`` in
chapters 2 and 4; ``circles`` in chapter 7; ``two_moons`` in chapter 9 (and the GP
benchmark); ``breast_cancer``, ``iris_versicolor_virginica`` and ``affairs`` in
chapter 10, where Laplace is measured against the exact posterior on real data.

The real data sets are read from ``blrlib/data/`` with the standard library alone
and return ``(X, y, names)``.  Every generator takes a ``seed`` (an int or a
``numpy.random.Generator``) and returns the same data for the same seed.  Features
are returned without the intercept column; use :func:`~blrlib.add_intercept`.
"""

import csv
from importlib import resources

import numpy as np

from ._validation import as_rng, as_vector, check_int, check_nonnegative, check_positive

__all__ = [
    "spector",
    "breast_cancer",
    "iris_versicolor_virginica",
    "affairs",
    "two_gaussians",
    "separable",
    "two_moons",
    "circles",
]


def _read_csv(filename):
    """Return the header and the body (as a float array) of a CSV shipped in ``blrlib/data``."""
    with resources.files("blrlib").joinpath("data", filename).open() as fh:
        rows = list(csv.reader(fh))
    return rows[0], np.array(rows[1:], dtype=float)


def spector():
    """The Spector & Mazzeo (1980) data on a new method of teaching economics.

    32 students.  ``GRADE`` (the label) is 1 if the student's grade improved
    after the course.  The features are ``GPA`` (grade point average), ``TUCE``
    (score on a pre-test of economics knowledge) and ``PSI`` (1 if taught by the
    personalised system of instruction, the new method).  Greene's
    *Econometric Analysis* uses these data for its logit and probit examples.

    Book: chapter 3.

    Returns
    -------
    X : ndarray of shape (32, 3)
        Columns ``GPA``, ``TUCE``, ``PSI`` (no intercept column).
    y : ndarray of shape (32,)
        ``GRADE`` in {0, 1}.
    names : tuple of str
        ``("GPA", "TUCE", "PSI")``.

    Examples
    --------
    >>> X, y, names = spector()
    >>> X.shape, int(y.sum()), names
    ((32, 3), 11, ('GPA', 'TUCE', 'PSI'))
    """
    header, body = _read_csv("spector.csv")
    return body[:, :3], body[:, 3], tuple(header[:3])


def breast_cancer():
    """The Wisconsin diagnostic breast cancer data (Street, Wolberg & Mangasarian 1993).

    569 fine-needle aspirates of breast masses; 30 features computed from the
    digitised image of the cell nuclei (the mean, standard error and worst value
    of ten measurements such as radius, texture and concavity).  The label is 1
    for a benign mass (357 cases) and 0 for a malignant one (212), the coding of
    scikit-learn's ``load_breast_cancer``, from which the numbers were copied.
    The features span several orders of magnitude (``mean area`` is about 650,
    ``mean fractal dimension`` about 0.06): standardise them before using an
    isotropic prior.

    Source: the UCI Machine Learning Repository, "Breast Cancer Wisconsin
    (Diagnostic)" (https://archive.ics.uci.edu/dataset/17), licence CC BY 4.0;
    copied from scikit-learn's copy, and ``tests/test_datasets.py`` checks that
    the two agree number for number.

    Book: chapter 10.

    Returns
    -------
    X : ndarray of shape (569, 30)
    y : ndarray of shape (569,)
        1 = benign, 0 = malignant.
    names : tuple of str
        The 30 feature names, as scikit-learn spells them (``"mean radius"``, ...).

    Examples
    --------
    >>> X, y, names = breast_cancer()
    >>> X.shape, int(y.sum()), names[0]
    ((569, 30), 357, 'mean radius')
    """
    header, body = _read_csv("breast_cancer.csv")
    return body[:, :30], body[:, 30], tuple(header[:30])


def iris_versicolor_virginica():
    """Fisher's (1936) iris data, the two species that no line separates.

    The 100 flowers of *Iris versicolor* (label 0) and *Iris virginica* (label 1),
    50 of each, with four measurements in centimetres.  (*Iris setosa*, the third
    species, is linearly separable from both and is left out.)  Rows are in the
    order of scikit-learn's ``load_iris``, from which the numbers were copied.

    Source: the UCI Machine Learning Repository, "Iris"
    (https://archive.ics.uci.edu/dataset/53), licence CC BY 4.0; copied from
    scikit-learn's copy (checked number for number by the tests).

    Book: chapter 10.

    Returns
    -------
    X : ndarray of shape (100, 4)
        Sepal length, sepal width, petal length, petal width (cm).
    y : ndarray of shape (100,)
        1 = virginica, 0 = versicolor.
    names : tuple of str

    Examples
    --------
    >>> X, y, names = iris_versicolor_virginica()
    >>> X.shape, int(y.sum()), names[3]
    ((100, 4), 50, 'petal width (cm)')
    """
    header, body = _read_csv("iris_versicolor_virginica.csv")
    return body[:, :4], body[:, 4], tuple(header[:4])


def affairs():
    """The Fair (1978) extramarital affairs data, as statsmodels ships it.

    6366 married women who answered a 1974 *Redbook* magazine survey.  The label
    is 1 if the woman reported any time spent in extramarital affairs
    (``affairs > 0``; 2053 of 6366) and 0 otherwise.  The eight features are
    ``rate_marriage`` (1 = very poor to 5 = very good), ``age``, ``yrs_married``,
    ``children``, ``religious`` (1 = not to 4 = strongly), ``educ`` (years),
    ``occupation`` and ``occupation_husb`` (codes 1 to 6, used as numbers as
    statsmodels' examples do).  The shipped CSV also keeps the ``affairs`` column
    itself, the measure of time spent in affairs, so the label can be checked.

    Source: Fair, R. C. (1978), "A theory of extramarital affairs", *Journal of
    Political Economy* 86(1), 45-61; the data as included in statsmodels
    (``statsmodels.api.datasets.fair``, "included with permission of the author"),
    from which the numbers were copied (checked number for number by the tests).

    Book: chapter 10.

    Returns
    -------
    X : ndarray of shape (6366, 8)
    y : ndarray of shape (6366,)
        1 if ``affairs > 0``, else 0.
    names : tuple of str

    Examples
    --------
    >>> X, y, names = affairs()
    >>> X.shape, int(y.sum()), names[0]
    ((6366, 8), 2053, 'rate_marriage')
    """
    header, body = _read_csv("affairs.csv")
    return body[:, :8], (body[:, 8] > 0).astype(float), tuple(header[:8])


def two_gaussians(n=200, *, mean0=(-1.0, 0.0), mean1=(1.0, 0.0), cov=None, prior1=0.5, seed=0):
    r"""Two Gaussian classes with a shared covariance (the generative model of chapter 1).

    Each label is drawn with :math:`p(y = 1) = \pi_1` (``prior1``), then
    :math:`\mathbf x \mid y = k \sim \mathcal N(\boldsymbol\mu_k, \Sigma)`.  For this model
    the posterior :math:`p(y = 1 \mid \mathbf x)` is exactly a sigmoid of a linear function
    of :math:`\mathbf x` (chapter 1, equation ``eq-gnb-weights``).

    Parameters
    ----------
    n : int, default 200
    mean0, mean1 : array_like of shape (d,)
        :math:`\boldsymbol\mu_0`, :math:`\boldsymbol\mu_1`.
    cov : array_like of shape (d, d), optional
        The shared covariance :math:`\Sigma`; the identity by default.
    prior1 : float, default 0.5
        :math:`\pi_1 = p(y = 1)`, in (0, 1).
    seed : int or numpy.random.Generator, default 0

    Returns
    -------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,), values in {0, 1}

    Examples
    --------
    >>> X, y = two_gaussians(5, seed=1)
    >>> X.shape, y.shape
    ((5, 2), (5,))
    """
    n = check_int(n, "n")
    mean0 = as_vector(mean0, "mean0")
    mean1 = as_vector(mean1, "mean1", length=mean0.shape[0])
    d = mean0.shape[0]
    cov = np.eye(d) if cov is None else np.asarray(cov, dtype=float)
    if cov.shape != (d, d):
        raise ValueError(f"cov must have shape ({d}, {d}) to match the means, got {cov.shape}")
    prior1 = check_positive(prior1, "prior1")
    if prior1 >= 1:
        raise ValueError(f"prior1 must be in (0, 1), got {prior1:g}")
    try:
        L = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise ValueError("cov must be symmetric positive definite") from None
    rng = as_rng(seed)
    y = (rng.random(n) < prior1).astype(float)
    means = np.where(y[:, None] == 1.0, mean1, mean0)
    X = means + rng.standard_normal((n, d)) @ L.T
    return X, y


def separable(n=40, *, d=2, margin=0.5, seed=0):
    r"""A linearly separable two-class sample in :math:`d` dimensions.

    Points are drawn from :math:`\mathcal N(0, 2^2 I)`, labelled by the side of a
    random affine hyperplane, and kept only when they lie at least ``margin``
    away from it, so the classes are separated by a gap of ``2 * margin``.

    Parameters
    ----------
    n : int, default 40
    d : int, default 2
    margin : float, default 0.5
        Half-width of the empty band around the separating hyperplane.
    seed : int or numpy.random.Generator, default 0

    Returns
    -------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,), values in {0, 1}; both classes occur.

    Examples
    --------
    >>> X, y = separable(10, seed=3)
    >>> X.shape, sorted(set(y.tolist()))
    ((10, 2), [0.0, 1.0])
    """
    n = check_int(n, "n", minimum=2)
    d = check_int(d, "d")
    margin = check_nonnegative(margin, "margin")
    rng = as_rng(seed)
    normal = rng.standard_normal(d)
    normal /= np.linalg.norm(normal)
    offset = rng.uniform(-0.5, 0.5)
    X = np.empty((0, d))
    while X.shape[0] < n:
        cand = 2.0 * rng.standard_normal((4 * n, d))
        cand = cand[np.abs(cand @ normal - offset) >= margin]
        X = np.vstack([X, cand])
    X = X[:n]
    y = (X @ normal - offset > 0).astype(float)
    if y.min() == y.max():  # guarantee both classes
        X[0] = (offset + margin + 1.0) * normal if y[0] == 0 else (offset - margin - 1.0) * normal
        y[0] = 1.0 - y[0]
    return X, y


def two_moons(n=200, *, noise=0.1, seed=0):
    """Two interleaving half circles: a classic data set no line separates.

    Parameters
    ----------
    n : int, default 200
        Total number of points, split as evenly as possible between the classes.
    noise : float, default 0.1
        Standard deviation of Gaussian noise added to each coordinate.
    seed : int or numpy.random.Generator, default 0

    Returns
    -------
    X : ndarray of shape (n, 2)
    y : ndarray of shape (n,), values in {0, 1}

    Examples
    --------
    >>> X, y = two_moons(6)
    >>> X.shape, int(y.sum())
    ((6, 2), 3)
    """
    n = check_int(n, "n", minimum=2)
    noise = check_nonnegative(noise, "noise")
    rng = as_rng(seed)
    n1 = n // 2
    n0 = n - n1
    t0 = np.linspace(0.0, np.pi, n0)
    t1 = np.linspace(0.0, np.pi, n1)
    X = np.vstack([
        np.column_stack([np.cos(t0), np.sin(t0)]),
        np.column_stack([1.0 - np.cos(t1), 0.5 - np.sin(t1)]),
    ])
    y = np.concatenate([np.zeros(n0), np.ones(n1)])
    X = X + noise * rng.standard_normal(X.shape)
    order = rng.permutation(n)
    return X[order], y[order]


def circles(n=200, *, radii=(1.0, 2.0), noise=0.15, seed=0):
    """Two concentric rings: class 0 on the inner ring, class 1 on the outer.

    Separable by the feature :math:`x_1^2 + x_2^2` but by no line (chapter 7).

    Parameters
    ----------
    n : int, default 200
    radii : (float, float), default (1.0, 2.0)
    noise : float, default 0.15
        Standard deviation of the Gaussian noise added to the radius.
    seed : int or numpy.random.Generator, default 0

    Returns
    -------
    X : ndarray of shape (n, 2)
    y : ndarray of shape (n,), values in {0, 1}

    Examples
    --------
    >>> X, y = circles(8)
    >>> X.shape
    (8, 2)
    """
    n = check_int(n, "n", minimum=2)
    r0, r1 = (check_positive(r, "radii") for r in radii)
    noise = check_nonnegative(noise, "noise")
    rng = as_rng(seed)
    y = np.arange(n) % 2
    r = np.where(y == 1, r1, r0) + noise * rng.standard_normal(n)
    theta = rng.uniform(0.0, 2.0 * np.pi, n)
    X = np.column_stack([r * np.cos(theta), r * np.sin(theta)])
    order = rng.permutation(n)
    return X[order], y[order].astype(float)
