"""fig:exp1 on its strongest runs, for page 07 (``notebooks/07_cpu_scale.py``): the weight-averaged
grid of ``fig_exp1_budget`` at ``2S`` steps, each cell beside its ``S`` run (the replay of the
committed last-iterate cell: same data stream, initialisation and schedule), and each cell's
budget-doubling status (the status its claims are gated on).

- :func:`budget_panels` -- the ``2S`` and ``S`` panels of :func:`pfntheory.report.cpu.exp1_panels`;
- :func:`cell_frame` -- the table: ln E[TV] at 2S with the doubling state, and at S;
- :func:`plot_replay_slices` -- the two slices the paper plots, 2S solid and S dashed;
- :func:`plot_doubling_intervals` -- per cell, the paired fall bought by doubling the budget and
  its 90% interval, in units of the tolerance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pfntheory.infra.tree import RunSpec

from .cpu import Exp1Panel, exp1_panels, plot_fall_rows, state_handles

__all__ = ["budget_panels", "cell_frame", "plot_replay_slices", "plot_doubling_intervals"]


def budget_panels(runs: Sequence, declared: Sequence) -> tuple[list[Exp1Panel], list[Exp1Panel]]:
    """``(2S panels, S panels)`` of ``fig_exp1_budget``: ``runs`` its complete runs, ``declared``
    its design; ``S`` is the smallest steps of each panel's task and mode, ``2S`` twice it."""
    specs = [d for d in declared if isinstance(d, RunSpec)]

    def short(spec) -> int:
        panel = (spec.task.kind, spec.model.mode)
        return min(d.steps for d in specs if (d.task.kind, d.model.mode) == panel)

    out = []
    for factor in (2, 1):
        keep = [d for d in specs if d.steps == factor * short(d)]
        tr = [
            r
            for r in runs
            if isinstance(r.spec, RunSpec) and r.spec.steps == factor * short(r.spec)
        ]
        out.append(exp1_panels(tr, keep))
    return out[0], out[1]


def _cell_text(p: Exp1Panel, q: Exp1Panel, statuses: Mapping, i: int, j: int) -> str:
    """One cell of :func:`cell_frame`: row ``j`` (C), column ``i`` (L)."""
    key = (p.L[i], p.C[j])
    if key not in p.cells:
        return "-"
    st = statuses.get(p.cells[key].run_dir.name)
    state = st.state if st is not None else "no status"
    H, G = p.grid()[0], q.grid()[0]
    s_val = f"{np.log(G[i, j]):.3f}" if np.isfinite(G[i, j]) else "-"
    return f"{np.log(H[i, j]):.3f} ({state}) | S: {s_val}"


def cell_frame(panels: Sequence[Exp1Panel], replay: Sequence[Exp1Panel], statuses: Mapping):
    """One block per panel (rows C, columns L): ``ln E[TV]`` of the 2S cell with its
    budget-doubling state (``statuses`` by run name,
    :func:`pfntheory.claims.gating.doubling_statuses`) and, after ``|``, the S cell's (its
    replay); ``-`` where a run is not on disk."""
    import pandas as pd

    blocks = [
        pd.DataFrame(
            {
                f"L={L}": [_cell_text(p, q, statuses, i, j) for j in range(len(p.C))]
                for i, L in enumerate(p.L)
            },
            index=pd.MultiIndex.from_product([[p.title], list(p.C)], names=["panel", "C"]),
        )
        for p, q in zip(panels, replay, strict=True)
    ]
    return pd.concat(blocks).reset_index() if blocks else pd.DataFrame()


def plot_replay_slices(ax_L, ax_C, panels: Sequence[Exp1Panel], replay: Sequence[Exp1Panel]):
    """The two slices the paper plots, E[TV] (±2 SE) against L at the largest declared C
    (``ax_L``) and against C at the largest declared L (``ax_C``), one colour per panel: the 2S
    cells solid, the S cells (their replay) dashed; log-log, only the cells present."""
    from .plots import log_axis

    for j, (p, q) in enumerate(zip(panels, replay, strict=True)):
        for panel, ls, tag in ((p, "-", "2S"), (q, "--", "S")):
            H, S = panel.grid()
            for ax, x, y, s in (
                (ax_L, np.array(panel.L), H[:, -1], S[:, -1]),
                (ax_C, np.array(panel.C), H[-1, :], S[-1, :]),
            ):
                ok = np.isfinite(y)
                if ok.any():
                    ax.errorbar(
                        x[ok],
                        y[ok],
                        yerr=2 * s[ok],
                        fmt="o",
                        ls=ls,
                        ms=3,
                        capsize=2,
                        color=f"C{j}",
                        label=f"{panel.title}, {tag}",
                    )
    for ax, axis, ticks, fixed in (
        (
            ax_L,
            "depth L",
            panels[0].L if panels else (),
            f"C = {panels[0].C[-1]}" if panels else "",
        ),
        (ax_C, "bins C", panels[0].C if panels else (), f"L = {panels[0].L[-1]}" if panels else ""),
    ):
        ax.set(xlabel=axis, ylabel="E[TV] (±2 SE)", title=f"{fixed}, varying {axis[-1]}")
        if ax.lines:
            log_axis(ax, "xy")
            ax.set_xticks(list(ticks), [str(t) for t in ticks])
            ax.legend(fontsize=6, ncol=2)


def plot_doubling_intervals(axs, panels: Sequence[Exp1Panel], statuses: Mapping) -> list:
    """Why each 2S cell has its status: per panel (one axis of ``axs`` each), one row per cell with
    a doubling status, the paired fall of E[TV] from S to 2S steps and its 90% interval, divided
    by the cell's tolerance (10% of its E[TV]), so ``[-1, 1]`` is "plateaued"; coloured by state.
    Returns the legend handles."""
    for ax, p in zip(axs, panels, strict=True):
        rows = []
        for (L, C), r in sorted(p.cells.items()):
            st = statuses.get(r.run_dir.name)
            if st is None or not st.half_run:
                continue
            if np.isfinite(st.fall) and st.tol > 0:
                rows.append((f"L{L} C{C}", st))
        plot_fall_rows(ax, rows, "fall S -> 2S / tolerance (90% CI)", p.title)
    return state_handles()
