"""The two readings of TF^pr's first layer under the covariate shift, side by side (page 07).

The paper's construction leaves TF^pr's first layer unnormalised (``normalise_first=False``: our
reading, the family's own runs); the authors' public code applies the normalised kernel
attention to the first layer too (``normalise_first=True``; docs/design.md, "Known
ambiguities"; the exact side's erratum on page 06). ``supp_exp2_first_layer`` trains both at S and
2S on the cells that decide it; this module tabulates, per cell and reading, 90% coverage and the
mean 90% width over the exact PPD's on both designs, and plots them against n' with the bands the
rows test (:func:`pfntheory.claims.pretraining_range.check_first_layer_readings`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pfntheory.claims import gating as xgate
from pfntheory.claims.pretraining_range import FIRST_LAYER_READINGS, width_band
from pfntheory.infra.tree import RunSpec

__all__ = ["readings_frame", "plot_readings", "which_reading"]

#: The evaluation file of each design.
_FILES = {"N(0, I/d)": "eval.json", "shift": "eval_uniform.json"}


def _trained(runs: Sequence) -> list:
    return [r for r in runs if isinstance(r.spec, RunSpec)]


def _cell(r) -> tuple[int, int, int]:
    return (int(r.spec.task.d), int(r.spec.model.L), int(r.spec.n_max))


def readings_frame(runs: Sequence):
    """One row per (d, L, n_max, reading, steps) of the complete runs of ``runs``: 90% coverage
    (lowest and highest over n') and the mean 90% width over the exact PPD's (lowest, highest) on
    N(0, I/d) and under the shift, and the run's budget-doubling status on the shift's curves."""
    import pandas as pd

    tr = _trained(runs)
    if not tr:
        raise ValueError("runs: no complete trained run")
    statuses = xgate.doubling_statuses(tr, covariates="uniform")
    rows = []
    for r in sorted(tr, key=lambda r: (*_cell(r), r.spec.model.normalise_first, r.spec.steps)):
        d, L, m = _cell(r)
        row = {
            "d": d,
            "L": L,
            "n_max": m,
            "reading": FIRST_LAYER_READINGS[bool(r.spec.model.normalise_first)][0],
            "steps": int(r.spec.steps),
        }
        for design, f in _FILES.items():
            e = r.evals[f]
            cov = np.asarray(e.mean["coverage_90"])
            ratio = np.asarray(e.mean["width_90"]) / np.asarray(e.mean["width_90_exact"])
            row[f"{design} coverage"] = f"{cov.min():.3f}-{cov.max():.3f}"
            row[f"{design} width / exact"] = f"{ratio.min():.2f}-{ratio.max():.2f}"
        row["shift curve status"] = statuses[r.run_dir.name].state
        rows.append(row)
    return pd.DataFrame(rows)


def plot_readings(axs, runs: Sequence) -> None:
    """Coverage (top row) and width / exact width (bottom row) under the shift against n', one
    column per cell (d, L, n_max), one colour per reading, the cell's longest run solid and
    shorter ones dashed, the exact PPD's coverage dotted; the bands the rows test shaded (coverage
    0.9 -+ its slack; the widths :func:`~pfntheory.claims.pretraining_range.width_band` admits).
    ``axs``: a ``(2, cells)`` array."""
    from pfntheory.claims.gating import COVERAGE_SLACK

    tr = _trained(runs)
    cells = sorted({_cell(r) for r in tr})
    axs = np.asarray(axs)
    if axs.shape != (2, len(cells)):
        raise ValueError(f"axs must have shape (2, {len(cells)}), got {axs.shape}")
    lo, hi = width_band()
    colours = {False: "tab:blue", True: "tab:orange"}
    for j, cell in enumerate(cells):
        a_cov, a_w = axs[0, j], axs[1, j]
        a_cov.axhspan(0.9 - COVERAGE_SLACK, 0.9 + COVERAGE_SLACK, color="0.9")
        a_w.axhspan(lo, hi, color="0.9")
        here = sorted((r for r in tr if _cell(r) == cell), key=lambda r: r.spec.steps)
        longest = here[-1].spec.steps
        for r in here:
            e = r.evals["eval_uniform.json"]
            n = np.asarray(e.n_eval)
            nf = bool(r.spec.model.normalise_first)
            style = dict(
                color=colours[nf],
                ls="-" if r.spec.steps == longest else "--",
                marker="o",
                ms=3,
                label=f"{FIRST_LAYER_READINGS[nf][0]}, "
                + ("longest run" if r.spec.steps == longest else "half its steps"),
            )
            a_cov.plot(n, e.mean["coverage_90"], **style)
            a_w.plot(
                n, np.asarray(e.mean["width_90"]) / np.asarray(e.mean["width_90_exact"]), **style
            )
        e = here[-1].evals["eval_uniform.json"]
        a_cov.plot(
            e.n_eval, e.mean["coverage_90_exact"], color="tab:red", ls=":", label="exact PPD"
        )
        d, L, m = cell
        a_cov.set_title(f"d = {d}, L = {L}, $n_{{max}}$ = {m}")
        a_w.set_xlabel("$n'$")
        for a in (a_cov, a_w):
            a.set_xscale("log", base=2)
    axs[0, 0].set_ylabel("90% coverage under the shift")
    axs[1, 0].set_ylabel("90% width / exact width")
    seen: dict = {}
    for a in axs[0]:
        for h, lab in zip(*a.get_legend_handles_labels(), strict=True):
            seen.setdefault(lab, h)
    axs[0, 0].figure.legend(
        list(seen.values()), list(seen), loc="lower center", ncol=3, frameon=False
    )


def which_reading(rows: Sequence) -> str:
    """One sentence from the gated readings rows (``ClaimResult``s of
    :func:`~pfntheory.claims.pretraining_range.check_first_layer_readings`): per d, the reading
    whose coverage alone holds (the figure's panel) and its width ratios; "" without rows."""
    out = []
    for d in sorted({r.details["d"] for r in rows}):
        cov = {
            r.details["reading"]: r for r in rows if r.details["d"] == d and "_coverage" in r.key
        }
        parts = []
        for part, words in FIRST_LAYER_READINGS.values():
            if part not in cov:
                continue
            r = cov[part]
            ratios = [x for c in r.details["cells"].values() for x in c["width_ratio_90"]]
            covs = [x for c in r.details["cells"].values() for x in c["coverage_90"]]
            parts.append(
                f"{words}: coverage {min(covs):.2f}-{max(covs):.2f} ({r.verdict}), widths "
                f"{min(ratios):.2f}-{max(ratios):.2f}x the exact PPD's"
            )
        out.append(f"d = {d}: " + "; ".join(parts))
    return ". ".join(out) + ("." if out else "")
