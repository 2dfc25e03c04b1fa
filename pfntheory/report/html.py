"""A row of the report as HTML: the inline card a notebook shows, the pieces the index reuses
(verdict badge, what was measured, the notes under a verdict), number formatting, and the style of
both. Maths is typeset as plain HTML (:mod:`.mathtext`): no page needs a script or the network. The
index page itself is :mod:`.index`'s.
"""

from __future__ import annotations

import html
import math

from pfntheory.base._checks import ArgumentTypeError
from pfntheory.claims.gating import SHARED_REASONS
from pfntheory.claims.verdicts import OUTCOME_WORD, PAGE_CLASS, SHOWS_OUTCOME, VerdictKind

from .labels import paper_number
from .mathtext import math_html
from .rows import PENDING, Row

__all__ = ["row_card", "fmt", "CSS", "claim_text", "extends_prefix"]

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
    cls = PAGE_CLASS.get(verdict, PAGE_CLASS[PENDING])
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
        out.append(f'<span class="note">{math_html(_get(r, "convergence"))}</span>')
    if _get(r, "erratum") and _get(r, "verdict") == VerdictKind.FAILS:
        out.append('<span class="note">the check did not confirm the corrected statement</span>')
    if _get(r, "verdict") in SHOWS_OUTCOME:
        out.append(
            f'<span class="note">the check itself: {OUTCOME_WORD[bool(_get(r, "holds"))]}</span>'
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


def claim_text(statement: str, variant: str, limit: int | None = None) -> str:
    """A row's claim as a line shows it: the statement without the variant it restates before its
    first ": " (the line names the variant apart), cut at a word before ``limit`` characters with an
    ellipsis when given."""
    head, sep, rest = (statement or "").partition(": ")
    text = rest if sep and variant and variant in head else (statement or "")
    if limit is not None and len(text) > limit:
        text = text[: max(text.rfind(" ", 0, limit), 1)] + " …"
    return text


def extends_prefix(variant: str) -> str:
    """ "extends " for a row beyond the paper (its variant says so), so that its label reads as an
    extension of the paper's result, not as the result; else ""."""
    return "extends " if "beyond the paper" in (variant or "") else ""


def row_card(row: Row) -> str:
    """The inline card a Recorder shows in the notebook (its id is the index's link target): one
    line (verdict, result, claim, our number and the paper's) that opens on what was measured, the
    tolerance and its reason, what our number was compared with and the notes."""
    if not isinstance(row, Row):
        raise ArgumentTypeError(
            f"row must be a pfntheory.report.rows.Row, got {type(row).__name__}"
        )
    number = paper_number(row.label)
    lab = (
        extends_prefix(row.variant)
        + (f"{html.escape(number)} " if number else "")
        + f"<code>{html.escape(row.label)}</code>"
    )
    lab += f" — {math_html(row.variant)}" if row.variant else ""
    cls = PAGE_CLASS[row.verdict]
    back = f'<a class="back" href="index.html#{row.anchor}">index row</a>'
    claim = claim_text(row.statement, row.variant, 90)
    line = f"{_badge(row.verdict)} <b>{lab}</b>" + (f": {math_html(claim)}" if claim else "")
    body = [_measurement(row)]
    if row.verdict != PENDING:
        line += f" · ours <b>{fmt(row.observed)}</b>"
        nums = f"ours: <b>{_ours(row)}</b>"
        if row.bound is not None:
            nums += f"; compared with: <b>{fmt(row.bound)}</b> ({row.compare})"
        if row.paper_value is not None:
            nums += f"; paper: <b>{fmt(row.paper_value)}</b>"
            line += f", paper <b>{fmt(row.paper_value)}</b>"
        body.append(f"<div>{nums}</div>")
    body += [f"<div>{n}</div>" for n in _notes(row)]
    body.append(f"<div>{back}</div>")
    return (
        f'<details id="{row.anchor}" class="pfn-card pfn-{cls}"><summary class="card-head">'
        f"{line}</summary>{''.join(body)}</details>"
    )


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
.pfn-card{border-left:5px solid #57606a;padding:3px 10px;margin:3px 0;background:#f6f8fa;
  font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-size:13px;line-height:1.45;
  overflow-wrap:anywhere}
.pfn-card .stmt{font-weight:600;margin:2px 0} .pfn-card .src{color:#57606a;font-size:12px}
.pfn-card>summary{cursor:pointer;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.pfn-card[open]>summary{white-space:normal}
.pfn-ok{border-color:#1a7f37} .pfn-caveat{border-color:#9a6700} .pfn-fail{border-color:#cf222e}
.pfn-erratum{border-color:#0969da} .pfn-outside{border-color:#8250df}
.pfn-undecided{border-color:#bc4c00}
details.code>summary,details.log>summary{cursor:pointer;color:#57606a;font-size:12px;
  font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif}
nav.toc{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:6px 14px;margin:8px 0;
  font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-size:13px}
nav.toc ol{margin:4px 0;padding-left:20px} nav.toc ol ol{margin:0;list-style:lower-alpha}
.stamp{color:#57606a;font-size:12px} .pfn-note{margin:4px 0}
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
