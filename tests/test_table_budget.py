"""The tables' rows gated on exactly the runs they read, and supp-tab:hierarchical-gp read on its
budget grid (:func:`pfntheory.claims.trained.check_table_budget`; issues 45 and 47).

On the committed cpu runs (reads JSON only, about a second): the CRPS-fall row reads the shallowest
and deepest run of each task and the coverage row the deepest, so each is gated on those runs and
no others (before, every row was gated on every run of the table, L = 16 included, so a run the
check never read could keep it *undecided*). On the budget grid each row reads the 2S runs, is
gated on their budget-doubling status (the check's outcome at S and at 2S is its replay); the test
fails if the S runs were read or if a row were gated on the learning curves' log-half instead. The
CRPS fall is paired on the runs' per-instance CRPS (eval_instances.json): the test fails if the
pairing were lost (the unpaired SE is 10x larger).
"""

from __future__ import annotations

import pytest

from pfntheory.claims import trained as xt
from pfntheory.experiments.results import load_available
from pfntheory.experiments.specs import ExactPPDSpec
from pfntheory.infra.tree import RunSpec


def _rows(rows) -> dict:
    return {r.key: r for r in rows}


def test_each_table_row_is_gated_on_the_runs_it_reads():
    runs, missing = load_available("supp_tab_hier", "cpu")
    assert not missing
    Ls = sorted({r.spec.model.L for r in runs if isinstance(r.spec, RunSpec)})
    assert len(Ls) == 3  # L = 8, 16, 32: the middle depth is read by no check
    rows = _rows(xt.check_table(runs))
    assert rows["table.crps_falls_with_L"].decision.n_runs == 2  # L = 8 and L = 32
    assert rows["table.coverage_near_nominal"].decision.n_runs == 1  # L = 32
    assert rows["table.crps_not_below_exact"].decision is None  # explicit: not gated


def test_the_hierarchical_table_reads_its_budget_grid_at_2s():
    budget, missing = load_available("supp_tab_hier_budget", "cpu")
    assert not missing, f"supp_tab_hier_budget [cpu] incomplete: {missing}"
    base, _ = load_available("supp_tab_hier", "cpu")
    refs = [r for r in base if isinstance(r.spec, ExactPPDSpec)]
    steps = sorted({r.spec.steps for r in budget})
    assert steps == [1000, 2000]
    rows = _rows(xt.check_table_budget(list(budget) + refs))
    for key in ("table.crps_falls_with_L", "table.coverage_near_nominal"):
        d = rows[key].decision
        assert d.test == "doubling", (key, d.test)
        assert d.last_step == 2000, (key, d.last_step)
    fall = rows["table.crps_falls_with_L"]
    assert fall.details["L"] == [8, 32]
    assert fall.details["paired"] and "paired over the 1024" in fall.tolerance


def test_the_budget_reader_refuses_an_incomplete_pair():
    budget, _ = load_available("supp_tab_hier_budget", "cpu")
    long_only = [r for r in budget if r.spec.steps == 2000]
    with pytest.raises(ValueError, match="differ|half budget"):
        xt.check_table_budget(long_only + [r for r in budget if r.spec.steps == 1000][:1])
