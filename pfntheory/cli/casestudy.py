"""``pfntheory casestudy sacramento|walker``: the command line of the real-data case studies.

Parses the options and hands them to :func:`pfntheory.pipelines.casestudy_run.run_casestudy`
(imported when the command runs, so that building the parser imports neither torch nor the
pipeline).
"""

from __future__ import annotations

import argparse
import json

from pfntheory.casestudy.data import DATASETS
from pfntheory.cli.options import add_run_options, add_walker_options, pick, show_progress
from pfntheory.infra.config import CASESTUDY_SCALES

__all__ = ["register"]


def _run_cli(args) -> int:
    from pfntheory.pipelines.casestudy_run import run_casestudy, run_casestudy_budget

    options = ("walker_csv", "walker_exh_csv", "seed", "grid_stride", "device")
    if args.budget_factor is not None and not args.budget_doubling:
        raise ValueError(
            "--budget-factor applies only with --budget-doubling (without it the case study "
            "trains one run and the factor would be ignored)"
        )
    if args.dataset == "walker":  # missing data first: no other fix helps without it
        _check_walker_data(args.walker_csv, args.walker_exh_csv)
    else:
        for opt, v in (
            ("--walker-csv", args.walker_csv),
            ("--walker-exh-csv", args.walker_exh_csv),
        ):
            if v is not None:
                raise ValueError(f"{opt} applies only to the walker case study, not {args.dataset}")
    if args.out_dir is None and not args.budget_doubling:
        _refuse_replacing_committed(args.dataset, args.scale)
    if args.budget_doubling:
        out = run_casestudy_budget(
            args.dataset,
            args.scale,
            args.out_dir,
            2 if args.budget_factor is None else args.budget_factor,
            progress=show_progress(args),
            **pick(args, *options),
        )
        print(json.dumps({steps: r["summary"] for steps, r in out.items()}, indent=1))
        return 0
    res = run_casestudy(
        args.dataset,
        args.scale,
        args.out_dir,
        progress=show_progress(args),
        **pick(args, *options),
    )
    print(json.dumps(res["summary"], indent=1))
    return 0


def _check_walker_data(walker_csv, walker_exh_csv) -> None:
    """The Walker Lake CSVs exist, before any other check: a path given as an option that names no
    file says so with the option; a missing default says where it was looked for and how to pass
    one (:func:`pfntheory.casestudy.data.walker_csv_path`)."""
    from pathlib import Path

    from pfntheory.casestudy.data import walker_csv_path, walker_exh_csv_path

    for opt, v in (("--walker-csv", walker_csv), ("--walker-exh-csv", walker_exh_csv)):
        if v is not None and not Path(v).expanduser().is_file():
            raise FileNotFoundError(f"{opt} {v}: no such file")
    walker_exh_csv_path(walker_exh_csv, walker_csv_path(walker_csv))


def _refuse_replacing_committed(dataset: str, scale: str) -> None:
    """A run into the committed ``reports/casestudy/<dataset>/`` at another scale than the results
    there would replace them (their ``results.json`` and maps): refuse, naming ``--out-dir``."""
    from pathlib import Path

    res = Path(__file__).resolve().parents[2] / "reports" / "casestudy" / dataset / "results.json"
    try:
        committed = json.loads(res.read_text()).get("scale")
    except (OSError, ValueError, AttributeError):
        return
    if committed and committed != scale:
        raise ValueError(
            f"reports/casestudy/{dataset}/ holds the committed {committed}-scale results; a "
            f"{scale}-scale run would replace them: pass --out-dir DIR to write elsewhere, or "
            f"--scale {committed} to resume the committed one"
        )


_HELP = "real-data case studies (fig:sacramento, fig:walker)"
_DESCRIPTION = (
    "EB GP fit, PFN pretraining on the fitted prior (resumable), PFN-vs-GP maps and numbers into "
    "reports/casestudy/<dataset>/ (supp-sec:real data)."
)


def register(subparsers) -> argparse.ArgumentParser:
    """Add ``pfntheory casestudy sacramento|walker [--scale quick|cpu|paper]
    [--walker-csv PATH]``."""
    p = subparsers.add_parser("casestudy", help=_HELP, description=_DESCRIPTION)
    p.add_argument("dataset", choices=DATASETS)
    p.add_argument(
        "--scale",
        choices=CASESTUDY_SCALES,
        default="quick",
        help="PFN sizes and budget (pfntheory.casestudy.pfn.SCALES): quick (minutes), cpu (the "
        "paper's L=32, C=256, 1000 steps; about half an hour of one core), paper (1e5 steps)",
    )
    add_walker_options(p)
    p.add_argument("--out-dir", default=None, help="default reports/casestudy/<dataset>")
    p.add_argument(
        "--budget-doubling",
        action="store_true",
        help="train the scale's PFN weight-averaged at its steps S and at 2S, each into "
        "<out-dir>/budget-s<steps>, and gate the claims by budget doubling (docs/verdicts.md)",
    )
    p.add_argument(
        "--budget-factor",
        type=int,
        choices=(2, 4),
        default=None,
        metavar="K",
        help="with --budget-doubling: train at S and K*S steps, K in {2, 4} (default 2; K=4 after "
        "2 adds the doubling 2S -> 4S, which the page then reads; the page pairs no other K)",
    )
    p.add_argument("--grid-stride", type=int, default=1, help="Walker Lake grid stride (1 = full)")
    add_run_options(p)
    p.set_defaults(func=_run_cli)
    return p
