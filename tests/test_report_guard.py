"""Writing into the committed ``reports/`` is explicit (:mod:`pfntheory.report.guard`): a rebuild
that would turn committed rows into pending ones refuses before it runs anything, and changes no
byte; with everything present it goes ahead."""

from __future__ import annotations

import json
import shutil

import pytest

from pfntheory.pipelines import report_run as execute
from pfntheory.report import guard, spec

_WALKER = "05_case_studies"


def _committed_copy(tmp_path, names=(_WALKER,)):
    """A copy of the committed results of ``names`` (what the guard reads), and their bytes."""
    out = tmp_path / "reports"
    (out / "results").mkdir(parents=True)
    for n in names:
        shutil.copy(spec.DEFAULT_OUT / "results" / f"{n}.json", out / "results")
    return out


def _bytes(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_missing_walker_data_is_named_with_how_to_supply_it(tmp_path):
    out = _committed_copy(tmp_path)
    rows = guard.committed_rows(out, _WALKER)
    n_walker = sum(r["label"] == "fig:walker" and r["verdict"] != "pending" for r in rows)
    assert n_walker >= 1  # the committed page measures the Walker rows
    blockers = guard.rebuild_blockers(out, [_WALKER], walker_available=lambda: False)
    assert len(blockers) == 1
    assert f"{n_walker} rows of {_WALKER}" in blockers[0] and "--walker-csv PATH" in blockers[0]
    assert guard.rebuild_blockers(out, [_WALKER], walker_available=lambda: True) == []


def test_missing_run_directories_are_named(tmp_path):
    out = _committed_copy(tmp_path)
    blockers = guard.rebuild_blockers(
        out, [_WALKER], walker_available=lambda: True, root=tmp_path / "empty"
    )
    assert len(blockers) == 1 and "run directories" in blockers[0]
    assert "reports/casestudy/" in blockers[0] and "--retrain" in blockers[0]
    # --retrain trains what is missing: only the data can block it
    assert (
        guard.rebuild_blockers(
            out, [_WALKER], walker_available=lambda: True, runs=False, root=tmp_path / "empty"
        )
        == []
    )


def test_pending_rows_block_nothing(tmp_path):
    out = tmp_path / "reports"
    (out / "results").mkdir(parents=True)
    rows = [{"label": "fig:walker", "verdict": "pending", "run_dir": "reports/runs/nowhere"}]
    (out / "results" / f"{_WALKER}.json").write_text(json.dumps({"rows": rows}))
    assert guard.rebuild_blockers(out, [_WALKER], walker_available=lambda: False) == []


def test_rebuild_without_walker_data_changes_no_committed_byte(tmp_path, monkeypatch):
    """run_report into the committed folder (here a copy of it) refuses before executing any
    notebook when the Walker Lake data is absent; a rebuild elsewhere (--out) is not refused."""
    import pfntheory.casestudy.data as data

    out = _committed_copy(tmp_path)
    monkeypatch.setattr(spec, "DEFAULT_OUT", out)
    monkeypatch.setattr(guard, "DEFAULT_OUT", out)
    monkeypatch.setattr(data, "walker_data_available", lambda: False)
    executed = []
    monkeypatch.setattr(execute, "execute_notebook", lambda *a, **k: executed.append(a))
    before = _bytes(out)
    with pytest.raises(execute.RebuildRefused, match="Walker Lake data is not found.*--out DIR"):
        execute.run_report(["05"], progress=False)
    assert executed == [] and _bytes(out) == before
    assert guard.writes_committed(None) and guard.writes_committed(out)
    assert not guard.writes_committed(tmp_path / "elsewhere")


def test_a_notebook_that_measures_fewer_rows_is_put_back(tmp_path, monkeypatch):
    """Past the pre-flight checks, a notebook that still loses measured rows leaves the committed
    page and rows as they were and fails the command."""
    out = _committed_copy(tmp_path)
    page = out / f"{_WALKER}.html"
    page.write_text("committed page")
    monkeypatch.setattr(spec, "DEFAULT_OUT", out)
    monkeypatch.setattr(guard, "DEFAULT_OUT", out)
    monkeypatch.setattr(guard, "rebuild_blockers", lambda *a, **k: [])
    monkeypatch.setattr(execute, "rebuild_blockers", lambda *a, **k: [])
    monkeypatch.setattr(execute, "build_index", lambda o: o / "index.html")
    before = (out / "results" / f"{_WALKER}.json").read_bytes()

    def degrade(name, out_dir, **kw):
        (out_dir / "results" / f"{name}.json").write_text(json.dumps({"rows": []}))
        page.write_text("degraded page")
        return execute.NotebookRun(name=name, ok=True, seconds=0.0)

    monkeypatch.setattr(execute, "execute_notebook", degrade)
    assert execute.run_report(["05"], progress=False) == 1
    assert (out / "results" / f"{_WALKER}.json").read_bytes() == before
    assert page.read_text() == "committed page"


def test_every_committed_row_can_be_measured_again_here():
    """With the Walker Lake data present, nothing blocks a rebuild of the committed report: every
    run directory a committed row names is on disk (a bare run name is not a path)."""
    names = [s.name for s in spec.NOTEBOOKS]
    assert guard.rebuild_blockers(spec.DEFAULT_OUT, names, walker_available=lambda: True) == []
