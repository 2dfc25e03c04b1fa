"""Test densities on R for the discretisation results: Lipschitz densities with their CDF,
Lipschitz constant and exponential-family readout (float64 NumPy/SciPy).

Used by supp-lem:discretization error, supp-lem:smax quad and supp-thm:popmini (their hypotheses
are "p Lipschitz on R"; the readout of supp-lem:smax quad needs ``(psi, T, log h)``) and by the
inverse-Gaussian example of supp-sec:thrm4.1.

Densities (:class:`Density`): Gaussians, Gaussian mixtures, symmetric or skewed triangular
densities, Laplace densities, inverse Gaussians. Each carries a Lipschitz constant (exact, or the
maximum of ``|p'|`` located on a dense grid and refined by a bounded scalar optimiser), and an
exponential-family representation ``(psi, T, log h)`` for the softmax readout; a density with no
named family uses the trivial one ``T(y) = log p(y)``, ``psi = 1``. Also: quantile intervals and the
modulus of continuity ``omega_p(delta)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.ndimage
import scipy.optimize
import scipy.special
from scipy.special import ndtr

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    check_rng,
    check_size,
    choice,
    finite_scalar,
    interval,
    positive_int,
    positive_scalar,
    probability,
)
from pfntheory.base.stats import EPS

from .discretize import gaussian_lipschitz
from .readout import (
    gaussian_T,
    inverse_gaussian_pdf,
    inverse_gaussian_psi,
    inverse_gaussian_T,
    psi_gaussian,
)

__all__ = [
    "Density",
    "gaussian",
    "gaussian_mixture",
    "triangular",
    "laplace",
    "inverse_gaussian",
    "random_density",
    "quantile_interval",
    "modulus_of_continuity",
    "DENSITY_KINDS",
]

#: The kinds :func:`random_density` draws from.
DENSITY_KINDS = ("gaussian", "mixture", "triangular", "laplace")

#: Tolerance on ``sum(w) = 1`` for mixture weights (a few ulps per weight: ``w / w.sum()`` passes).
WEIGHT_SUM_TOL = 1e-12


@dataclass(frozen=True)
class Density:
    """A Lipschitz density on R with its CDF, Lipschitz constant and exponential-family readout.

    Attributes
    ----------
    name : str
    pdf, cdf : callable
        Vectorised.
    lipschitz : float
        ``sup_y |p'(y)|`` (exact or located numerically, see module docstring).
    psi : ndarray of shape (p',)
        Natural parameter; with ``T`` and ``log_h`` gives ``log p = <psi, T> + log h + const``.
    T : callable
        ``(C,) -> (C, p')``.
    log_h : callable or None
    support : (float, float)
        Closed hull of ``{p > 0}`` (may be infinite).
    params : dict
        The parameters, for reports.
    gaussian : (mu, tau) or None
        Set for a Gaussian: enables the closed-form TV of :mod:`pfntheory.maths.metrics`.
    """

    name: str
    pdf: Callable
    cdf: Callable
    lipschitz: float
    psi: np.ndarray
    T: Callable
    log_h: Callable | None = None
    support: tuple[float, float] = (-np.inf, np.inf)
    params: dict = field(default_factory=dict)
    gaussian: tuple[float, float] | None = None

    def logpdf_T(self):
        return self.psi, self.T, self.log_h


def _sup_abs(f: Callable, lo: float, hi: float, n: int = 20001) -> float:
    """``sup |f|`` on ``[lo, hi]``: dense-grid argmax refined by bounded Brent (to ~1e-12
    relative)."""
    y = np.linspace(lo, hi, n)
    v = np.abs(f(y))
    k = int(np.argmax(v))
    left, right = y[max(k - 1, 0)], y[min(k + 1, n - 1)]
    res = scipy.optimize.minimize_scalar(
        lambda t: -abs(float(f(np.array([t]))[0])),
        bounds=(left, right),
        method="bounded",
        options={"xatol": 1e-14 * max(1.0, abs(y[k]))},
    )
    return float(max(v[k], -res.fun))


def _trivial_family(pdf):
    """``T(y) = log p(y)``, ``psi = 1``: every positive density is this one-parameter family."""

    def T(y):
        y = np.asarray(y, float)
        with np.errstate(divide="ignore"):
            return np.log(pdf(y))[..., None]

    return np.ones(1), T


def _check_density(density, name: str = "density") -> Density:
    if not isinstance(density, Density):
        raise ArgumentTypeError(
            f"{name} must be a pfntheory.maths.densities.Density, got {type(density).__name__}"
        )
    return density


def gaussian(mu: float, tau: float) -> Density:
    """``N(mu, tau)``; ``L = 1 / (tau sqrt(2 pi e))``; readout ``psi = (mu/tau, -1/(2 tau))``,
    ``T = (y, y^2)``. ``mu`` finite, ``tau > 0`` finite."""
    mu, tau = finite_scalar(mu, "mu"), positive_scalar(tau, "tau")
    s = np.sqrt(tau)
    return Density(
        name="gaussian",
        pdf=lambda y: np.exp(-0.5 * ((np.asarray(y) - mu) / s) ** 2) / (s * np.sqrt(2 * np.pi)),
        cdf=lambda y: ndtr((np.asarray(y) - mu) / s),
        lipschitz=float(gaussian_lipschitz(tau)),
        psi=psi_gaussian(mu, tau),
        T=gaussian_T,
        params={"mu": mu, "tau": tau},
        gaussian=(float(mu), float(tau)),
    )


def gaussian_mixture(w, mu, tau) -> Density:
    """``sum_k w_k N(mu_k, tau_k)``; ``L`` located numerically; trivial-family readout.

    ``w``, ``mu``, ``tau``: 1-d, non-empty, of one length; ``w >= 0`` summing to 1 (within
    :data:`WEIGHT_SUM_TOL`; the weights are used as given, not renormalised), ``tau > 0``.
    """
    w = as_float_array(w, "w", ndim=1, non_empty=True)
    mu = as_float_array(mu, "mu", ndim=1)
    tau = as_float_array(tau, "tau", ndim=1)
    if mu.shape != w.shape or tau.shape != w.shape:
        raise ValueError(
            f"w, mu and tau must have one length, got shapes {w.shape}, {mu.shape}, {tau.shape}"
        )
    if np.any(w < 0):
        raise ValueError(f"w must be non-negative, got min {w.min()}")
    if not abs(float(np.sum(w)) - 1.0) <= WEIGHT_SUM_TOL:
        raise ValueError(f"w must sum to 1 (within {WEIGHT_SUM_TOL:g}), got sum {np.sum(w)!r}")
    if np.any(tau <= 0):
        raise ValueError(f"tau must be strictly positive, got min {tau.min()}")
    s = np.sqrt(tau)

    def pdf(y):
        y = np.asarray(y, float)[..., None]
        return np.sum(w * np.exp(-0.5 * ((y - mu) / s) ** 2) / (s * np.sqrt(2 * np.pi)), -1)

    def dpdf(y):
        y = np.asarray(y, float)[..., None]
        z = (y - mu) / s
        return np.sum(-w * z / s * np.exp(-0.5 * z * z) / (s * np.sqrt(2 * np.pi)), -1)

    def cdf(y):
        return np.sum(w * ndtr((np.asarray(y, float)[..., None] - mu) / s), -1)

    L = _sup_abs(dpdf, float(np.min(mu - 3 * s)), float(np.max(mu + 3 * s)))
    psi, T = _trivial_family(pdf)
    return Density(
        "gaussian_mixture",
        pdf,
        cdf,
        L,
        psi,
        T,
        params={"w": w.tolist(), "mu": mu.tolist(), "tau": tau.tolist()},
    )


def triangular(lo: float, mode: float, hi: float) -> Density:
    """Triangular density on ``[lo, hi]`` (Lipschitz on R, kinks at ``lo, mode, hi``);
    exact ``L``. Finite ``lo < mode < hi``."""
    lo, hi = interval(lo, hi, "lo", "hi")
    mode = finite_scalar(mode, "mode")
    if not lo < mode < hi:
        raise ValueError(f"lo < mode < hi required, got lo={lo}, mode={mode}, hi={hi}")
    H = 2.0 / (hi - lo)

    def pdf(y):
        y = np.asarray(y, float)
        up = H * (y - lo) / (mode - lo)
        down = H * (hi - y) / (hi - mode)
        return np.where((y > lo) & (y < hi), np.where(y <= mode, up, down), 0.0)

    def cdf(y):
        y = np.clip(np.asarray(y, float), lo, hi)
        left = (y - lo) ** 2 / ((hi - lo) * (mode - lo))
        right = 1 - (hi - y) ** 2 / ((hi - lo) * (hi - mode))
        return np.where(y <= mode, left, right)

    L = max(H / (mode - lo), H / (hi - mode))
    psi, T = _trivial_family(pdf)
    return Density(
        "triangular",
        pdf,
        cdf,
        float(L),
        psi,
        T,
        support=(lo, hi),
        params={"lo": lo, "mode": mode, "hi": hi},
    )


def laplace(m: float, b: float) -> Density:
    """Laplace density ``exp(-|y - m|/b) / (2 b)`` (kink at ``m``); exact ``L = 1 / (2 b^2)``.
    ``m`` finite, scale ``b > 0`` (``1 / (2 b^2)`` finite)."""
    m, b = finite_scalar(m, "m"), positive_scalar(b, "b")
    if not np.isfinite(1.0 / (2 * b * b)):
        raise ValueError(f"b must be large enough for L = 1/(2 b^2) to be finite, got {b}")

    def pdf(y):
        return np.exp(-np.abs(np.asarray(y, float) - m) / b) / (2 * b)

    def cdf(y):
        z = (np.asarray(y, float) - m) / b
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.maximum(z, 0)))

    psi, T = _trivial_family(pdf)
    return Density("laplace", pdf, cdf, 1.0 / (2 * b * b), psi, T, params={"m": m, "b": b})


def inverse_gaussian(mu: float, tau: float) -> Density:
    """IG with mean ``mu`` and variance ``tau`` (supp-sec:thrm4.1), readout ``T = (y, 1/y, log y)``.

    CDF (Chhikara-Folks): with ``lambda = mu^3 / tau``,
    ``F(y) = Phi(sqrt(lambda/y)(y/mu - 1)) + exp(2 lambda / mu) Phi(-sqrt(lambda/y)(y/mu + 1))``,
    the second term evaluated as ``exp(2 lambda/mu + log Phi(.))`` to avoid overflow.
    ``mu > 0``, ``tau > 0``, with ``lambda`` finite and positive.
    """
    mu, tau = positive_scalar(mu, "mu"), positive_scalar(tau, "tau")
    try:
        lam = mu**3 / tau
    except OverflowError:
        lam = float("inf")
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(
            f"mu and tau must give a finite positive shape mu^3/tau, got mu={mu}, tau={tau}"
        )

    def pdf(y):
        return inverse_gaussian_pdf(np.maximum(np.asarray(y, float), 0.0), mu, tau)

    def dlogf(y):
        return -1.5 / y - lam / (2 * mu**2) + lam / (2 * y * y)

    def dpdf(y):
        y = np.asarray(y, float)
        return pdf(y) * dlogf(y)

    def cdf(y):
        y = np.asarray(y, float)
        yp = np.where(y > 0, y, 1.0)
        r = np.sqrt(lam / yp)
        F = ndtr(r * (yp / mu - 1)) + np.exp(
            2 * lam / mu + scipy.special.log_ndtr(-r * (yp / mu + 1))
        )
        return np.where(y > 0, F, 0.0)

    hi = mu + 12 * np.sqrt(tau)
    L = _sup_abs(dpdf, 1e-6 * mu, hi)
    return Density(
        "inverse_gaussian",
        pdf,
        cdf,
        L,
        inverse_gaussian_psi(mu, tau),
        lambda y: inverse_gaussian_T(y),
        None,
        support=(0.0, np.inf),
        params={"mu": mu, "tau": tau},
    )


def random_density(rng: np.random.Generator, kind: str | None = None) -> Density:
    """Draw a test density: ``kind`` in {gaussian, mixture, triangular, laplace} (random
    if None)."""
    rng = check_rng(rng)
    if kind is not None:
        choice(kind, "kind", DENSITY_KINDS)
    kind = DENSITY_KINDS[rng.integers(len(DENSITY_KINDS))] if kind is None else kind
    if kind == "gaussian":
        return gaussian(float(rng.normal()), float(rng.uniform(0.05, 2.0)))
    if kind == "mixture":
        k = int(rng.integers(2, 4))
        return gaussian_mixture(
            rng.dirichlet(np.ones(k)), rng.normal(0, 1.5, k), rng.uniform(0.05, 1.0, k)
        )
    if kind == "triangular":
        lo = float(rng.normal())
        w = float(rng.uniform(0.5, 4.0))
        return triangular(lo, lo + w * float(rng.uniform(0.1, 0.9)), lo + w)
    if kind == "laplace":
        return laplace(float(rng.normal()), float(rng.uniform(0.2, 1.5)))
    raise ValueError(f"unknown kind {kind!r}")


def quantile_interval(density: Density, lower: float, upper: float) -> tuple[float, float]:
    """``(a, b) = (F^{-1}(lower), F^{-1}(1 - upper))`` by bisection on the CDF.

    ``lower``, ``upper`` in (0, 1) with ``lower + upper < 1`` (so that ``a < b``).
    """
    density = _check_density(density)
    lower, upper = probability(lower, "lower"), probability(upper, "upper")
    if not lower + upper < 1.0:
        raise ValueError(
            f"lower + upper must be < 1 (so that a < b), got lower={lower}, upper={upper}"
        )
    lo, hi = density.support
    lo = -1e3 if not np.isfinite(lo) else lo
    hi = 1e3 if not np.isfinite(hi) else hi

    def inv(u):
        return scipy.optimize.brentq(
            lambda t: float(density.cdf(np.array([t]))[0]) - u, lo, hi, xtol=1e-14, rtol=4 * EPS
        )

    return inv(lower), inv(1 - upper)


def modulus_of_continuity(
    density: Density, a: float, b: float, delta: float, n: int = 200001
) -> float:
    """Upper bound of ``omega_p(delta) = sup{|p(y) - p(y')| : y, y' in (a, b], |y - y'| <= delta}``.

    Sliding-window max minus min of ``p`` on an ``n``-point grid of spacing ``h`` over windows of
    ``delta + h``, plus ``L h`` (rounding ``y, y'`` to the grid moves each value by <= ``L h / 2``).
    Finite ``a < b``, ``delta > 0``, ``n >= 2``.
    """
    density = _check_density(density)
    a, b = interval(a, b)
    delta = positive_scalar(delta, "delta")
    n = check_size(positive_int(n, "n", minimum=2), "n")
    y = np.linspace(a, b, n)
    h = y[1] - y[0]
    v = density.pdf(y)
    k = int(min(np.ceil((delta + h) / h) + 1, n))  # a window wider than the grid is the grid
    mx = scipy.ndimage.maximum_filter1d(v, size=k, mode="nearest")
    mn = scipy.ndimage.minimum_filter1d(v, size=k, mode="nearest")
    return float(np.max(mx - mn) + density.lipschitz * h)
