"""Spectral scaling of the Gram matrix in the context size ``n`` (float64 NumPy/SciPy).

The interval of the linear-kernel Gram (supp-lem:lienar kernel Gram), ``lambda_1`` of the RBF Gram
(supp-lem:rbf kernel Gram), the conditioning with a ridge and with the row-sum preconditioner
(supp-lem:rbf kernel Gram ridge, ... ridge prec, thm:cond number), the depth for a tolerance
(thm:L growth), the admissible step in ``n`` (eqn:convg cond, thm:lambda1, fig:stepsize) and
``E kappa`` under the covariate shift (supp-sec:exp additional). The Mercer eigenvalues are in
:mod:`pfntheory.maths.mercer`. Conventions: docs/exact-side.md#gram-spectra.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse.linalg
import scipy.special

from pfntheory.base._checks import (
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

from .kernels import LinearKernel, RBFKernel, expected_rbf_gaussian
from .mercer import RBFMercer

__all__ = [
    "COVARIATES",
    "DESIGNS",
    "sample_design",
    "LinearInterval",
    "linear_gram_interval",
    "linear_gram_eigenvalues",
    "lambda1_lower_bound",
    "lambda1_lower_limit",
    "top_eigenvalue",
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
]

#: Covariate laws: ``N(0, I/d)`` or ``Unif[-1/sqrt(d), 1/sqrt(d)]^d`` (supp-sec:exp additional),
#: those of :func:`sample_design`; the run tree takes its choices from here
#: (:data:`pfntheory.infra.config.COVARIATES`).
COVARIATES = ("gaussian", "uniform")
#: Covariate designs of :func:`sample_design` (the same laws).
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
# supp-lem:rbf kernel Gram ridge                                                                #
# --------------------------------------------------------------------------------------------- #


def ridge_cond(G, noise_var: float) -> float:
    """``cond(G + sigma^2 I) = (lambda_1(G) + sigma^2)/(lambda_n(G) + sigma^2)`` from ``eigvalsh``.

    Round-off: ``lambda_n(G)`` is known to ``~ n eps lambda_1``, negligible against ``sigma^2``.
    """
    G = _square(G)
    if G.ndim != 2:
        raise ValueError(f"G must be a single (n, n) matrix, got shape {G.shape}")
    noise_var = positive_scalar(noise_var, "noise_var")
    lam = np.linalg.eigvalsh(G)
    if lam[0] < -G.shape[0] * 16 * np.finfo(float).eps * max(abs(lam[-1]), 1.0):
        raise ValueError(f"G must be positive semi-definite, smallest eigenvalue {lam[0]:.3g}")
    return float((lam[-1] + noise_var) / (max(lam[0], 0.0) + noise_var))


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
    noise_var = positive_scalar(noise_var, "noise_var")
    a2 = positive_scalar(alpha, "alpha") ** 2
    if rho > a2:  # a mean of kernel values kappa(x, x') <= kappa(x, x) = alpha^2
        raise ValueError(
            f"rho must lie in [0, alpha^2] = [0, {a2}] (a mean kernel value), got {rho}"
        )
    lo = (a2 + (n - 1) * rho + noise_var) / (a2 + noise_var)
    hi = (n * a2 + noise_var) / noise_var
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
    noise_var = positive_scalar(noise_var, "noise_var")
    s = G.sum(axis=1)  # D = diag(G 1)
    if np.any(s <= 0):
        raise ValueError("G must have positive row sums for D^{-1} (e.g. an RBF Gram)")
    r = 1.0 / np.sqrt(s)
    A_tilde = r[:, None] * G * r[None, :]  # D^{-1/2} G D^{-1/2}
    lam = np.linalg.eigvalsh(A_tilde + np.diag(noise_var / s))  # ~ D^{-1}(G + sigma^2 I)
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
    noise_var = positive_scalar(noise_var, "noise_var")
    a2 = positive_scalar(alpha, "alpha") ** 2
    s_min, s_max = float(s.min()), float(s.max())
    return PrecBounds(
        lambda1=(1.0, 1.0 + noise_var / s_min),
        lambda1_paper=(1.0, 1.0 + noise_var / a2),
        lambda_n=(noise_var / s_max, (a2 + noise_var) / s_max),
        cond=(s_max / (a2 + noise_var), s_max * (a2 + noise_var) / (a2 * noise_var)),
    )


# --------------------------------------------------------------------------------------------- #
# thm:L growth                                                                                  #
# --------------------------------------------------------------------------------------------- #


def rho_star(cond) -> np.ndarray:
    """Optimal convergence factor ``rho* = 1 - 2/(cond + 1) = (cond - 1)/(cond + 1)`` of Richardson
    at ``eta* = 2/(lambda_1 + lambda_n)`` (supp-sec:richardson), from the condition number alone
    (:func:`pfntheory.maths.richardson.optimal_convergence_factor` computes it from a matrix)."""
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
    noise_var = positive_scalar(noise_var, "noise_var")
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
            steps[i, r] = 2.0 / (lam1 + noise_var)  # eqn:convg cond
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
        limit=2.0 / (ns * lam_inf + noise_var),
    )
