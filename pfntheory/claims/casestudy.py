"""The claims of the real-data case studies (fig:sacramento, fig:walker), measured on the PFN's and
the GP's maps (:mod:`pfntheory.pipelines.casestudy_predict` computes them) and gated on the PFN's
convergence.

The definitions (near / far, the margins, the coverage test) are stated in docs/casestudies.md
and fixed before any result was seen. Here:

- :func:`near_far_summary` -- PFN-vs-GP differences on a grid split into cells near / far from the
  observations; :func:`coverage_summary` -- empirical coverage of central intervals;
- :func:`make_claims` -- the captions' claims (keys :data:`CLAIM_KEYS`);
- :func:`run_convergence`, :func:`gate`, :func:`doubling_gate` -- the PFN's convergence and the
  one gate of every trained result (:func:`pfntheory.claims.gating.decide`).

NumPy only.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from pfntheory.base._checks import (
    array,
    as_float_array,
    checked,
    instance_of,
    keys,
    mapping,
    one_of,
    optional,
    positive_array,
    positive_scalar,
    text,
)
from pfntheory.infra.convergence import curve_status
from pfntheory.infra.status import Status, status_rule

from ..casestudy.data import DATASETS
from . import ClaimResult, checked_args
from .gating import Replay, decided

__all__ = [
    "NEAR_THRESHOLD",
    "CLOSE_MARGIN_SD",
    "PATTERN_CORR_MIN",
    "COVERAGE_LEVEL",
    "COVERAGE_SE_MULT",
    "QUANTITIES",
    "LABELS",
    "CLAIM_KEYS",
    "grid_corr",
    "near_far_summary",
    "coverage_summary",
    "make_claims",
    "run_convergence",
    "gate",
    "doubling_gate",
]

#: Near/far threshold in lengthscale units (definition: docs/casestudies.md, "Definitions").
NEAR_THRESHOLD = 1.0
#: "Tracks closely": near-cell MAD at most this many GP predictive standard deviations.
CLOSE_MARGIN_SD = 0.2
#: "Similar spatial patterns": grid correlation of PFN and GP maps at least this.
PATTERN_CORR_MIN = 0.9
#: Central interval of the coverage check and the binomial standard errors allowed.
COVERAGE_LEVEL = 0.9
COVERAGE_SE_MULT = 2.0
#: The three maps of each figure: PPD mean, 5% and 95% quantiles.
QUANTITIES = ("mean", "q05", "q95")
#: The paper label of each case study.
LABELS = {"sacramento": "fig:sacramento", "walker": "fig:walker"}


def _mad(a, b) -> float:
    return float(np.mean(np.abs(a - b))) if a.size else float("nan")


def _map(x, name: str) -> np.ndarray:
    """A map over the grid: a finite 1-d array."""
    return as_float_array(x, name, ndim=1)


def _maps_rule(x, name: str):
    """The maps of one predictor: a mapping holding :data:`QUANTITIES`."""
    return keys(*QUANTITIES)(x, name)


@checked(a=_map, b=_map)
def grid_corr(a, b) -> float:
    """Pearson correlation of two maps of one shape (finite 1-d arrays); NaN when undefined (fewer
    than 3 points or a constant map): the documented non-finite result."""
    if a.shape != b.shape:
        raise ValueError(f"a and b must have one shape, got {a.shape} and {b.shape}")
    if a.size < 3 or np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


@checked(
    pfn=_maps_rule,
    gp=_maps_rule,
    dist=array(ndim=1, non_empty=True),
    sd_gp=positive_array,
    threshold=positive_scalar,
)
def near_far_summary(pfn: dict, gp: dict, dist, sd_gp, threshold: float = NEAR_THRESHOLD) -> dict:
    """PFN-vs-GP differences on a grid split into cells near / far from the observations.

    Parameters
    ----------
    pfn, gp : dict of ndarray of shape (m,)
        Maps keyed by :data:`QUANTITIES` (same units).
    dist : ndarray of shape (m,)
        Distance of each cell to its nearest observation in lengthscale units.
    sd_gp : ndarray of shape (m,)
        GP predictive standard deviation at each cell (same units as the maps).
    threshold : float
        Near means ``dist <= threshold``.

    Returns
    -------
    dict
        ``threshold``, ``n_cells``, ``n_near``, ``n_far``, ``frac_near`` and per quantity
        ``mad_all``, ``mad_near``, ``mad_far`` (original units), ``mad_near_sd``, ``mad_far_sd``
        (``mean(|PFN - GP| / sd_gp)``), ``ratio_far_near`` (``mad_far / mad_near``), ``corr``
        (Pearson over the grid), ``corr_near`` (over the near cells), ``max_abs`` and
        ``n_nonfinite`` (cells where the PFN output is not finite; they count as an infinite
        difference, so any such cell makes the region's MAD infinite).
    """
    dist = np.asarray(dist, dtype=float)
    sd_gp = np.asarray(sd_gp, dtype=float)
    if dist.ndim != 1 or sd_gp.shape != dist.shape:
        raise ValueError(
            f"dist and sd_gp must be 1-d of equal length, got {dist.shape} and {sd_gp.shape}"
        )
    near = dist <= threshold
    out: dict[str, Any] = {
        "threshold": threshold,
        "n_cells": int(dist.size),
        "n_near": int(near.sum()),
        "n_far": int((~near).sum()),
        "frac_near": float(near.mean()) if dist.size else float("nan"),
    }
    for q in QUANTITIES:
        if q not in pfn or q not in gp:
            raise ValueError(f"pfn and gp must hold the maps {QUANTITIES}, missing {q!r}")
        a, b = np.asarray(pfn[q], dtype=float), np.asarray(gp[q], dtype=float)
        if a.shape != dist.shape or b.shape != dist.shape:
            raise ValueError(f"map {q!r} must have shape {dist.shape}, got {a.shape} and {b.shape}")
        diff = np.where(np.isfinite(a), np.abs(a - b), np.inf)
        fin = np.isfinite(a)
        r = {
            "mad_all": float(np.mean(diff)) if diff.size else float("nan"),
            "mad_near": _mad(diff[near], 0.0),
            "mad_far": _mad(diff[~near], 0.0),
            "mad_near_sd": _mad(diff[near] / sd_gp[near], 0.0),
            "mad_far_sd": _mad(diff[~near] / sd_gp[~near], 0.0),
            "max_abs": float(np.max(diff)) if diff.size else float("nan"),
            "n_nonfinite": int((~fin).sum()),
            "n_nonfinite_near": int((~fin & near).sum()),
        }
        with np.errstate(divide="ignore", invalid="ignore"):  # x/0 = inf, 0/0 = nan
            r["ratio_far_near"] = float(np.float64(r["mad_far"]) / np.float64(r["mad_near"]))
        r["corr"] = grid_corr(a[fin], b[fin])
        r["corr_near"] = grid_corr(a[fin & near], b[fin & near])
        out[q] = r
    return out


@checked_args("level", lo=array(allow_nan=True), hi=array(allow_nan=True), y=array())
def coverage_summary(lo, hi, y, level: float = COVERAGE_LEVEL) -> dict:
    """Empirical coverage of ``[lo, hi]`` (closed) for ``y``, with its binomial standard error at
    the nominal ``level`` and the mean width. Non-finite bounds count as not covering (the mean
    width is then ``inf``: the documented non-finite result)."""
    lo, hi, y = (np.asarray(v, dtype=float) for v in (lo, hi, y))
    if not (lo.shape == hi.shape == y.shape) or y.ndim != 1 or y.size == 0:
        raise ValueError(
            f"lo, hi, y must be non-empty 1-d of equal shape, got {lo.shape}, {hi.shape}, {y.shape}"
        )
    inside = (lo <= y) & (y <= hi)
    return {
        "coverage": float(inside.mean()),
        "n": int(y.size),
        "nominal": float(level),
        "se_nominal": float(np.sqrt(level * (1 - level) / y.size)),
        "mean_width": float(np.mean(hi - lo)) if np.all(np.isfinite(hi - lo)) else float("inf"),
    }


#: The keys of :func:`make_claims`' claims, in order (pick a claim by key, never by position).
CLAIM_KEYS = (
    "near_close",
    "mean_far_vs_near",
    "quantiles_far_vs_near",
    "pattern_corr",
    "pattern_corr_near",
    "coverage",
)
_MEASURED = {
    "near_close": (
        "worst near-cell mean |PFN - GP| over mean, 5% and 95% maps, in GP predictive sds"
    ),
    "mean_far_vs_near": "mean |PFN - GP| of the PPD mean, far cells / near cells",
    "quantiles_far_vs_near": "mean |PFN - GP| far / near, the smaller of the 5% and 95% quantiles",
    "pattern_corr": "smallest grid correlation of PFN and GP maps (mean, 5%, 95%)",
    "pattern_corr_near": "smallest correlation of PFN and GP maps over the near cells (mean, 5%, "
    "95%): the caption's exception of regions without nearby observations",
    "coverage": "held-out 90% coverage, PFN minus GP",
}


@checked(
    name=one_of(DATASETS),
    comparison=keys("threshold", "n_near", "n_far", *QUANTITIES),
    coverage=keys("pfn", "gp"),
    scale=text,
    baseline=text,
    extra=optional(mapping),
    key_prefix=text,
)
def make_claims(
    name: str,
    comparison: dict,
    coverage: dict,
    *,
    scale: str,
    baseline: str,
    extra: dict | None = None,
    key_prefix: str = "",
) -> list[ClaimResult]:
    """The claims of fig:sacramento / fig:walker measured on ``comparison`` (from
    :func:`near_far_summary`) and ``coverage`` (``{'pfn': .., 'gp': ..}`` from
    :func:`coverage_summary`). ``baseline`` names the GP compared with; ``extra`` adds details.
    Each claim's key is ``key_prefix`` + one of :data:`CLAIM_KEYS`; its details say what was
    measured (``measured``) and against which GP (``variant``)."""
    label = LABELS[name]
    c = comparison
    where = f"{name}, {scale} scale, PFN vs {baseline}"
    common = {
        "scale": scale,
        "baseline": baseline,
        "near_threshold": c["threshold"],
        "n_near": c["n_near"],
        "n_far": c["n_far"],
        **(extra or {}),
        "variant": f"PFN vs {baseline.split(' (')[0]}",
    }

    def claim(key, statement, holds, observed, bound, tolerance, **details) -> ClaimResult:
        """One caption claim; ``tolerance`` a str, or a tuple of its clauses."""
        return ClaimResult(
            label=label,
            statement=f"{where}: {statement}",
            holds=bool(holds),
            observed=float(observed),
            bound=bound,
            tolerance="" if isinstance(tolerance, tuple) else tolerance,
            tolerance_clauses=tolerance if isinstance(tolerance, tuple) else (),
            details={**common, **details, "measured": _MEASURED[key]},
            key=key_prefix + key,
        )

    near_sd = {q: c[q]["mad_near_sd"] for q in QUANTITIES}
    worst = max(near_sd.values())
    r_mean = c["mean"]["ratio_far_near"]
    ratios = {q: c[q]["ratio_far_near"] for q in ("q05", "q95")}
    r_q = min(ratios.values())
    corr = {q: c[q]["corr"] for q in QUANTITIES}
    cmin = min(corr.values())
    corr_near = {q: c[q]["corr_near"] for q in QUANTITIES}
    cmin_near = min(corr_near.values())
    cp, cg = coverage["pfn"], coverage["gp"]
    tol = COVERAGE_SE_MULT * cp["se_nominal"]
    gap = cp["coverage"] - cg["coverage"]
    claims = [
        claim(
            "near_close",
            "near the observations the PFN's mean and 5%/95% quantiles track the GP's "
            f"(near-cell MAD <= {CLOSE_MARGIN_SD} GP predictive sd)",
            np.isfinite(worst) and worst <= CLOSE_MARGIN_SD,
            worst,
            CLOSE_MARGIN_SD,
            (
                f"margin {CLOSE_MARGIN_SD} GP sd, fixed in advance (a 0.2-sd shift of a 5% "
                "quantile moves its level by about 2 points)",
                f"near = r <= {c['threshold']} lengthscales",
            ),
            mad_near_sd=near_sd,
            mad_near={q: c[q]["mad_near"] for q in QUANTITIES},
        ),
        claim(
            "mean_far_vs_near",
            "the PFN mean tracks the GP mean near the data better than far from it "
            "(MAD far / MAD near > 1)",
            r_mean > 1.0,
            r_mean,
            1.0,
            "strict: ratio > 1 (the caption: 'closely overall except in the regions with no "
            "nearby observations'); both regions need cells",
            mad_near=c["mean"]["mad_near"],
            mad_far=c["mean"]["mad_far"],
        ),
        claim(
            "quantiles_far_vs_near",
            "the PFN's 5% and 95% quantiles track the GP's near the data better than "
            "far from it (MAD far / MAD near > 1 for both)",
            r_q > 1.0,
            r_q,
            1.0,
            "strict: both ratios > 1",
            ratio_far_near=ratios,
            mad_near={q: c[q]["mad_near"] for q in ("q05", "q95")},
            mad_far={q: c[q]["mad_far"] for q in ("q05", "q95")},
        ),
        claim(
            "pattern_corr",
            f"PFN and GP maps show similar spatial patterns (grid correlation >= "
            f"{PATTERN_CORR_MIN} for the mean and both quantiles)",
            np.isfinite(cmin) and cmin >= PATTERN_CORR_MIN,
            cmin,
            PATTERN_CORR_MIN,
            f"Pearson correlation over all grid cells >= {PATTERN_CORR_MIN}",
            corr=corr,
            corr_near={q: c[q]["corr_near"] for q in QUANTITIES},
            corr_without_expanding=c.get("query_recursion", {}).get("corr_without_expanding"),
        ),
        claim(
            "pattern_corr_near",
            "near the observations PFN and GP maps show similar spatial patterns (correlation "
            f"over the near cells >= {PATTERN_CORR_MIN} for the mean and both quantiles): the "
            "caption's reading, which excepts the regions with no nearby observations",
            np.isfinite(cmin_near) and cmin_near >= PATTERN_CORR_MIN,
            cmin_near,
            PATTERN_CORR_MIN,
            f"Pearson correlation over the near cells (r <= {c['threshold']} lengthscales) >= "
            f"{PATTERN_CORR_MIN}",
            corr=corr,
            corr_near=corr_near,
        ),
        claim(
            "coverage",
            "the PFN's 90% central intervals cover held-out observations as often as "
            f"the GP's (|difference| <= {COVERAGE_SE_MULT:g} binomial SE)",
            abs(gap) <= tol,
            gap,
            0.0,
            f"|cov_PFN - cov_GP| <= {COVERAGE_SE_MULT:g} sqrt(0.9*0.1/n) = {tol:.3f} "
            f"(n = {cp['n']})",
            coverage_pfn=cp["coverage"],
            coverage_gp=cg["coverage"],
            n_heldout=cp["n"],
            width_pfn=cp["mean_width"],
            width_gp=cg["mean_width"],
        ),
    ]
    assert tuple(cl.key for cl in claims) == tuple(key_prefix + k for k in CLAIM_KEYS)
    return claims


def run_convergence(run_dir: Path) -> Status:
    """Plateau status of the PFN's E[TV] learning curve
    (:func:`pfntheory.infra.convergence.plateau_status` on ``learning_curve.json``), its one line in
    ``trend``; a run without a curve never plateaued."""
    return curve_status(run_dir, metric="tv")


def _decided(claim: ClaimResult, status: Status, replay: Replay | None = None) -> ClaimResult:
    """``claim`` gated on the one run's ``status`` by the one gate
    (:func:`pfntheory.claims.gating.decided`): its kind and decision; the tolerance stays the
    claim's own (the convergence criterion shared by every row is stated once, on the page)."""
    details = {**claim.details, "convergence": status.to_dict()}
    return decided(claim, {status.run or "PFN": status}, replay=replay, details=details)


@checked(claim=instance_of(ClaimResult), conv=status_rule("state", "plateaued"))
def gate(claim: ClaimResult, conv) -> ClaimResult:
    """``claim`` gated on the PFN's run by the one gate (:func:`pfntheory.claims.gating.decide`):
    *worse with training* when the run got worse, the measurement's verdict when it has
    plateaued, *undecided* otherwise (no replay: a map is not on the curve). ``holds`` stays the
    measurement."""
    return _decided(claim, conv)


@checked(
    short=instance_of(ClaimResult),
    long=instance_of(ClaimResult),
    status=status_rule("state", "plateaued", "criterion", "short_step", "last_step"),
)
def doubling_gate(short: ClaimResult, long: ClaimResult, status) -> ClaimResult:
    """The verdict of one caption claim measured on the PFN trained for S (``short``) and 2S
    (``long``) steps, by the one gate (:func:`pfntheory.claims.gating.decide`) on the budget
    doubling of the two runs (``status``, :func:`pfntheory.infra.convergence.doubling_status`;
    docs/verdicts.md) with the check's outcomes at S and 2S as its replay: *worse with training*
    when the 2S model got worse (diverging, or worse than its initialisation at some n'); the 2S
    measurement's *holds* / *does not hold* when the pair has plateaued; *holds / fails at budget*
    when the check has one outcome at S and 2S; *undecided* when it changes between them."""
    if short.key != long.key:
        raise ValueError(f"short and long must be one claim, got keys {short.key!r}, {long.key!r}")
    st = status
    if st.short_step is None:
        raise ValueError("status must be a budget-doubling status (with short_step)")
    rep = Replay.at_budgets(
        (int(st.short_step), int(st.last_step or 0)), (bool(short.holds), bool(long.holds))
    )
    out = _decided(long, st, rep)
    return dataclasses.replace(out, details={**out.details, "holds_at_S": short.holds})


def scores_against_start(curves: dict[str, list[dict]], metrics=("nll", "crps")) -> dict:
    """Held-out proper scores of the weight-averaged PFN against step 0 (the construction's
    initialisation) at each curve ``n'`` (issue 47: E[TV] alone hides them).

    ``curves``: learning-curve points by run label (e.g. ``{"2000 steps": [...], "4000 steps":
    [...]}``), each point with ``step``, ``n`` and ``<metric>``/``<metric>_se``. Per run, ``n'`` and
    metric: the value at step 0 and at the run's last step, their difference (positive: worse, both
    scores being lower-is-better) and the instance SE of each. The runs score the same held-out
    instances (one evaluation seed), but per-instance NLL and CRPS are not stored, so the paired SE
    of the difference is unknown; the unpaired SE ``sqrt(se_0^2 + se_1^2)`` over-states it (the two
    predictives are within 0.02 E[TV] of each other on every instance). Returns ``{"rows": [...],
    "worse": number of (run, n', metric) with a higher score than at step 0, "total": their count,
    "text": one sentence}``.
    """
    rows = []
    for label, points in curves.items():
        last = max(int(p["step"]) for p in points)
        at = {(int(p["step"]), int(p["n"])): p for p in points}
        for n in sorted({int(p["n"]) for p in points}):
            p0, p1 = at.get((0, n)), at.get((last, n))
            if p0 is None or p1 is None:
                continue
            for m in metrics:
                d = float(p1[m]) - float(p0[m])
                rows.append(
                    {
                        "run": label,
                        "n'": n,
                        "metric": m,
                        "step 0": float(p0[m]),
                        "end": float(p1[m]),
                        "end - step 0": d,
                        "unpaired SE": float(np.hypot(p0[f"{m}_se"], p1[f"{m}_se"])),
                    }
                )
    worse = sum(r["end - step 0"] > 0 for r in rows)
    parts = [
        "{} n'={} {:.4f} -> {:.4f}".format(r["metric"].upper(), r["n'"], r["step 0"], r["end"])
        for r in rows
        if r["run"] == list(curves)[-1]
    ]
    text_ = (
        f"held-out NLL and CRPS are higher than at step 0 in {worse} of {len(rows)} (run, n', "
        f"score) pairs ({list(curves)[-1]}: " + "; ".join(parts) + "); differences of at most "
        f"{max((abs(r['end - step 0']) for r in rows), default=0.0):.3g} against unpaired SEs "
        f"of {min((r['unpaired SE'] for r in rows), default=0.0):.2g} or more (per-instance scores "
        "are not stored, so the paired SE is unknown)"
    )
    return {"rows": rows, "worse": worse, "total": len(rows), "text": text_}
