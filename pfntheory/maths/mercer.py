"""The Mercer decomposition of the RBF kernel under a Gaussian input law (Zhu et al. 1998; R&W
Sec. 4.3.1, eqs. 4.41-4.42), as used in the proof of supp-lem:rbf kernel Gram: eigenvalues by
degree with their multiplicities, the tail sum and its bound, the truncated kernel, and the shape of
the lemma's lower bound on ``cond(G)``. Names and conventions: docs/exact-side.md#gram-spectra.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb

import numpy as np
import scipy.special

from pfntheory.base._checks import MAX_DIM, as_float_array, positive_int, positive_scalar

__all__ = ["RBFMercer", "rbf_cond_lower_shape"]


@dataclass(frozen=True)
class RBFMercer:
    """Mercer decomposition of ``kappa(x, x') = alpha^2 exp(-||x - x'||^2/(2 ell^2))`` under
    ``x ~ N(0, var I_d)`` (Zhu et al. 1998; R&W Sec. 4.3.1; proof of supp-lem:rbf kernel Gram).

    1-D: with ``1/a = 4 var``, ``1/b = 2 ell^2``, ``c = sqrt(a^2 + 2ab)``, ``A = a + b + c``,
    ``mu_i = sqrt(2a/A) (b/A)^i`` (R&W eq. 4.41). d-dim (isotropic): the eigenvalue of total degree
    ``k`` is ``alpha^2 mercer_alpha^{d/2} beta^k`` with ``mercer_alpha = 2a/A``, ``beta = b/A``, and
    multiplicity ``C(k+d-1, d-1)``.

    Parameters
    ----------
    d : int
        Input dimension.
    lengthscale : float
        ``ell`` (default 1: the paper's unit kernel).
    var : float, optional
        Per-coordinate input variance (default ``1/d``: the paper's design).
    alpha : float
        Kernel amplitude (default 1).
    """

    d: int
    lengthscale: float = 1.0
    var: float | None = None
    alpha: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "d", positive_int(self.d, "d", maximum=MAX_DIM))
        object.__setattr__(self, "lengthscale", positive_scalar(self.lengthscale, "lengthscale"))
        var = 1.0 / self.d if self.var is None else positive_scalar(self.var, "var")
        object.__setattr__(self, "var", var)
        object.__setattr__(self, "alpha", positive_scalar(self.alpha, "alpha"))

    @property
    def variance(self) -> float:
        """The per-coordinate input variance (``var``, resolved to ``1/d`` when not given)."""
        return 1.0 / self.d if self.var is None else float(self.var)

    # --- constants of R&W eq. 4.41 ---
    @property
    def a(self) -> float:
        return 1.0 / (4.0 * self.variance)  # 1/a = 4 sigma^2

    @property
    def b(self) -> float:
        return 1.0 / (2.0 * self.lengthscale**2)  # 1/b = 2 ell^2

    @property
    def c(self) -> float:
        return float(np.sqrt(self.a**2 + 2.0 * self.a * self.b))

    @property
    def A(self) -> float:
        return self.a + self.b + self.c

    @property
    def mercer_alpha(self) -> float:
        """The proof's ``alpha = 2a/(a + b + sqrt(a^2 + 2ab))``."""
        return 2.0 * self.a / self.A

    @property
    def beta(self) -> float:
        """The proof's ``beta = b/(a + b + sqrt(a^2 + 2ab))`` in (0, 1)."""
        return self.b / self.A

    # --- eigenvalues ---
    def eig_1d(self, i) -> np.ndarray:
        """1-D eigenvalues ``mu_i = sqrt(2a/A) (b/A)^i`` of the unit-amplitude kernel (R&W 4.41)."""
        i = np.asarray(i)
        if np.any(i < 0) or not np.issubdtype(i.dtype, np.integer):
            raise ValueError(f"i must be non-negative integers, got {i!r}")
        return np.sqrt(self.mercer_alpha) * self.beta ** i.astype(float)

    def eig_degree(self, k) -> np.ndarray:
        """d-dim eigenvalue of total degree ``k``: ``alpha^2 mercer_alpha^{d/2} beta^k``."""
        k = np.asarray(k)
        if np.any(k < 0) or not np.issubdtype(k.dtype, np.integer):
            raise ValueError(f"k must be non-negative integers, got {k!r}")
        return self.alpha**2 * self.mercer_alpha ** (self.d / 2.0) * self.beta ** k.astype(float)

    def multiplicity(self, k) -> np.ndarray:
        """``m_k = C(k + d - 1, d - 1)``: the number of multi-indices of total degree ``k``."""
        k = np.asarray(k)
        if np.any(k < 0) or not np.issubdtype(k.dtype, np.integer):
            raise ValueError(f"k must be non-negative integers, got {k!r}")
        return np.vectorize(lambda kk: comb(int(kk) + self.d - 1, self.d - 1), otypes=[np.int64])(k)

    def T_less(self, M: int) -> int:
        """``T_{<M} = sum_{k<M} C(k+d-1, d-1) = C(M+d-1, d)``: eigenvalues of degree below ``M``."""
        M = positive_int(M, "M", minimum=0)
        return comb(M + self.d - 1, self.d)

    def eigenvalues(self, T: int) -> np.ndarray:
        """The ``T`` largest eigenvalues, descending, each repeated by its multiplicity.
        Shape (T,)."""
        T = positive_int(T, "T")
        out: list[float] = []
        k = 0
        while len(out) < T:
            out.extend([float(self.eig_degree(k))] * int(self.multiplicity(k)))
            k += 1
        return np.asarray(out[:T])

    def max_degree_below(self, n: int) -> int:
        """The largest ``M`` with ``T_{<M} < n`` (so that ``G_{<M}`` has rank below ``n``)."""
        n = positive_int(n, "n", minimum=2)
        M = 1
        while self.T_less(M + 1) < n:
            M += 1
        return M

    def tail_sum(self, M: int) -> float:
        """Exact ``sum_{k >= M} C(k+d-1, d-1) mu^{(k)} = sum_{t > T_{<M}} mu_t``.

        Summed term by term in log space from ``k = M`` until the terms are below ``1e-17`` of the
        partial sum (the terms decrease geometrically once ``beta (1 + (d-1)/(k+1)) < 1``), which
        avoids the cancellation of ``(1-beta)^{-d} - sum_{k<M}``.
        """
        M = positive_int(M, "M", minimum=0)
        d, lb = self.d, np.log(self.beta)
        log_pref = np.log(self.alpha**2) + 0.5 * d * np.log(self.mercer_alpha)
        total, k = 0.0, M
        while True:
            log_term = (
                log_pref
                + scipy.special.gammaln(k + d)
                - scipy.special.gammaln(d)
                - scipy.special.gammaln(k + 1)
                + k * lb
            )
            term = float(np.exp(log_term))
            total += term
            ratio = self.beta * (1.0 + (d - 1) / (k + 1))
            if ratio < 1.0 and term <= 1e-17 * total:
                return total
            k += 1

    def tail_bound(self, M: int, q: float) -> float:
        """The proof's bound
        ``sum_{k>=M} ... <= alpha^2 mercer_alpha^{d/2} C(M+d-1, d-1) beta^M/(1-q)``
        (``= C beta^M M^{d-1}`` asymptotically), valid when (supp-eqn:q)
        ``beta (1 + (d-1)/(M+1)) < q < 1``; a ``ValueError`` names ``q`` or ``M`` otherwise."""
        M = positive_int(M, "M", minimum=0)
        q = float(q)
        if not (0.0 < q < 1.0):
            raise ValueError(f"q must lie in (0, 1), got {q}")
        ratio = self.beta * (1.0 + (self.d - 1) / (M + 1))  # gamma_{k+1}/gamma_k at k = M
        if not ratio < q:
            raise ValueError(
                f"M too small for q (supp-eqn:q): beta(1+(d-1)/(M+1)) = {ratio:.4g} >= q = {q}"
            )
        return float(self.eig_degree(M) * self.multiplicity(M) / (1.0 - q))

    # --- eigenfunctions (R&W eq. 4.42) ---
    def eigfun_1d(self, x, k_max: int) -> np.ndarray:
        """Orthonormal 1-D eigenfunctions ``phi_0..phi_{k_max}`` at ``x`` (R&W eq. 4.42).

        ``phi_k(x) propto exp(-(c-a) x^2) H_k(sqrt(2c) x)``; normalised in ``L^2(N(0, var))`` this
        is ``(pi c/a)^{1/4} exp(a x^2) psi_k(sqrt(2c) x)`` with the Hermite functions ``psi_k``,
        computed by their stable three-term recurrence with the factor ``exp(a x^2)`` folded
        into ``psi_0``.

        Returns
        -------
        phi : ndarray of shape (*x.shape, k_max + 1)
        """
        x = as_float_array(x, "x")
        k_max = positive_int(k_max, "k_max", minimum=0)
        a, c = self.a, self.c
        u = np.sqrt(2.0 * c) * x
        out = np.empty(x.shape + (k_max + 1,))
        out[..., 0] = np.pi**-0.25 * np.exp(-(c - a) * x**2)  # exp(a x^2) psi_0(u)
        if k_max >= 1:
            out[..., 1] = np.sqrt(2.0) * u * out[..., 0]
        for k in range(1, k_max):
            out[..., k + 1] = (
                np.sqrt(2.0 / (k + 1)) * u * out[..., k] - np.sqrt(k / (k + 1)) * out[..., k - 1]
            )
        return out * (np.pi * c / a) ** 0.25

    def features(self, X, M: int) -> np.ndarray:
        """Mercer features ``sqrt(mu^{(|i|)}) prod_j phi_{i_j}(x_j)`` over the ``T_{<M}``
        multi-indices of degree ``|i| < M``, so that ``Phi Phi^T = G_{<M}`` (the truncated Gram
        of the proof).

        Parameters
        ----------
        X : array_like of shape (n, d)
        M : int

        Returns
        -------
        Phi : ndarray of shape (n, T_{<M})
        """
        X = as_float_array(X, "X", ndim=2)
        if X.shape[1] != self.d:
            raise ValueError(f"X has {X.shape[1]} features, expected d={self.d}")
        M = positive_int(M, "M")
        phi = self.eigfun_1d(X, M - 1)  # (n, d, M)
        cols = []
        for k in range(M):
            w = np.sqrt(float(self.eig_degree(k)))
            for idx in _compositions(k, self.d):
                f = np.ones(X.shape[0])
                for j, ij in enumerate(idx):
                    f = f * phi[:, j, ij]
                cols.append(w * f)
        return np.stack(cols, axis=1)

    def residual_trace(self, X, M: int) -> float:
        """``tr R_{>T} = sum_i (kappa(x_i, x_i) - kappa_{<M}(x_i, x_i))`` with ``T = T_{<M}``; its
        expectation is ``n * tail_sum(M)`` (proof of supp-lem:rbf kernel Gram)."""
        Phi = self.features(X, M)
        return float(Phi.shape[0] * self.alpha**2 - np.sum(Phi * Phi))


def _compositions(k: int, d: int):
    """All ``(i_1, ..., i_d)`` of non-negative integers with sum ``k`` (``C(k+d-1, d-1)``
    of them)."""
    for bars in itertools.combinations(range(k + d - 1), d - 1):
        prev, idx = -1, []
        for b in bars:
            idx.append(b - prev - 1)
            prev = b
        idx.append(k + d - 2 - prev)
        yield tuple(idx)


def rbf_cond_lower_shape(n, d: int, gamma: float) -> np.ndarray:
    """The shape ``exp(gamma n^{1/d}) / n^{2 + (d-1)/d}`` of the lower bound on ``cond(G)`` in
    supp-lem:rbf kernel Gram (the lemma holds it up to an unspecified constant).

    ``n >= 1`` (context sizes, any shape), ``d >= 1``, ``gamma > 0``. The value is ``inf`` where
    ``gamma n^{1/d}`` exceeds ~709 (float64 overflow of the exponential): the shape is then beyond
    every representable condition number.
    """
    n = as_float_array(n, "n")
    if np.any(n < 1):
        raise ValueError(f"n must be >= 1 (context sizes), got min {n.min()}")
    d = positive_int(d, "d")
    gamma = positive_scalar(gamma, "gamma")
    return np.exp(gamma * n ** (1.0 / d)) / n ** (2.0 + (d - 1.0) / d)
