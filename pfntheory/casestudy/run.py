"""End-to-end real-data case studies (fig:sacramento, fig:walker); the command is :mod:`.cli`.

Implements
----------
supp-sec:real data, step by step (:func:`run_casestudy` calls one function per stage:
:func:`prepare_data`, :func:`fit_priors`, :func:`pretrain_pfn`, :func:`predict_grid`,
:func:`heldout_coverage`, :func:`draw_maps`, :func:`collect_results`):

1. data and preprocessing (:mod:`.data`);
2. the empirical-Bayes ARD RBF GP (:mod:`.baseline`): Sacramento on all 552 homes; Walker Lake on a
   random subset of 200 sample points (``walker_splits(..)['eb']``), reported beside the paper's
   printed values; the fitted hyperparameters are kept to :data:`SIGNIFICANT` digits, so that the
   pretraining prior written into the run's ``config.json`` does not move with the host's BLAS;
3. the PFN ``TF^pr`` pretrained on the fitted prior (:mod:`.pfn`), run directory
   ``reports/casestudy/<name>/run-<scale>/`` (resumable; ``checkpoint.pt`` deleted when finished;
   a directory holding a run of another config is refused, naming the fields that differ), with
   its learning curve ``learning_curve.json``;
4. PFN and GP predictive mean and 5%/95% quantiles on the evaluation grid, given the observed data
   as context -- Sacramento: all 552 homes, the 100 x 100 grid over ``[-121.53, -121.33] x [38.38,
   38.69]`` (fig:sacramento); Walker Lake: a separate context of 200 sample points
   (``walker_splits(..)['context']``) and the full 260 x 300 grid of ``walker_exh.csv``
   (fig:walker). The GP of fig:sacramento is the EB GP of the same (full) context, i.e. the PFN's
   own pretraining prior; the GP of fig:walker is, as the text says, "an empirical-Bayes GP fitted
   to the same context", whose hyperparameters differ from the pretraining prior (fitted on the EB
   subset). For Walker Lake the GP at the pretraining prior is reported as well: the difference to
   it is the PFN's approximation error alone;
5. maps like the paper's figures (``maps.png``: PFN top row, GP bottom row; mean, 5%, 95%) and the
   difference maps (``differences.png``, with the near/far boundary);
6. ``results.json`` (atomic, deterministic: no wall times, floats to 6 significant digits): EB fit
   beside the paper's, PFN-vs-GP differences near and far from the observations, held-out coverage
   of the 90% central intervals, a flat ``summary`` and the ``claims``
   (:class:`pfntheory.claims.ClaimResult` kwargs, labels fig:sacramento / fig:walker, keys
   :data:`pfntheory.claims.casestudy.CLAIM_KEYS`), each "undecided" unless the PFN's learning curve
   has plateaued (:func:`pfntheory.claims.casestudy.gate`). Files are written with mode
   :data:`pfntheory.runs.FILE_MODE`.

Definitions (fixed before any result was seen)
----------------------------------------------
* Near / far: a grid cell is *near* the observations when the distance to its nearest context point
  in lengthscale units of the pretraining prior, ``r = min_i sqrt(sum_k (x_k - x_ik)^2 / ell_k^2)``,
  is at most :data:`~pfntheory.claims.casestudy.NEAR_THRESHOLD` ``= 1`` (kernel correlation
  ``exp(-1/2) = 0.61`` with the nearest observation), *far* otherwise.
* Differences: mean absolute difference (MAD) PFN - GP over the cells of a region, on the original
  response scale and in units of the GP's predictive standard deviation at each cell.
* Held-out coverage: Sacramento, 5-fold cross-validation (each home predicted once from the other
  ~441, with the prior fitted on all 552, as the PFN was pretrained); Walker Lake, the 70 sample
  points in neither the EB subset nor the context (context = the 200 of the figure). Both also
  against the exhaustive Walker Lake field on the grid (extra; the sample is preferentially located
  in high-V areas, so this is an extrapolation check, not a calibration one).

Claims (each from the paper's caption; thresholds stated in each ClaimResult; computed in
:mod:`pfntheory.claims.casestudy`)
-----------------------------------------------------------------------------
* "tracks closely" near the data: near-cell MAD of the mean and both quantiles at most
  :data:`~pfntheory.claims.casestudy.CLOSE_MARGIN_SD` ``= 0.2`` GP predictive standard deviations;
* "except in the regions with no nearby observations": far-cell MAD larger than near-cell MAD (mean;
  and both quantiles);
* "similar spatial patterns": Pearson correlation over the grid of PFN and GP maps at least
  :data:`~pfntheory.claims.casestudy.PATTERN_CORR_MIN` ``= 0.9`` for the mean and both quantiles
  (the text of fig:walker; for fig:sacramento it is stricter than the caption, which excepts "the
  regions with no nearby observations": the whole grid includes them). Its details also give the
  correlation without the cells where TF^pr's query recursion expands (``corr_without_expanding``),
  which is what a low value comes from when it comes from those cells;
* held-out coverage of the PFN's 90% interval equal to the GP's within
  :data:`~pfntheory.claims.casestudy.COVERAGE_SE_MULT` ``= 2`` binomial standard errors
  ``sqrt(0.9 * 0.1 / n_heldout)``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import numpy as np

from .. import runs
from .._checks import choice, positive_int, positive_scalar
from ..claims.casestudy import (
    COVERAGE_LEVEL,
    LABELS,
    NEAR_THRESHOLD,
    QUANTITIES,
    coverage_summary,
    gate,
    grid_corr,
    make_claims,
    near_far_summary,
    run_convergence,
)
from ..gp import EBFit, fit_empirical_bayes, log_marginal_likelihood
from .baseline import PAPER_FITS, gaussian_quantiles, gp_predict, walker_splits
from .data import (
    DATASETS,
    SACRAMENTO_BOX,
    WALKER_GRID_SHAPE,
    SpatialData,
    load_dataset,
    load_walker_exhaustive,
    nearest_distance,
    regular_grid,
    walker_grid,
)

__all__ = [
    "N_FOLDS",
    "SACRAMENTO_GRID_SHAPE",
    "default_out_dir",
    "CaseData",
    "prepare_data",
    "fit_priors",
    "pretrain_pfn",
    "predict_grid",
    "heldout_coverage",
    "draw_maps",
    "collect_results",
    "run_casestudy",
]

#: Sacramento held-out coverage: folds of the cross-validation.
N_FOLDS = 5
#: fig:sacramento: regular 100 x 100 grid.
SACRAMENTO_GRID_SHAPE = (100, 100)
#: Significant digits kept in ``results.json`` and of the EB fits (the pretraining prior): the last
#: digits of BLAS sums differ between hosts.
SIGNIFICANT = 6
_REPO_ROOT = Path(__file__).resolve().parents[2]


def _round(x: float) -> float:
    """``x`` to :data:`SIGNIFICANT` significant digits (non-finite values unchanged)."""
    return float(f"{x:.{SIGNIFICANT}g}") if np.isfinite(x) else float(x)


def default_out_dir(name: str) -> Path:
    """``reports/casestudy/<name>`` of the repository."""
    return _REPO_ROOT / "reports" / "casestudy" / choice(name, "dataset", DATASETS)


# ----------------------------------------------------------------------------------------------
# numbers (NumPy only)
# ----------------------------------------------------------------------------------------------
def _fit_dict(f: EBFit) -> dict:
    return {
        "alpha": f.alpha,
        "lengthscales": list(f.lengthscales),
        "sigma": f.noise_std,
        "log_marginal_likelihood": f.log_marginal_likelihood,
    }


# ----------------------------------------------------------------------------------------------
# predictions
# ----------------------------------------------------------------------------------------------
def _gp_maps(fit: EBFit, X, Y, Xq) -> tuple[dict, np.ndarray]:
    """GP mean and 5%/95% quantiles (standardised scale) and the predictive sd."""
    mu, tau = gp_predict(fit, X, Y, Xq)
    q05, q95 = gaussian_quantiles(mu, tau, [0.05, 0.95])
    return {"mean": mu, "q05": q05, "q95": q95}, np.sqrt(tau)


def _pfn_maps(model, X, Y, Xq) -> dict:
    from .pfn import pfn_predict

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


def _fit(X, Y, seed: int, n_restarts: int) -> EBFit:
    """The EB fit with its hyperparameters to :data:`SIGNIFICANT` digits: the last digits of the
    optimum move with the host's BLAS and with round-off changes in :mod:`pfntheory.gp`, and the fit
    is written into the PFN's ``config.json``, so unrounded a finished run would be refused as "a
    different config" on another machine. The rounding moves each hyperparameter by at most 5e-6
    relative, which changes the LML at its optimum only to second order (~1e-9), far inside the
    optimiser's own convergence (1e-6 relative in the LML)."""
    f = fit_empirical_bayes(X, Y, n_restarts=n_restarts, rng=np.random.default_rng(seed))
    return dataclasses.replace(
        f,
        alpha=_round(f.alpha),
        lengthscales=tuple(_round(v) for v in f.lengthscales),
        noise_std=_round(f.noise_std),
    )


def _paper_vs_ours(name: str, fit: EBFit, X, Y, coord_divisor: float) -> dict:
    p = PAPER_FITS[name]
    ours = np.array([fit.alpha, *fit.lengthscales, fit.noise_std])
    paper = np.array([p.alpha, *p.lengthscales, p.noise_std])
    lml_paper = float(log_marginal_likelihood(p.kernel, X, Y, p.noise_var))
    return {
        "ours": _fit_dict(fit),
        "paper": {"alpha": p.alpha, "lengthscales": list(p.lengthscales), "sigma": p.noise_std},
        "param_names": ["alpha", "ell_1", "ell_2", "sigma"],
        "diff_ours_minus_paper": ours - paper,
        "lml_ours": fit.log_marginal_likelihood,
        "lml_at_paper_params": lml_paper,
        "lml_gap": fit.log_marginal_likelihood - lml_paper,
        "n": int(X.shape[0]),
        "coord_divisor": coord_divisor,
        # the same fit in coordinates standardised but not divided by coord_divisor
        "ours_lengthscales_standardised_only": list(np.asarray(fit.lengthscales) * coord_divisor),
    }


# ----------------------------------------------------------------------------------------------
# figures
# ----------------------------------------------------------------------------------------------
def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _panel(ax, values, shape, axes_xy, ctx_xy, *, title: str, labels: tuple, equal: bool, **imshow):
    """One map of a figure: ``values`` on the grid ``axes_xy`` (``shape`` (ny, nx)), the context
    points as white dots with a black rim (visible on any colour map). Returns the image."""
    gx, gy = axes_xy
    ext = (gx[0], gx[-1], gy[0], gy[-1])
    im = ax.imshow(
        np.asarray(values).reshape(shape),
        origin="lower",
        extent=ext,
        aspect="equal" if equal else "auto",
        interpolation="nearest",
        **imshow,
    )
    ax.scatter(
        ctx_xy[:, 0], ctx_xy[:, 1], s=7, c="white", edgecolors="black", linewidths=0.4, zorder=3
    )
    ax.set_xlim(ext[:2])
    ax.set_ylim(ext[2:])
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    return im


def _save(fig, path: Path, title: str) -> None:
    """Title, write (no software tag: the bytes depend on the figure only) and close."""
    fig.suptitle(title, fontsize=11)
    fig.savefig(path, dpi=100, metadata={"Software": None})
    _pyplot().close(fig)


_MAP_NAMES = {"mean": "PPD mean", "q05": "5% quantile", "q95": "95% quantile"}


def _plot_maps(
    path: Path, axes_xy, shape, rows: dict, ctx_xy, *, labels: tuple, unit: str, title: str, equal
) -> None:
    """``maps.png``: one row per model of ``rows`` (name -> maps), one column per quantity, a shared
    colour scale per column (0.5% to 99.5% percentiles of the finite values)."""
    plt = _pyplot()
    fig, axs = plt.subplots(
        len(rows), 3, figsize=(13, 4.0 * len(rows)), squeeze=False, constrained_layout=True
    )
    for j, q in enumerate(QUANTITIES):
        vals = np.concatenate([np.asarray(r[q])[np.isfinite(r[q])] for r in rows.values()])
        vmin, vmax = (np.percentile(vals, 0.5), np.percentile(vals, 99.5)) if vals.size else (0, 1)
        for i, (rname, r) in enumerate(rows.items()):
            im = _panel(
                axs[i, j],
                r[q],
                shape,
                axes_xy,
                ctx_xy,
                title=f"{rname}: {_MAP_NAMES[q]}",
                labels=labels,
                equal=equal,
                cmap="viridis",
                vmin=vmin,
                vmax=vmax,
            )
        fig.colorbar(im, ax=axs[:, j], shrink=0.8, label=unit)
    _save(fig, path, title)


def _plot_differences(
    path: Path,
    axes_xy,
    shape,
    diffs: dict,
    dist,
    threshold,
    ctx_xy,
    *,
    labels: tuple,
    unit: str,
    title: str,
    equal: bool,
) -> None:
    """``differences.png``: PFN - GP per quantity on a symmetric scale (99th percentile of the
    finite |differences|), the near/far boundary ``dist = threshold`` as a black contour."""
    plt = _pyplot()
    fig, axs = plt.subplots(1, 3, figsize=(13, 4.2), constrained_layout=True)
    for ax, q in zip(axs, QUANTITIES, strict=True):
        d = np.asarray(diffs[q])
        fin = d[np.isfinite(d)]
        v = float(np.percentile(np.abs(fin), 99)) if fin.size else 1.0
        im = _panel(
            ax,
            d,
            shape,
            axes_xy,
            ctx_xy,
            title=f"PFN - GP: {_MAP_NAMES[q].replace('PPD ', '')}",
            labels=labels,
            equal=equal,
            cmap="RdBu_r",
            vmin=-v,
            vmax=v,
        )
        ax.contour(
            *axes_xy,
            np.asarray(dist).reshape(shape),
            levels=[threshold],
            colors="k",
            linewidths=0.8,
        )
        fig.colorbar(im, ax=ax, shrink=0.8, label=unit)
    _save(fig, path, title)


# ----------------------------------------------------------------------------------------------
# the pipeline: one function per stage
# ----------------------------------------------------------------------------------------------
def _check_inputs(name, scale, walker_csv, walker_exh_csv, grid_stride, seed, n_restarts):
    from .pfn import SCALES

    choice(name, "dataset", DATASETS)
    if not isinstance(scale, str):
        from .pfn import PFNScale

        if not isinstance(scale, PFNScale):
            raise ValueError(f"scale must be one of {tuple(SCALES)} or a PFNScale, got {scale!r}")
    else:
        choice(scale, "scale", tuple(SCALES))
    for arg, path in (("walker_csv", walker_csv), ("walker_exh_csv", walker_exh_csv)):
        if path is not None and not Path(path).expanduser().is_file():
            raise ValueError(f"{arg}: no such file {Path(path).expanduser().resolve()}")
    positive_int(grid_stride, "grid_stride")
    positive_int(seed, "seed", minimum=0)
    positive_int(n_restarts, "n_restarts", minimum=0)


@dataclasses.dataclass(frozen=True)
class CaseData:
    """Stage 1: the data of one case study, its context and its evaluation grid.

    Attributes
    ----------
    name : str
    data : SpatialData
    ctx_idx : ndarray of int
        The context (all 552 homes; Walker Lake: the 200 points of the figure).
    splits : dict or None
        Walker Lake's ``walker_splits`` (``eb``, ``context``, ``heldout``); None for Sacramento.
    grid_raw : ndarray of shape (m, 2)
        Grid cells in the original coordinates; ``axes_raw`` their two axes; ``shape`` (ny, nx).
    Xq : ndarray of shape (m, 2)
        Grid cells in the model's (standardised) coordinates.
    """

    name: str
    data: SpatialData
    ctx_idx: np.ndarray
    splits: dict | None
    grid_raw: np.ndarray
    axes_raw: tuple
    shape: tuple
    Xq: np.ndarray

    def split(self, key: str) -> np.ndarray:
        """Walker Lake's index set ``key`` of :attr:`splits`; Sacramento has none."""
        if self.splits is None:
            raise ValueError(f"the {self.name} case study has no data splits (Walker Lake only)")
        return self.splits[key]

    @property
    def Xc(self) -> np.ndarray:
        return self.data.X[self.ctx_idx]

    @property
    def Yc(self) -> np.ndarray:
        return self.data.Y[self.ctx_idx]


def prepare_data(name: str, *, walker_csv=None, grid_stride: int = 1, seed: int = 0) -> CaseData:
    """Stage 1: load and preprocess the data (:mod:`.data`), choose the context and the grid."""
    try:
        data = load_dataset(name, walker_csv=walker_csv)
    except FileNotFoundError as err:
        raise ValueError(str(err)) from err
    if name == "sacramento":
        ctx_idx, splits = np.arange(data.n), None
        grid_raw, axes_raw = regular_grid(SACRAMENTO_BOX, SACRAMENTO_GRID_SHAPE)
        shape = (SACRAMENTO_GRID_SHAPE[1], SACRAMENTO_GRID_SHAPE[0])
    else:
        splits = walker_splits(data.n, seed)
        ctx_idx = splits["context"]
        grid_raw, axes_raw = walker_grid(grid_stride)
        shape = (axes_raw[1].size, axes_raw[0].size)
    Xq = data.transform.transform_x(grid_raw)
    return CaseData(name, data, ctx_idx, splits, grid_raw, axes_raw, shape, Xq)


def fit_priors(case: CaseData, *, seed: int = 0, n_restarts: int = 2) -> tuple[EBFit, EBFit, dict]:
    """Stage 2: the empirical-Bayes fits, beside the paper's printed values.

    Returns ``(prior_fit, context_fit, eb)``: the pretraining prior (Sacramento: all homes; Walker
    Lake: the EB subset), the GP compared with on the maps (Sacramento: the same; Walker Lake:
    refitted on the context, as the text says) and the ``eb_fit`` entry of ``results.json``.
    """
    data = case.data
    eb_idx = case.ctx_idx if case.name == "sacramento" else case.split("eb")
    coord_divisor = data.transform.coord_divisor
    prior_fit = _fit(data.X[eb_idx], data.Y[eb_idx], seed, n_restarts)
    eb = _paper_vs_ours(case.name, prior_fit, data.X[eb_idx], data.Y[eb_idx], coord_divisor)
    if case.name == "sacramento":
        return prior_fit, prior_fit, eb
    ctx_fit = _fit(case.Xc, case.Yc, seed + 1, n_restarts)  # "an EB GP fitted to the same context"
    eb["context_refit"] = _paper_vs_ours(case.name, ctx_fit, case.Xc, case.Yc, coord_divisor)
    eb["note"] = (
        "ours in the text's convention (standardised / 0.3); the paper's printed "
        "lengthscales match 'ours_lengthscales_standardised_only' (erratum, see "
        "verify/test_real_data_eb.py)"
    )
    return prior_fit, ctx_fit, eb


def pretrain_pfn(
    case: CaseData,
    prior_fit: EBFit,
    scale,
    run_dir: Path,
    *,
    seed: int = 0,
    device: str = "auto",
    progress: bool = True,
):
    """Stage 3: pretrain ``TF^pr`` on the fitted prior (:mod:`.pfn`; resumable, reused when
    finished). Returns ``(model, config, train_metrics)``."""
    from .pfn import load_pfn, pretrain, pretraining_config

    config = pretraining_config(
        prior_fit,
        case.name,
        scale,
        seed=seed,
        device=device,
        coord_divisor=case.data.transform.coord_divisor,
    )
    _refuse_other_config(config, run_dir)
    pretrain(config, run_dir, progress=progress)
    ckpt = run_dir / runs.CHECKPOINT
    if ckpt.is_file() and (run_dir / runs.WEIGHTS).is_file():
        ckpt.unlink()  # finished: weights, config and metrics are what is kept
    model, _, train_metrics = load_pfn(run_dir, device="cpu")
    return model, config, train_metrics


def _refuse_other_config(config, run_dir: Path) -> None:
    """One-line ``ValueError`` naming the fields when ``run_dir`` holds a run of another config."""
    from ..nn.train import refuse_other_config

    refuse_other_config(
        config, run_dir, hint="delete that directory to retrain, or pass a different --out-dir"
    )


def predict_grid(
    case: CaseData, model, prior_fit: EBFit, ctx_fit: EBFit, threshold: float = NEAR_THRESHOLD
) -> dict:
    """Stage 4: PFN and GP maps on the grid given the context, and their near/far comparison.

    Returns a dict with ``pfn_s``, ``gp_s``, ``gpp_s`` (standardised scale; ``gpp_s`` the GP at the
    pretraining prior, Walker Lake only), ``pfn_o``, ``gp_o`` (original scale), ``dist``,
    ``comparison``, ``comparison_same_prior`` (Walker Lake) and ``baseline`` (what the GP is).
    """
    data, Xc, Yc, Xq = case.data, case.Xc, case.Yc, case.Xq
    pfn_s = _pfn_maps(model, Xc, Yc, Xq)
    gp_s, sd_s = _gp_maps(ctx_fit, Xc, Yc, Xq)
    pfn_o, gp_o = _to_original(data, pfn_s), _to_original(data, gp_s)
    sd_o = data.transform.inverse_y_scale(sd_s)
    dist = nearest_distance(Xq, Xc, prior_fit.lengthscales)
    baseline = (
        "EB GP of the same context (= the pretraining prior)"
        if case.name == "sacramento"
        else "EB GP refitted on the same context (the paper's baseline)"
    )
    comparison = near_far_summary(pfn_o, gp_o, dist, sd_o, threshold)
    near = dist <= threshold
    expanding = pfn_s["skip_factor_max"] > 1.0
    comparison["query_recursion"] = {
        "what": "cells where TF^pr's query-token factor max_l |1 + S_ff/s_x| exceeds 1 (the query "
        "row expands; see pfntheory/casestudy/pfn.py)",
        "frac_expanding_near": float(expanding[near].mean()) if near.any() else float("nan"),
        "frac_expanding_far": float(expanding[~near].mean()) if (~near).any() else float("nan"),
        "max_factor": float(np.max(pfn_s["skip_factor_max"])),
        # the diagnosis of a low whole-grid correlation: the same correlation without those cells
        "corr_without_expanding": {
            q: grid_corr(pfn_o[q][~expanding], gp_o[q][~expanding]) for q in QUANTITIES
        },
    }
    out = {
        "pfn_s": pfn_s,
        "gp_s": gp_s,
        "gpp_s": None,
        "pfn_o": pfn_o,
        "gp_o": gp_o,
        "dist": dist,
        "comparison": comparison,
        "comparison_same_prior": None,
        "baseline": baseline,
    }
    if case.name == "walker":
        gpp_s, sdp_s = _gp_maps(prior_fit, Xc, Yc, Xq)
        out["gpp_s"] = gpp_s
        out["comparison_same_prior"] = near_far_summary(
            pfn_o, _to_original(data, gpp_s), dist, data.transform.inverse_y_scale(sdp_s), threshold
        )
    return out


def heldout_coverage(
    case: CaseData,
    model,
    prior_fit: EBFit,
    ctx_fit: EBFit,
    grid: dict,
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
    try:  # extra: the exhaustive field at the grid nodes (intervals on the standardised scale)
        Xe, ve = load_walker_exhaustive(walker_exh_csv, walker_csv)
        order = {(int(a), int(b)): i for i, (a, b) in enumerate(Xe)}
        at = np.array([order[(int(a), int(b))] for a, b in case.grid_raw])
        v_true = data.transform.transform_y(ve[at])
        pfn_s, gp_s, gpp_s = grid["pfn_s"], grid["gp_s"], grid["gpp_s"]
        cov["exhaustive_grid"] = {
            "pfn": coverage_summary(pfn_s["q05"], pfn_s["q95"], v_true, level),
            "gp": coverage_summary(gp_s["q05"], gp_s["q95"], v_true, level),
            "gp_pretraining_prior": coverage_summary(gpp_s["q05"], gpp_s["q95"], v_true, level),
            "note": "true V of walker_exh.csv at every grid cell; the sample is preferentially "
            "located in high-V areas (sample mean 435 vs field mean 278 ppm)",
        }
    except (FileNotFoundError, KeyError) as err:
        cov["exhaustive_grid"] = {"skipped": str(err)}
    return cov


def draw_maps(
    case: CaseData,
    grid: dict,
    config,
    out_dir: Path,
    *,
    scale_name: str,
    threshold: float = NEAR_THRESHOLD,
) -> dict:
    """Stage 6: the maps of the figure (``maps.png``: PFN top row, GP bottom row) and the
    differences (``differences.png``), the context points marked on every panel."""
    data = case.data
    if case.name == "sacramento":
        axes_plot, ctx_plot = case.axes_raw, data.X_raw[case.ctx_idx]
        labels, equal = ("longitude", "latitude"), False
    else:  # fig:walker: standardised coordinates
        axes_plot = tuple(
            (a - data.transform.x_mean[k]) / data.transform.x_unit[k]
            for k, a in enumerate(case.axes_raw)
        )
        ctx_plot = case.Xc
        labels, equal = ("x (standardised / 0.3)", "y (standardised / 0.3)"), True
    unit = data.response_name
    title = (
        f"{case.name}: PFN TF^pr (L={config.model.L}, C={config.model.C}, {config.steps} steps, "
        f"{scale_name} scale) vs {grid['baseline']}; context n={case.ctx_idx.size} (white dots)"
    )
    figures = {"maps": out_dir / "maps.png", "differences": out_dir / "differences.png"}
    _plot_maps(
        figures["maps"],
        axes_plot,
        case.shape,
        {"PFN": grid["pfn_o"], "GP": grid["gp_o"]},
        ctx_plot,
        labels=labels,
        unit=unit,
        title=title,
        equal=equal,
    )
    _plot_differences(
        figures["differences"],
        axes_plot,
        case.shape,
        {q: grid["pfn_o"][q] - grid["gp_o"][q] for q in QUANTITIES},
        grid["dist"],
        threshold,
        ctx_plot,
        labels=labels,
        unit=unit,
        title=f"{case.name}: PFN - GP; black contour: distance {threshold:g} lengthscale "
        f"to the nearest observation (near inside)",
        equal=equal,
    )
    return figures


def _rounded(obj):
    """``obj`` with every float rounded to :data:`SIGNIFICANT` significant digits."""
    if isinstance(obj, float):
        return _round(obj)
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
    grid: dict,
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
    from .pfn import SCALES

    name, comparison = case.name, grid["comparison"]
    extra = {"coverage_design": cov["design"]}
    claims = make_claims(
        name, comparison, cov, scale=scale_name, baseline=grid["baseline"], extra=extra
    )
    if grid["comparison_same_prior"] is not None:
        same = make_claims(
            name,
            grid["comparison_same_prior"],
            {"pfn": cov["pfn"], "gp": cov["gp_pretraining_prior"]},
            scale=scale_name,
            baseline="GP at the pretraining prior (the PPD the PFN was trained to approximate)",
            extra=extra,
            key_prefix="pretraining_prior/",
        )
        by_key = {c.key: c for c in same}
        claims += [by_key["pretraining_prior/near_close"], by_key["pretraining_prior/coverage"]]
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
        "pfn_learning_curve": conv["trend"],
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
            "convergence": conv,
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
        "baseline": grid["baseline"],
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
    if grid["comparison_same_prior"] is not None:
        results["near_far_same_prior"] = grid["comparison_same_prior"]
    return _rounded(runs._jsonable(results))


def run_casestudy(
    name: str,
    scale="quick",
    out_dir=None,
    *,
    walker_csv=None,
    walker_exh_csv=None,
    seed: int = 0,
    grid_stride: int = 1,
    n_restarts: int = 2,
    device: str = "auto",
    progress: bool = True,
    threshold: float = NEAR_THRESHOLD,
) -> dict:
    """Run one case study end to end and write ``results.json`` and the maps into ``out_dir``.

    The stages, one function each: :func:`prepare_data`, :func:`fit_priors`, :func:`pretrain_pfn`,
    :func:`predict_grid`, :func:`heldout_coverage`, :func:`draw_maps`, :func:`collect_results`. The
    wall time of each is printed (with ``progress``), never written into the results.

    Parameters
    ----------
    name : {'sacramento', 'walker'}
    scale : {'quick', 'cpu', 'paper'} or pfntheory.casestudy.pfn.PFNScale
        PFN sizes (:data:`pfntheory.casestudy.pfn.SCALES`).
    out_dir : path, optional
        Default ``reports/casestudy/<name>``; the PFN run lands in ``out_dir/run-<scale>``.
    walker_csv, walker_exh_csv : path, optional
        Walker Lake sample and exhaustive CSVs (defaults: :func:`.data.walker_csv_path`).
    seed : int
        Seeds the EB restarts, the data splits, the folds and the PFN's training.
    grid_stride : int
        Every ``grid_stride``-th node per axis of the Walker Lake grid (1 = the full 260 x 300
        grid); ignored for Sacramento.
    n_restarts : int
        Random restarts of each EB fit besides the start at all-ones.
    device : str
        Training device ('auto', 'cpu', 'cuda'); inference runs on CPU in float64.
    progress : bool
        Progress bars and the per-stage wall times on stderr.
    threshold : float
        Near/far threshold in lengthscale units.

    Returns
    -------
    dict
        The content of ``results.json``.

    Raises
    ------
    ValueError
        Naming the argument: unknown ``dataset`` or ``scale``, missing ``walker_csv`` /
        ``walker_exh_csv`` file, bad ``grid_stride``, ``seed`` or ``n_restarts``.
    """
    _check_inputs(name, scale, walker_csv, walker_exh_csv, grid_stride, seed, n_restarts)
    threshold = positive_scalar(threshold, "threshold")
    scale_name = scale if isinstance(scale, str) else "custom"
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir(name)
    out_dir.mkdir(parents=True, exist_ok=True)
    run_dir = out_dir / f"run-{scale_name}"
    clock = _StageClock(name, progress)

    with clock("data"):
        case = prepare_data(name, walker_csv=walker_csv, grid_stride=grid_stride, seed=seed)
    with clock("EB fit"):
        prior_fit, ctx_fit, eb = fit_priors(case, seed=seed, n_restarts=n_restarts)
    with clock("pretrain PFN"):
        model, config, train_metrics = pretrain_pfn(
            case, prior_fit, scale, run_dir, seed=seed, device=device, progress=progress
        )
    with clock("grid predictions"):
        grid = predict_grid(case, model, prior_fit, ctx_fit, threshold)
    with clock("held-out coverage"):
        cov = heldout_coverage(
            case,
            model,
            prior_fit,
            ctx_fit,
            grid,
            seed=seed,
            walker_csv=walker_csv,
            walker_exh_csv=walker_exh_csv,
        )
    with clock("maps"):
        figures = draw_maps(case, grid, config, out_dir, scale_name=scale_name, threshold=threshold)
    with clock("results.json"):
        results = collect_results(
            case,
            prior_fit,
            eb,
            config,
            train_metrics,
            run_dir,
            grid,
            cov,
            figures,
            scale=scale,
            scale_name=scale_name,
            out_dir=out_dir,
            threshold=threshold,
        )
        runs.save_json(out_dir / "results.json", results)
    return runs.load_json(out_dir / "results.json")


class _StageClock:
    """Times each stage and prints it to stderr (the wall times are a log, not a result)."""

    def __init__(self, name: str, progress: bool):
        self.name, self.progress = name, progress

    def __call__(self, stage: str):
        import contextlib
        import sys

        @contextlib.contextmanager
        def timed():
            t0 = time.perf_counter()
            yield
            if self.progress:
                print(
                    f"[casestudy {self.name}] {stage}: {time.perf_counter() - t0:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )

        return timed()
