"""The index page (``reports/index.html``) and the inline card of each row, as plain HTML.

The index is built from ``results/*.json`` (and the git history, for the citation stamp of
:mod:`.citation`) only. It opens with the findings: verdicts counted by kind for each part, the
errata one line each, and what the trained runs show with how far they are from converged; then the
citation block and the verdict definitions; then one row per measured result, grouped by notebook.
Every row names the result by the number the paper prints for it ("Lemma B.3") beside its
``\\label{}``, and shows what exactly was measured, the tolerance and its reason, our number, what
it was compared with, the paper's number in its own column, the run directory read and the command
that regenerates it. Maths is typeset as plain HTML (:mod:`.mathtext`): no page needs a script or
the network.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from collections import Counter
from pathlib import Path

from pfntheory._checks import ArgumentTypeError
from pfntheory.claims.gating import SHARED_REASONS

from .citation import PAPER_TITLE, build_stamp, citation_html
from .labels import paper_number
from .mathtext import math_html
from .rows import PENDING, VERDICT_DEFINITIONS, VERDICTS, Row, experiment_tallies
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
    "undecided (underpowered)": "undecided",
    "worse with training": "budget-fail",
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
    if _get(r, "verdict") in (
        "erratum",
        "outside the paper's regime",
        "undecided",
        "undecided (underpowered)",
        "worse with training",
    ):
        out.append(
            f'<span class="note">the check itself: {"holds" if _get(r, "holds") else "fails"}'
            "</span>"
        )
    return out


def _measurement(r, common_command: str = "") -> str:
    """Statement, what was measured, tolerance, source: the wide wrapping column (the command is
    left out when it is ``common_command``, which the part's heading then shows once)."""
    parts = [f'<div class="stmt">{math_html(_get(r, "statement"))}</div>']
    if _get(r, "verdict") == PENDING:
        parts.append(f'<div class="missing">{html.escape(_get(r, "missing"))}</div>')
        return "".join(parts)
    if _get(r, "measured"):
        parts.append(f"<div><b>measured:</b> {math_html(_get(r, 'measured'))}</div>")
    if _get(r, "tolerance"):
        reason = "".join(  # the margin's shared reasons (gating.SHARED_REASONS), folded
            '<details class="crit"><summary>why this margin</summary>'
            f"{math_html(SHARED_REASONS[k])}</details>"
            for k in _get(r, "reasons", []) or []
            if k in SHARED_REASONS
        )
        parts.append(f"<div><b>tolerance:</b> {math_html(_get(r, 'tolerance'))}{reason}</div>")
    src = []
    if _get(r, "run_dir"):
        src.append(f"read <code>{html.escape(_get(r, 'run_dir'))}</code>")
    if _get(r, "command") and _get(r, "command") != common_command:
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
    if not isinstance(row, Row):
        raise ArgumentTypeError(
            f"row must be a pfntheory.report.rows.Row, got {type(row).__name__}"
        )
    number = paper_number(row.label)
    lab = (f"{html.escape(number)} " if number else "") + f"<code>{html.escape(row.label)}</code>"
    lab += f" — {math_html(row.variant)}" if row.variant else ""
    cls = _VERDICT_CLASS[row.verdict]
    back = f'<a class="back" href="index.html#{row.anchor}">index row</a>'
    body = [
        f'<div class="card-head">{_badge(row.verdict)} <b>{lab}</b> {back}</div>',
        _measurement(row),
    ]
    if row.verdict != PENDING:
        nums = f"ours: <b>{_ours(row)}</b>"
        if row.bound is not None:
            nums += f"; compared with: <b>{fmt(row.bound)}</b> ({row.compare})"
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
details.crit{display:inline} details.crit>summary{display:inline;cursor:pointer;color:#57606a;
  margin-left:4px;font-size:11px}
.pfn-card a.back{font-size:11px;font-weight:400;color:#57606a;margin-left:6px}
nav.pager{display:flex;justify-content:space-between;gap:12px;flex-wrap:wrap;margin:6px 0;
  font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-size:13px}
table.pfn-table{border-collapse:collapse;margin:6px 0;font-size:12.5px;
  font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif}
table.pfn-table caption{text-align:left;color:#57606a;font-size:12px;padding:2px 0}
table.pfn-table th{background:#f6f8fa;text-align:left;font-weight:600}
table.pfn-table th,table.pfn-table td{border:1px solid #d0d7de;padding:3px 8px;vertical-align:top}
details.table>summary{cursor:pointer;color:#0969da;font-size:13px;margin:4px 0}
table.pfn-table td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
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
col.c-label{width:12%} col.c-meas{width:45%} col.c-num{width:7.5%} col.c-verdict{width:20.5%}
tr.part td{background:#eef2f6;font-weight:600;font-size:14px;border-top:2px solid #8c959f}
td.num{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
td.label{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
td .stmt{font-weight:600} td .src{color:#57606a;font-size:12px}
table.kinds{border-collapse:collapse;font-size:13px;margin:6px 0 10px}
table.kinds td{padding:3px 8px;vertical-align:top;border-bottom:1px solid #eaeef2}
table.kinds td.n{font-weight:700;text-align:right;font-family:ui-monospace,monospace}
.failed{background:#ffebe9;border:1px solid #cf222e;padding:8px 12px;border-radius:6px}
.summary{border:1px solid #d0d7de;border-radius:8px;padding:8px 16px 10px;background:#fbfcfd;
  margin:10px 0 14px}
.summary h2{margin-top:6px} .summary p{margin:6px 0} .summary ul{margin:4px 0;padding-left:20px}
.summary li{margin:2px 0}
table.counts{border-collapse:collapse;font-size:13px;margin:4px 0 8px;width:100%}
table.counts th,table.counts td{border-bottom:1px solid #eaeef2;padding:3px 6px;text-align:right}
table.counts th .verdict{white-space:normal;font-size:11px;padding:1px 5px}
table.counts th:first-child{width:24%}
table.counts th:first-child,table.counts td:first-child{text-align:left}
table.counts td.scale{text-align:left;color:#57606a;font-size:12px}
table.counts tr.total td{font-weight:700;border-top:1px solid #8c959f}
td.label .pnum{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-weight:600;
  font-size:13px;display:block}
details.cite,details.defs{margin:8px 0;font-size:13px} details.cite pre{font-size:12px;
  background:#f6f8fa;padding:8px;border-radius:6px;overflow-x:auto}
details>summary{cursor:pointer}
code{font-size:12px;overflow-wrap:anywhere} small{color:#57606a}
@media (max-width:1100px){body{margin:12px} col.c-meas{width:42%} col.c-verdict{width:23.5%}}
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


#: Verdicts of a trained claim (its runs are read), in the order the summary lists them.
_TRAINED_ORDER = (
    "holds",
    "holds with a caveat",
    "holds at budget",
    "fails at budget",
    "does not hold",
    "undecided",
    "undecided (underpowered)",
    "worse with training",
    "outside the paper's regime",
    "erratum",
    PENDING,
)


def _numbered(label: str) -> str:
    """``Lemma B.3 (supp-lem:...)`` as HTML: what the paper prints, then the label."""
    number = paper_number(label)
    lab = f"<code>{html.escape(label)}</code>"
    return f"<b>{html.escape(number)}</b> ({lab})" if number else lab


def _headline(text: str, limit: int = 150) -> str:
    """The first clause of a corrected statement (up to the first '; ' or ': ' past 15 characters),
    for a one-line summary; the full text stays on the row."""
    m = re.search(r"[;:] ", text[15:])
    head = text[: 15 + m.start()] if m else text
    head = re.sub(r"\*([^*\s][^*]*?)\*", r"\1", head)  # Markdown emphasis, not rho*
    return head if len(head) <= limit else head[: limit - 1].rstrip() + "…"


def _scale_of(data: dict) -> str:
    """How a part was run: the notebook's own sizes and, where its rows read runs, their scale."""
    runs = sorted(
        {
            m.group(1)
            for r in data.get("rows", [])
            for m in [_SCALE.search(r.get("command", ""))]
            if m
        }
    )
    own = data.get("scale", "quick")
    exact = any(not _SCALE.search(r.get("command", "")) for r in data.get("rows", []))
    parts = ([f"sizes: {own}"] if exact or not runs else []) + (
        [f"runs: {', '.join(runs)}"] if runs else []
    )
    return "; ".join(parts)


_SCALE = re.compile(r"--scale (\w+)")


def summary_html(results: dict[str, dict], specs, pages: set[str] | None = None) -> str:
    """The findings box at the top of the index, from the rows of ``results`` (notebook -> its
    results JSON): verdicts counted by kind per part, the errata one line each, and what the
    trained runs show with how far they are from converged. ``pages``: notebooks whose page exists
    (rows link to them)."""
    pages = set(results) if pages is None else pages
    order = [s for s in specs if s.name in results]
    counts = {
        s.name: Counter(r.get("verdict", PENDING) for r in results[s.name].get("rows", []))
        for s in order
    }
    total: Counter = sum(counts.values(), Counter())
    kinds = [v for v in VERDICTS if total.get(v)]
    head = "".join(f"<th>{_badge(v)}</th>" for v in kinds)
    body = []
    for s in order:
        c = counts[s.name]
        title = html.escape(s.title)
        link = f'<a href="#part-{html.escape(s.name)}">{title}</a>'
        cells = "".join(f"<td>{c.get(v) or ''}</td>" for v in kinds)
        scale = html.escape(_scale_of(results[s.name]))
        n = sum(c.values())
        body.append(f'<tr><td>{link}</td><td class="scale">{scale}</td>{cells}<td>{n}</td></tr>')
    cells = "".join(f"<td>{total.get(v, 0)}</td>" for v in kinds)
    body.append(
        f'<tr class="total"><td>all parts</td><td></td>{cells}<td>{sum(total.values())}</td></tr>'
    )
    counts_html = (
        '<table class="counts"><thead><tr><th>part</th><th>scale</th>'
        f"{head}<th>rows</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
    )

    # errata (corrections of the paper) one line each; failed claims grouped by result and variant
    errata: dict[tuple[str, str], list[tuple[str, str]]] = {}
    failed: dict[tuple[str, str], list[dict]] = {}
    for s in order:
        for r in results[s.name].get("rows", []):
            v = r.get("verdict")
            if v == "erratum":
                errata.setdefault((r["label"], r.get("erratum", "")), []).append(
                    (r.get("anchor", ""), r.get("variant", ""))
                )
            elif v in ("does not hold", "fails at budget", "worse with training"):
                failed.setdefault((r["label"], r.get("variant", "")), []).append(r)
    items = []
    for (label, text), where in errata.items():
        anchor = where[0][0]
        variants = ", ".join(math_html(w[1]) for w in where if w[1])
        what = f"{_numbered(label)}" + (f", {variants}" if variants else "")
        link = f'<a href="#{html.escape(anchor)}">row</a>' if anchor else ""
        items.append(f"<li>{what}: {math_html(_headline(text))} {link}</li>")
    n_err = sum(len(w) for w in errata.values())
    out = (
        f"<p><b>Errata</b> ({n_err} rows; the paper's statement is wrong as printed and the check "
        f"confirms the corrected one):</p><ul>{''.join(items)}</ul>"
        if items
        else "<p><b>Errata</b>: none recorded.</p>"
    )
    fitems = []
    for (label, variant), rows in failed.items():
        by_kind = Counter(r["verdict"] for r in rows)
        badges = " ".join(f"{_badge(k)}&times;{n}" for k, n in by_kind.items())
        what = f"{_numbered(label)}" + (f", {math_html(variant)}" if variant else "")
        keys = ", ".join(
            f'<a href="#{html.escape(r.get("anchor", ""))}">{html.escape(r.get("key") or "row")}'
            "</a>"
            for r in rows
        )
        causes = list(dict.fromkeys(r.get("cause", "") for r in rows if r.get("cause")))
        cause = f"; measured cause: {math_html(' '.join(causes))}" if causes else ""
        fitems.append(f"<li>{badges} {what} ({keys}){cause}</li>")
    if fitems:
        out += (
            f"<p><b>Claims that fail or rest on runs that got worse</b> "
            f"({sum(len(v) for v in failed.values())} rows):</p><ul>{''.join(fitems)}</ul>"
        )
    return (
        '<section class="summary" id="summary"><h2>Findings</h2>'
        f"{counts_html}{out}{_trained_summary(results, order)}</section>"
    )


def _trained_summary(results: dict[str, dict], order) -> str:
    """One or two lines on the rows that rest on trained runs: their verdicts, the check's own
    outcome per figure or table, and the runs' training budget and plateau states."""
    rows = [
        (s, r)
        for s in order
        for r in results[s.name].get("rows", [])
        if r.get("run_states") and r.get("verdict") != PENDING
    ]
    if not rows:
        return ""
    verdicts = Counter(r["verdict"] for _, r in rows)
    vtext = ", ".join(f"{verdicts[v]} {html.escape(v)}" for v in _TRAINED_ORDER if verdicts.get(v))
    parts = sorted({s.name.split("_")[0].lstrip("0") for s, _ in rows})
    by_label: dict[str, list[bool]] = {}
    for _, r in rows:
        if r["verdict"] != "outside the paper's regime":
            by_label.setdefault(r["label"], []).append(bool(r.get("holds")))
    outcome = "; ".join(
        f"{_numbered(lab)} {sum(h)} of {len(h)}"
        for lab, h in sorted(by_label.items(), key=lambda kv: _order_key(kv[0]))
    )
    runs: dict[str, list] = {}
    for _, r in rows:
        runs.update(r["run_states"])
    steps = [int(st[1]) for st in runs.values() if len(st) > 1 and st[1]]
    budget = f", trained {min(steps)}–{max(steps)} steps" if steps else ""
    tallies = "; ".join(
        f"<code>{html.escape(exp)}</code>: {html.escape(t['text'])}"
        for exp, t in experiment_tallies([r for _, r in rows]).items()
    )
    return (
        f"<p><b>Trained runs</b> (parts {', '.join(parts)}; {len(rows)} rows: {vtext}). "
        f"The check itself holds, verdict aside, in: {outcome}. "
        f"These rows rest on {len(runs)} runs{budget} (the paper trains 10<sup>4</sup>–"
        f"10<sup>5</sup> steps at batch 128, {_numbered('supp-tab:pretraining hyperparameters')}); "
        f"by experiment, with the status the row's gate read: {tallies}.</p>"
    )


def _order_key(label: str) -> tuple[int, str]:
    from .labels import PAPER_LABELS

    return (PAPER_LABELS.index(label) if label in PAPER_LABELS else len(PAPER_LABELS), label)


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
    results = _load_results(out_dir)
    status = _load_status(out_dir)
    specs = list(NOTEBOOKS) + [
        NotebookSpec(n, n, ()) for n in results if n not in {s.name for s in NOTEBOOKS}
    ]
    pages = {s.name for s in specs if (out_dir / f"{s.name}.html").exists()}

    body: list[str] = []
    failed: list[str] = []
    for spec in specs:
        st = status.get(spec.name, {})
        page = f"{spec.name}.html"
        has_page = spec.name in pages
        title = html.escape(spec.title)
        link = f'<a href="{page}">{title}</a>' if has_page else title
        extra = ""
        if st.get("ok") is False:
            failed.append(spec.name)
            extra = ' &mdash; <span class="verdict v-fail">notebook failed</span>'
        rows = results.get(spec.name, {}).get("rows", [])
        common = Counter(r.get("command", "") for r in rows).most_common(1)
        common_command = common[0][0] if common and common[0][1] > 1 else ""
        if spec.name in results:
            extra += f" <small>({html.escape(_scale_of(results[spec.name]))}"
            if common_command:
                extra += f"; regenerate: <code>{html.escape(common_command)}</code>"
            extra += ")</small>"
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
        if not rows:
            body.append('<tr><td colspan="6" class="missing">no results recorded</td></tr>')
        for r in rows:
            v = r.get("verdict", PENDING)
            anchor = r.get("anchor") or ""
            number = paper_number(r["label"])
            lab = html.escape(r["label"])
            lab = f'<a href="{page}#{anchor}">{lab}</a>' if has_page and anchor else lab
            if number:
                lab = f'<span class="pnum">{html.escape(number)}</span>{lab}'
            if r.get("variant"):
                lab += f"<br><small>{math_html(r['variant'])}</small>"
            verdict = _badge(v) + "".join(_notes(r))
            paper = fmt(r.get("paper_value")) if r.get("paper_value") is not None else "—"
            rid = f' id="{html.escape(anchor)}"' if anchor else ""
            body.append(
                f'<tr{rid}><td class="label">{lab}</td><td>{_measurement(r, common_command)}</td>'
                f'<td class="num">{_ours(r)}</td><td class="num">{_compared(r)}</td>'
                f'<td class="num">{paper}</td><td>{verdict}</td></tr>'
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
        '<p class="sub">The executable supplement of the paper: every result it states, measured. '
        "Each row below is one result, named by the number the paper prints for it and its LaTeX "
        "<code>\\label{}</code> (a variant, such as a dimension or a design, is named under it), "
        "measured by <code>pfntheory.claims</code> (the numbers <code>verify/</code> asserts on) "
        "or read from the trained runs. <b>ours</b> is the measured quantity the row names; "
        "<b>compared with</b> is the bound, threshold or reference the check compares it with; "
        "<b>paper</b> is the number the paper prints for that quantity, where it prints one. "
        "Click a label for the figure or table beside the claim.</p>"
    )
    toc = " · ".join(
        f'<a href="#part-{html.escape(s.name)}">{html.escape(s.title)}</a>' for s in specs
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pfntheory — verification report</title><style>{_INDEX_CSS}{CSS}</style></head>
<body>
<h1>{PAPER_TITLE} — verification report</h1>
{intro}
{banner}
{summary_html(results, specs, pages)}
{citation_html(build_stamp())}
<details class="defs"><summary><b>What the verdicts mean</b></summary>
<table class="kinds">{kinds}</table></details>
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
