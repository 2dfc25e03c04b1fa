"""Stage 7 of a case study: the caption claims of fig:sacramento / fig:walker, each gated on the
PFN's learning curve, and the content of ``results.json`` (deterministic: no wall times, floats to
:data:`pfntheory.infra.runs.SIGNIFICANT` significant digits)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from pfntheory.casestudy.baseline import PAPER_FITS
from pfntheory.casestudy.data import WALKER_GRID_SHAPE
from pfntheory.casestudy.prepare import CaseData
from pfntheory.infra import runs
from pfntheory.infra.runs import round_significant
from pfntheory.maths.gp import EBFit
from pfntheory.pipelines.casestudy_predict import GridPredictions

from ..claims import ClaimResult
from ..claims.casestudy import (
    LABELS,
    NEAR_THRESHOLD,
    QUANTITIES,
    doubling_gate,
    gate,
    make_claims,
    run_convergence,
)

__all__ = ["collect_results", "budget_claims", "caption_claims"]


def _rounded(obj):
    """``obj`` with every float rounded to :data:`SIGNIFICANT` significant digits."""
    if isinstance(obj, float):
        return round_significant(obj)
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v) for v in obj]
    return obj


def collect_results(
    case: CaseData,
    prior_fit: EBFit,
    eb: dict,
    config,
    train_metrics: dict,
    run_dir: Path,
    grid: GridPredictions,
    cov: dict,
    figures: dict,
    *,
    scale,
    scale_name: str,
    out_dir: Path,
    threshold: float = NEAR_THRESHOLD,
) -> dict:
    """Stage 7: the claims (picked by key) and the content of ``results.json``: no wall times (they
    go to the console), every float to :data:`SIGNIFICANT` digits, so a rerun changes no byte."""
    from pfntheory.casestudy.pfn import SCALES

    name, comparison = case.name, grid.comparison
    claims = caption_claims(
        name, comparison, cov, grid.comparison_same_prior, scale_name, grid.baseline
    )
    conv = run_convergence(run_dir)
    claims = [gate(c, conv) for c in claims]
    sc = config
    summary = {
        "dataset": name,
        "scale": scale_name,
        "L": sc.model.L,
        "C": sc.model.C,
        "steps": sc.steps,
        "batch_size": sc.batch_size,
        "n_pretrain_range": f"[{sc.n_min}, {sc.n_max}]",
        "n_context": int(case.ctx_idx.size),
        "n_grid": int(case.Xq.shape[0]),
        "eb_alpha": prior_fit.alpha,
        "paper_alpha": PAPER_FITS[name].alpha,
        "eb_ell_1": prior_fit.lengthscales[0],
        "paper_ell_1": PAPER_FITS[name].lengthscales[0],
        "eb_ell_2": prior_fit.lengthscales[1],
        "paper_ell_2": PAPER_FITS[name].lengthscales[1],
        "eb_sigma": prior_fit.noise_std,
        "paper_sigma": PAPER_FITS[name].noise_std,
        "near_threshold_lengthscales": threshold,
        "frac_near": comparison["frac_near"],
        **{f"mad_{q}_{r}": comparison[q][f"mad_{r}"] for q in QUANTITIES for r in ("near", "far")},
        **{f"mad_{q}_near_sd": comparison[q]["mad_near_sd"] for q in QUANTITIES},
        **{f"corr_{q}": comparison[q]["corr"] for q in QUANTITIES},
        **{f"corr_{q}_near": comparison[q]["corr_near"] for q in QUANTITIES},
        "frac_far_query_expanding": comparison["query_recursion"]["frac_expanding_far"],
        **{
            f"corr_{q}_without_expanding": comparison["query_recursion"]["corr_without_expanding"][
                q
            ]
            for q in QUANTITIES
        },
        "coverage90_pfn": cov["pfn"]["coverage"],
        "coverage90_gp": cov["gp"]["coverage"],
        "n_heldout": cov["pfn"]["n"],
        "pfn_train_final_loss": train_metrics["loss"]["final_loss"],
        "pfn_learning_curve": conv.trend,
        "claims_holding": f"{sum(c.holds for c in claims)}/{len(claims)}",
    }
    results = {
        "dataset": name,
        "label": LABELS[name],
        "scale": scale_name,
        "pfn_scale": SCALES.get(scale_name, scale) if isinstance(scale, str) else scale,
        "eb_fit": eb,
        "pfn": {
            "run_dir": os.path.relpath(run_dir, out_dir),
            "config": runs.config_to_dict(config),
            "interval": train_metrics["interval"],
            "final_loss": train_metrics["loss"]["final_loss"],
            "n_params": train_metrics["n_params"],
            "convergence": conv.to_dict(),
            "covariates": f"x ~ Unif[-{config.task.scale:.4g}, {config.task.scale:.4g}]^2 = "
            "Unif[-sqrt(3)/0.3, sqrt(3)/0.3]^2, the per-coordinate variance 1/0.3^2 "
            "of the standardised inputs (the paper does not say; the Gaussian "
            "design makes TF^pr's query recursion diverge on isolated queries; "
            "see pfntheory/casestudy/pfn.py)",
        },
        "grid": {
            "n_cells": int(case.Xq.shape[0]),
            "shape_yx": list(case.shape),
            "definition": (
                "100 x 100 over [-121.53, -121.33] x [38.38, 38.69]"
                if name == "sacramento"
                else f"walker_exh.csv grid {WALKER_GRID_SHAPE[0]} x {WALKER_GRID_SHAPE[1]}, "
                f"{case.shape[1]} x {case.shape[0]} nodes used"
            ),
        },
        "baseline": grid.baseline,
        "near_far": {
            "definition": f"near: distance to the nearest context point <= {threshold:g} "
            f"lengthscales of the pretraining prior; MAD on the original scale "
            f"({case.data.response_name}) and in GP predictive sds",
            **comparison,
        },
        "coverage": cov,
        "summary": summary,
        "claims": claims,
        "figures": {k: v.name for k, v in figures.items()},
    }
    if grid.comparison_same_prior is not None:
        results["near_far_same_prior"] = grid.comparison_same_prior
    return _rounded(runs._jsonable(results))


def caption_claims(
    name: str,
    comparison: dict,
    cov: dict,
    same_prior: dict | None,
    scale_name: str,
    baseline: str,
) -> list[ClaimResult]:
    """The caption claims of one case study from its measurements (the near/far ``comparison``
    and the held-out coverage ``cov`` of ``results.json``; ``same_prior``: the comparison with the
    GP at the pretraining prior, whose near-cell and coverage claims are added), ungated."""
    extra = {"coverage_design": cov["design"]}
    claims = make_claims(name, comparison, cov, scale=scale_name, baseline=baseline, extra=extra)
    if same_prior is not None:
        same = make_claims(
            name,
            same_prior,
            {"pfn": cov["pfn"], "gp": cov["gp_pretraining_prior"]},
            scale=scale_name,
            baseline="GP at the pretraining prior (the PPD the PFN was trained to approximate)",
            extra=extra,
            key_prefix="pretraining_prior/",
        )
        by_key = {c.key: c for c in same}
        claims += [by_key["pretraining_prior/near_close"], by_key["pretraining_prior/coverage"]]
    return claims


def _claims_of(doc: dict) -> list[ClaimResult]:
    """:func:`caption_claims` re-derived from a ``results.json`` document's measurements (never
    its stored claims' text, which a former gate may have extended); a document without the
    measurements (``near_far``, ``coverage``) gives its stored claims, ungated."""
    if "near_far" not in doc or "coverage" not in doc:
        return [
            dataclasses.replace(runs.dataclass_from_dict(ClaimResult, c), verdict=None)
            for c in doc["claims"]
        ]
    near_far = {k: v for k, v in doc["near_far"].items() if k != "definition"}
    return caption_claims(
        doc["dataset"],
        near_far,
        doc["coverage"],
        doc.get("near_far_same_prior"),
        doc["scale"],
        doc["baseline"],
    )


def budget_claims(case_dir) -> dict | None:
    """The caption claims of one case study decided by budget doubling: read the two
    ``budget-s<steps>/results.json`` of ``case_dir`` (:func:`pfntheory.pipelines.casestudy_run.
    run_casestudy_budget`), pair the runs' learning curves
    (:func:`pfntheory.infra.convergence.doubling_status`) and gate each claim on them
    (:func:`pfntheory.claims.casestudy.doubling_gate`). None when the pair is not there.

    Returns ``{"claims": [ClaimResult], "status": dict, "results": <2S results.json>,
    "short": <S results.json>, "run_dirs": [S run, 2S run]}``.
    """
    from pfntheory.infra.convergence import doubling_status, read_learning_curve

    case_dir = Path(case_dir)
    found = {}
    for d in sorted(case_dir.glob("budget-s*")):
        steps = d.name.removeprefix("budget-s")
        if steps.isdigit() and (d / "results.json").is_file():
            found[int(steps)] = runs.load_json(d / "results.json")
    pairs = [(s, 2 * s) for s in found if 2 * s in found]
    if not pairs:
        return None
    s, t = max(pairs)
    short, long = found[s], found[t]
    run_dirs = [case_dir / f"budget-s{k}" / r["pfn"]["run_dir"] for k, r in ((s, short), (t, long))]
    curves = [read_learning_curve(rd) for rd in run_dirs]
    short_points, long_points = (c["points"] if c is not None else [] for c in curves)
    cfg = long["pfn"].get("config", {})  # the pretraining range: worse beyond it is not counted
    status = doubling_status(short_points, long_points).replace(
        run=f"budget-s{t}/{run_dirs[1].name}", half_run=f"budget-s{s}/{run_dirs[0].name}"
    )
    if "n_min" in cfg and "n_max" in cfg:
        status = status.within(int(cfg["n_min"]), int(cfg["n_max"]))
    by_key = {c.key: c for c in _claims_of(short)}
    claims = []
    for c in _claims_of(long):
        if c.key not in by_key:
            raise ValueError(f"{case_dir}: claim {c.key!r} is measured at {t} steps only")
        claims.append(doubling_gate(by_key[c.key], c, status))
    return {
        "claims": claims,
        "status": status,
        "results": long,
        "short": short,
        "run_dirs": run_dirs,
    }
