"""The one gate of every trained verdict (``pfntheory.claims.gating.decide``; docs/verdicts.md,
"The kinds") fed synthetic evidence, one case per rule, and the committed runs re-derived by the
claim functions with no row whose kind contradicts its definition.

How these tests fail: each case of :data:`CASES` names the kind its evidence must get; a gate that
lets a run worse than its start pass as plateaued, calls an underpowered check "does not hold", or
passes an interval that crosses the band's edge gets another kind. The scan of the committed runs
fails on any row whose kind contradicts its definition (:func:`contradiction`), e.g. a *fails*
whose interval still holds the claimed effect or a *holds at budget* resting on a run that got
worse; :func:`test_the_scan_catches_contradictions` shows it catches each.
"""

from __future__ import annotations

import numpy as np
import pytest

from pfntheory.claims import (
    FAILS,
    FAILS_AT_BUDGET,
    HOLDS,
    HOLDS_AT_BUDGET,
    UNDECIDED,
    UNDERPOWERED,
    WORSE,
    band_verdict,
)
from pfntheory.claims import gating as xgate
from pfntheory.infra.convergence import doubling_status, plateau_status
from pfntheory.report.spec import ROOT

STEPS = (0, 10, 20, 40, 80, 160, 320, 640, 1000, 1280, 1600, 2000)


def _curve(values, se=1e-4, start=None, ns=(64, 128)):
    """Learning-curve points at :data:`STEPS` (value per step, the same at every n'), with the
    value ``start`` at step 0 when given."""
    vals = list(values)
    if start is not None:
        vals[0] = start
    return [
        {"step": s, "n": n, "tv": float(v), "tv_se": se}
        for s, v in zip(STEPS, vals, strict=True)
        for n in ns
    ]


def _pair(fall: float, rng, n: int = 256, base: float = 0.1):
    """Two budget-doubling curves (S and 2S) ending on the same held-out instances; the doubled
    budget buys ``fall`` (relative to ``base``) with a small paired spread."""
    long = base + 0.02 * rng.standard_normal(n)
    short = long + fall * base + 1e-4 * rng.standard_normal(n)

    def points(step, tv):
        half = n // 2
        return [{"step": 0, "n": k, "tv": 0.9, "tv_se": 0.01} for k in (64, 128)] + [
            {
                "step": step,
                "n": k,
                "tv": float(part.mean()),
                "tv_se": 1e-3,
                "tv_instances": part.tolist(),
            }
            for k, part in ((64, tv[:half]), (128, tv[half:]))
        ]

    return points(1000, short), points(2000, long)


RNG = np.random.default_rng(0)
FLAT = plateau_status(_curve([0.1] * len(STEPS), start=0.9))
FALLING = plateau_status(_curve(np.geomspace(0.9, 0.05, len(STEPS))))
RISING = plateau_status(_curve(np.geomspace(0.05, 0.2, len(STEPS)), start=0.9))
WORSE_THAN_START = plateau_status(_curve([0.014] * len(STEPS), start=0.0055))
DOUBLING_FLAT = doubling_status(*_pair(0.0, RNG))
DOUBLING_WORSE = doubling_status(*_pair(-0.3, RNG))
DOUBLING_FALLING = doubling_status(*_pair(0.3, RNG))
# an effect equal to the paper's (0.0075, supp-tab:lengthscale-crps) below the 3-SE margin
AS_PAPER = xgate.exceeds(0.0075, 0.0049, 3.0, paper=0.0075, label="x", statement="s").power
# the data exclude the claimed fall: the interval lies below 0
REFUTED = xgate.exceeds(-0.01, 0.001, 3.0, label="x", statement="s").power


def _replay(*held):
    return xgate.Replay(tuple(range(100, 100 + 10 * len(held), 10)), tuple(held))


#: (case, holds, statuses, replay, power, kind): the documented kind of each kind of evidence.
CASES = [
    ("plateaued, holds", True, {"a": FLAT}, None, None, HOLDS),
    ("plateaued, fails, refuted", False, {"a": FLAT}, None, REFUTED, FAILS),
    ("plateaued, effect as the paper's below the margin", False, {"a": FLAT}, None, AS_PAPER,
     UNDERPOWERED),
    ("improving, effect as the paper's, one outcome", False, {"a": FALLING},
     _replay(False, False, False, False), AS_PAPER, UNDERPOWERED),
    ("improving, refuted at every step", False, {"a": FALLING},
     _replay(False, False, False, False), REFUTED, FAILS_AT_BUDGET),
    ("improving, holds at every step", True, {"a": FALLING},
     _replay(True, True, True, True), None, HOLDS_AT_BUDGET),
    ("improving, the outcome changes", True, {"a": FALLING},
     _replay(False, True, True, True), None, UNDECIDED),
    ("improving, too few steps to replay", True, {"a": FALLING}, _replay(True, True), None,
     UNDECIDED),
    ("a rising curve", True, {"a": FLAT, "b": RISING}, _replay(True, True, True, True), None,
     WORSE),
    ("a plateaued curve ending above its start", False, {"a": WORSE_THAN_START}, None, REFUTED,
     WORSE),
    ("doubling plateaued, holds", True, {"a": DOUBLING_FLAT}, None, None, HOLDS),
    ("doubling plateaued, fails, refuted", False, {"a": DOUBLING_FLAT}, None, REFUTED, FAILS),
    ("doubling: the doubled budget is worse, the outcome changes", True,
     {"a": DOUBLING_FLAT, "b": DOUBLING_WORSE},
     xgate.Replay((1000, 2000), (False, True), "doubling", 2), None, WORSE),
    ("doubling: the doubled budget is worse, one outcome at S and 2S", True,
     {"a": DOUBLING_FLAT, "b": DOUBLING_WORSE},
     xgate.Replay((1000, 2000), (True, True), "doubling", 2), None, HOLDS_AT_BUDGET),
    ("doubling still improving, one outcome at S and 2S", True, {"a": DOUBLING_FALLING},
     xgate.Replay((1000, 2000), (True, True), "doubling", 2), None, HOLDS_AT_BUDGET),
]  # fmt: skip


def test_the_synthetic_statuses_are_what_they_say():
    assert FLAT.plateaued and not FLAT.got_worse
    assert FALLING.state == "still improving" and not FALLING.got_worse
    assert RISING.diverging
    assert WORSE_THAN_START.plateaued and WORSE_THAN_START.worse_than_start == (64, 128)
    assert DOUBLING_FLAT.plateaued and DOUBLING_FLAT.test == "doubling"
    assert DOUBLING_WORSE.diverging and DOUBLING_FALLING.state == "still improving"
    assert not AS_PAPER.refutes and AS_PAPER.detectable > AS_PAPER.effect and REFUTED.refutes


@pytest.mark.parametrize("case,holds,statuses,replay,power,kind", CASES, ids=[c[0] for c in CASES])
def test_the_gate_gives_the_documented_kind(case, holds, statuses, replay, power, kind):
    d = xgate.decide(holds, statuses, replay=replay, power=power)
    assert d.kind == kind, d.text()
    assert d.text() and contradiction(d.to_dict()) == ""
    if kind == WORSE:  # the row says where, and which model it read
        assert "worse" in d.text() and d.model in d.text()
    if kind == UNDERPOWERED:
        assert f"{power.detectable:.3g}" in d.text()


def test_walker_lake_worse_than_its_initialisation():
    """The Walker Lake PFN at n' = 128 (E[TV] 0.0055 at step 0, 0.0156 at 2000 and 0.0139 at 4000
    steps; it improves at n' = 384): its claims are *worse with training*, named as such."""
    from pfntheory.pipelines.casestudy_results import budget_claims

    case = ROOT / "reports" / "casestudy" / "walker"
    out = budget_claims(case)
    assert out is not None, f"{case} holds no budget-doubling pair"
    st = out["status"]
    assert st.worse_than_start == (128,), st.trend
    start = {n: (a, b) for n, a, _, b, _ in st.start}
    assert start[128][0] == pytest.approx(0.0055, abs=1e-4)
    assert start[128][1] == pytest.approx(0.0139, abs=1e-4)
    assert start[384][1] < start[384][0]  # it improves at the large n'
    assert {c.verdict for c in out["claims"]} == {WORSE}
    assert all("n'=128" in c.decision.text() for c in out["claims"])


@pytest.mark.parametrize(
    "ci,kind",
    [((-0.915, -0.8996), UNDERPOWERED), ((-0.95, -0.91), None), ((-0.85, -0.8), None)],
)
def test_one_rule_for_an_interval_check(ci, kind):
    """fig:stepsize linear (cpu): CI [-0.915, -0.8996] crosses the band's -0.9 edge, so it is
    neither inside (holds) nor outside (fails)."""
    assert band_verdict(ci, (-1.1, -0.9)) == kind


# ----------------------------------------------------------------------------------------------
# no row whose kind contradicts its definition
# ----------------------------------------------------------------------------------------------


def contradiction(decision: dict) -> str:
    """Why a gate decision (:meth:`~pfntheory.claims.gating.Decision.to_dict`) contradicts the
    definition of its kind, or "" when it agrees: every *fails* / *fails at budget* has an
    interval excluding the claimed effect; every *holds at budget* / *fails at budget* rests on
    runs not all plateaued, none worse; every *holds* / *does not hold* on runs all plateaued,
    none worse; every *worse with training* names a run that got worse."""
    kind, power = decision["kind"], decision.get("power")
    states = dict(decision["states"])
    plateaued = states.get("plateaued", 0) == decision["n_runs"]
    worse = bool(decision.get("worse"))
    # the effect the interval must reach: the claimed one, or the minimal effect of interest
    edge = None if power is None else power.get("threshold", power["target"])
    if kind in (FAILS, FAILS_AT_BUDGET) and power is not None and not power["ci"][1] < edge:
        return f"{kind} with an interval {power['ci']} that holds the claimed {edge}"
    if kind == UNDERPOWERED and (power is None or power["ci"][1] < edge):
        return "underpowered without an interval holding the claimed effect"
    caveat, doubling = decision.get("caveat"), decision.get("doubling")
    cf = decision.get("counterfactual")
    if caveat and (
        (doubling is None and cf is None)
        or (doubling is not None and any(h != decision["holds"] for h in doubling["held"]))
        or kind == WORSE
    ):
        return "a worsening kept as a caveat where the outcome at S and 2S differs"
    if (
        caveat
        and any("worse than its initialisation" in c for c in caveat)
        and (cf is None or any(h != decision["holds"] for h in cf["held"]))
    ):
        return "a run worse than its initialisation kept as a caveat where crediting it changes"
    if kind in (HOLDS_AT_BUDGET, FAILS_AT_BUDGET) and (plateaued or worse):
        return f"{kind} on runs {'plateaued' if plateaued else 'that got worse'}"
    if kind in (HOLDS, FAILS) and decision["n_runs"] and (not plateaued or worse):
        return f"{kind} on runs not all plateaued or worse than their start"
    if kind == WORSE and not worse:
        return "worse with training without a run that got worse"
    return ""


def test_the_scan_catches_contradictions():
    d = xgate.decide(False, {"a": FLAT}, power=AS_PAPER).to_dict()
    assert contradiction(d) == ""
    assert "holds the claimed" in contradiction({**d, "kind": FAILS})
    bad = xgate.decide(True, {"a": FALLING}, replay=_replay(True, True, True, True)).to_dict()
    assert "worse" in contradiction({**bad, "worse": ["a: diverging"]})
    assert "plateaued" in contradiction({**bad, "kind": HOLDS})
    assert "without a run" in contradiction({**bad, "kind": WORSE})
    kept = {**bad, "kind": HOLDS_AT_BUDGET, "caveat": ["a: worse than its initialisation at n'=64"]}
    cf = {"held": [True], "observed": 0.4, "bound": 0.01, "credited": [["a", "at n'=64"]]}
    assert contradiction({**kept, "counterfactual": cf}) == ""
    assert "at S and 2S" in contradiction(kept)  # neither replay nor counterfactual
    assert "crediting it changes" in contradiction(
        {**kept, "counterfactual": {**cf, "held": [False]}}
    )


def _committed_decisions():
    """The gate's decision of every trained row re-derived from the committed runs by the claim
    functions the report calls: the case studies' budget pairs, the two tables, fig:exp1's budget
    grid (its 2S runs by budget doubling), the multi-head comparison's inputs and page 09's
    trained latent-GP rows."""
    from pfntheory.claims import trained as xclaims
    from pfntheory.experiments.definitions import get_experiment
    from pfntheory.experiments.results import load_available
    from pfntheory.pipelines.casestudy_results import budget_claims
    from pfntheory.report import cpu as rcpu

    out = []
    for name in ("sacramento", "walker"):
        b = budget_claims(ROOT / "reports" / "casestudy" / name)
        out += [(f"{name}:{c.key}", c) for c in (b["claims"] if b else [])]
    for exp in ("supp_tab_lengthscale", "supp_tab_hier"):
        runs, missing = load_available(exp, "cpu")
        if runs and not missing:
            out += [(f"{exp}:{c.key}", c) for c in xclaims.check_table(runs)]
    runs, missing = load_available("fig_exp1_budget", "cpu")
    if runs and not missing:  # page 07's rows: the 2S grid, each slice gated by budget doubling
        declared = get_experiment("fig_exp1_budget").runs("cpu")
        least = {}
        for d in declared:
            panel = (d.task.kind, d.model.mode)
            least[panel] = min(least.get(panel, d.steps), d.steps)

        def doubled(spec):
            return spec.steps == 2 * least[(spec.task.kind, spec.model.mode)]

        statuses = xgate.doubling_statuses(runs)
        tr = [r for r in xgate.trained_runs(runs) if doubled(r.spec)]
        for p in rcpu.exp1_panels(tr, [d for d in declared if doubled(d)]):
            for c in rcpu.exp1_slice_claims(p, statuses=statuses):
                out.append((f"fig_exp1_budget:{p.title}:{c.axis}", c.result))
    from pfntheory.claims import latent as xlatent

    lat = xlatent.load_trained(ROOT / "reports" / "runs" / "latent_gpc")
    if lat["reference"] is not None and lat["preds"]["2S"]:
        rows = xlatent.check_trained(lat["reference"], lat["preds"], lat["doubling"])
        out += [(f"latent_gpc:{c.key}", c) for c in rows]
    return out


def test_no_committed_row_contradicts_its_kind():
    decided = _committed_decisions()
    assert len(decided) >= 16, f"only {len(decided)} trained rows re-derived"
    bad = {
        name: contradiction(c.decision.to_dict())
        for name, c in decided
        if c.decision is not None and contradiction(c.decision.to_dict())
    }
    assert not bad, bad
    assert all(c.decision is not None or c.verdict in (HOLDS, FAILS) for _, c in decided)
