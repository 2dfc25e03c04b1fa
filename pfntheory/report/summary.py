"""The findings box at the top of the index, from the rows of ``results/*.json``: verdicts counted
by kind per part, the errata one line each, and what the trained runs show with how far they are
from converged."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path

from .html import _badge
from .labels import paper_number
from .mathtext import math_html
from .rows import PENDING, VERDICTS

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


#: Verdicts of a trained claim (its runs are read), in the order the summary lists them.
_TRAINED_ORDER = (
    "holds",
    "holds with a caveat",
    "holds at budget",
    "fails at budget",
    "does not hold",
    "undecided",
    "outside the paper's regime",
    "erratum",
    PENDING,
)


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

    # errata and failures, one line each (rows of one statement grouped)
    lines: dict[tuple[str, str, str], list[tuple[str, str, str]]] = {}
    for s in order:
        for r in results[s.name].get("rows", []):
            v = r.get("verdict")
            if v not in ("erratum", "does not hold"):
                continue
            text = r.get("erratum") or r.get("caveat") or r.get("statement", "")
            lines.setdefault((v, r["label"], text), []).append(
                (s.name, r.get("anchor", ""), r.get("variant", ""))
            )
    items = []
    for (v, label, text), where in lines.items():
        nb, anchor, _ = where[0]
        variants = ", ".join(math_html(w[2]) for w in where if w[2])
        what = f"{numbered(label)}" + (f", {variants}" if variants else "")
        link = f'<a href="#{html.escape(anchor)}">row</a>' if anchor else ""
        kind = "" if v == "erratum" else f"{_badge(v)} "
        items.append(f"<li>{kind}{what}: {math_html(_headline(text))} {link}</li>")
    n_err = sum(len(w) for (v, _, _), w in lines.items() if v == "erratum")
    n_fail = sum(len(w) for (v, _, _), w in lines.items() if v == "does not hold")
    errata = (
        f"<p><b>Errata</b> ({n_err} rows"
        + (f", and {n_fail} that do not hold" if n_fail else "")
        + "; the paper's statement is wrong as printed and the check confirms the corrected one):"
        f"</p><ul>{''.join(items)}</ul>"
        if items
        else "<p><b>Errata</b>: none recorded.</p>"
    )
    return (
        '<section class="summary" id="summary"><h2>Findings</h2>'
        f"{counts_html}{errata}{_trained_summary(results, order)}</section>"
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
        f"{numbered(lab)} {sum(h)} of {len(h)}"
        for lab, h in sorted(by_label.items(), key=lambda kv: _order_key(kv[0]))
    )
    runs: dict[str, list] = {}
    for _, r in rows:
        runs.update(r["run_states"])
    curved = {k: v for k, v in runs.items() if v[0] != "no curve"}
    states = Counter(st for st, _ in curved.values())
    steps = [int(step) for _, step in curved.values() if step]
    budget = f", trained {min(steps)}–{max(steps)} steps" if steps else ""
    stext = ", ".join(
        f"{n} {html.escape(st)}" for st, n in sorted(states.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    bare = len(runs) - len(curved)
    curves = (
        f"{len(curved)} have a learning curve{budget} (the paper trains 10<sup>4</sup>–"
        f"10<sup>5</sup> steps at batch 128, {numbered('supp-tab:pretraining hyperparameters')}), "
        f"and {states.get('plateaued', 0)} of those have plateaued in E[TV] ({stext})"
        if curved
        else "none has a learning curve"
    )
    none = f"; {bare} have none, so their convergence is unknown" if bare else ""
    return (
        f"<p><b>Trained runs</b> (parts {', '.join(parts)}; {len(rows)} rows: {vtext}). "
        f"The check itself holds, verdict aside, in: {outcome}. "
        f"These rows rest on {len(runs)} runs: {curves}{none}.</p>"
    )


def _order_key(label: str) -> tuple[int, str]:
    from .labels import PAPER_LABELS

    return (PAPER_LABELS.index(label) if label in PAPER_LABELS else len(PAPER_LABELS), label)
