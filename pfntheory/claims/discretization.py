"""supp-lem:discretization error and supp-lem:smax quad: the TV between a density and its histogram
(and its softmax readout) against the lemmas' bounds, on any partition, and their orders in ``C``.

Each ``check_*`` returns a :class:`~pfntheory.claims.ClaimResult`; the readout under test is an
argument (fault injection). Test densities, partitions and tolerances:
docs/exact-side.md#discretisation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pfntheory.base._checks import (
    Rule,
    check_callable,
    check_rng,
    checked,
    choice,
    finite_scalar,
    instance_of,
    ints,
    one_of,
    optional,
    positive_int,
    positive_scalar,
    sequence,
)
from pfntheory.base.stats import slope_ci, t_interval
from pfntheory.claims import ClaimResult
from pfntheory.maths.densities import (
    DENSITY_KINDS,
    Density,
    modulus_of_continuity,
    quantile_interval,
    random_density,
)
from pfntheory.maths.discretize import (
    bin_widths,
    check_edges,
    discretization_bound,
    mesh,
    midpoints,
    smax_quad_bound,
    smax_quad_bound_modulus,
)
from pfntheory.maths.metrics import tv_gaussian_histogram, tv_truncnorm_histogram
from pfntheory.maths.readout import logits_from_natural, softmax
from pfntheory.maths.tv_density import l1_density_histogram

from . import checked_args

__all__ = [
    "random_partition",
    "warped_partition",
    "readout_midpoint",
    "discretization_instance",
    "check_discretization_error",
    "check_discretization_rate",
    "smax_quad_instance",
    "check_smax_quad",
    "check_smax_quad_rate",
    "check_readout_identity",
]

#: Relative round-off allowed when comparing a measured TV with a bound: the TV is a sum of
#: O(C) terms each with relative error O(eps); 1e-10 covers C up to ~1e5 with a wide margin.
RTOL_ROUNDOFF = 1e-10
#: Absolute round-off floor for the same comparisons (masses are <= 1).
ATOL_ROUNDOFF = 1e-13
#: Grid points per bin used to bracket crossings of p with a bin level (l1_density_histogram).
N_GRID = 64


# --------------------------------------------------------------------------------------------
# test partitions
# --------------------------------------------------------------------------------------------


#: Partitions of the rate checks: equidistant, or :func:`warped_partition`.
PARTITIONS = ("uniform", "warped")


def _ratio(x, name: str) -> float:
    v = positive_scalar(x, name)
    if v < 1:
        raise ValueError(f"{name} must be >= 1 (widths ~ Unif[1, {name}]), got {v}")
    return v


def _density(x, name: str) -> Density:
    return instance_of(Density, what="pfntheory.maths.densities.Density")(x, name)


def _cases(x, name: str) -> list:
    """A non-empty sequence of ``(density, edges)`` pairs."""
    items = sequence(x, name)
    for item in items:
        pair_ = sequence(item, name)
        if len(pair_) != 2:
            raise ValueError(f"{name} must hold (density, edges) pairs, got {item!r:.60}")
        _density(pair_[0], name)
    return items


def _kinds(x, name: str) -> tuple:
    return tuple(choice(k, name, DENSITY_KINDS) for k in sequence(x, name))


@checked_args("rng", a=finite_scalar, b=finite_scalar, C=positive_int, ratio=_ratio)
def random_partition(
    a: float, b: float, C: int, rng: np.random.Generator, ratio: float = 4.0
) -> np.ndarray:
    """Non-equidistant partition of ``(a, b]``: widths ``~ Unif[1, ratio]``, normalised to
    ``b - a``."""
    w = rng.uniform(1.0, ratio, C)
    e = a + (b - a) * np.concatenate([[0.0], np.cumsum(w) / w.sum()])
    e[0], e[-1] = a, b
    return e


@checked(a=finite_scalar, b=finite_scalar, C=positive_int, beta=finite_scalar, phase=finite_scalar)
def warped_partition(
    a: float, b: float, C: int, beta: float = 0.5, phase: float = 0.0
) -> np.ndarray:
    """Smoothly non-equidistant partition ``a + (b - a) g(t)``, ``g(t) = t + beta (sin(2
    pi t + phase)
    - sin(phase)) / (2 pi)`` on ``t = 0, 1/C, ..., 1``. Monotone for ``|beta| < 1``; refining ``C``
    keeps the width profile, so convergence orders are those of an equidistant grid."""
    if not abs(beta) < 1:
        raise ValueError(f"|beta| < 1 required, got {beta}")
    t = np.linspace(0.0, 1.0, C + 1)
    g = t + beta * (np.sin(2 * np.pi * t + phase) - np.sin(phase)) / (2 * np.pi)
    e = a + (b - a) * g
    e[0], e[-1] = a, b
    return e


# --------------------------------------------------------------------------------------------
# supp-lem:discretization error
# --------------------------------------------------------------------------------------------


def _bin_masses(density: Density, edges: np.ndarray) -> np.ndarray:
    """``g_c = F(gamma_{c+1}) - F(gamma_c)`` (untruncated)."""
    F = density.cdf(edges)
    return np.diff(F)


@checked(density=_density, edges=check_edges)
def discretization_instance(density: Density, edges) -> dict:
    """One instance of supp-lem:discretization error.

    ``p~ = sum_c 1_bin g_c / (Delta_c (1 - eps))`` with ``g_c`` the bin masses of ``p`` and
    ``eps = P(y not in (a, b])``. Returns ``tv = TV(p, p~)`` (exact; closed form for Gaussians),
    ``tv_trunc = TV(p_(a,b], p~)`` (the part that vanishes as ``|Gamma| -> 0``), the paper's bound
    ``L |Gamma| (b - a) / 2 + eps``, our sharpened bound ``L |Gamma| (b - a) / 8 + eps``
    (``int |p - mean| <= L Delta^2 / 4`` on a bin) and the lower bound ``eps`` (``p~`` puts no mass
    outside ``(a, b]``).
    """
    e = check_edges(edges)
    a, b = e[0], e[-1]
    g = _bin_masses(density, e)
    Z = float(np.sum(g))  # 1 - eps
    eps = max(float(density.cdf(np.array([a]))[0] + (1 - density.cdf(np.array([b]))[0])), 0.0)
    probs = g / Z
    if density.gaussian is not None:
        mu, tau = density.gaussian
        tv = float(tv_gaussian_histogram(mu, tau, e, probs))
        tv_trunc = float(tv_truncnorm_histogram(mu, tau, e, probs))
    else:
        inside = l1_density_histogram(density.pdf, density.cdf, e, probs, n_grid=N_GRID)
        tv = 0.5 * (inside + eps)
        tv_trunc = 0.5 * l1_density_histogram(
            lambda y: density.pdf(y) / Z, lambda y: density.cdf(y) / Z, e, probs, n_grid=N_GRID
        )
    L = density.lipschitz
    first = L * mesh(e) * (b - a) / 2
    return {
        "tv": tv,
        "tv_trunc": tv_trunc,
        "eps": eps,
        "bound": float(discretization_bound(L, e, min(eps, 1 - 1e-15))),
        "sharp_bound": first / 4 + eps,
        "first_term": first,
        "C": e.shape[0] - 1,
        "mesh": mesh(e),
        "L": L,
        "name": density.name,
    }


def _atol_grid(density: Density, edges: np.ndarray) -> float:
    """Worst error of :func:`l1_density_histogram` from a missed pair of crossings in one grid cell:
    ``<= L w^2 / 4`` per cell of width ``w = |Gamma| / N_GRID``, at most one such cell per bin."""
    if density.gaussian is not None:
        return 0.0
    w = mesh(edges) / N_GRID
    return (edges.shape[0] - 1) * density.lipschitz * w * w / 4


def _worst_ratio_claim(
    rows: list[dict], *, label: str, key: str, statement: str, holds, roundoff: str, **details
) -> ClaimResult:
    """A bound checked on every case of ``rows`` (instances with ``"tv"`` and ``"bound"``):
    ``observed`` is the worst ratio ``TV / bound`` (at most 1 where every bound held, up to
    round-off), compared with 1. ``roundoff`` says what the tolerance covers beyond
    ``RTOL_ROUNDOFF``/``ATOL_ROUNDOFF``; ``details`` go between the ratios and the cases."""
    ratios = [r["tv"] / r["bound"] for r in rows]
    return ClaimResult(
        label=label,
        key=key,
        statement=statement,
        holds=bool(holds),
        observed=float(max(ratios)),
        bound=1.0,
        tolerance=f"rtol={RTOL_ROUNDOFF} atol={ATOL_ROUNDOFF} ({roundoff})",
        details={"ratios": ratios, **details, "n_cases": len(rows), "rows": rows},
    )


@checked(cases=_cases)
def check_discretization_error(cases) -> ClaimResult:
    """supp-lem:discretization error on every ``(density, edges)`` of ``cases``.

    holds iff ``eps <= TV(p, p~) <= L |Gamma| (b - a) / 2 + eps`` on every case (round-off
    tolerance); also records whether the sharper ``L |Gamma| (b - a) / 8 + eps`` held.
    observed = worst ratio ``TV / bound``.
    """
    rows, ok, ok_sharp, ok_lower = [], True, True, True
    for density, edges in cases:
        e = check_edges(edges)
        r = discretization_instance(density, e)
        tol = RTOL_ROUNDOFF * r["bound"] + ATOL_ROUNDOFF + _atol_grid(density, e)
        ok &= r["tv"] <= r["bound"] + tol
        ok_sharp &= r["tv"] <= r["sharp_bound"] + tol
        ok_lower &= r["tv"] >= r["eps"] - tol
        rows.append(r)
    first_ratio = [(r["tv"] - r["eps"]) / r["first_term"] for r in rows if r["first_term"] > 0]
    return _worst_ratio_claim(
        rows,
        label="supp-lem:discretization error",
        key="discretization_error",
        statement="TV(p, p~) <= L|Gamma|(b-a)/2 + eps for L-Lipschitz p and any partition of (a,b]",
        holds=ok and ok_lower,
        roundoff="+ grid bracketing term L w^2/4 per bin",
        max_first_term_ratio=float(max(first_ratio, default=0.0)),
        sharp_bound_holds=bool(ok_sharp),
        lower_bound_eps_holds=bool(ok_lower),
    )


# --------------------------------------------------------------------------------------------
# supp-lem:smax quad
# --------------------------------------------------------------------------------------------


@checked(density=_density, edges=check_edges)
def readout_midpoint(density: Density, edges) -> np.ndarray:
    """Logits of supp-lem:smax quad, ``ell_c = <psi, T(xi_c)> + log h(xi_c) + log Delta_c``."""
    psi, T, log_h = density.logpdf_T()
    return logits_from_natural(psi, edges, T, log_h)


@checked(density=_density, edges=check_edges, readout=optional(check_callable))
def smax_quad_instance(density: Density, edges, readout: Callable | None = None) -> dict:
    """One instance of supp-lem:smax quad: ``TV(p_C, p^_C) = ||q_C - sm(ell)||_1 / 2``.

    ``q_C`` are the bin masses of ``p_(a,b]`` and ``ell = readout(density, edges)`` (default
    :func:`readout_midpoint`). Returns the TV, both bounds (Lipschitz and modulus form) and the
    ingredients.
    """
    e = check_edges(edges)
    readout = readout_midpoint if readout is None else readout
    g = _bin_masses(density, e)
    Z = float(np.sum(g))
    eps = 1.0 - Z
    q = g / Z
    q_hat = softmax(readout(density, e))
    tv = 0.5 * float(np.sum(np.abs(q - q_hat)))
    omega = modulus_of_continuity(density, e[0], e[-1], mesh(e) / 2)
    eps_c = min(max(eps, 0.0), 1 - 1e-15)
    return {
        "tv": tv,
        "bound": float(smax_quad_bound(density.lipschitz, e, eps_c)),
        "bound_modulus": float(smax_quad_bound_modulus(omega, e, eps_c)),
        "eps": eps,
        "C": e.shape[0] - 1,
        "mesh": mesh(e),
        "L": density.lipschitz,
        "name": density.name,
    }


@checked(cases=_cases, readout=optional(check_callable))
def check_smax_quad(cases, readout: Callable | None = None) -> ClaimResult:
    """supp-lem:smax quad on every ``(density, edges)``: both the Lipschitz and the modulus form.

    observed = worst ratio ``TV / (Lipschitz bound)``.
    """
    rows, ok_l, ok_m = [], True, True
    for density, edges in cases:
        r = smax_quad_instance(density, edges, readout)
        ok_l &= r["tv"] <= r["bound"] * (1 + RTOL_ROUNDOFF) + ATOL_ROUNDOFF
        ok_m &= r["tv"] <= r["bound_modulus"] * (1 + RTOL_ROUNDOFF) + ATOL_ROUNDOFF
        rows.append(r)
    return _worst_ratio_claim(
        rows,
        label="supp-lem:smax quad",
        key="smax_quad",
        statement=(
            "TV(p_C, p^_C) <= (b-a) L |Gamma| / (4(1-eps)) and <= (b-a) omega(|Gamma|/2)/(1-eps)"
        ),
        holds=ok_l and ok_m,
        roundoff="round-off of a C-term sum",
        ratios_modulus=[r["tv"] / r["bound_modulus"] for r in rows],
        lipschitz_form_holds=bool(ok_l),
        modulus_form_holds=bool(ok_m),
    )


@checked(
    density=_density, edges=check_edges, readout=optional(check_callable), rtol=positive_scalar
)
def check_readout_identity(
    density: Density, edges, readout: Callable | None = None, rtol: float = 1e-12
) -> ClaimResult:
    """The step of supp-lem:smax quad's proof:
    ``sm(ell)_c = p(xi_c) Delta_c / sum_j p(xi_j) Delta_j``.

    ``A(theta)`` cancels in the softmax, so the readout reproduces the density at the midpoints.
    Tolerance: ``rtol`` on each probability (softmax of O(1) logits: relative error ~ C eps).
    """
    e = check_edges(edges)
    readout = readout_midpoint if readout is None else readout
    q_hat = softmax(readout(density, e))
    w = density.pdf(midpoints(e)) * bin_widths(e)
    ref = w / w.sum()
    err = float(np.max(np.abs(q_hat - ref) / ref))
    return ClaimResult(
        label="supp-lem:smax quad",
        key="readout_identity",
        statement="sm(<psi,T(xi_c)> + log h + log Delta_c) = p(xi_c)Delta_c / sum",
        holds=err <= rtol,
        observed=err,
        bound=rtol,
        tolerance=f"rtol={rtol} (softmax round-off)",
        details={"C": e.shape[0] - 1, "name": density.name},
    )


# --------------------------------------------------------------------------------------------
# rates in C
# --------------------------------------------------------------------------------------------


class _RateClaim(NamedTuple):
    """What a rate check states: the label, the statement, the key and the paper's order."""

    label: str
    statement: str
    key: str
    paper_order: float


_DISCRETIZATION_RATE = _RateClaim(
    "supp-lem:discretization error",
    "TV(p_(a,b], p~) = O(|Gamma|) = O(1/C)",
    "discretization_rate",
    -1.0,
)
_SMAX_QUAD_RATE = _RateClaim(
    "supp-lem:smax quad",
    "TV(p_C, p^_C) = O(|Gamma|) (lemma); midpoint rule gives O(|Gamma|^2)",
    "smax_quad_rate",
    -1.0,
)
#: The arguments of a rate check in ``C`` over random densities.
_RATE_RULES: dict[str, Rule] = {
    "rng": check_rng,
    "n_seeds": positive_int,
    "Cs": ints(minimum=2),
    "kinds": _kinds,
    "partition": one_of(PARTITIONS),
    "band": positive_scalar,
}


def _rate(claim: _RateClaim, values_fn, rng, n_seeds, Cs, kinds, partition, band, expected_order):
    """Per-seed slopes of ``log values_fn(density, edges)`` on ``log C`` over random densities;
    holds when the mean and the 95% t-CI lie within ``expected_order +- band``."""
    Cs = np.asarray(Cs)
    slopes, per_seed = [], []
    for _ in range(n_seeds):
        dens = random_density(rng, kinds[int(rng.integers(len(kinds)))])
        a, b = quantile_interval(dens, *rng.uniform(1e-3, 2e-2, 2))
        phase = float(rng.uniform(0, 2 * np.pi))
        vals = []
        for C in Cs:
            e = (
                np.linspace(a, b, C + 1)
                if partition == "uniform"
                else warped_partition(a, b, C, 0.5, phase)
            )
            vals.append(values_fn(dens, e))
        s, _, r = slope_ci(np.log(Cs), np.log(vals))
        slopes.append(s)
        per_seed.append({"name": dens.name, "slope": s, "r": r, "values": vals})
    m, ci = t_interval(slopes)
    ci = (float(ci[0]), float(ci[1]))
    holds = (
        (abs(m - expected_order) <= band)
        and ci[0] >= expected_order - band
        and ci[1] <= expected_order + band
    )
    return ClaimResult(
        label=claim.label,
        key=f"{claim.key}_{partition}",
        statement=claim.statement,
        holds=bool(holds),
        observed=m,
        bound=float(expected_order),
        ci=ci,
        tolerance=f"mean slope of log TV vs log C over {n_seeds} random densities, 95% t-CI inside "
        f"expected_order +- {band} (pre-asymptotic curvature over C in {[int(c) for c in Cs]})",
        details={
            "slopes": slopes,
            "paper_order": claim.paper_order,
            "paper_rate_holds": bool(ci[1] <= claim.paper_order + band),
            "partition": partition,
            "per_seed": per_seed,
        },
    )


@checked(**_RATE_RULES)
def check_discretization_rate(
    rng: np.random.Generator,
    *,
    n_seeds: int = 6,
    Cs=(32, 64, 128, 256, 512),
    kinds=("gaussian", "mixture", "triangular", "laplace"),
    partition: str = "uniform",
    band: float = 0.1,
) -> ClaimResult:
    """Order in ``C`` of ``TV(p_(a,b], p~)`` (the part of supp-lem:discretization error
    that vanishes).

    Expected order 1 (``int |p - bin mean| ~ Delta^2 |p'| / 4`` per bin: first order for any
    non-constant density); the paper claims ``O(1/C)`` (thm:PPD convergence).
    """

    def tv_trunc(density, edges):
        return discretization_instance(density, edges)["tv_trunc"]

    return _rate(_DISCRETIZATION_RATE, tv_trunc, rng, n_seeds, Cs, kinds, partition, band, -1.0)


@checked(**_RATE_RULES, readout=optional(check_callable), expected_order=finite_scalar)
def check_smax_quad_rate(
    rng: np.random.Generator,
    *,
    readout: Callable | None = None,
    expected_order: float = -2.0,
    n_seeds: int = 6,
    Cs=(32, 64, 128, 256, 512),
    kinds=("gaussian", "mixture"),
    partition: str = "uniform",
    band: float = 0.1,
) -> ClaimResult:
    """Order in ``C`` of ``TV(p_C, p^_C)`` (supp-lem:smax quad).

    The lemma gives ``O(|Gamma|)``; the midpoint rule is second order (``g_c - p(xi_c) Delta_c =
    p''(xi_c) Delta_c^3 / 24 + ...``), so expected order 2 for smooth densities (the default
    ``kinds``). For kinked densities (triangular, Laplace) a kink costs its bin ``O(Delta^2)`` with
    a constant that depends on where the kink falls in the bin, so per-seed slopes scatter; check
    ``details["paper_rate_holds"]`` there.
    """

    def tv(density, edges):
        return smax_quad_instance(density, edges, readout)["tv"]

    return _rate(_SMAX_QUAD_RATE, tv, rng, n_seeds, Cs, kinds, partition, band, expected_order)
