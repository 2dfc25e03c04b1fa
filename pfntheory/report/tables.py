"""Tables as a reader sees them: labelled columns, rounded numbers, "—" for a missing value, no
index column.

A notebook cell that ends with :func:`table` (or :meth:`Recorder.table
<pfntheory.report.Recorder.table>`) shows a plain HTML table instead of pandas' default frame
(which prints ``NaN``, ``None``, ``3.533000e-02`` and a row index). Numbers are printed by
:func:`~pfntheory.report.html.fmt` (4 significant digits) unless a column asks for fixed decimals.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .html import fmt
from .mathtext import math_html

__all__ = ["cell", "Table", "table", "Note", "note"]


def _is_number(v) -> bool:
    return (
        not isinstance(v, bool)
        and (isinstance(v, (int, float)) or type(v).__module__ == "numpy")
        and getattr(v, "ndim", 0) == 0
    )


#: A table longer than this is folded by :func:`table` unless it says how (``folded=``).
FOLD_ROWS = 8
#: pandas' missing values (``pd.NA``, ``pd.NaT``): printed "—", never "<NA>".
_MISSING = ("NAType", "NaTType")


def cell(v, digits: int | None = None) -> str:
    """One cell's text: an integer as it is, ``digits`` fixed decimals (or :func:`fmt`) for any
    other number, "yes"/"no" for a bool, "—" for None / NaN / an empty string, items joined by ", "
    for a list."""
    if v is None or (isinstance(v, str) and not v.strip()) or type(v).__name__ in _MISSING:
        return "—"
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return "yes" if v else "no"
    if _is_number(v):
        if "int" in type(v).__name__:  # a count or a size: never decimals
            return str(int(v))
        f = float(v)
        if math.isnan(f):
            return "—"
        if not math.isfinite(f):
            return "∞" if f > 0 else "−∞"
        return f"{f:.{digits}f}" if digits is not None else fmt(f)
    if isinstance(v, (list, tuple)) or type(v).__name__ == "ndarray":
        return ", ".join(cell(x, digits) for x in list(v))
    return str(v)


def _pm(text: str) -> str:
    """One notation for plus-minus: "±" (the claims' ASCII "+-" included)."""
    return text.replace("+-", "±")


class Table:
    """A table that renders as plain HTML in a notebook (``_repr_html_``).

    Attributes
    ----------
    columns : list of str
        Column headings.
    rows : list of list of str
        The cells, already formatted.
    caption : str
        A line above the table, in the report's ASCII maths (typeset by
        :func:`~pfntheory.report.mathtext.math_html`, like the column headings).
    numeric : list of bool
        Per column: right-aligned (all its non-missing cells were numbers).
    folded : str
        If given, the table is folded under a line with this text (a long table for reference).
    """

    def __init__(self, columns, rows, caption: str = "", numeric=None, folded: str = ""):
        self.columns = [str(c) for c in columns]
        self.rows = [list(r) for r in rows]
        self.caption = caption
        self.folded = folded
        self.numeric = list(numeric) if numeric is not None else [False] * len(self.columns)

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:  # text/plain beside the HTML: short, never a dump
        return f"<Table: {len(self.rows)} rows x {len(self.columns)} columns>"

    def _repr_html_(self) -> str:
        e = html.escape
        head = "".join(f"<th>{math_html(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>"
            + "".join(
                f'<td class="n">{e(v)}</td>' if num else f"<td>{_pm(e(v))}</td>"
                for v, num in zip(r, self.numeric, strict=True)
            )
            + "</tr>"
            for r in self.rows
        )
        cap = f"<caption>{math_html(self.caption)}</caption>" if self.caption else ""
        markup = (
            f'<table class="pfn-table">{cap}<thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>"
        )
        folded = self.folded
        if not folded and len(self.rows) > FOLD_ROWS:  # e.g. a notebook's summary of its rows
            folded = f"the table, {len(self.rows)} rows (click to show)"
        if folded:
            summary = f"<summary>{math_html(folded)}</summary>"
            return f'<details class="table">{summary}{markup}</details>'
        return markup


def _records(data) -> tuple[list[str], list[list[Any]]]:
    """Column names and row values of a DataFrame, a list of dicts or a dict of columns."""
    cols: list[str]
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # a pandas DataFrame
        cols = [str(c) for c in data.columns]
        return cols, [list(r) for r in data.itertuples(index=False, name=None)]
    if isinstance(data, Mapping):  # columns
        cols = [str(c) for c in data]
        values = [list(v) for v in data.values()]
        return cols, [list(r) for r in zip(*values, strict=True)]
    records = list(data)
    cols = []
    for rec in records:
        cols += [str(k) for k in rec if str(k) not in cols]
    return cols, [[rec.get(c) for c in cols] for rec in records]


def table(
    data: Any,
    columns: Mapping[str, str] | Sequence[str] | None = None,
    *,
    digits: int | Mapping[str, int] | None = None,
    caption: str = "",
    folded: str = "",
) -> Table:
    """A :class:`Table` of ``data`` with labelled columns and rounded numbers.

    Parameters
    ----------
    data : DataFrame, list of dict, or dict of columns
    columns : mapping or sequence of str, optional
        The columns to show, in order: a mapping renames them (``{"n_prime": "n'"}``), a sequence
        keeps their names. Default: every column.
    digits : int or mapping, optional
        Fixed decimals for every number (int) or per source column (mapping); other numbers get 4
        significant digits.
    caption : str
        A line above the table, in ASCII maths (``sigma^2``, ``lambda_1``), typeset like the
        headings.
    folded : str
        Fold the table under a line with this text (for a long table kept for reference); a table
        of more than :data:`FOLD_ROWS` rows is folded in any case.
    """
    names, rows = _records(data)
    if columns is None:
        pick: Iterable[tuple[str, str]] = [(c, c) for c in names]
    elif isinstance(columns, Mapping):
        pick = list(columns.items())
    else:
        pick = [(c, c) for c in columns]
    pick = list(pick)
    missing = [src for src, _ in pick if src not in names]
    if missing:
        raise ValueError(f"columns: {missing} not in the data (has {names})")
    idx = [names.index(src) for src, _ in pick]

    def places(src: str) -> int | None:
        return digits.get(src) if isinstance(digits, Mapping) else digits

    out = [[cell(r[i], places(src)) for i, (src, _) in zip(idx, pick, strict=True)] for r in rows]
    numeric = [
        all(_is_number(r[i]) or r[i] is None for r in rows) and any(_is_number(r[i]) for r in rows)
        for i in idx
    ]
    if not folded and len(out) > FOLD_ROWS:  # a per-cell table: one click away, not pages long
        folded = f"{caption + ': ' if caption else ''}the table, {len(out)} rows (click to show)"
        caption = ""
    return Table([head for _, head in pick], out, caption=caption, numeric=numeric, folded=folded)


class Note:
    """One line of prose in a page, its ASCII maths typeset (what a notebook shows instead of
    printing program output)."""

    def __init__(self, text: str):
        self.text = str(text)

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return f'<p class="pfn-note">{math_html(self.text)}</p>'


def note(text: str) -> Note:
    """A line of prose for a notebook's output (``sigma^2``, ``lambda_1`` typeset), e.g. the sizes
    a cell ran at: ``report.note(f"sizes at the {scale} scale: n = {n}")``."""
    return Note(text)
