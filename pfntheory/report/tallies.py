"""The counts that README.md and docs/findings.md state, generated from ``reports/results/*.json``.

A count of rows by verdict kind is never typed by hand: the documents carry it between two
markers, ::

    <!-- generated: SPEC -->...<!-- /generated -->

and ``pfntheory tallies --write`` (run by ``pfntheory report`` whenever it
writes the committed ``reports/``) replaces what lies between them with the text :func:`passage`
generates for ``SPEC`` from the results. ``--check`` only says which passages are stale (exit 1);
``tests/test_generated_counts.py`` fails on a stale passage, and on a verdict tally typed outside
the markers.

The specs (labels are the paper's ``\\label{}`` names, several separated by ", "):

- ``counts``: every row of the index, by kind ("150 rows: 72 *holds*, ...");
- ``undecided``: the *undecided* and *undecided (underpowered)* rows, by page;
- ``pending``: the rows still waiting for their runs, by label and variant;
- ``rows LABEL[, LABEL...]``: the rows of those results, by kind;
- ``trained LABEL[, LABEL...]``: the rows of those results that read trained runs, by kind, with
  the runs' plateau tally and steps and how often the check itself holds, verdict aside.

The citation stamp (:mod:`.citation`) is the other generated fact the report states;
:func:`page_commits` reads the one each committed page carries, so that a test (and ``--check``)
can say whether every page was built from the same commit.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from ..claims.gating import plateau_tally
from ..claims.verdicts import UNDECIDED_KINDS, VerdictKind
from .guard import result_rows
from .rows import PENDING, VERDICTS
from .spec import DEFAULT_OUT, NOTEBOOKS, ROOT
from .summary import load_results

__all__ = [
    "DOCUMENTS",
    "MARKER",
    "load_rows",
    "tally_text",
    "passage",
    "render",
    "stale",
    "write",
    "page_commits",
]

#: The documents whose generated passages :func:`write` keeps current (relative to the repository).
DOCUMENTS: tuple[str, ...] = ("README.md", "docs/findings.md")
#: One generated passage: its spec and its body (the body never contains a marker).
MARKER = re.compile(r"<!-- generated: (?P<spec>[^>]*?) -->(?P<body>.*?)<!-- /generated -->", re.S)


def load_rows(out_dir: str | os.PathLike | None = None) -> list[dict]:
    """Every row of ``out_dir/results/*.json`` (default: the committed ``reports/``), in the
    report's page order, each with its ``notebook``."""
    results = load_results(Path(out_dir) if out_dir is not None else DEFAULT_OUT)
    order = [s.name for s in NOTEBOOKS if s.name in results] + sorted(
        n for n in results if n not in {s.name for s in NOTEBOOKS}
    )
    return [
        {**r, "notebook": r.get("notebook") or name}
        for name in order
        for r in results[name].get("rows", [])
    ]


def _kind(r: dict) -> str:
    return str(r.get("verdict") or PENDING)


def tally_text(rows: Sequence[dict]) -> str:
    """``rows`` counted by verdict kind, in the index's order: "72 *holds*, 2 *does not hold* and
    1 *pending*" ("no rows" for none)."""
    counts = Counter(_kind(r) for r in result_rows(rows, "rows"))
    order = [k for k in VERDICTS if counts.get(k)] + sorted(k for k in counts if k not in VERDICTS)
    parts = [f"{counts[k]} *{k}*" for k in order]
    if not parts:
        return "no rows"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _page(notebook: str) -> str:
    return f"page {notebook.split('_')[0]}"


def _labels(arg: str) -> list[str]:
    labels = [a.strip() for a in arg.split(", ") if a.strip()]
    if not labels:
        raise ValueError("a rows/trained passage names at least one label")
    return labels


def _counts(rows: list[dict], arg: str) -> str:
    return f"{len(rows)} rows: {tally_text(rows)}"


def _undecided(rows: list[dict], arg: str) -> str:
    by_page: dict[str, list[dict]] = {}
    for r in rows:
        if _kind(r) in UNDECIDED_KINDS:
            by_page.setdefault(_page(r["notebook"]), []).append(r)
    if not by_page:
        return "no undecided rows"
    return "; ".join(f"{page}: {tally_text(rs)}" for page, rs in by_page.items())


def _pending(rows: list[dict], arg: str) -> str:
    items = Counter(
        f"{r.get('label', '?')}" + (f" ({r['variant']})" if r.get("variant") else "")
        for r in rows
        if _kind(r) == PENDING
    )
    if not items:
        return "no pending rows"
    return "; ".join(f"{k}" + (f" ×{n}" if n > 1 else "") for k, n in items.items())


def _rows_of(rows: list[dict], arg: str) -> list[dict]:
    labels = _labels(arg)
    return [r for r in rows if r.get("label") in labels]


def _rows(rows: list[dict], arg: str) -> str:
    sel = _rows_of(rows, arg)
    return f"{len(sel)} rows: {tally_text(sel)}"


def _trained(rows: list[dict], arg: str) -> str:
    sel = [r for r in _rows_of(rows, arg) if r.get("run_states") and _kind(r) != PENDING]
    if not sel:
        return "no rows on trained runs"
    runs: dict[str, list] = {}
    for r in sel:
        runs.update(r["run_states"])
    steps = sorted({int(st[1]) for st in runs.values() if len(st) > 1 and st[1]})
    at = (
        ""
        if not steps
        else f", {steps[0]} steps"
        if len(steps) == 1
        else f", {steps[0]}–{steps[-1]} steps"
    )
    tally = plateau_tally(runs)
    states = ", ".join(f"{v} {k}" for k, v in tally["states"].items())
    worse = f", {tally['worse']} got worse with training" if tally["worse"] else ""
    held = sum(bool(r.get("holds")) for r in sel)
    return (
        f"{len(sel)} rows on {tally['n']} trained runs ({states}{worse}{at}): {tally_text(sel)}; "
        f"the check itself, verdict aside, holds in {held} of {len(sel)}"
    )


_GENERATORS: dict[str, Callable[[list[dict], str], str]] = {
    "counts": _counts,
    VerdictKind.UNDECIDED: _undecided,
    VerdictKind.PENDING: _pending,
    "rows": _rows,
    "trained": _trained,
}


def passage(spec: str, rows: list[dict]) -> str:
    """The text of the generated passage ``spec`` (see the module's docstring) over ``rows``.

    Raises
    ------
    ValueError
        For a spec this module does not know (naming it).
    """
    if not isinstance(spec, str):
        raise TypeError(f"spec must be a string, got {type(spec).__name__}")
    rows = result_rows(rows, "rows")
    kind, _, arg = spec.strip().partition(" ")
    gen = _GENERATORS.get(kind)
    if gen is None:
        raise ValueError(
            f"spec: unknown generated passage {spec!r}; known: {', '.join(_GENERATORS)}"
        )
    return gen(rows, arg.strip())


def _text(x, name: str) -> str:
    if not isinstance(x, str):
        raise TypeError(f"{name} must be a string, got {type(x).__name__}")
    return x


def render(text: str, rows: list[dict]) -> str:
    """``text`` with every generated passage replaced by its current text."""
    _text(text, "text")
    rows = result_rows(rows, "rows")
    return MARKER.sub(
        lambda m: f"<!-- generated: {m['spec']} -->{passage(m['spec'], rows)}<!-- /generated -->",
        text,
    )


def stale(text: str, rows: list[dict]) -> list[tuple[str, str, str]]:
    """``(spec, as written, as generated)`` for every passage of ``text`` that is not current."""
    _text(text, "text")
    rows = result_rows(rows, "rows")
    out = []
    for m in MARKER.finditer(text):
        now = passage(m["spec"], rows)
        if m["body"] != now:
            out.append((m["spec"], m["body"], now))
    return out


def write(
    root: str | os.PathLike | None = None, out_dir: str | os.PathLike | None = None
) -> list[Path]:
    """Rewrite the generated passages of :data:`DOCUMENTS` under ``root`` (default: this
    checkout) from the results in ``out_dir`` (default: the committed ``reports/``); return the
    documents that changed."""
    base = Path(root) if root is not None else ROOT
    rows = load_rows(out_dir)
    changed = []
    for name in DOCUMENTS:
        path = base / name
        if not path.is_file():
            continue
        text = path.read_text()
        new = render(text, rows)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


_STAMP = re.compile(r'class="stamp">Built from <code>pfntheory</code> [^,]*, commit <code>([^<]*)<')
_CITE = re.compile(r'<details class="cite">.*?commit <code>([^<]*)</code>', re.S)


def page_commits(out_dir: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """The commit each page of ``out_dir`` (default: the committed ``reports/``) names: the
    footer stamp of every ``NN_*.html`` page and the Cite block of ``index.html`` (file name ->
    the commits found; an empty list where a page carries none)."""
    out = Path(out_dir) if out_dir is not None else DEFAULT_OUT
    found = {}
    for page in sorted(out.glob("[0-9][0-9]_*.html")):
        found[page.name] = _STAMP.findall(page.read_text())
    index = out / "index.html"
    if index.is_file():
        found[index.name] = _CITE.findall(index.read_text())
    return found
