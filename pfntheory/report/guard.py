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

from pfntheory.infra.runs import CorruptFileError

from .rows import PENDING
from .spec import DEFAULT_OUT, ROOT

__all__ = [
    "WALKER_LABELS",
    "writes_committed",
    "committed_rows",
    "rebuild_blockers",
    "measured_rows",
    "degraded",
    "result_rows",
]

#: The labels whose rows read the Walker Lake data.
WALKER_LABELS = ("fig:walker",)


def writes_committed(out_dir: str | os.PathLike | None) -> bool:
    """Whether a report written to ``out_dir`` (None: the default) lands in the committed
    ``reports/`` of this checkout."""
    if out_dir is None:
        return True
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir must be a path or None, got {type(out_dir).__name__}")
    return Path(out_dir).resolve() == DEFAULT_OUT.resolve()


def committed_rows(out_dir: str | os.PathLike, notebook: str) -> list[dict]:
    """The rows of ``results/<notebook>.json`` under ``out_dir`` ([] when there is none).

    Raises
    ------
    CorruptFileError
        The file exists but is no results document (unreadable, not UTF-8 JSON, or without a list
        of rows that are objects), naming it: a corrupt committed file is never read as "nothing
        committed", which would leave its rows unprotected.
    """
    path = Path(out_dir) / "results" / f"{notebook}.json"
    if not path.exists():
        return []
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError) as err:  # unreadable, not UTF-8, not JSON
        raise CorruptFileError(
            f"{path} is not a readable results file (corrupted or truncated?): {err}"
        ) from err
    rows = doc.get("rows") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise CorruptFileError(f"{path} is not a results file: it holds no list of rows")
    return list(rows)


def result_rows(rows, name: str) -> list[dict]:
    """``rows`` as a list of result rows (dicts), else a TypeError naming ``name``."""
    if isinstance(rows, (str, bytes, dict)) or not isinstance(rows, Iterable):
        raise TypeError(f"{name} must be a list of result rows (dicts), got {type(rows).__name__}")
    out = list(rows)
    for r in out:
        if not isinstance(r, dict):
            raise TypeError(f"{name} must hold result rows (dicts), got a {type(r).__name__}")
    return out


def measured_rows(rows: Iterable[dict]) -> int:
    """How many of ``rows`` (result rows: dicts) carry a verdict (every row that is not
    "pending")."""
    return sum(1 for r in result_rows(rows, "rows") if r.get("verdict", PENDING) != PENDING)


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
    nothing): the measured Walker Lake rows when ``walker_available()`` is false, (``runs``)
    the measured rows whose run directories (relative to ``root``) are absent, and each committed
    results file that cannot be read (:func:`committed_rows`), by its name: what it protects is
    unknown, so the rebuild stops until it is restored."""
    root = Path(root)
    walker_rows: dict[str, int] = {}
    missing: dict[str, set[str]] = {}
    corrupt: list[str] = []
    for nb in notebooks:
        try:
            rows = committed_rows(out_dir, nb)
        except CorruptFileError as err:
            corrupt.append(str(err))
            continue
        for r in rows:
            if r.get("verdict", PENDING) == PENDING:
                continue
            if r.get("label") in WALKER_LABELS:
                walker_rows[nb] = walker_rows.get(nb, 0) + 1
            for p in _run_paths(r) if runs else ():
                if not (root / p).exists():
                    missing.setdefault(nb, set()).add(p)
    out = [
        f"{c}: restore it (git checkout -- reports/results) before rebuilding, or write the "
        "report elsewhere"
        for c in corrupt
    ]
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
    before, after = result_rows(before, "before"), result_rows(after, "after")
    return measured_rows(after) < measured_rows(before)
