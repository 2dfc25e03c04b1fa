"""fig:exp2-1 with its mechanism, for page 07 (``notebooks/07_cpu_scale.py``): the E[TV] curves of
the runs fig:exp2-1's rows read beside the learned solver's contraction diagnostic
(:mod:`pfntheory.claims.breakdown`, ``breakdown.json`` beside the runs).

- :func:`breakdown_runs` -- the runs of the analysis, as loaded runs;
- :func:`plot_breakdown` -- E[TV] against n' (committed evaluation and beyond), with the predicted
  onset and breakdown and the check's threshold; ``log ||prod_l M_l||_2`` against n';
- :func:`breakdown_lines` -- one line per run in words.

Nothing here reads a number that is not in the run files or the analysis.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pfntheory.claims import breakdown as xbd
from pfntheory.infra.tree import RunSpec

__all__ = ["breakdown_runs", "plot_breakdown", "breakdown_lines"]

_STYLE = {False: ("tab:red", "o", "TF (unnormalised)"), True: ("tab:blue", "s", "TF^pr")}


def breakdown_runs(runs: Sequence, doc: dict) -> list:
    """The trained runs of ``runs`` that the analysis ``doc`` covers (TF first)."""
    tr = [r for r in runs if isinstance(r.spec, RunSpec) and r.run_dir.name in doc]
    return sorted(tr, key=lambda r: bool(r.spec.model.normalised))


def _curve(r, a: dict) -> tuple[list, np.ndarray, np.ndarray]:
    e = r.eval
    ns = [int(n) for n in e.n_eval] + list(a["beyond"]["n_eval"])
    tv = np.concatenate([e.mean["tv"], a["beyond"]["tv"]])
    se = np.concatenate([e.se["tv"], a["beyond"]["tv_se"]])
    return ns, tv, se


def plot_breakdown(ax_tv, ax_g, runs: Sequence, doc: dict) -> None:
    """fig:exp2-1 with its mechanism. ``ax_tv``: E[TV] (±2 SE) against n' of each run of
    :func:`breakdown_runs` (the committed evaluation, then beyond n' = 200 from ``doc``), the
    pretraining range shaded, TF's predicted onset and breakdown n* (dashed) and the check's
    threshold, twice TF's in-range level (dotted). ``ax_g``: the median over contexts of
    ``log ||prod_l M_l||_2`` of the mean channel's context block (the recursion; band: 10%-90% of
    the contexts) and, thin, of the full product with the query row; 0 is the edge of
    contraction (symlog: linear within ±0.1)."""
    runs = breakdown_runs(runs, doc)
    lo = hi = None
    for r in runs:
        a = doc[r.run_dir.name]
        pr = bool(r.spec.model.normalised)
        colour, marker, name = _STYLE[pr]
        ns, tv, se = _curve(r, a)
        ax_tv.errorbar(ns, tv, yerr=2 * se, color=colour, marker=marker, ms=3, label=name)
        p = a["product"]
        blk = p["f_context"]
        ax_g.plot(p["n"], blk["median"], color=colour, marker=marker, ms=3, label=f"{name}")
        ax_g.fill_between(p["n"], blk["q10"], blk["q90"], color=colour, alpha=0.2, lw=0)
        ax_g.plot(
            p["n"], p["f"]["median"], color=colour, lw=0.8, ls=":", label=f"{name}, with query row"
        )
        lo, hi = r.spec.n_min, r.spec.n_max
        if pr:
            continue
        n_star = xbd.predicted_breakdown(p)
        onset = xbd.predicted_breakdown(p, stat="q90")
        inside = (r.eval.n_eval >= lo) & (r.eval.n_eval <= hi)
        level = r.eval.average("tv", inside)[0]
        ax_tv.axhline(
            xbd.BREAKDOWN_FACTOR * level,
            color=colour,
            ls=":",
            lw=1,
            label=f"{xbd.BREAKDOWN_FACTOR:g} x TF's in-range E[TV]",
        )
        for n, what in ((onset, "onset"), (n_star, "n*")):
            if n is None:
                continue
            for ax in (ax_tv, ax_g):
                ax.axvline(n, color=colour, ls="--", lw=0.8)
            ax_tv.annotate(
                f"{what} = {n}",
                (n, 0.02),
                xycoords=("data", "axes fraction"),
                rotation=90,
                ha="right",
                va="bottom",
                fontsize=7,
                color=colour,
            )
    for ax in (ax_tv, ax_g):
        if lo is not None:
            ax.axvspan(lo, hi, color="0.9", zorder=0, label="pretraining range")
        ax.set_xlabel("context size n'")
        ax.set_xscale("log")
        ax.legend(fontsize=7)
    ax_tv.set_yscale("log")
    ax_tv.set_ylabel("E[TV] (±2 SE)")
    ax_g.axhline(0, color="k", lw=0.8)
    ax_g.set_yscale("symlog", linthresh=0.1)
    ax_g.set_ylabel("log ||prod_l M_l||_2, mean channel")


def breakdown_lines(runs: Sequence, doc: dict) -> list[str]:
    """One Markdown line per run of :func:`breakdown_runs`: its steps, the diagnostic's verdict
    (certified contraction, or the onset and n*) with the log-norms that decide it, and its E[TV]
    beyond n' = 200."""
    out = []
    for r in breakdown_runs(runs, doc):
        a = doc[r.run_dir.name]
        p = a["product"]
        blk, full = p["f_context"], p["f"]
        worst = max(max(blk["max"]), max(p["g_context"]["max"]))
        if xbd.certified_contraction(p):
            where = (
                f"its stack contracts on every context drawn (largest log-norm of the context "
                f"block, both channels, {worst:.3f} up to n' = {p['n'][-1]}); with the query row "
                f"(the read-out) at most {max(full['max']):.3f}"
            )
        else:
            n_star = xbd.predicted_breakdown(p)
            onset = xbd.predicted_breakdown(p, stat="q90")
            j = p["n"].index(n_star) if n_star in p["n"] else -1
            where = (
                f"predicted onset n' = {onset} and breakdown n* = {n_star} (median log-norm of "
                f"the mean channel's context block {blk['median'][j]:.2f} there, "
                f"{blk['median'][-1]:.1f} at n' = {p['n'][-1]}; "
                f"{int(round(100 * blk['frac_expanding'][j]))}% of contexts expand at n*)"
            )
        beyond = ", ".join(f"{v:.3f}" for v in a["beyond"]["tv"])
        out.append(
            f"- `{r.run_dir.name}` ({r.spec.steps} steps, weight-averaged): {where}; E[TV] at "
            f"n' = {a['beyond']['n_eval']}: {beyond}"
        )
    return out
