"""``pfntheory report``: execute the notebooks and build ``reports/index.html``."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from pfntheory.cli.options import add_walker_options
from pfntheory.pipelines.report_run import run_report
from pfntheory.report.spec import REPORT_SCALES

__all__ = ["register", "main"]

_DESCRIPTION = (
    "Execute every notebook under notebooks/ (jupytext sources), write one HTML page per "
    "notebook and reports/index.html (one row per paper result, verdicts by kind). "
    "Any cell error fails the command. Reads the committed runs; trains nothing unless "
    "--retrain. Writes into the committed reports/ unless --out DIR; a rebuild there that would "
    "turn committed rows into pending ones (the Walker Lake data or a run directory missing) "
    "refuses before it starts and says what to supply."
)


def _report_scale(value: str) -> str:
    """argparse type of ``--scale``: the notebooks' own sizes."""
    if value == "cpu":
        raise argparse.ArgumentTypeError(
            "cpu is a scale of the trained runs, not of the notebooks: every notebook reads the "
            "committed cpu runs at either report scale; use quick (default) or paper"
        )
    if value not in REPORT_SCALES:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(REPORT_SCALES)}, got {value!r}")
    return value


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--retrain",
        action="store_true",
        help="first run every experiment's sweep and the case studies (trains what is "
        "missing, resumes what was killed; delete a run directory to redo it)",
    )
    p.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="execute only this notebook (name or unique prefix, e.g. 01); repeatable",
    )
    p.add_argument(
        "--timeout",
        type=int,
        default=600,
        metavar="S",
        help="per-cell time limit in seconds (default 600)",
    )
    p.add_argument(
        "--scale",
        type=_report_scale,
        default="quick",
        metavar="{quick,paper}",
        help="the notebooks' own sizes (default quick); the committed cpu runs are read at both",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="report folder (default: the committed reports/)",
    )
    add_walker_options(p)
    p.add_argument(
        "--notebooks",
        default=None,
        metavar="DIR",
        help="execute the jupytext sources in DIR instead of notebooks/ (for testing)",
    )
    p.set_defaults(func=_cmd)


def _check_only(only) -> None:
    """Each ``--only NAME`` names one notebook of the report (its name or a unique prefix); the
    error names the option as typed."""
    from pfntheory.report.spec import NOTEBOOKS

    names = [s.name for s in NOTEBOOKS]
    for name in only or ():
        if not name.strip():
            raise ValueError("--only must not be empty (a notebook name or a prefix such as 01)")
        hits = [n for n in names if n == name] or [n for n in names if n.startswith(name)]
        if len(hits) > 1:
            raise ValueError(
                f"--only {name}: {len(hits)} notebook names start with {name!r} "
                f"({', '.join(hits)}); type more of one"
            )
        if not hits:
            raise ValueError(
                f"--only {name}: no notebook name is or starts with {name!r} (the notebooks: "
                f"{', '.join(names)}; a unique prefix such as 01 will do)"
            )


def _cmd(args: argparse.Namespace) -> int:
    from pfntheory.casestudy.data import WALKER_CSV_ENV, WALKER_EXH_CSV_ENV
    from pfntheory.infra.runs import temporary_environ

    if args.notebooks is None:  # another folder (--notebooks) holds other names
        _check_only(args.only)

    env = {}  # the notebook kernels read the Walker Lake paths from the environment
    for var, path in ((WALKER_CSV_ENV, args.walker_csv), (WALKER_EXH_CSV_ENV, args.walker_exh_csv)):
        if path is not None:
            if not Path(path).is_file():
                opt = "--walker-csv" if var == WALKER_CSV_ENV else "--walker-exh-csv"
                raise ValueError(f"{opt} {path}: no such file")
            env[var] = str(Path(path).resolve())
    with temporary_environ(env):
        return run_report(
            args.only,
            retrain_runs=args.retrain,
            timeout=args.timeout,
            scale_=args.scale,
            out_dir=args.out,
            notebooks_dir=args.notebooks,
        )


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``report`` sub-command to a CLI's ``subparsers``; it sets ``func``
    (returns exit code).

    Usage in a CLI: ``args = parser.parse_args(); sys.exit(args.func(args))``.
    """
    p = subparsers.add_parser(
        "report",
        help="execute the notebooks and build reports/index.html",
        description=_DESCRIPTION,
    )
    _add_arguments(p)
    return p


def main(argv: Iterable[str] | None = None) -> int:
    """``python -m pfntheory.cli.report [options]``: ``pfntheory report``, with the same options and
    the same error boundary (one line, never a traceback: :func:`pfntheory.cli.main`)."""
    import sys

    from pfntheory.cli import main as cli_main

    return cli_main(["report", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
