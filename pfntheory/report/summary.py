"""The findings box at the top of the index, from the rows of ``results/*.json``: verdicts counted
by kind per part, the errata one line each, and what the trained runs show with how far they are
from converged."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path

from pfntheory.claims.verdicts import FAILING, TRAINED_ORDER, VerdictKind

from .html import _badge, claim_text
from .labels import paper_number
from .mathtext import math_html
from .rows import PENDING, VERDICTS, experiment_tallies

__all__ = ["summary_html", "load_results", "load_status", "numbered"]


def load_results(out_dir: Path) -> dict[str, dict]:
    res = {}
    for p in sorted((out_dir / "results").glob("*.json")):
        if p.name.startswith("_"):
            continue
        data = json.loads(p.read_text())
        res[data.get("notebook", p.stem)] = data
    return res


def load_status(out_dir: Path) -> dict[str, dict]:
    p = out_dir / "results" / "_status.json"
    return json.loads(p.read_text()) if p.exists() else {}


def numbered(label: str) -> str:
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
    order = [  # an appendix without rows adds nothing to the counts
        s
        for s in specs
        if s.name in results and (results[s.name].get("rows") or not getattr(s, "appendix", False))
    ]
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
            if v == VerdictKind.ERRATUM:
                errata.setdefault((r["label"], r.get("erratum", "")), []).append(
                    (r.get("anchor", ""), r.get("variant", ""))
                )
            elif v in FAILING:
                failed.setdefault((r["label"], r.get("variant", "")), []).append(r)
    items = []
    for (label, text), where in errata.items():
        anchor = where[0][0]
        variants = ", ".join(math_html(w[1]) for w in where if w[1])
        what = f"{numbered(label)}" + (f", {variants}" if variants else "")
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
        what = f"{numbered(label)}" + (f", {math_html(variant)}" if variant else "")
        each = "".join(
            f'<li><a href="#{html.escape(r.get("anchor", ""))}">'
            f"{math_html(_short(_claim_only(r)))}</a>: "
            f"{math_html(_failure_words(r))}</li>"
            for r in rows
        )
        fitems.append(f"<li>{badges} {what}<ul>{each}</ul></li>")
    if fitems:
        out += (  # folded: one line until opened, each row's cause inside (the index's length)
            f"<details><summary><b>Claims that fail or rest on runs that got worse</b> "
            f"({sum(len(v) for v in failed.values())} rows, each with why)</summary>"
            f"<ul>{''.join(fitems)}</ul></details>"
        )
    return (
        '<section class="summary" id="summary"><h2>Findings</h2>'
        f"{counts_html}{out}{_trained_summary(results, order)}</section>"
    )


def _claim_only(r: dict) -> str:
    """A row's statement without the variant it restates (the group's heading names it)."""
    return claim_text(r.get("statement") or r.get("key") or "row", r.get("variant", ""))


def _short(text: str, limit: int = 110) -> str:
    """``text`` cut at a word before ``limit`` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: text.rfind(" ", 0, limit)] + " …"


def _failure_words(r: dict) -> str:
    """Why a row fails or rests on runs that got worse, in words: its measured cause where the
    page recorded one; for *worse with training*, which runs got worse and how (the row's
    ``worse_runs``, the gate's reason); else our number against what it was compared with."""
    if r.get("cause"):
        return str(r["cause"])
    worse = r.get("worse_runs")
    if r.get("verdict") == VerdictKind.WORSE and isinstance(worse, list) and worse:
        return _short("; ".join(map(str, worse)), 240)
    ours, bound = r.get("observed"), r.get("bound")
    if isinstance(ours, (int, float)) and isinstance(bound, (int, float)):
        return f"ours {ours:.4g} against {bound:.4g} ({r.get('compare') or 'bound'})"
    return str(r.get("verdict", ""))


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
    vtext = ", ".join(f"{verdicts[v]} {html.escape(v)}" for v in TRAINED_ORDER if verdicts.get(v))
    parts = sorted({s.name.split("_")[0].lstrip("0") for s, _ in rows})
    by_label: dict[str, list[bool]] = {}
    for _, r in rows:
        if r["verdict"] != VerdictKind.OUTSIDE:
            by_label.setdefault(r["label"], []).append(bool(r.get("holds")))
    outcome = "; ".join(
        f"{numbered(lab)} {sum(h)} of {len(h)}"
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
        f"10<sup>5</sup> steps at batch 128, {numbered('supp-tab:pretraining hyperparameters')}); "
        f"by experiment, with the status the row's gate read: {tallies}.</p>"
    )


def _order_key(label: str) -> tuple[int, str]:
    from .labels import PAPER_LABELS

    return (PAPER_LABELS.index(label) if label in PAPER_LABELS else len(PAPER_LABELS), label)
