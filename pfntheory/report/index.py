"""The index page (``reports/index.html``), built from ``results/*.json`` (and the git history, for
the citation stamp of :mod:`.citation`) only.

It opens with the findings (:mod:`.summary`), the citation block and the verdict definitions; then
one line per measured result, grouped by part (the appendices, checks of the pipeline off the
main path, after every main part): its verdict, the number the paper prints for the
result ("Lemma B.3") and its ``\\label{}``, the claim, our number and the paper's number with the
table or figure it is printed in. Everything else (what exactly was measured, the tolerance and its
reason, what our number was compared with, the runs' convergence, the run directory and the command
that regenerates the row) is one click away, in the line's ``<details>``. A clause that many rows of
a part share (a margin's reason, a plateau criterion) is stated once, in the part's notes, and the
rows point to it. Where the paper prints a table that a part reproduces cell by cell
(``results/_paper_tables.json``, written by :func:`~pfntheory.report.paper_tables.paper_table`),
the part shows it folded, the paper's number beside ours.

A row is read by name from its JSON dict; fields this module does not know are ignored, so that a
row may carry more (typed reasons, a paper source) without breaking the page.
"""

from __future__ import annotations

import html
import os
from collections import Counter
from pathlib import Path

from ..claims.gating import SHARED_REASONS
from ..claims.verdicts import VerdictKind
from .citation import PAPER_TITLE, build_stamp, citation_html
from .html import CSS, _badge, _ci_brackets, _measurement, _notes, claim_text, extends_prefix, fmt
from .labels import paper_number
from .mathtext import math_html
from .paper_tables import load_paper_tables, paper_tables_html
from .rows import PENDING, VERDICT_DEFINITIONS, VERDICTS
from .spec import NOTEBOOKS, NotebookSpec, output_dir, reading_order
from .summary import _scale_of, load_results, load_status, summary_html

__all__ = ["build_index", "shared_clauses", "INDEX_CSS"]

#: A clause is a part's note (stated once) when at least this many of the part's rows carry it.
SHARED_MIN_ROWS = 3
#: Clauses shorter than this are left in the rows (a note would be longer than the clause).
_SHORT = 40

INDEX_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:16px 20px;color:#1f2328;
  max-width:1500px;line-height:1.4}
h1{font-size:22px;margin-bottom:4px} h2{font-size:17px;margin-top:20px}
.sub{color:#57606a;margin-top:4px}
.part{background:#eef2f6;font-weight:600;font-size:14px;border-top:2px solid #8c959f;
  padding:5px 6px;margin-top:14px}
.part small{font-weight:400}
.head,details.row>summary{display:grid;align-items:baseline;column-gap:8px;padding:3px 6px;
  grid-template-columns:150px 185px minmax(0,1fr) 78px 132px}
.head{font-size:12px;font-weight:600;color:#57606a;border-bottom:1px solid #d0d7de}
details.row{border-bottom:1px solid #eaeef2;font-size:13px}
details.row>summary{cursor:pointer;list-style:none}
details.row>summary::-webkit-details-marker{display:none}
details.row>summary:hover{background:#f6f8fa}
details.row[open]>summary{background:#f6f8fa}
.one{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;min-width:0}
.one .verdict{font-size:11px}
.res{font-size:12px} .res b{font-weight:600}
.num{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
.var{color:#57606a}
.more{padding:4px 10px 8px 24px;font-size:13px;background:#fbfcfd;overflow-wrap:anywhere}
.more>div{margin:2px 0}
.pnotes{font-size:12px;color:#57606a;margin:2px 6px 4px} .pnotes ol{margin:2px 0;padding-left:22px}
.ref{color:#57606a;font-size:12px}
details.ptab{margin:4px 6px;font-size:13px}
details.ext>summary{cursor:pointer;color:#0969da;font-size:13px;padding:3px 6px}
table.kinds{border-collapse:collapse;font-size:13px;margin:6px 0 10px}
table.kinds td{padding:3px 8px;vertical-align:top;border-bottom:1px solid #eaeef2}
.failed{background:#ffebe9;border:1px solid #cf222e;padding:8px 12px;border-radius:6px}
.summary{border:1px solid #d0d7de;border-radius:8px;padding:6px 14px 8px;background:#fbfcfd;
  margin:10px 0 12px}
.summary h2{margin-top:4px} .summary p{margin:5px 0} .summary ul{margin:4px 0;padding-left:20px}
.summary li{margin:1px 0}
table.counts{border-collapse:collapse;font-size:13px;margin:4px 0 8px;width:100%}
table.counts th,table.counts td{border-bottom:1px solid #eaeef2;padding:2px 6px;text-align:right}
table.counts th .verdict{white-space:normal;font-size:11px;padding:1px 5px}
table.counts th:first-child{width:24%}
table.counts th:first-child,table.counts td:first-child{text-align:left}
table.counts td.scale{text-align:left;color:#57606a;font-size:12px}
table.counts tr.total td{font-weight:700;border-top:1px solid #8c959f}
details.cite,details.defs{margin:8px 0;font-size:13px} details.cite pre{font-size:12px;
  background:#f6f8fa;padding:8px;border-radius:6px;overflow-x:auto}
details>summary{cursor:pointer}
code{font-size:12px;overflow-wrap:anywhere} small{color:#57606a}
@media (max-width:1100px){body{margin:10px}
  .head,details.row>summary{grid-template-columns:132px 150px minmax(0,1fr) 72px 118px}}
@media print{body{margin:0;max-width:none} details.row{break-inside:avoid}}
"""


def _own_clauses(field: str, r: dict) -> list[str]:
    """Row ``r``'s ``field`` ("tolerance" or "convergence") as the clauses the recorder carries
    (``<field>_clauses``, joined by "; " into the text); a row without them (an older results
    file) has its text as one clause. The text is never cut."""
    carried = r.get(f"{field}_clauses")
    if isinstance(carried, list):
        return [c for c in carried if isinstance(c, str) and c]
    text = r.get(field) or ""
    return [text] if text else []


def _clauses(field: str, r: dict) -> list[str]:
    """Row ``r``'s ``field`` clauses (:func:`_own_clauses`); the tolerance also carries the
    margin's typed reasons (keys of :data:`~pfntheory.claims.gating.SHARED_REASONS` in the row's
    ``reasons``), each as "why: ..." (the text itself holds no reason)."""
    out = _own_clauses(field, r)
    if field == "tolerance":
        keys = r.get("reasons") or []
        out += [f"why: {SHARED_REASONS[k]}" for k in keys if k in SHARED_REASONS]
    return out


_FIELDS = ("tolerance", "convergence")


def shared_clauses(rows: list[dict], min_rows: int = SHARED_MIN_ROWS) -> list[str]:
    """The clauses of the rows' tolerance and convergence texts that at least ``min_rows`` of
    ``rows`` carry, in order of first appearance (a part states each once, as a note)."""
    seen: Counter = Counter()
    order: list[str] = []
    for r in rows:
        mine = {c for c in _all_clauses(r) if len(c) >= _SHORT}
        for c in sorted(mine, key=lambda c: _first(r, c)):
            if c not in seen:
                order.append(c)
        seen.update(mine)
    return [c for c in order if seen[c] >= min_rows]


def _first(r: dict, clause: str) -> int:
    order = [c for f in _FIELDS for c in _clauses(f, r)]
    return order.index(clause) if clause in order else len(order)


def _without_shared(r: dict, notes: dict[str, int], part: str) -> dict:
    """A copy of row ``r`` whose tolerance and convergence keep only their own clauses, each shared
    one replaced by a pointer to the part's note."""
    out = dict(r)
    for f in _FIELDS:
        clauses = _clauses(f, r)
        if not any(c in notes for c in clauses):
            continue
        own = [c for c in _own_clauses(f, r) if c not in notes]
        out[f], out[f"{f}_clauses"] = "; ".join(own), own
        if f == "tolerance":  # the reasons not stated in a note stay folded in the row
            out["reasons"] = [
                k for k in r.get("reasons") or [] if f"why: {SHARED_REASONS.get(k)}" not in notes
            ]
        refs = sorted({notes[c] for c in clauses if c in notes})
        out[f"_{f}_refs"] = refs
    out["_part"] = part
    return out


def _refs(r: dict, field: str) -> str:
    refs = r.get(f"_{field}_refs") or []
    if not refs:
        return ""
    links = ", ".join(f'<a href="#notes-{html.escape(r["_part"])}">{k}</a>' for k in refs)
    return f' <span class="ref">(part note{"s" if len(refs) > 1 else ""} {links})</span>'


def _source(r: dict) -> str:
    """Where the paper prints the row's number: the row's own ``paper_source`` if it has one, else
    the table or figure of its label."""
    src = r.get("paper_source")
    if isinstance(src, str) and src:
        return src
    number = paper_number(r.get("label", ""))
    return number if number.startswith(("Table", "Figure", "Theorem", "Lemma")) else ""


def _paper_cell(r: dict) -> str:
    if r.get("paper_value") is None:
        return "—"
    src = _source(r)
    short = src.replace("Table ", "Tab. ").replace("Figure ", "Fig. ")
    return fmt(r["paper_value"]) + (f" <small>{html.escape(short)}</small>" if short else "")


def _ours_line(r: dict) -> str:
    return "" if r.get("verdict") == PENDING else fmt(r.get("observed"))


def _row(r: dict, page: str, has_page: bool, common_command: str) -> str:
    """One measured result: a line (verdict, result, claim, ours, paper) and its details."""
    v = r.get("verdict", PENDING)
    anchor = html.escape(r.get("anchor") or "")
    number = paper_number(r.get("label", ""))
    lab = html.escape(r.get("label", ""))
    res = (
        extends_prefix(r.get("variant", ""))
        + (f"<b>{html.escape(number)}</b> " if number else "")
        + lab
    )
    shown = claim_text(r.get("statement", ""), r.get("variant", ""))
    claim = math_html(shown)
    if r.get("variant") and r["variant"] not in shown:  # the claim first, then what it was
        claim += f' <span class="var">({math_html(r["variant"])})</span>'  # measured on
    line = (
        f'<span class="one">{_badge(v)}</span><span class="one res">{res}</span>'
        f'<span class="one">{claim}</span><span class="one num">{_ours_line(r)}</span>'
        f'<span class="one num">{_paper_cell(r)}</span>'
    )
    more = []
    if r.get("variant"):  # the claim comes first on the line; what it was measured on, here
        more.append(
            f'<div><b>variant:</b> <span class="var">{math_html(r["variant"])}</span></div>'
        )
    more.append(_measurement(r, common_command))
    if r.get("_tolerance_refs"):
        more.append(f"<div><b>tolerance, shared with other rows:</b>{_refs(r, 'tolerance')}</div>")
    if v != PENDING:
        nums = f"ours: <b>{fmt(r.get('observed'))}</b>"
        ci = r.get("ci")
        if ci is not None and _ci_brackets(r.get("observed"), ci):
            nums += f" (95% CI [{fmt(ci[0])}, {fmt(ci[1])}])"
        if r.get("bound") is not None:
            nums += f"; compared with: {fmt(r['bound'])} ({html.escape(r.get('compare', 'bound'))})"
        if r.get("paper_value") is not None:
            src = _source(r)
            nums += f"; paper: <b>{fmt(r['paper_value'])}</b>"
            nums += f" ({html.escape(src)})" if src else ""
        more.append(f"<div>{nums}</div>")
    more += [f"<div>{n}</div>" for n in _notes(r)]
    if r.get("_convergence_refs"):
        more.append(
            f"<div><b>convergence, shared with other rows:</b>{_refs(r, 'convergence')}</div>"
        )
    if has_page and anchor:
        more.append(f'<div class="ref"><a href="{page}#{anchor}">the row on its page</a></div>')
    rid = f' id="{anchor}"' if anchor else ""
    return (
        f'<details class="row"{rid}><summary>{line}</summary>'
        f'<div class="more">{"".join(more)}</div></details>'
    )


#: The kinds of an extension's rows (a part beyond the paper) folded under their count on the
#: index, so that the paper's own results and every row that does not hold stay in view.
FOLDED_KINDS = frozenset({VerdictKind.HOLDS, VerdictKind.HOLDS_AT_BUDGET, VerdictKind.CAVEAT})


def _part(spec, data: dict | None, st: dict, has_page: bool, tables: list[dict]) -> list[str]:
    """The heading of one part, its shared notes, its paper tables and its rows."""
    page = f"{spec.name}.html"
    title = html.escape(spec.title)
    link = f'<a href="{page}">{title}</a>' if has_page else title
    extra = ""
    if st.get("ok") is False:
        extra = ' &mdash; <span class="verdict v-fail">notebook failed</span>'
    rows = (data or {}).get("rows", [])
    common = Counter(r.get("command", "") for r in rows).most_common(1)
    common_command = common[0][0] if common and common[0][1] > 1 else ""
    if data is not None:
        extra += f" <small>({html.escape(_scale_of(data))}"
        if common_command:
            extra += f"; regenerate: <code>{html.escape(common_command)}</code>"
        extra += ")</small>"
    name = html.escape(spec.name)
    out = [f'<div class="part" id="part-{name}">{link}{extra}</div>']
    if data is None:
        return out + [
            '<p class="missing">not executed yet: run '
            f"<code>pfntheory report --only {name}</code></p>"
        ]
    if not rows and spec.appendix:
        return out + [
            '<p class="missing">no rows: it checks that the pipeline runs end to end; its '
            "measurements are listed on its page and counted nowhere</p>"
        ]
    if not rows:
        return out + ['<p class="missing">no results recorded</p>']
    shared = shared_clauses(rows)
    notes = {c: k for k, c in enumerate(shared, 1)}
    if shared:
        items = "".join(
            f"<li>{math_html(c)} <small>({sum(c in _all_clauses(r) for r in rows)} rows)</small>"
            "</li>"
            for c in shared
        )
        out.append(
            f'<div class="pnotes" id="notes-{name}"><b>Said once for the rows below</b>'
            f"<ol>{items}</ol></div>"
        )
    out += [paper_tables_html(t) for t in tables]
    lines = [
        (r, _row(_without_shared(r, notes, spec.name), page, has_page, common_command))
        for r in rows
    ]
    if not spec.beyond_paper:
        return out + [line for _, line in lines]
    # a part beyond the paper: its rows that hold fold under their count, the others stay in view
    held = [line for r, line in lines if r.get("verdict") in FOLDED_KINDS]
    out += [line for r, line in lines if r.get("verdict") not in FOLDED_KINDS]
    if held:
        out.append(
            f'<details class="ext"><summary>{len(held)} more row{"s" if len(held) != 1 else ""} '
            "of this part beyond the paper hold (holds, holds at budget or with a caveat): "
            "show them</summary>" + "".join(held) + "</details>"
        )
    return out


def _all_clauses(r: dict) -> set[str]:
    return {c for f in _FIELDS for c in _clauses(f, r)}


def build_index(out_dir: str | os.PathLike | None = None) -> Path:
    """Write ``index.html`` from ``results/*.json`` (and ``results/_status.json``) in ``out_dir``.

    Parameters
    ----------
    out_dir : path, optional
        The report folder (default :func:`~pfntheory.report.spec.output_dir`).

    Returns
    -------
    Path
        The path of ``index.html``. Its bytes depend only on the results files and the git history
        of the inputs (the citation stamp of :mod:`.citation`; no time stamp of the build).
    """
    out_dir = Path(out_dir) if out_dir is not None else output_dir()
    results = load_results(out_dir)
    status = load_status(out_dir)
    tables = load_paper_tables(out_dir)
    specs = reading_order(
        list(NOTEBOOKS)
        + [NotebookSpec(n, n, ()) for n in results if n not in {s.name for s in NOTEBOOKS}]
    )
    pages = {s.name for s in specs if (out_dir / f"{s.name}.html").exists()}
    body: list[str] = []
    failed = [s.name for s in specs if status.get(s.name, {}).get("ok") is False]
    for spec in specs:
        if spec.appendix and not any(s.appendix for s in specs[: specs.index(spec)]):
            body.append(
                '<h2 id="appendix">Appendix</h2><p class="sub">Off the main path: checks of the '
                "pipeline itself, not results of the paper.</p>"
            )
        body += _part(
            spec,
            results.get(spec.name),
            status.get(spec.name, {}),
            spec.name in pages,
            [t for t in tables if t.get("notebook") == spec.name],
        )
    kinds = "".join(
        f"<tr><td>{_badge(v)}</td><td>{html.escape(VERDICT_DEFINITIONS[v])}</td></tr>"
        for v in VERDICTS
    )
    banner = ""
    if failed:
        banner = (
            '<p class="failed"><b>Some notebooks failed:</b> '
            + ", ".join(f'<a href="{n}.html">{n}</a>' for n in failed)
            + ". Their rows may be incomplete.</p>"
        )
    intro = (
        '<p class="sub">The executable supplement of the paper: every result it states, measured, '
        "one line each: the verdict, the result (the number the paper prints for it and its "
        "<code>\\label{}</code>), the claim, <b>ours</b> (the measured quantity) and "
        "<b>paper</b> (the number the paper prints for that quantity, with its table or figure). "
        "Click a line for what was measured, the tolerance and its reason, what our number was "
        "compared with, the runs read and the command that regenerates it.</p>"
    )
    toc = " · ".join(
        f'<a href="#part-{html.escape(s.name)}">{html.escape(s.title)}</a>'
        for s in specs
        if not s.appendix
    )
    if any(s.appendix for s in specs):
        toc += ' (then the <a href="#appendix">appendix</a>)'
    stamp = build_stamp()
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pfntheory — verification report</title><style>{INDEX_CSS}{CSS}</style></head>
<body>
<h1>{PAPER_TITLE} — verification report</h1>
{intro}
{banner}
{summary_html(results, specs, pages)}
{citation_html(stamp)}
<details class="defs"><summary><b>What the verdicts mean</b></summary>
<table class="kinds">{kinds}</table></details>
<p class="sub">Parts: {toc}</p>
<div class="head"><span>verdict</span><span>result</span><span>claim</span><span>ours</span>
<span>paper</span></div>
{chr(10).join(body)}
</body></html>
"""
    path = out_dir / "index.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
    return path
