"""Does the authors' histogram-CRPS slip explain the cells of supp-tab:lengthscale-crps that lie
below the exact PPD? Per cell, the deficit of the paper's CRPS below the exact PPD's expected CRPS
against the combined Monte-Carlo SE, before and after adding back the slip's bias ``w / 3``
(:func:`slipped_histogram_crps` models the slip). The reasoning and the stated assumption:
docs/exact-side.md, "The CRPS slip". Torch-free.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from pfntheory.base._checks import (
    array,
    checked,
    mapping,
    optional,
    probability,
    sequence,
)
from pfntheory.base.stats import Z_MARGIN, mean_se
from pfntheory.maths.discretize import bin_edges, check_edges, gaussian_bin_masses
from pfntheory.maths.metrics import histogram_cdf, histogram_crps

from .. import DEFAULT_NOISE_VAR
from . import ERRATUM, FAILS, HOLDS, ClaimResult, checked_args
from .noise import PAPER_INSTANCES, exact_ppd_expected_crps, paper_cell_se

__all__ = [
    "slipped_histogram_crps",
    "paper_bin_width",
    "check_slip_bias",
    "check_crps_slip",
    "reference_floors",
    "PAPER_INSTANCES",
]


@checked(edges=check_edges, probs=array(min_ndim=1), y=array())
def slipped_histogram_crps(edges, probs, y) -> np.ndarray:
    """The authors' histogram CRPS with the slip: exact CRPS minus ``w_c F(y)^2`` for the bin ``c``
    holding ``y`` (a model of their bug, not a metric to use).

    Parameters
    ----------
    edges : ndarray of shape (C + 1,)
    probs : ndarray of shape (B, C)
    y : ndarray of shape (B,), inside ``(edges[0], edges[-1]]``

    Returns
    -------
    ndarray of shape (B,)
    """
    edges = np.asarray(edges, dtype=float)
    y = np.asarray(y, dtype=float)
    if not np.all(np.isfinite(y)) or np.any((y <= edges[0]) | (y > edges[-1])):
        raise ValueError("y must be finite and lie in (edges[0], edges[-1]] (the slip is per bin)")
    c = np.searchsorted(edges, y, side="left") - 1  # y in (g_c, g_c+1]
    w = edges[c + 1] - edges[c]
    F = histogram_cdf(edges, probs, y)
    return histogram_crps(edges, probs, y) - w * F**2


@checked_args("C", "noise_var", "alpha", outside_mass=probability)
def paper_bin_width(
    C: int = 256,
    noise_var: float = DEFAULT_NOISE_VAR,
    alpha: float = 1.0,
    outside_mass: float = 0.002,
) -> float:
    """Bin width ``(b - a)/C`` with ``(a, b] = +- Phi^-1(1 - m/2) sqrt(alpha^2 + sigma^2)``."""
    b = float(ndtri(1 - outside_mass / 2) * np.sqrt(alpha**2 + noise_var))
    return 2 * b / C


@checked_args("C", "n_instances", "seed", "k_se")
def check_slip_bias(
    C: int = 256, n_instances: int = 20000, seed: int = 0, k_se: float = 4.0
) -> ClaimResult:
    """The slip's bias on a calibrated forecast is ``-w/3``: measured on exact discretised Gaussian
    PPDs (``q`` = bin masses of ``N(mu, tau)``, ``y ~ N(mu, tau)`` inside ``(a, b]``)."""
    rng = np.random.default_rng(seed)
    w = paper_bin_width(C)
    a, b = -C * w / 2, C * w / 2
    edges = bin_edges(a, b, C)
    mu = rng.normal(0, 0.5, n_instances)
    tau = rng.uniform(0.05, 0.6, n_instances)
    lo, hi = ndtr((a - mu) / np.sqrt(tau)), ndtr((b - mu) / np.sqrt(tau))
    y = mu + np.sqrt(tau) * ndtri(lo + (hi - lo) * rng.uniform(size=n_instances))  # truncated draw
    y = np.clip(y, np.nextafter(a, b), b)  # round-off of the inverse-CDF draw only
    P = gaussian_bin_masses(mu, tau, edges)
    P = P / P.sum(-1, keepdims=True)
    diff = slipped_histogram_crps(edges, P, y) - histogram_crps(edges, P, y)
    m, se = mean_se(diff)
    return ClaimResult(
        key="crps_slip.bias",
        label="supp-tab:lengthscale-crps",
        statement=f"the slipped histogram CRPS is biased by -w/3 (w = {w:.4f}, C = {C})",
        holds=bool(abs(m + w / 3) <= k_se * se + 1e-12),
        observed=m,
        bound=-w / 3,
        tolerance=f"|bias + w/3| <= {k_se:g} Monte-Carlo SE ({n_instances} instances, seed {seed}; "
        f"SE={se:.2g}); F(Y) is uniform up to the discretisation, E[F^2] = 1/3",
        ci=(m - 2 * se, m + 2 * se),
        details={"w": w, "bias_mean": m, "bias_se": se},
    )


@checked_args("d", results=sequence)
def reference_floors(results, d: int = 16) -> dict:
    """``{(lengthscale, n'): (mean, se, n_instances)}`` of the exact PPD's expected CRPS, the
    ``exact=`` argument of :func:`check_crps_slip`, from exact-PPD reference results
    (``result.json`` documents of RBF tasks); results at another ``d`` are left out."""
    out = {}
    for doc in results:
        task = doc["spec"]["task"]
        if task["d"] != d:
            continue
        m = doc["metrics"]["crps"]
        for j, n in enumerate(doc["n_eval"]):
            out[(task["lengthscale"], n)] = (m["mean"][j], m["se"][j], doc["n_instances"])
    return out


@checked_args(
    "noise_var",
    "C",
    "n_instances",
    "seed",
    "d",
    "k_se",
    paper_crps=mapping,
    exact=optional(mapping),
)
def check_crps_slip(
    paper_crps: dict,
    *,
    noise_var: float = DEFAULT_NOISE_VAR,
    C: int = 256,
    n_instances: int = 200,
    seed: int = 0,
    d: int = 16,
    k_se: float = Z_MARGIN,
    exact: dict | None = None,
) -> ClaimResult:
    """Cells of supp-tab:lengthscale-crps below the exact PPD, before and after undoing the slip.

    Parameters
    ----------
    paper_crps : dict
        ``{(lengthscale, n'): (crps at L=8, 16, 32)}``.
    exact : dict, optional
        ``{(lengthscale, n'): (mean, se, n_instances)}``: the exact PPD's expected CRPS from a
        reference computed elsewhere (the ``cpu`` scale's exact-PPD runs: 4096 contexts per n'),
        used instead of a fresh Monte-Carlo estimate on ``n_instances`` contexts. It must hold
        every cell of ``paper_crps``; ``n_instances`` and ``seed`` are then unused.

    Returns
    -------
    ClaimResult
        ``holds``: after adding back ``w/3`` no cell lies more than ``k_se`` combined SE below the
        exact PPD. ``verdict``: "erratum" when some cell is below before the correction and none
        after (the slip explains them); "holds" when none is below even without it (the deficit is
        within the Monte-Carlo error; the slip is then not needed); "does not hold" when a cell
        stays below after the correction. ``observed``: the largest
        corrected deficit in SE.
    """
    if exact is not None:
        missing = sorted(set(paper_crps) - set(exact))
        if missing:
            raise ValueError(f"exact lacks the cells {missing} of paper_crps")
    rng = np.random.default_rng(seed)
    w = paper_bin_width(C, noise_var)
    rows, worst_raw, worst_fix = [], -np.inf, -np.inf
    for (ell, n), vals in sorted(paper_crps.items()):
        if exact is None:
            mean, se = exact_ppd_expected_crps(
                ell, n, noise_var, d=d, n_instances=n_instances, rng=rng
            )
            n_ref = n_instances
        else:
            mean, se, n_ref = exact[(ell, n)]
        se_paper = paper_cell_se(mean, se, n_ref)
        se_tot = float(np.hypot(se, se_paper))
        for L, v in zip((8, 16, 32), vals, strict=True):
            z_raw = (mean - v) / se_tot
            z_fix = (mean - (v + w / 3)) / se_tot
            worst_raw, worst_fix = max(worst_raw, z_raw), max(worst_fix, z_fix)
            row = {"lengthscale": ell, "n": n, "L": L, "paper": v, "exact": mean, "exact_se": se}
            row |= {"paper_se": se_paper, "deficit": mean - v, "z_raw": z_raw, "z_corrected": z_fix}
            rows.append(row)
    ours = (
        f"{n_instances} instances, seed {seed}"
        if exact is None
        else "exact-PPD reference runs, "
        + ", ".join(sorted({str(v[2]) for v in exact.values()}))
        + " contexts per n'"
    )
    holds = bool(worst_fix <= k_se)
    if not holds:
        verdict = FAILS
    elif worst_raw > k_se:
        verdict = ERRATUM
    else:
        verdict = HOLDS
    return ClaimResult(
        key="crps_slip.explains_table",
        label="supp-tab:lengthscale-crps",
        statement=(
            "after adding back the slip's w/3, no cell of supp-tab:lengthscale-crps lies "
            "below the exact PPD's expected CRPS"
        ),
        holds=holds,
        observed=float(worst_fix),
        bound=k_se,
        verdict=verdict,
        tolerance=(
            f"deficit <= {k_se:g} combined SE (ours: {ours}; "
            f"the paper's {PAPER_INSTANCES}-instance SE from the exact PPD's CRPS spread); "
            f"w = {w:.4f} assumes (a, b] calibrated on N(0, 1 + sigma^2), outside mass 0.002"
        ),
        details=dict(
            w=w,
            slip_bias=-w / 3,
            worst_z_raw=float(worst_raw),
            worst_z_corrected=float(worst_fix),
            n_below_raw=sum(r["z_raw"] > k_se for r in rows),
            n_below_corrected=sum(r["z_corrected"] > k_se for r in rows),
            rows=rows,
        ),
    )
