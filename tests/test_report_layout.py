"""The report as a reviewer reads it: one line per result with its details one click away, a
reason many rows share stated once per part, the paper's tables beside ours, every page with a
title, contents that count, a commit stamp, legible figures and typeset maths."""

from __future__ import annotations

import json
import re

import pytest

from pfntheory import report
from pfntheory.claims.gating import SHARED_REASONS
from pfntheory.pipelines import report_run as execute
from pfntheory.report import index, paper_tables, plots, tables
from pfntheory.report.mathtext import markdown_math

_WHY = "why: " + SHARED_REASONS["margin"]
_CRIT = "tv: the 90% confidence interval of its fitted fall lies within +-10% of the last value"


def _row(k: int, **kw) -> dict:
    return {
        "label": "fig:exp1",
        "statement": f"E[TV] falls with L, panel {k}",
        "verdict": "holds at budget",
        "variant": f"panel {k}",
        "observed": 0.1 * k,
        "bound": 0.01,
        "compare": "threshold",
        "tolerance": f"TV(L=2) - TV(L=32) > 3 SE (SE=0.00{k})",
        "reasons": ["margin"],
        "convergence": f"not plateaued: {k} of 5 runs; {_CRIT}",
        "convergence_clauses": [f"not plateaued: {k} of 5 runs", _CRIT],
        "anchor": f"r-{k}",
        "command": "pfntheory sweep fig_exp1 --scale cpu",
        "a_field_the_index_does_not_know": {"typed": "reason"},
        **kw,
    }


@pytest.fixture
def out(tmp_path, monkeypatch):
    d = tmp_path / "reports"
    monkeypatch.setenv(report.ENV_OUT, str(d))
    (d / "results").mkdir(parents=True)
    return d


def test_a_reason_many_rows_share_is_said_once_per_part(out):
    rows = [_row(k) for k in range(1, 6)]
    shared = index.shared_clauses(rows)
    assert shared == [_WHY, _CRIT]
    (out / "results" / "07_cpu_scale.json").write_text(json.dumps({"rows": rows}))
    page = index.build_index(out).read_text()
    assert page.count("one-sided normal tail") == 1 and page.count("fitted fall lies") == 1
    # a reason only two rows carry stays in those rows' own text
    two = [_row(k, reasons=["coverage"] if k < 3 else []) for k in range(1, 6)]
    assert not any("coverage" in c for c in index.shared_clauses(two))
    (out / "results" / "07_cpu_scale.json").write_text(json.dumps({"rows": two}))
    assert index.build_index(out).read_text().count("reasonabl") == 2
    (out / "results" / "07_cpu_scale.json").write_text(json.dumps({"rows": rows}))
    page = index.build_index(out).read_text()
    assert 'id="notes-07_cpu_scale"' in page and "(5 rows)" in page
    # each row keeps its own clause and points to the note
    assert page.count("SE=0.00") == 5 and page.count('href="#notes-07_cpu_scale"') == 10


def test_shared_clauses_are_the_carried_ones_and_no_text_is_cut():
    """A clause is what the recorder carries (``convergence_clauses``), never a cut of the text: a
    row without the field (an older results file) keeps its text as one clause, so a reason inside
    it is not said once; rows whose carried clauses disagree with a cut of their text share the
    carried ones."""
    bare = [{k: v for k, v in _row(k).items() if k != "convergence_clauses"} for k in range(1, 6)]
    assert index.shared_clauses(bare) == [_WHY]
    odd = [
        _row(k, convergence_clauses=[f"runs (a; {k})", f"{_CRIT}; said whole"]) for k in (1, 2, 3)
    ]
    assert index.shared_clauses(odd) == [_WHY, f"{_CRIT}; said whole"]


def test_every_result_is_one_line_with_its_details_a_click_away(out):
    rows = [_row(1, paper_value=0.318, label="supp-tab:lengthscale-crps"), _row(2)]
    (out / "results" / "07_cpu_scale.json").write_text(json.dumps({"rows": rows}))
    page = index.build_index(out).read_text()
    lines = re.findall(r'<details class="row" id="r-\d"><summary>(.*?)</summary>', page)
    assert len(lines) == 2
    for line in lines:  # verdict, result, claim, ours, paper: five one-line cells, nothing else
        assert line.count('<span class="one') == 5 and "tolerance" not in line
    assert "0.318 <small>Tab. 2</small>" in lines[0] and lines[1].endswith("—</span>")
    assert "+-" not in page  # one notation for plus-minus


def test_paper_tables_sit_under_their_part(out):
    cols, cells = (
        ["n'", "L", "CRPS paper", "CRPS ours"],
        [[256, 8, 0.38, 0.41], [256, 16, 0.378, None]],
    )
    shown = paper_tables.paper_table(
        "07_cpu_scale", "hier", "supp-tab:hierarchical-gp", "Table 3", cols, cells
    )
    assert shown.folded and "<details" in shown._repr_html_()
    (out / "results" / "07_cpu_scale.json").write_text(json.dumps({"rows": [_row(1)]}))
    page = index.build_index(out).read_text()
    part = page[page.index('id="part-07_cpu_scale"') :]
    assert (
        '<details class="ptab">' in part
        and "(Table 3): the paper's numbers beside ours, 2 rows" in part
    )
    assert '<td class="n">0.378</td><td class="n">—</td>' in part


def test_published_tables_beside_ours_cell_by_cell():
    pd = pytest.importorskip("pandas")
    from pfntheory.experiments import published

    frame = pd.DataFrame(
        [{"n'": 256, "model": "L=8", "CRPS": 0.4, "cov50": 0.6, "cov90": 0.9, "cov95": 0.95}]
    )
    cols, rows = paper_tables.published_beside(frame, published.published_rows("supp_tab_hier"))
    assert len(rows) == 9 and cols[:4] == ["n'", "L", "CRPS paper", "CRPS ours"]
    assert rows[0][:4] == [256, 8, 0.380, 0.4] and rows[1][3] is None


def test_contents_count_and_nest():
    toc = [
        (2, "a", "1. The construction"),
        (3, "b", "readout"),
        (3, "c", "depth"),
        (2, "d", "2. Trained"),
        (2, "e", "Verdicts"),
    ]
    html_text = execute._toc_html(toc)
    assert html_text == (
        '<ol><li><a href="#a">The construction</a><ol><li><a href="#b">readout</a></li>'
        '<li><a href="#c">depth</a></li></ol></li><li><a href="#d">Trained</a></li>'
        '<li><a href="#e">Verdicts</a></li></ol>'
    )


def test_every_page_has_a_title_a_stamp_and_no_stray_output(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbconvert")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title\n\n## 1. First\n\n### sub")]
    page = execute.export_html(nb, tmp_path / "06_errata.html", ok=True).read_text()
    assert "<title>Errata and ambiguities — pfntheory verification report</title>" in page
    assert page.count('class="stamp"') == 1 and "commit <code>" in page
    assert "1. 1." not in page


def test_figures_read_at_1024_px():
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(19.5, 4))
    ax.plot([1, 2], [1, 2], label="a")
    ax.set_title(r"$E[\mathrm{TV}]$ against $\sigma^2$", fontsize=8)
    ax.legend(fontsize=6)
    plots.legible(fig)
    fig.canvas.draw()
    shrink = plots.PAGE_WIDTH_PX / (19.5 * 100)
    sizes = [t.get_fontsize() for t in fig.findobj(mpl.text.Text) if t.get_text()]
    assert min(sizes) * 100 / 72 * shrink >= plots.MIN_TEXT_PX - 1e-9
    assert plots.describe_figure(fig) == "E[TV] against sigma^2"
    plt.close(fig)


def test_missing_values_and_long_tables():
    pd = pytest.importorskip("pandas")
    assert tables.cell(pd.NA) == "—" and tables.cell(pd.NaT) == "—"
    long = tables.table([{"a": i} for i in range(tables.FOLD_ROWS + 1)], caption="cells")
    assert long.folded.startswith(f"cells: the table, {tables.FOLD_ROWS + 1} rows")
    assert not long.caption and not tables.table([{"a": 1}]).folded
    rows = [["x"]] * (tables.FOLD_ROWS + 1)  # a Table built directly (Recorder.table) folds too
    assert tables.Table(["c"], rows)._repr_html_().startswith('<details class="table">')


def test_formulas_with_identifiers_are_maths():
    md = markdown_math(
        "(`TV(p_n, q_theta) <~ exp(-(1-rho)L) + delta_MLP + eps_tail`), `mse_y.json`"
    )
    assert '<span class="math">TV(p<sub>n</sub>, q<sub>θ</sub>) ≲' in md
    assert "δ<sub>MLP</sub>" in md and "`mse_y.json`" in md


def test_late_outputs_are_waited_for_not_dropped(tmp_path, monkeypatch):
    """nbclient drops a cell's outputs that arrive more than ``iopub_timeout`` (4 s by default)
    after its reply, with a warning only: on a loaded machine a page then silently lost the cards
    of a cell. The runner waits as long as for the cell and fails instead."""
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("jupytext")
    seen = {}

    class Client:
        def __init__(self, nb, **kw):
            seen.update(kw)

        def execute(self):
            raise RuntimeError("stop here")

    monkeypatch.setattr(nbclient, "NotebookClient", Client)
    (tmp_path / "nb.py").write_text("# %%\n1\n")
    run = execute.execute_notebook(
        "nb", tmp_path / "out", timeout=77, notebooks_dir=tmp_path, write_html=False
    )
    assert not run.ok and seen["iopub_timeout"] == 77 and seen["raise_on_iopub_timeout"] is True


@pytest.mark.parametrize(
    "errors, ok, starts",
    [
        # the kernel lost its port to another process twice, then started: the page is built
        (["died", "died"], True, 3),
        # it never started in KERNEL_START_TRIES tries: the notebook fails, saying why
        (["died"] * 3, False, 3),
        # a notebook's own error is never retried
        (["cell"], False, 1),
        # a kernel that dies after running a cell is the notebook's failure, not a start race
        (["died-after-a-cell"], False, 1),
    ],
)
def test_a_kernel_that_never_started_is_started_again(tmp_path, monkeypatch, errors, ok, starts):
    """Under ``pytest -n`` two notebooks start kernels at once; jupyter_client picks free ports
    and the kernel binds them later, so one kernel can lose a port to the other ("Address
    already in use": it dies before replying to kernel_info; seen on the 2-worker suite). The
    runner starts such a kernel again, at most KERNEL_START_TRIES times, and never a notebook
    that failed on its own or after a cell ran (fails if a start race fails the page, or a real
    failure is retried)."""
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("jupytext")
    assert execute.KERNEL_START_TRIES == 3
    todo = list(errors)
    count = {"starts": 0}

    class Client:
        def __init__(self, nb, **kw):
            self.nb = nb

        def execute(self):
            count["starts"] += 1
            if not todo:
                return
            what = todo.pop(0)
            if what == "cell":
                raise nbclient.exceptions.CellExecutionError("boom", "ValueError", "boom")
            if what == "died-after-a-cell":
                self.nb.cells[0]["execution_count"] = 1
            raise RuntimeError("Kernel died before replying to kernel_info")

    monkeypatch.setattr(nbclient, "NotebookClient", Client)
    (tmp_path / "nb.py").write_text("# %%\n1\n")
    run = execute.execute_notebook(
        "nb", tmp_path / "out", timeout=77, notebooks_dir=tmp_path, write_html=False
    )
    assert run.ok is ok and count["starts"] == starts
    if not ok:
        assert run.error


@pytest.mark.filterwarnings("ignore:constrained_layout not applied:UserWarning")
def test_a_figure_whose_panels_are_squeezed_or_whose_maths_is_raw_is_refused(tmp_path, monkeypatch):
    """Issue 49: four per-axes ``ncol=3`` legends squeezed each panel of 07_exp1_learning_curves to
    about 45 px; the layout check names such an axes, colliding tick labels and ``sigma^2`` typed
    as text, and save_figure refuses the figure; one shared legend passes. save_figure measures
    the layout it draws for the file (one drawing: it checks that layout before writing), so it
    is handed each faulty figure before anything else has drawn it, and must still refuse it."""
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv(report.ENV_OUT, str(tmp_path))
    with mpl.rc_context({"figure.constrained_layout.use": True}):
        fig, axs = plt.subplots(1, 4, figsize=(17, 4.4))
        for ax in axs:
            for k in range(9):
                ax.plot([1, 10, 100], [k + 1, 2, 3], label=f"L={2**k} (n'=200)")
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3)
        axs[0].set_title("E[TV] against sigma^2")
        with pytest.raises(plots.FigureLayoutError, match="figure squeezed: .*width"):
            plots.save_figure(fig, "squeezed")
        assert not (tmp_path / "figures" / "squeezed.png").exists()
        plt.close(fig)
        fig, axs = plt.subplots(1, 4, figsize=(17, 4.4))
        for ax in axs:
            for k in range(9):
                ax.plot([1, 10, 100], [k + 1, 2, 3], label=f"L={2**k} (n'=200)")
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3)
        axs[0].set_title("E[TV] against sigma^2")
        problems = plots.layout_problems(fig)
        assert sum("of the figure's width" in p for p in problems) == 4, problems
        assert any("maths as plain text" in p for p in problems), problems
        plt.close(fig)

        fig, axs = plt.subplots(1, 4, figsize=(17, 4.4))
        for ax in axs:
            for k in range(9):
                ax.plot([1, 10, 100], [k + 1, 2, 3], label=f"L={2**k}")
        axs[0].set_title(r"E[TV] against $\sigma^2$, $\sqrt{d}$, $\pm$ 2 SE")
        fig.legend(*axs[0].get_legend_handles_labels(), loc="outside lower center", ncol=9)
        assert plots.layout_problems(fig) == []
        assert plots.save_figure(fig, "shared").is_file()
        plt.close(fig)

        fig, ax = plt.subplots(figsize=(2, 2), layout="none")  # ten long labels on 2 inches collide
        ax.set_xticks(range(10), [f"label {k}" for k in range(10)])
        with pytest.raises(plots.FigureLayoutError, match="tick labels .* overlap"):
            plots.save_figure(fig, "collide")
        assert not (tmp_path / "figures" / "collide.png").exists()
        assert any("tick labels" in p and "overlap" in p for p in plots.layout_problems(fig))
        plt.close(fig)


def test_an_extensions_rows_that_hold_fold_on_the_index():
    """A part beyond the paper (its title says so) keeps every row that does not hold in view and
    folds the ones that hold under their count; a part of the paper folds nothing (fails if a
    failing extension row is hidden, or a paper row folded)."""
    from pfntheory.report.spec import NotebookSpec

    rows = [
        {"label": "thm:TFdoPPD", "statement": f"claim {k}", "verdict": v, "anchor": f"a{k}"}
        for k, v in enumerate(["holds", "undecided", "holds at budget", "does not hold"])
    ]
    ext = NotebookSpec("98_x", "Beyond the paper: x", ())
    paper = NotebookSpec("97_y", "A paper part", ())
    assert ext.beyond_paper and not paper.beyond_paper
    html_ext = "".join(index._part(ext, {"rows": rows}, {}, True, []))
    visible, folded = html_ext.split('<details class="ext">')
    assert "claim 1" in visible and "claim 3" in visible
    assert "claim 0" in folded and "claim 2" in folded and "2 more rows" in folded
    html_paper = "".join(index._part(paper, {"rows": rows}, {}, True, []))
    assert 'class="ext"' not in html_paper and all(f"claim {k}" in html_paper for k in range(4))
