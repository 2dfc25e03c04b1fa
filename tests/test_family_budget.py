"""The n-generalisation family's rows on a budget-doubled grid (issue 45, item 4; issue 47, item 1):
each cell read from its longest run with a half-budget partner, each row gated on exactly the runs
its check reads, by budget doubling on the curves of the design the row is about.

Read on the committed ``supp_exp2_d8_budget`` runs of the four cells L in {4, 8} x n_max in
{128, 256}, all doubled (L = 4 / n_max = 128 twice). How these fail: a selection that took the
S run, or the 2S run of a cell doubled twice, names another run; a row gated on the whole grid
lists runs it does not read; shift rows gated on the pretraining design's curves carry other
statuses than ``doubling_statuses(..., covariates="uniform")``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

CELLS = {(4, 128), (8, 128), (4, 256), (8, 256)}


@pytest.fixture(scope="module")
def runs():
    from pfntheory.experiments.results import load_available

    done, _ = load_available("supp_exp2_d8_budget", "cpu")
    sub = [r for r in done if (r.spec.model.L, r.spec.n_max) in CELLS]
    if len({(r.spec.model.L, r.spec.n_max, r.spec.steps) for r in sub}) < 9:
        pytest.fail("the committed d = 8 budget runs of the four cells are not all on disk")
    return sub


def test_each_cell_reads_its_longest_doubled_run(runs):
    from pfntheory.claims.pretraining_range import budget_cells

    cells = budget_cells(runs)
    assert set(cells) == CELLS
    assert {k: r.spec.steps for k, r in cells.items()} == {
        (4, 128): 4000,
        (8, 128): 2000,
        (4, 256): 2000,
        (8, 256): 2000,
    }
    # a cell whose only run has no half-budget partner is absent
    lone = [r for r in runs if (r.spec.model.L, r.spec.n_max, r.spec.steps) == (8, 256, 2000)]
    assert budget_cells(lone) == {}
    with pytest.raises(ValueError, match="runs"):
        from pfntheory.claims.pretraining_range import check_family_budget

        check_family_budget(lone)


@pytest.mark.parametrize("eval_file,cov", [("eval.json", None), ("eval_uniform.json", "uniform")])
def test_rows_are_gated_on_exactly_the_runs_they_read(runs, eval_file, cov):
    from pfntheory.claims import gating
    from pfntheory.claims.pretraining_range import budget_cells, check_family_budget

    cells = {k: r.run_dir.name for k, r in budget_cells(runs).items()}
    want = {
        "exp2_2.depth_helps": {cells[k] for k in CELLS},  # L = 4 and L = 8 at both n_max
        "exp2_2.n_max_helps": {cells[(8, 128)], cells[(8, 256)]},
        "exp2_2.tv_grows_with_n": set(cells.values()),
        "exp2_2.coverage_near_nominal": {cells[(8, 256)]},
    }
    statuses = gating.doubling_statuses(runs, covariates=cov)
    rows = check_family_budget(runs, eval_file)
    assert {r.key for r in rows} == set(want)
    for r in rows:
        conv = r.details["convergence"]
        assert set(conv) == want[r.key], r.key
        for name, st in conv.items():
            assert st["test"] == "doubling"
            assert st == statuses[name].to_dict()
        assert r.verdict is not None


def _eval(cov, ratio):
    from types import SimpleNamespace

    import numpy as np

    n = np.array([64, 128, 256])
    exact = np.full(3, 1.0)
    return SimpleNamespace(
        n_eval=n,
        mean={
            "coverage_90": np.full(3, cov),
            "width_90": exact * ratio,
            "width_90_exact": exact,
        },
        se={"coverage_90": np.full(3, 0.01)},
    )


@pytest.mark.parametrize(
    "cov,ratio,shift_holds",
    [(0.91, 1.0, True), (0.91, 1.5, False), (0.91, 0.8, False), (0.70, 1.0, False)],
    ids=["both-fine", "covers-by-being-too-wide", "too-narrow", "undercovers"],
)
def test_shift_rows_test_width_beside_coverage(cov, ratio, shift_holds):
    """Under the covariate shift a coverage row also needs the mean 90% width within the band a
    correctly centred Gaussian with coverage 0.9 -+ 0.05 would have ([0.875, 1.192]); on the
    pretraining design the width is reported, not tested. How it fails: an interval 1.5x the exact
    width that covers (the authors' reading, issue 46) would pass without the width test."""
    from pfntheory.claims.pretraining_range import _coverage_claim, width_band

    lo, hi = width_band()
    assert lo == pytest.approx(0.8752, abs=1e-4) and hi == pytest.approx(1.1916, abs=1e-4)
    e = _eval(cov, ratio)
    shifted = _coverage_claim(e, 32, 512, "eval_uniform.json", 3.0, "x", "k")
    plain = _coverage_claim(e, 32, 512, "eval.json", 3.0, "x", "k")
    assert shifted.holds is shift_holds
    assert plain.holds is (cov > 0.85)
    assert shifted.details["width_ratio_90"] == pytest.approx([ratio] * 3)
    assert "width / exact width in [0.875, 1.192]" in shifted.tolerance
    with pytest.raises(ValueError, match="slack"):
        width_band(slack=0.2, level=0.9)
    with pytest.raises(ValueError, match="level"):
        width_band(level=1.5)


@pytest.mark.parametrize("eval_file", ["eval.json", "eval_uniform.json"])
def test_each_row_is_replayed_at_both_budgets_on_the_whole_grid(runs, eval_file):
    """The budget replay of a row is its check on the S grid (1000 steps, every cell) and on the
    2S grid (2000 steps), recomputed here with :func:`check_exp2_2` on exactly those runs; a row
    reading 4000- and 2000-step runs (L = 4 / n_max = 128 doubled twice) has curves that share no
    step, so its recorded replay is this one unless the row got worse with training. Fails when
    the replay reads another grid (the outcomes differ on some row), or when the gate ignores it
    (such a row's decision records the empty curve replay)."""
    from pfntheory.claims.pretraining_range import check_exp2_2, doubling_replays

    reps = doubling_replays(runs, eval_file)
    assert reps and {r.steps for r in reps.values()} == {(1000, 2000)}
    for steps, i in ((1000, 0), (2000, 1)):
        grid = [r for r in runs if r.spec.steps == steps]
        assert {(r.spec.model.L, r.spec.n_max) for r in grid} == CELLS
        for row in check_exp2_2(grid, eval_file):
            assert reps[row.key].held[i] == row.holds, (row.key, steps)
    from pfntheory.claims.pretraining_range import check_family_budget

    for row in check_family_budget(runs, eval_file):
        rp = row.decision.replay
        budgets = {st["last_step"] for st in row.details["convergence"].values()}
        if len(budgets) > 1 and row.decision.rule != "worse":
            # runs of 4000 and 2000 steps: no common curve step, the budgets replay the check
            assert rp is not None and rp.source == "doubling", row.key
        if rp is not None and rp.source == "doubling":
            assert rp.held == reps[row.key].held, row.key
    # a grid missing a cell at S gives no replay (and its rows fall back to the curves)
    partial = [r for r in runs if not (r.spec.steps == 1000 and r.spec.model.L == 8)]
    assert doubling_replays(partial, eval_file) == {}


def test_the_gate_takes_the_budget_replay_where_the_curves_cannot_replay():
    """:func:`decide` with a curve replay that has no outcome and a doubling replay with the row's
    outcome at S and 2S decides *at budget*; with outcomes that differ it stays undecided and
    says the outcome changes. Fails if the doubling replay is ignored (undecided in the first
    case) or trusted against its own outcomes (at budget in the second)."""
    from pfntheory.claims import HOLDS_AT_BUDGET, UNDECIDED
    from pfntheory.claims.gating import Replay, decide
    from pfntheory.infra.status import Status

    st = {
        "a": Status(
            state="still improving",
            criterion="budget doubling",
            test="doubling",
            last_step=4000,
            short_step=2000,
        )
    }
    none = Replay((), (), "curve")
    same = Replay((1000, 2000), (True, True), "doubling", 2)
    d = decide(True, st, replay=none, doubling=same)
    assert d.kind == HOLDS_AT_BUDGET and d.replay == same
    assert "1000 and 2000 steps (every cell), and on the runs read, up to 4000" in d.text()
    other = Replay((1000, 2000), (False, True), "doubling", 2)
    d = decide(True, st, replay=none, doubling=other)
    assert d.kind == UNDECIDED and "outcome changes" in d.text()
