"""Trained claims of the multi-head model on supp-tab:hierarchical-gp (issue 27, beyond the paper).

Reads the cpu runs of ``supp_tab_hier_multihead`` (the multi-head TF^pr at 1000 steps, a single
head at equal CPU time) and the single heads of ``supp_tab_hier`` (L = 8, 16, 32 at 1000 steps, the
equal-step comparison). Claims, with the verdict rules of the trained claims (docs/verdicts.md,
:func:`pfntheory.claims.gating.gate`):

* ``multihead.coverage``: the multi-head model's 50/90/95% coverage within 3 binomial SE of nominal
  at every n' of the table (no slack: the single head's 50% cells are 5-7 SE high);
* ``multihead.tv_below_single.<which>``: its E[TV] to the exact mixture PPD below the single head's
  at every n', by more than 3 SE of the per-instance differences (paired: both models on the same
  instances, :func:`~pfntheory.pipelines.multihead_run.paired_tv`, read here by
  :func:`load_paired_tv`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pfntheory.base.stats import mean_se
from pfntheory.infra import runs as runfiles
from pfntheory.infra.tree import RunSpec

from ..experiments.results import LoadedRun, load_available
from ..experiments.specs import ExactPPDSpec
from . import MINIMAL_EFFECT, ClaimResult, Power, gating
from .gating import Z_MARGIN, diff_se, gate

__all__ = [
    "Comparison",
    "load_comparison",
    "load_paired_tv",
    "side_by_side",
    "models",
    "check_multihead",
    "PAIRED_FILE",
]

LABEL = "supp-tab:hierarchical-gp"
EXPERIMENT = "supp_tab_hier_multihead"
#: The multi-head run at S and 2S steps, weight-averaged: the coverage claim reads its 2S run once
#: both are complete (:func:`check_multihead`).
BUDGET_EXPERIMENT = "supp_tab_hier_multihead_budget"
PAPER_NOTE = "beyond the paper (remark 'Extension to hierarchical GPs')"
#: Cache of :func:`~pfntheory.pipelines.multihead_run.paired_tv` in the experiment's runs folder
#: (recomputed by :func:`~pfntheory.pipelines.multihead_run.cached_paired_tv` when its runs
#: change).
PAIRED_FILE = "paired-tv-cpu.json"


@dataclass
class Comparison:
    """The runs of the comparison, each ``None`` while not finished.

    Attributes
    ----------
    multi : LoadedRun or None
        Multi-head L = 8, 1000 steps.
    equal_time : LoadedRun or None
        Single head L = 8 at the multi-head run's CPU time.
    singles : dict of int -> LoadedRun
        The single heads of supp_tab_hier by depth (1000 steps).
    exact : dict or None
        The exact-PPD reference of supp_tab_hier (4096 contexts per n').
    missing : list of str
        Runs of the multi-head design not finished.
    root : Path
    budget : list of LoadedRun
        The runs of ``supp_tab_hier_multihead_budget`` once complete (else empty).
    """

    multi: LoadedRun | None
    equal_time: LoadedRun | None
    singles: dict = field(default_factory=dict)
    exact: dict | None = None
    missing: list = field(default_factory=list)
    root: Path | None = None
    budget: list = field(default_factory=list)


def load_comparison(root=None) -> Comparison:
    """The finished runs of the comparison at the cpu scale (``root``: default ``reports/runs``)."""
    mine, missing = load_available(EXPERIMENT, "cpu", root)
    hier, _ = load_available("supp_tab_hier", "cpu", root)
    trained = [r for r in mine if isinstance(r.spec, RunSpec)]
    multi = next((r for r in trained if _spec(r).model.mixture), None)
    equal = next((r for r in trained if not _spec(r).model.mixture), None)
    singles = {_spec(r).model.L: r for r in hier if isinstance(r.spec, RunSpec)}
    exact = next((r.result for r in hier if isinstance(r.spec, ExactPPDSpec)), None)
    root = next((r.run_dir.parents[1] for r in mine + hier), None)
    budget, b_missing = load_available(BUDGET_EXPERIMENT, "cpu", root)
    return Comparison(multi, equal, singles, exact, missing, root, [] if b_missing else budget)


def models(cmp: Comparison) -> dict:
    """name -> LoadedRun of the trained models of the comparison that exist."""
    out = {f"single L={L}": r for L, r in sorted(cmp.singles.items())}
    if cmp.equal_time is not None:
        out[f"single L=8, {_spec(cmp.equal_time).steps} steps (equal time)"] = cmp.equal_time
    if cmp.multi is not None:
        out["multi-head L=8"] = cmp.multi
    return out


def load_paired_tv(cmp: Comparison) -> dict | None:
    """The committed :data:`PAIRED_FILE` of the comparison's runs
    (``<root>/supp_tab_hier_multihead/``) when its run directories are the comparison's; None while
    the multi-head run is unfinished, the file is absent or it is of other runs (then
    :func:`~pfntheory.pipelines.multihead_run. cached_paired_tv` computes it). Reads only."""
    if cmp.multi is None:
        return None
    path = cmp.multi.run_dir.parent / PAIRED_FILE
    if not path.is_file():
        return None
    doc = runfiles.load_json(path)
    return doc if doc.get("runs") == {k: r.run_dir.name for k, r in models(cmp).items()} else None


def side_by_side(cmp: Comparison) -> list[dict]:
    """One row per (n', model): E[TV], CRPS and 50/90/95% coverage with SEs from each run's
    ``eval.json`` (1024 instances per n'), and the exact mixture PPD's CRPS and coverage on the same
    instances (from the multi-head run's evaluation, else a single head's) and on the 4096 contexts
    of supp_tab_hier's reference."""
    rows = []
    trained = models(cmp)
    for name, r in trained.items():
        e = r.eval
        for j, n in enumerate(e.n_eval):
            row = {"n'": int(n), "model": name, "steps": _spec(r).steps}
            for k in ("tv", "crps", "coverage_50", "coverage_90", "coverage_95"):
                row[k], row[k + "_se"] = float(e.mean[k][j]), float(e.se[k][j])
            rows.append(row)
    if trained:
        e = next(reversed(trained.values())).eval
        for j, n in enumerate(e.n_eval):
            row = {"n'": int(n), "model": "exact mixture PPD (same instances)", "steps": 0}
            for k in ("crps", "coverage_50", "coverage_90", "coverage_95"):
                row[k], row[k + "_se"] = (
                    float(e.mean[k + "_exact"][j]),
                    float(e.se[k + "_exact"][j]),
                )
            rows.append(row)
    if cmp.exact is not None:
        m = cmp.exact["metrics"]
        for j, n in enumerate(cmp.exact["n_eval"]):
            row = {"n'": int(n), "model": "exact mixture PPD (4096 contexts)", "steps": 0}
            for k, src in (("crps", "crps"), *((f"coverage_{v}", f"cov{v}") for v in (50, 90, 95))):
                row[k], row[k + "_se"] = m[src]["mean"][j], m[src]["se"][j]
            rows.append(row)
    return sorted(rows, key=lambda r: (r["n'"], r["model"]))


def _coverage_claim(run: LoadedRun, z: float) -> ClaimResult:
    e = run.eval
    worst = (-math.inf, 0, 0, 0.0)
    for lv, n, c, se in gating.coverage_cells(e, (50, 90, 95)):
        k = abs(c - lv / 100) / se if se > 0 else math.inf
        worst = max(worst, (k, lv, n, c))
    return ClaimResult(
        key="multihead.coverage",
        label=LABEL,
        statement=f"multi-head 50/90/95% coverage within {z:g} binomial SE of nominal at every n'"
        f"; {PAPER_NOTE}",
        holds=bool(worst[0] <= z),
        observed=worst[3],
        bound=worst[1] / 100,
        tolerance=f"|coverage - nominal| <= {z:g} SE, binomial SE over {e.n_instances} instances "
        f"(worst: {worst[1]}% at n'={worst[2]}, {worst[0]:.1f} SE)",
        details={"worst_se": worst[0], "run": run.run_dir.name},
        run_dir=str(run.run_dir.name),
    )


def _tv_claim(paired: dict, multi: str, single: str, key: str, z: float) -> ClaimResult:
    rows, ok, worst = [], True, (math.inf, 0, 0.0, 0.0, 0.0)
    for n in paired["n_eval"]:
        d = np.asarray(paired["tv"][single][str(n)]) - np.asarray(paired["tv"][multi][str(n)])
        m, se = mean_se(d)
        rows.append(
            {
                "n'": n,
                "fall": m,
                "se": se,
                "tv_single": float(np.mean(paired["tv"][single][str(n)])),
                "tv_multi": float(np.mean(paired["tv"][multi][str(n)])),
            }
        )
        ok = ok and m > z * se
        tv_multi = float(np.mean(paired["tv"][multi][str(n)]))
        worst = min(worst, (m / se if se > 0 else math.inf, n, m, se, tv_multi))
    return ClaimResult(
        key=key,
        label=LABEL,
        statement="multi-head E[TV] to the exact mixture PPD is below the single head's ("
        + single.removeprefix("single ").replace(" (equal time)", ", equal time")
        + f") at every n'; {PAPER_NOTE}",
        holds=bool(ok),
        observed=worst[2],
        bound=z * worst[3],
        power=Power(
            worst[2],
            (worst[2] - z * worst[3], worst[2] + z * worst[3]),
            0.0,
            z * worst[3],
            paired=True,
            # the minimal effect of interest: 10% of the multi-head's E[TV] at the worst n'
            minimal=MINIMAL_EFFECT * worst[4],
            z=z,
        ),
        tolerance=f"E[TV_single - TV_multi] > {z:g} SE, paired over {paired['n_instances']} "
        f"instances per n' (worst n'={worst[1]})",
        details={"rows": rows},
    )


def _budget_coverage(budget, z: float) -> ClaimResult | None:
    """The coverage claim on the multi-head run at 2S steps of ``supp_tab_hier_multihead_budget``
    (weight-averaged), gated on its budget-doubling status and replayed at both budgets (the same
    check on the S run); None while the budget pair is not complete."""
    tr = [r for r in gating.trained_runs(budget or []) if _spec(r).model.mixture]
    if len(tr) < 2:
        return None
    long = max(tr, key=lambda r: _spec(r).steps)
    short = next((r for r in tr if 2 * _spec(r).steps == _spec(long).steps), None)
    if short is None:
        return None
    st = gating.doubling_statuses([short, long])
    read = {long.run_dir.name: st[long.run_dir.name]}
    at_s, at_2s = _coverage_claim(short, z), _coverage_claim(long, z)
    res = dataclasses.replace(
        at_2s,
        statement=at_2s.statement.replace(
            "multi-head", f"multi-head ({_spec(long).steps} steps, weight-averaged)", 1
        ),
    )
    return gate(res, [long], statuses=read, doubling=gating.at_both_budgets(at_s, at_2s, read))


def _gap(a: tuple[float, float], b: tuple[float, float]) -> float:
    """``(a - b) / SE`` of two (mean, SE) pairs (unpaired SE)."""
    D, se = diff_se(a, b)
    return D / se if se > 0 else math.copysign(math.inf, D)


def _spec(run: LoadedRun) -> RunSpec:
    assert isinstance(run.spec, RunSpec)
    return run.spec


def check_multihead(cmp: Comparison, paired: dict | None, z: float = Z_MARGIN) -> list:
    """The claims of the module docstring, gated as trained claims; empty while the multi-head run
    is unfinished."""
    if cmp.multi is None:
        return []
    multi = cmp.multi

    def cov_replay(v) -> bool:  # 90% coverage within z SE at each curve n' (the curves' only level)
        return all(
            abs(c["coverage90"][0] - 0.9) <= z * c["coverage90"][1]
            for c in v(multi)["by_n"].values()
        )

    out = [
        _budget_coverage(cmp.budget, z)
        or gate(_coverage_claim(multi, z), [multi], replay=cov_replay)
    ]
    if paired is None:
        return out
    others = [("equal_steps", "single L=8", cmp.singles.get(8))]
    if cmp.equal_time is not None:
        name = f"single L=8, {_spec(cmp.equal_time).steps} steps (equal time)"
        others.append(("equal_time", name, cmp.equal_time))
    for which, name, run in others:
        if run is None or name not in paired["tv"]:
            continue

        def tv_replay(v, run=run) -> bool:  # per curve n', the means (unpaired: conservative)
            a, b = v(run)["by_n"], v(multi)["by_n"]
            return all(_gap(a[n]["tv"], b[n]["tv"]) > z for n in a)

        res = _tv_claim(paired, "multi-head L=8", name, f"multihead.tv_below_single.{which}", z)
        out.append(
            gate(
                dataclasses.replace(res, run_dir=multi.run_dir.name), [run, multi], replay=tv_replay
            )
        )
    return out
