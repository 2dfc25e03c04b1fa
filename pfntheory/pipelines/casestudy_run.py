"""End-to-end real-data case studies (fig:sacramento, fig:walker, supp-sec:real data).

:func:`run_casestudy` calls one function per stage:
:func:`pfntheory.casestudy.prepare.prepare_data` and :func:`pfntheory.casestudy.prepare.fit_priors`
(data, context, grid; empirical-Bayes fits), :func:`pretrain_pfn` (TF^pr on the fitted prior,
:mod:`pfntheory.casestudy.pfn`), :func:`.casestudy_predict.predict_grid` and
:func:`.casestudy_predict.heldout_coverage`, :func:`draw_maps`
(:mod:`pfntheory.report.casestudy_plots`) and :func:`.casestudy_results.collect_results`
(``results.json``). The stages, the near/far and coverage definitions and the caption claims are
described in docs/casestudies.md; the command is :mod:`pfntheory.cli.casestudy`.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from pathlib import Path

from pfntheory.base._checks import choice, positive_int, positive_scalar
from pfntheory.casestudy.data import DATASETS
from pfntheory.casestudy.prepare import CaseData, fit_priors, prepare_data
from pfntheory.infra import runs
from pfntheory.maths.gp import EBFit
from pfntheory.pipelines.casestudy_predict import GridPredictions, heldout_coverage, predict_grid
from pfntheory.pipelines.casestudy_results import collect_results

from ..claims.casestudy import NEAR_THRESHOLD, QUANTITIES
from ..report.casestudy_plots import plot_differences, plot_maps

__all__ = [
    "default_out_dir",
    "pretrain_pfn",
    "draw_maps",
    "run_casestudy",
    "budget_dir",
    "run_casestudy_budget",
]

_REPO_ROOT = Path(__file__).resolve().parents[2]


def default_out_dir(name: str) -> Path:
    """``reports/casestudy/<name>`` of the repository."""
    return _REPO_ROOT / "reports" / "casestudy" / choice(name, "dataset", DATASETS)


def _check_inputs(name, scale, walker_csv, walker_exh_csv, grid_stride, seed, n_restarts):
    from pfntheory.casestudy.pfn import SCALES

    choice(name, "dataset", DATASETS)
    if not isinstance(scale, str):
        from pfntheory.casestudy.pfn import PFNScale

        if not isinstance(scale, PFNScale):
            raise ValueError(f"scale must be one of {tuple(SCALES)} or a PFNScale, got {scale!r}")
    else:
        choice(scale, "scale", tuple(SCALES))
    for arg, path in (("walker_csv", walker_csv), ("walker_exh_csv", walker_exh_csv)):
        if path is not None and not Path(path).expanduser().is_file():
            raise ValueError(
                f"{arg} (--{arg.replace('_', '-')}): no such file "
                f"{Path(path).expanduser().resolve()}"
            )
    positive_int(grid_stride, "grid_stride")
    positive_int(seed, "seed", minimum=0)
    positive_int(n_restarts, "n_restarts", minimum=0)


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
    """Stage 3: pretrain ``TF^pr`` on the fitted prior (:mod:`pfntheory.casestudy.pfn`; resumable,
    reused when finished). Returns ``(model, config, train_metrics)``."""
    from pfntheory.casestudy.pfn import (
        PFNScale,
        load_pfn,
        pretrain,
        pretraining_config,
        scale_settings,
    )

    config = pretraining_config(
        prior_fit, case.name, scale, seed=seed, coord_divisor=case.data.transform.coord_divisor
    )
    _refuse_other_config(config, run_dir)
    every = (scale if isinstance(scale, PFNScale) else scale_settings(scale)).checkpoint_every
    pretrain(config, run_dir, checkpoint_every=every, device=device, progress=progress)
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


def draw_maps(
    case: CaseData,
    grid: GridPredictions,
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
        f"{scale_name} scale) vs {grid.baseline}; context n={case.ctx_idx.size} (white dots)"
    )
    figures = {"maps": out_dir / "maps.png", "differences": out_dir / "differences.png"}
    plot_maps(
        figures["maps"],
        axes_plot,
        case.shape,
        {"PFN": grid.pfn_original, "GP": grid.gp_original},
        ctx_plot,
        labels=labels,
        unit=unit,
        title=title,
        equal=equal,
    )
    plot_differences(
        figures["differences"],
        axes_plot,
        case.shape,
        {q: grid.pfn_original[q] - grid.gp_original[q] for q in QUANTITIES},
        grid.distance,
        threshold,
        ctx_plot,
        labels=labels,
        unit=unit,
        title=f"{case.name}: PFN - GP; black contour: distance {threshold:g} lengthscale "
        f"to the nearest observation (near inside)",
        equal=equal,
    )
    return figures


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
    scale_name: str | None = None,
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
        Walker Lake sample and exhaustive CSVs (defaults:
        :func:`pfntheory.casestudy.data.walker_csv_path`).
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
    scale_name : str, optional
        Name of a :class:`~pfntheory.casestudy.pfn.PFNScale` ``scale`` (its run lands in
        ``out_dir/run-<scale_name>``); default: the scale's key, or "custom".

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
    if scale_name is None:
        scale_name = scale if isinstance(scale, str) else "custom"
    elif not isinstance(scale_name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", scale_name):
        raise ValueError(
            f"scale_name must be a name of lowercase letters, digits and -, got {scale_name!r}"
        )
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


def budget_dir(name: str, steps: int, out_dir=None) -> Path:
    """Where the budget-doubling run of ``steps`` steps of case study ``name`` lands:
    ``<out_dir or reports/casestudy/<name>>/budget-s<steps>``."""
    base = (
        Path(out_dir) if out_dir is not None else default_out_dir(choice(name, "dataset", DATASETS))
    )
    return base / f"budget-s{positive_int(steps, 'steps')}"


def run_casestudy_budget(
    name: str, scale: str = "cpu", out_dir=None, factor: int = 2, **kw
) -> dict[int, dict]:
    """:func:`run_casestudy` at the budget pair of ``scale``
    (:func:`pfntheory.casestudy.pfn.budget_scales`: S and ``factor`` S steps, weight-averaged),
    each into :func:`budget_dir`; the page gates the claims on the longest doubling present
    (:func:`pfntheory.pipelines.casestudy_results.budget_claims`), so ``factor=4`` after the default
    adds the pair 2S, 4S. Returns the two ``results.json`` contents by steps."""
    from pfntheory.casestudy.pfn import budget_scales

    return {
        steps: run_casestudy(
            name, sc, budget_dir(name, steps, out_dir), scale_name=f"{scale}-ema", **kw
        )
        for steps, sc in budget_scales(scale, factor).items()
    }
