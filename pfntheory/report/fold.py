"""Folding a stretch of a page under one ``<details>`` (issue 49: page 07 at most 15 screens with
nothing a reviewer needs removed). Per-run tables, logs and long derivations stay on the page,
collapsed behind a one-line summary; the verdict cards stay outside every fold.

Two ways to mark a fold, both written as empty ``<div>`` markers that
:func:`apply_folds` (called by the page export) turns into ``<details class="fold">`` ...
``</details>``:

- inside one code cell, around some of its outputs::

      with report.fold("fig_exp2_1: per-run table and E[TV] against n'"):
          display(report.table(frame))
          plt.show()

- across whole cells: a Markdown cell holding only :func:`fold_start_md` (its HTML) opens the
  fold, one holding only :data:`FOLD_END` closes it.

A marker is replaced by its whole container (the cell, or the output), so a fold always spans whole
siblings and the page stays well-formed; a fold that would cross a cell's boundary, or a marker
cell with other text, is an error naming it, and so is a fold around a verdict card (the index
links to every card).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import contextmanager

from pfntheory.base._checks import ArgumentTypeError

__all__ = ["fold", "fold_start_md", "FOLD_END", "apply_folds", "FOLD_CSS"]

_START = '<div class="pfn-fold" data-summary="{}"></div>'
FOLD_END = '<div class="pfn-fold-end"></div>'
_MARKER = re.compile(r'<div class="pfn-fold(?P<end>-end)?"(?: data-summary="(?P<s>[^"]*)")?></div>')
_CELL = '<div class="jp-Cell '
_OUTPUT = '<div class="jp-OutputArea-child'
_DIV = re.compile(r"<div\b|</div>")
_CARD = 'class="pfn-card'  # a verdict card (pfntheory.report.html.row_card)

FOLD_CSS = (
    "details.fold{margin:6px 0 10px;border-left:3px solid #d0d7de;padding-left:8px}"
    "details.fold>summary{cursor:pointer;color:#0969da;font-size:14px;margin:2px 0;"
    "font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif}"
    "details.fold[open]>summary{margin-bottom:6px}"
)


def fold_start_md(summary: str) -> str:
    """The HTML that opens a fold with the one-line ``summary`` (a Markdown cell's whole text)."""
    if not isinstance(summary, str):
        raise ArgumentTypeError(f"summary must be a str, got {type(summary).__name__}")
    if not summary.strip():
        raise ValueError(f"summary must be a non-empty string, got {summary!r}")
    return _START.format(html.escape(summary.strip(), quote=True))


@contextmanager
def fold(summary: str) -> Iterator[None]:
    """Fold the outputs displayed inside the ``with`` block under ``summary``."""
    from IPython.display import HTML, display

    display(HTML(fold_start_md(summary)))
    try:
        yield
    finally:
        display(HTML(FOLD_END))


def _container(body: str, pos: int) -> tuple[int, int]:
    """The span of the cell or output that holds the marker at ``pos``: the nearest enclosing
    output when the marker is an output, else its cell."""
    cell = body.rfind(_CELL, 0, pos)
    out = body.rfind(_OUTPUT, 0, pos)
    start = out if out > cell else cell
    if start < 0:
        raise ValueError("apply_folds: a fold marker outside any notebook cell")
    depth = 0
    for m in _DIV.finditer(body, start):
        depth += 1 if m.group(0) == "<div" else -1
        if depth == 0:
            return start, m.end()
    raise ValueError("apply_folds: unbalanced <div> around a fold marker")


def _balanced(fragment: str) -> bool:
    depth = 0
    for m in _DIV.finditer(fragment):
        depth += 1 if m.group(0) == "<div" else -1
        if depth < 0:
            return False
    return depth == 0


def apply_folds(body: str) -> str:
    """Replace every fold marker pair in the exported page ``body`` by ``<details class="fold">``
    with its summary, and ``</details>``; folds do not nest."""
    if not isinstance(body, str):
        raise ArgumentTypeError(f"body must be a str (an HTML page), got {type(body).__name__}")
    pieces: list[str] = []
    at = 0
    open_at: int | None = None  # index in pieces of the opening tag, while a fold is open
    summary = ""
    for m in _MARKER.finditer(body):
        start, end = _container(body, m.start())
        if start < at:
            raise ValueError("apply_folds: two fold markers in one cell or output")
        inner = re.sub(r"<[^>]+>|¶", "", body[start:end]).strip()
        if inner:
            raise ValueError(
                f"apply_folds: a fold marker shares its cell with text: {inner[:60]!r}"
            )
        pieces.append(body[at:start])
        if m.group("end"):
            if open_at is None:
                raise ValueError("apply_folds: a fold end with no fold open")
            inner_html = "".join(pieces[open_at + 1 :])
            if not _balanced(inner_html):
                raise ValueError(f"apply_folds: the fold {summary!r} crosses a cell's boundary")
            if _CARD in inner_html:  # the index links to every card: none may be hidden
                raise ValueError(f"apply_folds: the fold {summary!r} holds a verdict card")
            pieces.append("</details>")
            open_at = None
        else:
            if open_at is not None:
                raise ValueError(f"apply_folds: the fold {summary!r} is not closed before the next")
            summary = " ".join(html.unescape(m.group("s") or "").split())
            open_at = len(pieces)
            pieces.append(f'<details class="fold"><summary>{html.escape(summary)}</summary>')
        at = end
    if open_at is not None:
        raise ValueError(f"apply_folds: the fold {summary!r} is never closed")
    pieces.append(body[at:])
    return "".join(pieces)
