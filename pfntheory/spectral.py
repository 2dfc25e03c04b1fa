"""Spectral scaling of the Gram matrix in the context size ``n`` (float64 NumPy/SciPy).

Implements
----------
* supp-lem:lienar kernel Gram: the concentration interval of the nonzero eigenvalues of
  ``G = X X^T`` for ``x_i ~ N(0, I_d/d)`` and its probability ``1 - 2 exp(-t^2/2)``.
* supp-lem:rbf kernel Gram: the lower bound ``lambda_1(G) >= 1'G1/n`` and its almost-sure limit
  ``kappa(x,x) + (n-1) rho`` with ``rho = E kappa(x, x')``; the Mercer eigen-decomposition of the
  RBF kernel under a Gaussian measure (Zhu et al. 1998; Rasmussen & Williams 2006, Sec. 4.3.1, eqs.
  4.41-4.42): the 1-D eigenvalues and eigenfunctions, the d-dim degree-``k`` eigenvalue
  ``alpha^{d/2} beta^k`` with multiplicity ``C(k+d-1, d-1)``, ``T_{<M}``, the exact tail sum and the
  proof's bound ``C beta^M M^{d-1}``; the truncated kernel ``kappa_{<M}`` and the residual trace
  ``tr R_{>T}`` used in the proof.
* supp-lem:rbf kernel Gram ridge: the sandwich of ``cond(G + sigma^2 I)``.
* supp-lem:rbf kernel Gram ridge prec / thm:cond number: the spectrum of ``D^{-1}(G + sigma^2 I)``
  and every interval of the proof (``lambda_1``, ``lambda_n``, the condition number).
* sec:generalization (eqn:convg cond, thm:lambda1, fig:stepsize): the curve in ``n`` of the
  admissible step ``2 / (lambda_1(G) + sigma^2)`` (for one matrix:
  :func:`pfntheory.richardson.admissible_step` of ``G + sigma^2 I``).
* thm:L growth: the depth needed for a tolerance ``eps`` at the optimal constant step,
  ``log(eps)/log(rho*)`` with ``rho* = 1 - 2/(c_n + 1)``, and the proof's sufficient depth
  ``(c_n + 1)/2 log(1/eps)``.
* supp-sec:exp additional (covariate shift): ``rho`` under ``Unif[-h, h]^d`` inputs.

Conventions: the paper's RBF lemmas use the unit kernel ``exp(-||x - x'||^2/2)`` and ``var = 1/d``;
everything here also takes the amplitude ``alpha`` (``kappa(x, x) = alpha^2``), the lengthscale
``ell`` and the per-coordinate input variance ``var``. The Mercer constants that the proof calls
``alpha`` and ``beta`` are named ``mercer_alpha`` and ``beta`` to keep them apart from the
amplitude. The symbol ``rho`` means ``E kappa(x, x')`` in the Gram lemmas and the convergence factor
``rho*`` in thm:L growth; here the latter is always ``rho_star``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb

import numpy as np
import scipy.linalg
import scipy.sparse.linalg
import scipy.special

from ._checks import (
    MAX_DIM,
    MAX_ELEMENTS,
    ArgumentTypeError,
    as_float_array,
    check_rng,
    check_size,
    choice,
    int_tuple,
    positive_int,
    positive_scalar,
)
from .config import COVARIATES
from .kernels import LinearKernel, RBFKernel, expected_rbf_gaussian

__all__ = [
    "DESIGNS",
    "sample_design",
    "LinearInterval",
    "linear_gram_interval",
    "linear_gram_eigenvalues",
    "lambda1_lower_bound",
    "lambda1_lower_limit",
    "top_eigenvalue",
    "RBFMercer",
    "ridge_cond",
    "ridge_cond_bounds",
    "PrecSpectrum",
    "prec_spectrum",
    "PrecBounds",
    "prec_bounds",
    "rho_star",
    "depth_needed",
    "depth_sufficient",
    "StepCurve",
    "admissible_step_curve",
    "expected_rbf_uniform",
    "rbf_cond_lower_shape",
]

#: Covariate designs of :func:`sample_design`: the covariate laws
#: :data:`pfntheory.config.COVARIATES`.
DESIGNS = COVARIATES


# --------------------------------------------------------------------------------------------- #
# Designs                                                                                       #
# --------------------------------------------------------------------------------------------- #


def sample_design(
    n: int, d: int, rng: np.random.Generator, design: str = "gaussian", size: tuple[int, ...] = ()
) -> np.ndarray:
    """Draw inputs ``x_i`` of the paper's designs.

    Parameters
    ----------
    n, d : int
        Number of points and dimension.
    rng : numpy.random.Generator
    design : {"gaussian", "uniform"}
        ``"gaussian"``: ``x_i ~ N(0, I_d/d)`` (sec:sims). ``"uniform"``:
        ``x_i ~ Unif[-1/sqrt(d), 1/sqrt(d)]^d`` (covariate shift, supp-sec:exp additional), whose
        per-coordinate variance is ``1/(3d)``.
    size : tuple of int
        Leading batch shape.

    Returns
    -------
    X : ndarray of shape (*size, n, d)
    """
    n = positive_int(n, "n", maximum=MAX_ELEMENTS)
    d = positive_int(d, "d", maximum=MAX_DIM)
    rng = check_rng(rng)
    choice(design, "design", DESIGNS)
    shape = int_tuple(size, "size", minimum=0, non_empty=False) + (n, d)
    check_size(np.prod(shape, dtype=float), "n * d * prod(size)")
    if design == "gaussian":
        return rng.standard_normal(shape) / np.sqrt(d)
    h = 1.0 / np.sqrt(d)
    return rng.uniform(-h, h, size=shape)


def expected_rbf_uniform(
    alpha: float, lengthscale: float, d: int, half_width: float | None = None
) -> float:
    """``rho = E kappa(x, x')`` for ``x, x' iid Unif[-h, h]^d`` and the RBF kernel.

    Per coordinate ``w = u - u'`` has the triangular density ``(2h - |w|)/(4h^2)`` on ``[-2h, 2h]``;
    integrating ``exp(-w^2/(2 ell^2))`` against it gives
    ``[2h ell sqrt(pi/2) erf(sqrt(2) h/ell) - ell^2 (1 - exp(-2h^2/ell^2))] / (2h^2)``, and the
    d-dim value is its d-th power times ``alpha^2``. ``h`` defaults to ``1/sqrt(d)``.
    """
    alpha = positive_scalar(alpha, "alpha")
    ell = positive_scalar(lengthscale, "lengthscale")
    d = positive_int(d, "d", maximum=MAX_DIM)
    h = 1.0 / np.sqrt(d) if half_width is None else positive_scalar(half_width, "half_width")
    one = (
        2.0 * h * ell * np.sqrt(np.pi / 2.0) * scipy.special.erf(np.sqrt(2.0) * h / ell)
        - ell**2 * (-np.expm1(-2.0 * h**2 / ell**2))
    ) / (2.0 * h**2)
    return float(alpha**2 * one**d)


# --------------------------------------------------------------------------------------------- #
# supp-lem:lienar kernel Gram                                                                   #
# --------------------------------------------------------------------------------------------- #


@dataclass(frozen=True)
class LinearInterval:
    """The interval ``[lo, hi]`` that holds all ``d`` nonzero eigenvalues of ``X X^T`` with
    probability at least ``prob`` (supp-lem:lienar kernel Gram)."""

    lo: float
    hi: float
    prob: float


def linear_gram_interval(n: int, d: int, t: float) -> LinearInterval:
    """Concentration interval of supp-lem:lienar kernel Gram.

    On an event of probability ``>= 1 - 2 exp(-t^2/2)`` every nonzero eigenvalue of ``G = X X^T``
    (``x_i ~ N(0, I_d/d)``) lies in
    ``[n/d (1 - sqrt(d/n) - t/sqrt(n))_+^2, n/d (1 + sqrt(d/n) + t/sqrt(n))^2]``.

    The positive part ``(.)_+`` is ours: the proof squares the lower bound
    ``sqrt(n) - sqrt(d) - t`` on ``s_d(Z)``, which is only valid when that bound is >= 0; otherwise
    the lower bound on ``lambda_d`` is 0.

    Parameters
    ----------
    n : int
        Number of points, ``n > d`` (the section's standing assumption).
    d : int
        Dimension.
    t : float
        Deviation, ``t >= 0``.
    """
    n = positive_int(n, "n")
    d = positive_int(d, "d")
    if n <= d:
        raise ValueError(f"n must exceed d (supp-lem:lienar kernel Gram), got n={n}, d={d}")
    t = positive_scalar(t, "t", allow_zero=True)
    lo_s = 1.0 - np.sqrt(d / n) - t / np.sqrt(n)  # (sqrt(n) - sqrt(d) - t)/sqrt(n): E s_d - t
    hi_s = 1.0 + np.sqrt(d / n) + t / np.sqrt(n)  # (sqrt(n) + sqrt(d) + t)/sqrt(n): E s_1 + t
    lo = n / d * max(lo_s, 0.0) ** 2
    hi = n / d * hi_s**2
    prob = max(0.0, 1.0 - 2.0 * np.exp(-0.5 * t**2))  # two one-sided Gaussian concentration tails
    return LinearInterval(float(lo), float(hi), float(prob))


def linear_gram_eigenvalues(X, sigma_diag=None) -> np.ndarray:
    """Nonzero eigenvalues of ``G = X Sigma X^T``, descending, from the ``d x d`` matrix
    ``Sigma^{1/2} X^T X Sigma^{1/2}`` (same nonzero spectrum; ``O(n d^2)`` instead of ``O(n^3)``).

    Parameters
    ----------
    X : array_like of shape (..., n, d)
    sigma_diag : array_like of shape (d,), optional
        Diagonal of ``Sigma`` (default the identity, as in the lemma).

    Returns
    -------
    lam : ndarray of shape (..., min(n, d))
    """
    X = as_float_array(X, "X", min_ndim=2, non_empty=True)
    n, d = X.shape[-2:]
    if sigma_diag is not None:
        X = X * np.sqrt(LinearKernel(tuple(np.ravel(sigma_diag))).sigma_diag)[None, :]
    M = np.swapaxes(X, -1, -2) @ X  # (..., d, d)
    lam = np.linalg.eigvalsh(M)[..., ::-1]
    return lam[..., : min(n, d)]


# --------------------------------------------------------------------------------------------- #
# supp-lem:rbf kernel Gram: largest eigenvalue                                                  #
# --------------------------------------------------------------------------------------------- #


def _square(G, name="G") -> np.ndarray:
    """A non-empty square Gram matrix (or a batch), symmetric to round-off, with a non-negative
    diagonal (necessary for positive semi-definiteness; a full eigen-check would cost what
    :func:`top_eigenvalue` saves)."""
    G = as_float_array(G, name, min_ndim=2)
    if G.shape[-1] != G.shape[-2] or G.shape[-1] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix (batch), got shape {G.shape}")
    scale = max(float(np.max(np.abs(G))), np.finfo(float).tiny)
    if np.max(np.abs(G - np.swapaxes(G, -1, -2))) > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric (a Gram matrix)")
    if np.any(np.diagonal(G, axis1=-2, axis2=-1) < 0):
        raise ValueError(
            f"{name} must be positive semi-definite (a Gram matrix); it has a negative "
            f"diagonal entry"
        )
    return G


def lambda1_lower_bound(G) -> np.ndarray:
    """``1'G1 / 1'1 <= lambda_1(G)`` (Rayleigh quotient at the all-ones vector; supp-lem:rbf kernel
    Gram). Shape ``(...)`` for ``G`` of shape ``(..., n, n)``."""
    G = _square(G)
    return G.sum(axis=(-1, -2)) / G.shape[-1]


def lambda1_lower_limit(
    n: int, alpha: float = 1.0, lengthscale: float = 1.0, d: int = 1, var: float | None = None
) -> float:
    """Almost-sure limit of ``1'G1/n``: ``alpha^2 + (n - 1) rho`` with ``rho = E kappa(x, x')``
    (strong law of U-statistics in the proof of supp-lem:rbf kernel Gram)."""
    n = positive_int(n, "n")
    rho = expected_rbf_gaussian(alpha, lengthscale, d, var)
    return float(alpha**2 + (n - 1) * rho)


def top_eigenvalue(G) -> float:
    """``lambda_1(G)`` of one symmetric PSD matrix by Lanczos (ARPACK), started at the
    all-ones vector.

    For kernel Grams the top eigenvalue is separated by a factor ``~ mu_0/mu_1`` from the next, so
    ARPACK converges in a few dozen mat-vecs; it agrees with ``numpy.linalg.eigvalsh`` to ~1e-12
    relative (tested). ``n <= 300`` or no convergence (no gap, e.g. ``G ~ I``): dense ``eigvalsh``.
    """
    G = _square(G)
    if G.ndim != 2:
        raise ValueError(f"G must be a single (n, n) matrix, got shape {G.shape}")
    n = G.shape[0]
    if n <= 300:
        return float(np.linalg.eigvalsh(G)[-1])
    v0 = np.ones(n) / np.sqrt(n)
    try:
        val = scipy.sparse.linalg.eigsh(
            G, k=1, which="LA", v0=v0, tol=1e-13, return_eigenvectors=False
        )
    except scipy.sparse.linalg.ArpackNoConvergence:  # no spectral gap (e.g. G ~ I): dense fallback
        return float(np.linalg.eigvalsh(G)[-1])
    return float(val[0])


# --------------------------------------------------------------------------------------------- #
# Mercer eigenvalues of the RBF kernel under a Gaussian measure                                  #
# --------------------------------------------------------------------------------------------- #


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


# --------------------------------------------------------------------------------------------- #
# supp-lem:rbf kernel Gram ridge                                                                #
# --------------------------------------------------------------------------------------------- #


def ridge_cond(G, noise_var: float) -> float:
    """``cond(G + sigma^2 I) = (lambda_1(G) + sigma^2)/(lambda_n(G) + sigma^2)`` from ``eigvalsh``.

    Round-off: ``lambda_n(G)`` is known to ``~ n eps lambda_1``, negligible against ``sigma^2``.
    """
    G = _square(G)
    if G.ndim != 2:
        raise ValueError(f"G must be a single (n, n) matrix, got shape {G.shape}")
    s2 = positive_scalar(noise_var, "noise_var")
    lam = np.linalg.eigvalsh(G)
    if lam[0] < -G.shape[0] * 16 * np.finfo(float).eps * max(abs(lam[-1]), 1.0):
        raise ValueError(f"G must be positive semi-definite, smallest eigenvalue {lam[0]:.3g}")
    return float((lam[-1] + s2) / (max(lam[0], 0.0) + s2))


def ridge_cond_bounds(
    n: int, rho: float, noise_var: float, alpha: float = 1.0
) -> tuple[float, float]:
    """Sandwich of supp-lem:rbf kernel Gram ridge:
    ``(alpha^2 + (n-1) rho + sigma^2)/(alpha^2 + sigma^2) <= cond(G + sigma^2 I) <= (n alpha^2 +
    sigma^2)/sigma^2``.

    The upper bound uses ``lambda_1 <= tr G = n alpha^2`` and ``lambda_n >= 0`` and holds for every
    draw. The lower bound uses ``lambda_1 >= 1'G1/n`` and ``lambda_n <= tr G/n = alpha^2``; with
    ``rho`` the empirical off-diagonal mean ``(1'G1 - n alpha^2)/(n(n-1))`` it holds for every draw,
    with ``rho = E kappa(x, x')`` only for large ``n`` (almost surely). The paper states it for
    ``alpha = 1``.
    """
    n = positive_int(n, "n")
    rho = positive_scalar(rho, "rho", allow_zero=True)
    s2 = positive_scalar(noise_var, "noise_var")
    a2 = positive_scalar(alpha, "alpha") ** 2
    if rho > a2:  # a mean of kernel values kappa(x, x') <= kappa(x, x) = alpha^2
        raise ValueError(
            f"rho must lie in [0, alpha^2] = [0, {a2}] (a mean kernel value), got {rho}"
        )
    lo = (a2 + (n - 1) * rho + s2) / (a2 + s2)
    hi = (n * a2 + s2) / s2
    return float(lo), float(hi)


# --------------------------------------------------------------------------------------------- #
# supp-lem:rbf kernel Gram ridge prec, thm:cond number                                          #
# --------------------------------------------------------------------------------------------- #


@dataclass(frozen=True)
class PrecSpectrum:
    """Extreme eigenvalues of ``D^{-1}(G + sigma^2 I)``, ``D = diag(G 1)`` (eqn:richardson prec).

    Attributes
    ----------
    lambda_1, lambda_n : float
        Largest and smallest eigenvalue (real and positive: the matrix is similar to the SPD
        ``D^{-1/2}(G + sigma^2 I) D^{-1/2}``).
    cond : float
        ``lambda_1 / lambda_n`` (the paper's ``c_n``).
    lambda_1_A : float
        ``lambda_1(D^{-1/2} G D^{-1/2})`` (= 1: ``D^{-1} G`` is row-stochastic).
    s : ndarray of shape (n,)
        Row sums ``s_i = sum_j G_ij``.
    """

    lambda_1: float
    lambda_n: float
    cond: float
    lambda_1_A: float
    s: np.ndarray

    @property
    def s_min(self) -> float:
        return float(self.s.min())

    @property
    def s_max(self) -> float:
        return float(self.s.max())


def prec_spectrum(G, noise_var: float) -> PrecSpectrum:
    """Spectrum of the Jacobi-preconditioned system of eqn:richardson prec.

    Parameters
    ----------
    G : array_like of shape (n, n)
        Gram matrix with positive row sums (e.g. RBF).
    noise_var : float
        ``sigma^2 > 0``.
    """
    G = _square(G)
    if G.ndim != 2:
        raise ValueError(f"G must be a single (n, n) matrix, got shape {G.shape}")
    s2 = positive_scalar(noise_var, "noise_var")
    s = G.sum(axis=1)  # D = diag(G 1)
    if np.any(s <= 0):
        raise ValueError("G must have positive row sums for D^{-1} (e.g. an RBF Gram)")
    r = 1.0 / np.sqrt(s)
    A_tilde = r[:, None] * G * r[None, :]  # D^{-1/2} G D^{-1/2}
    lam = np.linalg.eigvalsh(A_tilde + np.diag(s2 / s))  # ~ D^{-1}(G + s2 I)
    lam_A = top_eigenvalue(A_tilde)
    return PrecSpectrum(float(lam[-1]), float(lam[0]), float(lam[-1] / lam[0]), float(lam_A), s)


@dataclass(frozen=True)
class PrecBounds:
    """Every interval in the proof of supp-lem:rbf kernel Gram ridge prec, from the row sums.

    ``lambda1`` is ``[1, 1 + sigma^2/s_min]`` (Weyl); ``lambda1_paper`` the paper's
    ``[1, 1 + sigma^2/alpha^2]`` (it uses ``s_i >= kappa(x_i, x_i) = alpha^2``; the paper has
    ``alpha = 1``); ``lambda_n`` is ``[sigma^2/s_max, (alpha^2 + sigma^2)/s_max]``; ``cond`` is
    ``[s_max/(alpha^2 + sigma^2), s_max (alpha^2 + sigma^2)/(alpha^2 sigma^2)]``.
    """

    lambda1: tuple[float, float]
    lambda1_paper: tuple[float, float]
    lambda_n: tuple[float, float]
    cond: tuple[float, float]


def prec_bounds(s, noise_var: float, alpha: float = 1.0) -> PrecBounds:
    """Intervals of supp-lem:rbf kernel Gram ridge prec from the row sums ``s`` (shape (n,))."""
    s = as_float_array(s, "s", ndim=1)
    if s.size == 0 or np.any(s <= 0):
        raise ValueError("s must be a non-empty vector of positive row sums")
    s2 = positive_scalar(noise_var, "noise_var")
    a2 = positive_scalar(alpha, "alpha") ** 2
    s_min, s_max = float(s.min()), float(s.max())
    return PrecBounds(
        lambda1=(1.0, 1.0 + s2 / s_min),
        lambda1_paper=(1.0, 1.0 + s2 / a2),
        lambda_n=(s2 / s_max, (a2 + s2) / s_max),
        cond=(s_max / (a2 + s2), s_max * (a2 + s2) / (a2 * s2)),
    )


# --------------------------------------------------------------------------------------------- #
# thm:L growth                                                                                  #
# --------------------------------------------------------------------------------------------- #


def rho_star(cond) -> np.ndarray:
    """Optimal convergence factor ``rho* = 1 - 2/(cond + 1) = (cond - 1)/(cond + 1)`` of Richardson
    at ``eta* = 2/(lambda_1 + lambda_n)`` (supp-sec:richardson), from the condition number alone
    (:func:`pfntheory.richardson.optimal_convergence_factor` computes it from a matrix)."""
    c = as_float_array(cond, "cond")
    if np.any(c < 1):
        raise ValueError(f"cond must be >= 1, got min {c.min()}")
    return (c - 1.0) / (c + 1.0)


def depth_needed(cond, eps: float) -> np.ndarray:
    """Smallest real ``L`` with ``rho*^L <= eps``: ``log(eps)/log(rho*)`` (proof of thm:L growth).

    Returns 0 where ``cond == 1`` (one step is exact)."""
    eps = positive_scalar(eps, "eps")
    if eps >= 1:
        raise ValueError(f"eps must lie in (0, 1), got {eps}")
    rho_s = rho_star(cond)
    with np.errstate(divide="ignore"):
        out = np.where(rho_s > 0, np.log(eps) / np.log(np.maximum(rho_s, 1e-300)), 0.0)
    return out


def depth_sufficient(cond, eps: float) -> np.ndarray:
    """The proof's sufficient depth ``(cond + 1)/2 * log(1/eps)`` (>= :func:`depth_needed`, since
    ``log(1 - x) <= -x``)."""
    eps = positive_scalar(eps, "eps")
    if eps >= 1:
        raise ValueError(f"eps must lie in (0, 1), got {eps}")
    c = as_float_array(cond, "cond")
    if np.any(c < 1):
        raise ValueError(f"cond must be >= 1, got min {c.min()}")
    return 0.5 * (c + 1.0) * np.log(1.0 / eps)


# --------------------------------------------------------------------------------------------- #
# eqn:convg cond, thm:lambda1, fig:stepsize                                                     #
# --------------------------------------------------------------------------------------------- #


@dataclass(frozen=True)
class StepCurve:
    """Admissible step against ``n`` (fig:stepsize).

    Attributes
    ----------
    ns : ndarray of shape (m,)
    steps : ndarray of shape (m, n_trials)
        ``2/(lambda_1(G) + sigma^2)`` per draw.
    mean, std : ndarray of shape (m,)
    reference : ndarray of shape (m,)
        The ``1/n`` reference ``mean[0] * ns[0] / ns``.
    limit : ndarray of shape (m,)
        ``2/(n lambda_inf + sigma^2)`` with ``lambda_inf = lim lambda_1(G)/n``: the top Mercer
        eigenvalue for RBF, ``max(Sigma)/d`` for linear (``x ~ N(0, I/d)``); NaN for the
        uniform design.
    """

    ns: np.ndarray
    steps: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    reference: np.ndarray
    limit: np.ndarray


def admissible_step_curve(
    kernel,
    ns,
    d: int,
    noise_var: float,
    n_trials: int,
    rng: np.random.Generator,
    design: str = "gaussian",
) -> StepCurve:
    """The curve of fig:stepsize: ``2/(lambda_1(G) + sigma^2)`` for ``n`` in ``ns``, averaged over
    ``n_trials`` draws of the design.

    Parameters
    ----------
    kernel : LinearKernel or RBFKernel
    ns : array_like of int, shape (m,)
    d : int
    noise_var : float
    n_trials : int
    rng : numpy.random.Generator
    design : {"gaussian", "uniform"}
    """
    if not isinstance(kernel, (LinearKernel, RBFKernel)):
        raise ArgumentTypeError(
            f"kernel must be a LinearKernel or RBFKernel, got {type(kernel).__name__}"
        )
    ns = np.asarray([positive_int(v, "ns") for v in np.ravel(ns)])
    if ns.size == 0:
        raise ValueError("ns must be non-empty")
    d = positive_int(d, "d")
    s2 = positive_scalar(noise_var, "noise_var")
    n_trials = positive_int(n_trials, "n_trials")
    rng = check_rng(rng)
    choice(design, "design", DESIGNS)
    if isinstance(kernel, LinearKernel) and kernel.d != d:
        raise ValueError(f"kernel has d={kernel.d}, but d={d} was given")
    steps = np.empty((ns.size, n_trials))
    for i, n in enumerate(ns):
        for r in range(n_trials):
            X = sample_design(int(n), d, rng, design)
            if isinstance(kernel, LinearKernel):
                lam1 = linear_gram_eigenvalues(X, kernel.sigma_diag)[0]
            else:
                lam1 = top_eigenvalue(kernel(X))
            steps[i, r] = 2.0 / (lam1 + s2)  # eqn:convg cond
    mean = steps.mean(axis=1)
    if design != "gaussian":
        lam_inf = np.nan
    elif isinstance(kernel, LinearKernel):
        lam_inf = max(kernel.sigma_diag) / d
    else:
        lam_inf = float(RBFMercer(d, kernel.lengthscale, 1.0 / d, kernel.alpha).eig_degree(0))
    return StepCurve(
        ns=ns,
        steps=steps,
        mean=mean,
        std=steps.std(axis=1, ddof=1) if n_trials > 1 else np.zeros(ns.size),
        reference=mean[0] * (ns[0] / ns),
        limit=2.0 / (ns * lam_inf + s2),
    )
