"""Issue 47, item 2 (docs/verdicts.md, "Crediting the initialisation"): a run *worse than its
initialisation* (E[TV] at its last step above step 0 at some n') is a caveat, not the kind, exactly
where it cannot change the answer: the claim's check re-decided with the run credited with its
step-0 value at those n' (:func:`~pfntheory.claims.gating.initialisation_counterfactual`) has the
row's outcome under every crediting, and so has the check at S and 2S where the row has them;
otherwise, and wherever a builder gives no counterfactual, the row stays *worse with training*.

How these tests fail: a gate that ignores the counterfactual (the rule undone) leaves 07#2 *worse
with training* and the synthetic case (a) too; one that takes any counterfactual as an excuse
passes (b) and the partial-crediting case; a counterfactual that credits the wrong value moves
its numbers off the hand-computed ones.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pfntheory.claims import HOLDS, HOLDS_AT_BUDGET, UNDECIDED, WORSE, ClaimResult
from pfntheory.claims import gating as xgate
from pfntheory.claims.decision import Counterfactual, Replay
from pfntheory.experiments.results import EvalTable
from pfntheory.infra.config import ModelSpec, TaskSpec
from pfntheory.infra.status import Status, as_status
from pfntheory.infra.tree import RunSpec

KEY = "fig_exp1.blr.theory.tv_falls_with_L"  # 07#2


def _status(state: str = "plateaued", worse: tuple[int, ...] = (), test: str = "doubling"):
    """A run's status at 2000 steps (its S partner at 1000); worse than its step 0 at ``worse``
    (the committed 07#2 L = 2 run's curve values: 0.586 at step 0, 0.931 at the end, n' = 512)."""
    return Status(
        state=state,
        criterion="c",
        test=test,
        last_step=2000,
        short_step=1000 if test == "doubling" else None,
        start=((128, 0.684, 0.008, 0.573, 0.008), (512, 0.586, 0.007, 0.931, 0.007)),
        worse_than_start=worse,
    )


FLAT = _status()
IMPROVING = _status("still improving")
FROM_START = _status(worse=(512,))  # plateaued by doubling, but worse than step 0 at n' = 512
RISING = _status("diverging", worse=(512,), test="log-half")  # a rising log-half trend too


def _cf(held=(True,), runs=("w",)) -> Counterfactual:
    return Counterfactual(
        held=held,
        observed=0.472,
        bound=0.0101,
        credited=tuple((r, "at n'=512: E[TV] 0.916 -> 0.586, its value at step 0") for r in runs),
    )


def _both(s: bool, l2: bool) -> Replay:
    return Replay.at_budgets((1000, 2000), (s, l2))


# ---- (a) the counterfactual keeps the outcome: a caveat, the kind from the other rules ----------


@pytest.mark.parametrize(
    "others,replay,kind",
    [
        ({"a": FLAT}, None, HOLDS),  # every run plateaued
        ({"a": IMPROVING}, Replay((500, 1000, 1500, 2000), (True,) * 4), HOLDS_AT_BUDGET),
        ({"a": IMPROVING}, Replay((500, 1000, 1500, 2000), (True, False, True, True)), UNDECIDED),
    ],
)
@pytest.mark.parametrize("doubling", [None, _both(True, True)])
def test_a_kept_outcome_makes_the_worsening_a_caveat(others, replay, kind, doubling):
    """(a) The row gets the kind the other rules give it -- the same as with the run not worse
    than its initialisation at all -- with the worsening as its caveat, naming where it sits and
    the counterfactual's numbers."""
    d = xgate.decide(
        True, {**others, "w": FROM_START}, replay=replay, doubling=doubling, counterfactual=_cf()
    )
    clean = xgate.decide(True, {**others, "w": FLAT}, replay=replay, doubling=doubling)
    assert d.kind == kind == clean.kind, d.text()
    assert d.caveat and not d.worse and d.counterfactual is not None
    text = d.text()
    assert "Caveat" in text and "w: worse than its initialisation at n'=512" in text
    assert "0.586 at step 0, 0.931 at 2000 steps" in text  # where it sits
    assert "credited with its initialisation" in text and "0.472 against the bound 0.0101" in text
    assert ("both budgets, 1000 and 2000 steps" in text) == (doubling is not None)


# ---- (b) the counterfactual flips the outcome, or cannot speak for the run: worse with training --


@pytest.mark.parametrize(
    "statuses,cf,doubling",
    [
        ({"a": FLAT, "w": FROM_START}, _cf(held=(False,)), None),  # crediting flips the outcome
        ({"a": FLAT, "w": FROM_START}, _cf(held=(False,)), _both(True, True)),
        ({"a": FLAT, "w": FROM_START}, _cf(), _both(False, True)),  # S and 2S disagree
        ({"a": FLAT, "w": FROM_START}, _cf(runs=("a",)), None),  # "w" is not the one credited
        ({"a": FLAT, "w": RISING}, _cf(), None),  # a rising trend is not undone by crediting
        # all credited keeps the outcome, one credited alone flips it: it rests on a worsening
        (
            {"v": FROM_START, "w": FROM_START},
            _cf(held=(False, True, True), runs=("v", "w")),
            None,
        ),
    ],
)
def test_a_counterfactual_that_does_not_keep_the_outcome_leaves_worse(statuses, cf, doubling):
    d = xgate.decide(True, statuses, counterfactual=cf, doubling=doubling)
    assert d.kind == WORSE, d.text()
    assert d.worse and not d.caveat


# ---- (c) no counterfactual: worse with training, as before ---------------------------------------


@pytest.mark.parametrize("doubling", [None, _both(True, True)])
def test_without_a_counterfactual_a_run_worse_than_its_start_is_worse(doubling):
    d = xgate.decide(True, {"a": FLAT, "w": FROM_START}, doubling=doubling)
    assert d.kind == WORSE and "initialisation at n'=512" in d.text()


def test_the_counterfactual_is_refused_when_malformed():
    with pytest.raises(ValueError, match="held"):
        Counterfactual((True,), 0.4, 0.01, (("a", "x"), ("b", "y")))  # 3 subsets, 1 outcome
    with pytest.raises(ValueError, match="credited"):
        Counterfactual((True,), 0.4, 0.01, ())
    with pytest.raises(ValueError, match="credited"):
        Counterfactual((True,) * 3, 0.4, 0.01, (("a", "x"), ("a", "y")))
    with pytest.raises(ValueError, match="observed"):
        Counterfactual((True,), float("nan"), 0.01, (("a", "x"),))
    with pytest.raises(TypeError, match="counterfactual"):
        xgate.decide(True, {"a": FLAT}, counterfactual=True)


# ---- the counterfactual made from runs -----------------------------------------------------------


def _run(name: str, tv: list[float], se: float = 0.007):
    """A loaded run (spec, run_dir, eval) whose evaluation has E[TV] ``tv`` at n' 128..512."""
    model = ModelSpec(score="rbf", L=2, C=8, normalised=True)
    spec = RunSpec(TaskSpec("blr", 5), model, 128, 512, 2000, 1e-3)
    ev = EvalTable(
        n_eval=np.array([128, 256, 384, 512]),
        n_instances=512,
        mean={"tv": np.array(tv, float)},
        se={"tv": np.full(4, se)},
    )
    return SimpleNamespace(spec=spec, run_dir=Path("/nowhere") / name, evals={}, eval=ev)


def _drop(first, last, z: float = 3.0):
    def check(eval_of):
        D, se = xgate.diff_se(eval_of(first).average("tv"), eval_of(last).average("tv"))
        return xgate.exceeds(D, se, z, label="fig:exp1", statement="s")

    return check


def test_crediting_replaces_the_worse_n_prime_by_its_step_0_value():
    """The L = 2 run of 07#2 in small: its value at n' = 512 becomes the step-0 value (0.586, SE
    0.007), the others stay; the check is re-decided on the credited mean."""
    w, b = _run("w", [0.56, 0.40, 0.30, 0.916]), _run("b", [0.02, 0.015, 0.012, 0.015])
    cf = xgate.initialisation_counterfactual(_drop(w, b), [w, b], {"w": FROM_START, "b": FLAT})
    assert cf is not None and cf.held == (True,) and cf.runs == ("w",)
    mean_w = (0.56 + 0.40 + 0.30 + 0.586) / 4
    mean_b = (0.02 + 0.015 + 0.012 + 0.015) / 4
    assert cf.observed == pytest.approx(mean_w - mean_b)
    assert cf.bound == pytest.approx(3 * np.hypot(0.007, 0.007) / 2)  # SE of a 4-point mean: 0.0035
    assert "0.916 -> 0.586" in cf.text()
    assert w.eval.mean["tv"][-1] == 0.916  # the run's own evaluation is untouched


def test_crediting_can_flip_the_outcome():
    """The check "a beats b" rests on ``a``'s worsening: credited, ``a`` is no longer worse."""
    a, b = _run("a", [0.30, 0.30, 0.30, 0.90]), _run("b", [0.30, 0.30, 0.30, 0.80])
    cf = xgate.initialisation_counterfactual(_drop(a, b), [a, b], {"a": FROM_START, "b": FLAT})
    assert cf is not None and cf.held == (False,)
    d = xgate.decide(True, {"a": FROM_START, "b": FLAT}, counterfactual=cf)
    assert d.kind == WORSE


def test_every_subset_is_credited():
    """Two worsened runs on either side of the check: credited together, or ``b`` alone, the
    drop survives; ``a`` credited alone loses it. The outcome rests on ``b``'s worsening offsetting
    ``a``'s, so the row stays *worse with training*."""
    a, b = _run("a", [0.30, 0.30, 0.30, 0.90]), _run("b", [0.20, 0.20, 0.20, 0.95])
    sts = {"a": FROM_START, "b": FROM_START}
    cf = xgate.initialisation_counterfactual(_drop(a, b), [a, b], sts)
    assert cf is not None and len(cf.held) == 3 and cf.runs == ("a", "b")
    assert cf.held == (False, True, True)  # {a}, {b}, {a, b}
    assert not cf.agrees(True)
    assert xgate.decide(True, sts, counterfactual=cf).kind == WORSE


def test_no_counterfactual_where_none_is_worse_or_the_credit_cannot_be_placed():
    w, b = _run("w", [0.56, 0.40, 0.30, 0.916]), _run("b", [0.02, 0.015, 0.012, 0.015])
    check = _drop(w, b)
    assert xgate.initialisation_counterfactual(check, [w, b], {"w": FLAT, "b": FLAT}) is None
    off_grid = Status(
        state="plateaued",
        criterion="c",
        last_step=2000,
        start=((500, 0.586, 0.007, 0.931, 0.007),),
        worse_than_start=(500,),  # n' = 500 is not among the evaluation's n'
    )
    assert xgate.initialisation_counterfactual(check, [w, b], {"w": off_grid, "b": FLAT}) is None
    with pytest.raises(TypeError, match="check"):
        xgate.initialisation_counterfactual(None, [w, b], {"w": FROM_START, "b": FLAT})


def test_the_gate_makes_and_passes_the_counterfactual():
    """:func:`~pfntheory.claims.gating.gate` with ``recheck``: the row is decided with the
    counterfactual (a caveat); without it, *worse with training*."""
    w, b = _run("w", [0.56, 0.40, 0.30, 0.916]), _run("b", [0.02, 0.015, 0.012, 0.015])
    result = _drop(w, b)(lambda r: r.eval)
    assert isinstance(result, ClaimResult) and result.holds
    sts = {"w": FROM_START, "b": FLAT}
    with_cf = xgate.gate(result, [w, b], statuses=sts, recheck=_drop(w, b))
    assert with_cf.verdict == HOLDS and with_cf.decision.caveat
    assert xgate.gate(result, [w, b], statuses=sts).verdict == WORSE


# ---- 07#2 on the committed runs ---------------------------------------------------------------


@pytest.fixture(scope="module")
def row_07_2():
    """07#2 re-derived from the committed fig_exp1_budget runs by page 07's builder and recorded
    (as tests/test_rederive.py does), with the claim it records."""
    import json
    import tempfile

    from pfntheory.report import Recorder
    from pfntheory.report import trained_rows as rrows
    from pfntheory.report.spec import ENV_OUT

    runs, missing, declared = rrows.cpu_available("fig_exp1_budget")
    if not runs or missing:
        pytest.skip("the committed fig_exp1_budget runs are not all on disk")
    specs = [s for s in rrows.exp1_rows(runs, declared) if s.result is not None]
    (spec,) = [s for s in specs if s.result.key == KEY]
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV_OUT, tmp)
        rec = Recorder("07_cpu_scale")
        spec.record(rec, show=False)
        (row,) = rec.rows
        return json.loads(json.dumps(row.to_dict())), spec.result


def test_page07_blr_theory_L_has_its_kind_from_the_other_rules(row_07_2):
    """07#2: the L = 2 run ends above its step-0 E[TV] at n' = 512 (0.931 against 0.586);
    credited with its step-0 value there, the drop from L = 2 to 32 is 0.472 against 3 SE = 0.0101
    (0.513 as measured), and the check holds at S and 2S: the row has the kind the other rules give
    (*holds at budget*), with the worsening as its caveat."""
    row, claim = row_07_2
    d = claim.decision
    sts = {k: as_status(v) for k, v in claim.details["convergence"].items()}
    clean = {k: st.replace(worse_than_start=()) for k, st in sts.items()}
    other = xgate.decide(claim.holds, clean, replay=d.replay, doubling=d.doubling, power=d.power)
    assert row["verdict"] == str(other.kind) == str(HOLDS_AT_BUDGET), row["convergence"]
    cf = d.counterfactual
    assert cf is not None and cf.held == (True,) and len(cf.runs) == 1
    assert "-L2-C256-" in cf.runs[0]
    assert cf.observed == pytest.approx(0.472, abs=5e-4) and cf.bound == pytest.approx(0.0101, 1e-2)
    assert d.doubling is not None and d.doubling.held == (True, True)
    text = row["convergence"]
    assert "Caveat" in text and "worse than its initialisation at n'=512" in text
    assert "E[TV] 0.586 at step 0, 0.931 at 2000 steps" in text
    assert "0.916 -> 0.586" in text and "0.472 against the bound 0.0101" in text
    assert "both budgets, 1000 and 2000 steps" in text
