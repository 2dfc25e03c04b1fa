"""Unit tests of :mod:`pfntheory.report`: verdicts, the Recorder's JSON rows, the index built from
them, and the runner's failure on a notebook whose cell raises."""

from __future__ import annotations

import html
import json
import re
import textwrap

import pytest

from pfntheory import report
from pfntheory.claims import ClaimResult
from pfntheory.pipelines import report_run


@pytest.fixture
def out(tmp_path, monkeypatch):
    """A fresh report folder that the Recorder writes into (as the runner sets it for a kernel)."""
    d = tmp_path / "reports"
    monkeypatch.setenv(report.ENV_OUT, str(d))
    monkeypatch.setenv(report.ENV_SCALE, "quick")
    return d


def _claim(holds=True, observed=0.5, bound=1.0, label="supp-thm:KRR", **kw):
    return ClaimResult(
        label=label,
        statement="error <= bound",
        holds=holds,
        observed=observed,
        bound=bound,
        tolerance="round-off",
        **kw,
    )


# -- verdicts -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "holds, kw, expected",
    [
        (True, {}, "holds"),
        (True, {"caveat": "only for eta < 1/(lambda_1+sigma^2)"}, "holds with a caveat"),
        (False, {}, "does not hold"),
        (False, {"caveat": "some caveat"}, "does not hold"),
        (True, {"erratum": "the corrected statement"}, "erratum"),
        (False, {"erratum": "the corrected statement"}, "does not hold"),
        (False, {"outside": "L <= 8"}, "outside the paper's regime"),
        (True, {"convergence": "improving"}, "undecided"),
        (True, {"convergence": "unknown"}, "holds"),
        (False, {"explicit": "erratum"}, "erratum"),
        (True, {"explicit": "undecided", "outside": "L <= 8"}, "outside the paper's regime"),
    ],
    ids=[
        "holds",
        "caveat",
        "fails",
        "fails-with-caveat",
        "erratum",
        "erratum-unconfirmed",
        "outside",
        "undecided",
        "convergence-unknown",
        "explicit",
        "outside-beats-undecided",
    ],
)
def test_decide_verdict(holds, kw, expected):
    """Each rule of the recorder's docstring maps to one verdict kind; an erratum's kind follows
    from its check (never fixed), a still-improving run makes a row undecided."""
    assert report.decide_verdict(holds, **kw) == expected


def test_verdicts_are_the_claim_kinds_plus_pending():
    from pfntheory.claims import VERDICT_KINDS

    assert report.VERDICTS == (*VERDICT_KINDS, "pending")
    assert set(report.VERDICT_DEFINITIONS) == set(report.VERDICTS)
    with pytest.raises(ValueError, match="explicit"):
        report.decide_verdict(True, explicit="holds-ish")


# -- Recorder -----------------------------------------------------------------------------------


def test_recorder_writes_rows(out):
    """Every added ClaimResult becomes one JSON row with its numbers, verdict and a
    unique anchor."""
    rec = report.Recorder("nb_test")
    rec.add(_claim(), measured="worst ratio", show=False)
    rec.add(
        [_claim(holds=False, observed=2.0), _claim(ci=(0.4, 0.6))],
        caveat="small n only",
        show=False,
    )
    assert rec.add(_claim(paper_value=0.318), variant="TF^pr", show=False) is None  # no repr
    rec.pending("fig:walker", "Walker Lake", "walker.csv not found", show=False)
    rows = json.loads((out / "results" / "nb_test.json").read_text())["rows"]
    assert [r["verdict"] for r in rows] == [
        "holds",
        "does not hold",
        "holds with a caveat",
        "holds",
        "pending",
    ]
    assert rows[0]["measured"] == "worst ratio" and rows[0]["observed"] == 0.5
    assert rows[2]["ci"] == [0.4, 0.6] and rows[3]["paper_value"] == 0.318
    assert rows[3]["variant"] == "TF^pr" and rows[0]["command"] == "pfntheory report --only nb"
    assert len({r["anchor"] for r in rows}) == len(rows)


def test_recorder_rounds_numbers(out):
    """Saved numbers carry 6 significant digits, so host round-off never changes a
    committed byte."""
    rec = report.Recorder("nb_round")
    rec.add(_claim(observed=0.12345678912345), show=False)
    row = json.loads((out / "results" / "nb_round.json").read_text())["rows"][0]
    assert row["observed"] == 0.123457


def test_recorder_non_finite_numbers_are_valid_json(out):
    rec = report.Recorder("nb_nan")
    rec.add(_claim(observed=float("nan"), bound=float("inf")), show=False)
    text = (out / "results" / "nb_nan.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    row = json.loads(text)["rows"][0]
    assert row["observed"] is None and row["bound"] is None


def test_recorder_rejects_labels_that_are_not_the_papers(out):
    """A row's label must be a \\label{} of the paper; the variant goes in its own field."""
    rec = report.Recorder("nb_lab")
    with pytest.raises(ValueError, match="label"):
        rec.add(_claim(label="TF^pr"), show=False)
    with pytest.raises(ValueError, match="label"):
        rec.pending("supp-fig:exp2 d4-1 (covariate shift)", "x", "missing", show=False)
    rec.add(_claim(label="sec:generalization"), variant="TF^pr", show=False)


def test_recorder_rejects_bad_arguments(out):
    with pytest.raises(ValueError, match="notebook"):
        report.Recorder("../escape")
    rec = report.Recorder("nb_bad")
    with pytest.raises(ValueError, match="compare"):
        rec.add(_claim(), compare="paper", show=False)
    with pytest.raises(TypeError, match="ClaimResult"):
        rec.add({"holds": True}, show=False)
    with pytest.raises(ValueError, match="missing"):
        rec.pending("fig:walker", "x", "", show=False)


def _curve(steps, tv):
    return {
        "schema": 1,
        "eval_seed": 0,
        "n_instances": 8,
        "n_eval": [64],
        "points": [
            {
                "step": s,
                "n": 64,
                "tv": t,
                "tv_se": 0.001,
                "nll": 1.0,
                "nll_se": 0.1,
                "coverage90": 0.9,
                "coverage90_se": 0.01,
                "crps": 0.3,
                "crps_se": 0.01,
            }
            for s, t in zip(steps, tv, strict=True)
        ],
    }


def test_trained_rows_are_undecided_while_improving(out, tmp_path):
    """A row whose run is still improving reads 'undecided'; a plateaued run lets the check decide;
    a run without a learning curve is 'convergence unknown' and says so."""
    steps = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    improving, flat, bare = tmp_path / "improving", tmp_path / "flat", tmp_path / "bare"
    for d in (improving, flat, bare):
        d.mkdir()
    (improving / "learning_curve.json").write_text(
        json.dumps(_curve(steps, [1.0 / s for s in steps]))
    )
    (flat / "learning_curve.json").write_text(json.dumps(_curve(steps, [0.1] * len(steps))))
    rec = report.Recorder("nb_conv")
    rec.add(_claim(), runs=[improving], show=False)
    rec.add(_claim(), runs=[flat], show=False)
    rec.add(_claim(holds=False), runs=[bare], show=False)
    rows = json.loads((out / "results" / "nb_conv.json").read_text())["rows"]
    # the one gate (claims.gating.decide): a run without a curve has not been shown to plateau
    assert [r["verdict"] for r in rows] == ["undecided", "holds", "undecided"]
    assert "still improving" in rows[0]["convergence"]
    assert rows[0]["run_states"] == {str(improving): ["still improving", 1024, False]}
    assert "no curve" in rows[2]["convergence"]


def test_learning_curve_helpers(tmp_path):
    """read_learning_curve validates the schema; plot_learning_curves draws one line per run at the
    largest n' with the steps and values of the file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    assert report.read_learning_curve(tmp_path) is None
    (tmp_path / "learning_curve.json").write_text(json.dumps(_curve([1, 10, 100], [0.5, 0.2, 0.1])))
    doc = report.read_learning_curve(tmp_path)
    fig, ax = plt.subplots()
    plotted = report.plot_learning_curves(ax, {"run": doc})
    steps, y = plotted["run"]
    assert steps.tolist() == [1, 10, 100] and y.tolist() == [0.5, 0.2, 0.1]
    assert len(ax.lines) == 1 and ax.get_xscale() == "log"
    with pytest.raises(ValueError, match="metric"):
        report.plot_learning_curves(ax, {"run": doc}, metric="nope")
    plt.close(fig)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "learning_curve.json").write_text(json.dumps({"schema": 2, "points": []}))
    with pytest.raises(ValueError, match="schema"):
        report.read_learning_curve(bad)


def test_math_html_typesets_offline():
    """ASCII maths becomes plain HTML (Greek letters, relations, sub/superscripts); identifiers and
    file names are left alone; markup in the input is escaped."""
    assert report.math_html("lambda_1 <= sigma^2") == "λ<sub>1</sub> ≤ σ<sup>2</sup>"
    assert report.math_html("e^{2 Delta} - 1") == "e<sup>2 Δ</sup> - 1"
    assert report.math_html("eval_uniform.json mse_y") == "eval_uniform.json mse_y"
    assert report.math_html("<script>") == "&lt;script&gt;"
    assert 'class="math"' in report.markdown_math("the step `eta* = 2/lambda_1`")
    # module names stay code, relative ones too
    for code in ("`pfntheory.claims.gram`", "`.conditioning`", "`sweep.py`"):
        assert report.markdown_math(f"from {code} on") == f"from {code} on"


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
        dict(
            label="supp-thm:KRR",
            statement="KRR bound",
            verdict="holds",
            observed=0.25,
            bound=1.0,
            measured="max error / bound",
            compare="bound",
            anchor="r-supp-thm-krr",
            ci=None,
        ),
        dict(
            label="thm:TFdoPPD",
            statement="TF rate",
            verdict="holds with a caveat",
            observed=-0.1,
            bound=-0.09,
            measured="slope",
            compare="bound",
            caveat="needs a smaller step",
            anchor="r-thm-tfdoppd",
            ci=[-0.11, -0.09],
        ),
        dict(
            label="supp-tab:lengthscale-crps",
            statement="CRPS",
            verdict="does not hold",
            observed=0.35,
            bound=0.3,
            paper_value=0.318,
            measured="CRPS",
            compare="threshold",
            anchor="r-tab",
        ),
        dict(
            label="thm:L growth",
            statement="rho",
            verdict="erratum",
            holds=True,
            observed=0.99,
            erratum="rho* = 1 - 2/(c+1)",
            anchor="r-err",
        ),
        dict(
            label="thm:lambda1",
            statement="step 1/n",
            verdict="pending",
            missing="pfntheory.claims.spectral is not available yet",
            anchor="r-l1",
        ),
    ]
    (out / "results" / "01_richardson_construction.json").write_text(
        json.dumps({"notebook": "01_richardson_construction", "rows": rows})
    )
    (out / "01_richardson_construction.html").write_text("<html></html>")


def test_build_index_one_row_per_result(out):
    """The index has one table row per JSON row, each verdict badge, counts and page links."""
    _fake_results(out)
    html_text = report.build_index(out).read_text()
    for lab in ("supp-thm:KRR", "thm:TFdoPPD", "supp-tab:lengthscale-crps", "thm:lambda1"):
        assert lab in html_text
    assert 'href="01_richardson_construction.html#r-supp-thm-krr"' in html_text
    assert "v-ok" in html_text and "v-caveat" in html_text and "v-fail" in html_text
    assert "needs a smaller step" in html_text
    assert "pfntheory.claims.spectral is not available yet" in html_text
    # the paper's number in its own column (with its table), never mixed with the threshold
    line = re.search(r'id="r-tab"><summary>(.*?)</summary>(.*?)</details>', html_text).groups()
    assert '<span class="one num">0.35</span><span class="one num">0.318 <small>Tab.' in line[0]
    assert "compared with: 0.3 (threshold); paper: <b>0.318</b> (Table" in line[1]
    assert "corrected statement: ρ* = 1 - 2/(c+1)" in html_text
    # the verdict kinds counted per part in the findings box, definitions before the rows
    kinds = html_text[: html_text.index('<div class="head">')]
    assert _summary_counts(html_text) == {
        "holds": 1,
        "holds with a caveat": 1,
        "does not hold": 1,
        "erratum": 1,
        "pending": 1,
    }
    assert report.VERDICT_DEFINITIONS["erratum"] in html.unescape(kinds)
    # the number the paper prints beside every label, on the row and in the errata line
    assert '<span class="one res"><b>Theorem B.8</b> supp-thm:KRR</span>' in html_text
    assert "<b>Theorem 5.3</b> (<code>thm:L growth</code>)" in html_text
    assert 'id="r-supp-thm-krr"' in html_text  # the card's "index row" link lands here
    # no time stamp: the same results give the same bytes
    assert report.build_index(out).read_text() == html_text
    # notebooks without results are listed as not executed, not silently dropped
    assert "not executed yet" in html_text and "05_case_studies" in html_text


def _summary_counts(page: str) -> dict[str, int]:
    """The 'all parts' row of the findings box, by verdict kind (the columns' badges)."""
    box = page[page.index('<section class="summary"') : page.index("</section>")]
    table = box[: box.index("</table>")]
    heads = re.findall(r'<th><span class="verdict[^"]*">([^<]+)</span></th>', table)
    total = re.search(r'<tr class="total">(.*?)</tr>', table).group(1)
    cells = re.findall(r"<td>([^<]*)</td>", total)[2:-1]  # after the name and the scale column
    return {html.unescape(h): int(c) for h, c in zip(heads, cells, strict=True)}


def test_summary_box_counts_errata_and_trained_runs(out):
    """Findings first: counts by kind per part, the errata one line each (grouped by statement,
    linked to their rows), and the trained runs' budget and plateau states."""
    (out / "results").mkdir(parents=True)
    rows = [
        dict(
            label="thm:L growth",
            statement="s",
            verdict="erratum",
            erratum="rho* = 1 - 2/(c+1); a typo that does not change the order",
            anchor="r-a",
            variant="proof",
        ),
        dict(
            label="sec:generalization",
            statement="s",
            verdict="erratum",
            anchor="r-b",
            erratum="TF^pr converges only if s_x > eta sigma^2/2; far queries diverge",
            variant="d=2",
        ),
        dict(
            label="sec:generalization",
            statement="s",
            verdict="erratum",
            anchor="r-c",
            erratum="TF^pr converges only if s_x > eta sigma^2/2; far queries diverge",
            variant="d=4",
        ),
        dict(
            label="fig:exp1",
            statement="s",
            verdict="undecided",
            holds=True,
            anchor="r-d",
            command="pfntheory sweep fig_exp1 --scale cpu",
            run_states={
                "reports/runs/a": ["still improving", 2000],
                "reports/runs/b": ["plateaued", 1000],
            },
        ),
        dict(
            label="fig:exp1",
            statement="s",
            verdict="holds at budget",
            holds=True,
            anchor="r-e",
            command="pfntheory sweep fig_exp1 --scale cpu",
            run_states={"reports/runs/a": ["still improving", 2000]},
        ),
    ]
    (out / "results" / "07_cpu_scale.json").write_text(
        json.dumps({"notebook": "07_cpu_scale", "scale": "quick", "rows": rows})
    )
    page = report.build_index(out).read_text()
    box = page[page.index('<section class="summary"') : page.index("</section>")]
    assert page.index('<section class="summary"') < page.index('<div class="head">')
    assert _summary_counts(page) == {"erratum": 3, "holds at budget": 1, "undecided": 1}
    assert "runs: cpu" in box and "Scale: <b>quick</b>" not in page  # no quick over cpu rows
    # one line per corrected statement; its first clause; the variants named; a link to the row
    assert box.count("<li>") == 2
    assert "ρ* = 1 - 2/(c+1) <a" in box and "a typo" not in box
    assert "d=2, d=4" in box and 'href="#r-b"' in box
    # the trained runs: verdicts, the check's outcome per figure, budget and plateau states
    assert "rest on 2 runs, trained 1000–2000 steps" in box
    # one plateau tally per experiment (claims.gating.plateau_tally, shared with page 07)
    assert (
        "<code>reports/runs</code>: 1 of 2 runs plateaued (1 plateaued, 1 still improving)" in box
    )
    assert "<b>Figure 2</b> (<code>fig:exp1</code>) 2 of 2" in box
    assert "1 holds at budget, 1 undecided" in box


def test_index_citation_block_is_deterministic(out, tmp_path, monkeypatch):
    """The citation block names the version, the last commit touching the inputs and its date, and
    the paper's BibTeX; no wall-clock time: two builds write the same bytes, and a commit that adds
    only outputs (pages, results) leaves the stamp as it was."""
    import subprocess

    from pfntheory.report import citation

    repo = tmp_path / "repo"
    (repo / "pfntheory").mkdir(parents=True)
    (repo / "reports").mkdir()
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "9.8.7"\n')
    (repo / "pfntheory" / "a.py").write_text("x = 1\n")

    def git(*args, date="2024-05-06T07:08:09"):
        env = {
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_DATE": date,
            "HOME": str(tmp_path),
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "PATH": __import__("os").environ["PATH"],
        }
        return subprocess.run(
            ["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
        ).stdout

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "code")
    code = git("log", "-1", "--abbrev=10", "--format=%h").strip()
    stamp = citation.build_stamp(repo)
    assert stamp == citation.Stamp("9.8.7", code, "2024-05-06")
    (repo / "reports" / "index.html").write_text("built")
    git("add", ".")
    git("commit", "-q", "-m", "pages", date="2024-06-01T00:00:00")
    assert citation.build_stamp(repo) == stamp  # outputs are not inputs
    block = citation.citation_html(stamp)
    assert "9.8.7" in block and code in block and "2024-05-06" in block
    assert "@inproceedings{kang2026transformers" in block and "Kang, Gyeonghun" in block
    assert citation.build_stamp(tmp_path / "nowhere").commit == "unknown"

    _fake_results(out)
    first = report.build_index(out).read_bytes()
    assert b"@inproceedings{kang2026transformers" in first
    assert report.build_index(out).read_bytes() == first


def test_build_index_flags_failed_notebooks(out):
    _fake_results(out)
    (out / "results" / "_status.json").write_text(
        json.dumps({"01_richardson_construction": {"ok": False, "seconds": 3.0, "error": "boom"}})
    )
    html_text = report.build_index(out).read_text()
    assert "notebook failed" in html_text and "Some notebooks failed" in html_text


def test_spec_lookup():
    assert report.find_spec("01").name == "01_richardson_construction"
    with pytest.raises(ValueError, match="only"):
        report.find_spec("0")  # ambiguous prefix
    with pytest.raises(ValueError, match="only"):
        report.find_spec("99_nothing")


# -- runner ---------------------------------------------------------------------------------------


def test_report_fails_on_cell_error(tmp_path):
    """A notebook whose cell raises makes the command exit nonzero, still writes its page (with the
    traceback) and flags it in the index. Without the error check this would exit 0."""
    nbdir = tmp_path / "nbs"
    nbdir.mkdir()
    (nbdir / "zz_fail.py").write_text(
        textwrap.dedent("""\
        # %%
        from pfntheory import report
        from pfntheory.claims import ClaimResult
        rec = report.Recorder("zz_fail")
        rec.add(ClaimResult("thm:lambda1", "first", True, 1.0, 2.0))

        # %%
        raise RuntimeError("deliberate failure in a cell")
        """)
    )
    out = tmp_path / "rep"
    from pfntheory.cli import report as report_cli

    code = report_cli.main(["--out", str(out), "--notebooks", str(nbdir), "--timeout", "120"])
    assert code == 1
    page = (out / "zz_fail.html").read_text()
    assert "deliberate failure in a cell" in page
    status = json.loads((out / "results" / "_status.json").read_text())
    assert status["zz_fail"]["ok"] is False
    index = (out / "index.html").read_text()
    assert "Some notebooks failed" in index and "thm:lambda1" in index


def test_register_adds_report_subcommand():
    import argparse

    parser = argparse.ArgumentParser(prog="pfntheory")
    sub = parser.add_subparsers(dest="command")
    from pfntheory.cli import report as report_cli

    report_cli.register(sub)
    args = parser.parse_args(["report", "--only", "01", "--timeout", "30"])
    assert args.command == "report" and args.only == ["01"] and args.timeout == 30
    assert args.func is report_cli._cmd


def test_retrain_runs_every_sweep_and_missing_case_studies(monkeypatch, tmp_path):
    """--retrain calls the experiments' sweep (idempotent) at the report's scale and runs only the
    case studies whose results are missing; nothing is trained here (both are replaced by spies)."""
    import pfntheory.experiments.runner as runner
    import pfntheory.pipelines.casestudy_run as crun

    calls = []
    monkeypatch.setattr(runner, "run_sweep", lambda **kw: calls.append(("sweep", kw["scale"])))
    monkeypatch.setattr(crun, "run_casestudy", lambda name, scale: calls.append((name, scale)))
    from pfntheory.report import spec

    monkeypatch.setattr(spec, "DEFAULT_OUT", tmp_path)
    (tmp_path / "casestudy" / "sacramento").mkdir(parents=True)
    (tmp_path / "casestudy" / "sacramento" / "results.json").write_text("{}")
    report_run.retrain("quick")
    assert calls == [("sweep", "quick"), ("walker", "quick")]


def test_tables_print_no_raw_values():
    """report.table: labelled columns, rounded numbers, "—" for None / NaN, no index column; the
    Recorder's own summary table likewise (with the paper's number beside each label)."""
    import numpy as np
    import pandas as pd

    from pfntheory.report.tables import table

    df = pd.DataFrame(
        {"n_prime": [96, 1024], "crps": [0.035330000001, np.nan], "paper": [None, 0.1234567]}
    )
    t = table(df, {"n_prime": "n'", "crps": "CRPS", "paper": "paper"}, digits={"crps": 3})
    markup = t._repr_html_()
    assert "<th>n'</th><th>CRPS</th><th>paper</th>" in markup
    assert ">0.035<" in markup and ">0.1235<" in markup and ">1024<" in markup
    for raw in ("NaN", "nan", "None", "e-02", "dataframe"):
        assert raw not in markup, raw
    assert markup.count("—") == 2 and "<Table: 2 rows" in repr(t)
    assert table([{"a": True, "b": [1.23456, 2]}])._repr_html_().count("yes") == 1
    with pytest.raises(ValueError, match="columns"):
        table(df, ["nope"])


def test_recorder_table_is_formatted(out):
    rec = report.Recorder("nb_table")
    rec.add(_claim(observed=0.035330000001, bound=None), measured="gap", show=False)
    rec.pending("fig:walker", "Walker", "walker.csv not found", show=False)
    markup = rec.table()._repr_html_()
    assert "Theorem B.8 (supp-thm:KRR)" in markup and "Figure 15 (fig:walker)" in markup
    assert ">0.03533<" in markup and "None" not in markup and "nan" not in markup


def test_tolerance_reasons_are_typed_keys():
    """A margin's reason is named by a key of claims.gating.SHARED_REASONS (never found by parsing
    the tolerance's text), appended once; an unknown key is refused."""
    from pfntheory.claims import gating

    tol = f"|coverage - 0.9| <= {gating.COVERAGE_SLACK} + 3 SE (worst n'=384)"
    out = report.recorder.explain_tolerance(tol, ["coverage", "coverage"])
    assert "reasonably close to nominal" in out and "0.848" in out and out.count("why:") == 1
    assert report.recorder.explain_tolerance(tol) == tol  # no key, no reason: the text is not read
    assert "3 SE" in report.recorder.explain_tolerance("TV(a) - TV(b) > 3 SE", ["margin"])
    with pytest.raises(ValueError, match="reasons"):
        report.recorder.explain_tolerance(tol, ["why"])


def test_paper_values_only_for_like_quantities():
    """A table claim gets the paper's number only where every cell it rests on is a printed cell
    (the paper's design), and then the same quantity: the CRPS drop over the same cells, the
    coverage of the same cell, level and depth; a stated rate by its claim key."""
    from pfntheory.experiments.published import LENGTHSCALE_CRPS
    from pfntheory.report.paper_values import published_value

    (ell, n), cell = next(iter(LENGTHSCALE_CRPS.items()))
    row = {"lengthscale": ell, "n_prime": n, "cov90_L32": 0.877, "cov95_L32": 0.93}
    drop = ClaimResult(
        "supp-tab:lengthscale-crps",
        "s",
        True,
        0.01,
        key="table.crps_falls_with_L",
        details={"rows": [row], "L": [8, 32]},
    )
    assert published_value(drop) == pytest.approx(cell["crps"][0] - cell["crps"][2])
    cov = ClaimResult(
        "supp-tab:lengthscale-crps",
        "s",
        True,
        0.93,
        key="table.coverage_near_nominal",
        details={"rows": [row]},
    )
    assert published_value(cov) == cell["cov95"][2]
    shrunk = ClaimResult(
        "supp-tab:lengthscale-crps",
        "s",
        True,
        0.01,
        key="table.crps_falls_with_L",
        details={"rows": [{**row, "n_prime": 96}], "L": [8, 32]},
    )
    assert published_value(shrunk) is None  # n' = 96 is not a cell of the paper
    # fig:stepsize's row reports the fitted limit c0 of lambda_1/(n lambda_inf), which the paper
    # does not print (the slope -1 it states is no longer the row's quantity)
    assert published_value(_claim(key="fig_stepsize.rbf.slope")) is None
    assert published_value(_claim()) is None


def test_export_hides_the_kernels_temporary_file_names(tmp_path):
    """A warning quotes the kernel's cell file (/tmp/ipykernel_<pid>/<hash>.py), new in every
    kernel: the page shows "<cell>" instead, so two builds write the same bytes."""
    import sys

    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# T"), nbformat.v4.new_code_cell("x")]
    nb.cells[1].outputs = [
        nbformat.v4.new_output(
            "stream",
            name="stderr",
            text="/tmp/ipykernel_22937/855954077.py:6: UserWarning: w\n"
            f"{sys.prefix}/lib/x.py:1: Warning: v\n{report.ROOT}/pfntheory/y.py:2: Warning: u\n",
        )
    ]
    page = report_run.export_html(nb, tmp_path / "t.html", ok=True).read_text()
    assert "ipykernel_" not in page and "&lt;cell&gt;:6: UserWarning" in page
    assert "&lt;python&gt;/lib/x.py:1" in page and "\npfntheory/y.py:2" in page
    assert sys.prefix not in page and str(report.ROOT) not in page


def test_finite_or_none_maps_non_numbers_to_null_and_rounds_numbers():
    """The row serialiser: numbers (numpy scalars too) rounded to 6 significant digits; None,
    booleans, text, NaN and inf become None (JSON null). Fails if a non-finite value leaked into
    the saved JSON or a number were not rounded."""
    import numpy as np

    from pfntheory.report.rows import finite_or_none

    assert finite_or_none(1.23456789) == 1.23457
    assert finite_or_none(np.float32(0.5)) == 0.5
    for bad in (None, True, "x", float("nan"), float("inf"), 1j):
        assert finite_or_none(bad) is None, bad


def test_a_decided_row_shows_what_decided_it():
    """A row whose claim carries its verdict (budget doubling, a replay) shows the convergence that
    decided it, not the log-half test of the same curves (which can read "still improving" beside
    a verdict decided on plateaued runs); without a decision the log-half line stays."""
    from pfntheory.report.recorder import decided_convergence

    assert decided_convergence({"kind": "holds", "text": "all 2 runs plateaued"}, "x") == (
        "all 2 runs plateaued"
    )  # the gate's decision, rendered once
    assert decided_convergence("budget doubling: CI within 10%", "x") == (
        "decided by budget doubling: CI within 10%"
    )
    per_run = {
        "a": {"state": "plateaued", "criterion": "budget doubling (S -> 2S)"},
        "b": {"state": "still improving", "criterion": "budget doubling (S -> 2S)"},
    }
    text = decided_convergence(per_run, "x")
    assert text.startswith("1 of 2 runs plateaued (1 plateaued, 1 still improving)")
    assert "budget doubling" in text
    for nothing in (None, "", {}, {"a": 1}):
        assert decided_convergence(nothing, "log-half line") == "log-half line"


def test_findings_list_failed_claims_apart_from_errata(out):
    """Errata are only corrections of the paper; a claim that fails (or rests on runs that got
    worse) is listed apart, grouped by result and variant, each row with its cause in words, never
    under "Errata" (fails if a failed caption is counted as an erratum or its cause is dropped)."""
    (out / "results").mkdir(parents=True)
    rows = [
        dict(label="fig:walker", statement="a", verdict="worse with training", anchor="r-w1",
             variant="PFN vs EB GP", key="near_close", cause="prior mismatch (0.038 sd)"),
        dict(label="fig:walker", statement="b", verdict="worse with training", anchor="r-w2",
             variant="PFN vs EB GP", key="coverage"),
        dict(label="fig:sacramento", statement="c", verdict="does not hold", anchor="r-s",
             variant="PFN vs EB GP", key="pattern_corr", cause="far-query divergence"),
        dict(label="thm:L growth", statement="s", verdict="erratum", anchor="r-e",
             erratum="rho* = 1 - 2/(c+1)", variant="proof"),
    ]  # fmt: skip
    (out / "results" / "05_case_studies.json").write_text(
        json.dumps({"notebook": "05_case_studies", "scale": "quick", "rows": rows})
    )
    page = report.build_index(out).read_text()
    box = page[page.index('<section class="summary"') : page.index("</section>")]
    errata, failed = box.split("<b>Claims that fail")
    assert "<b>Errata</b> (1 rows" in errata and "walker" not in errata
    assert failed.count('class="verdict') == 2  # one group per result and variant
    assert failed.count("<li>") == 5  # 2 groups, each row of them listed in the group
    assert all(f'href="#{a}"' in failed for a in ("r-w1", "r-w2", "r-s"))
    assert ">a</a>: prior mismatch (0.038 sd)" in failed  # each row says why, in words
    assert ">c</a>: far-query divergence" in failed
