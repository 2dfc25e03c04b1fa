"""fig:exp1's theory panels in the two readings of theory mode, side by side (page 07).

The paper's text learns "the nonzero entries of K = Q per layer" (mode ``theory``, the committed
``fig_exp1_budget`` runs); the authors' public code shares one ``K = Q`` by every layer, learns the
noise ``sigma`` and separate attention and ridge steps per layer (mode ``theory_shared``, the
``fig_exp1_theory_shared`` runs; docs/design.md, "Known ambiguities"). Both are trained at S and 2S
steps, weight-averaged, on the C = 256 row and the L = 32 column of each task; this module puts
their cells beside each other with their budget-doubling statuses
(:func:`pfntheory.claims.gating.doubling_statuses`) and plots them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pfntheory.claims import gating as xgate
from pfntheory.infra.tree import RunSpec

__all__ = ["READINGS", "reading_cells", "readings_frame", "plot_readings"]

#: The two readings: mode -> (short name, where its runs are).
READINGS = {
    "theory": ("per layer (paper's text)", "fig_exp1_budget"),
    "theory_shared": ("shared (public code)", "fig_exp1_theory_shared"),
}


def _on_slice(spec: RunSpec) -> bool:
    return spec.model.C == 256 or spec.model.L == 32


def reading_cells(runs: Sequence) -> dict:
    """The theory-mode cells of ``runs`` (complete LoadedRuns of either experiment) on fig:exp1's
    slices, at their largest budget present: ``(mode, task kind, L, C) -> row`` with the steps, the
    final evaluation's E[TV] averaged over n' and its SE, and the budget-doubling status of the run
    (``state``, the held-out E[TV] at 2S ``value``, the ``fall`` from S and its 90% interval; state
    ``no half-budget run`` when its S run is absent)."""
    tr = [
        r
        for r in runs
        if isinstance(r.spec, RunSpec) and r.spec.model.mode in READINGS and _on_slice(r.spec)
    ]
    statuses = xgate.doubling_statuses(tr)
    out: dict = {}
    for r in sorted(tr, key=lambda r: r.spec.steps):  # the largest budget last, so it stays
        s = r.spec
        st = statuses[r.run_dir.name]
        m, se = r.eval.average("tv")
        out[(s.model.mode, s.task.kind, s.model.L, s.model.C)] = {
            "steps": s.steps,
            "E[TV]": float(m),
            "SE": float(se),
            "state": st.state,
            "value": st.value,
            "fall": st.fall,
            "ci": st.ci,
            "run": r.run_dir.name,
        }
    return out


def readings_frame(cells: dict):
    """One row per (task, L, C) of the slices: each reading's steps, E[TV] (final evaluation,
    averaged over n') and doubling state, and the ratio shared / per layer. A reading without the
    cell on disk shows blanks."""
    import pandas as pd

    keys = sorted({k[1:] for k in cells}, key=lambda k: (k[0], k[2] != 256, k[1], k[2]))
    rows = []
    for kind, L, C in keys:
        row: dict = {"task": kind, "L": L, "C": C}
        for mode, (name, _) in READINGS.items():
            c = cells.get((mode, kind, L, C))
            row[f"{name}: steps"] = c["steps"] if c else None
            row[f"{name}: E[TV]"] = c["E[TV]"] if c else np.nan
            row[f"{name}: SE"] = c["SE"] if c else np.nan
            row[f"{name}: doubling"] = (
                f"{c['state']} (fall {c['fall']:.2g}, 90% CI [{c['ci'][0]:.2g}, {c['ci'][1]:.2g}])"
                if c and np.isfinite(c["fall"])
                else (c["state"] if c else "not on disk")
            )
        a, b = (row[f"{READINGS[m][0]}: E[TV]"] for m in READINGS)
        row["shared / per layer"] = b / a if np.isfinite(a) and np.isfinite(b) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def plot_readings(axs, cells: dict) -> None:
    """E[TV] (±2 SE) against L at C = 256 and against C at L = 32, one line per reading; ``axs``
    is a (2, 2) array of axes: rows BLR, RBF; columns the L slice, the C slice. A cell whose run
    has not plateaued by budget doubling is drawn hollow."""
    styles = {"theory": ("C0", "o", "-"), "theory_shared": ("C3", "s", "--")}
    for i, kind in enumerate(("blr", "rbf")):
        for j, (axis, fixed) in enumerate((("L", 256), ("C", 32))):
            ax = axs[i][j]
            for mode, (name, _) in READINGS.items():
                pts = sorted(
                    (k[2] if axis == "L" else k[3], v)
                    for k, v in cells.items()
                    if k[0] == mode and k[1] == kind and k[3 if axis == "L" else 2] == fixed
                )
                if not pts:
                    continue
                color, marker, ls = styles[mode]
                x = np.array([p[0] for p in pts], dtype=float)
                y = np.array([p[1]["E[TV]"] for p in pts])
                e = np.array([2 * p[1]["SE"] for p in pts])
                ax.errorbar(x, y, yerr=e, color=color, ls=ls, marker=marker, label=name, ms=0)
                plateau = np.array([p[1]["state"] == "plateaued" for p in pts])
                ax.plot(x[plateau], y[plateau], marker, color=color, ls="none")
                ax.plot(x[~plateau], y[~plateau], marker, color=color, ls="none", mfc="none")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            other = "C" if axis == "L" else "L"
            ax.set_title(f"{kind.upper()}: E[TV] against {axis} at {other} = {fixed}")
            ax.set_xlabel(axis)
            ax.set_ylabel("E[TV] (2S, weight-averaged)")
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
