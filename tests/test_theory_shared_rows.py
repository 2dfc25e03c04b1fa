"""fig:exp1's slices in the public code's reading of theory mode (``fig_exp1_theory_shared``) are
page 07 rows of their own, decided as ``fig_exp1_budget``'s are (each slice gated by budget
doubling on the runs it reads and replayed on its S panel)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pfntheory.report import trained_rows as rrows

ROOT = Path(__file__).resolve().parents[1]
GRID = "fig_exp1_theory_shared"


def test_an_unknown_grid_is_refused_naming_the_argument():
    with pytest.raises(ValueError, match="experiment"):
        rrows.exp1_rows([], [], "fig_exp1")


def test_the_shared_readings_slices_are_rows_read_from_their_own_runs():
    """On the committed grid: one row per task and axis, keyed by the mode (so never confused with
    the text's theory mode), each reading only runs of the grid in mode ``theory_shared`` and
    naming the grid's sweep. Fails if the rows disappear once the grid is complete (they were a
    pending row before), or read the other reading's runs."""
    loaded = {GRID: rrows.cpu_available(GRID)}
    if loaded[GRID][1]:
        pytest.skip(f"{len(loaded[GRID][1])} runs of {GRID} are not on disk")
    assert GRID not in rrows.other_experiments()  # recorded once, beside the readings' figure
    rows = rrows.theory_shared_rows(loaded)
    keys = {r.result.key for r in rows if r.result is not None}
    want = {
        f"fig_exp1.{task}.theory_shared.tv_falls_with_{axis}"
        for task in ("blr", "rbf")
        for axis in ("L", "C")
    }
    assert want <= keys, sorted(keys)
    for r in rows:
        assert r.result is not None and GRID in r.options["command"]
        runs = [Path(x) for x in r.options["runs"]]
        assert runs and all(x.parent.name == GRID for x in runs)
        if r.result.key in want:  # the run names carry the mode: "-thsh-" is theory_shared
            assert all("-thsh-" in x.name for x in runs)
