"""Metrics of binned predictive distributions against the exact PPD (sec:exp1-exp3, supp-sec:exp
additional, thm:PPD convergence): the TV to a Gaussian PPD, truncated or not, in closed form;
moments, quantiles, central intervals, coverage and width; NLL and CRPS of histograms, Gaussians
and the finite Gaussian mixtures of the hierarchical prior. A histogram is ``edges`` (C + 1,) and
``probs`` (..., C), constant on right-closed bins (eqn:TF piece ppd). Exact float64, no quadrature.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from pfntheory.base._checks import (
    ArgumentTypeError,
    as_float_array,
    positive_int,
    probability,
)
from pfntheory.maths.discretize import (
    _broadcast,
    _mu_tau,
    _norm_mass,
    check_edges,
    check_probs,
    gaussian_interval_mass,
)
from pfntheory.maths.tv_density import tv_density_histogram

__all__ = [
    "tv_mixture_histogram",
    "MIXTURE_MASS_ATOL",
    "tv_truncnorm_histogram",
    "tv_gaussian_histogram",
    "histogram_moments",
    "histogram_cdf",
    "histogram_quantile",
    "central_interval",
    "coverage",
    "interval_width",
    "histogram_crps",
    "histogram_nll",
    "gaussian_crps",
    "gaussian_interval",
    "mixture_components",
    "mixture_cdf",
    "mixture_quantile",
    "mixture_interval",
    "mixture_crps",
    "mixture_expected_crps",
]

_SQRT2PI = np.sqrt(2 * np.pi)


def _edges_probs(edges, probs):
    e = check_edges(edges)
    C = e.shape[0] - 1
    return e, check_probs(probs, C), C


def _level(level) -> float:
    return probability(level, "level")


# --------------------------------------------------------------------------------------------
# total variation
# --------------------------------------------------------------------------------------------


def _l1_gauss_vs_histogram(mu, tau, Z, e, p):
    """``int_a^b |phi_{mu,tau}(y) / Z - q(y)| dy`` in closed form (shape (...)).

    On bin ``c`` the level is ``h = p_c / Delta_c``. The scaled Gaussian ``phi / Z`` exceeds ``h``
    exactly on ``(mu - r, mu + r)`` with ``r = sqrt(-2 tau log(h Z sqrt(2 pi tau)))`` when
    ``h Z sqrt(2 pi tau) < 1`` (else nowhere; ``h = 0``: everywhere). With ``I`` that set
    intersected with the bin, ``int_bin |phi/Z - h| = (h Delta - P_bin) + 2 (P(I) - h |I|)``, all
    masses from normal CDFs.
    """
    s = np.sqrt(tau)[..., None]  # (..., 1)
    m = mu[..., None]
    Zc = Z[..., None]
    g0, g1 = e[:-1], e[1:]  # (C,)
    Delta = g1 - g0
    h = p / Delta  # (..., C) levels
    P_bin = _norm_mass((g0 - m) / s, (g1 - m) / s) / Zc  # (..., C)
    u = h * Zc * _SQRT2PI * s  # h / peak of phi/Z
    above = u < 1  # phi/Z crosses h
    with np.errstate(divide="ignore"):
        logu = np.log(np.where(above, u, 0.5))
    r = np.where(above & (h > 0), s * np.sqrt(-2.0 * np.where(above, logu, -1.0)), np.inf)
    lo = np.clip(m - r, g0, g1)
    hi = np.clip(m + r, g0, g1)
    hi = np.maximum(hi, lo)
    width_I = np.where(above, hi - lo, 0.0)
    P_I = np.where(above, _norm_mass((lo - m) / s, (hi - m) / s) / Zc, 0.0)
    per_bin = (h * Delta - P_bin) + 2.0 * (P_I - h * width_I)
    return np.sum(np.maximum(per_bin, 0.0), axis=-1)


def tv_truncnorm_histogram(mu, tau, edges, probs) -> np.ndarray:
    """``TV(p_(a,b], q)`` between the truncated Gaussian PPD and a binned predictive, in
    closed form.

    ``p_(a,b] = N(mu, tau) 1_(a,b] / (1 - eps_tail)`` (sec:sims); ``q`` is the histogram density of
    ``(edges, probs)``. ``TV = (1/2) int_a^b |p_(a,b] - q|``; in each bin the Gaussian meets the
    constant level at most twice, so the bin's integral follows from normal CDFs (no quadrature).

    Parameters
    ----------
    mu, tau : array_like of shape (...)
        PPD mean and variance (``tau > 0``).
    edges : array_like of shape (C + 1,)
    probs : array_like of shape (..., C)

    Returns
    -------
    tv : ndarray of shape broadcast(mu, tau, probs[..., 0]), values in [0, 1].
    """
    e, p, C = _edges_probs(edges, probs)
    mu, tau = _mu_tau(mu, tau)
    shape = _broadcast(("mu", mu.shape), ("probs[..., 0]", p.shape[:-1]))
    mu, tau = np.broadcast_to(mu, shape), np.broadcast_to(tau, shape)
    p = np.broadcast_to(p, shape + (C,))
    Z = gaussian_interval_mass(mu, tau, e[0], e[-1])  # 1 - eps_tail
    if np.any(Z <= 0):
        raise ValueError("edges: (a, b] has zero mass under N(mu, tau) for some instance")
    return np.clip(0.5 * _l1_gauss_vs_histogram(mu, tau, Z, e, p), 0.0, 1.0)


def tv_gaussian_histogram(mu, tau, edges, probs) -> np.ndarray:
    """``TV(p_n, q)`` with the *untruncated* PPD ``p_n = N(mu, tau)`` (thm:PPD convergence).

    ``TV = (1/2) (int_a^b |p_n - q| + eps_tail)``, ``eps_tail = P(y not in (a, b])``.
    Shapes as in :func:`tv_truncnorm_histogram`.
    """
    e, p, C = _edges_probs(edges, probs)
    mu, tau = _mu_tau(mu, tau)
    shape = _broadcast(("mu", mu.shape), ("probs[..., 0]", p.shape[:-1]))
    mu, tau = np.broadcast_to(mu, shape), np.broadcast_to(tau, shape)
    p = np.broadcast_to(p, shape + (C,))
    s = np.sqrt(tau)
    eps_tail = ndtr((e[0] - mu) / s) + ndtr(-(e[-1] - mu) / s)
    inside = _l1_gauss_vs_histogram(mu, tau, np.ones(shape), e, p)
    return np.clip(0.5 * (inside + eps_tail), 0.0, 1.0)


# --------------------------------------------------------------------------------------------
# moments, CDF, quantiles, intervals
# --------------------------------------------------------------------------------------------


def histogram_moments(edges, probs) -> tuple[np.ndarray, np.ndarray]:
    """Exact moments ``m_1 = E y`` and ``m_2 = E y^2`` of the histogram distribution (sec:exp3).

    Uniform on a bin: ``E y = xi_c``, ``E y^2 = xi_c^2 + Delta_c^2 / 12``.

    Returns
    -------
    m1, m2 : ndarray of shape (...)
    """
    e, p, _ = _edges_probs(edges, probs)
    xi = 0.5 * (e[:-1] + e[1:])
    Delta = np.diff(e)
    m1 = p @ xi
    m2 = p @ (xi**2 + Delta**2 / 12.0)
    return m1, m2


def histogram_cdf(edges, probs, y) -> np.ndarray:
    """Piecewise-linear CDF ``F_q(y)``; ``y`` broadcastable to (...). Returns shape broadcast."""
    e, p, C = _edges_probs(edges, probs)
    y = as_float_array(y, "y")
    shape = _broadcast(("y", y.shape), ("probs[..., 0]", p.shape[:-1]))
    y = np.broadcast_to(y, shape)
    p = np.broadcast_to(p, shape + (C,))
    frac = np.clip((y[..., None] - e[:-1]) / np.diff(e), 0.0, 1.0)  # (..., C)
    return np.minimum(np.sum(p * frac, axis=-1), 1.0)


def histogram_quantile(edges, probs, q) -> np.ndarray:
    """Generalised inverse ``F_q^{-1}(u) = inf{y : F_q(y) >= u}`` of the histogram CDF.

    Parameters
    ----------
    edges : array_like of shape (C + 1,)
    probs : array_like of shape (..., C)
    q : array_like in [0, 1], broadcastable to (...)

    Returns
    -------
    ndarray of shape broadcast(q, probs[..., 0])
    """
    e, p, C = _edges_probs(edges, probs)
    u = as_float_array(q, "q")
    if np.any((u < 0) | (u > 1)):
        raise ValueError("q must lie in [0, 1]")
    shape = _broadcast(("q", u.shape), ("probs[..., 0]", p.shape[:-1]))
    u = np.broadcast_to(u, shape)
    p = np.broadcast_to(p, shape + (C,))
    cum = np.cumsum(p, axis=-1)  # F at gamma_{c+1}
    cum = cum / cum[..., -1:]  # exact 1 at b
    c = np.minimum(np.sum(cum < u[..., None], axis=-1), C - 1)  # first c: F(g_{c+1}) >= u
    F_left = np.where(
        c > 0, np.take_along_axis(cum, np.maximum(c - 1, 0)[..., None], -1)[..., 0], 0.0
    )
    pc = np.take_along_axis(p, c[..., None], -1)[..., 0] / p.sum(-1)
    Delta = np.diff(e)[c]
    frac = np.where(pc > 0, np.clip((u - F_left) / np.where(pc > 0, pc, 1.0), 0.0, 1.0), 0.0)
    return e[c] + frac * Delta


def central_interval(edges, probs, level) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed ``level`` interval ``[l, u]`` of the histogram (sec:exp3: 90% coverage)."""
    lv = _level(level)
    lo = histogram_quantile(edges, probs, (1 - lv) / 2)
    hi = histogram_quantile(edges, probs, (1 + lv) / 2)
    return lo, hi


def coverage(lo, hi, y, axis=None):
    """Empirical coverage ``P{y in [l, u]}`` (closed interval, sec:exp3): mean of the indicator."""
    lo = as_float_array(lo, "lo", non_empty=True)
    hi = as_float_array(hi, "hi", non_empty=True)
    y = as_float_array(y, "y", non_empty=True)
    shape = _broadcast(("lo", lo.shape), ("hi", hi.shape), ("y", y.shape))
    _axis(axis, len(shape))
    if np.any(hi < lo):
        raise ValueError("hi must be >= lo")
    return np.mean((lo <= y) & (y <= hi), axis=axis)


def interval_width(lo, hi, axis=None):
    """Mean width ``E(u - l)`` (sec:exp3)."""
    lo = as_float_array(lo, "lo", non_empty=True)
    hi = as_float_array(hi, "hi", non_empty=True)
    shape = _broadcast(("lo", lo.shape), ("hi", hi.shape))
    _axis(axis, len(shape))
    if np.any(hi < lo):
        raise ValueError("hi must be >= lo")
    return np.mean(hi - lo, axis=axis)


def _axis(axis, ndim: int) -> None:
    """``axis`` must be None, an int in ``[-ndim, ndim)`` or a tuple of such ints."""
    if axis is None:
        return
    axes = axis if isinstance(axis, tuple) else (axis,)
    for a in axes:
        positive_int(a, "axis", minimum=-max(ndim, 1), maximum=max(ndim, 1) - 1)


# --------------------------------------------------------------------------------------------
# scores
# --------------------------------------------------------------------------------------------


def histogram_crps(edges, probs, y) -> np.ndarray:
    """Exact CRPS ``int (F_q(t) - 1{t >= y})^2 dt`` of the histogram distribution.

    ``F_q`` is linear on each bin, so each piece integrates in closed form:
    ``int_u^v G^2 = (v - u)(G_u^2 + G_u G_v + G_v^2) / 3`` for linear ``G``. Bins are split at
    ``y``; left of ``y`` the integrand is ``F^2``, right of it ``(1 - F)^2``; outside ``(a, b]`` add
    ``max(a - y, 0) + max(y - b, 0)``.

    Parameters
    ----------
    edges : array_like of shape (C + 1,)
    probs : array_like of shape (..., C)
    y : array_like broadcastable to (...)

    Returns
    -------
    ndarray of shape broadcast(y, probs[..., 0])
    """
    e, p, C = _edges_probs(edges, probs)
    y = as_float_array(y, "y")
    shape = _broadcast(("y", y.shape), ("probs[..., 0]", p.shape[:-1]))
    y = np.broadcast_to(y, shape)[..., None]  # (..., 1)
    p = np.broadcast_to(p, shape + (C,))
    p = p / p.sum(-1, keepdims=True)
    Fr = np.cumsum(p, axis=-1)  # F(gamma_{c+1})
    Fl = Fr - p  # F(gamma_c)
    g0, g1 = e[:-1], e[1:]
    m = np.clip(y, g0, g1)  # split point per bin
    Fm = Fl + p * (m - g0) / (g1 - g0)

    def sq(G0, G1, w):
        return w * (G0 * G0 + G0 * G1 + G1 * G1) / 3.0

    left = sq(Fl, Fm, m - g0)  # F^2 on [g0, m]
    right = sq(1.0 - Fm, 1.0 - Fr, g1 - m)  # (1-F)^2 on [m, g1]
    out = np.maximum(e[0] - y[..., 0], 0.0) + np.maximum(y[..., 0] - e[-1], 0.0)
    return np.sum(left + right, axis=-1) + out


def histogram_nll(edges, probs, y) -> np.ndarray:
    """``-log q(y)`` with right-closed bins (eqn:TF piece ppd); ``+inf`` outside ``(a, b]`` or in an
    empty bin."""
    from pfntheory.maths.discretize import histogram_density

    dens = histogram_density(edges, probs, y)
    with np.errstate(divide="ignore"):
        return -np.log(dens)


def gaussian_crps(mu, tau, y) -> np.ndarray:
    """Closed-form CRPS of ``N(mu, tau)`` at ``y``:
    ``s [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)]``."""
    mu, tau = _mu_tau(mu, tau)
    y = as_float_array(y, "y")
    _broadcast(("mu", mu.shape), ("y", y.shape))
    s = np.sqrt(tau)
    z = (y - mu) / s
    return s * (z * (2 * ndtr(z) - 1) + 2 * np.exp(-0.5 * z * z) / _SQRT2PI - 1 / np.sqrt(np.pi))


def gaussian_interval(mu, tau, level) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed ``level`` interval of ``N(mu, tau)``:
    ``mu -+ sqrt(tau) Phi^{-1}((1 + level)/2)``."""
    mu, tau = _mu_tau(mu, tau)
    lv = _level(level)
    half = np.sqrt(tau) * ndtri((1 + lv) / 2)
    return mu - half, mu + half


# --------------------------------------------------------------------------------------------
# finite Gaussian mixtures (hierarchical prior, supp-sec:exp additional)
# --------------------------------------------------------------------------------------------


def _mixture(weights, mu, tau):
    w = as_float_array(weights, "weights", min_ndim=1)
    if w.shape[-1] == 0:
        raise ValueError(f"weights must hold at least one component, got shape {w.shape}")
    if np.any(w < 0):
        raise ValueError("weights must be non-negative")
    if np.any(np.abs(w.sum(-1) - 1) > 1e-9 * w.shape[-1]):
        raise ValueError("weights must sum to 1 over the last axis")
    mu, tau = _mu_tau(mu, tau)
    try:
        w, mu, tau = np.broadcast_arrays(w, mu, tau)
    except ValueError as err:
        raise ValueError(
            f"weights, mu, tau must broadcast, got {w.shape}, {mu.shape}, {tau.shape}"
        ) from err
    return w, mu, tau


def mixture_components(ppd) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(weights, mu, tau)`` of a :class:`pfntheory.maths.gp.MixturePPD` with the component axis
    last.

    ``MixturePPD`` stores ``weights (..., H)``, ``mu, tau (..., H, m)``; returns arrays of shape
    ``(..., m, H)`` for the ``mixture_*`` functions here.
    """
    from pfntheory.maths.gp import MixturePPD

    if not isinstance(ppd, MixturePPD):
        raise ArgumentTypeError(
            f"ppd must be a pfntheory.maths.gp.MixturePPD, got {type(ppd).__name__}"
        )
    w = np.broadcast_to(np.asarray(ppd.weights)[..., None, :], np.swapaxes(ppd.mu, -1, -2).shape)
    return w, np.swapaxes(ppd.mu, -1, -2), np.swapaxes(ppd.tau, -1, -2)


def mixture_cdf(weights, mu, tau, y) -> np.ndarray:
    """CDF of ``sum_h w_h N(mu_h, tau_h)``; components on the last axis (..., H), ``y`` (...)."""
    w, mu, tau = _mixture(weights, mu, tau)
    y = as_float_array(y, "y")
    _broadcast(("y", y.shape), ("weights[..., 0]", w.shape[:-1]))
    return np.sum(w * ndtr((y[..., None] - mu) / np.sqrt(tau)), axis=-1)


def mixture_quantile(weights, mu, tau, q, *, n_iter: int = 200) -> np.ndarray:
    """Quantile of a Gaussian mixture by vectorised bisection on its CDF.

    The quantile lies between the smallest and largest component quantiles, which bracket it; 200
    halvings shrink the bracket below float64 resolution.
    """
    w, mu, tau = _mixture(weights, mu, tau)
    u = as_float_array(q, "q")
    if np.any((u <= 0) | (u >= 1)):
        raise ValueError("q must lie in (0, 1)")
    n_iter = positive_int(n_iter, "n_iter", minimum=1, maximum=10_000)
    shape = _broadcast(("q", u.shape), ("weights[..., 0]", w.shape[:-1]))
    u = np.broadcast_to(u, shape)
    s = np.sqrt(tau)
    comp_q = mu + s * ndtri(u)[..., None]  # (..., H)
    lo = np.broadcast_to(np.min(comp_q, -1), shape).copy()
    hi = np.broadcast_to(np.max(comp_q, -1), shape).copy()
    lo, hi = lo - 1e-12 * (1 + np.abs(lo)), hi + 1e-12 * (1 + np.abs(hi))
    # converged: the bracket is at float64 resolution of the quantile, or 2^-100 of the initial
    # bracket (far below resolution on the scale of the components; a quantile at exactly 0 has no
    # relative resolution)
    floor = (hi - lo) * 2.0**-100

    def converged():
        return np.all(hi - lo <= np.maximum(4 * np.finfo(float).eps * np.abs(hi), floor))

    for _ in range(n_iter):
        if converged():
            break
        mid = 0.5 * (lo + hi)
        below = np.sum(w * ndtr((mid[..., None] - mu) / s), -1) < u
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    if not converged():
        raise ValueError(
            f"n_iter={n_iter} halvings leave a bracket of width "
            f"{float(np.max(hi - lo)):.3g}; increase n_iter (default 200)"
        )
    return 0.5 * (lo + hi)


def mixture_interval(weights, mu, tau, level) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed ``level`` interval of a Gaussian mixture."""
    lv = _level(level)
    return (
        mixture_quantile(weights, mu, tau, (1 - lv) / 2),
        mixture_quantile(weights, mu, tau, (1 + lv) / 2),
    )


def _abs_moment(m, v):
    """``E|X|`` for ``X ~ N(m, v)``: ``2 s phi(m/s) + m (2 Phi(m/s) - 1)``."""
    s = np.sqrt(v)
    z = m / s
    return 2 * s * np.exp(-0.5 * z * z) / _SQRT2PI + m * (2 * ndtr(z) - 1)


def mixture_crps(weights, mu, tau, y) -> np.ndarray:
    """Closed-form CRPS of a Gaussian mixture (Grimit et al. 2006):
    ``sum_h w_h E|X_h - y| - (1/2) sum_{h,h'} w_h w_h' E|X_h - X_h'|``.

    Components on the last axis (..., H); ``y`` of shape (...).
    """
    w, mu, tau = _mixture(weights, mu, tau)
    y = as_float_array(y, "y")
    _broadcast(("y", y.shape), ("weights[..., 0]", w.shape[:-1]))
    t1 = np.sum(w * _abs_moment(y[..., None] - mu, tau), -1)
    return t1 - _half_mean_spread(w, mu, tau)


def _half_mean_spread(w, mu, tau) -> np.ndarray:
    """``(1/2) E|X - X'|`` for ``X, X'`` iid ``sum_h w_h N(mu_h, tau_h)`` (validated inputs)."""
    dm = mu[..., :, None] - mu[..., None, :]
    dv = tau[..., :, None] + tau[..., None, :]
    return 0.5 * np.sum(w[..., :, None] * w[..., None, :] * _abs_moment(dm, dv), axis=(-2, -1))


def mixture_expected_crps(weights, mu, tau) -> np.ndarray:
    """Expected CRPS of a Gaussian mixture at its own draws, ``E_{y ~ F} CRPS(F, y) =
    E|X - X'| / 2`` (Gneiting & Raftery 2007, eq. 21): ``sqrt(tau / pi)`` for one component.

    Components on the last axis (..., H); returns shape (...).
    """
    return _half_mean_spread(*_mixture(weights, mu, tau))


#: Round-off allowed, per mixture component, of a mixture's mass above 1 (a few ulps per term of
#: the weighted sums of :func:`tv_mixture_histogram`).
MIXTURE_MASS_ATOL = 8 * np.finfo(float).eps


def tv_mixture_histogram(w, mu_h, tau_h, edges, probs, a, b) -> np.ndarray:
    """Per-instance ``TV(p_(a,b], q)`` for a Gaussian-mixture PPD (no closed form: crossings of the
    mixture density with each bin level found numerically by
    :func:`pfntheory.maths.tv_density.tv_density_histogram`)."""
    w = as_float_array(w, "w", ndim=2, non_empty=True)
    if np.any(w < 0):
        raise ValueError("w must hold non-negative mixture weights")
    bad = np.flatnonzero(np.abs(w.sum(-1) - 1.0) > 1e-9)
    if bad.size:
        raise ValueError(
            f"w: mixture weights must sum to 1 per instance, beyond round-off: its weights sum to "
            f"{float(w[bad[0]].sum())!r} (instance {int(bad[0])})"
        )
    mu_h = as_float_array(mu_h, "mu_h", ndim=2)
    tau_h = as_float_array(tau_h, "tau_h", ndim=2)
    if mu_h.shape != w.shape or tau_h.shape != w.shape:
        raise ValueError(
            f"w, mu_h and tau_h must share one shape (B, H), got {w.shape}, {mu_h.shape} and "
            f"{tau_h.shape}"
        )
    if np.any(tau_h <= 0):
        raise ValueError("tau_h must be positive (component variances)")
    edges, probs, _ = _edges_probs(edges, probs)
    probs = np.atleast_2d(probs)
    if probs.shape[0] != w.shape[0]:
        raise ValueError(f"probs must have one row per instance ({w.shape[0]}), got {probs.shape}")
    a = float(as_float_array(a, "a", ndim=0))
    b = float(as_float_array(b, "b", ndim=0))
    if not a < b:
        raise ValueError(f"a < b is required, got a={a}, b={b}")
    out = np.empty(len(w))
    for i in range(len(w)):
        s = np.sqrt(tau_h[i])

        def pdf(y, i=i, s=s):
            z = (np.asarray(y)[..., None] - mu_h[i]) / s
            return np.sum(w[i] * np.exp(-0.5 * z * z) / (s * np.sqrt(2 * np.pi)), -1)

        def cdf(y, i=i, s=s):
            return np.sum(w[i] * ndtr((np.asarray(y)[..., None] - mu_h[i]) / s), -1)

        # the mass of (a, b] is at most sum_h w_h = 1; the H-term sums may exceed it by round-off
        # (seen: 1 + 2.2e-16 for the hierarchical prior), which is removed, and only that
        mass = float(cdf(b) - cdf(a))
        if mass > 1.0 + MIXTURE_MASS_ATOL * len(w[i]):
            raise ValueError(
                f"mixture mass of (a, b] is {mass!r} > 1 beyond round-off: its weights sum to "
                f"{float(np.sum(w[i]))!r}, not 1"
            )
        mass = min(mass, 1.0)
        out[i] = tv_density_histogram(pdf, cdf, edges, probs[i], mass=mass, n_grid=16)
    return out
