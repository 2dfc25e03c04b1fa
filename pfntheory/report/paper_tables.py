"""The paper's printed tables beside ours, cell by cell, for the index.

A notebook that reproduces a table the paper prints (the two supplementary tables, the case studies'
empirical-Bayes fits, the pretraining hyperparameters) calls :func:`paper_table`: it shows the
table folded in the page and saves it into ``results/_paper_<notebook>.json``, which the index
(:mod:`.index`) shows folded under the part, with the paper's table or figure number. Every value
is the paper's printed number or ours as measured; nothing is computed here.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .mathtext import math_html
from .spec import output_dir
from .tables import Table, cell

__all__ = [
    "paper_table",
    "load_paper_tables",
    "paper_tables_html",
    "published_beside",
    "pretraining_beside",
]


def _path(out_dir: Path, notebook: str) -> Path:
    return out_dir / "results" / f"_paper_{notebook}.json"


def paper_table(
    notebook: str,
    key: str,
    title: str,
    source: str,
    columns: Sequence[str],
    rows: Sequence[Sequence],
) -> Table:
    """Save one paper-beside-ours table of ``notebook`` (replacing an earlier one of the same
    ``key``) and return it folded for the page.

    Parameters
    ----------
    notebook : str
        The notebook's name (its part in the index).
    key : str
        A name for the table, unique within the notebook.
    title : str
        What the table compares (ASCII maths allowed).
    source : str
        Where the paper prints its numbers, as the paper numbers it ("Table 4", "Figure 6").
    columns : sequence of str
    rows : sequence of sequences
        Cells: numbers (printed with 4 significant digits) or text; None prints "—".
    """
    if not columns or any(len(r) != len(columns) for r in rows):
        raise ValueError("rows must each have one cell per column")
    text = [[cell(v) for v in r] for r in rows]
    numeric = [
        all(isinstance(r[j], (int, float)) or r[j] is None for r in rows)
        for j in range(len(columns))
    ]
    entry = {
        "notebook": notebook,
        "key": key,
        "title": title,
        "source": source,
        "columns": [str(c) for c in columns],
        "rows": text,
        "numeric": numeric,
    }
    path = _path(output_dir(), notebook)
    path.parent.mkdir(parents=True, exist_ok=True)
    tables = json.loads(path.read_text()) if path.is_file() else []
    tables = [t for t in tables if t.get("key") != key] + [entry]
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(tables, indent=1) + "\n")
    tmp.replace(path)
    return Table(
        entry["columns"], text, numeric=numeric, folded=f"{title} ({source}): the paper beside ours"
    )


def load_paper_tables(out_dir: str | os.PathLike) -> list[dict]:
    """Every table saved by :func:`paper_table` under ``out_dir``, by notebook then key order."""
    out: list[dict] = []
    for p in sorted((Path(out_dir) / "results").glob("_paper_*.json")):
        try:
            out += [t for t in json.loads(p.read_text()) if isinstance(t, dict)]
        except (OSError, ValueError):
            continue
    return out


def paper_tables_html(t: dict) -> str:
    """One saved table, folded, for the index."""
    head = "".join(f"<th>{math_html(c)}</th>" for c in t.get("columns", []))
    numeric = t.get("numeric") or [False] * len(t.get("columns", []))
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{html.escape(v)}</td>' if n else f"<td>{html.escape(v)}</td>"
            for v, n in zip(r, numeric, strict=False)
        )
        + "</tr>"
        for r in t.get("rows", [])
    )
    summary = (
        f"{math_html(t.get('title', ''))} ({html.escape(t.get('source', ''))}): the paper's "
        f"numbers beside ours, {len(t.get('rows', []))} rows"
    )
    return (
        f'<details class="ptab"><summary>{summary}</summary><table class="pfn-table">'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>"
    )


#: (published metric, our column) of the two supplementary tables.
_METRICS = (("crps", "CRPS"), ("cov50", "cov50"), ("cov90", "cov90"), ("cov95", "cov95"))


def published_beside(frame, published_rows: Sequence[dict]) -> tuple[list[str], list[list]]:
    """Columns and rows of a reproduced table (``frame``: a DataFrame with ``n'``, ``model`` =
    ``"L=<L>"``, ``CRPS``, ``cov50``, ``cov90``, ``cov95`` and optionally ``lengthscale``) beside
    the published cells (``published_rows``: dicts with ``n_prime``, ``L``, ``crps``, ``cov50``,
    ``cov90``, ``cov95`` and optionally ``lengthscale``), one row per published cell and depth;
    ours is None where the run is not on disk."""
    ours = {}
    for rec in frame.to_dict("records") if len(frame) else []:
        model = str(rec.get("model", ""))
        if not model.startswith("L="):
            continue
        ours[(rec.get("lengthscale"), int(rec["n'"]), int(model[2:]))] = rec
    has_ell = any("lengthscale" in p for p in published_rows)
    columns = (["ℓ"] if has_ell else []) + ["n'", "L"]
    for _, name in _METRICS:
        columns += [f"{name} paper", f"{name} ours"]
    rows = []
    for p in published_rows:
        o = ours.get((p.get("lengthscale"), int(p["n_prime"]), int(p["L"])), {})
        row: list = ([p.get("lengthscale")] if has_ell else []) + [int(p["n_prime"]), int(p["L"])]
        for m, name in (
            ("crps", "CRPS"),
            ("cov50", "cov50"),
            ("cov90", "cov90"),
            ("cov95", "cov95"),
        ):
            row += [p[m], o.get(name)]
        rows.append(row)
    return columns, rows


def pretraining_beside(experiments: Sequence) -> tuple[list[str], list[list]]:
    """Columns and rows of the pretraining hyperparameters (supp-tab:pretraining hyperparameters):
    per experiment and trained model kind, the paper's base learning rate, steps ``N`` and batch
    size (its ``paper``-scale specs, transcribed from that table) beside ours (the ``cpu`` scale).
    ``experiments``: experiment definitions with ``name`` and ``runs(scale)``."""

    def kinds(exp, scale_name: str) -> dict[tuple, Any]:
        out: dict[tuple, Any] = {}
        for s in exp.runs(scale_name):
            model = getattr(s, "model", None)
            if model is None:
                continue
            key = (s.task.kind, model.mode, "TF^pr" if getattr(model, "normalised", 0) else "TF")
            out.setdefault(key, s)
        return out

    columns = ["experiment", "task", "model", "LR paper", "LR ours", "N paper", "N ours", "batch"]
    rows = []
    for exp in experiments:
        paper, ours = kinds(exp, "paper"), kinds(exp, "cpu")
        for key, p in paper.items():
            o = ours.get(key) or next((v for k, v in ours.items() if k[:2] == key[:2]), None)
            lr = f"{o.lr:g} ({o.lr_units})" if o is not None else None
            rows.append(
                [
                    exp.name,
                    f"{key[0]} ({key[1]})",
                    key[2],
                    f"{p.lr:g}",
                    lr,
                    int(p.steps),
                    None if o is None else int(o.steps),
                    f"{p.batch_size}"
                    + ("" if o is None or o.batch_size == p.batch_size else f" / {o.batch_size}"),
                ]
            )
    return columns, rows
