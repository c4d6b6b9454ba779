r"""Anderson acceleration of a fixed-point iteration :math:`x \mapsto G(x)` (type II).

Used by the variational methods (vi_logistic and gpc_vi), whose plain fixed-point iterations (EM for
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
    """The extrapolation from the last ``memory`` differences of (x_k, G(x_k)).

    The differences are kept in two ring buffers of shape (memory, n), and the least-squares
    problem is solved through its memory-by-memory Gram matrix: each step costs
    :math:`O(mn)`, not the :math:`O(m^2 n)` with large constants of a dense least-squares
    solve of the n-by-m problem (n is the number of observations in ``vi_logistic``).

    >>> acc = Anderson(memory=3)                   # the fixed point of x -> x / 2 + 1 is 2
    >>> x = np.array([0.0])
    >>> for _ in range(3):
    ...     x = acc.step(x, x / 2 + 1)
    >>> float(x[0])
    2.0
    """

    def __init__(self, memory):
        self.memory = memory
        self._r = self._g = self._dR = self._dG = None
        self._count = self._next = 0

    def step(self, x, g):
        """Record the pair (x, G(x)) and return the extrapolated next point (g itself at first)."""
        g_new = np.array(g, dtype=float)
        r = g_new - np.asarray(x, dtype=float)
        if self._g is None or self.memory < 1:  # memory 0: the plain iteration
            self._r, self._g = r, g_new
            return g
        if self._dR is None:
            self._dR = np.empty((self.memory, r.size))
            self._dG = np.empty((self.memory, r.size))
        slot = self._next
        np.subtract(r, self._r, out=self._dR[slot])
        np.subtract(g_new, self._g, out=self._dG[slot])
        self._next = (slot + 1) % self.memory
        self._count = min(self._count + 1, self.memory)
        self._r, self._g = r, g_new
        dR, dG = self._dR[: self._count], self._dG[: self._count]
        # the normal equations with their columns scaled to unit length (the differences
        # shrink by orders of magnitude as the iteration converges; unscaled, the Gram
        # matrix loses the small ones and the extrapolation needs more iterations)
        gram, rhs = dR @ dR.T, dR @ r
        scale = 1.0 / np.sqrt(np.maximum(np.diag(gram), np.finfo(float).tiny))
        unit = np.linalg.lstsq(gram * np.outer(scale, scale), rhs * scale, rcond=1e-14)[0]
        return g_new - (scale * unit) @ dG
