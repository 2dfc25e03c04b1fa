"""The index page (``reports/index.html``) and the inline card of each row, as plain HTML.

The index is built from ``results/*.json`` only: the verdict kinds counted separately at the top
with their definitions, then one row per measured result, grouped by notebook. Every row shows what
exactly was measured, the tolerance and its reason, our number, what it was compared with, the
paper's number in its own column, the run directory read and the command that regenerates it. Maths
is typeset as plain HTML (:mod:`.mathtext`): no page needs a script or the network.
"""

from __future__ import annotations

import html
import json
import math
import os
from pathlib import Path

from .mathtext import math_html
from .recorder import PENDING, VERDICT_DEFINITIONS, VERDICTS, Row
from .spec import NOTEBOOKS, NotebookSpec, output_dir

__all__ = ["build_index", "row_card", "fmt", "CSS"]

_VERDICT_CLASS = {
    "holds": "ok",
    "holds with a caveat": "caveat",
    "does not hold": "fail",
    "erratum": "erratum",
    "outside the paper's regime": "outside",
    "holds at budget": "budget-ok",
    "fails at budget": "budget-fail",
    "undecided": "undecided",
    PENDING: "pending",
}
_COMPARE_WORD = {"bound": "bound", "threshold": "threshold", "reference": "reference"}


def fmt(x) -> str:
    """A number as the report prints it (4 significant digits, 3 in scientific notation)."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return str(x)
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x != 0 and (abs(x) >= 1e4 or abs(x) < 1e-3):
        return f"{x:.3g}"
    return f"{x:.4g}"


def _ci_brackets(observed, ci) -> bool:
    """Show a CI beside ``observed`` only if it brackets it (a check may attach the CI of a
    different statistic, e.g. of a mean slope beside a worst-case ratio)."""
    if not ci or observed is None or ci[0] is None or ci[1] is None:
        return False
    return float(ci[0]) <= float(observed) <= float(ci[1])


def _badge(verdict: str) -> str:
    cls = _VERDICT_CLASS.get(verdict, "pending")
    return f'<span class="verdict v-{cls}">{html.escape(verdict)}</span>'


def _get(r, name, default=""):
    return r.get(name, default) if isinstance(r, dict) else getattr(r, name, default)


def _notes(r) -> list[str]:
    """The lines under a row's verdict: caveat, erratum, regime, convergence."""
    out = []
    if _get(r, "erratum"):
        out.append(
            f'<span class="note">corrected statement: {math_html(_get(r, "erratum"))}</span>'
        )
    if _get(r, "outside"):
        out.append(f'<span class="note">{math_html(_get(r, "outside"))}</span>')
    if _get(r, "caveat"):
        out.append(f'<span class="note caveat">{math_html(_get(r, "caveat"))}</span>')
    if _get(r, "convergence"):
        out.append(f'<span class="note">{html.escape(_get(r, "convergence"))}</span>')
    if _get(r, "erratum") and _get(r, "verdict") == "does not hold":
        out.append('<span class="note">the check did not confirm the corrected statement</span>')
    if _get(r, "verdict") in ("erratum", "outside the paper's regime", "undecided"):
        out.append(
            f'<span class="note">the check itself: {"holds" if _get(r, "holds") else "fails"}'
            "</span>"
        )
    return out


def _measurement(r) -> str:
    """Statement, what was measured, tolerance, source: the wide wrapping column."""
    parts = [f'<div class="stmt">{math_html(_get(r, "statement"))}</div>']
    if _get(r, "verdict") == PENDING:
        parts.append(f'<div class="missing">{html.escape(_get(r, "missing"))}</div>')
        return "".join(parts)
    if _get(r, "measured"):
        parts.append(f"<div><b>measured:</b> {math_html(_get(r, 'measured'))}</div>")
    if _get(r, "tolerance"):
        parts.append(f"<div><b>tolerance:</b> {math_html(_get(r, 'tolerance'))}</div>")
    src = []
    if _get(r, "run_dir"):
        src.append(f"read <code>{html.escape(_get(r, 'run_dir'))}</code>")
    if _get(r, "command"):
        src.append(f"regenerate: <code>{html.escape(_get(r, 'command'))}</code>")
    if src:
        parts.append(f'<div class="src">{" · ".join(src)}</div>')
    return "".join(parts)


def _ours(r) -> str:
    if _get(r, "verdict") == PENDING:
        return ""
    s = fmt(_get(r, "observed", None))
    ci = _get(r, "ci", None)
    if _ci_brackets(_get(r, "observed", None), ci):
        s += f"<br><small>95% CI [{fmt(ci[0])}, {fmt(ci[1])}]</small>"
    return s


def _compared(r) -> str:
    b = _get(r, "bound", None)
    if b is None or _get(r, "verdict") == PENDING:
        return "—"
    return f"{fmt(b)}<br><small>{_COMPARE_WORD.get(_get(r, 'compare', 'bound'), '')}</small>"


def row_card(row: Row) -> str:
    """The inline card a Recorder shows in the notebook (its id is the index's link target)."""
    lab = html.escape(row.label) + (f" — {math_html(row.variant)}" if row.variant else "")
    cls = _VERDICT_CLASS[row.verdict]
    body = [f'<div class="card-head">{_badge(row.verdict)} <b>{lab}</b></div>', _measurement(row)]
    if row.verdict != PENDING:
        nums = f"ours: <b>{_ours(row)}</b>; compared with: <b>{fmt(row.bound)}</b> ({row.compare})"
        if row.paper_value is not None:
            nums += f"; paper: <b>{fmt(row.paper_value)}</b>"
        body.append(f"<div>{nums}</div>")
    body += [f"<div>{n}</div>" for n in _notes(row)]
    return f'<div id="{row.anchor}" class="pfn-card pfn-{cls}">{"".join(body)}</div>'


#: Style of the index and of the cards inside the notebook pages (injected into each page).
CSS = """
.verdict{display:inline-block;border-radius:10px;padding:1px 8px;font-size:12px;font-weight:600;
  white-space:nowrap;font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif}
.v-ok{background:#dafbe1;color:#116329} .v-caveat{background:#fff8c5;color:#7d4e00}
.v-fail{background:#ffebe9;color:#a40e26} .v-pending{background:#eaeef2;color:#57606a}
.v-erratum{background:#ddf4ff;color:#0a3069} .v-outside{background:#f0e6ff;color:#512a97}
.v-undecided{background:#ffefd6;color:#873800}
.v-budget-ok{background:#e6f4ea;color:#1e6b35;border:1px dashed #1e6b35}
.v-budget-fail{background:#fff0ee;color:#a40e26;border:1px dashed #a40e26}
.note{display:block;color:#57606a;font-size:12px;margin-top:2px} .note.caveat{color:#7d4e00}
.missing{color:#57606a;font-size:12px;font-style:italic}
.math{font-family:"Cambria Math","STIX Two Math","Latin Modern Math",Cambria,Georgia,serif;
  font-style:normal;white-space:nowrap}
.pfn-card{border-left:5px solid #57606a;padding:6px 10px;margin:6px 0;background:#f6f8fa;
  font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-size:13px;line-height:1.45;
  overflow-wrap:anywhere}
.pfn-card .stmt{font-weight:600;margin:2px 0} .pfn-card .src{color:#57606a;font-size:12px}
.pfn-ok{border-color:#1a7f37} .pfn-caveat{border-color:#9a6700} .pfn-fail{border-color:#cf222e}
.pfn-erratum{border-color:#0969da} .pfn-outside{border-color:#8250df}
.pfn-undecided{border-color:#bc4c00}
details.code>summary,details.log>summary{cursor:pointer;color:#57606a;font-size:12px;
  font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif}
nav.toc{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:6px 14px;margin:8px 0;
  font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-size:13px}
nav.toc ol{margin:4px 0;padding-left:20px} nav.toc li.h3{margin-left:16px;list-style:circle}
.jp-RenderedImage img,.jp-RenderedMarkdown img{max-width:100%;height:auto}
@media print{details.code,details.log{display:none} nav.toc{break-after:avoid}
  .jp-Cell{break-inside:avoid}}
"""

_INDEX_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:20px 24px;color:#1f2328;
  max-width:1500px;line-height:1.4}
h1{font-size:22px;margin-bottom:4px} h2{font-size:17px;margin-top:24px}
.sub{color:#57606a;margin-top:4px}
table.rows{border-collapse:collapse;width:100%;font-size:13px;table-layout:fixed}
table.rows th,table.rows td{border-bottom:1px solid #d0d7de;padding:5px 6px;vertical-align:top;
  text-align:left;overflow-wrap:anywhere}
table.rows th{background:#f6f8fa}
col.c-label{width:13%} col.c-meas{width:45%} col.c-num{width:9%} col.c-verdict{width:15%}
tr.part td{background:#eef2f6;font-weight:600;font-size:14px;border-top:2px solid #8c959f}
td.num{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
td.label{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
td .stmt{font-weight:600} td .src{color:#57606a;font-size:12px}
table.kinds{border-collapse:collapse;font-size:13px;margin:6px 0 10px}
table.kinds td{padding:3px 8px;vertical-align:top;border-bottom:1px solid #eaeef2}
table.kinds td.n{font-weight:700;text-align:right;font-family:ui-monospace,monospace}
.failed{background:#ffebe9;border:1px solid #cf222e;padding:8px 12px;border-radius:6px}
code{font-size:12px;overflow-wrap:anywhere} small{color:#57606a}
@media (max-width:1100px){body{margin:12px} col.c-meas{width:40%} col.c-verdict{width:17%}}
@media print{body{margin:0;max-width:none} table.rows{font-size:10px} tr{break-inside:avoid}}
"""


def _load_results(out_dir: Path) -> dict[str, dict]:
    res = {}
    for p in sorted((out_dir / "results").glob("*.json")):
        if p.name.startswith("_"):
            continue
        data = json.loads(p.read_text())
        res[data.get("notebook", p.stem)] = data
    return res


def _load_status(out_dir: Path) -> dict[str, dict]:
    p = out_dir / "results" / "_status.json"
    return json.loads(p.read_text()) if p.exists() else {}


def build_index(out_dir: str | os.PathLike | None = None) -> Path:
    """Write ``index.html`` from ``results/*.json`` (and ``results/_status.json``) in ``out_dir``.

    Parameters
    ----------
    out_dir : path, optional
        The report folder (default :func:`~pfntheory.report.spec.output_dir`).

    Returns
    -------
    Path
        The path of ``index.html``. Its bytes depend only on the results files (no time stamp).
    """
    out_dir = Path(out_dir) if out_dir is not None else output_dir()
    results = _load_results(out_dir)
    status = _load_status(out_dir)
    specs = list(NOTEBOOKS) + [
        NotebookSpec(n, n, ()) for n in results if n not in {s.name for s in NOTEBOOKS}
    ]

    counts = dict.fromkeys(VERDICTS, 0)
    body: list[str] = []
    failed: list[str] = []
    for spec in specs:
        st = status.get(spec.name, {})
        page = f"{spec.name}.html"
        has_page = (out_dir / page).exists()
        title = html.escape(spec.title)
        link = f'<a href="{page}">{title}</a>' if has_page else title
        extra = ""
        if st.get("ok") is False:
            failed.append(spec.name)
            extra = ' &mdash; <span class="verdict v-fail">notebook failed</span>'
        body.append(
            f'<tr class="part" id="part-{html.escape(spec.name)}"><td colspan="6">{link}{extra}'
            "</td></tr>"
        )
        if spec.name not in results:
            body.append(
                '<tr><td colspan="6" class="missing">not executed yet: run '
                f"<code>pfntheory report --only {html.escape(spec.name)}</code></td></tr>"
            )
            continue
        rows = results[spec.name].get("rows", [])
        if not rows:
            body.append('<tr><td colspan="6" class="missing">no results recorded</td></tr>')
        for r in rows:
            v = r.get("verdict", PENDING)
            counts[v] = counts.get(v, 0) + 1
            lab = html.escape(r["label"])
            anchor = r.get("anchor") or ""
            lab = f'<a href="{page}#{anchor}">{lab}</a>' if has_page and anchor else lab
            if r.get("variant"):
                lab += f"<br><small>{math_html(r['variant'])}</small>"
            verdict = _badge(v) + "".join(_notes(r))
            paper = fmt(r.get("paper_value")) if r.get("paper_value") is not None else "—"
            body.append(
                f'<tr><td class="label">{lab}</td><td>{_measurement(r)}</td>'
                f'<td class="num">{_ours(r)}</td><td class="num">{_compared(r)}</td>'
                f'<td class="num">{paper}</td><td>{verdict}</td></tr>'
            )

    kinds = "".join(
        f'<tr><td>{_badge(v)}</td><td class="n">{counts.get(v, 0)}</td>'
        f"<td>{html.escape(VERDICT_DEFINITIONS[v])}</td></tr>"
        for v in VERDICTS
        if v != PENDING or counts.get(v)
    )
    banner = ""
    if failed:
        banner = (
            '<p class="failed"><b>Some notebooks failed:</b> '
            + ", ".join(f'<a href="{n}.html">{n}</a>' for n in failed)
            + ". Their rows may be incomplete.</p>"
        )
    scales = sorted({d.get("scale", "quick") for d in results.values()}) or ["quick"]
    scale_names = html.escape(", ".join(scales))
    paper = "Transformers Can Learn Posterior Predictive Distributions In-Context"
    intro = (
        '<p class="sub">Each row is one result of the paper, named by its LaTeX '
        "<code>\\label{}</code>\n"
        "(a variant of it, such as a dimension or a design, is named under the label), "
        "measured by\n"
        "<code>pfntheory.claims</code> (the numbers <code>verify/</code> asserts on) "
        "or read from the trained\n"
        "runs. <b>ours</b> is the measured quantity; <b>compared with</b> is the bound, "
        "threshold or reference\n"
        "the check compares it with; <b>paper</b> is the number the paper prints, "
        "where it prints one.\n"
    )
    toc = " · ".join(
        f'<a href="#part-{html.escape(s.name)}">{html.escape(s.title)}</a>' for s in specs
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pfntheory — verification report</title><style>{_INDEX_CSS}{CSS}</style></head>
<body>
<h1>{paper} — verification report</h1>
{intro}Click a label for the figure or table beside the claim. Scale: <b>{scale_names}</b>.</p>
<h2>Verdicts by kind</h2>
<table class="kinds">{kinds}</table>
{banner}
<p class="sub">Parts: {toc}</p>
<table class="rows">
<colgroup><col class="c-label"><col class="c-meas"><col class="c-num"><col class="c-num">
<col class="c-num"><col class="c-verdict"></colgroup>
<thead><tr><th>result</th><th>claim, what was measured, tolerance, source</th><th>ours</th>
<th>compared with</th><th>paper</th><th>verdict</th></tr></thead>
<tbody>
{chr(10).join(body)}
</tbody></table>
</body></html>
"""
    path = out_dir / "index.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
    return path
