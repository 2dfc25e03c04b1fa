"""The ``cpu``-scale runs of designs that are still being swept, for the page "The paper's tasks on
a CPU budget" (``notebooks/07_cpu_scale.py``).

The ``cpu`` scale keeps every task setting of the paper and shortens training only; its sweeps fill
their grids over hours, so this page reads whatever runs are complete
(:func:`pfntheory.experiments.results.load_available`) and says which are not. Here:

- :func:`plateau_word` -- one run's learning-curve status in words (a state of
  :data:`pfntheory.infra.convergence.STATES`, or "no curve"), by
  :func:`pfntheory.claims.gating.run_convergence`;
- :class:`Exp1Panel`, :func:`exp1_panels` -- fig:exp1's (L, C) grids per task and parameterisation,
  with holes where a run is not on disk;
- :func:`exp1_slice_claims` -- the fig:exp1 claims ("E[TV] falls with L at the largest C", "... with
  C at the largest L") decided on the cells of the slice that are present, gated by convergence
  exactly as :func:`pfntheory.claims.trained.check_exp1` is; on a complete grid they are its claims;
- :func:`plot_exp1_heatmaps`, :func:`plot_progress`,
  :func:`plot_tv_against_n` -- the page's figures;
- the tables: :mod:`pfntheory.report.cpu_tables`.

Nothing here reads a number that is not in the run files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from pfntheory.base.stats import slope_ci
from pfntheory.claims import ClaimResult
from pfntheory.claims import gating as xgate
from pfntheory.infra.convergence import STATES
from pfntheory.infra.tree import RunSpec

__all__ = [
    "training_hours",
    "CPU",
    "STATUS_WORDS",
    "plateau_word",
    "Exp1Panel",
    "exp1_panels",
    "SliceClaim",
    "exp1_slice_claims",
    "plot_exp1_heatmaps",
    "plot_plateau_intervals",
    "plot_fall_rows",
    "state_handles",
    "STATE_COLOURS",
    "plot_progress",
    "plot_tv_against_n",
    "eval_files",
    "sweep_command",
]

#: The scale this page reads, whatever the report's own scale.
CPU = "cpu"
#: The words :func:`plateau_word` returns.
STATUS_WORDS = (*STATES, "no curve")


def sweep_command(experiment: str) -> str:
    """The command that trains (or resumes) the missing ``cpu`` runs of ``experiment``."""
    return f"pfntheory sweep {experiment} --scale {CPU}"


def training_hours(runs: Sequence) -> float:
    """Measured training hours of ``runs`` (the sum of ``wall_time_s`` in their ``metrics.json``:
    the optimiser steps and the learning-curve evaluations, not the final evaluation); 0 for runs
    without training metrics (exact-side results)."""
    total = 0.0
    for r in runs:
        m = getattr(r, "train_metrics", None) or {}
        total += float(m.get("wall_time_s", 0.0))
    return total / 3600.0


def plateau_word(run, covariates: str | None = None) -> str:
    """The learning-curve status of one loaded run in one of :data:`STATUS_WORDS`.

    Parameters
    ----------
    run : LoadedRun
        A trained run.
    covariates : str, optional
        Read ``learning_curve_<covariates>.json`` (e.g. ``"uniform"``, the covariate shift) instead
        of the run's own curve.
    """
    return xgate.run_convergence(run, covariates).state


@dataclass(frozen=True)
class Exp1Panel:
    """One panel of fig:exp1 (a task and a parameterisation) over its declared (L, C) grid.

    Attributes
    ----------
    kind, mode : str
        Task kind (``"blr"``, ``"rbf"``) and parameterisation (``"theory"``, ``"learnable"``).
    L, C : tuple of int
        The declared depths and bin counts (sorted).
    cells : dict of (int, int) -> LoadedRun
        The complete runs, by (L, C).
    """

    kind: str
    mode: str
    L: tuple[int, ...]
    C: tuple[int, ...]
    cells: dict = field(default_factory=dict)

    @property
    def title(self) -> str:
        return f"{self.kind.upper()} ({self.mode})"

    @property
    def n_declared(self) -> int:
        return len(self.L) * len(self.C)

    def grid(self) -> tuple[np.ndarray, np.ndarray]:
        """``(mean, se)`` of E[TV] averaged over n', arrays of shape (len(L), len(C)); NaN where the
        run is not on disk."""
        H = np.full((len(self.L), len(self.C)), np.nan)
        S = np.full_like(H, np.nan)
        for (L, C), r in self.cells.items():
            H[self.L.index(L), self.C.index(C)], S[self.L.index(L), self.C.index(C)] = (
                r.eval.average("tv")
            )
        return H, S

    def status(self) -> dict:
        """(L, C) -> :func:`plateau_word` of each present cell."""
        return {k: plateau_word(r) for k, r in self.cells.items()}


def exp1_panels(runs: Sequence, declared: Sequence) -> list[Exp1Panel]:
    """fig:exp1's panels, sorted by (task, mode), each over its declared grid.

    Parameters
    ----------
    runs : sequence of LoadedRun
        The complete runs (:func:`~pfntheory.experiments.results.load_available`).
    declared : sequence of RunSpec
        Every run of the design (``get_experiment("fig_exp1").runs(scale)``): it fixes the grids,
        so that a panel with no run on disk still shows every cell, blank.
    """
    keys = sorted({(s.task.kind, s.model.mode) for s in declared if isinstance(s, RunSpec)})
    panels = []
    for kind, mode in keys:
        specs = [s for s in declared if (s.task.kind, s.model.mode) == (kind, mode)]
        cells = {
            (r.spec.model.L, r.spec.model.C): r
            for r in runs
            if isinstance(r.spec, RunSpec) and (r.spec.task.kind, r.spec.model.mode) == (kind, mode)
        }
        panels.append(
            Exp1Panel(
                kind=kind,
                mode=mode,
                L=tuple(sorted({s.model.L for s in specs})),
                C=tuple(sorted({s.model.C for s in specs})),
                cells=cells,
            )
        )
    return panels


@dataclass(frozen=True)
class SliceClaim:
    """One fig:exp1 claim on one slice of one panel.

    Attributes
    ----------
    panel : Exp1Panel
    axis : {"L", "C"}
        The axis along which E[TV] should fall.
    at : int
        The fixed value of the other axis (the declared largest C, resp. L: the slices the paper
        plots).
    present, declared : tuple of int
        The values of ``axis`` on disk, and those the design declares.
    result : ClaimResult or None
        The gated claim; None when fewer than two cells of the slice are present.
    runs : list of LoadedRun
        The runs the claim rests on.
    """

    panel: Exp1Panel
    axis: str
    at: int
    present: tuple[int, ...]
    declared: tuple[int, ...]
    result: ClaimResult | None
    runs: list

    @property
    def cells_text(self) -> str:
        """Which cells the claim rests on, e.g. ``"L in {2, 4, 8} at C=256 (3 of 5 cells)"``."""
        other = "C" if self.axis == "L" else "L"
        vals = ", ".join(map(str, self.present)) or "none"
        return (
            f"{self.axis} in {{{vals}}} at {other}={self.at} "
            f"({len(self.present)} of {len(self.declared)} cells)"
        )


def exp1_slice_claims(
    panel: Exp1Panel,
    z: float = xgate.Z_MARGIN,
    statuses: dict | None = None,
    short: Exp1Panel | None = None,
) -> list[SliceClaim]:
    """The two fig:exp1 claims of ``panel`` on the cells present: E[TV] falls with L at the declared
    largest C, and with C at the declared largest L.

    Each compares the smallest and largest value of the slice present (as
    :func:`pfntheory.claims.trained.check_exp1` compares the ends of a complete grid): it holds iff
    ``TV(first) - TV(last) > z SE`` with the unpaired SE; the log-log slope over the present cells
    is reported beside it. The result is gated by :func:`pfntheory.claims.gating.gate` on exactly
    the runs of the slice (``statuses``: convergence statuses by run name instead of the curves'
    own, e.g. :func:`pfntheory.claims.gating.doubling_statuses`), replaying the comparison on the
    learning curves for a verdict at budget. On a complete grid the numbers equal
    ``check_exp1``'s. ``short``: the panel of the same grid at half the steps (the S runs of a
    budget-doubling grid, :func:`pfntheory.report.exp1_budget.budget_panels`): the same check on
    its cells of the slice is the check at S, so that a slice whose runs got worse by doubling is
    *worse with training* only where the outcome differs between S and 2S
    (:func:`pfntheory.claims.gating.decide`). A run of the slice worse than its initialisation
    is credited with it (:func:`pfntheory.claims.gating.initialisation_counterfactual`): the
    slice is *worse with training* for it only where the check's outcome changes. The minimal
    effect of interest is 10% of the slice's last E[TV]
    (:func:`pfntheory.claims.gating.minimal_effect`).
    """
    out = []
    for axis in ("L", "C"):
        if axis == "L":
            at, declared = panel.C[-1], panel.L
            cells = {L: panel.cells[(L, at)] for L in panel.L if (L, at) in panel.cells}
        else:
            at, declared = panel.L[-1], panel.C
            cells = {C: panel.cells[(at, C)] for C in panel.C if (at, C) in panel.cells}
        present = tuple(sorted(cells))
        runs = [cells[v] for v in present]
        claim = SliceClaim(panel, axis, at, present, tuple(declared), None, runs)
        if len(present) < 2:
            out.append(claim)
            continue
        tv = {v: cells[v].eval.average("tv") for v in present}
        first, last = tv[present[0]], tv[present[-1]]
        D, se = xgate.diff_se(first, last)
        doubling = None
        if short is not None and statuses is not None:
            s_cells = {
                v: short.cells[(v, at) if axis == "L" else (at, v)]
                for v in (present[0], present[-1])
                if ((v, at) if axis == "L" else (at, v)) in short.cells
            }
            if len(s_cells) == 2:
                s_tv = [s_cells[v].eval.average("tv") for v in (present[0], present[-1])]
                Ds, ses = xgate.diff_se(*s_tv)
                at_s = xgate.exceeds(Ds, ses, z, label="fig:exp1", statement="at S")
                at_2s = xgate.exceeds(D, se, z, label="fig:exp1", statement="at 2S")
                doubling = xgate.at_both_budgets(
                    at_s, at_2s, {r.run_dir.name: statuses[r.run_dir.name] for r in runs}
                )
        slope, ci, _ = slope_ci(np.log(present), np.log([tv[v][0] for v in present]))
        ci_text = (
            f"95% CI {ci[0]:.2f} to {ci[1]:.2f}, {len(present)} points"
            if len(present) > 2
            else "2 points, no CI"
        )
        other = "C" if axis == "L" else "L"
        result = xgate.exceeds(
            D,
            se,
            z,
            minimal=xgate.minimal_effect(last[0]),
            key=f"fig_exp1.{panel.kind}.{panel.mode}.tv_falls_with_{axis}",
            label="fig:exp1",
            statement=f"{panel.kind}/{panel.mode}: E[TV] falls with {axis} at {other}={at} "
            f"({axis}={present[0]} -> {present[-1]}; cpu scale, on {claim.cells_text})",
            tolerance=f"TV({axis}={present[0]}) - TV({axis}={present[-1]}) > {z:g} SE "
            f"(SE={se:.2g}); log-log slope in {axis} {slope:.3f} ({ci_text})",
            details={
                "measured": f"drop in E[TV] from {axis}={present[0]} to {axis}={present[-1]} at "
                f"{other}={at}, against {z:g} SE",
                "cells": claim.cells_text,
                "runs": ", ".join(r.run_dir.name for r in runs),
                f"slope_log{axis}": slope,
                "tv_first": first[0],
                "tv_last": last[0],
            },
        )
        gated = xgate.gate(
            result,
            runs,
            replay=xgate.tv_beats(runs[0], runs[-1], z),
            statuses=statuses,
            doubling=doubling,
            recheck=_drop_check(runs[0], runs[-1], z),
        )
        out.append(replace(claim, result=gated))
    return out


def _drop_check(first, last, z: float):
    """The slice's check on evaluations (``check(eval_of)``, see
    :func:`pfntheory.claims.gating.initialisation_counterfactual`): ``TV(first) - TV(last) > z SE``
    on the runs' E[TV] averaged over their evaluation n'."""

    def check(eval_of):
        a, b = eval_of(first).average("tv"), eval_of(last).average("tv")
        D, se = xgate.diff_se(a, b)
        return xgate.exceeds(D, se, z, label="fig:exp1", statement="credited")

    return check


# --------------------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------------------


def _log_range(panels: Sequence[Exp1Panel]) -> tuple[float, float] | None:
    if not panels:
        return None
    logs = np.concatenate([np.log(p.grid()[0]).ravel() for p in panels])
    logs = logs[np.isfinite(logs)]
    return (float(logs.min()), float(logs.max())) if logs.size else None


def plot_exp1_heatmaps(axs, panels: Sequence[Exp1Panel]):
    """One heatmap of ln E[TV] (the natural log, as on the paper's fig:exp1 axes) per panel on
    ``axs``, all on one colour scale; cells not on disk
    hatched and left blank; the title counts the cells present.

    Returns
    -------
    image or None
        The last ``imshow`` image (for a shared colour bar); None when no cell is present.
    """
    from matplotlib.patches import Rectangle

    rng = _log_range(panels)
    vmin, vmax = rng if rng is not None else (0.0, 1.0)
    im = None
    for ax, p in zip(axs, panels, strict=True):
        H, _ = p.grid()
        logH = np.ma.masked_invalid(np.log(H))
        im = ax.imshow(logH, origin="lower", cmap="viridis", aspect="auto", vmin=vmin, vmax=vmax)
        ax.set(
            xticks=range(len(p.C)),
            xticklabels=p.C,
            yticks=range(len(p.L)),
            yticklabels=p.L,
            xlabel="bins C",
            ylabel="depth L",
            title=f"{p.title}: {len(p.cells)} of {p.n_declared} cells",
        )
        ax.grid(False)
        ax.set_facecolor("white")
        for (a, b), v in np.ndenumerate(logH.filled(np.nan)):
            if np.isfinite(v):
                ax.text(
                    b,
                    a,
                    f"{v:.2f}",
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="w" if v < (vmin + vmax) / 2 else "k",
                )
            else:
                ax.add_patch(
                    Rectangle((b - 0.5, a - 0.5), 1, 1, fill=False, hatch="//", ec="0.75", lw=0)
                )
    return im if rng is not None else None


#: Colour of each learning-curve state in :func:`plot_plateau_intervals`.
STATE_COLOURS = {
    "plateaued": "tab:green",
    "still improving": "tab:blue",
    "diverging": "tab:red",
    "too noisy to tell": "tab:orange",
    "too short": "0.5",
}


def plot_plateau_intervals(axs, panels: Sequence[Exp1Panel]) -> list:
    """Why each cell has its status: per panel (one axis of ``axs`` each), one row per present cell
    with a learning curve, its fitted fall of E[TV] over the last log-half of training and the 90%
    confidence interval (:func:`pfntheory.infra.convergence.plateau_status`), both divided by the
    cell's tolerance, so the band ``[-1, 1]`` is "plateaued" for every cell; coloured by state.
    Returns the legend handles (one per state) for a figure legend."""
    for ax, p in zip(axs, panels, strict=True):
        rows = []
        for (L, C), r in sorted(p.cells.items()):
            st = xgate.run_convergence(r)
            if np.isfinite(st.fall) and st.tol > 0:
                rows.append((f"L{L} C{C}", st))
        plot_fall_rows(ax, rows, "fitted fall / tolerance (90% CI)", p.title)
    return state_handles()


def plot_fall_rows(ax, rows: Sequence, xlabel: str, title: str) -> None:
    """One row per ``(name, status)`` of ``rows``: the status's fall of E[TV] and its 90% interval
    divided by its tolerance (so ``[-1, 1]``, shaded, is "plateaued"), coloured by state
    (:data:`STATE_COLOURS`; grey for a state without a colour), on a symlog axis."""
    from matplotlib.ticker import FuncFormatter

    ax.axvspan(-1, 1, color="tab:green", alpha=0.12, lw=0)
    ax.axvline(0, color="k", lw=0.6)
    for y, (_, st) in enumerate(rows):
        lo, hi = st.ci
        c = STATE_COLOURS.get(st.state, "0.5")
        ax.plot([lo / st.tol, hi / st.tol], [y, y], color=c, lw=2)
        ax.plot(st.fall / st.tol, y, "o", color=c, ms=3)
    ax.set_yticks(range(len(rows)), [name for name, _ in rows], fontsize=6)
    ax.set_ylim(-0.7, max(len(rows), 1) - 0.3)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set(xlabel=xlabel, title=title)


def state_handles() -> list:
    """Legend handles, one per learning-curve state of :data:`STATE_COLOURS`."""
    from matplotlib.lines import Line2D

    return [Line2D([], [], color=c, lw=2, label=w) for w, c in STATE_COLOURS.items()]


def plot_progress(ax, counts: dict[str, tuple[int, int]]) -> None:
    """Horizontal bars: for each experiment, its complete runs out of those declared."""
    names = list(counts)
    done = np.array([counts[n][0] for n in names])
    total = np.array([counts[n][1] for n in names])
    y = np.arange(len(names))
    ax.barh(y, np.where(total > 0, 1.0, 0.0), color="0.9", edgecolor="0.6", lw=0.5)
    ax.barh(y, np.where(total > 0, done / np.maximum(total, 1), 0.0), color="C2")
    for i, (d, t) in enumerate(zip(done, total, strict=True)):
        ax.text(1.01, i, f"{d} / {t}", va="center", fontsize=8)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set(xlim=(0, 1.15), xlabel="fraction of the declared cpu runs complete")
    ax.grid(False)


#: The covariate designs a run may be evaluated on, by evaluation file, with their titles.
EVAL_DESIGNS = {
    "eval.json": "as pretrained",
    "eval_uniform.json": "covariate shift Unif[-1/sqrt d, 1/sqrt d]^d",
}


def eval_files(runs: Sequence) -> list[str]:
    """The evaluation files of :data:`EVAL_DESIGNS` that some trained run of ``runs`` has, in that
    order (one panel each in :func:`plot_tv_against_n`)."""
    tr = [r for r in runs if isinstance(r.spec, RunSpec)]
    return [f for f in EVAL_DESIGNS if any(f in r.evals for r in tr)]


def plot_tv_against_n(axs, runs: Sequence) -> list[str]:
    """E[TV] (±2 SE) against the evaluation size n', one line per trained run: colour by depth L
    (and TF / TF^pr),
    marker and line style by n_max (and by the task where the runs' tasks differ, e.g. a table's
    lengthscales, which the label then names), so that twelve runs of a grid stay apart. One axis
    of ``axs`` per evaluation file in :data:`EVAL_DESIGNS` that some run has (in that order), on a
    log y-axis. Returns the evaluation files plotted."""
    from .plots import log_axis

    tr = [r for r in runs if isinstance(r.spec, RunSpec)]
    files = eval_files(tr)
    # colour by depth, and by the attention's normalisation where it varies (fig:exp2-1)
    Ls = sorted({(r.spec.model.L, r.spec.model.normalised) for r in tr})

    def variant(r):  # what besides L tells the runs apart: n_max, and the task (table rows)
        t = r.spec.task
        return (r.spec.n_max, t.kind, t.lengthscale if t.kind == "rbf" else 0.0)

    variants = sorted({variant(r) for r in tr})
    tasks_vary = len({v[1:] for v in variants}) > 1
    styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D", "v", "P"]
    for ax, f in zip(axs, files, strict=False):
        for r in sorted(tr, key=lambda r: (r.spec.model.L, variant(r))):
            if f not in r.evals:
                continue
            e = r.evals[f]
            j = variants.index(variant(r))
            task = ""
            if tasks_vary:
                t = r.spec.task
                task = f", {t.kind}" + (f" ell={t.lengthscale:g}" if t.kind == "rbf" else "")
            ax.errorbar(
                e.n_eval,
                e.mean["tv"],
                yerr=2 * e.se["tv"],
                color=f"C{Ls.index((r.spec.model.L, r.spec.model.normalised))}",
                ls=styles[j % len(styles)],
                marker=markers[j % len(markers)],
                ms=3,
                capsize=2,
                label=f"L={r.spec.model.L}, C={r.spec.model.C}, n_max={r.spec.n_max}{task}"
                + (", TF^pr" if r.spec.model.normalised else ""),
            )
        ax.set(xlabel="evaluation size n'", ylabel="E[TV] (±2 SE)", title=EVAL_DESIGNS[f])
        if ax.lines:
            log_axis(ax, "y")
        ax.legend(fontsize=6)
    return files
