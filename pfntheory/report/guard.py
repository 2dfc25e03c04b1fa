"""Writing into the committed ``reports/`` is explicit: a rebuild that would lose or degrade
committed rows refuses before it executes anything, and a notebook that records fewer measured rows
than the committed page is put back as it was.

What a committed row needs, read from the row itself (``results/<notebook>.json``): the run
directories it names (``run_states``, ``run_dir``) and, for the Walker Lake rows, the Walker Lake
CSVs, which live outside the repository. When one is missing on this machine the rebuild would turn
measured rows into "pending" ones; :func:`rebuild_blockers` names what is missing and how to supply
it, in one line per cause.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from .rows import PENDING
from .spec import DEFAULT_OUT, ROOT

__all__ = [
    "WALKER_LABELS",
    "writes_committed",
    "committed_rows",
    "rebuild_blockers",
    "measured_rows",
    "degraded",
]

#: The labels whose rows read the Walker Lake data.
WALKER_LABELS = ("fig:walker",)


def writes_committed(out_dir: str | os.PathLike | None) -> bool:
    """Whether a report written to ``out_dir`` (None: the default) lands in the committed
    ``reports/`` of this checkout."""
    if out_dir is None:
        return True
    return Path(out_dir).resolve() == DEFAULT_OUT.resolve()


def committed_rows(out_dir: str | os.PathLike, notebook: str) -> list[dict]:
    """The rows of ``results/<notebook>.json`` under ``out_dir`` ([] when there is none)."""
    path = Path(out_dir) / "results" / f"{notebook}.json"
    if not path.is_file():
        return []
    try:
        return list(json.loads(path.read_text()).get("rows", []))
    except (OSError, ValueError, AttributeError):
        return []


def measured_rows(rows: Iterable[dict]) -> int:
    """How many of ``rows`` carry a verdict (every row that is not "pending")."""
    return sum(1 for r in rows if r.get("verdict", PENDING) != PENDING)


def _run_paths(row: dict) -> set[str]:
    """The repository paths of the runs a row read: its ``run_states`` and the entries of its
    ``run_dir`` that are paths (a bare run name, as some claims record, names no place)."""
    paths = set(row.get("run_states") or {})
    paths.update(p.strip() for p in (row.get("run_dir") or "").split(",") if "/" in p.strip())
    return paths


def rebuild_blockers(
    out_dir: str | os.PathLike,
    notebooks: Iterable[str],
    *,
    walker_available: Callable[[], bool],
    runs: bool = True,
    root: str | os.PathLike = ROOT,
) -> list[str]:
    """What a rebuild of ``notebooks`` into ``out_dir`` would lose, one line per cause ([] when
    nothing): the measured Walker Lake rows when ``walker_available()`` is false, and (``runs``)
    the measured rows whose run directories (relative to ``root``) are absent."""
    root = Path(root)
    walker_rows: dict[str, int] = {}
    missing: dict[str, set[str]] = {}
    for nb in notebooks:
        for r in committed_rows(out_dir, nb):
            if r.get("verdict", PENDING) == PENDING:
                continue
            if r.get("label") in WALKER_LABELS:
                walker_rows[nb] = walker_rows.get(nb, 0) + 1
            for p in _run_paths(r) if runs else ():
                if not (root / p).exists():
                    missing.setdefault(nb, set()).add(p)
    out = []
    if walker_rows and not walker_available():
        where = ", ".join(f"{n} rows of {nb}" for nb, n in walker_rows.items())
        out.append(
            f"the Walker Lake data is not found, and {where} read it: pass --walker-csv PATH "
            "(and --walker-exh-csv PATH unless walker_exh.csv sits beside it) or set "
            "$PFNTHEORY_WALKER_CSV"
        )
    for nb, paths in missing.items():
        first = sorted(paths)[0]
        out.append(
            f"{len(paths)} run director{'y' if len(paths) == 1 else 'ies'} that rows of {nb} read "
            f"{'is' if len(paths) == 1 else 'are'} missing (e.g. {first}): restore them "
            "(git checkout -- reports/runs reports/casestudy) or retrain them (--retrain)"
        )
    return out


def degraded(before: Iterable[dict], after: Iterable[dict]) -> bool:
    """Whether ``after`` (a rebuilt notebook's rows) measures fewer rows than ``before``."""
    return measured_rows(after) < measured_rows(before)
