r"""Anderson acceleration of a fixed-point iteration :math:`x \mapsto G(x)` (type II).

Used by the variational methods (chapter 12), whose plain fixed-point iterations (EM for
the Jaakkola-Jordan bound, natural-gradient steps for the variational Gaussian method)
converge linearly and sometimes slowly.  From the last few iterates :math:`x_k` and their
images :math:`G_k`, with residuals :math:`r_k = G_k - x_k`, the next point is

.. math:: x_{k+1} = G_k - \Delta G\, \boldsymbol\gamma, \qquad
          \boldsymbol\gamma = \arg\min_{\boldsymbol\gamma} \|r_k - \Delta R\, \boldsymbol\gamma\|,

with :math:`\Delta R` and :math:`\Delta G` the differences of successive residuals and
images (Walker & Ni 2011).  The callers keep an extrapolated point only when their
objective does not decrease there, so the acceleration never costs monotonicity.
"""

import numpy as np

__all__ = ["Anderson"]


class Anderson:
    """The extrapolation from the last ``memory + 1`` pairs (x_k, G(x_k))."""

    def __init__(self, memory):
        self.memory = memory
        self.xs, self.gs = [], []

    def step(self, x, g):
        """Record the pair (x, G(x)) and return the extrapolated next point (g itself at first)."""
        self.xs.append(x)
        self.gs.append(g)
        if len(self.xs) > self.memory + 1:
            self.xs.pop(0)
            self.gs.pop(0)
        if len(self.xs) < 2:
            return g
        G = np.array(self.gs)
        R = G - np.array(self.xs)
        dR, dG = np.diff(R, axis=0).T, np.diff(G, axis=0).T
        gamma = np.linalg.lstsq(dR, R[-1], rcond=1e-12)[0]
        return g - dG @ gamma
