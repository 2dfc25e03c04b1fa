"""``pfntheory evaluate`` and ``pfntheory compare``: read-only inspection of a trained run.

``evaluate`` scores the run against the exact PPD at evaluation sizes n' (sec:sims, Inference) and
prints its learning curve; ``compare`` sets the learned weights beside the construction of
thm:TFdoPPD (supp-eqn:weights). Neither writes in the run directory.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

from pfntheory.infra.config import COVARIATES
from pfntheory.infra.convergence import METRICS
from pfntheory.infra.tree import EVAL_ORACLES, EVAL_SEED, EvalSpec

from .options import (
    LIMITS,
    add_run_options,
    check_attention_size,
    context_size,
    int_in,
    path_problem,
    pick,
    show_progress,
)

__all__ = ["register", "format_evaluation", "format_comparison"]


#: The subcommands that read a trained run in their positional ``RUN_DIR``: (help, description).
_RUN_DIR_COMMANDS = {
    "evaluate": (
        "evaluate a trained run against the exact PPD",
        "Evaluate a run at evaluation sizes n' (sec:sims, Inference) and print a table of the "
        "results. Read-only: nothing is written unless --out FILE is given (the sweeps write "
        "a run's eval.json).",
    ),
    "compare": (
        "trained weights beside the construction of thm:TFdoPPD",
        "Learned feature scales, step sizes and readout of a trained run beside the values "
        "supp-eqn:weights prescribes, and the distance of its (mu_L, tau_L) to the exact "
        "Richardson solver after the same depth, as a table. Each solver layer takes a "
        "Richardson step mu <- mu + eta (y - (G + sigma^2 I) mu) in two parts: 'eta (attention)' "
        "is the step on the kernel part G, read off the attention's value weight V_fy; 'eta "
        "(drift)' the step on the ridge part sigma^2 I, read off the drift weight S_ff (the "
        "residual term -eta sigma^2 mu added without attention). The construction uses one eta "
        "for both; a layer whose two differ solves with noise variance sigma^2 x eta (drift) / "
        "eta (attention). Read-only: nothing is written unless --out FILE is given.",
    ),
}


def _add_run_dir_command(sub, name: str):
    """A subcommand that reads the trained run in its positional ``RUN_DIR`` (evaluate, compare)."""
    help, description = _RUN_DIR_COMMANDS[name]
    p = sub.add_parser(name, help=help, description=description)
    p.add_argument("run_dir", metavar="RUN_DIR")
    return p


def _add_evaluate(sub) -> None:
    p = _add_run_dir_command(sub, "evaluate")
    p.add_argument(
        "--n-eval",
        type=context_size,
        nargs="+",
        help="evaluation sizes n' (required unless --curve-only)",
    )
    p.add_argument("--n-instances", type=int_in(2, LIMITS["n_instances"]), default=4096)
    p.add_argument(
        "--covariates",
        choices=COVARIATES,
        default=None,
        help="covariate shift (with --curve-only: the run's learning curve on that design)",
    )
    p.add_argument("--batch-size", type=int_in(1, LIMITS["batch_size"]), default=512)
    p.add_argument(
        "--oracle",
        choices=EVAL_ORACLES,
        default="float32",
        help="exact PPD: float32 factor refined to float64 accuracy (default; docs/speed.md), or "
        "float64 throughout (the committed eval.json)",
    )
    add_run_options(p, seed=EVAL_SEED, device="cpu", progress=True)
    p.add_argument(
        "--curve",
        choices=METRICS,
        default=None,
        help="metric of the run's learning curve printed after the evaluation (default tv; with "
        "--json it is printed, on stderr, only when this option is given)",
    )
    p.add_argument(
        "--curve-only",
        action="store_true",
        help="print the learning curve and its convergence status; evaluate nothing",
    )
    _add_output_options(
        p,
        "the evaluation (eval.json format with its producer: run, config, oracle, arithmetic; "
        "results of other n' already in FILE from the same producer and settings are kept, a "
        "FILE of another is refused)",
    )
    p.set_defaults(func=_run_evaluate)


def _add_output_options(p, what: str) -> None:
    """``--out FILE`` and ``--json`` of the read-only inspection commands (evaluate, compare)."""
    p.add_argument(
        "--out",
        dest="out_file",
        metavar="FILE",
        default=None,
        help=f"write {what} as JSON to FILE (default: write nothing)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON instead of the table: stdout holds one JSON document and nothing "
        "else, and stderr nothing but errors (no progress bar, no 'wrote FILE' line)",
    )


def _write_out(path: str, doc: dict, *, keep_results: bool = False, quiet: bool = False) -> None:
    """Write ``doc`` to ``--out`` ``path``; with ``keep_results``, results of other n' already in
    the file from the same producer (``doc["producer"]``: run, config, oracle, arithmetic) under the
    same settings are kept, and a file of another producer or settings is refused (never mixed
    under one header, never overwritten). The numbers have been printed before: a file that cannot
    be written is a one-line error that says so. ``quiet`` (``--json``): no "wrote FILE" line."""
    from pathlib import Path

    from pfntheory.infra import runs

    p = Path(path)
    if keep_results and p.is_file():
        try:
            old = runs.load_json(p)
        except runs.CorruptFileError:
            old = None
        settings = {k: v for k, v in doc.items() if k != "results"}
        if isinstance(old, dict) and all(old.get(k) == v for k, v in settings.items()):
            merged = {**old.get("results", {}), **doc["results"]}
            doc = {**doc, "results": dict(sorted(merged.items(), key=lambda kv: int(kv[0])))}
        elif isinstance(old, dict):  # another producer (run, oracle, arithmetic) or settings
            raise ValueError(
                f"--out {p} holds results of another producer ({_differs(old, doc)}); merging "
                "would mix them under one header: use another FILE or delete it (the numbers "
                "above were printed but not saved)"
            )
    try:
        runs.save_json(p, doc)
    except OSError as err:
        raise ValueError(
            f"{path_problem(p, '--out', err)}; it could not be written, so the numbers above "
            "were printed but not saved"
        ) from None
    if not quiet:
        print(f"wrote {p}", file=sys.stderr)


def _refuse_foreign_out(path: str, producer: dict) -> None:
    """Refuse an ``--out`` file that holds a readable evaluation of another producer."""
    from pathlib import Path

    from pfntheory.infra import runs

    p = Path(path)
    if not p.is_file():
        return
    try:
        old = runs.load_json(p)
    except runs.CorruptFileError:
        return  # unreadable: replaced by the new evaluation
    if isinstance(old, dict) and old.get("producer") != producer:
        raise ValueError(
            f"--out {p} holds results of another producer "
            f"({_differs(old, {'producer': producer})}); merging would mix them under one "
            "header: use another FILE or delete it"
        )


def _differs(old: dict, doc: dict) -> str:
    """Which producer fields (run, config, oracle, arithmetic) and settings differ, in words."""
    if not isinstance(old.get("producer"), dict):
        return "it names no producer"
    a, b = old["producer"], doc["producer"]
    keys = [f"producer {k}" for k in sorted(b) if a.get(k) != b[k]]
    keys += [k for k in sorted(doc) if k not in ("results", "producer") and old.get(k) != doc[k]]
    return "differs in " + ", ".join(keys)


def _producer(run_dir, oracle: str, device) -> dict:
    """What produced an evaluation written by ``--out``: the run (its directory name and the hash
    of its config.json), the oracle and the arithmetic of this process
    (:func:`pfntheory.nn.arithmetic.arithmetic`)."""
    from pfntheory.infra import runs
    from pfntheory.infra.tree import spec_hash
    from pfntheory.nn.arithmetic import arithmetic
    from pfntheory.nn.device import select_device
    from pfntheory.nn.state import read_config

    return {
        "run": run_dir.name,
        "config_sha256": spec_hash(runs.load_json(run_dir / runs.CONFIG), 16),
        "oracle": oracle,
        "arithmetic": arithmetic(read_config(run_dir), select_device(device)),
    }


def _compare_producer(run_dir, args) -> dict:
    """What produced a comparison written by ``compare --out``: the command, the run (its
    directory name and the hash of its config.json) and the arguments of the comparison. An
    ``evaluate --out`` producer names no command, so the two never share a file."""
    from pfntheory.infra import runs
    from pfntheory.infra.tree import spec_hash

    return {
        "command": "compare",
        "run": run_dir.name,
        "config_sha256": spec_hash(runs.load_json(run_dir / runs.CONFIG), 16),
        "n": args.n,
        "n_instances": args.n_instances,
        "seed": args.seed,
    }


def _num(v, digits: int = 4) -> str:
    """A number rounded to ``digits`` significant digits for a table ("-" for none)."""
    if v is None:
        return "-"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    return "nan" if math.isnan(x) else f"{x:#.{digits}g}".rstrip(".")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns under a header and a rule."""
    cols = [header, *rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cols]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_evaluation(doc: dict, n_eval: Sequence[int], run_dir) -> str:
    """The table ``pfntheory evaluate`` prints: one row per n', each metric beside the exact
    PPD's on the same instances, standard errors in brackets."""

    def pair(r, key, digits=4):
        own, exact = r.get(key), r.get(f"{key}_exact")
        return (
            _num(own, digits) if exact is None else f"{_num(own, digits)} ({_num(exact, digits)})"
        )

    rows = []
    for n in n_eval:
        r = doc["results"][str(n)]
        rows.append(
            [
                str(n),
                f"{_num(r.get('tv'))} +- {_num(r.get('tv_se'), 2)}",
                _num(r.get("mse_mean")),
                pair(r, "coverage_90", 3),
                pair(r, "width_90", 3),
                pair(r, "crps"),
                pair(r, "nll", 3),
            ]
        )
    head = (
        f"{run_dir}: {doc['n_instances']} instances per n' (seed {doc['seed']}), covariates "
        f"{doc['covariates']}; in brackets: the exact PPD on the same instances"
    )
    header = ["n'", "E[TV] +- SE", "MSE of mean", "90% coverage", "90% width", "CRPS", "NLL"]
    return head + "\n" + _table(header, rows)


def _print_learning_curve(run_dir, metric: str, file=None, covariates: str | None = None) -> None:
    """The run's learning curve (learning_curve.json, or with ``covariates`` its curve on that
    covariate design, learning_curve_<covariates>.json) and whether it has plateaued, or a line
    saying that the run has none (runs trained before learning curves existed, or no curve was
    recorded on that design)."""
    import sys

    file = file or sys.stdout
    from pfntheory.infra.convergence import plateau_status, trend_text
    from pfntheory.nn.train import format_learning_curve, read_learning_curve

    doc = read_learning_curve(run_dir, covariates)
    if doc is None:
        which = "" if covariates is None else f" on the {covariates} design"
        print(
            f"{run_dir}: no learning curve{which} (none was recorded in training): "
            "convergence unknown",
            file=file,
        )
        return
    print(format_learning_curve(doc, metric), file=file)
    print(trend_text(plateau_status(doc["points"], metric=metric)), file=file)


def _finished_run(run_dir: str):
    """A trained run directory whose artefacts are all readable; otherwise a one-line error."""
    from pathlib import Path

    from pfntheory.infra import runs

    path = Path(run_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is not a run directory")
    problems = runs.check_artefacts(path)
    if problems:
        raise runs.CorruptFileError(
            f"{path} is damaged ({'; '.join(problems.values())}); re-run the `pfntheory train` "
            f"command that made it, which redoes corrupt files"
        )
    return path


def _run_evaluate(args) -> int:
    import json
    import sys

    run_dir = _finished_run(args.run_dir)
    if args.curve_only:
        for opt, v in (("--n-eval", args.n_eval), ("--out", args.out_file)):
            if v is not None:
                raise ValueError(f"{opt} does not apply with --curve-only (it evaluates nothing)")
        _print_learning_curve(run_dir, args.curve or "tv", covariates=args.covariates)
        return 0
    if args.n_eval is None:
        raise ValueError("--n-eval is required unless --curve-only is given")
    check_attention_size(args.batch_size, max(args.n_eval), "--batch-size/--n-eval")
    producer = None
    if args.out_file is not None:  # refused before the work, not after it
        producer = _producer(run_dir, args.oracle, args.device)
        _refuse_foreign_out(args.out_file, producer)
    from pfntheory.nn.evaluate import evaluate

    spec = EvalSpec(**pick(args, "n_eval", "n_instances", "seed", "covariates", "oracle"))
    doc = evaluate(
        run_dir,
        spec,
        progress=show_progress(args) and not args.json,  # --json: stderr holds errors only
        save=False,  # read-only: the run's committed eval.json is never rewritten
        **pick(args, "batch_size", "device"),
    )
    n_eval = sorted(set(args.n_eval))
    if args.json:
        summary = {
            str(n): {
                k: round(v, 5)
                for k, v in doc["results"][str(n)].items()
                if k in ("tv", "tv_se", "mse_mean", "coverage_90", "crps", "crps_exact")
            }
            for n in n_eval
        }
        print(json.dumps(summary, indent=1))
    else:
        print(format_evaluation(doc, n_eval, run_dir))
    sys.stdout.flush()
    # under --json stdout stays one JSON document, and the curve goes to stderr only when asked
    if not args.json:
        _print_learning_curve(run_dir, args.curve or "tv")
    elif args.curve is not None:
        _print_learning_curve(run_dir, args.curve, file=sys.stderr)
    if args.out_file is not None:
        doc = {**doc, "producer": producer}
        _write_out(args.out_file, doc, keep_results=True, quiet=args.json)
    return 0


def _add_compare(sub) -> None:
    p = _add_run_dir_command(sub, "compare")
    p.add_argument(
        "--n", type=context_size, default=None, help="context size (default (n_min+n_max)//2)"
    )
    p.add_argument("--n-instances", type=int_in(1, 100_000), default=32)
    add_run_options(p, device=None, progress=False)
    _add_output_options(p, "the whole comparison (the format of a run's construction.json)")
    p.set_defaults(func=_run_compare)


def format_comparison(doc: dict, run_dir) -> str:
    """The tables ``pfntheory compare`` prints: per layer the learned feature scales and step
    sizes beside the construction's, then the readout's distances to the solver and the PPD."""
    import numpy as np

    eta = doc["eta"]
    scale = np.atleast_2d(np.asarray(doc["scale"]["learned"], dtype=float))
    prescribed = np.asarray(doc["scale"]["prescribed"], dtype=float)

    def spread(v) -> str:
        v = np.asarray(v, dtype=float)
        if v.size == 1 or np.ptp(v) == 0:
            return _num(v.flat[0], 3)
        return f"{_num(np.median(v), 3)} [{_num(v.min(), 3)}, {_num(v.max(), 3)}]"

    solver = doc["solver_eta"]
    step = "the optimal step eta* of each draw" if solver == "optimal" else f"step {solver}"
    variant = "TF^pr (normalised)" if doc.get("normalised") else "TF"
    out = [
        f"{run_dir}: {variant}, {doc.get('mode')} mode, L = {scale.shape[0]}; context size "
        f"n = {doc['n']}, {doc['n_instances']} prior draws",
        "",
        _table(
            ["weight", "learned", "prescribed (supp-eqn:weights)"],
            [
                [
                    "amplitude V_ky",
                    _num(doc["amp"]["learned"], 3),
                    _num(doc["amp"]["prescribed"], 3),
                ],
                [
                    "readout W",
                    "(" + ", ".join(_num(v, 3) for v in doc["W"]["learned"]) + ")",
                    "(" + ", ".join(_num(v, 3) for v in doc["W"]["prescribed"]) + ")",
                ],
                ["feature scale", "per layer below", spread(prescribed)],
            ],
        ),
        "",
        "step sizes per layer (the construction uses one step in every layer; the optimal",
        f"Richardson step eta* = 2/(lambda_1 + lambda_n) at n = {doc['n']}: median "
        f"{_num(eta['optimal_median'], 3)} over the draws, range {_num(eta['optimal_min'], 3)} "
        f"to {_num(eta['optimal_max'], 3)})",
    ]
    rows = []
    for layer in range(scale.shape[0]):
        i = layer - 1  # step sizes exist from layer 1 on
        has = 0 <= i < len(eta["learned_attention"])
        rows.append(
            [
                str(layer),
                spread(scale[layer]),
                _num(eta["learned_attention"][i], 3) if has else "-",
                _num(eta["learned_drift"][i], 3) if has else "-",
            ]
        )
    out.append(
        _table(
            ["layer", "feature scale: median [min, max] over d", "eta (attention)", "eta (drift)"],
            rows,
        )
    )
    out += [
        "eta (attention): the step on the kernel part G of A = G + sigma^2 I, read off the value",
        "weight V_fy; eta (drift): the step on the ridge part sigma^2 I, read off the drift weight",
        "S_ff (the term -eta sigma^2 mu a layer adds without attention). The construction ties",
        "them; a layer whose two differ solves with noise sigma^2 x eta (drift) / eta (attention).",
    ]
    rms = doc["readout_rms"]
    out += [
        "",
        f"readout distances, RMS over {doc['n_instances']} draws (solver: Richardson after the",
        f"same depth with {step})",
        _table(
            ["between", "mu", "tau"],
            [
                [a, _num(rms[f"{k}_mu"], 3), _num(rms[f"{k}_tau"], 3)]
                for a, k in (
                    ("trained and solver", "trained_vs_solver"),
                    ("trained and exact PPD", "trained_vs_exact"),
                    ("solver and exact PPD", "solver_vs_exact"),
                )
            ],
        ),
    ]
    return "\n".join(out)


def _run_compare(args) -> int:
    import json

    run_dir = _finished_run(args.run_dir)
    from pfntheory.nn.evaluate import compare_to_construction

    producer = None
    if args.out_file is not None:  # refused before the work: never over another command's file
        producer = _compare_producer(run_dir, args)
        _refuse_foreign_out(args.out_file, producer)
    # read-only: nothing is written in the run directory (its construction.json is committed)
    doc = compare_to_construction(run_dir, n=args.n, n_instances=args.n_instances, seed=args.seed)
    print(json.dumps(doc, indent=1) if args.json else format_comparison(doc, run_dir))
    if args.out_file is not None:
        sys.stdout.flush()
        _write_out(args.out_file, {**doc, "producer": producer}, quiet=args.json)
    return 0


def register(subparsers) -> None:
    """Add ``evaluate`` and ``compare``."""
    _add_evaluate(subparsers)
    _add_compare(subparsers)
