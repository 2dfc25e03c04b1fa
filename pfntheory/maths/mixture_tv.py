"""Total variation between Gaussians and Gaussian mixtures, and the bound of docs/multihead.md
("The TV bound") on the multi-head model's error:
``TV(sum_h w_h p_h, sum_h w'_h q_h) <= TV(w, w') + sum_h w'_h TV(p_h, q_h)``.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.integrate
import scipy.optimize
import scipy.special
import scipy.stats

from pfntheory.base._checks import ArgumentTypeError, as_float_array, positive_array, positive_int

from .gp import MixturePPD

__all__ = ["gaussian_tv", "gaussian_tv_bound", "mixture_tv", "mixture_tv_bound"]


def gaussian_tv(m1, v1, m2, v2) -> np.ndarray:
    """Exact ``TV(N(m1, v1), N(m2, v2))`` (elementwise).

    Equal variances: ``2 Phi(|m1 - m2| / (2 sqrt v)) - 1``. Otherwise the densities cross at the
    two roots ``t1 < t2`` of ``log p = log q`` and ``TV = |P(t1, t2] - Q(t1, t2]|``, computed with
    the means shifted by ``m1`` (TV is shift-invariant), so huge means do not overflow. Means
    more than 40 standard deviations (of either law) apart give TV = 1 to float64 precision (the
    overlap is below ``Phi(-20) ~ 3e-89``), also when their difference overflows.
    """
    m1, m2 = as_float_array(m1, "m1"), as_float_array(m2, "m2")
    v1, v2 = positive_array(v1, "v1"), positive_array(v2, "v2")
    m1, v1, m2, v2 = np.broadcast_arrays(m1, v1, m2, v2)
    with np.errstate(over="ignore"):
        dm = m2 - m1  # +-inf when the difference overflows: the laws are then apart
    far = np.abs(dm) > 40.0 * (np.sqrt(v1) + np.sqrt(v2))
    m1, m2 = np.zeros(m1.shape), np.where(far, 0.0, dm)
    out = np.empty(m1.shape)
    eq = (v1 == v2) & ~far
    out[eq] = 2.0 * scipy.stats.norm.cdf(np.abs(m1 - m2)[eq] / (2 * np.sqrt(v1[eq]))) - 1.0
    ne = ~eq & ~far
    out[far] = 1.0
    if np.any(ne):
        a1, b1, a2, b2 = m1[ne], v1[ne], m2[ne], v2[ne]
        # a t^2 + b t + c = 0 where log p(t) = log q(t)
        a = 0.5 / b2 - 0.5 / b1
        b = a1 / b1 - a2 / b2
        c = 0.5 * a2**2 / b2 - 0.5 * a1**2 / b1 + 0.5 * np.log(b2 / b1)
        disc = np.sqrt(np.maximum(b * b - 4 * a * c, 0.0))
        q = -0.5 * (b + np.where(b >= 0, disc, -disc))  # stable roots: q / a and c / q
        r1 = q / a
        r2 = np.where(q != 0, c / np.where(q != 0, q, 1.0), -r1)
        t1, t2 = np.minimum(r1, r2), np.maximum(r1, r2)

        def mass(m, v):
            s = np.sqrt(v)
            return scipy.special.ndtr((t2 - m) / s) - scipy.special.ndtr((t1 - m) / s)

        out[ne] = np.abs(mass(a1, b1) - mass(a2, b2))
    return out


def gaussian_tv_bound(dmu, dtau, tau) -> np.ndarray:
    """Upper bound on ``TV(N(mu, tau), N(mu + dmu, tau + dtau))`` from moment errors
    (docs/multihead.md):

    ``|dmu| / sqrt(2 pi tau) + (1/2) sqrt(max(f(1 - |dtau|/tau), f(1 + |dtau|/tau)))``, capped at 1,
    with ``f(r) = r - 1 - log r`` (``f = inf`` for ``r <= 0``). The first term is the exact TV of a
    mean shift bounded by the density's maximum; the second is Pinsker's inequality on the
    closed-form KL of a variance change, maximised over ``|dtau|`` (``f`` is convex with minimum at
    1). Monotone in ``|dmu|`` and ``|dtau|``, so a bound on the errors gives a bound on the TV."""
    dmu, dtau = np.abs(as_float_array(dmu, "dmu")), np.abs(as_float_array(dtau, "dtau"))
    tau = positive_array(tau, "tau")
    rho = dtau / tau

    def f(r):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(r > 0, r - 1.0 - np.log(np.where(r > 0, r, 1.0)), np.inf)

    var = 0.5 * np.sqrt(np.maximum(f(1.0 - rho), f(1.0 + rho)))
    return np.minimum(1.0, dmu / np.sqrt(2 * np.pi * tau) + var)


def mixture_tv(p: MixturePPD, q: MixturePPD, query: int = 0) -> tuple[float, float]:
    """``TV(p, q)`` of two Gaussian mixtures of one context (weights of shape (H,)) at query
    ``query``, by adaptive quadrature of ``|p - q| / 2`` with the crossings of ``p`` and ``q`` as
    breakpoints; returns ``(tv, abserr)`` (the quadrature's error estimate, which a check adds to
    its tolerance)."""
    for name, m in (("p", p), ("q", q)):
        if not isinstance(m, MixturePPD):
            raise ArgumentTypeError(f"{name} must be a MixturePPD, got {type(m).__name__}")
        if m.weights.ndim != 1:
            raise ValueError(f"{name} must hold one context (weights (H,)), got {m.weights.shape}")
    m_q = min(p.mu.shape[-1], q.mu.shape[-1])
    query = positive_int(query, "query", minimum=0, maximum=m_q - 1)
    comps = []
    for m in (p, q):
        comps.append((m.weights, m.mu[:, query], np.sqrt(m.tau[:, query])))
    lo = min(float(np.min(mu - 40 * s)) for _, mu, s in comps)
    hi = max(float(np.max(mu + 40 * s)) for _, mu, s in comps)
    pts = sorted({float(v) for _, mu, s in comps for v in np.concatenate([mu, mu - s, mu + s])})

    def dens(t, w, mu, s):
        t = np.asarray(t, float)[..., None]
        return np.sum(w * np.exp(-0.5 * ((t - mu) / s) ** 2) / (s * np.sqrt(2 * np.pi)), -1)

    def diff(t):
        return float(dens(t, *comps[0]) - dens(t, *comps[1]))

    # |p - q| has a kink wherever p and q cross; a quadrature rule whose panels straddle a kink
    # converges slowly and under-estimates its error, so the crossings found on a grid fine against
    # every component's scale are breakpoints (before the components' own points)
    width = min(float(np.min(s)) for _, _, s in comps) / 8
    grid = np.linspace(lo, hi, int(min((hi - lo) / width, 20_000)) + 2)
    g = dens(grid, *comps[0]) - dens(grid, *comps[1])
    cross = np.flatnonzero(np.sign(g[:-1]) * np.sign(g[1:]) < 0)
    kinks = [scipy.optimize.brentq(diff, grid[i], grid[i + 1], xtol=1e-14) for i in cross]
    breaks = kinks + [v for v in pts if v not in kinks]
    with warnings.catch_warnings():  # a round-off-level integrand (p = q) makes quad complain
        warnings.simplefilter("ignore", scipy.integrate.IntegrationWarning)
        val, err = scipy.integrate.quad(
            lambda t: abs(diff(t)),
            lo,
            hi,
            points=sorted(v for v in breaks[:100] if lo < v < hi),
            limit=500,
            epsabs=1e-14,
            epsrel=1e-10,
        )
    return 0.5 * val, 0.5 * err


def _simplex(w, name: str) -> np.ndarray:
    """Weights ``>= 0`` summing to 1 over the last axis (to 1e-9 H)."""
    w = as_float_array(w, name, min_ndim=1, non_empty=True)
    if np.any(w < 0) or np.any(np.abs(w.sum(-1) - 1.0) > 1e-9 * w.shape[-1]):
        raise ValueError(f"{name} must be non-negative and sum to 1 over the last axis")
    return w


def mixture_tv_bound(w, w_model, tv_components) -> np.ndarray:
    """``TV(w, w') + sum_h w'_h TV(p_h, q_h)`` (docs/multihead.md), over the last axis (H)."""
    w = _simplex(w, "w")
    w2 = _simplex(w_model, "w_model")
    tv = as_float_array(tv_components, "tv_components")
    if np.any(tv < 0) or np.any(tv > 1):
        raise ValueError("tv_components must lie in [0, 1] (total variations)")
    if not (w.shape == w2.shape == tv.shape):
        raise ValueError(
            f"w, w_model, tv_components must share a shape, got {w.shape}, {w2.shape}, {tv.shape}"
        )
    return 0.5 * np.sum(np.abs(w - w2), -1) + np.sum(w2 * tv, -1)
