"""Figures the chapters share: data, decision boundaries, probability and posterior contours.

The only blrlib module that imports matplotlib.  Colours come from the
Okabe-Ito palette, which stays distinguishable under the common forms of colour
blindness; figures get a white background so that they stay readable when the
website is shown in dark mode.

Book: used from chapter 1 on; the sampled boundaries appear in chapter 6.
"""

import matplotlib.pyplot as plt
import numpy as np

from ._validation import as_labels, as_matrix, as_rng, as_vector, check_int

__all__ = [
    "COLORS",
    "CLASS_COLORS",
    "use_book_style",
    "grid",
    "plot_data",
    "plot_decision_boundary",
    "plot_probability_contours",
    "plot_posterior_contours",
    "plot_sampled_boundaries",
]

#: Okabe-Ito colours by name.
COLORS = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "vermillion": "#D55E00",
    "green": "#009E73",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
}
#: Colours of class 0 and class 1.
CLASS_COLORS = (COLORS["blue"], COLORS["vermillion"])
_MARKERS = ("o", "s")


def use_book_style():
    """Set matplotlib defaults for the book: white background, the palette, readable sizes."""
    plt.rcParams.update({
        "figure.facecolor": "white",
        "axes.facecolor": "white",
        "savefig.facecolor": "white",
        "figure.dpi": 100,
        "axes.prop_cycle": plt.cycler(color=[COLORS[k] for k in
                                             ("blue", "vermillion", "green", "orange", "purple", "sky", "black")]),
        "axes.grid": False,
        "font.size": 12,
        "axes.titlesize": 12,
        "legend.frameon": False,
    })


def grid(X, n=200, pad=0.5):
    """A regular grid covering the rows of ``X`` (2 features) with a margin.

    Returns
    -------
    x1, x2 : ndarray of shape (n, n)
        Mesh coordinates, for ``contour``.
    points : ndarray of shape (n * n, 2)
        The grid points as rows, for prediction.

    Examples
    --------
    >>> x1, x2, pts = grid(np.array([[0.0, 0.0], [1.0, 1.0]]), n=3, pad=0.0)
    >>> pts.shape
    (9, 2)
    """
    X = as_matrix(X)
    if X.shape[1] != 2:
        raise ValueError(f"grid needs X with 2 columns, got {X.shape[1]}")
    n = check_int(n, "n", minimum=2)
    lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
    x1, x2 = np.meshgrid(np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n))
    return x1, x2, np.column_stack([x1.ravel(), x2.ravel()])


def plot_data(ax, X, y, labels=("y = 0", "y = 1"), **kwargs):
    """Scatter two features of ``X`` coloured and shaped by class."""
    X = as_matrix(X)
    y = as_labels(y, n=X.shape[0])
    for k in (0, 1):
        sel = y == k
        ax.scatter(X[sel, 0], X[sel, 1], c=CLASS_COLORS[k], marker=_MARKERS[k], s=kwargs.get("s", 22),
                   edgecolors="white", linewidths=0.5, label=labels[k], zorder=3)
    ax.set_xlabel(kwargs.get("xlabel", "$x_1$"))
    ax.set_ylabel(kwargs.get("ylabel", "$x_2$"))
    return ax


def _boundary_line(w, xlim):
    """Points of the line w0 + w1 x1 + w2 x2 = 0 over xlim (intercept first)."""
    x1 = np.linspace(*xlim, 2)
    if abs(w[2]) < 1e-12 * max(1.0, np.max(np.abs(w))):
        return np.full(2, -w[0] / w[1]), np.array([-1e6, 1e6])
    return x1, -(w[0] + w[1] * x1) / w[2]


def plot_decision_boundary(ax, w, xlim=None, **kwargs):
    r"""Draw the line :math:`w_0 + w_1 x_1 + w_2 x_2 = 0` (where :math:`p = 1/2`).

    ``w`` has the intercept first, as produced by fitting on ``add_intercept(X)``.
    """
    w = as_vector(w, "w", length=3)
    xlim = ax.get_xlim() if xlim is None else xlim
    ylim = ax.get_ylim()
    kwargs.setdefault("color", COLORS["black"])
    line = ax.plot(*_boundary_line(w, xlim), **kwargs)
    ax.set_xlim(xlim)
    ax.set_ylim(ylim)
    return line


def plot_probability_contours(ax, predict, X, levels=(0.1, 0.25, 0.5, 0.75, 0.9), n=150, pad=0.5,
                              filled=True, colorbar=True):
    """Contours of a predicted probability over the range of ``X``.

    Parameters
    ----------
    predict : callable
        Maps an (m, 2) array of raw features (no intercept) to m probabilities.
    X : array_like of shape (n, 2)
        Sets the plotted range.
    """
    x1, x2, pts = grid(X, n=n, pad=pad)
    p = np.asarray(predict(pts)).reshape(x1.shape)
    out = None
    if filled:
        out = ax.contourf(x1, x2, p, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.35, vmin=0, vmax=1)
        if colorbar:
            ax.figure.colorbar(out, ax=ax, label=r"$p(y = 1 \mid \mathbf{x})$")
    cs = ax.contour(x1, x2, p, levels=list(levels), colors="k", linewidths=0.8)
    ax.clabel(cs, fmt="%.2f", fontsize=12)
    return out if out is not None else cs


def plot_posterior_contours(ax, log_density, xlim, ylim, n=150, levels=6, **kwargs):
    r"""Contours of a 2-D (unnormalised) log density, drawn at density levels.

    ``log_density`` maps an (m, 2) array of points to m log-density values.
    Levels are fractions of the maximum on the grid, so normalisation does not
    matter.  An integer ``levels = K`` draws the fractions
    :math:`e^{-k^2/2}`, :math:`k = 1, \dots, K`: for a Gaussian these are the
    ellipses at Mahalanobis distance 1, ..., K from the mean, so an exact
    posterior and its Laplace approximation drawn this way compare like for like.
    """
    a, b = np.meshgrid(np.linspace(*xlim, n), np.linspace(*ylim, n))
    logp = np.asarray(log_density(np.column_stack([a.ravel(), b.ravel()]))).reshape(a.shape)
    dens = np.exp(logp - logp.max())
    lv = np.exp(-0.5 * np.arange(levels, 0, -1) ** 2.0) if isinstance(levels, int) else levels
    kwargs.setdefault("colors", COLORS["blue"])
    return ax.contour(a, b, dens, levels=lv, **kwargs)


def plot_sampled_boundaries(ax, post, n_boundaries=20, rng=None, xlim=None, **kwargs):
    """Draw the decision boundaries of weights sampled from a Gaussian posterior.

    ``post`` needs ``mean`` (length 3, intercept first) and ``cov``, like a
    :class:`~blrlib.LaplacePosterior`.  Returns the sampled weights.
    """
    n_boundaries = check_int(n_boundaries, "n_boundaries")
    W = as_rng(rng).multivariate_normal(post.mean, post.cov, size=n_boundaries, method="cholesky")
    kwargs.setdefault("color", COLORS["green"])
    kwargs.setdefault("alpha", 0.5)
    kwargs.setdefault("linewidth", 1.0)
    for w in W:
        plot_decision_boundary(ax, w, xlim=xlim, **kwargs)
    return W
