"""Every figure of a notebook appears on its page, and every page renders offline.

The committed pages (``reports/<notebook>.html``) are checked against their jupytext sources: a page
must hold at least one ``<img>`` per code cell that shows a figure (``plt.show()`` or
``report.show_png``). This fails when figures are not emitted into the page (e.g. the kernel running
a non-inline backend, where ``plt.show()`` prints nothing). Pages must fetch nothing from the
network: no ``<script src>``, no external style sheet. One small notebook is also executed, to show
that the runner itself puts a ``plt.show()`` figure on the page.
"""

from __future__ import annotations

import base64
import io
import re
import textwrap

import numpy as np
import pytest

from pfntheory import report
from pfntheory.pipelines import report_run
from pfntheory.report.spec import reading_order

FIGURE_CALL = re.compile(r"^\s*(plt\.show\(\)|report\.show_png\()", re.M)


def _figure_cells(source: str) -> int:
    cells = re.split(r"^# %%.*$", source, flags=re.M)
    return sum(1 for c in cells if FIGURE_CALL.search(c))


@pytest.mark.parametrize("name", [s.name for s in report.NOTEBOOKS])
def test_committed_page_holds_every_figure(name):
    src = (report.NOTEBOOKS_DIR / f"{name}.py").read_text()
    page = report.DEFAULT_OUT / f"{name}.html"
    assert page.is_file(), f"{page} missing: run `pfntheory report`"
    html = page.read_text()
    n_img = len(re.findall(r"<img\b", html))
    assert n_img >= _figure_cells(src), (
        f"{name}: {n_img} images for {_figure_cells(src)} figure cells"
    )


@pytest.mark.parametrize("name", [s.name for s in report.NOTEBOOKS])
def test_committed_page_images_have_alt_text(name):
    """Every image of a page has alt text of its own (a figure's titles and axes, or the section
    it sits in), never nbconvert's placeholder."""
    html = (report.DEFAULT_OUT / f"{name}.html").read_text()
    imgs = re.findall(r"<img\b[^>]*>", html)
    alts = [re.search(r'\balt="([^"]*)"', i) for i in imgs]
    assert all(a and a.group(1).strip() for a in alts), f"{name}: an image without alt text"
    assert "No description has been provided" not in html


@pytest.mark.parametrize("name", [s.name for s in report.NOTEBOOKS])
def test_committed_page_links_its_neighbours(name):
    """Each page links to the index (and its part of it) and to the previous and next page in
    reading order (the appendices after every main page), at the top and at the bottom."""
    html = (report.DEFAULT_OUT / f"{name}.html").read_text()
    names = [s.name for s in reading_order()]
    i = names.index(name)
    assert html.count('<nav class="pager">') == 2
    assert f'href="index.html#part-{name}"' in html
    if i > 0:
        assert html.count(f'href="{names[i - 1]}.html" rel="prev"') == 2
    if i + 1 < len(names):
        assert html.count(f'href="{names[i + 1]}.html" rel="next"') == 2
    else:
        assert 'rel="next"' not in html


def test_appendices_come_after_every_main_page():
    """Page 04 (the quick-scale smoke runs) is an appendix: read after every main page, and listed
    in the index under "Appendix", after every main part and out of the contents line."""
    order = reading_order()
    kinds = [s.appendix for s in order]
    assert kinds == sorted(kinds) and report.find_spec("04").appendix
    page = (report.DEFAULT_OUT / "index.html").read_text()
    parts = [page.index(f'id="part-{s.name}"') for s in order]
    assert parts == sorted(parts) and page.index('id="appendix"') < parts[kinds.index(True)]
    contents = page[page.index("Parts: ") :].split("</p>")[0]
    assert 'href="#part-04_trained_experiments"' not in contents
    assert 'href="#part-05_case_studies"' in contents


#: Pages whose every table and output this task formats (page 07 is built by report.cpu).
FORMATTED = [s.name for s in report.NOTEBOOKS if s.name != "07_cpu_scale"]


@pytest.mark.parametrize("name", FORMATTED)
def test_committed_page_has_no_raw_output(name):
    """No ClaimResult repr, no default pandas frame, no NaN / None / unrounded cell (pandas'
    ``3.533000e-02``, or seven and more decimals); 3 significant digits in scientific notation,
    as the report rounds tiny numbers (``1.08e-05``), are fine."""
    html = (report.DEFAULT_OUT / f"{name}.html").read_text()
    assert "ClaimResult(" not in html
    assert 'class="dataframe' not in html
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    unrounded = re.compile(r"\d\.\d{4,}e[-+]\d|\d\.\d{7,}")
    bad = [c for c in cells if c.strip() in ("NaN", "nan", "None") or unrounded.search(c)]
    assert not bad, f"{name}: raw cells {bad[:5]}"


@pytest.mark.parametrize("name", ["index"] + [s.name for s in report.NOTEBOOKS])
def test_committed_page_is_offline(name):
    html = (report.DEFAULT_OUT / f"{name}.html").read_text()
    assert not re.search(r"<script[^>]+src=", html), f"{name} loads a script"
    assert not re.search(r"<link[^>]+href=\"https?:", html), f"{name} loads a style sheet"
    assert "mathjax" not in html.lower(), f"{name} needs MathJax"
    # kernel warnings, if any, are folded away under "log (stderr)", not in the reader's way
    unfolded = re.sub(r'<details class="log">.*?</details>', "", html, flags=re.S)
    assert "TqdmWarning" not in unfolded and "without encryption" not in unfolded


def test_runner_puts_figures_on_the_page(tmp_path):
    nbdir = tmp_path / "nbs"
    nbdir.mkdir()
    (nbdir / "zz_fig.py").write_text(
        textwrap.dedent("""\
        # %% [markdown]
        # # A figure
        # ## The section with `lambda_1 <= sigma^2`

        # %%
        import matplotlib.pyplot as plt
        from pfntheory import report
        from pfntheory.claims import ClaimResult
        report.setup_plots()
        rec = report.Recorder("zz_fig")
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        ax.set(title="A line", xlabel="x", ylabel="y")
        plt.show()
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 0])
        plt.show()
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        ax.set(title="Saved", xlabel="x", ylabel="y")
        report.save_figure(fig, "zz_saved")
        plt.show()
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 1])
        ax.set(title="Changed after saving", xlabel="x", ylabel="y")
        report.save_figure(fig, "zz_changed")
        ax.set_title("Changed after saving: a new title")
        plt.show()
        rec.add(ClaimResult("thm:lambda1", "a line", True, 1.0, 2.0))
        """)
    )
    out = tmp_path / "rep"
    assert report_run.run_report(out_dir=out, notebooks_dir=nbdir, timeout=120, progress=False) == 0
    page = (out / "zz_fig.html").read_text()
    assert len(re.findall(r"<img\b", page)) == 4
    # a figure shown as save_figure left it is shown as the file it saved (drawn once); one
    # changed after saving is drawn again, with the change
    shown = [base64.b64decode(b) for b in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]
    assert len(shown) == 4
    assert shown[2] == (out / "figures" / "zz_saved.png").read_bytes()
    changed = (out / "figures" / "zz_changed.png").read_bytes()
    assert not np.array_equal(_pixels(shown[3]), _pixels(changed))  # the new title is drawn
    assert 'alt="Saved: y against x"' in page
    assert 'alt="Changed after saving: a new title: y against x"' in page
    assert 'alt="A line: y against x"' in page  # the figure describes itself
    assert 'alt="Figure in the section' in page  # a figure that does not: its section
    assert "ClaimResult(" not in page  # a cell ending in rec.add shows the card only
    assert '<nav class="toc">' in page and 'href="#sec-2"' in page  # table of contents
    assert "λ<sub>1</sub> ≤ σ<sup>2</sup>" in page  # maths typeset offline
    assert '<details class="code">' in page  # code folded
    first = page
    assert report_run.run_report(out_dir=out, notebooks_dir=nbdir, timeout=120, progress=False) == 0
    assert (out / "zz_fig.html").read_text() == first  # deterministic rebuild


def _pixels(png: bytes):
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)))


def test_a_saved_figure_is_the_inline_backends_render(tmp_path, monkeypatch):
    """What the page shows for a figure saved and unchanged (the saved PNG) has the pixels the
    inline backend's own render would give (IPython's ``print_figure`` at the figure's dpi, tight
    bounding box: what it did before it showed the saved bytes); fails if save_figure saved at
    another resolution, crop or colour than the page shows."""
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    pytest.importorskip("PIL")
    import matplotlib.pyplot as plt
    from IPython.core.pylabtools import print_figure

    monkeypatch.setenv(report.ENV_OUT, str(tmp_path))
    with mpl.rc_context():
        report.setup_plots()
        fig, axs = plt.subplots(1, 2, figsize=(8, 3.5), sharey=True, squeeze=False)
        for i, ax in enumerate(axs.flat):
            ax.errorbar([64, 128, 256, 512], [0.3, 0.2, 0.15, 0.1 + i / 100], yerr=0.01, fmt="o-")
            report.log_axis(ax, "x")
            ax.set(title=f"n_max = {64 * 2**i}", ylabel="E[TV] (±2 SE)")
        axs[0, 0].plot([64, 512], [0.3, 0.1], label="L=2")
        axs[0, 0].legend()
        fig.suptitle("RBF, d=4, TF^pr learnable")
        saved = report.save_figure(fig, "zz_pixels").read_bytes()
        inline = print_figure(fig, "png", bbox_inches="tight")
        plt.close(fig)
    assert np.array_equal(_pixels(saved), _pixels(inline))
