r"""Fast Newton steps for multi-class GP classification: conjugate gradients on the nC system.

The exact step of Rasmussen & Williams' Alg. 3.3 (:mod:`blrlib.gp_multiclass`) costs C
Cholesky factorisations and inverses of n x n matrices plus one more, about
:math:`(C + 1/3) n^3` flops per Newton iteration.  Here the same step is computed from
matrix products with K only.  With the gradient :math:`\mathbf g = \mathbf y - \boldsymbol\pi
- \mathbf a` of :math:`\Psi` at a consistent pair :math:`(\mathbf a, \mathbf f = \mathcal K
\mathbf a)` and :math:`S = W^{1/2}` (the symmetric square root of :math:`W = D - \Pi\Pi^\top`,
a C x C block per input), the Newton step is

.. math:: \Delta\mathbf a = (I + W \mathcal K)^{-1} \mathbf g
          = \mathbf g - S B^{-1} S \mathcal K \mathbf g, \qquad B = I + S \mathcal K S,

and :math:`B \mathbf x = S \mathcal K \mathbf g` is solved by preconditioned conjugate
gradients.  The preconditioner replaces K by its pivoted-Cholesky approximation
:math:`V V^\top + \operatorname{diag}(\mathbf d)` (:func:`blrlib._gp_lowrank.pivoted_cholesky`),
which makes :math:`B \approx G + U U^\top` with :math:`G` block diagonal (one C x C block
:math:`I + d_i W_i` per input) and :math:`U = S (I_C \otimes V)`: the Woodbury identity
inverts it with one (rC) x (rC) factorisation per Newton step.  The mode search confirms
convergence with an exact step, so what it returns is the textbook algorithm's.
"""

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from ._gp_lowrank import CG_RANK, CG_RTOL, pcg, pivoted_cholesky

CG_MAX_ITER = 200  # per Newton step; CG stopping later means the preconditioner does not suit K


class CGMulticlassSteps:
    """Newton steps of Alg. 3.3 by preconditioned CG; ``None`` when CG does not converge."""

    def __init__(self, K, Y):
        self.K, self.Y = K, Y
        self.V, self.d = pivoted_cholesky(K, CG_RANK)
        self.max_iter = CG_MAX_ITER if self.V.shape[1] else 0

    def step(self, a, f, pi):
        """The full Newton step from the consistent pair (a, f = K a): new (a, f), or None."""
        if not self.max_iter:
            return None
        n, C = f.shape
        # the symmetric square root of W_i = diag(pi_i) - pi_i pi_i^T, input by input
        lam, Q = np.linalg.eigh(np.einsum("ic,cd->icd", pi, np.eye(C)) - pi[:, :, None] * pi[:, None, :])
        lam = np.maximum(lam, 0.0)

        def by_blocks(values, v):  # v -> Q diag(values) Q^T v, for every input
            t = np.einsum("ied,ie->id", Q, v) * values
            return np.einsum("icd,id->ic", Q, t)

        root = np.sqrt(lam)
        K, V = self.K, self.V
        g = self.Y - pi - a
        rhs = by_blocks(root, K @ g)

        def apply_B(v):
            v = v.reshape(n, C)
            return (v + by_blocks(root, K @ by_blocks(root, v))).ravel()

        # preconditioner: G^-1 per input, and the Woodbury core I + U^T G^-1 U
        g_inv = 1.0 / (1.0 + self.d[:, None] * lam)
        T = np.einsum("icd,ied->ice", Q * (lam * g_inv)[:, None, :], Q)  # S G^-1 S per input
        r = V.shape[1]
        core = np.empty((C, r, C, r))
        for c in range(C):
            for e in range(c, C):
                block = V.T @ (T[:, c, e, None] * V)
                core[c, :, e, :] = block
                core[e, :, c, :] = block.T
        core = core.reshape(C * r, C * r)
        core[np.diag_indices_from(core)] += 1.0
        core_factor = cho_factor(core, lower=True, check_finite=False)

        def precondition(v):
            v = v.reshape(n, C)
            w = by_blocks(g_inv, v)  # G^-1 v
            z = (V.T @ by_blocks(root, w)).T.ravel()  # U^T G^-1 v, class-major (C, r)
            z = cho_solve(core_factor, z, check_finite=False).reshape(C, r).T
            return (w - by_blocks(g_inv, by_blocks(root, V @ z))).ravel()

        x = pcg(apply_B, rhs.ravel(), precondition, CG_RTOL, self.max_iter)
        if x is None:
            self.max_iter = 0  # exact steps from now on
            return None
        a_new = a + g - by_blocks(root, x.reshape(n, C))
        return a_new, K @ a_new
