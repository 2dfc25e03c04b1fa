"""Execute every notebook of the report and fail on any cell error, as ``pfntheory report`` does.

Parts 1, 2, 3 and the errata compute everything; parts 4, 5 and 7 read the committed runs
(``reports/runs/``) and case-study results (``reports/casestudy/``) and train nothing. Each runs at
the quick scale in under a minute on this 2-core machine."""

from __future__ import annotations

import json

import pytest

from pfntheory import report
from pfntheory.pipelines import report_run

ALL = [s.name for s in report.NOTEBOOKS]
#: Notebooks that read runs still being swept (the cpu scale fills its grids over hours): a pending
#: row, naming the sweep that makes its runs, is their normal state until the sweep is done.
PARTIAL = {"07_cpu_scale", "08_hierarchical_multihead"}


def test_every_notebook_has_a_plain_text_source():
    """Each notebook of the report is a jupytext percent-format source, and nothing else sits in
    notebooks/ unlisted (it would never be executed)."""
    sources = sorted(p.stem for p in report.NOTEBOOKS_DIR.glob("*.py"))
    assert sources == sorted(s.name for s in report.NOTEBOOKS)
    for s in report.NOTEBOOKS:
        text = (report.NOTEBOOKS_DIR / f"{s.name}.py").read_text()
        assert "format_name: percent" in text and "# %%" in text, s.name


@pytest.mark.parametrize("name", ALL)
def test_notebook_executes(name, tmp_path):
    """The notebook runs top to bottom without a cell error and records at least one result row.
    A failing check function, a missing import or a plotting error all make this fail."""
    run = report_run.execute_notebook(name, tmp_path, timeout=300, write_html=False)
    assert run.ok, f"{name} failed after {run.seconds:.0f} s:\n{run.error[-4000:]}"
    rows = json.loads((tmp_path / "results" / f"{name}.json").read_text())["rows"]
    assert rows or (name in SMOKE_ONLY and _cpu_supersedes()), f"{name} recorded no result"
    assert all(r["verdict"] in report.VERDICTS for r in rows)
    assert all(r["label"] in report.PAPER_LABELS for r in rows)
    pending = {r["label"] for r in rows if r["verdict"] == "pending"}
    assert name in PARTIAL or not pending - _data_absent(), (
        f"{name}: results pending (missing runs or data): {pending}"
    )


#: Pages whose quick-scale checks are smoke tests of the pipeline once the cpu runs are complete
#: (page 07 then records the verdict rows of the same claims: one row per claim in the index).
SMOKE_ONLY = {"04_trained_experiments"}


def _cpu_supersedes() -> bool:
    """Whether every trained experiment page 04 reads has its cpu design complete on disk."""
    from pfntheory.experiments.results import load_available

    names = (
        "fig_exp1",
        "fig_exp2_1",
        "fig_exp2_2",
        "supp_exp2_d4",
        "supp_exp2_d8",
        "supp_exp2_shift_regime",
        "supp_tab_lengthscale",
        "supp_tab_hier",
    )
    return all(not load_available(n, "cpu")[1] for n in names)


def _data_absent() -> set[str]:
    """Labels that may be pending because their data file is not on this machine (the Walker Lake
    CSV is read from ../shared/data or $PFNTHEORY_WALKER_CSV, never copied into the repository)."""
    from pfntheory.casestudy.data import walker_data_available

    return set() if walker_data_available() else {"fig:walker"}
