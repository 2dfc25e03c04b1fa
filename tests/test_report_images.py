"""Every figure of a notebook appears on its page, and every page renders offline.

The committed pages (``reports/<notebook>.html``) are checked against their jupytext sources: a page
must hold at least one ``<img>`` per code cell that shows a figure (``plt.show()`` or
``report.show_png``). This fails when figures are not emitted into the page (e.g. the kernel running
a non-inline backend, where ``plt.show()`` prints nothing). Pages must fetch nothing from the
network: no ``<script src>``, no external style sheet. One small notebook is also executed, to show
that the runner itself puts a ``plt.show()`` figure on the page.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from pfntheory import report

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
        rec = report.Recorder("zz_fig")
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        plt.show()
        rec.add(ClaimResult("thm:lambda1", "a line", True, 1.0, 2.0))
        """)
    )
    out = tmp_path / "rep"
    assert report.run_report(out_dir=out, notebooks_dir=nbdir, timeout=120, progress=False) == 0
    page = (out / "zz_fig.html").read_text()
    assert len(re.findall(r"<img\b", page)) == 1
    assert '<nav class="toc">' in page and 'href="#sec-2"' in page  # table of contents
    assert "λ<sub>1</sub> ≤ σ<sup>2</sup>" in page  # maths typeset offline
    assert '<details class="code">' in page  # code folded
    first = page
    assert report.run_report(out_dir=out, notebooks_dir=nbdir, timeout=120, progress=False) == 0
    assert (out / "zz_fig.html").read_text() == first  # deterministic rebuild
