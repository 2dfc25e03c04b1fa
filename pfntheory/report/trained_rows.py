"""The trained rows of pages 05, 07, 08 and 09, built once: each page's notebook records them, and
``tests/test_rederive.py`` re-derives them from the committed run files and compares them with the
committed ``results/<page>.json``, so the page and the test cannot drift apart.

A builder returns :class:`RowSpec` s: the claim (a :class:`~pfntheory.claims.ClaimResult`) with the
options the page passes to :meth:`~pfntheory.report.recorder.Recorder.add`, or a pending row
(``result`` None) with the arguments of :meth:`~pfntheory.report.recorder.Recorder.pending`. The
claims come from the claim functions of :mod:`pfntheory.claims`; nothing here measures. Readers of
the case studies' budget pairs live in the pipelines layer (above this one), so page 05's builder
takes their output (:func:`pfntheory.pipelines.casestudy_results.budget_claims`) as an argument.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pfntheory.base._checks import choice
from pfntheory.claims import ClaimResult
from pfntheory.claims import casestudy as cs_claims
from pfntheory.claims import gating as xgate
from pfntheory.claims import pretraining_range as xrange
from pfntheory.claims import trained as xclaims
from pfntheory.experiments import definitions as xdefs
from pfntheory.experiments.specs import ExactPPDSpec
from pfntheory.experiments.tables import TABLE_BUDGET
from pfntheory.infra import runs as runfiles
from pfntheory.infra.convergence import read_learning_curve

from . import cpu as rcpu
from . import exp1_budget as rbud
from . import family as rfam

__all__ = [
    "RowSpec",
    "CASE_LABELS",
    "casestudy_case",
    "casestudy_rows",
    "failure_cause",
    "cpu_available",
    "cpu_options",
    "cpu_pending",
    "pfns_rows",
    "exp1_inputs",
    "exp1_rows",
    "theory_shared_rows",
    "shift_regime_rows",
    "FAMILY_OF",
    "other_experiments",
    "other_rows",
    "MULTIHEAD_VARIANT",
    "CANDIDATE",
    "multihead_rows",
    "ceiling_rows",
    "selector_rows",
    "chebyshev_rows",
    "reference_row",
    "control_rows",
    "LATENT_VARIANT",
    "latent_rows",
]


@dataclass(frozen=True)
class RowSpec:
    """One row as a page records it: ``result`` with the keyword ``options`` of
    :meth:`Recorder.add <pfntheory.report.recorder.Recorder.add>`, or, with ``result`` None, the
    keyword arguments of :meth:`Recorder.pending <pfntheory.report.recorder.Recorder.pending>`."""

    result: ClaimResult | None
    options: dict[str, Any] = field(default_factory=dict)

    def record(self, rec, show: bool = True) -> None:
        """Add this row to ``rec`` (a :class:`~pfntheory.report.recorder.Recorder`)."""
        if self.result is None:
            rec.pending(show=show, **self.options)
        else:
            rec.add(self.result, show=show, **self.options)


def _trained(runs: Sequence) -> list:
    return [r for r in runs if hasattr(r.spec, "model")]


# ----------------------------------------------------------------------------------------------
# page 05: the case studies' caption claims
# ----------------------------------------------------------------------------------------------

#: The paper's label of each case study.
CASE_LABELS = {"sacramento": "fig:sacramento", "walker": "fig:walker"}


def casestudy_case(name: str, budget: dict | None, case_dir) -> dict | None:
    """What page 05 reads of case study ``name``: the budget-doubling pair (``budget``, from
    :func:`~pfntheory.pipelines.casestudy_results.budget_claims`) when there is one, else the
    single run's ``results.json`` under ``case_dir``; None when neither is committed.

    Returns ``{"results", "res_dir", "claims", "run_dirs", "command", "start"}``: ``start`` is the
    held-out proper scores against step 0 of the pair's runs
    (:func:`pfntheory.claims.casestudy.scores_against_start`), "" without a pair.
    """
    from pfntheory.casestudy.pfn import SCALES

    if name not in CASE_LABELS:
        raise ValueError(f"name must be one of {sorted(CASE_LABELS)}, got {name!r}")
    case_dir = Path(case_dir)
    start: Any = ""
    if budget is not None:
        res, claims, run_dirs = budget["results"], budget["claims"], budget["run_dirs"]
        res_dir = run_dirs[1].parent
        factor = res["summary"]["steps"] // SCALES["cpu"].steps  # the 2S run of the pair
        command = f"pfntheory casestudy {name} --scale cpu --budget-doubling" + (
            f" --budget-factor {factor}" if factor != 2 else ""
        )
        docs = {
            f"{rd.parent.name.removeprefix('budget-s')} steps": read_learning_curve(rd)
            for rd in run_dirs
        }
        points = {k: d["points"] for k, d in docs.items() if d is not None}
        if len(points) == len(docs):
            start = cs_claims.scores_against_start(points)
    else:
        res_dir = case_dir
        res_file = res_dir / "results.json"
        if not res_file.exists():
            return None
        res = json.loads(res_file.read_text())
        claims = [runfiles.dataclass_from_dict(ClaimResult, c) for c in res["claims"]]
        run_dirs = [res_dir / res["pfn"]["run_dir"]]
        command = f"pfntheory casestudy {name} --scale {res['scale']}"
    return {
        "results": res,
        "res_dir": res_dir,
        "claims": claims,
        "run_dirs": run_dirs,
        "command": command,
        "start": start,
    }


def failure_cause(name: str, claim, by_key: Mapping) -> str:
    """The measured cause of a caption claim that fails (docs/casestudies.md): for Walker Lake
    the prior mismatch with the refitted GP (the PFN tracks the GP at its pretraining prior); for
    Sacramento's whole-grid correlation, the far queries (the near-cell correlation beside it)."""
    same = by_key.get("pretraining_prior/near_close")
    if claim.key.startswith("pretraining_prior/"):
        return ""
    if name == "walker" and same is not None:
        return (
            "prior mismatch with the refitted GP: against the GP at the PFN's pretraining prior "
            f"the near-cell MAD is {same.observed:.3g} GP sd (threshold {same.bound:g}), against "
            f"the GP refitted on the context {by_key['near_close'].observed:.3g}"
        )
    if claim.key == "pattern_corr":
        near = claim.details.get("corr_near", {})
        return (
            "far-query divergence: over the near cells the correlations are "
            + ", ".join(f"{q} {v:.3f}" for q, v in near.items())
            + f" (the whole grid: {claim.observed:.3f}); the caption excepts regions without "
            "nearby observations"
        )
    return ""


def casestudy_rows(name: str, case: dict) -> list[RowSpec]:
    """The caption claims of case study ``name`` (``case``: :func:`casestudy_case`), each gated on
    the runs it reads, with its failure cause and, where held-out NLL or CRPS end worse than at
    step 0, that as its caveat."""
    by_key = {r.key: r for r in case["claims"]}
    start = case["start"]
    return [
        RowSpec(
            r,
            dict(
                variant=r.details.get("variant", ""),
                compare="threshold",
                measured=r.details.get("measured", ""),
                runs=case["run_dirs"],
                command=case["command"],
                cause="" if r.holds else failure_cause(name, r, by_key),
                caveat=start["text"] if start and start["worse"] else "",
            ),
        )
        for r in case["claims"]
    ]


# ----------------------------------------------------------------------------------------------
# page 07: the cpu-scale runs
# ----------------------------------------------------------------------------------------------


def cpu_available(name: str) -> tuple[list, list, Sequence]:
    """The complete cpu runs of experiment ``name``, the names of the others, and the declared
    design: what page 07 reads of each experiment."""
    from pfntheory.experiments import results as xres

    runs, missing = xres.load_available(name, rcpu.CPU)
    return runs, missing, xdefs.get_experiment(name).runs(rcpu.CPU)


def cpu_options(runs: Sequence, name: str, measured: str = "", variant: str = "cpu scale", **kw):
    """The :meth:`Recorder.add <pfntheory.report.recorder.Recorder.add>` options of a trained claim
    of page 07 read on ``runs`` of experiment ``name``, gated by the runs' learning curves (a
    claim's own ``details["measured"]`` wins over ``measured``; set per row by :func:`_cpu_row`)."""
    tr = _trained(runs)
    return dict(
        measured=measured,
        compare="threshold",
        variant=variant,
        runs=[x.run_dir for x in tr] if tr else None,
        run_dir=None if tr else runs[0].run_dir.parent,
        command=rcpu.sweep_command(name),
        **kw,
    )


def _cpu_row(result, runs: Sequence, name: str, measured: str = "", **kw) -> RowSpec:
    opts = cpu_options(runs, name, measured, **kw)
    opts["measured"] = result.details.get("measured") or measured
    return RowSpec(result, opts)


def cpu_pending(name: str, label: str, missing: Sequence, declared: Sequence) -> RowSpec:
    """The pending row of experiment ``name`` while ``missing`` of its ``declared`` runs are not on
    disk."""
    exp = xdefs.get_experiment(name)
    return RowSpec(
        None,
        dict(
            label=label,
            statement=exp.title,
            missing=f"{len(missing)} of {len(declared)} runs of {name} [cpu] are not on disk; run "
            f"`{rcpu.sweep_command(name)}`",
            variant="cpu scale",
        ),
    )


#: The budget grids of fig:exp1 whose slices page 07 decides (:func:`exp1_rows`).
EXP1_BUDGET_GRIDS = ("fig_exp1_budget", "fig_exp1_theory_shared")


def exp1_inputs(runs_b: Sequence, declared_b: Sequence):
    """fig:exp1's budget grid as page 07 reads it: the budget-doubling status per run, the ``2S``
    panels and their ``S`` panels (:func:`pfntheory.report.exp1_budget.budget_panels`)."""
    statuses = xgate.doubling_statuses(_trained(runs_b))
    panels, panels_s = rbud.budget_panels(_trained(runs_b), declared_b)
    return statuses, panels, panels_s


def exp1_rows(
    runs_b: Sequence, declared_b: Sequence, experiment: str = "fig_exp1_budget"
) -> list[RowSpec]:
    """fig:exp1's rows: each slice of each ``2S`` panel gated by budget doubling and replayed on its
    ``S`` panel (pending while a slice has fewer than two cells), then the cells doubling made
    worse (:func:`pfntheory.claims.trained.check_exp1_budget`). ``experiment``: the budget grid
    the runs come from, ``fig_exp1_budget`` (theory mode as the text reads it, and learnable mode)
    or ``fig_exp1_theory_shared`` (the public code's reading of theory mode; its panels are
    titled by that mode, so their rows and keys are their own)."""
    experiment = choice(experiment, "experiment", EXP1_BUDGET_GRIDS)
    statuses, panels, panels_s = exp1_inputs(runs_b, declared_b)
    out = []
    for p, q in zip(panels, panels_s, strict=True):
        for c in rcpu.exp1_slice_claims(p, statuses=statuses, short=q):
            variant = f"cpu scale, weight-averaged, 2S steps, {p.title}, {c.cells_text}"
            if c.result is None:
                out.append(
                    RowSpec(
                        None,
                        dict(
                            label="fig:exp1",
                            statement=f"{p.kind}/{p.mode}: E[TV] falls with {c.axis} at "
                            f"{'C' if c.axis == 'L' else 'L'}={c.at} (weight-averaged, budget "
                            "doubling)",
                            missing=f"{len(c.present)} of {len(c.declared)} cells of this slice "
                            "are on disk at 2S (two are needed); run "
                            f"`{rcpu.sweep_command(experiment)}`",
                            variant=variant,
                        ),
                    )
                )
            else:
                out.append(_cpu_row(c.result, c.runs, experiment, variant=variant))
    for w in xclaims.check_exp1_budget(_trained(runs_b)):  # where doubling made a cell worse
        read = {cell["run"] for cell in w.details["cells"]}
        out.append(
            _cpu_row(
                w,
                [r for r in _trained(runs_b) if r.run_dir.name in read],
                experiment,
                variant=f"cpu scale, {experiment}, the cells doubling made worse, S and 2S",
            )
        )
    return out


def theory_shared_rows(loaded: Mapping) -> list[RowSpec]:
    """fig:exp1's slices in the public code's reading of theory mode (``fig_exp1_theory_shared``,
    ``loaded`` as for :func:`other_rows`): a pending row while its grid is incomplete, else its
    slices decided as :func:`exp1_rows` decides ``fig_exp1_budget``'s."""
    name = "fig_exp1_theory_shared"
    runs, missing, declared = loaded[name]
    if missing:
        return [cpu_pending(name, "fig:exp1", missing, declared)]
    return exp1_rows(runs, declared, name)


def shift_regime_rows(runs_s: Sequence) -> list[RowSpec]:
    """supp-fig:exp2 d4-1 (uni): the worst 90% coverage over n' of the longest complete run of
    ``supp_exp2_shift_regime``, on each design, gated on that run alone."""
    out = []
    for c in xrange.check_shift_regime(runs_s) if _trained(runs_s) else []:
        reg = c.details["regime"]
        deciding = [r for r in runs_s if r.run_dir.name == reg["run"]]
        out.append(
            _cpu_row(
                c,
                deciding,
                "supp_exp2_shift_regime",
                "worst 90% coverage over n'",
                label="supp-fig:exp2 d4-1 uni"
                if c.details["covariates"] == "uniform"
                else "supp-fig:exp2 d4-1",
                variant=f"cpu scale, d={reg['d']}, L={reg['L']}, n_max={reg['n_max']}, "
                f"{reg['steps']} steps, {c.details['covariates']} design",
                outside=""
                if reg["in_claimed_regime"]
                else f"outside the claimed regime ({reg['claimed_regime']})",
            )
        )
    return out


#: The n-generalisation family: its 1000-step experiment -> its budget grid.
FAMILY_OF = dict(rfam.FAMILY.values())
_NOT_OTHERS = {
    "fig_exp1",
    "fig_exp1_budget",
    "supp_exp2_shift_regime",
    "supp_exp2_d8_seeds",
    # supp_tab_hier's runs at S and 2S (page 07's table rows and page 08's single-head reference
    # read them) and the multi-head run at S and 2S (page 08): no section of their own
    "supp_tab_hier_budget",
    "supp_tab_hier_multihead_budget",
    # fig:exp1 in the public code's theory mode: recorded beside the readings' figure
    # (:func:`theory_shared_rows`)
    "fig_exp1_theory_shared",
}


def other_experiments() -> list[str]:
    """The experiments page 07 shows one by one after fig:exp1 (every experiment but fig:exp1's,
    the shift regime's and the family's budget grids, which other sections read)."""
    skip = _NOT_OTHERS | set(FAMILY_OF.values())
    return [n for n in xdefs.experiment_names() if n not in skip]


def _claims_of(name: str, runs: Sequence, loaded: Mapping) -> tuple[list, str]:
    """The trained-claim checks of ``name`` (its complete design): ``[(claim, label, runs read,
    their experiment)]`` and a note on what they read ("" when none is due)."""
    exp = xdefs.get_experiment(name)
    if name == "fig_exp2_1":
        if not loaded["fig_exp2_1_budget"][1]:  # one row per claim: the budget runs decide it
            note = (
                "*Its claims are recorded once, on `fig_exp2_1_budget` below (the same runs "
                "weight-averaged at 2000 and 4000 steps, curves beyond the range).*"
            )
            return [], note
        return [(c, None, runs, name) for c in xclaims.check_exp2_1(runs)], ""
    if name == "fig_exp2_1_budget":  # the 2S runs, gated by budget doubling, replayed on curves
        statuses = xgate.doubling_statuses(_trained(runs))
        return [(c, None, runs, name) for c in xclaims.check_exp2_1(runs, statuses=statuses)], ""
    if name in FAMILY_OF:  # the family: its budget grid once complete, else the 1000-step grid
        budget = FAMILY_OF[name]
        b_runs, _, b_declared = loaded[budget]
        files = [("eval.json", None if name == "fig_exp2_2" else exp.labels[0])]
        if name != "fig_exp2_2":
            files.append(("eval_uniform.json", exp.labels[2]))
        cells = xrange.budget_cells(b_runs)
        if len(cells) == len(rfam.FAMILY_LS) * len(rfam.FAMILY_NMAX):  # every cell doubled
            note = (
                f"*Its rows read the budget grid `{budget}` ({len(b_runs)} of "
                f"{len(b_declared)} runs complete; every cell doubled at least once), "
                "each cell its longest run with a half-budget partner ("
                + ", ".join(
                    f"L={L}/n_max={m}: {r.spec.steps}" for (L, m), r in sorted(cells.items())
                )
                + " steps), gated by budget doubling on the design each row is about.*"
            )
            return [
                (c, label, b_runs, budget)
                for f, label in files
                for c in xrange.check_family_budget(b_runs, eval_file=f)
            ], note
        note = (
            f"*Its rows read the 1000-step grid: the budget grid `{budget}` has "
            f"{len(b_runs)} of {len(b_declared)} runs, {len(cells)} of "
            f"{len(rfam.FAMILY_LS) * len(rfam.FAMILY_NMAX)} cells doubled.*"
        )
        return [
            (c, label, runs, name)
            for f, label in files
            for c in xrange.check_exp2_2(runs, eval_file=f)
        ], note
    if name == "supp_exp2_first_layer":  # both readings of TF^pr's first layer under the shift
        return [(c, None, runs, name) for c in xrange.check_first_layer_readings(runs)], ""
    if name in TABLE_BUDGET and not loaded[TABLE_BUDGET[name]][1]:  # its budget grid, complete
        budget = TABLE_BUDGET[name]
        b_runs = list(loaded[budget][0])
        refs = [r for r in runs if isinstance(r.spec, ExactPPDSpec)]
        note = (
            f"*Its rows read the budget grid `{budget}` ({len(b_runs)} runs: every cell "
            "weight-averaged at S and 2S steps), the 2S runs gated by budget doubling and the "
            "check replayed at both budgets; the table below shows the 1000-step runs.*"
        )
        return [(c, None, b_runs, budget) for c in xclaims.check_table_budget(b_runs + refs)], note
    if name in ("supp_tab_lengthscale", "supp_tab_hier"):
        return [(c, None, runs, name) for c in xclaims.check_table(runs)], ""
    if name == "fig_stepsize":
        return [(c, None, runs, name) for c in xclaims.check_stepsize(runs)], ""
    return [], ""


def other_rows(name: str, loaded: Mapping) -> tuple[list[RowSpec], str]:
    """The rows of experiment ``name`` of :func:`other_experiments` (``loaded``: experiment ->
    ``(complete runs, names of the missing ones, declared design)`` at the cpu scale) and a note on
    what they read: a pending row while its design is incomplete, else the trained-claim checks of
    notebook 4 (the family's on its budget grid once every cell is doubled)."""
    runs, missing, declared = loaded[name]
    if missing:
        return [cpu_pending(name, xdefs.get_experiment(name).labels[0], missing, declared)], ""
    checks, note = _claims_of(name, runs, loaded)
    rows = [
        _cpu_row(
            c, src, src_name, variant=f"cpu scale, {src_name}", **({"label": lab} if lab else {})
        )
        for c, lab, src, src_name in checks
    ]
    return rows, note


# ----------------------------------------------------------------------------------------------
# page 08: the multi-head model
# ----------------------------------------------------------------------------------------------

#: The variant of every multi-head row of page 08.
MULTIHEAD_VARIANT = "multi-head (beyond the paper)"


def multihead_rows(cmp, paired) -> list[RowSpec]:
    """The trained multi-head model beside the single head
    (:func:`pfntheory.claims.multihead_trained.check_multihead`), each row gated on the runs it
    compares."""
    from pfntheory.claims import multihead_trained as tmh

    out = []
    for r in tmh.check_multihead(cmp, paired):
        runs = [cmp.multi.run_dir] + ([cmp.singles[8].run_dir] if "equal_steps" in r.key else [])
        if "equal_time" in r.key and cmp.equal_time is not None:
            runs.append(cmp.equal_time.run_dir)
        command = "pfntheory sweep supp_tab_hier_multihead --scale cpu"
        if r.key == "multihead.coverage" and r.run_dir in {b.run_dir.name for b in cmp.budget}:
            runs = [b.run_dir for b in cmp.budget if b.run_dir.name == r.run_dir]
            command = f"pfntheory sweep {tmh.BUDGET_EXPERIMENT} --scale cpu"
        out.append(
            RowSpec(
                r,
                dict(
                    variant=MULTIHEAD_VARIANT + ", cpu scale",
                    compare="threshold",
                    runs=runs,
                    command=command,
                ),
            )
        )
    return out


def ceiling_rows(ceil: dict, cmp) -> list[RowSpec]:
    """The ceiling of the selector (exact weights plugged into the heads) against the single heads
    present in ``ceil``, gated on the single heads' runs."""
    from pfntheory.claims import multihead_select as msel
    from pfntheory.claims import multihead_trained as tmh

    pairs = [(f"single L={L}", f"hand-set heads L={L}, exact weights") for L in (8, 16, 32)]
    pairs += [
        ("single L=8", "multi-head L=8 trained heads, exact weights"),
        ("single L=8, 1600 steps (equal time)", "multi-head L=8 trained heads, exact weights"),
    ]
    pairs = [p for p in pairs if p[0] in ceil["tv"] and p[1] in ceil["tv"]]
    read = msel.runs_read([n for p in pairs for n in p], tmh.models(cmp))
    r = msel.ceiling_claim(ceil, pairs, statuses=msel.statuses_of_runs(read))
    return [
        RowSpec(
            r,
            dict(
                variant=MULTIHEAD_VARIANT + ", ceiling (exact weights)",
                measured=r.statement,
                runs=[run.run_dir for run in read.values()],
            ),
        )
    ]


#: The multi-head candidate of page 08: hand-set heads at L = 32 with the statistics selector.
CANDIDATE = "statistics selector, heads 32"


def selector_rows(verdict: dict, cmp) -> list[RowSpec]:
    """The candidate (:data:`CANDIDATE`) on fresh draws (``verdict``, with its committed cells)
    against the single L = 32 at 2S steps, weight-averaged (:func:`reference_row`, gated by its
    budget doubling) and against the equal-time single head L = 8 (replayed along its learning
    curve where committed), and its coverage."""
    from pfntheory.claims import multihead_cells as mcells
    from pfntheory.claims import multihead_select as msel
    from pfntheory.claims import multihead_trained as tmh

    out = [
        reference_row(
            verdict, CANDIDATE, MULTIHEAD_VARIANT + f", L=32 heads + selector vs {mcells.REFERENCE}"
        )
    ]
    ref = "single L=8, 1600 steps (equal time)"
    read = msel.runs_read([ref], tmh.models(cmp))
    r = msel.tv_claim(
        verdict,
        CANDIDATE,
        ref,
        statuses=msel.statuses_of_runs(read),
        replay=mcells.curve_replay(read),  # along the reference's curve, where committed
    )
    out.append(
        RowSpec(
            r,
            dict(
                variant=MULTIHEAD_VARIANT + f", L=32 heads + selector vs {ref}",
                measured=r.statement,
                runs=[run.run_dir for run in read.values()],
            ),
        )
    )
    r = msel.coverage_claim(verdict, CANDIDATE)
    out.append(
        RowSpec(
            r,
            dict(
                variant=MULTIHEAD_VARIANT + ", L=32 heads + selector, coverage",
                measured=r.statement,
            ),
        )
    )
    return out


def chebyshev_rows(cdoc: dict, cmp) -> list[RowSpec]:
    """The depth-matched Chebyshev heads (L = 8, 16, 32) with the selector on the confirmation's
    fresh draws (``cdoc``) against the single heads (L = 8, 16: the equal-time L = 8; L = 32: the
    single L = 32 at 2S steps, weight-averaged, :func:`reference_row`), gated on the runs read."""
    from pfntheory.claims import multihead_cells as mcells
    from pfntheory.claims import multihead_select as msel
    from pfntheory.claims import multihead_trained as tmh

    out = []
    ns = "/".join(map(str, cdoc["n_eval"]))
    for L, ref in (
        (8, "single L=8, 1600 steps (equal time)"),
        (16, "single L=8, 1600 steps (equal time)"),
        (32, mcells.REFERENCE),
    ):
        variant = (
            MULTIHEAD_VARIANT + f", Chebyshev (depth-matched) L={L} heads + selector vs "
            f"{ref}, n' = {ns}"
        )
        if ref == mcells.REFERENCE:
            out.append(reference_row(cdoc, f"statistics selector, heads {L}", variant))
            continue
        read = msel.runs_read([ref], tmh.models(cmp))
        r = msel.tv_claim(
            cdoc,
            f"statistics selector, heads {L}",
            ref,
            statuses=msel.statuses_of_runs(read),
            replay=None,  # the curve values on file are the constant-step heads', not these
        )
        out.append(
            RowSpec(
                r,
                dict(
                    variant=variant,
                    measured=r.statement,
                    runs=[run.run_dir for run in read.values()],
                ),
            )
        )
    return out


def reference_row(doc: dict, model: str, variant: str) -> RowSpec:
    """``model``'s E[TV] below the single L = 32's at 2S = 2000 steps, weight-averaged
    (:data:`~pfntheory.claims.multihead_cells.REFERENCE`, joined into ``doc`` by
    :func:`~pfntheory.claims.multihead_cells.with_cells`), at every n' of ``doc``, through the one
    gate on that run's budget-doubling status against its 1000-step partner
    (:func:`~pfntheory.claims.multihead_cells.reference_statuses`); no replay: the doubling
    decides. A pending row (never a verdict on the 1000-step head) while the reference is not
    scored at every n' of ``doc`` or its doubling pair is not committed."""
    from pfntheory.claims import multihead_cells as mcells
    from pfntheory.claims import multihead_select as msel

    ref = mcells.REFERENCE
    statement = f"{model}: E[TV] below {ref}'s at every n' ({msel.PAPER_NOTE})"
    have = doc["tv"].get(ref, {})
    lacking = [int(n) for n in doc["n_eval"] if str(n) not in have]
    pair = mcells.reference_runs()
    if lacking or pair is None:
        why = (
            f"the runs of {mcells.REFERENCE_EXPERIMENT} (L = {mcells.REFERENCE_L} at S and 2S) "
            "are not committed"
            if pair is None
            else f"{ref} is not scored on these draws at n' = {lacking} "
            f"(reports/runs/{mcells.FOLDER}/{mcells.REFERENCE_FOLDER}/)"
        )
        return RowSpec(
            None,
            dict(
                label=msel.LABEL,
                statement=statement,
                missing=why + "; run `pfntheory sweep multihead_reference`",
                variant=variant,
            ),
        )
    r = msel.tv_claim(doc, model, ref, statuses=mcells.reference_statuses())
    return RowSpec(r, dict(variant=variant, measured=r.statement, runs=[pair[1].run_dir]))


def control_rows(ctrl: dict) -> list[RowSpec]:
    """The selector's positive control (two components far apart)."""
    from pfntheory.claims import multihead_select as msel

    r = msel.control_claim(ctrl)
    return [
        RowSpec(r, dict(variant=MULTIHEAD_VARIANT + ", positive control", measured=r.statement))
    ]


# ----------------------------------------------------------------------------------------------
# page 09: the latent-GP classification PFN
# ----------------------------------------------------------------------------------------------


#: The variant of every row of page 09.
LATENT_VARIANT = "latent GP: probit classification (beyond the paper)"


def latent_rows(trained: dict) -> list[RowSpec]:
    """The trained classification PFN against Laplace and across depth
    (:func:`pfntheory.claims.latent.check_trained`; ``trained``:
    :func:`pfntheory.claims.latent.load_trained`), each gated by budget doubling."""
    from pfntheory.claims import latent as cl

    return [
        RowSpec(
            r,
            dict(
                variant="trained PFN, " + LATENT_VARIANT,
                measured=r.statement,
                compare="threshold",
                command="pfntheory sweep latent_gpc --scale cpu",
            ),
        )
        for r in cl.check_trained(trained["reference"], trained["preds"], trained["doubling"])
    ]


# ----------------------------------------------------------------------------------------------
# page 10: a standard PFN (the PFNs library's transformer) on the paper's task
# ----------------------------------------------------------------------------------------------

#: The variant of every row of page 10 (its dimension appended).
PFNS_VARIANT = "standard PFN (pfns), beyond the paper"

#: What each kind of page-10 row measures.
PFNS_MEASURED = {
    "pfns.growth": "E[TV](n'=200) minus mean E[TV] over n' in [64, 128]",
    "pfns.growth_vs_tf": "TF's growth of E[TV] minus the PFN's (paired)",
    "pfns.shift.coverage": "worst 90% coverage over n' under the shift",
}


def pfns_rows(root) -> list[RowSpec]:
    """The rows of page 10 from the committed ``pfns_baseline`` runs under ``root``
    (:func:`pfntheory.claims.pfns_baseline.claims`, gated there by budget doubling), with the
    options the page records them with; none when the runs are not on disk."""
    from pathlib import Path

    from pfntheory.claims import pfns_baseline as pb

    root = Path(root)
    if not root.is_dir():
        return []
    return [
        RowSpec(
            r,
            dict(
                variant=f"{PFNS_VARIANT}, d={r.key.rsplit('d', 1)[-1]}",
                measured=PFNS_MEASURED[r.key.rsplit(".", 1)[0]],
                runs=[],
                run_dir=root / r.run_dir,
            ),
        )
        for r in pb.claims(root)
    ]
