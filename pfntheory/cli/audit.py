"""``pfntheory audit``: the paper's diagnostics for a trained run or a ``pfns`` model (issue 50).

``pfntheory audit RUN_DIR`` audits a run of the project (its task, bins and pretraining range);
``pfntheory audit --pfns MODEL.pt --task rbf --d 2 --pretraining-range 64 128`` audits a
``pfns`` transformer saved whole with ``torch.save`` (needs the optional ``audit-pfns`` extra).
Both are scored by :func:`pfntheory.nn.audit.audit` on each design of ``--designs`` (default: the
task's N(0, I/d) and the covariate shift); read-only, the document is printed and written to
``--out FILE`` when given.
"""

from __future__ import annotations

import json

from pfntheory.infra.config import COVARIATES, TASK_KINDS
from pfntheory.infra.tree import EVAL_ORACLES, EVAL_SEED

from .options import (
    LIMITS,
    add_run_options,
    check_attention_size,
    context_size,
    int_in,
    positive_float,
)

__all__ = ["register"]

#: Columns of the printed table (the document holds every metric).
_COLUMNS = (
    ("tv", "E[TV]"),
    ("tv_floor", "floor"),
    ("nll", "NLL"),
    ("nll_exact", "NLL*"),
    ("crps", "CRPS"),
    ("crps_exact", "CRPS*"),
    ("coverage_50", "cov50"),
    ("coverage_90", "cov90"),
    ("width_90_ratio", "w90/w90*"),
)


def _model(args):
    """``(RunModel-like audit callable, task, edges, pretraining range, label)`` of the options."""
    from pathlib import Path

    if args.pfns is None:
        if args.run_dir is None:
            raise ValueError("RUN_DIR or --pfns MODEL is required")
        for opt, v in (("--task", args.task), ("--d", args.d)):
            if v is not None:
                raise ValueError(f"{opt} applies only with --pfns (a run carries its task)")
        from pfntheory.nn.audit import run_model

        rm = run_model(args.run_dir, args.device)
        return rm.predict, rm.task, rm.edges, rm.pretraining_range, rm.name
    if args.run_dir is not None:
        raise ValueError("give RUN_DIR or --pfns MODEL, not both")
    if args.task is None or args.d is None or args.pretraining_range is None:
        raise ValueError("--pfns needs --task, --d and --pretraining-range")
    path = Path(args.pfns)
    if not path.is_file():
        raise FileNotFoundError(f"--pfns {path}: no such file")
    import importlib.util

    if importlib.util.find_spec("pfns") is None:  # torch.load of the model would need it
        raise ValueError("--pfns needs the PFNs library: pip install 'pfntheory[audit-pfns]'")
    import torch

    from pfntheory.infra.config import TaskSpec
    from pfntheory.maths.discretize import bin_edges
    from pfntheory.nn.audit_pfns import pfns_model
    from pfntheory.nn.priors import calibrate_task_interval

    task = TaskSpec(kind=args.task, d=args.d, noise_var=args.noise_var)
    lo, hi = args.pretraining_range
    if lo > hi:
        raise ValueError(f"--pretraining-range must have n_min <= n_max, got {lo} {hi}")
    edges = bin_edges(*calibrate_task_interval(task, lo, hi), args.C)
    net = torch.load(path, map_location="cpu", weights_only=False)
    return pfns_model(net, edges=edges), task, edges, (lo, hi), path.name


def format_audit(docs: dict) -> str:
    """One table per design: a row per n' (with its place relative to the pretraining range)."""
    lines = []
    for design, doc in docs.items():
        lines.append(
            f"{doc['model']}: {doc['output']} on {doc['C']} bins of ({doc['interval'][0]:.3f}, "
            f"{doc['interval'][1]:.3f}], design {design}, {doc['n_instances']} instances "
            f"(* = exact PPD)"
        )
        lines.append(f"{'n_eval':>7} {'range':>7} " + " ".join(f"{h:>9}" for _, h in _COLUMNS))
        for n, r in doc["results"].items():
            cells = " ".join(f"{r[k]:9.4f}" for k, _ in _COLUMNS)
            lines.append(f"{n:>7} {r['range']:>7} {cells}")
    return "\n".join(lines)


def _run_audit(args) -> int:
    from pfntheory.infra.tree import EvalSpec

    check_attention_size(args.batch_size, max(args.n_eval), "--batch-size/--n-eval")
    predict, task, edges, rng, label = _model(args)
    from pfntheory.nn.audit import audit

    docs = {}
    for design in args.designs:
        spec = EvalSpec(
            tuple(args.n_eval),
            n_instances=args.n_instances,
            seed=args.seed,
            covariates=None if design == task.covariates else design,
            oracle=args.oracle,
        )
        docs[design] = audit(
            predict,
            task,
            spec,
            edges=edges,
            pretraining_range=rng,
            batch_size=args.batch_size,
            label=label,
        )
    if args.out_file is not None:
        from pfntheory.infra import runs

        runs.save_json(args.out_file, docs)
    print(json.dumps(docs, indent=1) if args.json else format_audit(docs))
    return 0


def register(sub) -> None:
    """Add ``audit``."""
    p = sub.add_parser(
        "audit",
        help="the paper's diagnostics for any PFN against the exact PPD",
        description="Score a trained run of the project (RUN_DIR) or a pfns transformer (--pfns "
        "MODEL.pt, saved whole with torch.save) against the exact PPD on the project's "
        "evaluation instances: E[TV] on the common bins, NLL and CRPS beside the exact PPD's, "
        "50/90%% coverage and width ratio, at each n' (inside or beyond the pretraining range), "
        "on each design. Read-only.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", nargs="?", default=None)
    p.add_argument("--pfns", metavar="MODEL", default=None, help="a pfns model saved whole")
    p.add_argument("--task", choices=TASK_KINDS, default=None, help="with --pfns: the prior")
    p.add_argument("--d", type=int_in(1, LIMITS["d"]), default=None, help="with --pfns")
    p.add_argument(
        "--noise-var", type=positive_float, default=0.04, help="with --pfns: the noise variance"
    )
    p.add_argument(
        "--pretraining-range",
        type=context_size,
        nargs=2,
        metavar=("N_MIN", "N_MAX"),
        default=None,
        help="with --pfns: the model's pretraining range (sets the bins' interval)",
    )
    p.add_argument("--C", type=int_in(2, LIMITS["C"]), default=256, help="with --pfns: bins")
    p.add_argument("--n-eval", type=context_size, nargs="+", required=True)
    p.add_argument("--n-instances", type=int_in(2, LIMITS["n_instances"]), default=512)
    p.add_argument("--designs", choices=COVARIATES, nargs="+", default=list(COVARIATES))
    p.add_argument("--batch-size", type=int_in(1, LIMITS["batch_size"]), default=512)
    p.add_argument("--oracle", choices=EVAL_ORACLES, default="float64")
    add_run_options(p, seed=EVAL_SEED, device="cpu", progress=False)
    p.add_argument("--out", dest="out_file", metavar="FILE", default=None)
    p.add_argument("--json", action="store_true", help="print the JSON document")
    p.set_defaults(func=_run_audit)
