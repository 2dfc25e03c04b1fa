"""Stages 4 and 5 of a case study (fig:sacramento, fig:walker): PFN and GP predictive maps on the
grid with their near/far comparison, and the held-out coverage of both 90% central intervals."""

from __future__ import annotations

import dataclasses

import numpy as np

from pfntheory.casestudy.baseline import gaussian_quantiles, gp_predict
from pfntheory.casestudy.data import SpatialData, load_walker_exhaustive, nearest_distance
from pfntheory.casestudy.prepare import CaseData
from pfntheory.maths.gp import EBFit

from ..claims.casestudy import (
    COVERAGE_LEVEL,
    NEAR_THRESHOLD,
    QUANTITIES,
    coverage_summary,
    grid_corr,
    near_far_summary,
)

__all__ = ["N_FOLDS", "GridPredictions", "predict_grid", "heldout_coverage"]

#: Sacramento held-out coverage: folds of the cross-validation.
N_FOLDS = 5


@dataclasses.dataclass(frozen=True)
class GridPredictions:
    """Stage 4: the PFN's and the GP's predictive maps on the grid, given the context.

    Each map is a dict of arrays of shape (m,) over the m grid cells: ``mean``, ``q05``, ``q95``
    (the PFN's maps on the standardised scale also hold ``mu_L``, ``tau_L`` and
    ``skip_factor_max``).

    Attributes
    ----------
    pfn_standardised, gp_standardised : dict
        The maps on the model's (standardised) response scale.
    gp_prior_standardised : dict or None
        Walker Lake: the GP at the pretraining prior (standardised); None for Sacramento.
    pfn_original, gp_original : dict
        ``mean``, ``q05``, ``q95`` on the original response scale.
    distance : ndarray of shape (m,)
        Distance of each cell to its nearest context point, in lengthscales of the pretraining
        prior.
    comparison : dict
        The near/far comparison of PFN and GP (:func:`pfntheory.claims.casestudy.near_far_summary`)
        with the cells where TF^pr's query recursion expands.
    comparison_same_prior : dict or None
        Walker Lake: the same comparison against the GP at the pretraining prior.
    baseline : str
        What the GP is.
    """

    pfn_standardised: dict
    gp_standardised: dict
    gp_prior_standardised: dict | None
    pfn_original: dict
    gp_original: dict
    distance: np.ndarray
    comparison: dict
    comparison_same_prior: dict | None
    baseline: str


def _gp_maps(fit: EBFit, X, Y, Xq) -> tuple[dict, np.ndarray]:
    """GP mean and 5%/95% quantiles (standardised scale) and the predictive sd."""
    mu, tau = gp_predict(fit, X, Y, Xq)
    q05, q95 = gaussian_quantiles(mu, tau, [0.05, 0.95])
    return {"mean": mu, "q05": q05, "q95": q95}, np.sqrt(tau)


def _pfn_maps(model, X, Y, Xq) -> dict:
    from pfntheory.casestudy.pfn import pfn_predict

    p = pfn_predict(model, X, Y, Xq, levels=(0.05, 0.95))
    return {
        "mean": p.mean,
        "q05": p.quantile(0.05),
        "q95": p.quantile(0.95),
        "mu_L": p.mu_L,
        "tau_L": p.tau_L,
        "skip_factor_max": p.skip_factor_max,
    }


def _to_original(data: SpatialData, maps: dict) -> dict:
    return {q: data.transform.inverse_y(maps[q]) for q in QUANTITIES}


def predict_grid(
    case: CaseData, model, prior_fit: EBFit, ctx_fit: EBFit, threshold: float = NEAR_THRESHOLD
) -> GridPredictions:
    """Stage 4: PFN and GP maps on the grid given the context, and their near/far comparison (the
    GP of ``ctx_fit``; for Walker Lake also the GP at the pretraining prior ``prior_fit``)."""
    data, Xc, Yc, Xq = case.data, case.Xc, case.Yc, case.Xq
    pfn_standardised = _pfn_maps(model, Xc, Yc, Xq)
    gp_standardised, gp_sd_standardised = _gp_maps(ctx_fit, Xc, Yc, Xq)
    pfn_original = _to_original(data, pfn_standardised)
    gp_original = _to_original(data, gp_standardised)
    gp_sd = data.transform.inverse_y_scale(gp_sd_standardised)
    distance = nearest_distance(Xq, Xc, prior_fit.lengthscales)
    baseline = (
        "EB GP of the same context (= the pretraining prior)"
        if case.name == "sacramento"
        else "EB GP refitted on the same context (the paper's baseline)"
    )
    comparison = near_far_summary(pfn_original, gp_original, distance, gp_sd, threshold)
    near = distance <= threshold
    expanding = pfn_standardised["skip_factor_max"] > 1.0
    comparison["query_recursion"] = {
        "what": "cells where TF^pr's query-token factor max_l |1 + S_ff/s_x| exceeds 1 (the query "
        "row expands; see pfntheory/casestudy/pfn.py)",
        "frac_expanding_near": float(expanding[near].mean()) if near.any() else float("nan"),
        "frac_expanding_far": float(expanding[~near].mean()) if (~near).any() else float("nan"),
        "max_factor": float(np.max(pfn_standardised["skip_factor_max"])),
        # the diagnosis of a low whole-grid correlation: the same correlation without those cells
        "corr_without_expanding": {
            q: grid_corr(pfn_original[q][~expanding], gp_original[q][~expanding])
            for q in QUANTITIES
        },
    }
    gp_prior_standardised = comparison_same_prior = None
    if case.name == "walker":
        gp_prior_standardised, gp_prior_sd_standardised = _gp_maps(prior_fit, Xc, Yc, Xq)
        comparison_same_prior = near_far_summary(
            pfn_original,
            _to_original(data, gp_prior_standardised),
            distance,
            data.transform.inverse_y_scale(gp_prior_sd_standardised),
            threshold,
        )
    return GridPredictions(
        pfn_standardised=pfn_standardised,
        gp_standardised=gp_standardised,
        gp_prior_standardised=gp_prior_standardised,
        pfn_original=pfn_original,
        gp_original=gp_original,
        distance=distance,
        comparison=comparison,
        comparison_same_prior=comparison_same_prior,
        baseline=baseline,
    )


def heldout_coverage(
    case: CaseData,
    model,
    prior_fit: EBFit,
    ctx_fit: EBFit,
    grid: GridPredictions,
    *,
    seed: int = 0,
    walker_csv=None,
    walker_exh_csv=None,
) -> dict:
    """Stage 5: held-out coverage of the 90% central intervals of the PFN and the GP.

    Sacramento: 5-fold cross-validation; Walker Lake: the 70 points in neither the EB subset nor the
    context, and (extra) the exhaustive field on the grid when ``walker_exh.csv`` is found.
    """
    data, level = case.data, COVERAGE_LEVEL
    if case.name == "sacramento":
        perm = np.random.default_rng(seed).permutation(data.n)
        lo_p, hi_p, lo_g, hi_g = (np.empty(data.n) for _ in range(4))
        for f in np.array_split(perm, N_FOLDS):
            rest = np.setdiff1d(np.arange(data.n), f)
            pm = _pfn_maps(model, data.X[rest], data.Y[rest], data.X[f])
            gm, _ = _gp_maps(prior_fit, data.X[rest], data.Y[rest], data.X[f])
            lo_p[f], hi_p[f], lo_g[f], hi_g[f] = pm["q05"], pm["q95"], gm["q05"], gm["q95"]
        return {
            "pfn": coverage_summary(lo_p, hi_p, data.Y, level),
            "gp": coverage_summary(lo_g, hi_g, data.Y, level),
            "design": f"{N_FOLDS}-fold cross-validation over all {data.n} homes (context = the "
            f"other folds, ~{data.n - data.n // N_FOLDS}); GP and PFN prior fitted on all "
            "homes",
        }
    ho = case.split("heldout")
    Xc, Yc, y_ho = case.Xc, case.Yc, data.Y[ho]
    pm = _pfn_maps(model, Xc, Yc, data.X[ho])
    gm, _ = _gp_maps(ctx_fit, Xc, Yc, data.X[ho])
    gpm, _ = _gp_maps(prior_fit, Xc, Yc, data.X[ho])
    cov = {
        "pfn": coverage_summary(pm["q05"], pm["q95"], y_ho, level),
        "gp": coverage_summary(gm["q05"], gm["q95"], y_ho, level),
        "gp_pretraining_prior": coverage_summary(gpm["q05"], gpm["q95"], y_ho, level),
        "design": f"the {ho.size} sample points in neither the EB subset nor the context "
        f"(context = the {case.ctx_idx.size} points of the figure)",
    }
    gp_prior_grid = grid.gp_prior_standardised
    if gp_prior_grid is None:
        raise ValueError(
            "grid: Walker Lake's predictions must hold the GP at the pretraining prior"
        )
    try:  # extra: the exhaustive field at the grid nodes (intervals on the standardised scale)
        Xe, ve = load_walker_exhaustive(walker_exh_csv, walker_csv)
        order = {(int(a), int(b)): i for i, (a, b) in enumerate(Xe)}
        at = np.array([order[(int(a), int(b))] for a, b in case.grid_raw])
        v_true = data.transform.transform_y(ve[at])
        pfn, gp, gp_prior = grid.pfn_standardised, grid.gp_standardised, gp_prior_grid
        cov["exhaustive_grid"] = {
            "pfn": coverage_summary(pfn["q05"], pfn["q95"], v_true, level),
            "gp": coverage_summary(gp["q05"], gp["q95"], v_true, level),
            "gp_pretraining_prior": coverage_summary(
                gp_prior["q05"], gp_prior["q95"], v_true, level
            ),
            "note": "true V of walker_exh.csv at every grid cell; the sample is preferentially "
            "located in high-V areas (sample mean 435 vs field mean 278 ppm)",
        }
    except (FileNotFoundError, KeyError) as err:
        cov["exhaustive_grid"] = {"skipped": str(err)}
    return cov
