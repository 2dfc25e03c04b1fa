"""Page 08's trained verdicts (the multi-head extension, issues 27 and 38) re-derived from their
stored evidence through the one gate, :func:`pfntheory.claims.gating.decide`.

The evidence: the committed selection documents (``ceiling-cpu.json``, ``verdict-cpu.json`` with
the n' = 1024 cell of ``supp_tab_hier_multihead_confirm`` when present, ``positive-control.json``),
the paired E[TV] of ``supp_tab_hier_multihead`` and the learning curves of the runs read. Every row
the page records from :mod:`pfntheory.claims.multihead_select` and
:mod:`pfntheory.claims.multihead_trained` is rebuilt with the page's own calls.

How these tests fail: a claim function that decides its verdict itself (no ``decision``), or one
whose kind differs from ``decide()`` on the same holds, statuses and power, fails
:func:`test_page08_rows_go_through_the_gate`; a row whose kind contradicts its definition
(:func:`contradiction`: a *does not hold* whose interval still holds the claimed effect, as the
old every-n' rule gave the n' = 1024 row at 32 instances, +0.019 +- 0.019 against a 3-SE bar of
0.054; a *holds* on runs not all plateaued; an *underpowered* whose interval excludes the claimed
effect) fails :func:`test_no_page08_row_contradicts_its_kind`, and
:func:`test_the_scan_catches_contradictions` feeds the checker each such row so that it cannot
pass vacuously.
"""

from __future__ import annotations

import dataclasses

import pytest

from pfntheory.claims import (
    FAILS,
    FAILS_AT_BUDGET,
    HOLDS,
    HOLDS_AT_BUDGET,
    UNDECIDED,
    UNDERPOWERED,
    WORSE,
    Power,
)
from pfntheory.claims import gating as xgate
from pfntheory.claims import multihead_cells as mcells
from pfntheory.claims import multihead_select as msel
from pfntheory.claims import multihead_trained as tmh
from pfntheory.infra.status import as_status
from pfntheory.pipelines import multihead_fair as mfair
from pfntheory.pipelines import multihead_run as mrun
from pfntheory.report import trained_rows as rrows

CAND = rrows.CANDIDATE


def contradiction(decision: dict) -> str:
    """Why a decision (:meth:`~pfntheory.claims.gating.Decision.to_dict`) contradicts the
    definition of its kind (docs/verdicts.md, "The kinds"), or "" when it agrees."""
    kind, power = decision["kind"], decision.get("power")
    states = dict(decision["states"])
    plateaued = states.get("plateaued", 0) == decision["n_runs"]
    worse = bool(decision.get("worse"))
    # the effect the interval must reach: the claimed one, or the minimal effect of interest
    edge = None if power is None else power.get("threshold", power["target"])
    refutes = power is not None and power["ci"][1] < edge
    if kind in (FAILS, FAILS_AT_BUDGET) and power is not None and not refutes:
        return f"{kind} with an interval {power['ci']} that holds the claimed {edge}"
    if kind == UNDERPOWERED and (power is None or refutes or decision["holds"]):
        return "underpowered without a failing check whose interval holds the claimed effect"
    if kind in (HOLDS, HOLDS_AT_BUDGET) and not decision["holds"]:
        return f"{kind} on a check that fails"
    if kind in (FAILS, FAILS_AT_BUDGET) and decision["holds"]:
        return f"{kind} on a check that holds"
    if kind in (HOLDS, FAILS) and (not plateaued or worse):
        return f"{kind} on runs not all plateaued or worse than their start"
    if kind in (HOLDS_AT_BUDGET, FAILS_AT_BUDGET) and (plateaued or worse):
        return f"{kind} on runs {'plateaued' if plateaued else 'that got worse'}"
    if kind == UNDECIDED and plateaued and not worse:
        return "undecided on runs all plateaued"
    if kind == WORSE and not worse:
        return "worse with training without a run that got worse"
    return ""


def _page08_rows() -> list:
    """The page's trained rows, rebuilt by the builders the page records
    (:mod:`pfntheory.report.trained_rows`), as (variant, claim)."""
    cmp = tmh.load_comparison()
    if cmp.multi is None:
        pytest.skip("the multi-head run of supp_tab_hier_multihead is not committed here")
    specs = rrows.multihead_rows(cmp, mrun.cached_paired_tv(cmp))
    docs = msel.load_select()
    if docs["ceiling"] is not None:
        specs += rrows.ceiling_rows(docs["ceiling"], cmp)
    if docs["verdict"] is not None:
        verdict = mcells.with_cells(docs["verdict"])
        specs += rrows.selector_rows(verdict, cmp)
        cdoc = mcells.chebyshev_confirmation(verdict)
        if cdoc is not None:
            specs += rrows.chebyshev_rows(cdoc, cmp)
        specs += mfair.fair_rows(verdict, cmp)  # the fair variant (issue 47 item 5)
    if docs["control"] is not None:
        specs += rrows.control_rows(docs["control"])
    return [(s.options["variant"], s.result) for s in specs if s.result is not None]


def test_page08_rows_go_through_the_gate():
    rows = _page08_rows()
    assert len(rows) >= 7, [k for k, _ in rows]
    for name, r in rows:
        assert r.decision is not None and r.verdict == r.decision.kind, name
        sts = {k: as_status(v) for k, v in r.details.get("convergence", {}).items()}
        rep = r.decision.replay  # the trained comparison replays along the curves
        again = xgate.decide(r.holds, sts, replay=rep, power=r.power, model=r.decision.model)
        assert again.kind == r.verdict, (name, again.kind, r.verdict)


def test_no_page08_row_contradicts_its_kind():
    bad = {
        n: contradiction(r.decision.to_dict())
        for n, r in _page08_rows()
        if contradiction(r.decision.to_dict())
    }
    assert not bad, bad


def test_an_unresolved_cell_is_underpowered_not_refuted():
    """The committed 32 instances at n' = 1024 (+0.031 +- 0.018 against the plateaued equal-time
    single head) alone: the every-n' check fails there, and its interval holds 0."""
    docs = msel.load_select()
    if docs["verdict"] is None:
        pytest.skip("verdict-cpu.json not committed here")
    cmp = tmh.load_comparison()
    ref = "single L=8, 1600 steps (equal time)"
    read = msel.runs_read([ref], tmh.models(cmp))
    r = msel.tv_claim(docs["verdict"], CAND, ref, statuses=msel.statuses_of_runs(read))
    assert not r.holds and r.power is not None and not r.power.refutes
    assert r.verdict == UNDERPOWERED
    assert r.power.detectable == pytest.approx(3 * r.details["rows"][-1]["fall_se"])


def test_the_scan_catches_contradictions():
    st = {"a": as_status({"state": "plateaued", "criterion": "synthetic", "last_step": 10})}
    weak = Power(0.019, (-0.038, 0.076), 0.0, 0.057, paired=True)
    d = xgate.decide(False, st, power=weak).to_dict()
    assert d["kind"] == UNDERPOWERED and contradiction(d) == ""
    assert "holds the claimed" in contradiction({**d, "kind": FAILS})
    assert "fails" in contradiction({**d, "kind": HOLDS})
    strong = dataclasses.replace(weak, effect=-0.15, ci=(-0.2, -0.1))
    assert "underpowered" in contradiction({**d, "power": dataclasses.asdict(strong)})
    open_ = {**d, "states": [["still improving", 1]]}
    assert "not all plateaued" in contradiction({**open_, "kind": HOLDS, "holds": True})
    assert "undecided on runs all plateaued" in contradiction({**d, "kind": UNDECIDED})
