"""Folds (issue 49): a stretch of a page collapsed under one ``<details>``, spanning whole cells or
whole outputs of one cell, never crossing a cell's boundary."""

from __future__ import annotations

import pytest

from pfntheory.report.fold import FOLD_END, apply_folds, fold_start_md


def _md(k: int, inner: str) -> str:
    return (
        f'<div class="jp-Cell jp-MarkdownCell jp-Notebook-cell" id="cell-id=c{k}">'
        f'<div class="jp-RenderedMarkdown">{inner}</div></div>\n'
    )


def _code(k: int, *outputs: str) -> str:
    outs = "".join(
        f'<div class="jp-OutputArea-child"><div class="jp-OutputArea-output">{o}</div></div>'
        for o in outputs
    )
    return (
        f'<div class="jp-Cell jp-CodeCell jp-Notebook-cell" id="cell-id=c{k}">'
        f'<div class="jp-OutputArea">{outs}</div></div>\n'
    )


def test_folds_across_cells_and_around_outputs():
    body = (
        "<main>"
        + _md(0, "<h2>Section</h2>")
        + _md(1, fold_start_md('runs "a" & b'))
        + _code(2, "<table>t</table>", "<img>")
        + _md(3, FOLD_END)
        + _code(4, "<p>card</p>", fold_start_md("per-run table"), "<table>u</table>", FOLD_END)
        + "</main>"
    )
    page = apply_folds(body)
    assert page.count('<details class="fold">') == 2 and page.count("</details>") == 2
    assert "<summary>runs &quot;a&quot; &amp; b</summary>" in page
    assert "pfn-fold" not in page
    # each fold holds whole siblings: the page's <div>s still balance, and the card stays outside
    assert page.count("<div") == page.count("</div>")
    assert page.index("<p>card</p>") < page.index("<summary>per-run table</summary>")
    assert page.index("<table>u</table>") < page.rindex("</details>")


def test_a_fold_that_cannot_close_where_it_opened_is_an_error():
    crossing = _code(0, fold_start_md("x"), "<p>a</p>") + _md(1, FOLD_END)
    with pytest.raises(ValueError, match="'x' crosses a cell's boundary"):
        apply_folds(crossing)
    with pytest.raises(ValueError, match="never closed"):
        apply_folds(_md(0, fold_start_md("y")))
    with pytest.raises(ValueError, match="end with no fold open"):
        apply_folds(_md(0, FOLD_END))
    with pytest.raises(ValueError, match="shares its cell with text"):
        apply_folds(_md(0, "<p>words</p>" + fold_start_md("z")) + _md(1, FOLD_END))
    card = '<details id="r-1" class="pfn-card pfn-ok"><summary>holds</summary></details>'
    with pytest.raises(ValueError, match="'w' holds a verdict card"):
        apply_folds(_code(0, fold_start_md("w"), card, FOLD_END))
    with pytest.raises(ValueError, match="summary must be a non-empty string"):
        fold_start_md("  ")
