"""The n-generalisation family in the paper's figure layout: fig:exp2-2 (d = 16) and the d = 4 /
d = 8 companions of supp-sec:exp additional, on the pretraining design and under the covariate
shift, each cell read from the strongest run on disk.

"Strongest" means: the longest complete weight-averaged budget run of the cell (``*_budget``
experiments, S = 1000 / 2S = 2000 steps, 4S for two d = 8 cells), else the original 1000-step
last-iterate run. Every cell says which it read and, for a budget run, its budget-doubling
status, so a figure never passes a short run for a converged one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pfntheory.base._checks import choice
from pfntheory.infra.tree import RunSpec

from ..experiments.results import LoadedRun, load_available

__all__ = ["FAMILY", "FamilyCell", "strongest_cells", "plot_family", "coverage_frame"]

#: d -> (the original experiment, its budget-doubled grid).
FAMILY = {
    16: ("fig_exp2_2", "fig_exp2_2_budget"),
    8: ("supp_exp2_d8", "supp_exp2_d8_budget"),
    4: ("supp_exp2_d4", "supp_exp2_d4_budget"),
}
#: The paper's grid of the family (C = 256).
FAMILY_LS = (4, 8, 16, 32)
FAMILY_NMAX = (128, 256, 512)
#: Eval files by design: the pretraining design N(0, I/d) and the covariate shift.
DESIGNS = {"gaussian": "eval.json", "uniform": "eval_uniform.json"}


@dataclass(frozen=True)
class FamilyCell:
    """One (L, n_max) cell of the family, read from its strongest run.

    Attributes
    ----------
    L, n_max : int
    run : LoadedRun
    source : str
        "weight-averaged, <steps> steps" for a budget run, "last iterate, <steps> steps" for an
        original run.
    doubling : str
        The budget-doubling state of the run against its half-budget partner (``plateaued``,
        ``still improving``, ``diverging``, ``too noisy to tell``), or "no doubling" for an
        original run or a budget run whose partner is not on disk.
    """

    L: int
    n_max: int
    run: LoadedRun
    source: str
    doubling: str


def _cell(spec) -> tuple[int, int]:
    return (int(spec.model.L), int(spec.n_max))


def strongest_cells(
    d: int, scale: str = "cpu", root=None, budget_runs: Sequence[LoadedRun] | None = None
) -> dict[tuple[int, int], FamilyCell]:
    """The strongest complete run of every (L, n_max) cell of the family at dimension ``d``
    (seed 0), by cell; cells with no complete run are absent.

    ``budget_runs`` (optional) replaces the budget experiment's runs read from disk (tests)."""
    if d not in FAMILY:
        raise ValueError(f"d must be one of {sorted(FAMILY)} (the family's dimensions), got {d!r}")
    base_name, budget_name = FAMILY[d]
    base, _ = load_available(base_name, scale, root)
    if budget_runs is None:
        budget_runs, _ = load_available(budget_name, scale, root)
    budget = [r for r in budget_runs if isinstance(r.spec, RunSpec) and r.spec.seed == 0]
    states = _doubling_states(budget)
    out: dict[tuple[int, int], FamilyCell] = {}
    for r in base:
        spec = r.spec
        if isinstance(spec, RunSpec) and spec.task.d == d:
            out[_cell(spec)] = FamilyCell(
                *_cell(spec), r, f"last iterate, {spec.steps} steps", "no doubling"
            )
    best: dict[tuple[int, int], tuple[int, LoadedRun]] = {}
    for r in budget:
        spec = r.spec
        assert isinstance(spec, RunSpec)  # budget holds RunSpec runs only
        c = _cell(spec)
        if c not in best or spec.steps > best[c][0]:
            best[c] = (spec.steps, r)
    for c, (steps, r) in best.items():
        out[c] = FamilyCell(
            *c, r, f"weight-averaged, {steps} steps", states.get(r.run_dir.name, "no doubling")
        )
    return out


def _doubling_states(runs: Sequence[LoadedRun]) -> dict[str, str]:
    """Run name -> budget-doubling state, for runs whose half-budget partner is in ``runs``."""
    if not runs:
        return {}
    from ..claims.gating import doubling_statuses

    return {
        name: "no doubling" if st.state == "no half-budget run" else str(st.state)
        for name, st in doubling_statuses(runs).items()
    }


#: The paper's three panels (fig:exp2-2): metric key, exact-PPD key, axis label.
PANELS = (
    ("mse_y", "mse_y_exact", "prediction MSE"),
    ("coverage_90", None, "90% coverage"),
    ("width_90", "width_90_exact", "90% width"),
)


def plot_family(axs, cells: dict[tuple[int, int], FamilyCell], design: str = "gaussian") -> None:
    """The paper's layout: one row per n_max, the three panels of :data:`PANELS` against n', one
    line per L; the exact PPD dashed red (its prediction MSE and interval width, nominal 0.9).
    ``axs`` has shape (3, 3). A missing cell is simply absent from its panel."""
    choice(design, "design", tuple(DESIGNS))
    fname = DESIGNS[design]
    axs = np.asarray(axs)
    if axs.shape != (len(FAMILY_NMAX), len(PANELS)):
        raise ValueError(f"axs must have shape {(len(FAMILY_NMAX), len(PANELS))}, got {axs.shape}")
    colours = dict(zip(FAMILY_LS, ("C0", "C1", "C2", "C3"), strict=True))
    for i, n_max in enumerate(FAMILY_NMAX):
        exact_drawn = [False] * len(PANELS)
        for L in FAMILY_LS:
            cell = cells.get((L, n_max))
            if cell is None or fname not in cell.run.evals:
                continue
            e = cell.run.evals[fname]
            style = "-" if cell.source.startswith("weight") else ":"
            for j, (key, exact, _) in enumerate(PANELS):
                ax = axs[i, j]
                ax.plot(e.n_eval, e.mean[key], style, color=colours[L], lw=1.3, label=f"L={L}")
                if not exact_drawn[j]:
                    ref = np.full(e.n_eval.size, 0.9) if exact is None else e.mean[exact]
                    ax.plot(e.n_eval, ref, "--", color="red", lw=1.2, label="exact PPD")
                    exact_drawn[j] = True
        for j, (_, _, label) in enumerate(PANELS):
            ax = axs[i, j]
            ax.axvline(n_max, color="0.6", lw=0.8)
            ax.set_title(f"n_max={n_max}: {label}", fontsize=10)
            ax.set_xlabel("n'")
        axs[i, 0].set_yscale("log")
    handles, labels = axs[0, 0].get_legend_handles_labels()
    if handles:
        axs[0, -1].legend(handles, labels, fontsize=9, loc="best")


def coverage_frame(
    cells_by_d: dict[int, dict[tuple[int, int], FamilyCell]],
    n_eval: Sequence[int] = (64, 512, 1024),
) -> pd.DataFrame:
    """90% coverage of every cell at ``n_eval`` on both designs (the exact PPD's beside it) and its
    mean 90% width as a multiple of the exact PPD's (an interval that covers by being too wide
    shows), with the run each cell read and its doubling state: one row per (d, L, n_max)."""
    rows = []
    for d, cells in sorted(cells_by_d.items()):
        for (L, n_max), cell in sorted(cells.items()):
            row = {"d": d, "L": L, "n_max": n_max, "run": cell.source, "doubling": cell.doubling}
            for design, fname in DESIGNS.items():
                e = cell.run.evals.get(fname)
                for n in n_eval:
                    tag = "N(0,I/d)" if design == "gaussian" else "shift"
                    if e is None or n not in e.n_eval:
                        row[f"{tag} n'={n}"] = None
                        continue
                    k = e.at(n)
                    ours, exact = e.mean["coverage_90"][k], e.mean["coverage_90_exact"][k]
                    ratio = e.mean["width_90"][k] / e.mean["width_90_exact"][k]
                    row[f"{tag} n'={n}"] = f"{ours:.3f} (exact {exact:.3f}), width {ratio:.2f}x"
            rows.append(row)
    return pd.DataFrame(rows)
