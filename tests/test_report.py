"""Unit tests of :mod:`pfntheory.report`: verdicts, the Recorder's JSON rows, the index built from
them, and the runner's failure on a notebook whose cell raises."""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from pfntheory import report
from pfntheory.claims import ClaimResult


@pytest.fixture
def out(tmp_path, monkeypatch):
    """A fresh report folder that the Recorder writes into (as the runner sets it for a kernel)."""
    d = tmp_path / "reports"
    monkeypatch.setenv(report.ENV_OUT, str(d))
    monkeypatch.setenv(report.ENV_SCALE, "quick")
    return d


def _claim(holds=True, observed=0.5, bound=1.0, label="supp-thm:KRR", **kw):
    return ClaimResult(label=label, statement="error <= bound", holds=holds, observed=observed,
                       bound=bound, tolerance="round-off", **kw)


# -- verdicts -----------------------------------------------------------------------------------

@pytest.mark.parametrize("holds, caveat, verdict, expected", [
    (True, "", None, "holds"),
    (True, "only for eta < 1/(lambda_1+sigma^2)", None, "holds with a caveat"),
    (False, "", None, "does not hold"),
    (False, "some caveat", None, "does not hold"),
    (None, "", None, "pending"),
    (True, "", "does not hold", "does not hold"),   # explicit verdict wins (erratum rows)
], ids=["holds", "caveat", "fails", "fails-with-caveat", "pending", "override"])
def test_verdict_of(holds, caveat, verdict, expected):
    """Each combination maps to one verdict; a wrong mapping would mislabel rows in the index."""
    assert report.verdict_of(holds, caveat, verdict) == expected


def test_verdict_of_rejects_unknown():
    """A misspelt verdict must raise, not silently render as some badge."""
    with pytest.raises(ValueError, match="verdict"):
        report.verdict_of(True, "", "holds-ish")


# -- Recorder -----------------------------------------------------------------------------------

def test_recorder_writes_rows(out):
    """Every added ClaimResult becomes one JSON row with its numbers, verdict and a unique anchor."""
    rec = report.Recorder("nb_test")
    rec.add(_claim(), measured="worst ratio", show=False)
    rec.add([_claim(holds=False, observed=2.0), _claim(ci=(0.4, 0.6))],
            caveat="small n only", show=False)
    rec.pending("thm:lambda1", "step ~ 1/n", "pfntheory.claims.spectral is not available yet",
                show=False)
    data = json.loads((out / "results" / "nb_test.json").read_text())
    rows = data["rows"]
    assert [r["verdict"] for r in rows] == ["holds", "does not hold", "holds with a caveat", "pending"]
    assert rows[0]["measured"] == "worst ratio" and rows[0]["observed"] == 0.5
    assert rows[2]["ci"] == [0.4, 0.6]
    assert len({r["anchor"] for r in rows}) == 4, "anchors must be unique within a page"
    assert rows[3]["missing"].startswith("pfntheory.claims.spectral")


def test_recorder_non_finite_numbers_are_valid_json(out):
    """NaN/inf observations must not produce invalid JSON (json.dumps would write NaN)."""
    rec = report.Recorder("nb_nan")
    rec.add(_claim(observed=float("nan"), bound=float("inf"), details={"x": float("nan"), "a": [1, 2]}),
            show=False)
    text = (out / "results" / "nb_nan.json").read_text()
    row = json.loads(text)["rows"][0]
    assert row["observed"] is None and row["bound"] is None
    assert "a" not in row["details"], "arrays stay in the notebook, not in the index JSON"


def test_recorder_check_missing_module_is_pending(out):
    """A claim module that does not exist yet gives a pending row, not an error."""
    rec = report.Recorder("nb_pending")
    r = rec.check("pfntheory.claims.no_such_module", "check_x", label="thm:x", statement="s",
                  show=False)
    assert r is None
    assert rec.rows[0].verdict == "pending" and "no_such_module" in rec.rows[0].missing


def test_recorder_check_missing_function_is_pending(out):
    """A module without the function yet (still being written) also gives a pending row."""
    rec = report.Recorder("nb_pending_fn")
    rec.check("pfntheory.claims", "check_not_there", label="thm:y", statement="s", show=False)
    assert rec.rows[0].verdict == "pending" and "check_not_there" in rec.rows[0].missing


def test_recorder_check_propagates_errors(out, tmp_path, monkeypatch):
    """An error raised by an existing check is a bug and must fail the notebook, not turn pending."""
    pkg = tmp_path / "mods"
    pkg.mkdir()
    (pkg / "broken_claims.py").write_text("def check_boom():\n    raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(pkg))
    rec = report.Recorder("nb_err")
    with pytest.raises(RuntimeError, match="boom"):
        rec.check("broken_claims", "check_boom", label="l", statement="s", show=False)


def test_optional_import_does_not_hide_broken_modules(tmp_path, monkeypatch):
    """optional_import returns None only for the missing module itself; a module that exists but
    fails to import (it imports something missing) raises."""
    (tmp_path / "half_written.py").write_text("import definitely_not_installed_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert report.optional_import("pfntheory.claims.no_such_thing") is None
    with pytest.raises(ModuleNotFoundError):
        report.optional_import("half_written")


def test_recorder_rejects_bad_arguments(out):
    with pytest.raises(ValueError, match="notebook"):
        report.Recorder("../escape")
    rec = report.Recorder("nb_bad")
    with pytest.raises(ValueError, match="compare"):
        rec.add(_claim(), compare="guess", show=False)


def test_save_figure(out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    p = report.save_figure(fig, "nb_fig_line")
    plt.close(fig)
    assert p == out / "figures" / "nb_fig_line.png" and p.stat().st_size > 0
    with pytest.raises(ValueError, match="name"):
        report.save_figure(fig, "../x")


# -- index ----------------------------------------------------------------------------------------

def _fake_results(out):
    (out / "results").mkdir(parents=True, exist_ok=True)
    rows = [
        dict(label="supp-thm:KRR", statement="KRR bound", verdict="holds", observed=0.25, bound=1.0,
             measured="max error / bound", compare="bound", anchor="r-supp-thm-krr", ci=None),
        dict(label="thm:TFdoPPD", statement="TF rate", verdict="holds with a caveat", observed=-0.1,
             bound=-0.09, measured="slope", compare="bound", caveat="needs smaller eta",
             anchor="r-thm-tfdoppd", ci=[-0.11, -0.09]),
        dict(label="supp-tab:lengthscale-crps", statement="CRPS", verdict="does not hold",
             observed=0.35, bound=0.318, measured="CRPS", compare="paper", anchor="r-tab"),
        dict(label="thm:lambda1", statement="step 1/n", verdict="pending",
             missing="pfntheory.claims.spectral is not available yet", anchor="r-l1"),
    ]
    (out / "results" / "01_richardson_construction.json").write_text(
        json.dumps({"notebook": "01_richardson_construction", "rows": rows}))
    (out / "01_richardson_construction.html").write_text("<html></html>")


def test_build_index_one_row_per_result(out):
    """The index has one table row per JSON row, each verdict badge, counts and page links."""
    _fake_results(out)
    html_text = report.build_index(out).read_text()
    for lab in ("supp-thm:KRR", "thm:TFdoPPD", "supp-tab:lengthscale-crps", "thm:lambda1"):
        assert lab in html_text
    assert 'href="01_richardson_construction.html#r-supp-thm-krr"' in html_text
    assert "v-ok" in html_text and "v-caveat" in html_text and "v-fail" in html_text
    assert "needs smaller eta" in html_text
    assert "pfntheory.claims.spectral is not available yet" in html_text
    assert "0.318 <small>paper</small>" in html_text
    # summary counts: one of each verdict
    summary = re.search(r'<p class="summary">(.*?)</p>', html_text).group(1)
    assert summary.count("</span> 1") == 4
    # notebooks without results are listed as not executed, not silently dropped
    assert "not executed yet" in html_text and "05_case_studies" in html_text


def test_build_index_flags_failed_notebooks(out):
    _fake_results(out)
    (out / "results" / "_status.json").write_text(json.dumps(
        {"01_richardson_construction": {"ok": False, "seconds": 3.0, "error": "boom"}}))
    html_text = report.build_index(out).read_text()
    assert "notebook failed" in html_text and "Some notebooks failed" in html_text


def test_spec_lookup():
    assert report._spec("01").name == "01_richardson_construction"
    with pytest.raises(ValueError, match="only"):
        report._spec("0")          # ambiguous prefix
    with pytest.raises(ValueError, match="only"):
        report._spec("99_nothing")


# -- runner ---------------------------------------------------------------------------------------

def test_report_fails_on_cell_error(tmp_path):
    """A notebook whose cell raises makes the command exit nonzero, still writes its page (with the
    traceback) and flags it in the index. Without the error check this would exit 0."""
    nbdir = tmp_path / "nbs"
    nbdir.mkdir()
    (nbdir / "zz_fail.py").write_text(textwrap.dedent("""\
        # %%
        from pfntheory import report
        from pfntheory.claims import ClaimResult
        rec = report.Recorder("zz_fail")
        rec.add(ClaimResult("lab:one", "first", True, 1.0, 2.0))

        # %%
        raise RuntimeError("deliberate failure in a cell")
        """))
    out = tmp_path / "rep"
    code = report.main(["--out", str(out), "--notebooks", str(nbdir), "--timeout", "120"])
    assert code == 1
    page = (out / "zz_fail.html").read_text()
    assert "deliberate failure in a cell" in page
    status = json.loads((out / "results" / "_status.json").read_text())
    assert status["zz_fail"]["ok"] is False
    index = (out / "index.html").read_text()
    assert "Some notebooks failed" in index and "lab:one" in index


def test_register_adds_report_subcommand():
    import argparse

    parser = argparse.ArgumentParser(prog="pfntheory")
    sub = parser.add_subparsers(dest="command")
    report.register(sub)
    args = parser.parse_args(["report", "--only", "01", "--timeout", "30"])
    assert args.command == "report" and args.only == ["01"] and args.timeout == 30
    assert args.func is report._cmd


def test_retrain_runs_every_sweep_and_missing_case_studies(monkeypatch, tmp_path):
    """--retrain calls the experiments' sweep (idempotent) at the report's scale and runs only the
    case studies whose results are missing; nothing is trained here (both are replaced by spies)."""
    import pfntheory.casestudy.run as crun
    import pfntheory.experiments.runner as runner

    calls = []
    monkeypatch.setattr(runner, "run_sweep", lambda **kw: calls.append(("sweep", kw["scale"])))
    monkeypatch.setattr(crun, "run_casestudy", lambda name, scale: calls.append((name, scale)))
    monkeypatch.setattr(report, "DEFAULT_OUT", tmp_path)
    (tmp_path / "casestudy" / "sacramento").mkdir(parents=True)
    (tmp_path / "casestudy" / "sacramento" / "results.json").write_text("{}")
    report._retrain("quick")
    assert calls == [("sweep", "quick"), ("walker", "quick")]
