"""Evidence is counted once and the gate validates what it is given (issue 52, items 1 and 2),
and a corrupt committed results file stops a report rebuild by its name (item 4).

Each test is one misuse found by the independent hostile-input suite of issue 52, with what the
code did before in its docstring; after, each is refused with an error naming the argument (or the
file), never answered with a verdict.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pfntheory.base._checks import ArgumentTypeError
from pfntheory.claims import HOLDS, UNDECIDED, UNDERPOWERED, Power
from pfntheory.claims import gating as xgate
from pfntheory.claims import multihead_cells as mc
from pfntheory.claims import multihead_select as ms
from pfntheory.infra.runs import CorruptFileError
from pfntheory.infra.status import Status, as_status, no_curve
from pfntheory.pipelines import multihead_run as mrun

IMPROVING = Status(state="still improving", criterion="synthetic", last_step=2000)
PLATEAUED = Status(state="plateaued", criterion="synthetic", last_step=2000)

MULTI = "reports/runs/supp_tab_hier_multihead/hier_rbf-mix-L8-f723a57c8e"
SINGLE = "reports/runs/supp_tab_hier/hier_rbf-L32-4246a26429"
REF, CAND = "single L=32", "statistics selector, heads 32"


def _batch(seed: int, n: int = 1024, size: int = 20, **over) -> dict:
    """A confirmation batch of ``size`` instances (the shape of :func:`confirm_cell`'s): the
    candidate's TV below the reference's by 2 paired SE of 20 instances (``0.04 / sqrt(19)``,
    differences ``m -+ 0.02`` alternating): *undecided (underpowered)* once, *holds* if its
    instances were counted four times (4.1 SE). The level, E[TV] about 0.1, puts the minimal
    effect of interest (10% of it, docs/verdicts.md) inside the interval, which stays open."""
    i = np.arange(size)
    ref = 0.1 + 0.01 * np.cos(i + seed)
    cand = ref - (0.04 / math.sqrt(19) + 0.02 * (-1.0) ** i)
    k = str(n)
    doc = {
        "n_eval": [n],
        "n_instances": size,
        "seed": seed,
        "dtype": "float32",
        "multi_run": MULTI,
        "single_runs": {REF: SINGLE},
        "bayes_acc": {"p(h|D)": {k: [1.0] * size}},
        "tv": {REF: {k: ref.tolist()}, CAND: {k: cand.tolist()}},
        "sel_acc": {"statistics selector": {k: [1.0] * size}},
        "sel_tv_w": {"statistics selector": {k: [0.1] * size}},
        "coverage": {"90": {CAND: {k: [1] * size}}},
    }
    return {**doc, **over}


# ------------------------------------------------------------------------------------------------
# item 1: evidence counted once
# ------------------------------------------------------------------------------------------------


def test_a_repeated_batch_is_refused_not_counted_again():
    """Before: the same 20-instance batch passed 4 times turned the paired claim from *undecided
    (underpowered)* into *holds* (80 "instances", SE halved). After: refused, naming the seed."""
    one = mc.concat_batches([_batch(7)])
    assert ms.tv_claim(one, CAND, REF, statuses={}).verdict == UNDERPOWERED
    four = {**one, "n_instances": 80}  # what the repeated batch amounted to
    for key in ("bayes_acc", "tv", "sel_acc", "sel_tv_w"):
        four[key] = {k: {"1024": v["1024"] * 4} for k, v in one[key].items()}
    four["coverage"] = {"90": {CAND: {"1024": [1] * 80}}}
    assert ms.tv_claim(four, CAND, REF, statuses={}).verdict == HOLDS
    with pytest.raises(ValueError, match="seed 7.*count twice"):
        mc.concat_batches([_batch(7)] * 4)
    # distinct batches are joined, in order, each once
    cell = mc.concat_batches([_batch(7), _batch(8), _batch(9)])
    assert cell["seeds"] == [7, 8, 9] and cell["n_instances"] == 60
    assert cell["dtype"] == "float32"


@pytest.mark.parametrize(
    "field, value",
    [
        ("multi_run", "reports/runs/supp_tab_hier_multihead/other-run-0123456789"),
        ("single_runs", {REF: "reports/runs/supp_tab_hier/other-single-0123456789"}),
        ("dtype", "float64"),
    ],
)
def test_batches_of_other_runs_or_dtype_are_not_joined(field, value):
    """Before: the cell was labelled with the first batch's runs whatever the others' were.
    After: refused, naming the field and both values."""
    with pytest.raises(ValueError, match=f"mix {field}"):
        mc.concat_batches([_batch(7), _batch(8, **{field: value})])


def test_the_same_run_under_another_root_is_the_same_run():
    """Runs are compared by directory name (spec and config hash), not by the root they were read
    under."""
    moved = _batch(8, multi_run="/elsewhere/" + MULTI, single_runs={REF: "/x/" + SINGLE})
    assert mc.concat_batches([_batch(7), moved])["n_instances"] == 40


def test_a_batch_whose_rows_are_not_paired_is_refused():
    """Before: only bayes_acc and tv were checked against n_instances; a short coverage or
    selector list was joined and silently unpaired. After: refused, naming the list."""
    b = _batch(8)
    b["coverage"]["90"][CAND]["1024"] = [1] * 19
    with pytest.raises(ValueError, match="coverage 90.*19 instances"):
        mc.concat_batches([_batch(7), b])
    b = _batch(8)
    b["tv"][CAND]["1024"][3] = math.nan
    with pytest.raises(ValueError, match="NaN"):
        mc.concat_batches([b])
    with pytest.raises(ValueError, match="docs must not be empty"):
        mc.concat_batches([])


def _ceiling(n: int, seed: int = 4242, **over) -> dict:
    d = _batch(seed, n=n)
    return {**{k: v for k, v in d.items() if k != "dtype"}, **over}


def test_merge_ceilings_counts_each_n_once_under_one_label():
    """Before: two documents of one n' were merged (the n' listed twice, one document's instances
    silently overwriting the other's), and documents of other seeds or runs were labelled with
    the first one's seed and runs. After: refused."""
    merged = ms.merge_ceilings([_ceiling(256), _ceiling(512)])
    assert merged["n_eval"] == [256, 512] and merged["n_instances"] == {"256": 20, "512": 20}
    with pytest.raises(ValueError, match="both hold n'=256.*count twice"):
        ms.merge_ceilings([_ceiling(256), _ceiling(256)])
    with pytest.raises(ValueError, match="mix seed"):
        ms.merge_ceilings([_ceiling(256), _ceiling(512, seed=5151)])
    with pytest.raises(ValueError, match="mix multi_run"):
        ms.merge_ceilings([_ceiling(256), _ceiling(512, multi_run="runs/other-0123456789")])
    with pytest.raises(ValueError, match="docs must not be empty"):
        ms.merge_ceilings([])


def _verdict() -> dict:
    """A confirmation document of n' 256 and 1024 (20 instances each, seed 5151)."""
    low, high = _batch(5151, n=256), _batch(5151, n=1024)
    out = ms.merge_ceilings([low, high])
    out["coverage"] = {"90": {CAND: {"256": [1] * 20, "1024": [1] * 20}}}
    return out


def test_with_cell_refuses_a_cell_of_other_runs_or_draws():
    """Before: with_cell put any cell in place, the result labelled with the verdict's runs.
    After: a cell of another multi-head or single-head run, at an n' the verdict does not hold,
    or with a seed twice is refused; a valid cell replaces the n' (joining it twice counts it
    once)."""
    verdict = _verdict()
    cell = mc.concat_batches([_batch(5151), _batch(5152)])
    out = mc.with_cell(verdict, cell)
    assert out["n_instances"] == {"256": 20, "1024": 40}
    assert mc.with_cell(out, cell)["n_instances"] == out["n_instances"]  # replaced, not added
    with pytest.raises(ValueError, match="multi_run"):
        mc.with_cell(verdict, {**cell, "multi_run": "runs/other-0123456789"})
    with pytest.raises(ValueError, match="other single-head runs"):
        mc.with_cell(verdict, {**cell, "single_runs": {REF: "runs/other-0123456789"}})
    with pytest.raises(ValueError, match="seeds.*repeats"):
        mc.with_cell(verdict, {**cell, "seeds": [5151, 5151]})
    with pytest.raises(ValueError, match="not one of verdict's n_eval"):
        mc.with_cell(verdict, mc.concat_batches([_batch(1, n=512)]))


class _Selector:
    """A stand-in selector: its weights are one tensor."""

    def __init__(self, value: float = 0.0):
        import torch

        self.w = torch.full((3,), value)

    def state_dict(self):
        return {"w": self.w}


def _resume(tmp_path, doc, selector=None):
    """confirm_cell with its one batch already on disk: it checks the batch and scores
    nothing."""
    path = mc.batch_path(tmp_path, 1024, 7)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    sel = selector or _Selector()
    return mrun.confirm_cell(
        tmp_path,
        {REF: SINGLE},
        MULTI,
        sel,
        n=1024,
        n_batches=1,
        batch_size=20,
        seed0=7,
        depth=32,
        exact=False,
    )


def test_a_resumed_batch_is_checked_against_what_it_stands_for(tmp_path):
    """Before: confirm_cell resumed any file at a batch's path, by its path alone. After: the
    file must be the batch of that n', seed, size, runs, dtype, rows and selector, or it is
    refused naming the file."""
    sel = _Selector()
    good = _batch(7, selector_sha256=mrun.selector_digest(sel))
    assert _resume(tmp_path, good, sel) == [mc.batch_path(tmp_path, 1024, 7)]
    assert _resume(tmp_path, _batch(7), sel)  # written before the digest was recorded
    for bad, what in [
        (_batch(8), "seed 8, expected 7"),
        (_batch(7, size=32), "n_instances 32, expected 20"),
        (_batch(7, multi_run="runs/other-0123456789"), "multi_run"),
        (_batch(7, single_runs={REF: "runs/other-0123456789"}), "single_runs"),
        (_batch(7, dtype="float64"), "dtype"),
        ({**_batch(7), "n_eval": [512], "tv": {}}, "not a batch"),
        (_batch(7, selector_sha256="0" * 64), "selector_sha256"),
    ]:
        with pytest.raises(ValueError, match=f"n1024-seed7.json.*{what}"):
            _resume(tmp_path, bad, sel)
    with pytest.raises(CorruptFileError, match="n1024-seed7.json"):
        _resume(tmp_path, '{"n_eval": [1024], "tv', sel)


# ------------------------------------------------------------------------------------------------
# item 2: the gate validates what it is given
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw, arg",
    [
        ({"state": ""}, "state"),
        ({"state": None}, "state"),
        ({"test": "bogus"}, "test"),
        ({"last_step": -1}, "last_step"),
        ({"last_step": 2.5}, "last_step"),
        ({"se": -0.1}, "se"),
        ({"tol": math.inf}, "tol"),
        ({"fall": "abc"}, "fall"),
        ({"ci": (0.2, 0.1)}, "ci"),
        ({"ci": (0.1, math.nan)}, "ci"),
        ({"ci": (0.1,)}, "ci"),
        ({"alpha": 0.7}, "alpha"),
        ({"n_points": -2}, "n_points"),
        ({"start": ((64, 0.5, 0.01, 0.4),)}, "start"),
        ({"worse_than_start": (128,)}, "worse_than_start"),
        ({"resolvable": "yes"}, "resolvable"),
        ({"run": None}, "run"),
    ],
)
def test_status_checks_its_fields(kw, arg):
    """Before: Status accepted any field (a negative SE, an unknown test, a reversed CI). After:
    each is refused naming the field; replace() checks too."""
    with pytest.raises(ValueError, match=arg):
        Status(**{"state": "plateaued", "criterion": "c", **kw})
    with pytest.raises(ValueError, match=arg):
        PLATEAUED.replace(**kw)


def test_status_keeps_its_documented_nan_and_reads_json_null():
    """NaN is a fitted quantity not computed (documented); a JSON record's null is that NaN."""
    st = no_curve("no learning curve", 100)
    assert math.isnan(st.fall) and st.ci[0] != st.ci[0]
    again = as_status({"state": "too short", "criterion": "c", "fall": None, "ci": [None, None]})
    assert math.isnan(again.fall) and math.isnan(again.ci[1])


@pytest.mark.parametrize(
    "args, kw, arg",
    [
        (((), ()), {"min_steps": 0}, "min_steps"),
        (((100, 200, 300), ()), {}, "held"),
        (((100, 200), (True, True, True)), {}, "held"),
        (((300, 200, 100, 50), (True,) * 4), {}, "steps"),
        (((100, 100, 200, 300), (True,) * 4), {}, "steps"),
        (((-1, 200, 300, 400), (True,) * 4), {}, "steps"),
        (((100, 200, 300, 400), (1, 1, 1, 1)), {}, "held"),
        (((100, 200), (True, True)), {"source": "bogus"}, "source"),
        ((None, ()), {}, "steps"),
    ],
)
def test_replay_checks_its_fields(args, kw, arg):
    """Before: Replay((), (), min_steps=0) or steps without their outcomes decided *holds at
    budget* for a run still improving. After: refused naming the field."""
    with pytest.raises(ValueError, match=arg):
        xgate.Replay(*args, **kw)


def test_an_empty_replay_never_decides():
    """Before: decide() gave *holds at budget* on an empty replay (min_steps 0). After: such a
    replay cannot be built, and the default empty replay (no common curve step) does not
    decide."""
    d = xgate.decide(True, {"a": IMPROVING}, replay=xgate.Replay((), ()))
    assert d.kind == UNDECIDED
    full = xgate.Replay((400, 800, 1600, 2000), (True,) * 4)
    assert xgate.decide(True, {"a": IMPROVING}, replay=full).kind == "holds at budget"


def test_a_replay_of_other_runs_is_refused():
    """A replay whose steps lie beyond the last step of every run read was made on other runs."""
    other = xgate.Replay((4000, 8000, 16000, 32000), (True,) * 4)
    with pytest.raises(ValueError, match="replay has steps up to 32000"):
        xgate.decide(True, {"a": IMPROVING}, replay=other)


def test_an_empty_input_is_no_verdict():
    """Before: decide(True, {}) returned *holds* (every one of no runs plateaued). After: an
    empty statuses is refused unless the claim says it reads no trained run."""
    with pytest.raises(ValueError, match="statuses must not be empty"):
        xgate.decide(True, {})
    assert xgate.decide(True, {}, model="no trained run").kind == HOLDS


@pytest.mark.parametrize(
    "kw, arg",
    [
        ({"effect": math.nan}, "effect"),
        ({"effect": math.inf}, "effect"),
        ({"effect": 0.5}, "ci"),  # outside its interval
        ({"ci": (0.13, 0.07)}, "ci"),
        ({"ci": (math.nan, 0.13)}, "ci"),
        ({"ci": (0.07,)}, "ci"),
        ({"ci": None}, "ci"),
        ({"target": math.nan}, "target"),
        ({"detectable": -0.03}, "detectable"),
        ({"detectable": math.nan}, "detectable"),
        ({"paper": math.inf}, "paper"),
        ({"paired": "yes"}, "paired"),
    ],
)
def test_power_checks_its_fields(kw, arg):
    """Before: Power took any field, so a NaN interval never refuted and a reversed one always
    did. After: refused naming the field."""
    base = {"effect": 0.1, "ci": (0.07, 0.13), "target": 0.0, "detectable": 0.03}
    with pytest.raises(ValueError, match=arg):
        Power(**{**base, **kw})


def test_power_keeps_the_unbounded_interval_of_two_points():
    """slope_ci's interval of a slope through two points is (-inf, inf) (documented)."""
    p = Power(0.2, (-math.inf, math.inf), 0.0, math.inf)
    assert not p.refutes


def test_the_slope_of_a_constant_is_exact_not_nan():
    """Before: slope_ci of a constant y gave a NaN interval (linregress's r is 0/0), which a Power
    now refuses. After: the exact fit's interval (0, 0)."""
    from pfntheory.base.stats import slope_ci

    s, ci, _ = slope_ci([1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5])
    assert s == 0.0 and ci == (0.0, 0.0)


def _paired_doc() -> dict:
    return {
        "n_eval": [256],
        "n_instances": 4,
        "seed": 1,
        "multi_run": "m",
        "single_runs": {},
        "tv": {"single": {"256": [0.3, 0.31, 0.29, 0.3]}, "exact": {"256": [0.1, 0.12, 0.11, 0.1]}},
        "coverage": {"90": {"exact": {"256": [1, 1, 1, 0]}}},
    }


@pytest.mark.parametrize("z", [-1.0, -3.0, 0.0, math.nan, math.inf])
def test_claims_refuse_nonsensical_thresholds(z):
    """Before: tv_claim(z=-1) and ceiling_claim(z=-3) returned *holds* (any fall beats a
    negative margin). After: z must be positive and finite."""
    doc = _paired_doc()
    with pytest.raises(ValueError, match="z"):
        ms.tv_claim(doc, "exact", "single", z=z, statuses={})
    with pytest.raises(ValueError, match="z"):
        ms.ceiling_claim(doc, [("single", "exact")], z=z, statuses={})
    with pytest.raises(ValueError, match="z"):
        ms.coverage_claim(doc, "exact", levels=(90,), z=z)


def test_claims_refuse_empty_or_unpaired_evidence():
    """Before: a reference row of one instance broadcast against a model's four (a paired SE of
    nothing), a coverage row of no instances gave NaN, an empty accuracy table raised a foreign
    error. After: refused naming what is wrong."""
    doc = _paired_doc()
    doc["tv"]["single"]["256"] = [0.3]
    with pytest.raises(ValueError, match="1 instances at n'=256"):
        ms.tv_claim(doc, "exact", "single", statuses={})
    doc = _paired_doc()
    with pytest.raises(ValueError, match="no rows of reference 'missing'"):
        ms.tv_claim(doc, "exact", "missing", statuses={})
    with pytest.raises(ValueError, match="no 50% coverage of model 'exact'"):
        ms.coverage_claim(doc, "exact", levels=(50,))
    control = {"task": {}, "accuracy": {}}
    with pytest.raises(ValueError, match="accuracy.*must not be empty"):
        ms.control_claim(control)
    with pytest.raises(ValueError, match="level"):
        ms.control_claim({"task": {}, "accuracy": {"64": {}}}, level=1.5)


def test_breaking_scale_of_nothing_is_an_error_never_zero():
    """Before: breaking_scale([]) returned 0.0, which reads "never breaks". After: an empty path,
    a repeated scale, a NaN coverage or a level outside (0, 1) is refused naming it."""
    pytest.importorskip("torch")
    from pfntheory.claims import shift_cause as sc

    with pytest.raises(ValueError, match="path must not be empty"):
        sc.breaking_scale([])
    with pytest.raises(ValueError, match="path"):
        sc.breaking_scale([{"c": 1.0, "coverage90": math.nan}])
    with pytest.raises(ValueError, match="one point per scale"):
        sc.breaking_scale([{"c": 1.0, "coverage90": 0.9}, {"c": 1.0, "coverage90": 0.5}])
    with pytest.raises(ArgumentTypeError, match=r"path\[0\]"):
        sc.breaking_scale([{"scale": 1.0}])
    with pytest.raises(ValueError, match="level"):
        sc.breaking_scale([{"c": 1.0, "coverage90": 0.9}], level=0.0)


# ------------------------------------------------------------------------------------------------
# item 4 (part): a corrupt committed results file stops a rebuild by its name
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b'{"rows": [{"label": "fig:walker", "verd', b"\xff\xfe{}", b'{"rows": 3}', b"[1, 2]"],
    ids=["truncated", "not UTF-8", "rows not a list", "not a document"],
)
def test_a_corrupt_committed_results_file_stops_the_rebuild(tmp_path, monkeypatch, content):
    """Before: the guard read a corrupt committed results file as "no rows", so the rebuild went
    ahead and replaced it unprotected. After: the guard names the file and the rebuild refuses
    before executing anything, changing no byte."""
    from pfntheory.pipelines import report_run as execute
    from pfntheory.report import guard, spec

    out = tmp_path / "reports"
    (out / "results").mkdir(parents=True)
    bad = out / "results" / "05_case_studies.json"
    bad.write_bytes(content)
    with pytest.raises(CorruptFileError, match="05_case_studies.json"):
        guard.committed_rows(out, "05_case_studies")
    blockers = guard.rebuild_blockers(out, ["05_case_studies"], walker_available=lambda: True)
    assert len(blockers) == 1 and "05_case_studies.json" in blockers[0]
    monkeypatch.setattr(spec, "DEFAULT_OUT", out)
    monkeypatch.setattr(guard, "DEFAULT_OUT", out)
    executed = []
    monkeypatch.setattr(execute, "execute_notebook", lambda *a, **k: executed.append(a))
    with pytest.raises(execute.RebuildRefused, match="05_case_studies.json"):
        execute.run_report(["05"], progress=False)
    assert executed == [] and bad.read_bytes() == content
