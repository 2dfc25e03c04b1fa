"""Maintenance commands of the report, formerly ``python -m`` entry points of
:mod:`pfntheory.report`:

* ``pfntheory tallies [--write | --check] [--out DIR]``: regenerate or check the counts README.md
  and docs/findings.md state (:mod:`pfntheory.report.tallies`); ``--check`` exits 1 when a passage
  is stale (the release workflow's check);
* ``pfntheory numbering PAPER.tex``: print ``PAPER_NUMBERS`` of the paper's LaTeX source
  (:func:`pfntheory.report.numbering.number_labels`);
* ``pfntheory screens PAGE.html ...``: page lengths in screens in headless Chromium
  (:func:`pfntheory.report.screens.measure_pages`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .options import int_in

__all__ = ["register"]


def _tallies(args: argparse.Namespace) -> int:
    from pfntheory.report import tallies
    from pfntheory.report.spec import ROOT

    out = args.report_dir
    if out is not None and not (Path(out) / "results").is_dir():
        raise ValueError(f"--out {out}: not a report folder (no results/ folder in it)")
    if args.write:
        for path in tallies.write(out_dir=out):
            print(f"rewrote {path.relative_to(ROOT)}")
        return 0
    rows = tallies.load_rows(out)
    bad = 0
    for name in tallies.DOCUMENTS:
        for spec, old, new in tallies.stale((ROOT / name).read_text(), rows):
            bad += 1
            print(f"{name}: stale passage {spec!r}:\n  written:   {old}\n  generated: {new}")
    commits = {c for cs in tallies.page_commits(out).values() for c in cs}
    if len(commits) > 1:
        print(f"note: the pages name {len(commits)} commits ({', '.join(sorted(commits))})")
    if not bad:
        print("generated passages: current")
    return 1 if bad and args.check else 0


def _numbering(args: argparse.Namespace) -> int:
    from pfntheory.report.numbering import number_labels

    paper = args.paper
    if not paper.is_file():
        what = "is a directory" if paper.is_dir() else "no such file"
        raise ValueError(f"PAPER.tex {paper}: {what}")
    try:
        text = paper.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"PAPER.tex {paper}: not UTF-8 text (byte {err.start}); a LaTeX source?"
        ) from None
    numbers = number_labels(text)
    if not numbers:
        raise ValueError(f"PAPER.tex {paper}: no numbered \\label{{}} in it; a LaTeX source?")
    print("PAPER_NUMBERS: dict[str, str] = {")
    for label, number in numbers.items():
        print(f"    {label!r}: {number!r},")
    print("}")
    return 0


def _screens(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from pfntheory.report.screens import measure_pages

    res = measure_pages(args.pages, args.width, args.height)
    if args.json:
        print(json.dumps([asdict(r) for r in res], indent=1))
        return 0
    print(f"{'page':44s} {'screens':>8s} {'height':>7s} {'images':>6s} broken errors")
    for r in res:
        print(
            f"{Path(r.path).name:44s} {r.screens:8.1f} {r.document_height:7d} {r.images:6d}"
            f" {len(r.broken_images):6d} {len(r.console_errors):6d}"
        )
        for err in r.console_errors:
            print(f"    console error: {err}")
        for b in r.broken_images:
            print(f"    broken image: {b}")
    return 0


def register(sub) -> None:
    """Add ``tallies``, ``numbering`` and ``screens``."""
    p = sub.add_parser(
        "tallies",
        help="regenerate (--write) or check (--check) the counts README.md and findings state",
        description="Regenerate (--write) or check (--check) the counts README.md and "
        "docs/findings.md state, from reports/results/*.json; --check exits 1 if a passage is "
        "stale.",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the stale passages")
    mode.add_argument("--check", action="store_true", help="exit 1 if a passage is stale")
    p.add_argument(
        "--out", dest="report_dir", default=None, help="report folder to read (default: reports/)"
    )
    p.set_defaults(func=_tallies)

    p = sub.add_parser(
        "numbering",
        help="print PAPER_NUMBERS of the paper's LaTeX source",
        description="Print PAPER_NUMBERS of the paper's LaTeX source, to paste into "
        "pfntheory/report/labels.py.",
    )
    p.add_argument("paper", type=Path, metavar="PAPER.tex", help="the paper's LaTeX source")
    p.set_defaults(func=_numbering)

    p = sub.add_parser(
        "screens",
        help="page lengths in screens in headless Chromium",
        description="Page length in screens (document height / viewport height) in headless "
        "Chromium, with console errors and broken images.",
    )
    p.add_argument("pages", nargs="+", help="HTML files to measure")
    p.add_argument(
        "--width", type=int_in(1, 100_000), default=1024, help="viewport width, CSS px (1024)"
    )
    p.add_argument(
        "--height", type=int_in(1, 100_000), default=768, help="viewport height, CSS px (768)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON list instead of a table")
    p.set_defaults(func=_screens)
