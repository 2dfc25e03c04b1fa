"""Execute the notebooks that need no trained runs (parts 1, 2, 3 and the errata) and fail on any
cell error, as ``pfntheory report`` does. Each runs at the quick scale in well under a minute."""

from __future__ import annotations

import json

import pytest

from pfntheory import report

UNTRAINED = [s.name for s in report.NOTEBOOKS if not s.needs_training]


def test_every_notebook_has_a_plain_text_source():
    """Each notebook of the report is a jupytext percent-format source, and nothing else sits in
    notebooks/ unlisted (it would never be executed)."""
    sources = sorted(p.stem for p in report.NOTEBOOKS_DIR.glob("*.py"))
    assert sources == sorted(s.name for s in report.NOTEBOOKS)
    for s in report.NOTEBOOKS:
        text = (report.NOTEBOOKS_DIR / f"{s.name}.py").read_text()
        assert "format_name: percent" in text and "# %%" in text, s.name


@pytest.mark.parametrize("name", UNTRAINED)
def test_notebook_executes(name, tmp_path):
    """The notebook runs top to bottom without a cell error and records at least one result row.
    A failing check function, a missing import or a plotting error all make this fail."""
    run = report.execute_notebook(name, tmp_path, timeout=300, write_html=False)
    assert run.ok, f"{name} failed after {run.seconds:.0f} s:\n{run.error[-4000:]}"
    rows = json.loads((tmp_path / "results" / f"{name}.json").read_text())["rows"]
    assert rows, f"{name} recorded no result"
    assert all(r["verdict"] in report.VERDICTS for r in rows)
