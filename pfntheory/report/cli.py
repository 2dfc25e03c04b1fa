"""``pfntheory report``: execute the notebooks and build ``reports/index.html``."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from .execute import run_report
from .spec import SCALES

__all__ = ["register", "main"]

_DESCRIPTION = (
    "Execute every notebook under notebooks/ (jupytext sources), write one HTML page per "
    "notebook and reports/index.html (one row per paper result, verdicts by kind). "
    "Any cell error fails the command. Reads the committed runs; trains nothing unless "
    "--retrain."
)


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
        choices=SCALES,
        default="quick",
        help="sizes used by the notebooks and which runs they read (default quick)",
    )
    p.add_argument("--out", default=None, metavar="DIR", help="report folder (default reports/)")
    p.add_argument(
        "--notebooks",
        default=None,
        metavar="DIR",
        help="execute the jupytext sources in DIR instead of notebooks/ (for testing)",
    )
    p.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
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
    """``python -m pfntheory.report [options]`` (the same options as ``pfntheory report``)."""
    parser = argparse.ArgumentParser(prog="python -m pfntheory.report", description=_DESCRIPTION)
    _add_arguments(parser)
    args = parser.parse_args(None if argv is None else list(argv))
    return args.func(args)
